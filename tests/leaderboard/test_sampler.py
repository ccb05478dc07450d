"""The blocked sampler samples the model's posterior: its moves leave what they must unchanged,
its exact conditionals are the right distributions, and on a small leaderboard its posterior is
PyMC's NUTS posterior of the same model (``build_leaderboard_model``)."""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import integrate, stats

from bayes_raters.leaderboard import build_leaderboard_model, fit_leaderboard, simulate_leaderboard
from bayes_raters.leaderboard import sampler as blocked
from bayes_raters.leaderboard.kernel import MatrixPasses, abilities_pass, item_pass
from bayes_raters.leaderboard.model import answer_matrix


def _state(seed=0):
    answers, _ = simulate_leaderboard(15, 40, random_seed=seed)
    answers = answers[answers.groupby("item")["correct"].transform("std") > 0]  # no item everyone got right
    data = answer_matrix(answers)
    return data, blocked.start_state(data.answers, np.random.default_rng(seed))


def test_group_moves_leave_the_likelihood_unchanged_and_move_the_scale():
    data, state = _state()
    before = item_pass(data.answers_t, state.theta, np.exp(state.log_a), state.b)[0]
    theta0, log_a0 = state.theta.copy(), state.log_a.copy()
    rng = np.random.default_rng(1)
    blocked.shift_move(state, rng)
    moved = 0
    for _ in range(20):
        blocked.scale_move(state, rng, True)
        moved += state.accepted["scale"]
    after = item_pass(data.answers_t, state.theta, np.exp(state.log_a), state.b)[0]
    np.testing.assert_allclose(after, before, rtol=1e-9)
    assert moved >= 5 and not np.allclose(state.theta, theta0) and not np.allclose(state.log_a, log_a0)


@pytest.mark.parametrize("two_pl", [True, False])
def test_an_item_update_hands_the_next_one_the_pass_at_the_accepted_items(two_pl):
    """The second item update of a sweep starts from the first one's pass instead of a new one:
    what it is handed must be the pass at the state the first update left."""
    data, state = _state(3)
    rng = np.random.default_rng(4)
    for _ in range(3):
        passed = blocked.update_items(MatrixPasses(data.answers, data.answers_t), state, rng, two_pl)
        assert 0.05 < state.accepted["items"] < 1.0  # some items moved, some stayed
        ll, g, info = item_pass(data.answers_t, state.theta, np.exp(state.log_a), state.b)
        np.testing.assert_allclose(state.item_loglik, ll, rtol=1e-12)
        np.testing.assert_allclose(passed[0], g, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(passed[1], info, rtol=1e-12, atol=1e-12)
        blocked.update_items(MatrixPasses(data.answers, data.answers_t), state, rng, two_pl, passed=passed)


def test_an_ability_update_hands_the_next_one_the_pass_at_the_accepted_abilities():
    """Where systems outnumber items a sweep updates the abilities twice, the second from the
    first one's pass: what it is handed must be the pass at the abilities the first one left."""
    data, state = _state(5)
    rng = np.random.default_rng(6)
    poor = blocked.IndependenceProposal(rng.normal(3.0, 0.1, (200, len(state.theta), 1)))  # far off: many rejections
    passed = None
    for _ in range(3):
        passed = blocked.update_theta(MatrixPasses(data.answers, data.answers_t), state, rng, poor, passed)
        assert 0.05 < state.accepted["theta"] < 1.0  # some abilities moved, some stayed
        fresh = abilities_pass(data.answers, data.answers_t, state.theta, np.exp(state.log_a), state.b)
        for handed, expected in zip(passed, fresh, strict=True):
            np.testing.assert_allclose(handed, expected, rtol=1e-12, atol=1e-12)
    assert [blocked.theta_updates(*shape) for shape in ((4278, 102), (100, 2000), (50, 50))] == [2, 1, 1]


def test_the_sigma_draw_is_its_conditional():
    """sigma | deviations, sigma ~ N+(scale): the generalised inverse Gaussian draw against the
    numerically normalised density sigma^-n exp(-sum d^2 / (2 sigma^2) - sigma^2 / (2 scale^2))."""
    rng = np.random.default_rng(4)
    deviations = rng.normal(0, 0.7, 30)
    draws = np.array([blocked._half_normal_sigma(deviations, 0.5, rng) for _ in range(4000)])
    ss = deviations @ deviations

    def density(s):
        return np.exp(-30 * np.log(s) - ss / (2 * s**2) - s**2 / (2 * 0.25) + 30 * np.log(0.7))

    total = integrate.quad(density, 1e-3, 5)[0]
    cdf = np.vectorize(lambda x: integrate.quad(density, 1e-3, x)[0] / total)
    assert stats.kstest(draws, cdf).pvalue > 0.01


@pytest.mark.parametrize("with_independence", [False, True])
def test_the_ability_update_leaves_each_conditional_invariant(with_independence):
    """Items held fixed, 3,000 ability updates of three systems (one with every answer right, whose
    conditional is skewed) against each conditional on a fine grid: the draws' CDF within the
    Kolmogorov-Smirnov band (thinned by 3 for autocorrelation). With the independence proposal a
    deliberately poor one (centred 1 off, half as wide) is used: the Metropolis-Hastings
    correction, not the proposal, must make the draws right."""
    rng = np.random.default_rng(11)
    a, b = rng.lognormal(0, 0.4, 30), rng.normal(0, 1, 30)
    answers = (rng.random((3, 30)) < 1 / (1 + np.exp(-a * (np.array([[-1.0], [0.5], [0.0]]) - b)))).astype(np.int8)
    answers[2] = 1
    state = blocked.State(np.zeros(3), np.log(a), b, 0.0, 1.0, 0.0, 0.3)
    proposal = None
    if with_independence:
        warm = rng.normal(1.0, 0.25, (200, 3, 1))
        proposal = blocked.IndependenceProposal(warm)
    draws = np.empty((3000, 3))
    answers_t = np.ascontiguousarray(answers.T)
    passed = None
    for d in range(len(draws)):  # each update handed the last one's pass, as in a sweep where systems outnumber items
        passed = blocked.update_theta(MatrixPasses(answers, answers_t), state, rng, proposal, passed)
        draws[d] = state.theta
    grid = np.linspace(-6, 9, 6001)
    eta = a * (grid[:, None, None] - b)  # grid x 1 x items
    for s in range(3):
        log_density = (answers[s] * eta[:, 0] - np.logaddexp(0, eta[:, 0])).sum(1) - grid**2 / 2
        cdf = np.cumsum(np.exp(log_density - log_density.max()))
        cdf /= cdf[-1]
        kept = draws[300::3, s]
        assert stats.kstest(kept, lambda x: np.interp(x, grid, cdf)).pvalue > 0.001, s


def test_the_same_seed_gives_the_same_draws():
    answers, _ = simulate_leaderboard(12, 30, random_seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 30 draws: the draws are compared here, not the mixing
        first = fit_leaderboard(answers, draws=30, tune=20, random_seed=9, progressbar=False).posterior
        again = fit_leaderboard(answers, draws=30, tune=20, random_seed=9, progressbar=False).posterior
    for name in first.data_vars:
        np.testing.assert_array_equal(first[name].values, again[name].values)


def _compare_with_nuts(model: str, nuts_draws: int) -> None:
    """Posterior means and SDs of every parameter from the blocked sampler and from nutpie's NUTS
    on ``build_leaderboard_model`` (10 systems x 25 items): mean differences within 5 Monte
    Carlo standard errors (each side's variance / ESS); SDs each within 20% and, over the entries
    of a vector parameter, on average within 6% (an SD from about 1,000 effective draws varies by 3-5% by itself; slopes are compared on
    the log scale, where their SD is not dominated by a long right tail)."""
    answers, _ = simulate_leaderboard(10, 25, missing=0.1, random_seed=21)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # two items everyone got right: the point of a small check, not a problem
        ours = fit_leaderboard(answers, model, draws=3000, tune=300, chains=2, random_seed=5, progressbar=False).posterior
        with build_leaderboard_model(answers, model):
            nuts = pm.sample(nuts_draws, tune=1000, chains=2, random_seed=5, progressbar=False, target_accept=0.95,
                             nuts_sampler="nutpie", compute_convergence_checks=False)["posterior"].to_dataset()
    if model == "2pl":
        ours["log_a"] = np.log(ours["a"].astype(float))
    names = ["theta", "b", "b_mean", "b_sigma"] + (["log_a", "log_a_mean", "log_a_sigma"] if model == "2pl" else ["a_common"])
    assert_agrees_with_nuts(ours, nuts, names)


def assert_agrees_with_nuts(ours, nuts, names) -> None:
    """The agreement rule of :func:`_compare_with_nuts` on the posteriors ``ours`` and ``nuts`` for each of ``names``."""
    for name in names:
        x, y = ours[name].astype(float), nuts[name]
        mean = [v.mean(("chain", "draw")).values for v in (x, y)]
        se = np.sqrt(sum(v.var(("chain", "draw")).values / az.ess(v.to_dataset(name="v"))["v"].values for v in (x, y)))
        z = np.abs(mean[0] - mean[1]) / se
        assert np.max(z) < 5, (name, np.round(z, 1))
        ratio = x.std(("chain", "draw")).values / y.std(("chain", "draw")).values
        assert np.all(np.abs(ratio - 1) < 0.2), (name, np.round(ratio, 2))
        if ratio.size >= 5:  # an average over parameters; a scalar's SD alone varies by 5-7% (ESS 70-300 for log_a_sigma)
            assert abs(np.mean(ratio) - 1) < 0.06, (name, np.round(ratio, 2))


@pytest.mark.slow  # 73 s in the fresh-clone suite (nutpie's compile and 2 x 2,500 NUTS draws): an agreement check
def test_the_blocked_sampler_agrees_with_nuts_on_the_2pl():
    _compare_with_nuts("2pl", 1500)


@pytest.mark.slow
def test_the_blocked_sampler_agrees_with_nuts_on_the_1pl():
    _compare_with_nuts("1pl", 1500)


def test_items_far_from_their_mode_climb_to_it_during_warmup_and_stay_stuck_without():
    """Thousands of answers per item make each item's conditional peaked: started 1.2 in log a from
    the truth, the Newton proposal's reverse move is so improbable that no move is accepted; the
    warmup climb (``climb``) brings every item to its conditional mode."""
    answers, truth = simulate_leaderboard(4000, 12, missing=0.0, flat_share=0.0, random_seed=8)
    data = answer_matrix(answers)
    theta = truth["theta"].reindex(data.systems).to_numpy()
    log_a = np.log(truth["a"].reindex(data.items).to_numpy())
    b = truth["b"].reindex(data.items).to_numpy()
    moved = {}
    for climbing in (False, True):
        state = blocked.State(theta.copy(), log_a + 1.2, b.copy(), b_mean=0.0, b_sigma=1.2, log_a_mean=0.0, log_a_sigma=0.4)
        climb = np.ones(len(b)) if climbing else None
        rng = np.random.default_rng(9)
        for _ in range(30):
            blocked.update_items(MatrixPasses(data.answers, data.answers_t), state, rng, True, climb=climb)
        moved[climbing] = np.abs(state.log_a - log_a)
    assert (moved[False] > 1.0).sum() >= 8  # most stuck near the start, 1.2 away (9 of 12 here)
    assert np.all(moved[True] < 0.25)  # at the mode, within a few posterior SDs of the truth (4,000 answers per item)
