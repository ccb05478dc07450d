r"""Every response's marginal likelihood, and the biases' and rater effects' terms, from sufficient
statistics of groups of responses, rated or not.

Where the rater effects are zero in the likelihood (integrated out with the biases, or a single
rater; normal ratings), a response's :math:`n` human ratings are exchangeable given its true
score: :math:`\prod_h N(y_h; T, \sigma_H^2) = N(\bar y; T, \sigma_H^2/n)\,(2\pi\sigma_H^2)^{-(n-1)/2}
n^{-1/2} e^{-W/2\sigma_H^2}` with :math:`W = \sum_h (y_h - \bar y)^2`. So the response is the
vector :math:`x = (\bar y, z_1, \dots, z_J)`, its mean rating beside its judge scores, with
column means :math:`m = (\mu_s, \alpha_j + \beta_j(\mu_s - \bar\mu))`, loadings :math:`u_1 =
(\sigma_s, \beta_j\sigma_s)` on :math:`t` and :math:`u_2 = (0, \lambda_j)` on :math:`f`, and
precisions :math:`P = (n/\sigma_H^2, 1/\sigma_j^2)` (0 where a judge did not score it), all the
same for every response of a group: one system, one count of ratings, one set of judges. The
group's likelihood is then that of :mod:`bayes_raters.judges.groups` over these columns, from
:math:`n_g`, :math:`\sum_r x_r`, :math:`\sum_r x_r x_r^\top` and :math:`\sum_r W_r` (the
:math:`\log n` terms cancel).

The biases' :math:`G` and :math:`H` (:mod:`bayes_raters.judges.biases`) are sums of terms linear
in :math:`x_r - m` and constant within a group; the raters' terms need, per group, each rater's
ratings count :math:`c_r` summed, :math:`\sum_r c_r c_r^\top` and :math:`\sum_r c_r x_r^\top`.
One evaluation then costs a few :math:`(J+1) \times (J+1)` products per group, whatever the
number of responses (``models/judges.md`` times it against the rows one by one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytensor.tensor as pt

from bayes_raters.judges.groups import LOG_2PI


@dataclass(frozen=True)
class ResponseGroups:
    r"""Sufficient statistics of every response by group (system, ratings count, judges that
    scored it): ``system``, ``system_onehot`` (groups, systems), ``mask`` (groups, judges),
    ``human_count`` and ``score_count`` per response, ``count`` of responses; of the columns
    (mean rating, judge scores) ``total`` (groups, 1 + judges), ``cross`` (groups, 1 + J, 1 + J);
    ``within`` (:math:`\sum_r W_r`); per rater ``rater_sum`` (its standardised ratings' sum)
    and per group ``rater_total`` (groups, raters), ``rater_cross`` (groups, raters, raters),
    ``rater_moment`` (groups, raters, 1 + J)."""

    #: The one field not as long as the groups (a graph input keeps its own length).
    OWN_LENGTH: ClassVar[tuple[str, ...]] = ("rater_sum",)

    system: np.ndarray
    system_onehot: np.ndarray
    mask: np.ndarray
    human_count: np.ndarray
    score_count: np.ndarray
    count: np.ndarray
    total: np.ndarray
    cross: np.ndarray
    within: np.ndarray
    rater_sum: np.ndarray
    rater_total: np.ndarray
    rater_cross: np.ndarray
    rater_moment: np.ndarray


def response_groups(values, response, rater, judge, response_system, n_systems: int, n_judges: int, n_raters: int) -> ResponseGroups:
    """The :class:`ResponseGroups` of the rows (standardised ``values``; ``response`` numbered
    0..R-1, ``rater`` -1 on a judge row, ``judge`` -1 on a human row, as
    :func:`~bayes_raters.judges.model.observation_rows` gives them)."""
    n = len(response_system)
    human, scored = rater >= 0, judge >= 0
    counts = np.zeros((n, max(n_raters, 1)))
    np.add.at(counts, (response[human], rater[human]), 1.0)
    n_h = counts.sum(axis=1)
    rating_sum = np.bincount(response[human], weights=values[human], minlength=n)
    mean_rating = np.divide(rating_sum, n_h, out=np.zeros(n), where=n_h > 0)
    within = np.bincount(response[human], weights=(values[human] - mean_rating[response[human]]) ** 2, minlength=n)
    x = np.zeros((n, 1 + n_judges))
    seen = np.zeros((n, n_judges), bool)
    x[:, 0] = mean_rating
    x[response[scored], 1 + judge[scored]] = values[scored]
    seen[response[scored], judge[scored]] = True
    keys = np.column_stack([response_system, n_h, seen])
    unique, group = np.unique(keys, axis=0, return_inverse=True)
    n_groups = len(unique)

    def by_group(v):
        out = np.zeros((n_groups, *v.shape[1:]))
        np.add.at(out, group, v)
        return out

    mask = unique[:, 2:].astype(float)
    return ResponseGroups(system=unique[:, 0].astype(int), system_onehot=np.eye(n_systems)[unique[:, 0].astype(int)], mask=mask,
                          human_count=unique[:, 1].astype(float), score_count=mask.sum(axis=1), count=by_group(np.ones(n)),
                          total=by_group(x), cross=by_group(x[:, :, None] * x[:, None, :]), within=by_group(within),
                          rater_sum=np.bincount(rater[human], weights=values[human], minlength=counts.shape[1]).astype(float),
                          rater_total=by_group(counts), rater_cross=by_group(counts[:, :, None] * counts[:, None, :]),
                          rater_moment=by_group(counts[:, :, None] * x[:, None, :]))


def column_terms(groups: ResponseGroups, p: dict, lib=pt):
    r"""Per group and column: the mean :math:`m`, the true score's SD, the precisions :math:`P`,
    :math:`M_i = u_i \circ P` (module docstring) and :math:`K`'s entries ``k11, k12, k22`` and
    determinant, from the
    parameters ``p`` (as :func:`~bayes_raters.judges.model.row_terms` reads them; biases and
    rater effects zero)."""
    concat = np.concatenate if lib is np else pt.concatenate
    mu, sd = lib.dot(groups.system_onehot, p["mu"]), lib.dot(groups.system_onehot, p["sigma_true"])
    beta, loading = p["beta"][None, :], p["loading"][None, :]
    mean = concat([mu[:, None], (p["alpha"][None, :] + beta * (mu - p["grand_mean"])[:, None]) * groups.mask], axis=1)
    u1 = concat([sd[:, None], beta * sd[:, None]], axis=1)
    u2 = concat([lib.zeros_like(sd)[:, None], lib.ones_like(sd)[:, None] * loading], axis=1)
    precision = concat([(groups.human_count / p["sigma_human"] ** 2)[:, None], groups.mask / p["sigma_judge"][None, :] ** 2], axis=1)
    m1, m2 = u1 * precision, u2 * precision
    k11, k12, k22 = 1 + (m1 * u1).sum(1), (m1 * u2).sum(1), 1 + (m2 * u2).sum(1)
    return mean, sd, precision, (m1, m2), (k11, k12, k22), k11 * k22 - k12**2


def _form(v, w, groups: ResponseGroups, mean):
    r"""Per group :math:`\sum_r v^\top (x_r - m)(x_r - m)^\top w` from the sufficient statistics."""
    vm, wm = (v * mean).sum(1), (w * mean).sum(1)
    vt, wt = (v * groups.total).sum(1), (w * groups.total).sum(1)
    return (v[:, :, None] * groups.cross * w[:, None, :]).sum((1, 2)) - vm * wt - vt * wm + groups.count * vm * wm


def pooled_loglik(groups: ResponseGroups, p: dict, lib=pt, terms=None):
    """The sum over every response of its marginal log-likelihood (module docstring; the same
    value as :func:`~bayes_raters.judges.marginal.response_loglik` of its rows), NumPy or
    PyTensor; ``terms``: :func:`column_terms` where the caller has them (one graph, not two)."""
    mean, _, precision, (m1, m2), (k11, k12, k22), det = column_terms(groups, p, lib) if terms is None else terms
    diagonal = lib.diagonal(groups.cross, axis1=1, axis2=2)
    quadratic = (precision * (diagonal - 2 * mean * groups.total + groups.count[:, None] * mean**2)).sum(1)
    explained = (k22 * _form(m1, m1, groups, mean) - 2 * k12 * _form(m1, m2, groups, mean) + k11 * _form(m2, m2, groups, mean)) / det
    log_d = groups.human_count * lib.log(p["sigma_human"] ** 2) + lib.dot(groups.mask, lib.log(p["sigma_judge"] ** 2))
    per_response = (groups.human_count + groups.score_count) * LOG_2PI + log_d + lib.log(det)
    return -0.5 * ((groups.count * per_response).sum() + groups.within.sum() / p["sigma_human"] ** 2 + (quadratic - explained).sum())


def pooled_bias_terms(groups: ResponseGroups, p: dict, n_systems: int, lib=pt, n_raters: int = 0, terms=None):
    r""":math:`G` (systems x judges) and :math:`H` (systems x judges x judges) of
    :mod:`bayes_raters.judges.biases` over every response, from the groups; with ``n_raters``,
    the raters' :math:`g_\rho`, :math:`H_{\rho\rho}` and :math:`H_{\delta\rho}` too (the same
    values as :func:`~bayes_raters.judges.biases.block_bias_terms` of the responses' rows). With
    :math:`\kappa_1 = (k_{22} M_1 - k_{12} M_2)/\det K` and :math:`\kappa_2` alike, the true
    score's and factor's conditional means sum over a group to :math:`\kappa_i^\top(s_g - n_g m)`
    (``terms`` as in :func:`pooled_loglik`)."""
    mean, sd, _, (m1, m2), (k11, k12, k22), det = column_terms(groups, p, lib) if terms is None else terms
    kappa1, kappa2 = (k22[:, None] * m1 - k12[:, None] * m2) / det[:, None], (k11[:, None] * m2 - k12[:, None] * m1) / det[:, None]
    residual = groups.total - groups.count[:, None] * mean
    w = 1.0 / p["sigma_judge"] ** 2
    pv, qv = p["beta"] * w * sd[:, None] * groups.mask, p["loading"] * w * groups.mask
    g_group = (w * groups.mask * residual[:, 1:] - pv * (kappa1 * residual).sum(1)[:, None] - qv * (kappa2 * residual).sum(1)[:, None])
    i11, i12, i22 = k22 / det, -k12 / det, k11 / det
    outer = (i11[:, None, None] * pv[:, :, None] * pv[:, None, :] + i12[:, None, None] * (pv[:, :, None] * qv[:, None, :] + qv[:, :, None] * pv[:, None, :])
             + i22[:, None, None] * qv[:, :, None] * qv[:, None, :])
    eye = np.eye(groups.mask.shape[1]) if lib is np else pt.eye(groups.mask.shape[1])
    h_group = groups.count[:, None, None] * ((w * groups.mask)[:, :, None] * eye[None] - outer)
    onehot = groups.system_onehot
    n_judges = groups.mask.shape[1]
    g = lib.dot(onehot.T, g_group)
    h = lib.dot(onehot.T, h_group.reshape((-1, n_judges * n_judges))).reshape((n_systems, n_judges, n_judges))
    if not n_raters:
        return g, h
    human_w = 1.0 / p["sigma_human"] ** 2
    moment = groups.rater_moment - groups.rater_total[:, :, None] * mean[:, None, :]
    g_rho = human_w * (groups.rater_sum - lib.dot(groups.rater_total.T, mean[:, 0]) - ((sd[:, None] * kappa1)[:, None, :] * moment).sum((0, 2)))
    h_rho = human_w * lib.diag(groups.rater_total.sum(axis=0)) - human_w**2 * ((i11 * sd**2)[:, None, None] * groups.rater_cross).sum(0)
    judge_rater = groups.mask[:, :, None] * groups.rater_total[:, None, :]  # each group's judges x its raters' counts
    t1 = lib.dot(onehot.T, ((i11 * sd**2)[:, None, None] * judge_rater).reshape((-1, n_judges * n_raters)))
    t2 = lib.dot(onehot.T, ((i12 * sd)[:, None, None] * judge_rater).reshape((-1, n_judges * n_raters)))
    bw, lw = p["beta"] * w, p["loading"] * w
    h_cross = -human_w * (bw[None, :, None] * t1.reshape((n_systems, n_judges, n_raters)) + lw[None, :, None] * t2.reshape((n_systems, n_judges, n_raters)))
    return g, h, g_rho, h_rho, h_cross
