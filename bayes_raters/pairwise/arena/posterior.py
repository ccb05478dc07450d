r"""The arena model's log posterior (:mod:`bayes_raters.pairwise.arena.model`) at millions of
votes: value, gradient and exact Hessian in one pass, and the value at a batch of draws (Numba);
:mod:`bayes_raters.pairwise.arena.laplace` builds the approximation and its draws from them.

Parameters, unconstrained, in one vector :math:`x`: ratings :math:`\theta` (M), category deviations
:math:`u` (C x M, row-major), style effects :math:`\beta` (p), :math:`\kappa = \log \epsilon` (with
ties) and :math:`\rho = \log \tau` (with categories); the log-densities of the last two include
their Jacobians.

Why the derivatives are written here and not taken from PyTensor: the log-likelihood is that of a
generalised linear model, :math:`\ell = \sum_v w_v\, \ell(\eta_v, \kappa; y_v)` with
:math:`\eta_v = x_v^\top \vartheta` for a design row with +1/-1 at the two models' (and
categories') ratings and :math:`z_v` at :math:`\beta`. Its Hessian is
:math:`\sum_v w_v \ell''_v\, x_v x_v^\top`: one pass over the votes, with the rating block summed per
(category, pair) by ``np.bincount``. Central differences of PyMC's compiled gradient (what
:func:`bayes_raters.laplace.laplace_approximation` does) need :math:`2d` gradient passes over every
vote, minutes for one Hessian at millions of votes where the pass here takes under a second
(``models/leaderboards.md``; ``benchmarks/bench_arena.py`` measures it). The
derivatives of :math:`\ell` in :math:`\eta` and :math:`\epsilon` are those of
:math:`\log\sigma(\eta-\epsilon)`, :math:`\log\sigma(-\eta-\epsilon)` and, for a tie, their sum plus
:math:`\log(e^{2\epsilon}-1)`; ``tests/leaderboard/test_arena.py`` checks value, gradient and
Hessian against the PyMC model.

The importance check needs the log density at every proposal: a Numba kernel
(:func:`_batch_loglik`) runs over the pooled votes in chunks, parallel over chunks, with a batch of
draws per vote.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from scipy import special
from scipy.sparse import coo_array

from bayes_raters.pairwise.arena.model import EPSILON_PRIOR_SD, LOSS, TAU_PRIOR_SD, TIE, WIN, ArenaData
from bayes_raters.threads import use_fork_safe_layer

use_fork_safe_layer()  # before the first prange launch: see bayes_raters.threads

#: Draws per batch of the log-density kernel (memory: keys x batch doubles).
DRAW_BATCH = 64
CHUNK = 4096


@dataclass(frozen=True)
class Layout:
    """Where each parameter block sits in :math:`x`."""

    n_models: int
    n_categories: int
    n_style: int
    ties: bool

    @property
    def u(self) -> slice:
        """Category deviations (C x M, row-major)."""
        return slice(self.n_models, self.n_models * (1 + self.n_categories))

    @property
    def beta(self) -> slice:
        """Style effects (per RMS of each column)."""
        start = self.u.stop
        return slice(start, start + self.n_style)

    @property
    def kappa(self) -> int | None:
        """log epsilon (None without ties)."""
        return self.beta.stop if self.ties else None

    @property
    def rho(self) -> int | None:
        """log tau (None without categories)."""
        return self.beta.stop + int(self.ties) if self.n_categories else None

    @property
    def size(self) -> int:
        """Number of parameters."""
        return self.beta.stop + int(self.ties) + int(self.n_categories > 0)

    def start(self) -> np.ndarray:
        """Where Newton starts: ratings, deviations and style 0, epsilon 0.3, tau 0.2."""
        x = np.zeros(self.size)
        if self.ties:
            x[self.kappa] = np.log(0.3)
        if self.n_categories:
            x[self.rho] = np.log(0.2)
        return x


def layout_of(data: ArenaData) -> Layout:
    """The parameter layout of validated votes."""
    return Layout(len(data.models), data.n_categories, len(data.style), data.ties)


def _rating_table(x: np.ndarray, layout: Layout) -> np.ndarray:
    """theta_{cm} = theta_m + u_{cm}, flattened (C x M; one row without categories)."""
    theta = x[: layout.n_models]
    if not layout.n_categories:
        return theta
    return (x[layout.u].reshape(layout.n_categories, layout.n_models) + theta).ravel()


def rating_slots(data: ArenaData, layout: Layout) -> list[tuple[np.ndarray, float]]:
    """Parameter positions of each key's rating terms and their signs in eta."""
    slots = [(data.key_a, 1.0), (data.key_b, -1.0)]
    if layout.n_categories:
        offset = layout.n_models * (1 + data.key_c)
        slots += [(offset + data.key_a, 1.0), (offset + data.key_b, -1.0)]
    return slots


def linear_predictor(x: np.ndarray, data: ArenaData, layout: Layout) -> np.ndarray:
    """eta of every pooled row at parameters ``x`` (ratings, deviations and style effects)."""
    table = _rating_table(x, layout)
    m = layout.n_models
    eta_key = table[data.key_c * m + data.key_a] - table[data.key_c * m + data.key_b]
    eta = eta_key[data.key]
    return eta + data.z @ x[layout.beta] if layout.n_style else eta


def vote_derivatives(eta: np.ndarray, outcome: np.ndarray, epsilon: float):
    r"""Per-row :math:`\ell`, :math:`\partial\ell/\partial\eta`, :math:`\partial^2\ell/\partial\eta^2`,
    :math:`\partial\ell/\partial\epsilon`, :math:`\partial^2\ell/\partial\epsilon^2`,
    :math:`\partial^2\ell/\partial\eta\partial\epsilon` (module docstring)."""
    a, b = eta - epsilon, -eta - epsilon
    log_pw, log_pl = -np.logaddexp(0.0, -a), -np.logaddexp(0.0, -b)
    q_w, q_l = special.expit(-a), special.expit(-b)
    v_w, v_l = q_w * (1 - q_w), q_l * (1 - q_l)
    win, loss, tie = outcome == WIN, outcome == LOSS, outcome == TIE
    ll = np.where(win, log_pw, np.where(loss, log_pl, log_pw + log_pl))
    g_eta = np.where(win, q_w, np.where(loss, -q_l, q_w - q_l))
    h_eta = -np.where(win, v_w, np.where(loss, v_l, v_w + v_l))
    g_eps = np.where(win, -q_w, np.where(loss, -q_l, -q_w - q_l))
    h_eps = -np.where(win, v_w, np.where(loss, v_l, v_w + v_l))
    h_cross = np.where(win, v_w, np.where(loss, -v_l, v_w - v_l))
    if epsilon > 0 and tie.any():
        r = 2.0 / -np.expm1(-2 * epsilon)  # d/de log(e^{2e} - 1)
        ll = ll + tie * np.log(np.expm1(2 * epsilon))
        g_eps = g_eps + tie * r
        h_eps = h_eps - tie * r**2 * np.exp(-2 * epsilon)
    return ll, g_eta, h_eta, g_eps, h_eps, h_cross


def prior_value(x: np.ndarray, layout: Layout, rating_sd: float) -> float:
    """Log prior density of ``x`` (Jacobians included, constants dropped)."""
    value = -0.5 * np.sum(x[: layout.n_models] ** 2) / rating_sd**2 - 0.5 * np.sum(x[layout.beta] ** 2)
    if layout.ties:
        value += -0.5 * np.exp(2 * x[layout.kappa]) / EPSILON_PRIOR_SD**2 + x[layout.kappa]
    if layout.n_categories:
        u, rho = x[layout.u], x[layout.rho]
        value += -0.5 * np.sum(u**2) * np.exp(-2 * rho) - u.size * rho - 0.5 * np.exp(2 * rho) / TAU_PRIOR_SD**2 + rho
    return float(value)


def _prior_terms(x: np.ndarray, layout: Layout, rating_sd: float):
    """Log prior (with Jacobians), its gradient and diagonal-plus-few negative Hessian."""
    d = layout.size
    grad, neg_hess = np.zeros(d), np.zeros((d, d))
    theta = x[: layout.n_models]
    value = -0.5 * np.sum(theta**2) / rating_sd**2
    grad[: layout.n_models] = -theta / rating_sd**2
    neg_hess[np.arange(layout.n_models), np.arange(layout.n_models)] = 1 / rating_sd**2
    beta = x[layout.beta]
    value -= 0.5 * np.sum(beta**2)
    grad[layout.beta] = -beta
    idx = np.arange(layout.beta.start, layout.beta.stop)
    neg_hess[idx, idx] = 1.0
    if layout.ties:  # epsilon ~ HalfNormal(s), kappa = log epsilon: -e^2/(2 s^2) + kappa
        k, eps2 = layout.kappa, np.exp(2 * x[layout.kappa]) / EPSILON_PRIOR_SD**2
        value += -0.5 * eps2 + x[k]
        grad[k] += 1 - eps2
        neg_hess[k, k] += 2 * eps2
    if layout.n_categories:  # u ~ N(0, tau^2), tau ~ HalfNormal(s), rho = log tau
        u, r = x[layout.u], layout.rho
        tau2, count = np.exp(2 * x[r]), u.size
        t2 = tau2 / TAU_PRIOR_SD**2
        value += -0.5 * np.sum(u**2) / tau2 - count * x[r] - 0.5 * t2 + x[r]
        grad[layout.u] = -u / tau2
        grad[r] += np.sum(u**2) / tau2 - count - t2 + 1
        iu = np.arange(layout.u.start, layout.u.stop)
        neg_hess[iu, iu] = 1 / tau2
        neg_hess[iu, r] = neg_hess[r, iu] = -2 * u / tau2
        neg_hess[r, r] = 2 * np.sum(u**2) / tau2 + 2 * t2
    return value, grad, neg_hess


def log_posterior(x: np.ndarray, data: ArenaData, layout: Layout, rating_sd: float, hessian: bool = True):
    """Log posterior density (constants dropped), its gradient and (``hessian``) the negative
    Hessian, by one pass over the pooled votes (module docstring)."""
    eps = float(np.exp(x[layout.kappa])) if layout.ties else 0.0
    ll, g_eta, h_eta, g_eps, h_eps, h_cross = vote_derivatives(linear_predictor(x, data, layout), data.outcome, eps)
    w = data.weight
    value, grad, neg_hess = _prior_terms(x, layout, rating_sd)
    value += float(w @ ll)
    n_keys, slots = data.key_a.size, rating_slots(data, layout)
    g_key = np.bincount(data.key, weights=w * g_eta, minlength=n_keys)
    for idx, sign in slots:
        grad += np.bincount(idx, weights=sign * g_key, minlength=layout.size)
    if layout.n_style:
        grad[layout.beta] += data.z.T @ (w * g_eta)
    if layout.ties:
        grad[layout.kappa] += eps * float(w @ g_eps)
    if not hessian:
        return value, grad, None
    d = layout.size
    curvature = -w * h_eta
    h_key = np.bincount(data.key, weights=curvature, minlength=n_keys)
    rows = np.concatenate([i for i, _ in slots for _ in slots])
    cols = np.concatenate([j for _ in slots for j, _ in slots])
    vals = np.concatenate([si * sj * h_key for _, si in slots for _, sj in slots])
    neg_hess += coo_array((vals, (rows, cols)), shape=(d, d)).toarray()
    cross = []  # (column, per-row weight): the beta and kappa columns against the ratings
    if layout.n_style:
        cross += [(layout.beta.start + k, curvature * data.z[:, k]) for k in range(layout.n_style)]
        neg_hess[layout.beta, layout.beta] += (data.z * curvature[:, None]).T @ data.z
    if layout.ties:
        k = layout.kappa
        cross.append((k, -w * h_cross * eps))
        neg_hess[k, k] -= eps**2 * float(w @ h_eps) + eps * float(w @ g_eps)
        if layout.n_style:
            column = data.z.T @ (-w * h_cross * eps)
            neg_hess[layout.beta, k] += column
            neg_hess[k, layout.beta] += column
    for column, row_weight in cross:
        per_key = np.bincount(data.key, weights=row_weight, minlength=n_keys)
        for idx, sign in slots:
            added = np.bincount(idx, weights=sign * per_key, minlength=d)
            neg_hess[:, column] += added
            neg_hess[column, :] += added
    return value, grad, neg_hess


@numba.njit(cache=True, inline="always")
def _softplus(v):
    return max(v, 0.0) + np.log1p(np.exp(-abs(v)))


@numba.njit(parallel=True, cache=True)
def _batch_loglik(key, outcome, weight, z, eta_key, beta, epsilon, log_tie):  # pragma: no cover - compiled
    """Sum over rows of w * log p(outcome | eta) for a batch of draws: ``eta_key`` (keys x S),
    ``beta`` (S x p), ``epsilon``/``log_tie`` (S). Parallel over chunks of rows."""
    n, n_draws, p = key.size, eta_key.shape[1], z.shape[1]
    n_chunks = (n + CHUNK - 1) // CHUNK
    partial = np.zeros((n_chunks, n_draws))
    for chunk in numba.prange(n_chunks):
        for r in range(chunk * CHUNK, min(n, (chunk + 1) * CHUNK)):
            k, o, w = key[r], outcome[r], weight[r]
            for s in range(n_draws):
                eta = eta_key[k, s]
                for j in range(p):
                    eta += z[r, j] * beta[s, j]
                if o == WIN:
                    value = -_softplus(epsilon[s] - eta)
                elif o == LOSS:
                    value = -_softplus(epsilon[s] + eta)
                else:
                    value = log_tie[s] - _softplus(epsilon[s] - eta) - _softplus(epsilon[s] + eta)
                partial[chunk, s] += w * value
    return partial.sum(axis=0)


def log_posterior_many(xs: np.ndarray, data: ArenaData, layout: Layout, rating_sd: float) -> np.ndarray:
    """Log posterior (as :func:`log_posterior`) at each row of ``xs``, batched through the kernel."""
    out = np.empty(len(xs))
    m = layout.n_models
    for start in range(0, len(xs), DRAW_BATCH):
        batch = xs[start:start + DRAW_BATCH]
        tables = np.stack([_rating_table(x, layout) for x in batch], axis=1)
        eta_key = np.ascontiguousarray(tables[data.key_c * m + data.key_a] - tables[data.key_c * m + data.key_b])
        eps = np.exp(batch[:, layout.kappa]) if layout.ties else np.zeros(len(batch))
        with np.errstate(divide="ignore"):
            log_tie = np.log(np.expm1(2 * eps))
        beta = np.ascontiguousarray(batch[:, layout.beta])
        ll = _batch_loglik(data.key, data.outcome, data.weight, data.z, eta_key, beta, eps, log_tie)
        out[start:start + len(batch)] = ll + np.array([prior_value(x, layout, rating_sd) for x in batch])
    return out
