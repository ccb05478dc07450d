"""Questionnaires at full size with the defaults (issue 64, point 4): the Eysenck Personality
Inventory's two scales as a confirmatory two-factor 2PL against OpenMx's ML, and the Generic
Conspiracist Beliefs scale as a GRM against girth's ML (``tests/data/epi/``,
``tests/data/conspiracist/``; the R and Python calls that wrote them are in ``tests/data/ml/``).
The times beside the ML fits are measured by ``benchmarks/bench_questionnaires.py``."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_raters.errors import ConvergenceWarning, SlopeWarning
from bayes_raters.irt import fit_irt, fit_polytomous
from bayes_raters.irt.multidimensional.fit import MIRT_TOLERANCE
from tests.irt.test_real_data import _long


def epi_answers(data) -> tuple[pd.DataFrame, dict]:
    """EPI's 48 keyed items (3,516 respondents) in long form and item -> scale (E: the first 24)."""
    wide = pd.read_csv(data / "epi" / "epi_keyed.csv")
    return _long(wide, "correct"), {item: "E" if j < 24 else "N" for j, item in enumerate(wide.columns)}


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_epi_two_factor_2pl_converges_by_default_and_agrees_with_ml(shared_data, seed):
    """The default fit (no sampler option) converges without a warning; posterior means of the
    slopes and intercepts correlate >= 0.99 with OpenMx's ML (V34, reverse-keyed on E, sits at OpenMx's
    lower bound 1e-6, ours near 0: flagged in the item table), and the E-N correlation is within
    0.02 of ML's -0.341 (measured seed 1: -0.335). The quadrature is the factorised rule, checked
    against half its spacing."""
    answers, dimensions = epi_answers(shared_data)
    ml = pd.read_csv(shared_data / "epi" / "ml_2d_2pl_openmx.csv").set_index("item")
    summary = pd.read_csv(shared_data / "epi" / "ml_2d_2pl_openmx_summary.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        # V34 (reverse-keyed on E) barely tracks its scale (rest correlation 0.04): flagged, tested below
        warnings.simplefilter("ignore", SlopeWarning)
        result = fit_irt(answers, "2pl", dimensions=dimensions, random_seed=seed, progressbar=False)
    loadings = result.loadings()
    own = loadings[~loadings["fixed_zero"]].reset_index().set_index("item")["a_mean"].loc[ml.index]
    intercepts = result.item_table()["d_mean"].loc[ml.index]
    corr = float(result.correlations().iloc[0]["corr_mean"])
    corr_a, corr_d = np.corrcoef(own, ml["a"])[0, 1], np.corrcoef(intercepts, ml["d"])[0, 1]
    print(f"\nEPI seed {seed}: corr(a) {corr_a:.4f}, corr(d) {corr_d:.5f}, E-N {corr:.3f} "
          f"(ML {summary['correlation'].iloc[0]:.3f}); {result.inference.path}, {result.report}")
    assert result.report.converged and result.report.divergences == 0
    assert result.inference.quadrature_error <= MIRT_TOLERANCE
    assert result.item_table().loc["V34", "flagged"]
    assert corr_a >= 0.99 and corr_d >= 0.99
    assert abs(corr - summary["correlation"].iloc[0]) < 0.02


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_conspiracist_beliefs_grm_converges_by_default_and_agrees_with_ml(shared_data, seed):
    """2,356 complete rows x 15 items x 5 categories: the default GRM converges without a warning,
    and its posterior means of a and of the thresholds correlate >= 0.99 with girth's ML GRM
    (``grm_mml``), no threshold more than 0.1 from it."""
    wide = pd.read_csv(shared_data / "conspiracist" / "conspiracist_beliefs.csv")
    ml = pd.read_csv(shared_data / "conspiracist" / "ml_grm_girth.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        result = fit_polytomous(_long(wide, "score"), "grm", random_seed=seed, progressbar=False)
    a_ml = ml.groupby("item", sort=False)["a"].first()
    items, thresholds = result.item_table(), result.threshold_table()
    corr_a = np.corrcoef(items.loc[a_ml.index, "a_mean"], a_ml)[0, 1]
    corr_b = np.corrcoef(thresholds["b_mean"], ml["b"])[0, 1]
    gap = np.abs(thresholds["b_mean"].to_numpy() - ml["b"].to_numpy()).max()
    print(f"\nbeliefs GRM seed {seed}: corr(a) {corr_a:.4f}, corr(b) {corr_b:.5f}, max |b - ML| {gap:.3f}; {result.report}")
    assert list(thresholds["item"]) == list(ml["item"])
    assert result.report.converged and result.report.divergences == 0
    assert corr_a >= 0.99 and corr_b >= 0.99 and gap <= 0.1
