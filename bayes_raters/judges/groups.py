r"""The marginal likelihood of the responses no human rated, by groups of sufficient statistics.

A response without human ratings has only judge scores, whose mean :math:`m_g`, loadings
:math:`U_g` and noise precisions :math:`P_g` are the same for every response of its group
:math:`g` (its system and the set of judges that scored it). With :math:`n_g` responses,
:math:`s_g = \sum_r x_r` and :math:`G_g = \sum_r x_r x_r^\top` (a missing score is a 0 with
precision 0), :math:`E_g = \sum_r (x_r - m)(x_r - m)^\top = G - m s^\top - s m^\top + n m m^\top`,
and the sum of :func:`~bayes_raters.judges.marginal.response_loglik` over the group is

.. math:: -\tfrac12\Big(n_g\big(k_g \log 2\pi - \log\det P_g + \log\det K_g\big)
   + \operatorname{tr}(P_g E_g) - \operatorname{tr}(K_g^{-1} M_g E_g M_g^\top)\Big),

:math:`M_g = U_g^\top P_g`, :math:`K_g = I_2 + M_g U_g`, :math:`k_g` the scores per response.
One evaluation then costs a few :math:`J \times J` products per group, not a pass over every
score: where a few responses carry human ratings and thousands only judge scores (the design the
family is for), the rows left are the rated responses' (``models/judges.md`` gives the timing).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytensor.tensor as pt

LOG_2PI = float(np.log(2 * np.pi))


@dataclass(frozen=True)
class JudgeGroups:
    """Sufficient statistics of the unrated responses: per group its ``system`` (and
    ``system_onehot``, groups x systems), judge ``mask`` (groups, judges) and the judges per
    response ``score_count``, ``count``, ``total`` :math:`s_g` (groups, judges) and ``cross``
    :math:`G_g` (groups, judges, judges), scores standardised as the model's rows."""

    system: np.ndarray
    system_onehot: np.ndarray
    mask: np.ndarray
    score_count: np.ndarray
    count: np.ndarray
    total: np.ndarray
    cross: np.ndarray


def judge_groups(values: np.ndarray, response: np.ndarray, judge: np.ndarray, response_system: np.ndarray, unrated: np.ndarray,
                 n_judges: int, n_systems: int) -> JudgeGroups:
    """The groups of the responses flagged ``unrated`` from the judge rows (``values``,
    ``response``, ``judge`` of each row; ``response_system`` per response)."""
    keep = unrated[response]
    dense = np.zeros((len(response_system), n_judges))
    seen = np.zeros((len(response_system), n_judges), bool)
    dense[response[keep], judge[keep]] = values[keep]
    seen[response[keep], judge[keep]] = True
    rows = np.flatnonzero(unrated)
    keys = np.column_stack([response_system[rows], seen[rows]])
    unique, group = np.unique(keys, axis=0, return_inverse=True)
    x = dense[rows]
    count = np.bincount(group, minlength=len(unique)).astype(float)
    total = np.zeros((len(unique), n_judges))
    np.add.at(total, group, x)
    cross = np.zeros((len(unique), n_judges, n_judges))
    np.add.at(cross, group, x[:, :, None] * x[:, None, :])
    system, mask = unique[:, 0].astype(int), unique[:, 1:].astype(float)
    return JudgeGroups(system=system, system_onehot=np.eye(n_systems)[system], mask=mask, score_count=mask.sum(axis=1), count=count, total=total,
                       cross=cross)


def group_loglik(groups: JudgeGroups, p: dict, lib=pt):
    """The sum over the unrated responses of their marginal log-likelihood (module docstring),
    from the parameters ``p`` (as :func:`~bayes_raters.judges.model.row_terms` reads them);
    PyTensor (``lib=pt``) or NumPy (``lib=np``)."""
    s = groups.system
    mean = (p["alpha"][None, :] + p["beta"][None, :] * (p["mu"][s] - p["grand_mean"])[:, None] + p["bias"].T[s]) * groups.mask
    precision = groups.mask / p["sigma_judge"][None, :] ** 2
    u1 = p["beta"][None, :] * p["sigma_true"][s][:, None]
    u2 = lib.ones_like(u1) * p["loading"][None, :]
    m1, m2 = u1 * precision, u2 * precision
    k11, k12, k22 = 1 + (m1 * u1).sum(1), (m1 * u2).sum(1), 1 + (m2 * u2).sum(1)
    det = k11 * k22 - k12**2
    n = groups.count[:, None, None]
    scatter = groups.cross - mean[:, :, None] * groups.total[:, None, :] - groups.total[:, :, None] * mean[:, None, :] + n * mean[:, :, None] * mean[:, None, :]
    quadratic = (precision * lib.diagonal(scatter, axis1=1, axis2=2)).sum(1)
    e11 = (m1[:, :, None] * scatter * m1[:, None, :]).sum((1, 2))
    e12 = (m1[:, :, None] * scatter * m2[:, None, :]).sum((1, 2))
    e22 = (m2[:, :, None] * scatter * m2[:, None, :]).sum((1, 2))
    explained = (k22 * e11 - 2 * k12 * e12 + k11 * e22) / det
    log_precision = (groups.mask * lib.log(lib.ones_like(precision) / p["sigma_judge"][None, :] ** 2)).sum(1)
    per_response = groups.score_count * LOG_2PI - log_precision + lib.log(det)
    return -0.5 * (groups.count * per_response + quadratic - explained).sum()
