r"""Proposals of the leaderboard's blocked sampler (:mod:`bayes_raters.leaderboard.sampler`):
Gaussian proposals with a per-row metric, and per-row multivariate t independence proposals
fitted to a chain's warmup, mixed into the Newton kernels after warmup.

Rows are systems (one coordinate) or items (one or two coordinates); the linear algebra on the
1 x 1 or 2 x 2 blocks is written out, because numpy's batched ``linalg`` routines cost more than
the arithmetic on blocks that small (``models/leaderboards.md``). Larger blocks (the items of the other
response types, :mod:`bayes_raters.leaderboard.typed`) take numpy's batched routines.
"""

from __future__ import annotations

import numpy as np

#: Share of the rows (systems or items) that take the independence proposal in a sweep after warmup.
INDEPENDENT_SHARE = 0.5


def cholesky(m: np.ndarray) -> np.ndarray:
    """Lower Cholesky factors of a stack of positive-definite matrices (1 x 1 and 2 x 2 written out)."""
    if m.shape[1] > 2:
        return np.linalg.cholesky(m)
    out = np.zeros_like(m)
    out[:, 0, 0] = np.sqrt(m[:, 0, 0])
    if m.shape[1] == 2:
        out[:, 1, 0] = m[:, 1, 0] / out[:, 0, 0]
        out[:, 1, 1] = np.sqrt(m[:, 1, 1] - out[:, 1, 0] ** 2)
    return out


def lower_solve(chol: np.ndarray, v: np.ndarray) -> np.ndarray:
    """L^{-1} v for lower-triangular blocks (1 x 1 and 2 x 2 written out)."""
    if v.shape[1] > 2:
        return np.linalg.solve(chol, v[..., None])[..., 0]
    out = np.empty_like(v)
    out[:, 0] = v[:, 0] / chol[:, 0, 0]
    if v.shape[1] == 2:
        out[:, 1] = (v[:, 1] - chol[:, 1, 0] * out[:, 0]) / chol[:, 1, 1]
    return out


def upper_solve(chol: np.ndarray, v: np.ndarray) -> np.ndarray:
    """L^{-T} v for lower-triangular 1 x 1 or 2 x 2 blocks."""
    out = np.empty_like(v)
    last = v.shape[1] - 1
    out[:, last] = v[:, last] / chol[:, last, last]
    if last == 1:
        out[:, 0] = (v[:, 0] - chol[:, 1, 0] * out[:, 1]) / chol[:, 0, 0]
    return out


def lower_times(chol: np.ndarray, v: np.ndarray) -> np.ndarray:
    """L v for lower-triangular blocks (1 x 1 and 2 x 2 written out)."""
    if v.shape[1] > 2:
        return np.einsum("nij,nj->ni", chol, v)
    out = chol[:, :, 0] * v[:, :1]
    if v.shape[1] == 2:
        out[:, 1] += chol[:, 1, 1] * v[:, 1]
    return out


def metric_norm2(chol: np.ndarray, v: np.ndarray) -> np.ndarray:
    """v^T G v per row, G = L L^T given by ``chol``: |L^T v|^2."""
    k = v.shape[1]
    if k == 1:
        return (chol[:, 0, 0] * v[:, 0]) ** 2
    return (chol[:, 0, 0] * v[:, 0] + chol[:, 1, 0] * v[:, 1]) ** 2 + (chol[:, 1, 1] * v[:, 1]) ** 2


def mh_accept(rng, log_ratio) -> np.ndarray:
    """Metropolis-Hastings acceptance: log U < ``log_ratio`` with U uniform, one per entry (a NaN ratio is refused)."""
    return np.log(rng.random(np.shape(log_ratio))) < log_ratio


def log_det(chol: np.ndarray) -> np.ndarray:
    """log |L L^T| per block."""
    return 2 * np.log(np.diagonal(chol, axis1=1, axis2=2)).sum(1)


def gauss_draw(mean, chol, var_scale, rng) -> np.ndarray:
    """x ~ N(mean, var_scale G^{-1}) per row, G = L L^T given by ``chol``: x = mean + sqrt(var_scale) L^{-T} z."""
    return mean + np.sqrt(var_scale)[:, None] * upper_solve(chol, rng.standard_normal(mean.shape))


def gauss_log_q(x, mean, chol, var_scale) -> np.ndarray:
    """log N(x; mean, var_scale G^{-1}) per row, up to a constant (|L^T (x - mean)|^2 = the quadratic form)."""
    k = x.shape[1]
    delta = x - mean
    lt_delta = chol[:, 0, 0][:, None] * delta if k == 1 else np.stack(
        [chol[:, 0, 0] * delta[:, 0] + chol[:, 1, 0] * delta[:, 1], chol[:, 1, 1] * delta[:, 1]], axis=1)
    return 0.5 * (log_det(chol) - k * np.log(var_scale) - (lt_delta**2).sum(1) / var_scale)


class IndependenceProposal:
    """Per-row (system or item) multivariate t proposals (``df`` degrees of freedom) with the mean
    and the covariance (times ``inflate``) of the row's coordinates over warmup sweeps: independent of
    the state, so they jump across the whole conditional in one move and cannot get stuck."""

    def __init__(self, draws: np.ndarray, inflate: float = 1.5, df: float = 5.0):
        """``draws``: (sweeps, rows, k) coordinates from the chain's own warmup."""
        self.mean = draws.mean(0)
        centred = draws - self.mean
        k = draws.shape[2]
        cov = np.einsum("sji,sjk->jik", centred, centred) / (len(draws) - 1) * inflate
        self.chol = cholesky(cov + 1e-8 * np.eye(k))
        self.log_det = log_det(self.chol)
        self.df = df

    def draw(self, rng) -> np.ndarray:
        """One proposal per row."""
        z = rng.standard_normal(self.mean.shape)
        w = np.sqrt(rng.chisquare(self.df, len(self.mean)) / self.df)
        return self.mean + lower_times(self.chol, z) / w[:, None]

    def log_density(self, x) -> np.ndarray:
        """The log density of ``x`` (rows, k) per row, up to a constant."""
        delta = lower_solve(self.chol, x - self.mean)
        return -0.5 * self.log_det - 0.5 * (self.df + x.shape[1]) * np.log1p((delta**2).sum(1) / self.df)


def mix_independence(independent: IndependenceProposal | None, proposal: np.ndarray, rng) -> tuple[np.ndarray, np.ndarray]:
    """Replace each row of ``proposal`` (rows, k) by a draw of ``independent`` with probability
    :data:`INDEPENDENT_SHARE` (none during warmup, ``independent=None``); the kernel is drawn per
    row and sweep independently of the state, so the mixture leaves the conditional invariant
    when each kernel does. Returns the rows' choice and the proposal."""
    use = np.zeros(len(proposal), bool) if independent is None else rng.random(len(proposal)) < INDEPENDENT_SHARE
    if use.any():
        proposal = np.where(use[:, None], independent.draw(rng), proposal)
    return use, proposal


def independence_log_q_back(independent: IndependenceProposal | None, use: np.ndarray, x: np.ndarray,
                            proposal: np.ndarray, log_q_back: np.ndarray) -> np.ndarray:
    """The Hastings term :math:`\\log q(x) - \\log q(x^*)` of the independence proposal on the rows
    that took it (``use``), the other kernel's ``log_q_back`` elsewhere."""
    if not use.any():
        return log_q_back
    return np.where(use, independent.log_density(x) - independent.log_density(proposal), log_q_back)
