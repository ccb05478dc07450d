r"""The passes over a mixed leaderboard's bounded answers (scores in [0, 1] with exact zeros and ones, the ordered beta
model of :mod:`bayes_raters.leaderboard.responses`), as :mod:`bayes_raters.leaderboard.typed_kernel` has them for the
3PL and graded answers: per item the log-likelihood, the score and the Fisher information in
:math:`x = (\log a, d, u, \log\phi)`; per system the log-likelihood, its derivative in :math:`\theta` and the
information.

An answer is a category :math:`y \in \{0, 1, 2\}` (exactly 0, between, exactly 1; ``-1``: not answered) and, between,
a value :math:`v` given as ``logs_t`` = :math:`(\log v, \log(1 - v))`. Its likelihood factorises into the category's
probability (the graded model with three categories and the cutpoints :math:`\mp e^u / 2`) and, between, the
density :math:`\operatorname{Beta}(v; \mu\phi, (1 - \mu)\phi)`, :math:`\mu = \sigma(\eta)`. So its Fisher
information is the categorical one plus :math:`P(\text{between})` times the beta's,

.. math::

   I_{\mu\mu} = \phi^2 [\psi'(\mu\phi) + \psi'((1 - \mu)\phi)],\quad
   I_{\mu\phi} = \phi [\mu\psi'(\mu\phi) - (1 - \mu)\psi'((1 - \mu)\phi)],\quad
   I_{\phi\phi} = \mu^2\psi'(\mu\phi) + (1 - \mu)^2\psi'((1 - \mu)\phi) - \psi'(\phi),

carried to :math:`\eta` by :math:`d\mu/d\eta = \mu(1 - \mu)` and to :math:`\log\phi` by :math:`\phi`.

The digamma :math:`\psi` and trigamma :math:`\psi'` are written here (recurrence to :math:`x \ge 10`, then the
asymptotic series): SciPy's are not callable from a cached Numba kernel (``scipy.special.cython_special`` exports
no trigamma), and the tests hold these to SciPy's ``digamma``/``polygamma`` at a relative 1e-12.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from bayes_raters.leaderboard.typed_kernel import cutpoint_gaps, graded_answer, scalar_expit
from bayes_raters.threads import use_fork_safe_layer

use_fork_safe_layer()


@numba.njit(cache=True)
def digamma(x: float) -> float:
    """psi(x) for x > 0."""
    out = 0.0
    while x < 10.0:
        out -= 1.0 / x
        x += 1.0
    inv2 = 1.0 / (x * x)
    return out + math.log(x) - 0.5 / x - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))))


@numba.njit(cache=True)
def trigamma(x: float) -> float:
    """psi'(x) for x > 0."""
    out = 0.0
    while x < 10.0:
        out += 1.0 / (x * x)
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    return out + inv + 0.5 * inv2 + inv * inv2 * (1 / 6 - inv2 * (1 / 30 - inv2 * (1 / 42 - inv2 * (1 / 30 - inv2 * 5 / 66))))


@numba.njit(inline="always")
def _beta_information(mu: float, phi: float, tri_phi: float):
    """The beta density's Fisher information per answer between, in (eta, eta-log phi, log phi)."""
    tri_a, tri_b = trigamma(mu * phi), trigamma((1.0 - mu) * phi)
    w = mu * (1.0 - mu)
    i_ee = w * w * phi * phi * (tri_a + tri_b)
    i_ep = w * phi * phi * (mu * tri_a - (1.0 - mu) * tri_b)
    i_pp = phi * phi * (mu * mu * tri_a + (1.0 - mu) ** 2 * tri_b - tri_phi)
    return i_ee, i_ep, i_pp


@numba.njit(inline="always")
def _beta_terms(mu: float, phi: float, lgamma_phi: float, psi_phi: float, log_v: float, log_w: float):
    """Log density of one value between, and its derivatives in eta and in log phi."""
    alpha, beta = mu * phi, (1.0 - mu) * phi
    psi_a, psi_b = digamma(alpha), digamma(beta)
    ll = lgamma_phi - math.lgamma(alpha) - math.lgamma(beta) + (alpha - 1.0) * log_v + (beta - 1.0) * log_w
    d_eta = phi * (log_v - log_w - psi_a + psi_b) * mu * (1.0 - mu)
    d_log_phi = phi * (psi_phi - mu * psi_a - (1.0 - mu) * psi_b + mu * log_v + (1.0 - mu) * log_w)
    return ll, d_eta, d_log_phi


@numba.njit(parallel=True, cache=True)
def _bounded_item_sums(answers_t, logs_t, theta, log_a, d, kappa, gaps, jac, log_phi, full):
    n_items, n_systems = answers_t.shape
    k_dim = 4 if full else 2
    phi = math.exp(log_phi)
    lgamma_phi, psi_phi, tri_phi = math.lgamma(phi), digamma(phi), trigamma(phi)
    ll, score, info = np.zeros(n_items), np.zeros((n_items, k_dim)), np.zeros((n_items, k_dim, k_dim))
    for j in numba.prange(n_items):
        a = math.exp(log_a[j])
        p, f, grads, up, down = np.empty(3), np.empty(4), np.zeros((3, k_dim)), np.empty(2), np.empty(2)
        for s in range(n_systems):
            y = answers_t[j, s]
            if y < 0:
                continue
            eta = a * theta[s] + d[j]
            x0 = eta - d[j]
            graded_answer(eta, kappa, gaps, p, f, up, down)
            for c in range(3):
                d_eta = f[c] - f[c + 1]
                grads[c, 0], grads[c, 1] = d_eta * x0, d_eta
                if full:  # dp_c/du = f_{c+1} dkappa_{c+1}/du - f_c dkappa_c/du
                    grads[c, 2] = (f[c + 1] * jac[c, 0] if c < 2 else 0.0) - (f[c] * jac[c - 1, 0] if c > 0 else 0.0)
            ll[j] += math.log(p[y])
            for r in range(k_dim):
                score[j, r] += grads[y, r] / p[y]
            for c in range(3):
                for r in range(k_dim):
                    g_r = grads[c, r] / p[c]
                    for q in range(r, k_dim):
                        info[j, r, q] += g_r * grads[c, q]
            mu = scalar_expit(eta)
            i_ee, i_ep, i_pp = _beta_information(mu, phi, tri_phi)
            info[j, 0, 0] += p[1] * i_ee * x0 * x0
            info[j, 0, 1] += p[1] * i_ee * x0
            info[j, 1, 1] += p[1] * i_ee
            if full:
                info[j, 0, 3] += p[1] * i_ep * x0
                info[j, 1, 3] += p[1] * i_ep
                info[j, 3, 3] += p[1] * i_pp
            if y == 1:
                ll_v, d_eta, d_log_phi = _beta_terms(mu, phi, lgamma_phi, psi_phi, logs_t[0, j, s], logs_t[1, j, s])
                ll[j] += ll_v
                score[j, 0] += d_eta * x0
                score[j, 1] += d_eta
                if full:
                    score[j, 3] += d_log_phi
        for r in range(k_dim):
            for q in range(r):
                info[j, r, q] = info[j, q, r]
    return ll, score, info


@numba.njit(parallel=True, cache=True)
def _bounded_system_sums(answers_t, logs_t, theta, log_a, d, kappa, gaps, log_phi):
    n_items, n_systems = answers_t.shape
    phi = math.exp(log_phi)
    lgamma_phi, psi_phi, tri_phi = math.lgamma(phi), digamma(phi), trigamma(phi)
    ll, grad, info = np.zeros(n_systems), np.zeros(n_systems), np.zeros(n_systems)
    for s in numba.prange(n_systems):
        p, f, up, down = np.empty(3), np.empty(4), np.empty(2), np.empty(2)
        for j in range(n_items):
            y = answers_t[j, s]
            if y < 0:
                continue
            a = math.exp(log_a[j])
            eta = a * theta[s] + d[j]
            graded_answer(eta, kappa, gaps, p, f, up, down)
            mu = scalar_expit(eta)
            ll[s] += math.log(p[y])
            grad[s] += a * (f[y] - f[y + 1]) / p[y]
            total = 0.0
            for c in range(3):
                total += (f[c] - f[c + 1]) ** 2 / p[c]
            info[s] += a * a * (total + p[1] * _beta_information(mu, phi, tri_phi)[0])
            if y == 1:
                ll_v, d_eta, _ = _beta_terms(mu, phi, lgamma_phi, psi_phi, logs_t[0, j, s], logs_t[1, j, s])
                ll[s] += ll_v
                grad[s] += a * d_eta
    return ll, grad, info


def bounded_item_sums(answers_t, logs_t, theta, log_a, d, kappa, jac, log_phi: float, full: bool):
    """Per bounded item: log-likelihood, score (items, k) and information (items, k, k) in (log a, d, u, log phi)
    with the shared cutpoints ``kappa`` (2), their Jacobian ``jac`` (2, 1) in u and the shared ``log_phi``; with
    ``full`` False only the (log a, d) entries (k = 2). ``logs_t`` (2, items, systems): log v and log(1 - v) of
    the answers between 0 and 1 (any value elsewhere)."""
    return _bounded_item_sums(answers_t, logs_t, theta, log_a, d, kappa, cutpoint_gaps(kappa), jac, float(log_phi), full)


def bounded_system_sums(answers_t, logs_t, theta, log_a, d, kappa, log_phi: float):
    """Per system: log-likelihood, d/dtheta and information of its bounded answers."""
    return _bounded_system_sums(answers_t, logs_t, theta, log_a, d, kappa, cutpoint_gaps(kappa), float(log_phi))
