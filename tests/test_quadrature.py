"""The latent-marginalisation engine: accuracy of the rules against scipy's adaptive
quadrature on hard cases, and exactness of the conditional draws."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special, stats

from bayes_raters.quadrature import (
    adaptive_gauss_hermite,
    conditional_moments,
    draw_conditional,
    draw_log_concave,
    gauss_hermite_rule,
    marginal_loglik,
    rule_for,
    trapezoid_rule,
)

TOLERANCE = 1e-6  # per unit, on the log scale (the accuracy target)


def _hard_items(n_items: int, seed: int = 0):
    """Sharper than the simulations: a ~ LogNormal(0, 0.5), b ~ N(0, 1.2)."""
    rng = np.random.default_rng(seed)
    return rng.lognormal(0, 0.5, n_items), rng.normal(0, 1.2, n_items)


def _loglik(z, y, a, b):
    eta = np.multiply.outer(np.atleast_1d(z), a) - a * b
    return (y * eta - np.logaddexp(0.0, eta)).sum(-1)


def _patterns(a, b, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    cases = {f"theta {t:+d}": (rng.random(len(a)) < special.expit(a * (t - b))).astype(float) for t in (-4, -2, 0, 2, 4)}
    cases["all right"] = np.ones(len(a))
    cases["all wrong"] = np.zeros(len(a))
    return cases


def _reference(y, a, b) -> float:
    """log of the integral by scipy.integrate.quad (relative tolerance 1e-13), centred at the mode."""
    grid = np.linspace(-12, 12, 24001)
    log_f = _loglik(grid, y, a, b) + stats.norm.logpdf(grid)
    mode, top = grid[np.argmax(log_f)], log_f.max()
    value, _ = integrate.quad(
        lambda t: np.exp(_loglik(t, y, a, b)[0] + stats.norm.logpdf(t) - top),
        mode - 10, mode + 10, points=[mode], epsabs=0, epsrel=1e-13, limit=1000,
    )
    return float(np.log(value) + top)


@pytest.mark.parametrize("n_items", [5, 10, 30, 100, 400])
def test_default_rule_is_accurate_to_1e6_on_hard_cases(n_items):
    """The node count of rule_for (81 nodes up to 100 observations, more beyond) meets 1e-6
    per unit on sharp (100 and 400 items), extreme (|theta| = 4) and all-right/all-wrong units."""
    a, b = _hard_items(n_items)
    rule = rule_for(n_items)
    for name, y in _patterns(a, b).items():
        quadrature = marginal_loglik(_loglik(rule.nodes, y, a, b)[None, :], rule.log_weights)[0]
        assert abs(quadrature - _reference(y, a, b)) < TOLERANCE, (name, len(rule))


def test_node_count_is_the_smallest_that_meets_the_target():
    """rule_for(100) has 81 nodes; 61 nodes on the same interval miss 1e-6, so the choice is
    measured, not padded."""
    a, b = _hard_items(100)
    assert len(rule_for(100)) == 81
    coarse = trapezoid_rule(61)
    errors = [abs(marginal_loglik(_loglik(coarse.nodes, y, a, b)[None, :], coarse.log_weights)[0] - _reference(y, a, b)) for y in _patterns(a, b).values()]
    assert max(errors) > TOLERANCE


def test_fixed_gauss_hermite_loses_accuracy_where_adaptive_does_not():
    """Why the default is the trapezoid rule: fixed Gauss-Hermite with 81 nodes misses by more
    than 1e-4 on 100 items; 15 adaptive nodes centred at each unit's conditional meet 1e-6."""
    a, b = _hard_items(100)
    fixed, fine = gauss_hermite_rule(81), rule_for(100)
    worst_fixed = worst_adaptive = 0.0
    for y in _patterns(a, b).values():
        reference = _reference(y, a, b)
        worst_fixed = max(worst_fixed, abs(marginal_loglik(_loglik(fixed.nodes, y, a, b)[None, :], fixed.log_weights)[0] - reference))
        mean, sd = conditional_moments(_loglik(fine.nodes, y, a, b)[None, :], fine)
        nodes, log_w = adaptive_gauss_hermite(mean, sd, 15)
        adaptive = marginal_loglik(_loglik(nodes[0], y, a, b)[None, :], log_w)[0]
        worst_adaptive = max(worst_adaptive, abs(adaptive - reference))
    assert worst_fixed > 1e-4
    assert worst_adaptive < TOLERANCE


def test_pytensor_and_numpy_marginals_agree():
    import pytensor.tensor as pt

    a, b = _hard_items(30)
    rule = rule_for(30)
    y = np.stack(list(_patterns(a, b).values()))
    table = np.stack([_loglik(rule.nodes, row, a, b) for row in y])
    symbolic = marginal_loglik(pt.as_tensor(table), rule.log_weights).eval()
    np.testing.assert_allclose(symbolic, marginal_loglik(table, rule.log_weights), rtol=1e-12)


def test_conditional_draws_match_the_exact_conditional():
    """Draws for a sharp 100-item unit and an all-right unit: KS test against the exact CDF
    (scipy quadrature of the normalised density), and a high MH acceptance rate."""
    a, b = _hard_items(100)
    patterns = _patterns(a, b)
    rule = rule_for(100)
    rng = np.random.default_rng(7)
    for name in ("theta +0", "all right"):
        y = patterns[name]
        units = 4000
        table = _loglik(rule.nodes, y, a, b)[None, :]
        z, acceptance = draw_conditional(
            table, lambda z, y=y: _loglik(z, y, a, b), rule, rng, unit_index=np.zeros(units, dtype=int),
        )
        pvalue = _ks_against_exact(z, y, a, b)
        assert pvalue > 0.01, (name, pvalue)
        assert acceptance > 0.9, (name, acceptance)


def test_conditional_draws_repeat_with_the_seed():
    a, b = _hard_items(20)
    rule = rule_for(20)
    y = _patterns(a, b)["theta +2"]
    table = _loglik(rule.nodes, y, a, b)[None, :]
    draws = [draw_conditional(table, lambda z: _loglik(z, y, a, b), rule, np.random.default_rng(3), unit_index=np.zeros(50, int))[0] for _ in range(2)]
    np.testing.assert_array_equal(draws[0], draws[1])


def _gradient(z, y, a, b):
    """d/dz of :func:`_loglik`: sum_j a_j (y_j - sigma(a_j (z - b_j)))."""
    eta = np.multiply.outer(np.atleast_1d(z), a) - a * b
    return ((y - special.expit(eta)) * a).sum(-1)


def _ks_against_exact(z, y, a, b) -> float:
    """KS p-value of draws against the exact conditional CDF: the density normalised by
    :func:`_reference` (scipy.integrate.quad), integrated by scipy's cumulative Simpson rule on
    24,001 points over [-12, 12] (spacing 0.001 against a conditional SD of 0.2 or more: error far
    below the KS test's resolution at 4,000 draws; 400 ``quad`` calls, one per point, cost tens of
    seconds per test)."""
    grid = np.linspace(-12, 12, 24001)
    density = np.exp(_loglik(grid, y, a, b) + stats.norm.logpdf(grid) - _reference(y, a, b))
    exact = integrate.cumulative_simpson(density, x=grid, initial=0.0)
    return stats.ks_1samp(z, lambda t: np.interp(t, grid, exact)).pvalue


@pytest.mark.parametrize("spacing", [0.2, 1.0])
def test_log_concave_draws_are_exact_even_on_a_coarse_rule(spacing):
    """draw_log_concave on a sharp 100-item unit (conditional SD about 0.2) and an all-right
    unit: KS against the exact CDF passes with the default spacing and with a rule five times
    coarser than the conditional's SD, where the interpolant alone is far off (its draws fail
    the same test): the envelope bounds the density, so rejection makes the draws exact; the
    marginal returned equals marginal_loglik."""
    a, b = _hard_items(100)
    rule = trapezoid_rule(int(round(16 / spacing)) + 1)
    rng = np.random.default_rng(11)
    for name, y in (("theta +0", _patterns(a, b)["theta +0"]), ("all right", np.ones(len(a)))):
        table, gradient = _loglik(rule.nodes, y, a, b)[None, :], _gradient(rule.nodes, y, a, b)[None, :]
        z, acceptance, log_marginal = draw_log_concave(
            table, gradient, lambda x, units, y=y: _loglik(x, y, a, b), rule, rng, unit_index=np.zeros(4000, dtype=int),
        )
        assert _ks_against_exact(z, y, a, b) > 0.01, (name, spacing)
        assert 0.0 < acceptance <= 1.0
        np.testing.assert_allclose(log_marginal, marginal_loglik(table, rule.log_weights), rtol=1e-12)
        if spacing == 1.0 and name == "theta +0":
            proposal, _ = draw_conditional(table, lambda x, y=y: _loglik(x, y, a, b), rule, rng, unit_index=np.zeros(4000, dtype=int), mh_steps=0)
            assert _ks_against_exact(proposal, y, a, b) < 1e-6


def test_log_concave_draws_repeat_with_the_seed_and_fall_back_after_max_rounds(monkeypatch):
    """Same seed, same draws; with no rejection rounds allowed every unit goes to
    draw_conditional's MH path, whose draws still follow the conditional."""
    import bayes_raters.quadrature as quadrature

    a, b = _hard_items(20)
    rule = rule_for(20)
    y = _patterns(a, b)["theta +2"]
    table, gradient = _loglik(rule.nodes, y, a, b)[None, :], _gradient(rule.nodes, y, a, b)[None, :]

    def draw(seed):
        return draw_log_concave(table, gradient, lambda x, units: _loglik(x, y, a, b), rule, np.random.default_rng(seed),
                                unit_index=np.zeros(3000, int))

    np.testing.assert_array_equal(draw(3)[0], draw(3)[0])
    monkeypatch.setattr(quadrature, "MAX_ROUNDS", 0)
    z, acceptance, _ = draw(4)
    assert 0.9 < acceptance < 1.0  # the MH steps' rate: no proposal of the rejection sampler was made
    assert _ks_against_exact(z, y, a, b) > 0.01


def test_log_concave_draws_are_the_same_with_reused_scratch_arrays():
    """A ConcaveScratch reused across calls (its loglik and gradient passed as the inputs, as the
    polytomous fit does) gives the same draws and marginals as fresh arrays; a scratch of
    another shape is not used."""
    from bayes_raters.quadrature import ConcaveScratch

    a, b = _hard_items(20)
    rule = rule_for(20)
    patterns = _patterns(a, b)
    ys = [patterns["theta +2"], patterns["theta +0"], np.ones(len(a))]
    table = np.stack([_loglik(rule.nodes, y, a, b) for y in ys])
    gradient = np.stack([_gradient(rule.nodes, y, a, b) for y in ys])
    units = np.repeat(np.arange(3), 200)  # unit i belongs to group units[i]
    exact = lambda x, which: np.array([_loglik(v, ys[units[i]], a, b)[0] for v, i in zip(x, which)])  # noqa: E731
    scratch = ConcaveScratch(*table.shape)
    scratch.loglik[:], scratch.gradient[:] = table, gradient
    for seed in (1, 2):  # the second call reuses the arrays the first one used and filled
        fresh = draw_log_concave(table, gradient, exact, rule, np.random.default_rng(seed), unit_index=units)
        reused = draw_log_concave(scratch.loglik, scratch.gradient, exact, rule, np.random.default_rng(seed), unit_index=units,
                                  scratch=scratch)
        np.testing.assert_array_equal(fresh[0], reused[0])
        np.testing.assert_array_equal(fresh[2], reused[2])
    np.testing.assert_array_equal(scratch.loglik, table)  # the inputs are left as they were
    other = ConcaveScratch(2, len(rule.nodes))
    wrong = draw_log_concave(table, gradient, exact, rule, np.random.default_rng(1), unit_index=units, scratch=other)
    np.testing.assert_array_equal(wrong[0], draw_log_concave(table, gradient, exact, rule, np.random.default_rng(1), unit_index=units)[0])


def test_exp_and_log_total_matches_logsumexp_inside_and_outside_the_unscaled_range():
    """Rows whose sum stays unscaled, and rows far below (-2,000) or above (+900) it, which
    take the maximum-scaled path: the log totals equal scipy's logsumexp with the weights."""
    from bayes_raters.quadrature import exp_and_log_total

    rng = np.random.default_rng(2)
    log_post = rng.normal(-5, 3, (6, 31))
    log_post[1] -= 2000.0
    log_post[4] += 900.0
    weights = rng.uniform(0.1, 0.3, 31)
    scaled, log_total = exp_and_log_total(log_post, weights)
    np.testing.assert_allclose(log_total, special.logsumexp(log_post, b=weights, axis=1), rtol=1e-13)
    assert np.all(np.isfinite(scaled)) and scaled[1].max() == 1.0 and scaled[4].max() == 1.0
