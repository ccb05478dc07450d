r"""The judges' per-system biases integrated out of the judges model's likelihood.

A bias :math:`\delta_{js}` shifts judge :math:`j`'s scores of system :math:`s`, so given the other
parameters each response's marginal log-likelihood (:mod:`bayes_raters.judges.model`, the true
score and the shared factor already integrated out) is quadratic in :math:`d_s = \delta_{\cdot s}`:
with the judge residuals :math:`e` at :math:`\delta = 0`, the noise precisions :math:`w_j` of the
judges that scored the response (mask :math:`u`), :math:`P` the 2 x J matrix with rows
:math:`p = \sigma_s \beta \circ w \circ u` and :math:`q = \lambda \circ w \circ u`, and
:math:`(m_1, m_2) = K^{-1} b` (the mean of the true score and factor given the response),

.. math:: \ell_r(d) = \ell_r(0) + g_r^\top d - \tfrac12 d^\top H_r d,\quad
   g_r = w \circ u \circ e - m_1 p - m_2 q,\quad H_r = \operatorname{diag}(w \circ u) - P^\top K^{-1} P.

Summed by system: :math:`g_s` and :math:`H_s` (J x J). The prior :math:`\delta_{j\cdot} =
\tau_j B v_j`, :math:`B` an orthonormal basis of the zero-sum vectors over systems and
:math:`v_j \sim N(0, I)`, makes the biases' part of the likelihood, with :math:`c = \operatorname{vec}(\tau \circ G^\top B)`
and :math:`\Omega_{(jk),(ml)} = \tau_j \tau_m \sum_s B_{sk} B_{sl} H_{s,jm}`,

.. math:: \log \int N(v; 0, I)\, e^{c^\top v - \frac12 v^\top \Omega v}\, dv
   = \tfrac12 c^\top (I + \Omega)^{-1} c - \tfrac12 \log\det(I + \Omega),

and given the rest :math:`v \sim N((I+\Omega)^{-1} c, (I+\Omega)^{-1})` (:func:`bias_draws`). The
scale :math:`\tau_j` then meets the data without the funnel between a scale and its biases
(``models/judges.md`` measures the sampling with and without it).
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
import scipy.linalg

from bayes_raters.gaussian_integral import gaussian_log_integral
from bayes_raters.judges.groups import JudgeGroups
from bayes_raters.judges.marginal import ResponseBlock, block_totals


def zero_sum_basis(n: int) -> np.ndarray:
    """An orthonormal basis (n x n-1) of the vectors of length ``n`` that sum to zero."""
    q, _ = np.linalg.qr(np.eye(n) - 1.0 / n)
    return q[:, : n - 1]


def _inverse_k(a, b, lib):
    """:math:`K^{-1}`'s entries over the determinant and :math:`(m_1, m_2) = K^{-1} b`."""
    (a11, a12, a22), (b1, b2) = a, b
    k11, k22 = 1 + a11, 1 + a22
    det = k11 * k22 - a12**2
    return (k22 / det, -a12 / det, k11 / det), ((k22 * b1 - a12 * b2) / det, (k11 * b2 - a12 * b1) / det)


def _outer_sums(weights, onehot, used_pairs, lib, shape):
    """Per system :math:`\\sum_r c_r u_r v_r^\\top` (systems x ``shape``) for each row of
    ``weights``, ``used_pairs`` the responses' :math:`u_r v_r^\\top` flattened."""
    return [lib.dot(onehot.T * c[None, :], used_pairs).reshape((onehot.shape[1], *shape)) for c in weights]


def block_bias_terms(block: ResponseBlock, p: dict, lib=pt, n_raters: int = 0):
    r""":math:`G` (systems x judges) and :math:`H` (systems x judges x judges) of the module
    docstring summed over the responses of ``block``, biases (and with ``n_raters``, rater
    effects) set to zero in ``p``. With ``n_raters``, also the raters' terms: :math:`g_\rho`
    (raters), :math:`H_{\rho\rho}` (raters x raters) and :math:`H_{\delta\rho}` (systems x
    judges x raters) (:func:`bias_loglik`)."""
    a, b, *_ = block_totals(block, p, lib)
    (i11, i12, i22), (m1, m2) = _inverse_k(a, b, lib)
    onehot, used = block.system_onehot, block.judge_used
    sd = lib.dot(onehot, p["sigma_true"])
    w = 1.0 / p["sigma_judge"] ** 2
    bw, lw = p["beta"] * w, p["loading"] * w
    mu = lib.dot(onehot, p["mu"])
    e = (block.judge - (p["alpha"][None, :] + p["beta"][None, :] * (mu - p["grand_mean"])[:, None])) * used
    g = w[None, :] * lib.dot(onehot.T, e) - bw[None, :] * lib.dot(onehot.T, used * (m1 * sd)[:, None]) - lw[None, :] * lib.dot(onehot.T, used * m2[:, None])
    s11, s12, s22 = _outer_sums([i11 * sd**2, i12 * sd, i22], onehot, block.judge_pairs, lib, (used.shape[1], used.shape[1]))
    h = (_diag(w[None, :] * block.system_scores, lib) - s11 * (bw[:, None] * bw[None, :])[None]
         - s12 * (bw[:, None] * lw[None, :] + lw[:, None] * bw[None, :])[None] - s22 * (lw[:, None] * lw[None, :])[None])
    if not n_raters:
        return g, h
    counts = block.rater_counts  # each response's ratings by rater
    human_w = 1.0 / p["sigma_human"] ** 2
    eh = (block.human - mu[:, None]) * block.human_used
    g_rho = human_w * (lib.dot(eh.reshape((-1,)), block.slot_rater) - lib.dot(counts.T, m1 * sd))
    h_rho = human_w * lib.diag(counts.sum(axis=0)) - human_w**2 * lib.dot(counts.T * (i11 * sd**2)[None, :], counts)
    t1, t2 = _outer_sums([i11 * sd**2, i12 * sd], onehot, block.judge_rater, lib, (used.shape[1], n_raters))
    h_cross = -human_w * (bw[None, :, None] * t1 + lw[None, :, None] * t2)
    return g, h, g_rho, h_rho, h_cross


def _diag(rows, lib):
    """(n, J) -> (n, J, J) with each row on the diagonal."""
    eye = np.eye(rows.shape[1]) if lib is np else pt.eye(rows.shape[1])
    return rows[:, :, None] * eye[None]


def group_bias_terms(groups: JudgeGroups, p: dict, n_systems: int, lib=pt):
    """:math:`G` and :math:`H` of the unrated responses' groups (their residuals' totals times
    the group's :math:`H_g`, and :math:`n_g H_g`), by system."""
    s, mask = groups.system, groups.mask
    mean = (p["alpha"][None, :] + p["beta"][None, :] * (p["mu"][s] - p["grand_mean"])[:, None]) * mask
    w = mask / p["sigma_judge"][None, :] ** 2
    pv = p["beta"][None, :] * p["sigma_true"][s][:, None] * w
    qv = p["loading"][None, :] * w
    k11 = 1 + (pv * p["beta"][None, :] * p["sigma_true"][s][:, None]).sum(1)
    k12 = (pv * p["loading"][None, :]).sum(1)
    k22 = 1 + (qv * p["loading"][None, :]).sum(1)
    det = k11 * k22 - k12**2
    outer = (k22[:, None, None] * pv[:, :, None] * pv[:, None, :] - k12[:, None, None] * (pv[:, :, None] * qv[:, None, :] + qv[:, :, None] * pv[:, None, :])
             + k11[:, None, None] * qv[:, :, None] * qv[:, None, :]) / det[:, None, None]
    h_one = _diag(w, lib) - outer
    residual = groups.total - groups.count[:, None] * mean
    onehot = groups.system_onehot
    g = lib.dot(onehot.T, (h_one * residual[:, None, :]).sum(2))
    h = lib.dot(onehot.T, (groups.count[:, None, None] * h_one).reshape((s.shape[0], -1))).reshape((n_systems, mask.shape[1], mask.shape[1]))
    return g, h


def _omega(g, h, tau, basis, lib, raters=None):
    """:math:`c` and :math:`I + \\Omega` of the module docstring (judge-major, k within), the
    raters' coordinates last where ``raters`` = ``(g_rho, h_rho, h_cross, tau_rho, basis_rho)``."""
    n_judges, k = tau.shape[0], basis.shape[1]
    c = (tau[:, None] * lib.dot(g.T, basis)).reshape((n_judges * k,))
    pairs = (basis[:, :, None] * basis[:, None, :]).reshape((basis.shape[0], k * k))
    omega = lib.dot(pairs.T, h.reshape((h.shape[0], n_judges * n_judges))).reshape((k, k, n_judges, n_judges))
    omega = (omega.transpose(2, 0, 3, 1) * (tau[:, None, None, None] * tau[None, None, :, None])).reshape((n_judges * k, n_judges * k))
    if raters is not None:
        g_rho, h_rho, h_cross, tau_rho, basis_rho = raters
        n_raters, n_free = basis_rho.shape
        c = lib.concatenate([c, tau_rho * lib.dot(basis_rho.T, g_rho)])
        cross = lib.dot(basis.T, h_cross.reshape((h.shape[0], n_judges * n_raters))).reshape((k * n_judges, n_raters))
        cross = lib.dot(cross, basis_rho).reshape((k, n_judges, n_free)).transpose(1, 0, 2) * (tau_rho * tau)[:, None, None]
        cross = cross.reshape((n_judges * k, n_free))
        rho = tau_rho**2 * lib.dot(basis_rho.T, lib.dot(h_rho, basis_rho))
        omega = lib.concatenate([lib.concatenate([omega, cross], axis=1), lib.concatenate([cross.T, rho], axis=1)], axis=0)
    eye = np.eye(omega.shape[0]) if lib is np else pt.eye(omega.shape[0])
    return c, eye + omega


def bias_loglik(g, h, tau, basis, lib=pt, raters=None):
    """The biases' part of the log-likelihood (module docstring), from :math:`G`, :math:`H`, the
    bias scales :math:`\\tau` and the zero-sum ``basis``; with ``raters`` (:func:`_omega`) the
    rater effects' too."""
    c, precision = _omega(g, h, tau, basis, lib, raters)
    if lib is not np:  # one node, its gradient from the same factor (bayes_raters.gaussian_integral)
        return gaussian_log_integral(precision, c)
    chol = np.linalg.cholesky(precision)
    z = scipy.linalg.solve_triangular(chol, c, lower=True)
    return 0.5 * (z**2).sum() - np.log(np.diagonal(chol)).sum()


def bias_draws(g, h, tau, basis, rng: np.random.Generator, raters=None):
    """One draw (judges x systems) of the biases given the rest (NumPy); with ``raters``, also
    one of the rater effects: ``(bias, rater_effect)``."""
    c, precision = _omega(g, h, tau, basis, np, raters)
    chol = np.linalg.cholesky(precision)
    mean = scipy.linalg.cho_solve((chol, True), c)
    v = mean + scipy.linalg.solve_triangular(chol.T, rng.standard_normal(len(c)), lower=False)
    k = len(tau) * basis.shape[1]
    bias = tau[:, None] * (v[:k].reshape(len(tau), basis.shape[1]) @ basis.T)
    if raters is None:
        return bias
    return bias, raters[3] * (raters[4] @ v[k:])
