r"""The judges model's likelihood algebra: the rows of one response, normal with mean :math:`m_r`
and covariance :math:`D_r + U_r U_r^\top`, integrated over :math:`(t_r, f_r)` by Woodbury and the
matrix determinant lemma (the formulas are in :mod:`bayes_raters.judges.model`); NumPy or
PyTensor, one parameter set."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

from bayes_raters.judges.groups import LOG_2PI


def segment_totals(values, segments, n_segments: int, lib):
    """Sums of ``values`` by ``segments`` (an index per value), ``n_segments`` long."""
    if lib is np:
        return np.bincount(segments, weights=values, minlength=n_segments)
    return pt.inc_subtensor(pt.zeros((n_segments,))[segments], values)


def judge_totals(residual, load_true, load_shared, variance, response, n_responses: int, lib=np):
    r"""Per response: :math:`A` (``a11, a12, a22``), :math:`b` (``b1, b2``), the quadratic form
    :math:`(x-m)^\top D^{-1}(x-m)`, :math:`\sum_i \log d_i` and the row count (module docstring)."""
    def total(values):
        return segment_totals(values, response, n_responses, lib)

    a = (total(load_true**2 / variance), total(load_true * load_shared / variance), total(load_shared**2 / variance))
    b = (total(load_true * residual / variance), total(load_shared * residual / variance))
    return a, b, total(residual**2 / variance), total(lib.log(variance)), total(lib.ones_like(residual))


def true_score_given_rows(residual, load_true, load_shared, variance, response, n_responses: int, lib=np):
    r"""Every response's marginal log-likelihood of its rows (module docstring) and the mean and
    variance of :math:`t_r` given them (the first coordinate of :math:`K^{-1} b` and of
    :math:`K^{-1}`: the factor integrated out); NumPy or PyTensor."""
    (a11, a12, a22), (b1, b2), quadratic, log_d, count = judge_totals(residual, load_true, load_shared, variance, response, n_responses, lib)
    k11, k22 = 1 + a11, 1 + a22
    det = k11 * k22 - a12**2
    explained = (k22 * b1**2 - 2 * a12 * b1 * b2 + k11 * b2**2) / det
    log_lik = -0.5 * (count * LOG_2PI + log_d + lib.log(det) + quadratic - explained)
    return log_lik, (k22 * b1 - a12 * b2) / det, k22 / det


def response_loglik(residual, load_true, load_shared, variance, response, n_responses: int, lib=np):
    r"""Every response's marginal log-likelihood (module docstring) from its rows: ``residual``
    :math:`x - m`, the loadings on :math:`t_r` and :math:`f_r`, the noise variance, and the
    response index of each row; one parameter set, NumPy (``lib=np``) or PyTensor (``lib=pt``)."""
    return true_score_given_rows(residual, load_true, load_shared, variance, response, n_responses, lib)[0]
