"""The vectorised convergence diagnostics equal ArviZ's, parameter by parameter."""

from __future__ import annotations

import arviz as az
import numpy as np
import pytest
import xarray as xr

from bayes_raters.leaderboard.convergence import bulk_ess, leaderboard_report, rank_rhat, rhat_and_bulk_ess, tail_ess


def _draws(draws: int, seed: int = 0) -> np.ndarray:
    """(2 chains, draws, 6): white noise, AR(1) at 0.9 and 0.99, a chain offset, ties, a constant."""
    rng = np.random.default_rng(seed)
    out = np.empty((2, draws, 6))
    out[..., 0] = rng.normal(size=(2, draws))
    for column, phi in ((1, 0.9), (2, 0.99)):
        noise = rng.normal(size=(2, draws))
        for t in range(draws):
            out[:, t, column] = (phi * out[:, t - 1, column] if t else 0.0) + noise[:, t]
    out[..., 3] = rng.normal(size=(2, draws)) + np.array([[0.0], [0.3]])
    out[..., 4] = rng.integers(0, 4, size=(2, draws))
    out[..., 5] = 1.5
    return out


@pytest.mark.parametrize("draws", [60, 701])
def test_rhat_and_ess_equal_arviz(draws):
    values = _draws(draws)
    data = xr.Dataset({"x": (("chain", "draw", "p"), values)})
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = {"rhat": az.rhat(data)["x"].values, "bulk": az.ess(data)["x"].values,
                    "tail": az.ess(data, method="tail")["x"].values}
        got = {"rhat": rank_rhat(values), "bulk": bulk_ess(values), "tail": tail_ess(values)}
        both = rhat_and_bulk_ess(values)
    np.testing.assert_array_equal(both[0], got["rhat"])
    np.testing.assert_array_equal(both[1], got["bulk"])
    for key in expected:
        np.testing.assert_allclose(got[key][:5], expected[key][:5], rtol=1e-8, err_msg=key)
    assert got["bulk"][5] == expected["bulk"][5] == 2 * (draws // 2) * 2  # a constant: the split draws, ArviZ's convention


def test_the_report_is_the_worst_case():
    values = _draws(400, seed=1)[..., :5]
    post = xr.Dataset({"x": (("chain", "draw", "p"), values[..., :3]), "y": (("chain", "draw"), values[..., 3])},
                      coords={"chain": [0, 1], "draw": np.arange(400)})
    report = leaderboard_report(post, ["x", "y"])
    assert report.max_r_hat == pytest.approx(float(az.rhat(post).to_array().max()), rel=1e-8)
    assert report.min_ess_bulk == pytest.approx(float(az.ess(post).to_array().min()), rel=1e-8)
    assert report.divergences == 0 and report.chains == 2 and report.draws == 400


def test_doubled_ranks_are_twice_scipys_average_ranks_with_ties():
    from scipy import stats

    from bayes_raters.leaderboard.convergence import _doubled_ranks

    rng = np.random.default_rng(5)
    flat = np.round(rng.normal(size=(7, 301)), 1)  # many ties
    flat[3] = 2.0  # all tied
    np.testing.assert_array_equal(_doubled_ranks(flat), 2 * stats.rankdata(flat, axis=1))


def test_a_check_told_to_stop_at_a_failing_r_hat_leaves_the_ess_out_and_still_fails():
    rng = np.random.default_rng(2)
    apart = rng.normal(size=(2, 300, 4)) + np.array([0.0, 0.5])[:, None, None]  # chains disagree
    post = xr.Dataset({"apart": (("chain", "draw", "p"), apart), "fine": (("chain", "draw", "q"), rng.normal(size=(2, 300, 3)))})
    full = leaderboard_report(post, ["apart", "fine"])
    stopped = leaderboard_report(post, ["apart", "fine"], stop_at_r_hat=1.01)
    assert full.max_r_hat > 1.01 and np.isfinite(full.min_ess_bulk)
    assert stopped.max_r_hat == full.max_r_hat and np.isnan(stopped.min_ess_bulk) and not stopped.converged
    assert leaderboard_report(post, ["fine"], stop_at_r_hat=1.01) == leaderboard_report(post, ["fine"])  # passing: complete
