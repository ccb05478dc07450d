"""Bivariate-normal rectangle probabilities (bayes_raters.bivariate) against independent
references: scipy's multivariate normal CDF and scipy.integrate.quad over the true score."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import integrate, stats

from bayes_raters.bivariate import (
    FAR,
    bvn_cdf,
    log_diff_ndtr,
    log_diff_ndtr_np,
    log_rectangle,
    log_rectangle_op,
    shift_derivatives,
)

CUTS = np.concatenate([[-FAR], np.arange(1, 6) + 0.5, [FAR]])


def _reference_log_pair(m, v, s1, s2, first, second, power=0):
    """log of int t^power N(t; m, v) P(H1 | t) P(H2 | t) dt by adaptive quadrature in log space
    (power 1, 2: the conditional moments' numerators; t > 0 on the cases that use them)."""
    (l1, u1), (l2, u2) = (CUTS[first], CUTS[first + 1]), (CUTS[second], CUTS[second + 1])

    def log_f(t):
        t = np.atleast_1d(t)
        return log_diff_ndtr_np((l1 - t) / s1, (u1 - t) / s1) + log_diff_ndtr_np((l2 - t) / s2, (u2 - t) / s2) - 0.5 * (t - m) ** 2 / v

    grid = np.linspace(m - 40 * np.sqrt(v) - 10, m + 40 * np.sqrt(v) + 10, 200_001)
    values = log_f(grid)
    top = values.max()
    inside = grid[values > top - 60]
    lo, hi = inside.min(), inside.max()
    breaks = sorted({x for x in (l1, u1, l2, u2, grid[values.argmax()]) if lo < x < hi})
    value = integrate.quad(lambda t: t**power * np.exp(log_f(t)[0] - top), lo, hi, points=breaks, limit=1000, epsabs=0, epsrel=1e-13)[0]
    return np.log(value) + top - 0.5 * np.log(2 * np.pi * v)


def test_orthant_probability_matches_scipy():
    rng = np.random.default_rng(0)
    h, k = rng.normal(0, 2, (2, 100))
    rho = rng.uniform(-0.99, 0.99, 100)
    ours = bvn_cdf(h, k, rho)
    reference = [stats.multivariate_normal(cov=[[1, r], [r, 1]]).cdf([a, b]) for a, b, r in zip(h, k, rho)]
    assert np.max(np.abs(ours - reference)) < 1e-10


@pytest.mark.parametrize("mean", [1.0, 3.4, 7.0])
def test_pair_likelihood_within_1e_6_of_quadrature(mean):
    """Two ordinal ratings of a response whose true score is N(mean, v): agreeing, adjacent,
    opposite and extreme categories, sharp (0.1) to noisy (0.85) raters, including values far
    in the tail (log P down to -800, the log-space fallback)."""
    worst = 0.0
    for v in (0.01, 0.3, 1.0):
        for s1, s2 in ((0.24, 0.24), (0.5, 0.85), (0.1, 0.1)):
            for first, second in ((0, 0), (2, 3), (0, 5), (5, 5), (1, 2)):
                t1, t2 = np.sqrt(v + s1**2), np.sqrt(v + s2**2)
                ours = log_rectangle(
                    (CUTS[first] - mean) / t1, (CUTS[first + 1] - mean) / t1,
                    (CUTS[second] - mean) / t2, (CUTS[second + 1] - mean) / t2, v / (t1 * t2),
                )
                reference = _reference_log_pair(mean, v, s1, s2, first, second)
                worst = max(worst, abs(float(ours) - reference))
    assert worst < 1e-6


def test_gradient_matches_finite_differences_including_tails():
    bounds = [pt.dvector(name) for name in ("l1", "u1", "l2", "u2", "rho")]
    total = log_rectangle_op(*bounds).sum()
    f = pytensor.function(bounds, [total, *pytensor.grad(total, bounds)])
    points = [(-1.0, 0.5, -0.3, 0.8, 0.7), (-FAR, -5.0, 5.0, FAR, 0.8), (2.0, 3.0, 2.5, 3.5, 0.95), (-12.0, -11.0, -12.5, -11.2, 0.5)]
    for point in points:
        values = [np.array([x]) for x in point]
        _, *grads = f(*values)
        for i, x in enumerate(point):
            if abs(x) >= FAR:
                continue
            up, down = [v.copy() for v in values], [v.copy() for v in values]
            up[i] += 1e-6
            down[i] -= 1e-6
            numeric = (f(*up)[0] - f(*down)[0]) / 2e-6
            assert abs(float(grads[i][0]) - numeric) <= 1e-4 * max(1.0, abs(numeric)), (point, i)


def test_shift_derivatives_give_the_conditional_moments_of_quadrature():
    """Tweedie's formula with the closed-form first and second derivatives in m gives
    E[T | H1, H2] and SD[T | H1, H2] of direct integration over T, to 1e-5 relative to the SD
    (worst measured 6.3e-6, at log P = -417), on the 135 cases of the likelihood test."""
    names = ("l1", "u1", "l2", "u2", "rho", "w1", "w2")
    inputs = [pt.dvector(n) for n in names]
    log_p = log_rectangle_op(*inputs[:5])
    f = pytensor.function(inputs, shift_derivatives(*inputs, log_p))
    worst = 0.0
    for mean in (1.0, 3.4, 7.0):
        for v in (0.01, 0.3, 1.0):
            for s1, s2 in ((0.24, 0.24), (0.5, 0.85), (0.1, 0.1)):
                for first, second in ((0, 0), (2, 3), (0, 5), (5, 5), (1, 2)):
                    t1, t2 = np.sqrt(v + s1**2), np.sqrt(v + s2**2)
                    bounds = [(CUTS[first] - mean) / t1, (CUTS[first + 1] - mean) / t1,
                              (CUTS[second] - mean) / t2, (CUTS[second + 1] - mean) / t2, v / (t1 * t2), -1 / t1, -1 / t2]
                    slope, curvature = (float(x[0]) for x in f(*[np.array([b]) for b in bounds]))
                    log_z = _reference_log_pair(mean, v, s1, s2, first, second)
                    first_moment = np.exp(_reference_log_pair(mean, v, s1, s2, first, second, 1) - log_z)
                    second_moment = np.exp(_reference_log_pair(mean, v, s1, s2, first, second, 2) - log_z)
                    sd = np.sqrt(second_moment - first_moment**2)
                    ours_mean, ours_var = mean + v * slope, v + v**2 * curvature
                    worst = max(worst, abs(ours_mean - first_moment) / sd, abs(np.sqrt(max(ours_var, 0)) - sd) / sd)
    assert worst < 1e-5


def test_log_diff_ndtr_keeps_double_precision_in_both_tails():
    """Against SciPy's log_ndtr (exact to rounding here); PyMC's log_diff_normal_cdf is off by
    4.5e-7 at (5, inf) and 1.1e-5 at (24.8, inf) from a float32 sqrt(2)."""
    lower, upper = pt.dvector("lower"), pt.dvector("upper")
    f = pytensor.function([lower, upper], log_diff_ndtr(lower, upper))
    lo = np.array([24.8, 5.0, -FAR, -30.0, 2.0, 9.0, -9.0, 29.5, -0.5])
    hi = np.array([FAR, FAR, -5.0, -20.0, 3.0, 10.0, -8.0, 30.0, 0.7])
    reference = np.log(np.where(lo > 0, stats.norm.sf(lo) - stats.norm.sf(hi), stats.norm.cdf(hi) - stats.norm.cdf(lo)))
    reference[[0, 7]] = stats.norm.logsf(lo[[0, 7]]) + np.log1p(-np.exp(stats.norm.logsf(hi[[0, 7]]) - stats.norm.logsf(lo[[0, 7]])))
    np.testing.assert_allclose(f(lo, hi), reference, rtol=1e-13)
