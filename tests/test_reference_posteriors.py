"""Regression against the stored reference posteriors (models/*_reference.csv): a short
run on the same fixed data must agree with the long run within Monte-Carlo error. Agreement checks
(121 s together in the suite, 2026-11-28), so `make validate`."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayes_raters.ctt import fit_true_score
from bayes_raters.irt import fit_irt
from bayes_raters.pairwise import fit_pairwise

pytestmark = pytest.mark.slow

MODELS = Path(__file__).resolve().parents[1] / "models"
_spec = importlib.util.spec_from_file_location("model_reference", MODELS / "reference.py")
reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference)


def _assert_matches(short: pd.DataFrame, stored: pd.DataFrame) -> None:
    """Posterior means within 4 combined Monte-Carlo SEs (a false alarm about once in
    16,000 per variable), SDs within 15%."""
    tolerance = 4 * np.sqrt(short["mcse_mean"] ** 2 + stored["mcse_mean"] ** 2)
    difference = (short["mean"] - stored["mean"]).abs()
    assert (difference < tolerance).all(), pd.DataFrame({"difference": difference, "tolerance": tolerance})
    assert np.allclose(short["sd"], stored["sd"], rtol=0.15)


def test_ctt_true_score_short_run_matches_reference():
    stored = pd.read_csv(MODELS / "ctt_true_score_reference.csv", index_col="variable")
    assert list(stored.index) == reference.CTT_VARIABLES
    ratings, systems = reference.ctt_reference_data()
    result = fit_true_score(ratings, systems, draws=1000, tune=1000, chains=2, random_seed=1, nuts_sampler="pymc")
    short = reference.posterior_summary(result.posterior, reference.CTT_VARIABLES)
    _assert_matches(short, stored)


@pytest.mark.parametrize("method", ["marginal", "joint"])
def test_irt_2pl_short_run_matches_reference(method):
    """The reference is a long joint run; the marginal method (theta integrated out, then drawn
    from its conditional) must give the same posterior, abilities included."""
    stored = pd.read_csv(MODELS / "irt_2pl_reference.csv", index_col="variable")
    assert len(stored) == 10 + 10 + reference.IRT_RESPONDENTS
    result = fit_irt(reference.irt_reference_data(), "2pl", method=method, hierarchical=False, draws=1000, tune=1000, chains=4, cores=2,
                     random_seed=1, nuts_sampler="pymc")
    short = reference.element_summary(result.idata["posterior"].to_dataset(), reference.IRT_VARIABLES)
    assert list(short.index) == list(stored.index)
    _assert_matches(short, stored)


def test_pairwise_beta_latent_short_run_matches_reference():
    stored = pd.read_csv(MODELS / "pairwise_beta_latent_reference.csv", index_col="variable")
    assert len(stored) == 20 + 3
    data = reference.pairwise_reference_data()
    result = fit_pairwise(data["comparisons"], data["scalars"], draws=1000, tune=1000, chains=4, cores=2, random_seed=1, nuts_sampler="pymc")
    short = reference.pairwise_summary(result.posterior)
    assert list(short.index) == list(stored.index)
    _assert_matches(short, stored)
