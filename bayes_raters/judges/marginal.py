r"""The judges model's likelihood algebra: the rows of one response, normal with mean :math:`m_r`
and covariance :math:`D_r + U_r U_r^\top`, integrated over :math:`(t_r, f_r)` by Woodbury and the
matrix determinant lemma (the formulas are in :mod:`bayes_raters.judges.model`); NumPy or
PyTensor, one parameter set: by rows (:func:`response_loglik`, any rows) or by blocks
(:class:`ResponseBlock`, the model's graph)."""

from __future__ import annotations

from dataclasses import dataclass

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
    return woodbury(*judge_totals(residual, load_true, load_shared, variance, response, n_responses, lib), lib=lib)


def woodbury(a, b, quadratic, log_d, count, lib=np):
    r"""Each response's marginal log-likelihood and the mean and variance of :math:`t_r` given
    its rows, from the totals :math:`A`, :math:`b`, the quadratic form, :math:`\sum_i \log d_i`
    and the row count (module docstring)."""
    (a11, a12, a22), (b1, b2) = a, b
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


@dataclass(frozen=True)
class ResponseBlock:
    r"""The rows of some responses as dense arrays, one row per response: the human ratings in
    slots (``human`` standardised, ``human_used`` 1 or 0, ``human_rater``; 0 in an empty slot),
    the judge scores by judge (``judge``, ``judge_used``: a judge scores a response once at
    most, :func:`~bayes_raters.judges.data.judges_data` checks it) and ``system_onehot``
    (responses, systems). Laid out so, the totals of :func:`judge_totals` are products along the
    rows with vectors of the judges' parameters and sums over the slots, with no scatter by
    response in the gradient (``models/judges.md`` times it against the row form).

    What the likelihood needs of the layout alone comes computed, so that the model's graph,
    which takes the data as inputs, does not recompute it at every evaluation: each response's
    ``human_count`` and ``score_count``; ``judge_pairs`` (responses, judges x judges: which pairs
    of judges scored it), ``system_scores`` (systems, judges: scores by system), ``rater_counts``
    (responses, raters: its ratings by rater), ``slot_rater`` (responses x slots, raters: each
    slot's rater, one-hot, zero where empty) and ``judge_rater`` (responses, judges x raters)."""

    system_onehot: np.ndarray
    human: np.ndarray
    human_used: np.ndarray
    human_rater: np.ndarray
    judge: np.ndarray
    judge_used: np.ndarray
    human_count: np.ndarray
    score_count: np.ndarray
    judge_pairs: np.ndarray
    system_scores: np.ndarray
    rater_counts: np.ndarray
    slot_rater: np.ndarray
    judge_rater: np.ndarray


def slots_within(response: np.ndarray) -> np.ndarray:
    """Each row's slot: how many earlier rows belong to its response (0, 1, ...)."""
    order = np.argsort(response, kind="stable")
    slot = np.empty(len(response), int)
    slot[order] = np.arange(len(response)) - np.searchsorted(response[order], response[order])
    return slot


def response_block(values, response, rater, judge, response_system, n_systems: int, n_judges: int, n_raters: int | None = None) -> ResponseBlock:
    """The :class:`ResponseBlock` of the rows (standardised ``values``; ``response`` numbered
    0..R-1 here; ``rater`` -1 on a judge row, ``judge`` -1 on a human row, as
    :func:`~bayes_raters.judges.model.observation_rows` gives them) of R responses whose systems
    are ``response_system``; ``n_raters`` (default: the largest rater index + 1) numbers the raters."""
    n = len(response_system)
    human, scored = rater >= 0, judge >= 0
    n_raters = int(rater.max()) + 1 if n_raters is None else n_raters
    rated = response[human]
    slot = slots_within(rated)
    width = int(slot.max()) + 1 if len(slot) else 0
    h, h_used, h_rater = np.zeros((n, width)), np.zeros((n, width)), np.zeros((n, width), int)
    h[rated, slot], h_used[rated, slot], h_rater[rated, slot] = values[human], 1.0, rater[human]
    z, z_used = np.zeros((n, n_judges)), np.zeros((n, n_judges))
    z[response[scored], judge[scored]], z_used[response[scored], judge[scored]] = values[scored], 1.0
    onehot = np.eye(n_systems)[response_system]
    slot_rater = np.eye(max(n_raters, 1))[h_rater] * h_used[:, :, None]
    rater_counts = slot_rater.sum(axis=1)
    return ResponseBlock(system_onehot=onehot, human=h, human_used=h_used, human_rater=h_rater, judge=z, judge_used=z_used,
                         human_count=h_used.sum(axis=1), score_count=z_used.sum(axis=1),
                         judge_pairs=(z_used[:, :, None] * z_used[:, None, :]).reshape(n, -1), system_scores=onehot.T @ z_used,
                         rater_counts=rater_counts, slot_rater=slot_rater.reshape(n * width, slot_rater.shape[2]),
                         judge_rater=(z_used[:, :, None] * rater_counts[:, None, :]).reshape(n, -1))


def columns(x) -> int:
    """The number of columns of a NumPy array or of a graph input of static width
    (:func:`~bayes_raters.judges.model.as_graph_inputs`)."""
    return x.shape[1] if isinstance(x, np.ndarray) else x.type.shape[1]


def block_totals(block: ResponseBlock, p: dict, lib=pt):
    r"""The totals of :func:`judge_totals` for each response of ``block`` from the parameters
    ``p`` (as :func:`~bayes_raters.judges.model.row_terms` reads them). With :math:`w_j =
    1/\sigma_j^2` and the judge residuals :math:`e_{rj}` (zero where judge :math:`j` did not
    score :math:`r`): :math:`a_{11} = \sigma_s^2(n_{Hr}/\sigma_H^2 + \sum_j \beta_j^2 w_j)`,
    :math:`b_1 = \sigma_s(\sum_h e_{rh}/\sigma_H^2 + \sum_j \beta_j w_j e_{rj})`, and so on
    over the judges that scored the response."""
    dot = lib.dot
    mu, sd = dot(block.system_onehot, p["mu"]), dot(block.system_onehot, p["sigma_true"])
    beta, loading, sigma2 = p["beta"], p["loading"], p["sigma_judge"] ** 2
    human_var = p["sigma_human"] ** 2
    w, human_w = 1.0 / sigma2, 1.0 / human_var
    mean = p["alpha"][None, :] + beta[None, :] * (mu - p["grand_mean"])[:, None] + dot(block.system_onehot, p["bias"].T)
    e = (block.judge - mean) * block.judge_used
    n_human = block.human_count
    if columns(block.human):
        eh = (block.human - mu[:, None] - p["rater_effect"][block.human_rater]) * block.human_used
        human_b, human_quad = eh.sum(axis=1) * human_w, (eh**2).sum(axis=1) * human_w
    else:
        human_b = human_quad = 0.0
    a = (sd**2 * (n_human * human_w + dot(block.judge_used, beta**2 * w)), sd * dot(block.judge_used, beta * loading * w),
         dot(block.judge_used, loading**2 * w))
    b = (sd * (human_b + dot(e, beta * w)), dot(e, loading * w))
    log_d = n_human * lib.log(human_var) + dot(block.judge_used, lib.log(sigma2))
    return a, b, human_quad + dot(e**2, w), log_d, n_human + block.score_count


def block_loglik(block: ResponseBlock, p: dict, lib=pt):
    """Every response's marginal log-likelihood from its :class:`ResponseBlock` (the same value
    as :func:`response_loglik` of its rows)."""
    return woodbury(*block_totals(block, p, lib), lib=lib)[0]
