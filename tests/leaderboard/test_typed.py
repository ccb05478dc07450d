"""The mixed leaderboard's response types: category probabilities and their derivatives against finite
differences and PyMC, and the Numba passes over 3PL and graded answers against the same sums in NumPy."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from scipy import special

from bayes_raters.leaderboard.responses import cutpoints, response_type
from bayes_raters.leaderboard.typed_kernel import graded_item_sums, graded_system_sums, three_pl_item_sums, three_pl_system_sums

KINDS = [response_type("3pl", options=4), response_type("graded", n_categories=6)]


def _case(kind, seed=0, n_items=7, n_systems=40):
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 1.5, n_systems)
    log_a, d = rng.normal(0, 0.4, n_items), rng.normal(0, 1.5, n_items)
    extra = rng.normal(kind.prior_mean, 0.5, (n_items, kind.n_extra))
    if kind.shared:
        extra[:] = extra[0]
    p, _, _ = kind.probabilities(np.exp(log_a)[:, None] * theta + d[:, None], extra)
    draws = (rng.random((n_items, n_systems))[None] > np.cumsum(p, 0)).sum(0)
    answers_t = np.where(rng.random(draws.shape) < 0.2, -1, draws).astype(np.int8)
    return answers_t, theta, np.column_stack([log_a, d, extra])


def _reference_item_sums(kind, answers_t, theta, x):
    """Log-likelihood, score and information per item from the NumPy probabilities and their Jacobian."""
    a = np.exp(x[:, 0])
    eta = a[:, None] * theta + x[:, 1, None]
    p, d_eta, d_e = kind.probabilities(eta, x[:, 2:])
    jac = np.concatenate([(d_eta * (eta - x[:, 1, None]))[:, None], d_eta[:, None], d_e], axis=1)  # (K, k, items, systems)
    seen = answers_t >= 0
    y = np.where(seen, answers_t, 0).astype(np.intp)
    p_y = np.take_along_axis(p, y[None], 0)[0]
    jac_y = np.take_along_axis(jac, y[None, None], 0)[0]
    ll = np.where(seen, np.log(p_y), 0).sum(1)
    score = (jac_y * (seen / p_y)[None]).sum(2).T
    info = np.einsum("kins,kjns->nij", jac * (seen / p)[:, None], jac)
    return ll, score, info


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_probabilities_sum_to_one_and_their_derivatives_match_finite_differences(kind):
    rng = np.random.default_rng(1)
    eta, extra = rng.normal(0, 2, (3, 5)), rng.normal(kind.prior_mean, 0.5, (3, kind.n_extra))
    p, d_eta, d_e = kind.probabilities(eta, extra)
    np.testing.assert_allclose(p.sum(0), 1, atol=1e-12)
    assert p.min() > 0
    h = 1e-6
    np.testing.assert_allclose((kind.probabilities(eta + h, extra)[0] - kind.probabilities(eta - h, extra)[0]) / (2 * h), d_eta, atol=1e-8)
    for i in range(kind.n_extra):
        step = np.zeros_like(extra)
        step[:, i] = h
        numeric = (kind.probabilities(eta, extra + step)[0] - kind.probabilities(eta, extra - step)[0]) / (2 * h)
        np.testing.assert_allclose(numeric, d_e[:, i], atol=1e-8)


def test_graded_probabilities_are_pymc_ordered_logistic_with_the_centred_cutpoints():
    rng = np.random.default_rng(2)
    kind = response_type("graded", n_categories=5)
    u = rng.normal(0, 0.5, (1, 3))
    eta = rng.normal(0, 2, (1, 6))
    kappa, _ = cutpoints(u)
    assert np.all(np.diff(kappa) > 0) and abs(kappa.sum()) < 1e-12
    p, _, _ = kind.probabilities(eta, u)
    for category in range(5):
        logp = pm.logp(pm.OrderedLogistic.dist(eta=eta[0], cutpoints=kappa[0]), np.full(6, category)).eval()
        np.testing.assert_allclose(np.exp(logp), p[category, 0], rtol=1e-10)


def test_three_pl_probability_is_guessing_plus_the_logistic():
    kind = response_type("3pl", options=5)
    assert kind.prior_mean == pytest.approx(special.logit(0.2))
    eta, gamma = np.array([[-3.0, 0.0, 2.5]]), np.array([[special.logit(0.2)]])
    p, _, _ = kind.probabilities(eta, gamma)
    np.testing.assert_allclose(p[1, 0], 0.2 + 0.8 * special.expit(eta[0]), rtol=1e-12)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_item_sums_are_the_loglik_score_and_fisher_information_per_item(kind):
    answers_t, theta, x = _case(kind)
    want = _reference_item_sums(kind, answers_t, theta, x)
    if kind.name == "3pl":
        got = three_pl_item_sums(answers_t, theta, x[:, 0], x[:, 1], x[:, 2])
    else:
        kappa, jac = cutpoints(x[:1, 2:])
        got = graded_item_sums(answers_t, theta, x[:, 0], x[:, 1], kappa[0], jac[0], True)
        block = graded_item_sums(answers_t, theta, x[:, 0], x[:, 1], kappa[0], jac[0], False)
        np.testing.assert_allclose(block[2], want[2][:, :2, :2], rtol=1e-9)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-10)
    # the score is the gradient of the log-likelihood (a wrong sign or a missing chain-rule factor fails here)
    h = 1e-6
    for r in range(x.shape[1]):
        if kind.shared and r >= 2:
            continue
        step = np.zeros_like(x)
        step[:, r] = h
        numeric = (_reference_item_sums(kind, answers_t, theta, x + step)[0] - _reference_item_sums(kind, answers_t, theta, x - step)[0]) / (2 * h)
        np.testing.assert_allclose(got[1][:, r], numeric, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_system_sums_are_the_loglik_gradient_and_information_per_system(kind):
    answers_t, theta, x = _case(kind, seed=3)
    a = np.exp(x[:, 0])
    seen = answers_t >= 0
    y = np.where(seen, answers_t, 0).astype(np.intp)

    def loglik(th):
        p, _, _ = kind.probabilities(a[:, None] * th + x[:, 1, None], x[:, 2:])
        return np.where(seen, np.log(np.take_along_axis(p, y[None], 0)[0]), 0).sum(0)

    p, d_eta, _ = kind.probabilities(a[:, None] * theta + x[:, 1, None], x[:, 2:])
    if kind.name == "3pl":
        got = three_pl_system_sums(answers_t, theta, x[:, 0], x[:, 1], x[:, 2])
    else:
        got = graded_system_sums(answers_t, theta, x[:, 0], x[:, 1], cutpoints(x[:1, 2:])[0][0])
    h = 1e-6
    np.testing.assert_allclose(got[0], loglik(theta), rtol=1e-10)
    np.testing.assert_allclose(got[1], (loglik(theta + h) - loglik(theta - h)) / (2 * h), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], (seen * a[:, None] ** 2 * (d_eta**2 / p).sum(0)).sum(0), rtol=1e-9)


def test_a_missing_answer_adds_nothing():
    kind = response_type("graded", n_categories=4)
    answers_t, theta, x = _case(kind, seed=4)
    kappa, jac = cutpoints(x[:1, 2:])
    full = graded_item_sums(answers_t, theta, x[:, 0], x[:, 1], kappa[0], jac[0], True)
    fewer = answers_t.copy()
    fewer[:, :5] = -1
    dropped = graded_item_sums(fewer, theta, x[:, 0], x[:, 1], kappa[0], jac[0], True)
    kept = graded_item_sums(np.ascontiguousarray(answers_t[:, 5:]), theta[5:], x[:, 0], x[:, 1], kappa[0], jac[0], True)
    for g, w in zip(dropped, kept):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    assert not np.allclose(full[0], dropped[0])


def test_shared_cutpoints_repeat_on_every_row():
    kind = response_type("graded", n_categories=5)
    assert kind.shared and kind.start_extra(7).shape == (1, 3)
    assert not response_type("3pl").shared and response_type("3pl").start_extra(7).shape == (7, 1)
