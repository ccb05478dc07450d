r"""The judges model: every response's true score seen through noisy human raters and calibrated
judges, the true scores integrated out exactly.

All quantities are on standardised scales: human ratings minus their mean over their SD (the
true score's unit), each judge's scores minus its mean over its SD. Response :math:`r` of
system :math:`s` has true score

.. math:: T_r = \mu_s + \sigma_s t_r, \qquad t_r \sim N(0, 1),

human rater :math:`h` gives :math:`y_{rh} = T_r + \rho_h + \varepsilon_{rh}` with
:math:`\rho_h` (severity, scale :math:`\tau_\rho`, summing to zero over the raters) and
:math:`\varepsilon \sim N(0, \sigma_H^2)`, and judge :math:`j` gives

.. math:: z_{rj} = \alpha_j + \beta_j (T_r - \bar\mu) + \delta_{js} + \lambda_j f_r + e_{rj},

its calibration (intercept, slope; :math:`\bar\mu` the systems' means weighted by their
responses), its bias for system :math:`s` (:math:`\delta_{j\cdot}`
sums to zero over systems, scale :math:`\tau_j`: partially pooled, the self-preference case), a
factor :math:`f_r \sim N(0, 1)` that all judges' errors share with loadings
:math:`\lambda_j \ge 0` (judges that err together; ``shared_error``), and its own noise
:math:`e_{rj} \sim N(0, \sigma_j^2)`.

Integrating :math:`(t_r, f_r)` out: response :math:`r`'s observations :math:`x_r` (its ratings
and scores) are normal with mean :math:`m_r` and covariance :math:`D_r + U_r U_r^\top`,
:math:`D_r` diagonal (:math:`\sigma_H^2` or :math:`\sigma_j^2`) and :math:`U_r` with rows
:math:`(\sigma_s, 0)` for a rating and :math:`(\beta_j \sigma_s, \lambda_j)` for a judge score.
With :math:`A = U^\top D^{-1} U`, :math:`b = U^\top D^{-1}(x - m)` and :math:`K = I_2 + A`
(Woodbury and the matrix determinant lemma),

.. math:: \log p(x_r) = -\tfrac12\Big(n_r \log 2\pi + \sum_i \log d_i + \log\det K
   + (x-m)^\top D^{-1}(x-m) - b^\top K^{-1} b\Big),

sums over each response's rows (:func:`~bayes_raters.judges.marginal.response_loglik`; the graph
lays the rows out by response, :class:`~bayes_raters.judges.marginal.ResponseBlock`), so one
evaluation costs a few passes over the rows whatever the design. Given the parameters, :math:`(t_r, f_r)` is normal with
precision :math:`K` and mean :math:`K^{-1} b`
(:func:`~bayes_raters.judges.marginal.true_score_given_rows`).

With normal ratings the judges' biases :math:`\delta` and (with two to
:data:`MAX_INTEGRATED_RATERS` raters) the rater effects :math:`\rho` are integrated out as well:
the likelihood is Gaussian in them given the other parameters
(:mod:`bayes_raters.judges.biases`), so their scales meet the data without a funnel; their draws
come after sampling, from their Gaussian given each posterior draw (:func:`~bayes_raters.judges.draws.bias_posterior`).
Ordinal ratings sample them (non-centred).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt

from bayes_raters.errors import InvalidInputError
from bayes_raters.judges import ordinal
from bayes_raters.judges.biases import bias_loglik, block_bias_terms, group_bias_terms, zero_sum_basis
from bayes_raters.judges.data import JudgesData
from bayes_raters.judges.groups import JudgeGroups, group_loglik, judge_groups
from bayes_raters.judges.marginal import ResponseBlock, block_loglik, block_totals, response_block, woodbury
from bayes_raters.judges.pooled import ResponseGroups, column_terms, pooled_bias_terms, pooled_loglik, response_groups

#: Prior SD of the systems' log true-score SDs around their typical value (partial pooling).
SPREAD_POOLING = 0.3


def system_weights(data: JudgesData) -> np.ndarray:
    """Each system's share of the responses."""
    return np.bincount(data.response_system, minlength=len(data.system_names)) / len(data.responses)


@dataclass(frozen=True)
class JudgesSpec:
    """The model's options: whether the judges' errors share a factor; whether the human
    ratings are ``"normal"`` or ``"ordinal"`` (integer categories of a latent rating on the
    declared ``score_range``, :mod:`bayes_raters.judges.ordinal`)."""

    shared_error: bool
    observation: str = "normal"
    score_range: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if self.observation not in ordinal.OBSERVATIONS:
            raise InvalidInputError(f"observation must be one of {ordinal.OBSERVATIONS}, got {self.observation!r}.")
        if self.ordinal and self.score_range is None:
            raise InvalidInputError("observation='ordinal' needs the declared score_range=(low, high) of the human ratings.")

    @property
    def ordinal(self) -> bool:
        """Whether the human ratings are ordinal."""
        return self.observation == "ordinal"


def default_shared_error(n_judges: int) -> bool:
    """On with three judges or more, off with one or two (with two the loadings are one
    covariance, with one they are the judge's own noise). Judges that err together, left without
    the factor, make the intervals too narrow: the model reads their agreement as true-score signal
    and overstates the slopes (``models/judges.md`` gives the coverage with and without it); with
    independent errors the factor costs width and little else (its split of each judge's error is
    :func:`split_judge_error`)."""
    return n_judges >= 3


def observation_rows(data: JudgesData):
    """Standardised observations and their indices, human ratings first: values, response,
    system, rater (-1 for judge rows), judge (-1 for human rows)."""
    human = (data.humans["score"].to_numpy() - data.center) / data.scale
    judge_z = (data.judges["score"].to_numpy() - data.judge_center[data.judge_index]) / data.judge_scale[data.judge_index]
    response = np.concatenate([data.human_response, data.judge_response])
    n_human = len(human)
    rater = np.concatenate([data.human_rater, np.full(len(judge_z), -1)])
    judge = np.concatenate([np.full(n_human, -1), data.judge_index])
    return np.concatenate([human, judge_z]), response, data.response_system[response], rater, judge


def row_terms(p: dict, system, rater, judge, lib=np):
    """Each row's mean, loadings and noise variance from the parameters ``p`` (standardised
    scale; names as in :func:`build_judges_model`), NumPy or PyTensor."""
    is_human = rater >= 0
    r, j = lib.maximum(rater, 0), lib.maximum(judge, 0)
    mu, sigma = p["mu"][system], p["sigma_true"][system]
    human_mean = mu + p["rater_effect"][r]
    judge_mean = p["alpha"][j] + p["beta"][j] * (mu - p["grand_mean"]) + p["bias"][j, system]
    mean = lib.where(is_human, human_mean, judge_mean)
    load_true = lib.where(is_human, sigma, p["beta"][j] * sigma)
    load_shared = lib.where(is_human, 0.0, p["loading"][j])
    variance = lib.where(is_human, p["sigma_human"] ** 2, p["sigma_judge"][j] ** 2)
    return mean, load_true, load_shared, variance


def rated_block(data: JudgesData, spec: JudgesSpec, every_response: bool = False):
    """The responses whose rows the likelihood takes one by one (the human-rated ones, or with
    ``every_response`` all of them), in order, and their
    :class:`~bayes_raters.judges.marginal.ResponseBlock` (ordinal ratings stay out of the
    block: they enter through their slots)."""
    values, response, system, rater, judge = observation_rows(data)
    keep = np.ones(len(values), bool) if every_response else np.isin(response, data.human_response)
    if spec.ordinal:
        keep &= judge >= 0
    numbering, compact = np.unique(response[keep], return_inverse=True)
    return numbering, response_block(values[keep], compact, rater[keep], judge[keep], data.response_system[numbering], len(data.system_names),
                                     len(data.judge_names), len(data.raters))


@dataclass(frozen=True)
class LikelihoodData:
    """What the likelihood reads of the data: the :func:`rated_block`, the unrated responses'
    groups (:func:`unrated_groups`; None where every response is rated or the responses go one
    by one), or instead of both every response's groups (``pooled``,
    :mod:`bayes_raters.judges.pooled`, where :func:`poolable`), the systems' shares of the responses (:func:`system_weights`, for the grand mean),
    for ordinal ratings their slots and cutpoints, and the numbers of systems and raters.
    NumPy arrays, or graph inputs in the model (:func:`as_graph_inputs`)."""

    block: ResponseBlock | None
    groups: JudgeGroups | None
    pooled: ResponseGroups | None
    weights: np.ndarray
    slots: ordinal.RatingSlots | None
    cut: np.ndarray | None
    n_systems: int
    n_raters: int


def poolable(data: JudgesData, spec: JudgesSpec) -> bool:
    """Whether every response's likelihood comes from groups of sufficient statistics
    (:mod:`bayes_raters.judges.pooled`): normal ratings, with the rater effects integrated out
    or a single rater, so that a response's ratings are exchangeable given its true score."""
    return integrate_biases(spec) and (integrate_raters(spec, data) or len(data.raters) == 1)


def likelihood_data(data: JudgesData, spec: JudgesSpec, grouped: bool = True):
    """The responses of :func:`rated_block`, in order, and the :class:`LikelihoodData` (NumPy);
    ``grouped=False``: every response one by one; ``grouped`` and :func:`poolable`: every
    response by groups (:func:`~bayes_raters.judges.pooled.response_groups`; no block)."""
    if grouped and poolable(data, spec):
        values, response, _, rater, judge = observation_rows(data)
        pooled = response_groups(values, response, rater, judge, data.response_system, len(data.system_names), len(data.judge_names), len(data.raters))
        return np.unique(data.human_response), LikelihoodData(block=None, groups=None, pooled=pooled, weights=system_weights(data), slots=None, cut=None,
                                         n_systems=len(data.system_names), n_raters=len(data.raters))
    numbering, block = rated_block(data, spec, every_response=not grouped)
    slots = cut = None
    if spec.ordinal:
        slots = ordinal.rating_slots(data, spec.score_range[0])
        slots = dataclasses.replace(slots, response=np.searchsorted(numbering, slots.response))
        cut = ordinal.standardised_cutpoints(data, spec.score_range)
    groups = unrated_groups(data) if grouped else None
    return numbering, LikelihoodData(block=block, groups=groups, pooled=None, weights=system_weights(data), slots=slots, cut=cut,
                                     n_systems=len(data.system_names), n_raters=len(data.raters))


def as_graph_inputs(value, rows=None):
    """``value`` (an array, a dataclass of arrays, an int or None) with every array a PyTensor
    shared variable, static in every axis but the first. The data then enter the compiled graph
    as inputs, not constants: PyTensor's Numba backend keys its compiled code by the graph and
    its constants' bytes, so with constants every new data set compiled anew, and with inputs a
    data set of the same design reuses the code (``models/judges.md`` times both). Within a
    dataclass the arrays as long as its first one share that one's symbolic length (``rows``:
    its NumPy length and the symbolic one), so the graph needs no checks that they broadcast
    (``models/judges.md`` also gives the packings tried and left out); the fields a dataclass
    names in ``OWN_LENGTH`` keep their own."""
    if value is None or isinstance(value, int):
        return value
    if isinstance(value, np.ndarray):
        shared = pytensor.shared(value, shape=(None, *value.shape[1:]))
        if rows is None or value.shape[0] != rows[0]:
            return shared
        return pt.specify_shape(shared, (rows[1], *value.shape[1:]))
    converted, rows = {}, None
    for field in dataclasses.fields(value):
        own = field.name in getattr(value, "OWN_LENGTH", ())
        converted[field.name] = as_graph_inputs(getattr(value, field.name), None if own else rows)
        if rows is None and isinstance(getattr(value, field.name), np.ndarray):
            rows = (len(getattr(value, field.name)), converted[field.name].shape[0])
    return dataclasses.replace(value, **converted)


def rated_loglik(inputs: LikelihoodData, p: dict, spec: JudgesSpec, lib=pt):
    """Each response of the block's marginal log-likelihood from the parameters ``p`` (as
    :func:`row_terms` reads them): :func:`~bayes_raters.judges.marginal.block_loglik`, or for
    ordinal ratings :func:`~bayes_raters.judges.ordinal.ordinal_loglik`; NumPy or PyTensor."""
    block = inputs.block
    if not spec.ordinal:
        return block_loglik(block, p, lib)
    return ordinal.ordinal_loglik(woodbury(*block_totals(block, p, lib), lib=lib), inputs.slots, p, inputs.cut, block.system_onehot.shape[0], lib)


def per_response_loglik(data: JudgesData, spec: JudgesSpec, every_response: bool = False):
    """The responses of :func:`rated_block` and a function ``loglik(p, lib)`` of each one's
    marginal log-likelihood, in that order (:func:`rated_loglik`); NumPy or PyTensor."""
    numbering, inputs = likelihood_data(data, spec, grouped=not every_response)
    return numbering, lambda p, lib=pt: rated_loglik(inputs, p, spec, lib)


def unrated_groups(data: JudgesData):
    """The :class:`~bayes_raters.judges.groups.JudgeGroups` of the responses no human rated, or
    None where every response is rated."""
    rated = np.zeros(len(data.responses), bool)
    rated[data.human_response] = True
    if rated.all():
        return None
    values, response, _, _, judge = observation_rows(data)
    judged = judge >= 0
    return judge_groups(values[judged], response[judged], judge[judged], data.response_system, ~rated, len(data.judge_names), len(data.system_names))


def marginal_loglik(data: JudgesData, p: dict, spec: JudgesSpec, grouped: bool = True, bias_scale=None, rater_scale=None, lib=pt):
    """The model's log-likelihood, every response's true score integrated out: the human-rated
    responses one by one (:func:`rated_loglik`), the others by groups of sufficient statistics
    (:mod:`bayes_raters.judges.groups`; ``grouped=False``: one by one too). With ``bias_scale``
    (normal ratings), the judges' biases are integrated out too
    (:mod:`bayes_raters.judges.biases`; ``p["bias"]`` must then be zero), and with
    ``rater_scale`` the rater effects with them (``p["rater_effect"]`` zero); NumPy or PyTensor."""
    return likelihood(likelihood_data(data, spec, grouped)[1], p, spec, bias_scale, rater_scale, lib)


def likelihood(inputs: LikelihoodData, p: dict, spec: JudgesSpec, bias_scale=None, rater_scale=None, lib=pt):
    """:func:`marginal_loglik` from the :class:`LikelihoodData` (NumPy arrays or graph inputs)."""
    terms = column_terms(inputs.pooled, p, lib) if inputs.pooled is not None else None
    if terms is not None:
        total = pooled_loglik(inputs.pooled, p, lib, terms)
    else:
        total = rated_loglik(inputs, p, spec, lib).sum()
    if inputs.groups is not None:
        total = total + group_loglik(inputs.groups, p, lib=lib)
    if bias_scale is None:
        return total
    n_raters = inputs.n_raters if rater_scale is not None else 0
    g, h, raters = shift_terms(inputs, p, n_raters, rater_scale, lib, terms)
    return total + bias_loglik(g, h, bias_scale, zero_sum_basis(inputs.n_systems), lib, raters)


def shift_terms(inputs: LikelihoodData, p: dict, n_raters: int, rater_scale, lib, terms=None):
    """The biases' :math:`G` and :math:`H` over every response (the ``pooled`` groups, or the
    rated ones' ``block`` and the unrated ones' ``groups``) and, with ``n_raters`` (0: none), the
    raters' terms as :func:`~bayes_raters.judges.biases.bias_loglik` takes them (else None);
    ``terms``: the pooled groups' :func:`~bayes_raters.judges.pooled.column_terms`, where computed."""
    n_systems, groups = inputs.n_systems, inputs.groups
    if inputs.pooled is not None:
        g, h, *rater_terms = pooled_bias_terms(inputs.pooled, p, n_systems, lib, n_raters=n_raters, terms=terms)
    else:
        g, h, *rater_terms = block_bias_terms(inputs.block, p, lib, n_raters=n_raters)
    if groups is not None:
        g_u, h_u = group_bias_terms(groups, p, n_systems, lib)
        g, h = g + g_u, h + h_u
    raters = (*rater_terms, rater_scale, zero_sum_basis(n_raters)) if n_raters else None
    return g, h, raters


#: Upper end of a judge's shared share of its error variance: its own noise keeps a tenth at
#: least (:func:`split_judge_error`).
MAX_SHARED_SHARE = 0.9


def split_judge_error():
    r"""Each judge's own noise :math:`\sigma_j` and shared loading :math:`\lambda_j` from its total
    error SD :math:`e_j \sim` Gamma(2, 2) and the shared share of its error variance
    :math:`\omega_j \sim` Uniform(0, :data:`MAX_SHARED_SHARE`): :math:`\sigma_j = e_j\sqrt{1-\omega_j}`,
    :math:`\lambda_j = e_j\sqrt{\omega_j}`. The data fix :math:`e_j` (the judge's scatter about
    the true score) well and the split only through the judges' covariances; sampled as
    :math:`(\sigma_j, \lambda_j)` the two trade off along the curved ridge
    :math:`\sigma_j^2 + \lambda_j^2 = e_j^2`, which NUTS crossed slowly (``models/judges.md``).

    Both priors keep the judge's own noise off zero, where one judge all but defines a latent (a
    Heywood case) and the conditional precision grows without bound. The Gamma(2, 2) (mean 1,
    density vanishing linearly at zero) closes :math:`e_j \to 0`: under a half-normal NUTS
    followed :math:`\log e_j` down that neck. The cap on :math:`\omega_j` closes
    :math:`\omega_j \to 1`: with :math:`\omega_j \sim` Beta(1, 1), a chain in its first
    warmup draws could leap to where the factor is the best judge's error alone (its own noise
    1e-5, every slope near zero), a point far below the mode that it never left (step size zero,
    every tree of maximal depth; ``models/judges.md``). A judge whose share piles against the cap
    is named (:func:`~bayes_raters.judges.checks.shared_share_at_cap`)."""
    error = pm.Gamma("judge_error", alpha=2.0, beta=2.0, dims="judge")
    share = pm.Uniform("shared_share", 0.0, MAX_SHARED_SHARE, dims="judge")
    return (pm.Deterministic("sigma_judge", error * pt.sqrt(1 - share), dims="judge"),
            pm.Deterministic("loading", error * pt.sqrt(share), dims="judge"))


def integrate_biases(spec: JudgesSpec) -> bool:
    """Whether the model integrates the judges' biases out (normal ratings, where the likelihood
    is Gaussian in them: :mod:`bayes_raters.judges.biases`) or samples them (ordinal ratings)."""
    return not spec.ordinal


#: Most raters whose effects the likelihood integrates out with the biases (one Cholesky factor
#: of judges x (systems - 1) + raters - 1 rows per evaluation); with more, each rater rates few
#: responses and the effects are sampled (non-centred).
MAX_INTEGRATED_RATERS = 30


def integrate_raters(spec: JudgesSpec, data: JudgesData) -> bool:
    """Whether the rater effects are integrated out with the biases: normal ratings, two to
    :data:`MAX_INTEGRATED_RATERS` raters."""
    return integrate_biases(spec) and 1 < len(data.raters) <= MAX_INTEGRATED_RATERS


def build_judges_model(data: JudgesData, spec: JudgesSpec, grouped: bool = True) -> pm.Model:
    """The PyMC model of the module docstring (coords ``system``, ``rater``, ``judge``), not
    sampled; ``grouped``: the unrated responses by sufficient statistics (:func:`marginal_loglik`).

    Priors on the standardised scales: :math:`\\mu_s \\sim N(0, 1.5)`; :math:`\\log \\sigma_s \\sim
    N(\\log \\sigma_0, 0.3^2)` around a typical :math:`\\sigma_0 \\sim` half-normal(1) (partial pooling
    with a fixed strength: no funnel); :math:`\\sigma_H, \\sigma_j \\sim` half-normal(1);
    :math:`\\tau_\\rho \\sim` half-normal(0.5) with zero-sum rater effects (severity relative to
    these raters); :math:`\\alpha_j \\sim N(0, 1)` (the judge's mean score, its slope acting on
    :math:`\\mu_s - \\bar\\mu`, the responses' weighted mean: intercept and system means do not
    trade off); :math:`\\log \\beta_j \\sim N(0, 1)` (a judge's score rises with the true score:
    with either sign allowed the slopes and the systems' order had a mirror mode where human
    ratings are few); :math:`\\tau_j \\sim` half-normal(0.3); with ``shared_error``, :math:`\\sigma_j`
    and :math:`\\lambda_j` from the judge's total error (Gamma(2, 2)) and its
    shared share (:func:`split_judge_error`)."""
    coords = {"system": list(data.system_names), "rater": list(data.raters), "judge": list(data.judge_names)}
    inputs = as_graph_inputs(likelihood_data(data, spec, grouped)[1])
    with pm.Model(coords=coords) as model:
        spread = pm.HalfNormal("sigma_true_typical", 1.0)
        p = {
            "mu": pm.Normal("mu", 0.0, 1.5, dims="system"),
            "sigma_true": pm.Deterministic("sigma_true", pt.exp(pm.Normal("log_sigma_true", pt.log(spread), SPREAD_POOLING, dims="system")),
                                           dims="system"),
            "sigma_human": pm.HalfNormal("sigma_human", 1.0),
            "alpha": pm.Normal("alpha", 0.0, 1.0, dims="judge"),
            "beta": pm.LogNormal("beta", 0.0, 1.0, dims="judge"),
        }
        p["grand_mean"] = pt.sum(inputs.weights * p["mu"])
        tau_rater = pm.HalfNormal("sigma_rater", 0.5)
        if integrate_raters(spec, data):
            p["rater_effect"] = pt.zeros(len(coords["rater"]))
        else:
            rater_z = pm.ZeroSumNormal("rater_z", dims="rater") if len(coords["rater"]) > 1 else pt.zeros(1)
            p["rater_effect"] = pm.Deterministic("rater_effect", tau_rater * rater_z, dims="rater")
        tau_bias = pm.HalfNormal("sigma_bias", 0.3, dims="judge")
        if integrate_biases(spec):
            p["bias"] = pt.zeros((len(coords["judge"]), len(coords["system"])))
        else:
            bias_z = pm.ZeroSumNormal("bias_z", dims=("judge", "system"), n_zerosum_axes=1)
            p["bias"] = pm.Deterministic("bias", tau_bias[:, None] * bias_z, dims=("judge", "system"))
        if spec.shared_error:
            p["sigma_judge"], p["loading"] = split_judge_error()
        else:
            p["sigma_judge"] = pm.HalfNormal("sigma_judge", 1.0, dims="judge")
            p["loading"] = pt.zeros(len(coords["judge"]))
        pm.Potential("marginal_loglik", likelihood(inputs, p, spec, bias_scale=tau_bias if integrate_biases(spec) else None,
                                                   rater_scale=tau_rater if integrate_raters(spec, data) else None))
    model.judges = {"data": data, "spec": spec}
    return model
