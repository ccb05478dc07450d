"""The bootstrap interval's rater part (bayes_raters.agreement.bootstrap): which coefficients get
it, that it grows with the raters' spread and vanishes without it, the widening arithmetic, and
the jackknife's deletions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayes_raters.agreement.bootstrap import (
    bootstrap_coefficients,
    bootstrap_intervals,
    coefficients,
    rater_variance,
)
from bayes_raters.agreement.layout import agreement_ratings
from bayes_raters.agreement.simulate import simulate_agreement


def _ratings(sigma_rater: float, seed: int, n_raters: int = 12):
    return agreement_ratings(simulate_agreement(200, n_raters, sigma_rater=sigma_rater, random_seed=seed), "ordinal")


def test_rater_part_only_where_raters_are_random():
    data = _ratings(0.6, 1)
    names = coefficients(data).index
    extra = rater_variance(data, names, random_seed=2)
    assert (extra[["ICC3", "ICC3k"]] == 0).all()
    assert (extra[["alpha_ordinal", "fleiss_kappa", "ICC1", "ICC2", "ICC1k", "ICC2k"]] > 0).all(), extra


def test_two_raters_keep_the_units_interval():
    rng = np.random.default_rng(4)
    truth = rng.normal(3, 1, 150)
    long = pd.DataFrame([(i, r, float(np.clip(np.round(truth[i] + rng.normal(0, 0.7)), 1, 5)))
                         for i in range(150) for r in ("a", "b")], columns=["response", "rater", "score"])
    data = agreement_ratings(long, "ordinal", categories=range(1, 6))
    extra = rater_variance(data, coefficients(data).index, random_seed=1)
    assert (extra == 0).all() and "cohens_kappa_linear" in extra.index


def test_rater_part_grows_with_the_raters_spread():
    """ICC1 and alpha count the rater variance: with rater SD 0.8 the raters' share of their
    variance is larger than the units' share (the bootstrap's) on every seed; with rater SD 0 it
    is a small fraction of it on average (the jackknives' noise, floored at 0)."""
    ratios = {}
    for sigma in (0.0, 0.8):
        rows = []
        for seed in range(4):
            data = _ratings(sigma, 10 + seed)
            names = pd.Index(["alpha_ordinal", "ICC1"])
            units = bootstrap_coefficients(data, 300, random_seed=seed)[names].var(ddof=1)
            rows.append(rater_variance(data, coefficients(data).index, random_seed=seed)[names] / units)
        ratios[sigma] = pd.DataFrame(rows)
    assert (ratios[0.8] > 1.0).all().all(), ratios[0.8]
    assert (ratios[0.0].mean() < 0.3).all(), ratios[0.0]


def test_same_seed_same_rater_part():
    data = _ratings(0.3, 5)
    names = coefficients(data).index
    first = rater_variance(data, names, random_seed=3)
    rater_variance(data, names, random_seed=4)
    pd.testing.assert_series_equal(first, rater_variance(data, names, random_seed=3))


def test_widening_about_the_estimate():
    draws = pd.DataFrame({"x": np.linspace(-1.0, 3.0, 401), "y": np.linspace(0.0, 1.0, 401)})
    plain = bootstrap_intervals(draws, 0.9)
    estimate = pd.Series({"x": 0.5, "y": 0.5})
    wide = bootstrap_intervals(draws, 0.9, estimate, pd.Series({"x": 3 * draws["x"].var(ddof=1)}))
    assert wide.loc["x", "bootstrap_lower"] == pytest.approx(0.5 - 2 * (0.5 - plain.loc["x", "bootstrap_lower"]))
    assert wide.loc["x", "bootstrap_upper"] == pytest.approx(0.5 + 2 * (plain.loc["x", "bootstrap_upper"] - 0.5))
    assert wide.loc["x", "bootstrap_sd"] == pytest.approx(2 * plain.loc["x", "bootstrap_sd"])
    pd.testing.assert_series_equal(wide.loc["y"], plain.loc["y"])  # no extra variance given: unchanged


def test_without_ratings_drops_units_left_with_one_rating():
    long = pd.DataFrame({"response": [0, 0, 0, 1, 1, 2, 2], "rater": ["a", "b", "c", "a", "b", "b", "c"],
                         "score": [1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 5.0]})
    data = agreement_ratings(long, "interval")
    a = list(data.raters).index("a")
    smaller = data.without(np.array([[list(data.units).index(1), a]]))
    assert smaller.values.shape == (2, 3) and (~np.isnan(smaller.values)).sum() == 5
    only_b = data.without(np.argwhere(~np.isnan(data.values[:, [a]])) * [1, 0] + [0, a])
    assert list(only_b.raters) == ["b", "c"] and len(only_b.values) == 2
