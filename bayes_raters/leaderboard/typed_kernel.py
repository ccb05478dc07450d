r"""The passes over a mixed leaderboard's 3PL and graded answers (:mod:`bayes_raters.leaderboard.responses` states
the likelihoods) that :mod:`bayes_raters.leaderboard.typed` needs, one fused Numba loop per type and direction.

Per item (``*_item_sums``, in the coordinates :math:`x = (\log a, d, e)`, :math:`\eta = a\theta + d`): the
log-likelihood, the score :math:`\nabla p_y / p_y` and the Fisher information :math:`\sum_k \nabla p_k
\nabla p_k^\top / p_k`, summed over the item's answers; per system (``*_system_sums``): the log-likelihood, its
derivative in :math:`\theta` and the information :math:`a^2 \sum_k (\partial p_k / \partial\eta)^2 / p_k`,
summed over the system's answers. ``-1`` marks a missing answer.

Why hand-written: the same sums in NumPy over the dense answers (the stacks of category probabilities and
their gradients, ``responses.ResponseType.probabilities``) took most of a mixed sweep's time; the timings are in
``models/leaderboards.md``. The NumPy form stays as the reference the tests check these against.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from bayes_raters.threads import use_fork_safe_layer

use_fork_safe_layer()


@numba.njit(inline="always")
def scalar_expit(x: float) -> float:
    """The logistic function of one number, without overflow."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@numba.njit(inline="always")
def _three_pl_answer(eta: float, c: float):
    """p_1, p_0 and dp_1/deta, dp_1/dgamma of one 3PL answer."""
    up, down = scalar_expit(eta), scalar_expit(-eta)
    p0 = (1.0 - c) * down
    return 1.0 - p0, p0, (1.0 - c) * up * down, down * c * (1.0 - c)


@numba.njit(parallel=True, cache=True)
def three_pl_item_sums(answers_t, theta, log_a, d, gamma):
    """Per 3PL item: log-likelihood, score (items, 3) and information (items, 3, 3) in (log a, d, logit c)."""
    n_items, n_systems = answers_t.shape
    ll, score, info = np.zeros(n_items), np.zeros((n_items, 3)), np.zeros((n_items, 3, 3))
    for j in numba.prange(n_items):
        a, c = math.exp(log_a[j]), scalar_expit(gamma[j])
        grad = np.empty(3)
        for s in range(n_systems):
            y = answers_t[j, s]
            if y < 0:
                continue
            eta = a * theta[s] + d[j]
            p1, p0, d_eta, d_gamma = _three_pl_answer(eta, c)
            grad[0], grad[1], grad[2] = d_eta * (eta - d[j]), d_eta, d_gamma
            p_y = p1 if y > 0 else p0
            sign = 1.0 if y > 0 else -1.0
            ll[j] += math.log(p_y)
            weight = 1.0 / p1 + 1.0 / p0
            for r in range(3):
                score[j, r] += sign * grad[r] / p_y
                for q in range(3):
                    info[j, r, q] += weight * grad[r] * grad[q]
    return ll, score, info


@numba.njit(parallel=True, cache=True)
def three_pl_system_sums(answers_t, theta, log_a, d, gamma):
    """Per system: log-likelihood, d/dtheta and information of its 3PL answers."""
    n_items, n_systems = answers_t.shape
    ll, grad, info = np.zeros(n_systems), np.zeros(n_systems), np.zeros(n_systems)
    for s in numba.prange(n_systems):
        for j in range(n_items):
            y = answers_t[j, s]
            if y < 0:
                continue
            a = math.exp(log_a[j])
            p1, p0, d_eta, _ = _three_pl_answer(a * theta[s] + d[j], scalar_expit(gamma[j]))
            p_y = p1 if y > 0 else p0
            ll[s] += math.log(p_y)
            grad[s] += (a * d_eta if y > 0 else -a * d_eta) / p_y
            info[s] += a * a * d_eta * d_eta * (1.0 / p1 + 1.0 / p0)
    return ll, grad, info


@numba.njit(inline="always")
def graded_answer(eta: float, kappa, gaps, p, f, up, down):
    r"""Fill p (K) with the category probabilities and f (K + 1, padded by zeros) with F_k (1 - F_k), from one
    exponential per cutpoint: :math:`F_k = \sigma(\eta - \kappa_k)` and :math:`1 - F_k` each from
    :math:`e^{-|\eta - \kappa_k|}` (no cancellation), the middle categories as :math:`F_k (1 - F_{k+1})
    (1 - e^{\kappa_k - \kappa_{k+1}})` with the last factor (``gaps``) computed once per call."""
    n_cuts = len(kappa)
    f[0], f[n_cuts + 1] = 0.0, 0.0
    for k in range(n_cuts):
        x = eta - kappa[k]
        e = math.exp(-abs(x))
        small, large = e / (1.0 + e), 1.0 / (1.0 + e)
        up[k], down[k] = (large, small) if x >= 0 else (small, large)
        f[k + 1] = up[k] * down[k]
    p[0] = down[0]
    p[n_cuts] = up[n_cuts - 1]
    for k in range(1, n_cuts):
        p[k] = up[k - 1] * down[k] * gaps[k - 1]


def cutpoint_gaps(kappa: np.ndarray) -> np.ndarray:
    """1 - exp(kappa_k - kappa_{k+1}) for consecutive cutpoints."""
    return -np.expm1(kappa[:-1] - kappa[1:])


@numba.njit(parallel=True, cache=True)
def _graded_item_sums(answers_t, theta, log_a, d, kappa, gaps, jac, full):
    """Per graded item: log-likelihood, score (items, k) and information (items, k, k) in (log a, d, u) with
    the shared cutpoints ``kappa`` (K - 1) and their Jacobian ``jac`` (K - 1, m) in the log spacings u; with
    ``full`` False only the (log a, d) entries (k = 2; the item update's block)."""
    n_items, n_systems = answers_t.shape
    n_cuts, m = jac.shape
    n_cat = n_cuts + 1
    k_dim = 2 + m if full else 2
    ll, score, info = np.zeros(n_items), np.zeros((n_items, k_dim)), np.zeros((n_items, k_dim, k_dim))
    for j in numba.prange(n_items):
        a = math.exp(log_a[j])
        p, f, grads, up, down = np.empty(n_cat), np.empty(n_cat + 1), np.empty((n_cat, k_dim)), np.empty(n_cuts), np.empty(n_cuts)
        for s in range(n_systems):
            y = answers_t[j, s]
            if y < 0:
                continue
            eta = a * theta[s] + d[j]
            graded_answer(eta, kappa, gaps, p, f, up, down)
            for c in range(n_cat):
                d_eta = f[c] - f[c + 1]
                grads[c, 0], grads[c, 1] = d_eta * (eta - d[j]), d_eta
                for i in range(k_dim - 2):  # dp_c/du_i = f_{c+1} dkappa_{c+1}/du_i - f_c dkappa_c/du_i
                    grads[c, 2 + i] = (f[c + 1] * jac[c, i] if c < n_cuts else 0.0) - (f[c] * jac[c - 1, i] if c > 0 else 0.0)
            ll[j] += math.log(p[y])
            for r in range(k_dim):
                score[j, r] += grads[y, r] / p[y]
            for c in range(n_cat):
                for r in range(k_dim):
                    g_r = grads[c, r] / p[c]
                    for q in range(r, k_dim):
                        info[j, r, q] += g_r * grads[c, q]
        for r in range(k_dim):
            for q in range(r):
                info[j, r, q] = info[j, q, r]
    return ll, score, info


@numba.njit(parallel=True, cache=True)
def _graded_system_sums(answers_t, theta, log_a, d, kappa, gaps):
    """Per system: log-likelihood, d/dtheta and information of its graded answers."""
    n_items, n_systems = answers_t.shape
    n_cat = len(kappa) + 1
    ll, grad, info = np.zeros(n_systems), np.zeros(n_systems), np.zeros(n_systems)
    for s in numba.prange(n_systems):
        p, f, up, down = np.empty(n_cat), np.empty(n_cat + 1), np.empty(n_cat - 1), np.empty(n_cat - 1)
        for j in range(n_items):
            y = answers_t[j, s]
            if y < 0:
                continue
            a = math.exp(log_a[j])
            graded_answer(a * theta[s] + d[j], kappa, gaps, p, f, up, down)
            ll[s] += math.log(p[y])
            grad[s] += a * (f[y] - f[y + 1]) / p[y]
            total = 0.0
            for c in range(n_cat):
                total += (f[c] - f[c + 1]) ** 2 / p[c]
            info[s] += a * a * total
    return ll, grad, info


def graded_item_sums(answers_t, theta, log_a, d, kappa, jac, full: bool):
    """Per graded item: log-likelihood, score (items, k) and information (items, k, k) in (log a, d, u) with
    the shared cutpoints ``kappa`` (K - 1) and their Jacobian ``jac`` (K - 1, m) in the log spacings u; with
    ``full`` False only the (log a, d) entries (k = 2; the item update's block)."""
    return _graded_item_sums(answers_t, theta, log_a, d, kappa, cutpoint_gaps(kappa), jac, full)


def graded_system_sums(answers_t, theta, log_a, d, kappa):
    """Per system: log-likelihood, d/dtheta and information of its graded answers."""
    return _graded_system_sums(answers_t, theta, log_a, d, kappa, cutpoint_gaps(kappa))
