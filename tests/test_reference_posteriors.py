"""Regression against the stored reference posteriors (models/*_reference.csv): a short
run on the same fixed data must agree with the long run within Monte-Carlo error."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd

from bayes_raters.ctt import fit_true_score_model

MODELS = Path(__file__).resolve().parents[1] / "models"
_spec = importlib.util.spec_from_file_location("model_reference", MODELS / "reference.py")
reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference)


def test_ctt_true_score_short_run_matches_reference():
    stored = pd.read_csv(MODELS / "ctt_true_score_reference.csv", index_col="variable")
    assert list(stored.index) == reference.CTT_VARIABLES
    ratings, systems = reference.ctt_reference_data()
    result = fit_true_score_model(ratings, systems, draws=1000, tune=1000, chains=2, random_seed=1, nuts_sampler="pymc")
    short = reference.posterior_summary(result.posterior, reference.CTT_VARIABLES)
    # 4 combined Monte-Carlo SEs: a false alarm about once in 16,000 per variable.
    tolerance = 4 * np.sqrt(short["mcse_mean"] ** 2 + stored["mcse_mean"] ** 2)
    difference = (short["mean"] - stored["mean"]).abs()
    assert (difference < tolerance).all(), pd.DataFrame({"difference": difference, "tolerance": tolerance})
    assert np.allclose(short["sd"], stored["sd"], rtol=0.15)
