"""The finite-sample spread of PRMSE given a draw (bayes_raters.ctt.finite_sample)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from bayes_raters.ctt.finite_sample import MOMENTS, add_finite_sample_spread, spread_terms


def _sums_by_simulation(system, mean, var, rng, n_sim=20_000):
    """A = sum (M - T)^2 and B = sum (T - Tbar)^2 over simulated T_i ~ N(m_i, v_i)."""
    true = mean + np.sqrt(var) * rng.standard_normal((n_sim, mean.size))
    a = ((system - true) ** 2).sum(axis=1)
    b = ((true - true.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    return a, b


def test_moment_sums_match_simulated_true_scores():
    rng = np.random.default_rng(0)
    n = 400
    mean = rng.normal(3.5, 0.8, n)
    var = rng.uniform(0.02, 0.3, n)
    system = mean + rng.normal(0.2, 0.5, n)
    a, b = _sums_by_simulation(system, mean, var, rng)
    var_a, var_b, cov = (term.sum() for term in spread_terms(system - mean, mean - mean.mean(), var))
    assert abs(a.var() / var_a - 1) < 0.05
    assert abs(b.var() / var_b - 1) < 0.05
    assert abs(np.cov(a, b)[0, 1] - cov) < 0.05 * np.sqrt(var_a * var_b)


def _posterior(n_draws=40_000, systems=("s1", "s2")):
    coords = {"chain": [0], "draw": np.arange(n_draws), "system": list(systems)}
    shape = (1, n_draws)
    return xr.Dataset(
        {
            "mse_true": (("chain", "draw", "system"), np.full((*shape, len(systems)), 0.1)),
            "true_score_variance": (("chain", "draw"), np.full(shape, 0.5)),
            "prmse": (("chain", "draw", "system"), np.full((*shape, len(systems)), 0.8)),
            MOMENTS[0]: (("chain", "draw", "system"), np.full((*shape, len(systems)), 0.01**2)),
            MOMENTS[1]: (("chain", "draw"), np.full(shape, 0.02**2)),
            MOMENTS[2]: (("chain", "draw", "system"), np.full((*shape, len(systems)), 0.5 * 0.01 * 0.02)),
        },
        coords=coords,
    )


def test_spread_draws_have_the_stored_moments_and_replace_them():
    out = add_finite_sample_spread(_posterior(), np.random.default_rng(1))
    assert not set(MOMENTS) & set(out.data_vars)
    assert out["prmse"].dims == ("chain", "draw", "system")
    mse = out["mse_true"].sel(system="s1").values.ravel()
    variance = out["true_score_variance"].values.ravel()
    assert abs(mse.std() / 0.01 - 1) < 0.03 and abs(variance.std() / 0.02 - 1) < 0.03
    assert abs(np.corrcoef(mse, variance)[0, 1] - 0.5) < 0.03
    prmse = out["prmse"].sel(system="s2").values.ravel()
    np.testing.assert_allclose(prmse, 1 - out["mse_true"].sel(system="s2").values.ravel() / variance)
    assert abs(prmse.mean() - 0.8) < 0.002
    # one deviation of B for all systems of a fit; the systems' own parts are independent
    a1, a2 = (out["mse_true"].sel(system=s).values.ravel() for s in ("s1", "s2"))
    assert abs(np.corrcoef(a1, a2)[0, 1] - 0.25) < 0.03


def test_same_seed_same_draws_and_nothing_to_add_without_moments():
    first = add_finite_sample_spread(_posterior(200), np.random.default_rng(3))
    xr.testing.assert_identical(first, add_finite_sample_spread(_posterior(200), np.random.default_rng(3)))
    plain = _posterior(10).drop_vars(list(MOMENTS))
    xr.testing.assert_identical(add_finite_sample_spread(plain, np.random.default_rng(0)), plain)
