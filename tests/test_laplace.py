"""Importance-sampled Laplace draws (bayes_raters.laplace) and their place in sample_model."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pymc as pm
import pytest

from bayes_raters.errors import ConvergenceWarning, InvalidInputError
from bayes_raters.inference import WARM_K_MAX, sample_model, warm_approximation
from bayes_raters.inference_record import InferenceRecord
from bayes_raters.laplace import LaplaceCheck, k_threshold, laplace_approximation, sample_laplace, warm_start
from bayes_raters.sampling import ConvergenceReport


def _regression(seed: int = 0):
    """y ~ N(X beta, 1), beta ~ N(0, 10^2): the posterior is exactly Gaussian, with known moments."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(40, 3))
    y = x @ np.array([1.0, -0.5, 2.0]) + rng.normal(size=40)
    with pm.Model(coords={"coef": ["c0", "c1", "c2"]}) as model:
        beta = pm.Normal("beta", 0, 10, dims="coef")
        pm.Normal("y", x @ beta, 1, observed=y)
    precision = x.T @ x + np.eye(3) / 100
    cov = np.linalg.inv(precision)
    return model, cov @ x.T @ y, np.sqrt(np.diag(cov))


def test_gaussian_posterior_is_recovered_with_equal_weights():
    model, mean, sd = _regression()
    tree, check = sample_laplace(model, draws=500, chains=2, random_seed=1)
    assert check.accepted and check.pareto_k < 0.3
    draws = tree["posterior"]["beta"]
    assert draws.dims == ("chain", "draw", "coef") and list(draws["coef"].values) == ["c0", "c1", "c2"]
    # equal weights: resampling 500 of 1,000 keeps about (1/1000 + 1/500)^-1 = 333 per chain
    assert 620 < check.ess < 700
    estimate = draws.mean(("chain", "draw")).values
    assert np.all(np.abs(estimate - mean) < 4 * sd / np.sqrt(check.ess))
    spread = draws.std(("chain", "draw")).values
    assert np.all(np.abs(spread / sd - 1) < 0.1)
    assert not tree["sample_stats"]["diverging"].values.any()
    assert check.proposals_per_chain == 2 * 500


def test_same_seed_same_draws():
    model, _, _ = _regression()
    first, _ = sample_laplace(model, draws=100, chains=2, random_seed=7)
    again, _ = sample_laplace(model, draws=100, chains=2, random_seed=7)
    other, _ = sample_laplace(model, draws=100, chains=2, random_seed=8)
    assert np.array_equal(first["posterior"]["beta"].values, again["posterior"]["beta"].values)
    assert not np.array_equal(first["posterior"]["beta"].values, other["posterior"]["beta"].values)


def _heavy_tailed():
    """Ten Student-t(0.5) coordinates: no Gaussian proposal covers their tails, so Pareto k is
    large (0.76-1.23 over seeds 0-7 at 2 x 1,000 proposals, as here; seed 1: 1.19)."""
    with pm.Model() as model:
        pm.StudentT("x", nu=0.5, mu=0, sigma=1, shape=10)
    return model


def test_heavy_tails_fail_the_check_and_auto_falls_back_to_nuts():
    tree, check = sample_laplace(_heavy_tailed(), draws=500, chains=2, random_seed=1)
    assert not check.accepted and check.pareto_k > 0.7 and "Pareto k" in check.reason
    with pytest.warns(ConvergenceWarning, match="R-hat"):  # NUTS does not tame these tails either
        idata, report = sample_model(_heavy_tailed(), draws=200, tune=200, random_seed=1, inference="auto", what="test")
    record = InferenceRecord.of(idata)
    assert record.path == "nuts_after_laplace" and record.reason.startswith("the Laplace draws were rejected: Pareto k")
    assert record.sampler == "pymc" and record.pareto_k > 0.7 and record.warm_start == ""
    assert report.pareto_k is None and "n_steps" in idata["sample_stats"]


def test_forced_laplace_reports_the_failed_check():
    with pytest.warns(ConvergenceWarning, match="Pareto k .* use inference='nuts'"):
        idata, report = sample_model(_heavy_tailed(), draws=500, random_seed=1, inference="laplace", what="test")
    assert report.pareto_k > report.pareto_k_threshold and not report.converged
    assert report.to_dict()["pareto_k"] == report.pareto_k


def test_gaussian_posterior_passes_through_sample_model_without_warnings():
    model, _, _ = _regression()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        idata, report = sample_model(model, draws=500, random_seed=1, inference="auto", what="test")
    record = InferenceRecord.of(idata)
    assert record.path == "laplace" and record.laplace_retries == 0 and record.pareto_k == report.pareto_k
    assert report.converged and report.divergences == 0 and report.pareto_k < 0.3
    assert report.min_ess_bulk <= record.importance_ess + 1e-9


def test_reports_saved_before_the_laplace_fields_still_load():
    old = {"max_r_hat": 1.0, "min_ess_bulk": 900.0, "min_ess_tail": 800.0, "divergences": 0, "chains": 2, "draws": 1000}
    report = ConvergenceReport(**old)
    assert report.pareto_k is None and report.converged


def test_unknown_inference_gets_a_clear_error():
    model, _, _ = _regression()
    with pytest.raises(InvalidInputError, match="inference must be one of"):
        sample_model(model, inference="vi")


def test_k_threshold_follows_the_number_of_proposals():
    assert k_threshold(100) == pytest.approx(0.5)
    assert k_threshold(100_000) == 0.7


def test_a_batch_failing_only_on_noise_is_redrawn_before_nuts(monkeypatch):
    """A first batch that passes the Pareto check but fails R-hat gets one fresh batch with twice
    the proposals from the same mode and Hessian (no NUTS, no second optimisation); a batch that
    fails the Pareto check goes to NUTS directly (previous test)."""
    import bayes_raters.inference as inference
    import bayes_raters.laplace as laplace

    model, _, _ = _regression()
    optimisations = []
    original_mode, original_report = laplace._mode, inference.laplace_report
    monkeypatch.setattr(laplace, "_mode", lambda *args: optimisations.append(1) or original_mode(*args))
    reports = []

    def first_fails_r_hat(idata, check, var_names=None):
        report = original_report(idata, check, var_names)
        reports.append(report)
        return report if len(reports) > 1 else replace(report, max_r_hat=1.05)

    monkeypatch.setattr(inference, "laplace_report", first_fails_r_hat)
    monkeypatch.setattr(pm, "sample", lambda *args, **kwargs: pytest.fail("NUTS ran"))
    # 2,000 draws: R-hat of 3 coordinates from 2 x 2,000 resampled draws stays far below 1.01
    idata, report = sample_model(model, draws=2000, chains=2, random_seed=3, inference="auto", what="test")
    record = InferenceRecord.of(idata)
    assert len(reports) == 2 and len(optimisations) == 1
    assert record.path == "laplace" and record.laplace_retries == 1 and record.proposals_per_chain == 6 * 2000
    assert report.converged and report.max_r_hat <= 1.01
    first, _ = sample_laplace(model, draws=2000, chains=2, random_seed=3)
    assert not np.array_equal(first["posterior"]["beta"].values, idata["posterior"]["beta"].values)


def test_warm_start_points_are_laplace_draws_on_the_variables_own_scale():
    """NUTS after rejected Laplace draws starts at draws of N(mode, H^-1) mapped back through
    the transforms (a zero-sum vector sums to zero, a scale is positive: PyMC's initvals are on
    the variables' own scale) with H^-1 as its mass matrix."""
    with pm.Model(coords={"g": list("abc")}) as model:
        z = pm.ZeroSumNormal("z", 1.0, dims="g")
        s = pm.HalfNormal("s", 1.0)
        pm.Normal("y", z[np.array([0, 1, 2, 0, 1, 2])], s, observed=[0.9, -0.2, -0.5, 1.1, 0.1, -0.6])
    approx, reason = laplace_approximation(model)
    assert not reason
    starts, covariance = warm_start(model, approx, 3, np.random.default_rng(1))
    assert len(starts) == 3 and len({float(start["s"]) for start in starts}) == 3
    assert all(start["s"] > 0 and start["z"].shape == (3,) and abs(start["z"].sum()) < 1e-12 for start in starts)
    np.testing.assert_allclose(covariance @ (approx.chol @ approx.chol.T), np.eye(covariance.shape[0]), atol=1e-8)


def test_nuts_starts_from_the_approximation_only_near_gaussian():
    """Pareto k above WARM_K_MAX (1.0): the Hessian at the mode is a poor mass matrix (hierarchical
    2PL draws: 26-34 steps per draw warm against 18-20 cold), so NUTS starts cold."""
    approximation = object()
    assert warm_approximation(LaplaceCheck(0.85, 0.7, 900.0, "k", approximation), WARM_K_MAX) is approximation
    assert warm_approximation(LaplaceCheck(1.2, 0.7, 900.0, "k", approximation), WARM_K_MAX) is None
    assert warm_approximation(LaplaceCheck(0.85, 0.7, 900.0, "k", approximation), 0.7) is None  # the many-facet model's limit
    assert warm_approximation(LaplaceCheck(np.inf, 0.7, 0.0, "no mode"), WARM_K_MAX) is None


def test_forked_proposals_give_the_same_draws_as_threads():
    """A model with a NumPy term evaluates each chain's proposals in a forked process (threads
    where the platform does not fork, or when asked): the proposals, their log ratios and the
    resampled draws (each chain's generator continues where its proposals left it) are the same."""
    from bayes_raters.irt import simulate_ratings
    from bayes_raters.irt.polytomous.model import build_polytomous_model
    from bayes_raters.laplace import importance_draws

    ratings, _ = simulate_ratings(200, 4, 3, random_seed=5)
    approx, reason = laplace_approximation(build_polytomous_model(ratings, "grm"))
    assert approx is not None and approx.threaded, reason
    seeds = np.random.SeedSequence(8).spawn(2)
    forked = importance_draws(approx, draws=100, chains=2, seeds=seeds, processes=True)
    threaded = importance_draws(approx, draws=100, chains=2, seeds=seeds, processes=False)
    for (points, log_r), (same_points, same_log_r) in zip(forked[2], threaded[2]):
        np.testing.assert_array_equal(points, same_points)
        np.testing.assert_array_equal(log_r, same_log_r)
        assert np.isfinite(log_r).all()
    np.testing.assert_array_equal(forked[0], threaded[0])
    assert not np.array_equal(forked[2][0][0], forked[2][1][0])  # each chain its own proposals
