"""The bounded (ordered beta) response type's passes: the log-likelihood against SciPy's beta density and the
logistic, scores against finite differences, the Fisher information against the expectation of the score's outer
product by quadrature, and the digamma/trigamma against SciPy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special, stats

from bayes_raters.leaderboard.bounded_kernel import bounded_item_sums, bounded_system_sums, digamma, trigamma
from bayes_raters.leaderboard.responses import cutpoints


def _case(seed=0, n_items=5, n_systems=30, log_phi=2.0, u=1.2):
    """Bounded answers from the ordered beta: categories, (log v, log(1 - v)), the coordinates and the truth."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 1.5, n_systems)
    log_a, d = rng.normal(0, 0.4, n_items), rng.normal(0, 1.0, n_items)
    kappa = cutpoints(np.array([[u]]))[0][0]
    eta = np.exp(log_a)[:, None] * theta + d[:, None]
    category = (rng.random(eta.shape)[..., None] < special.expit(eta[..., None] - kappa)).sum(-1)
    mu, phi = special.expit(eta), np.exp(log_phi)
    value = np.select([category == 0, category == 2], [0.0, 1.0], rng.beta(mu * phi, (1 - mu) * phi))
    answers_t = np.where(rng.random(eta.shape) < 0.15, -1, category).astype(np.int8)
    safe = np.where(answers_t == 1, value, 0.5)
    logs_t = np.stack([np.where(answers_t == 1, np.log(safe), 0.0), np.where(answers_t == 1, np.log1p(-safe), 0.0)])
    x = np.column_stack([log_a, d, np.full(n_items, u), np.full(n_items, log_phi)])
    return answers_t, logs_t, theta, x, value


def _sums(answers_t, logs_t, theta, x, full=True):
    kappa, jac = cutpoints(x[:1, 2:3])
    return bounded_item_sums(answers_t, logs_t, theta, x[:, 0], x[:, 1], kappa[0], jac[0], x[0, 3], full)


def _reference_loglik(answers_t, value, theta, x):
    """Per item: log P(category) + log Beta(v; mu phi, (1 - mu) phi) between, with SciPy."""
    kappa = cutpoints(x[:1, 2:3])[0][0]
    eta = np.exp(x[:, :1]) * theta + x[:, 1:2]
    up = special.expit(eta[..., None] - kappa)
    p = np.stack([1 - up[..., 0], up[..., 0] - up[..., 1], up[..., 1]])
    mu, phi = special.expit(eta), np.exp(x[0, 3])
    safe = np.where(answers_t == 1, value, 0.5)
    density = np.where(answers_t == 1, stats.beta.logpdf(safe, mu * phi, (1 - mu) * phi), 0.0)
    chosen = np.take_along_axis(p, np.maximum(answers_t, 0)[None].astype(int), 0)[0]
    return np.where(answers_t >= 0, np.log(chosen) + density, 0.0).sum(1)


def test_digamma_and_trigamma_match_scipy():
    x = np.concatenate([np.geomspace(1e-6, 1.0, 40), np.linspace(1.0, 400.0, 60)])
    np.testing.assert_allclose([digamma(v) for v in x], special.digamma(x), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose([trigamma(v) for v in x], special.polygamma(1, x), rtol=1e-12)


def test_item_loglik_is_the_ordered_beta_density():
    answers_t, logs_t, theta, x, value = _case()
    assert {0, 1, 2} <= set(np.unique(answers_t))
    ll, _, _ = _sums(answers_t, logs_t, theta, x)
    np.testing.assert_allclose(ll, _reference_loglik(answers_t, value, theta, x), rtol=1e-10)


@pytest.mark.parametrize("column", [0, 1, 2, 3])
def test_item_score_is_the_derivative_of_the_loglik(column):
    answers_t, logs_t, theta, x, _ = _case(seed=1)
    _, score, _ = _sums(answers_t, logs_t, theta, x)
    step = 1e-6
    up, down = x.copy(), x.copy()
    up[:, column] += step
    down[:, column] -= step
    numeric = (_sums(answers_t, logs_t, theta, up)[0] - _sums(answers_t, logs_t, theta, down)[0]) / (2 * step)
    # the shared u and log phi move every item at once; each item's own sum is its share of the derivative
    np.testing.assert_allclose(score[:, column], numeric, rtol=1e-6, atol=1e-6)


def test_item_information_is_the_expected_outer_product_of_the_score():
    """One answer: sum over the exact 0 and 1 of p s s^T, plus the integral over the values between."""
    theta, x = np.array([0.4]), np.array([[0.2, -0.3, 1.2, 2.1]])

    def one(category, v=0.5):
        answers_t = np.array([[category]], dtype=np.int8)
        logs_t = np.array([np.log(v), np.log1p(-v)]).reshape(2, 1, 1)
        ll, score, info = _sums(answers_t, logs_t, theta, x)
        return np.exp(ll[0]), score[0], info[0]

    expected = sum(p * np.outer(s, s) for p, s, _ in (one(0), one(2)))
    between, _ = integrate.quad_vec(lambda v: (lambda p, s, _: p * np.outer(s, s))(*one(1, v)), 0.0, 1.0, epsabs=1e-11)
    np.testing.assert_allclose(one(0)[2], expected + between, rtol=1e-6, atol=1e-9)


def test_item_sums_without_the_shared_parameters_are_the_leading_block():
    answers_t, logs_t, theta, x, _ = _case(seed=2)
    ll, score, info = _sums(answers_t, logs_t, theta, x)
    ll2, score2, info2 = _sums(answers_t, logs_t, theta, x, full=False)
    np.testing.assert_allclose(ll2, ll)
    np.testing.assert_allclose(score2, score[:, :2])
    np.testing.assert_allclose(info2, info[:, :2, :2])


def test_system_sums_are_the_loglik_gradient_and_information_per_system():
    answers_t, logs_t, theta, x, value = _case(seed=3)
    kappa = cutpoints(x[:1, 2:3])[0][0]
    ll, grad, info = bounded_system_sums(answers_t, logs_t, theta, x[:, 0], x[:, 1], kappa, x[0, 3])
    np.testing.assert_allclose(ll.sum(), _reference_loglik(answers_t, value, theta, x).sum(), rtol=1e-10)
    step = 1e-6
    numeric = [(bounded_system_sums(answers_t, logs_t, theta + step * e, x[:, 0], x[:, 1], kappa, x[0, 3])[0].sum()
                - bounded_system_sums(answers_t, logs_t, theta - step * e, x[:, 0], x[:, 1], kappa, x[0, 3])[0].sum()) / (2 * step)
               for e in np.eye(len(theta))]
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-6)
    # the system's information is the items' (d eta / d theta)^2 = a^2 times their eta-information: the item sums'
    # d-entry at the same answers, one system at a time
    for s in range(3):
        item_info = _sums(answers_t[:, s:s + 1], logs_t[:, :, s:s + 1], theta[s:s + 1], x)[2]
        assert info[s] == pytest.approx((np.exp(2 * x[:, 0]) * item_info[:, 1, 1]).sum(), rel=1e-10)


def test_a_missing_answer_adds_nothing():
    answers_t, logs_t, theta, x, _ = _case(seed=4)
    dropped = answers_t.copy()
    dropped[:, 0] = -1
    sums = _sums(answers_t[:, 1:], logs_t[:, :, 1:], theta[1:], x)
    for full, part in zip(_sums(dropped, logs_t, theta, x), sums):
        np.testing.assert_allclose(full, part, rtol=1e-12)
