"""The fused passes over the answer matrix equal the same sums written out in numpy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from bayes_raters.leaderboard.kernel import _exp_nonpositive, abilities_pass, item_pass, system_pass, system_pass_by_item


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


@pytest.mark.parametrize("n_systems", [23, 1300])
def test_item_pass_is_the_loglik_gradient_and_information_per_item_in_log_a_and_b(n_systems):
    """23 systems (one chunk of answers per logarithm) and 1,300 (two full chunks of 512 and a remainder)."""
    answers, theta, a, b = _case(1, n_systems=n_systems)
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


def test_the_vectorisable_exponential_matches_numpy_to_1e_14_down_to_its_floor():
    x = np.concatenate([np.linspace(-40, 0, 4001), -np.logspace(-12, 0, 50), [0.0]])
    got = np.array([_exp_nonpositive(v) for v in x])
    np.testing.assert_allclose(got, np.exp(x), rtol=1e-14, atol=0)
    assert _exp_nonpositive(-300.0) == _exp_nonpositive(-40.0)  # floored where 1 + e^x == 1 anyway


def test_passes_stay_exact_for_answers_far_from_the_items():
    """|eta| up to 80: the floored exponential changes no sum beyond rounding."""
    answers, theta, a, b = _case(2)
    theta = theta * 12.0
    _, ll, resid, w = _reference(answers, theta, a, b)
    got = system_pass(answers, theta, a, b)
    assert np.abs(a * (theta[:, None] - b)).max() > 40
    np.testing.assert_allclose(got[0], ll.sum(1), rtol=1e-10)
    np.testing.assert_allclose(got[1], (resid * a).sum(1), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[2], (w * a**2).sum(1), rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("n_systems", [23, 600])
def test_the_by_item_system_pass_takes_the_same_sums(n_systems):
    """The transposed layout (blocks of systems, one or several) equals the row pass, and the
    chooser returns the same numbers whichever layout it picks."""
    answers, theta, a, b = _case(3, n_systems=n_systems, n_items=45)
    rows = system_pass(answers, theta, a, b)
    answers_t = np.ascontiguousarray(answers.T)
    for got in (system_pass_by_item(answers_t, theta, a, b), abilities_pass(answers, answers_t, theta, a, b)):
        for want, have in zip(rows, got):
            np.testing.assert_allclose(have, want, rtol=1e-12, atol=1e-12)
