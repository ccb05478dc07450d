"""The fused passes over the answer matrix equal the same sums written out in numpy."""

from __future__ import annotations

import numpy as np
from scipy import special

from bayes_raters.leaderboard.kernel import item_pass, system_pass


def _case(seed=0, n_systems=23, n_items=71):
    rng = np.random.default_rng(seed)
    theta, a, b = rng.normal(0, 1.5, n_systems), rng.lognormal(0, 0.6, n_items), rng.normal(0, 2, n_items)
    answers = (rng.random((n_systems, n_items)) < special.expit(a * (theta[:, None] - b))).astype(np.int8)
    answers[rng.random(answers.shape) < 0.2] = -1
    return answers, theta, a, b


def _reference(answers, theta, a, b):
    mask = answers >= 0
    y = np.where(mask, answers, 0).astype(float)
    eta = a * (theta[:, None] - b)
    p = special.expit(eta)
    ll = mask * (y * eta - np.logaddexp(0, eta))
    resid, w = mask * (y - p), mask * p * (1 - p)
    return eta, ll, resid, w


def test_system_pass_is_the_loglik_gradient_and_information_per_system():
    answers, theta, a, b = _case()
    _, ll, resid, w = _reference(answers, theta, a, b)
    got = system_pass(answers, theta, a, b)
    np.testing.assert_allclose(got[0], ll.sum(1), rtol=1e-10)
    np.testing.assert_allclose(got[1], (resid * a).sum(1), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[2], (w * a**2).sum(1), rtol=1e-10)


def test_item_pass_is_the_loglik_gradient_and_information_per_item_in_log_a_and_b():
    answers, theta, a, b = _case(1)
    eta, ll, resid, w = _reference(answers, theta, a, b)
    ll_j, grad, info = item_pass(np.ascontiguousarray(answers.T), theta, a, b)
    np.testing.assert_allclose(ll_j, ll.sum(0), rtol=1e-10)
    np.testing.assert_allclose(grad[:, 0], (resid * eta).sum(0), rtol=1e-9, atol=1e-12)  # d/d log a
    np.testing.assert_allclose(grad[:, 1], -a * resid.sum(0), rtol=1e-9, atol=1e-12)  # d/d b
    np.testing.assert_allclose(info[:, 0], (w * eta**2).sum(0), rtol=1e-10)
    np.testing.assert_allclose(info[:, 1], -a * (w * eta).sum(0), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(info[:, 2], a**2 * w.sum(0), rtol=1e-10)
    # the gradient is the derivative of the log-likelihood (finite differences in b)
    step = 1e-6
    up = item_pass(np.ascontiguousarray(answers.T), theta, a, b + step)[0]
    down = item_pass(np.ascontiguousarray(answers.T), theta, a, b - step)[0]
    np.testing.assert_allclose((up - down) / (2 * step), grad[:, 1], rtol=1e-4, atol=1e-6)
