r"""The many-facet rater model (Linacre's many-facet Rasch model and its generalised form with
a consistency per rater), the response's ability integrated out by the quadrature engine
(:mod:`bayes_raters.quadrature`).

Rating :math:`X \in \{0, \dots, K - 1\}` (the observed scores in order) of response (examinee)
:math:`i` on prompt :math:`j` by rater :math:`r`, adjacent-category logits

.. math::

    \log \frac{P(X = k)}{P(X = k - 1)} = a_r\,(\theta_i - b_j - \delta_r - \tau_k),
    \qquad k = 1, \dots, K - 1,

so :math:`P(X = k) \propto \exp\big(k\,a_r(\theta_i - b_j - \delta_r) - a_r \sum_{v \le k} \tau_v\big)`.
:math:`\delta_r` is the rater's severity, :math:`b_j` the prompt's difficulty, :math:`\tau_k`
the thresholds of the shared rating scale (Andrich's rating scale model) and :math:`a_r` the
rater's consistency. With ``consistency=False`` every rater has the same :math:`a` and this is
the many-facet Rasch model of FACETS (its :math:`\theta` has SD :math:`a`); with
``consistency=True`` each rater has its own :math:`a_r` (an erratic rater has a small one).

Priors. :math:`\theta_i \sim N(0, 1)`; :math:`\log a_r \sim N(\mu_a, \sigma_a)`,
:math:`\mu_a \sim N(0, 0.5)`, :math:`\sigma_a \sim \text{HalfNormal}(0.5)`,
(:math:`\log a_r = \mu_a` for all without ``consistency``); zero-sum
severities :math:`\delta \sim \text{ZeroSumNormal}(\sigma_\delta)` and difficulties
:math:`b \sim \text{ZeroSumNormal}(\sigma_b)` (the mean rater and the mean prompt fix the origin
with :math:`E\theta = 0`; no :math:`b` with one prompt), :math:`\sigma_\delta, \sigma_b \sim
\text{HalfNormal}(1)`; :math:`\tau_k \sim N(0, 2)` (unordered, as in the rating scale model).
With ``consistency=False`` those priors apply to :math:`a\delta_r`, :math:`a b_j` and :math:`a\tau_k`
(the logit scale, where the data identify them; :func:`facet_priors` says why).

Parametrisation. Raters and prompts are centred (``log_a``, ``severity``, ``difficulty``
sampled directly) unless the centred draws diverge: then :func:`~bayes_raters.facets.fit.fit_facets`
samples the non-centred form too (``centred=False`` here) and keeps the fit with fewer
divergences. In essay scoring each rater gives dozens to hundreds of ratings, where the centred
form mixes better when raters differ (no divergence and about three times the ESS on 600
responses x 10 raters with an erratic one). But with few raters or prompts whose spread is small
(the SBC configuration: 5 raters, 2 prompts, scales drawn from their priors) the centred form is a
funnel and diverges where the non-centred one does not (``models/irt_facets.md`` has the figures).

True score and systems. The true score of response :math:`i` on the score scale is what the
fit's raters give it on average, :math:`T_i(\theta) = \frac{1}{R J_i} \sum_r \sum_{j \in J_i}
E[\text{score} \mid \theta, a_r, b_j, \delta_r]` (:math:`J_i`: the prompts the response was rated
on), the counterpart of the classical true score (the mean over raters). A system's scores, when
given, are measurements of it as in the true-score model:
:math:`M_{is} \sim N(\alpha_s + \beta_s (T_i - c_0), \tau^{sys}_s)` with that model's priors
(:func:`bayes_raters.ctt.model._system_priors`), so the likelihood of a response is
:math:`p(M_i, H_i)` in both models and LOO compares them on the same data.

Likelihood. The log-probability of every category for every (rater, prompt) pair at every
quadrature node is one (pairs, K, nodes) array; a rating picks its row, and the rows of each
response are summed (a scatter-add over ratings), so a gradient costs ratings x nodes; the
response's marginal is :math:`\operatorname{logsumexp}_q(\ell_{iq} + \log w_q)`. Essay designs
rarely repeat a (prompt, rater, score) pattern, so responses are not pooled. Where the shared
rule would be large (responses rated hundreds of times beside others rated once or twice), each
response gets its own few Gauss-Hermite nodes instead (:func:`adaptive_node_loglik`; when and
why in :mod:`bayes_raters.facets.adaptive`).
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pymc as pm
import pytensor
import pytensor.tensor as pt
import scipy.sparse

from bayes_raters.data import validate_long
from bayes_raters.errors import InputWarning, InsufficientDataError, InvalidInputError
from bayes_raters.facets.kernel import FacetsMarginal
from bayes_raters.fit_spec import FitSpec
from bayes_raters.quadrature import QuadratureRule, adaptive_rule, gauss_hermite_rule, logsumexp_np, marginal_loglik, rule_for

#: Newton steps from 0 to each response's conditional mode (adaptive rule), and their cap.


@dataclass(frozen=True)
class FacetsSpec(FitSpec):
    """Options of a many-facet fit: ``consistency`` (a discrimination per rater, True; one for all
    raters, the many-facet Rasch model, False). How it was sampled (the parametrisation kept, the
    quadrature, the warm start) is in the fit's :class:`~bayes_raters.inference_record.InferenceRecord`."""

    consistency: bool = True


NEWTON_STEPS = 4
MAX_NEWTON_STEP = 2.0


def validate_facet_ratings(
    ratings: pd.DataFrame, *, response: str = "response", prompt: str = "prompt", rater: str = "rater",
    score: str = "score",
) -> tuple[pd.DataFrame, list[float]]:
    """A long table, one row per (response, prompt, rater), with whole-number scores on one
    scale. Returns ``(table, scores)``: canonical columns plus ``category`` (0 .. K - 1, the
    observed scores in order) and the list of observed scores. A score inside the observed range
    that nobody gave is collapsed (the categories above it move down) and an
    :class:`InputWarning` says so."""
    table = validate_long(ratings, {"response": response, "prompt": prompt, "rater": rater}, score, "ratings")
    values = table["score"].to_numpy(float)
    if not np.allclose(values, np.round(values)):
        raise InvalidInputError(
            f"ratings: column {score!r} must hold whole-number scores (e.g. 1-6); found "
            f"{sorted(set(values[values != np.round(values)]))[:5]}."
        )
    used = np.unique(values)
    if len(used) < 2:
        raise InvalidInputError(f"ratings: every score is {used[0]:g}: a rating scale needs at least two scores used.")
    if table["rater"].nunique() < 2:
        raise InsufficientDataError("the many-facet model needs at least two raters (severity is relative to the others).")
    if table["response"].nunique() < 10:
        raise InsufficientDataError("the many-facet model needs at least 10 rated responses.")
    gaps = sorted(set(range(int(used[0]), int(used[-1]) + 1)) - set(used.astype(int)))
    if gaps:
        warnings.warn(
            f"ratings: no rating used the score(s) {gaps}; they were collapsed (the categories above move down one). "
            "Rescore the data yourself to choose otherwise.",
            InputWarning,
            stacklevel=2,
        )
    rank = {v: k for k, v in enumerate(used)}
    return table.assign(category=[rank[v] for v in values]), [float(v) for v in used]


@dataclass(frozen=True)
class FacetLayout:
    """Integer codes of the validated ratings: ``unit``, ``prompt``, ``rater`` and ``category``
    per rating; ``unit_prompts`` (units, prompts) the share of each prompt among a unit's prompts
    (the weights of :math:`T_i`); ``score_values`` the score of each category."""

    responses: np.ndarray
    prompts: np.ndarray
    raters: np.ndarray
    score_values: np.ndarray
    unit: np.ndarray
    prompt: np.ndarray
    rater: np.ndarray
    category: np.ndarray
    unit_prompts: np.ndarray

    @property
    def n_categories(self) -> int:
        """How many score categories the ratings use."""
        return len(self.score_values)

    @property
    def score_center(self) -> float:
        """:math:`c_0`, the middle of the observed score range (the systems' calibration centre)."""
        return float(self.score_values[0] + self.score_values[-1]) / 2

    @functools.cached_property
    def pair(self) -> np.ndarray:
        """Each rating's (rater, prompt) pair, rater-major: ``rater * n_prompts + prompt``."""
        return self.rater * len(self.prompts) + self.prompt

    @functools.cached_property
    def cell(self) -> np.ndarray:
        """Row of each rating in the flattened (rater, prompt, category) axis."""
        return self.pair * self.n_categories + self.category

    @functools.cached_property
    def cell_counts(self) -> scipy.sparse.csr_matrix:
        """(units, cells): how many of a unit's ratings fall in each (rater, prompt, category)
        cell, so a unit's log-likelihood at the nodes is this times the flattened category table
        (NumPy; no (ratings, nodes) temporary: ``models/irt_facets.md`` gives the timing)."""
        shape = (len(self.responses), len(self.raters) * len(self.prompts) * self.n_categories)
        return scipy.sparse.csr_matrix((np.ones(len(self.unit)), (self.unit, self.cell)), shape=shape)

    @functools.cached_property
    def unit_rows(self) -> scipy.sparse.csr_matrix:
        """Which ratings are each unit's, as a 0/1 matrix of shape (units, ratings), built once
        (NumPy's sum over a unit's ratings is this times the rows)."""
        n = len(self.unit)
        return scipy.sparse.csr_matrix((np.ones(n), (self.unit, np.arange(n))), shape=(len(self.responses), n))

    @functools.cached_property
    def prompt_units(self) -> list[np.ndarray]:
        """Per prompt, the units that have it (positive weight in ``unit_prompts``)."""
        return [np.nonzero(self.unit_prompts[:, j])[0] for j in range(len(self.prompts))]


def facet_layout(table: pd.DataFrame, scores: list[float]) -> FacetLayout:
    """Codes of :class:`FacetLayout` in order of first appearance."""
    responses, prompts, raters = (pd.unique(table[c]) for c in ("response", "prompt", "rater"))
    unit = pd.Index(responses).get_indexer(table["response"])
    prompt = pd.Index(prompts).get_indexer(table["prompt"])
    seen = np.zeros((len(responses), len(prompts)))
    seen[unit, prompt] = 1.0
    return FacetLayout(
        responses, prompts, raters, np.asarray(scores, float), unit, prompt,
        pd.Index(raters).get_indexer(table["rater"]), table["category"].to_numpy(int), seen / seen.sum(axis=1, keepdims=True),
    )


def adjacent_logp(eta, a, thresholds, lib=pt):
    r""":math:`\log P(X = k)`, k = 0 .. K - 1 on a new last axis, of the module's
    adjacent-category model from :math:`\eta = a_r(\theta - b_j - \delta_r)` and :math:`a_r`
    (broadcasting with ``eta``): :math:`k\eta - a_r \sum_{v \le k} \tau_v`, normalised over k.
    The one place the model's category probabilities are written; NumPy (``lib=np``) or
    PyTensor."""
    steps = lib.concatenate([lib.zeros(1), lib.cumsum(thresholds)])  # sum_{v <= k} tau_v
    k = np.arange(steps.shape[0]) if lib is np else pt.cumsum(pt.ones_like(steps)) - 1.0  # no arange: JAX needs its length constant
    logits = k * eta[..., None] - a[..., None] * steps
    if lib is np:
        return logits - logsumexp_np(logits, axis=-1, keepdims=True)
    return logits - pt.logsumexp(logits, axis=-1, keepdims=True)


def category_table(a, location, thresholds, theta, lib=pt):
    r""":math:`\log P(X = k \mid \theta)` for every rater and prompt (raters, prompts, K,
    len(theta)): ``a`` (raters,), ``location`` (raters, prompts) = :math:`b_j + \delta_r`,
    ``thresholds`` (K - 1,). NumPy (``lib=np``) or PyTensor."""
    eta = a[:, None, None] * (theta[None, None, :] - location[:, :, None])  # (R, J, Q)
    return adjacent_logp(eta, a[:, None, None], thresholds, lib).transpose(0, 1, 3, 2)


def true_score_curve(log_p, score_values, unit_prompts, lib=pt):
    """:math:`T_i` at every node (units, nodes): expected score of each (rater, prompt), mean
    over raters, then the unit's mean over its prompts."""
    expected = (lib.exp(log_p) * score_values[None, None, :, None]).sum(axis=2)  # (R, J, Q)
    return lib.dot(unit_prompts, expected.mean(axis=0))


def unit_sum(rows, layout: FacetLayout, lib=pt):
    """(units, nodes): the rows (ratings, nodes) summed over each unit's ratings (NumPy: one
    sparse product, faster than ``np.add.at``: ``models/irt_facets.md``)."""
    if lib is np:
        return layout.unit_rows @ rows
    return pt.inc_subtensor(pt.zeros((layout.unit_prompts.shape[0], rows.shape[1]))[layout.unit], rows)


def rating_node_loglik(log_p, layout: FacetLayout, n_nodes: int, lib=pt):
    """Each unit's log-likelihood of its ratings at every node (units, nodes): the rating's row
    of the flattened table, summed over the unit's ratings."""
    if lib is np:
        return layout.cell_counts @ log_p.reshape((-1, n_nodes))
    return unit_sum(log_p.reshape((-1, n_nodes))[layout.cell], layout, lib)  # rows: (ratings, Q)


def unit_total(values, layout: FacetLayout, lib=pt):
    """(units,): a per-rating vector summed over each unit's ratings."""
    if lib is np:
        return np.bincount(layout.unit, values, minlength=len(layout.responses))
    return pt.inc_subtensor(pt.zeros(layout.unit_prompts.shape[0])[layout.unit], values)


def newton_centres(a, location, thresholds, layout: FacetLayout, lib=pt, systems=None, steps: int = NEWTON_STEPS):
    r"""Each unit's conditional mode of the ability and the SD of its Laplace approximation,
    ``(m, s)`` (units,), at the given parameters: Newton steps from 0 on
    :math:`\ell_i(z) - z^2/2` (the unit's ratings, its system scores and the N(0, 1) prior),
    each step capped at :data:`MAX_NEWTON_STEP`. Ratings: :math:`\ell'(z) = \sum_n a_{r_n}(x_n -
    E[X_n \mid z])`, :math:`-\ell''(z) = \sum_n a_{r_n}^2 \operatorname{Var}[X_n \mid z]` (the
    adjacent-category model is an exponential family in :math:`z`). ``systems`` =
    ``(values, mask, alpha, beta, tau)``: each score :math:`M_{is} \sim N(\alpha_s + \beta_s(T_i(z) -
    c_0), \tau_s)` adds :math:`\beta_s r_{is} T_i'(z) / \tau_s^2` to the slope (:math:`r`: the
    residual) and :math:`\beta_s^2 T_i'(z)^2 / \tau_s^2` to the curvature (Gauss-Newton), with
    :math:`T_i'(z)` the raters' mean of :math:`a_r \operatorname{Cov}(\text{score}, X)`. Costs
    ratings x K per step (and raters x prompts x units x K with systems), against ratings x Q x K
    for the likelihood on the nodes."""
    r, x = layout.rater, layout.category
    a_r, shift = a[r], location[r, layout.prompt]
    k = np.arange(layout.n_categories)
    z = np.zeros(len(layout.responses)) if lib is np else pt.zeros(layout.unit_prompts.shape[0])
    for _ in range(steps):
        p = lib.exp(adjacent_logp(a_r * (z[layout.unit] - shift), a_r, thresholds, lib))  # (ratings, K)
        mean = p @ k
        slope = unit_total(a_r * (x - mean), layout, lib) - z
        curvature = unit_total(a_r**2 * (p @ (k * k) - mean**2), layout, lib) + 1.0
        if systems is not None:
            extra_slope, extra_curvature = _system_newton_terms(a, location, thresholds, z, layout, systems, lib)
            slope, curvature = slope + extra_slope, curvature + extra_curvature
        z = z + lib.clip(slope / curvature, -MAX_NEWTON_STEP, MAX_NEWTON_STEP)
    return z, 1.0 / lib.sqrt(curvature)


def _system_newton_terms(a, location, thresholds, z, layout: FacetLayout, systems, lib):
    """Slope and Gauss-Newton curvature (units,) of the system scores' log-likelihood in z."""
    values, mask, alpha, beta, sd = systems
    k = np.arange(layout.n_categories)
    eta = a[:, None, None] * (z[None, None, :] - location[:, :, None])  # (R, J, U)
    p = lib.exp(adjacent_logp(eta, a[:, None, None], thresholds, lib))  # (R, J, U, K)
    expected = p @ layout.score_values
    derivative = a[:, None, None] * (p @ (layout.score_values * k) - expected * (p @ k))
    true, slope_t = ((layout.unit_prompts * v.mean(axis=0).T).sum(axis=1) for v in (expected, derivative))  # (U,)
    residual = values - alpha[None, :] - beta[None, :] * (true[:, None] - layout.score_center)
    weight = mask * beta[None, :] / sd[None, :] ** 2
    return (weight * residual).sum(axis=1) * slope_t, (weight * beta[None, :]).sum(axis=1) * slope_t**2


def adaptive_node_loglik(a, location, thresholds, z_units, layout: FacetLayout, lib=pt):
    r"""Each unit's log-likelihood of its ratings at its own nodes ``z_units`` (units, Q): the
    adaptive rule's counterpart of :func:`rating_node_loglik`. Per rating at its unit's nodes,
    :math:`\log P(X = x) = x\eta - a_r \sum_{v \le x} \tau_v - \log \sum_k e^{k\eta - a_r
    \sum_{v \le k}\tau_v}` with :math:`\eta = a_r(z - b_j - \delta_r)`: ratings x Q x K terms."""
    r, j, category = layout.rater, layout.prompt, layout.category
    a_r = a[r][:, None]
    eta = a_r * (z_units[layout.unit] - location[r, j][:, None])  # (ratings, Q)
    steps = lib.concatenate([lib.zeros(1), lib.cumsum(thresholds)])
    logits = np.arange(layout.n_categories) * eta[..., None] - a_r[..., None] * steps  # (ratings, Q, K)
    norm = logsumexp_np(logits, axis=-1) if lib is np else pt.logsumexp(logits, axis=-1)
    return unit_sum(category[:, None] * eta - a_r * steps[category][:, None] - norm, layout, lib)


def adaptive_true_score(a, location, thresholds, z_units, layout: FacetLayout, lib=pt):
    """:math:`T_i` at each unit's own nodes (units, Q): :func:`true_score_curve` for an adaptive rule."""
    eta = a[:, None, None, None] * (z_units[None, None] - location[:, :, None, None])  # (R, J, U, Q)
    p = lib.exp(adjacent_logp(eta, a[:, None, None, None], thresholds, lib))
    expected = (p * layout.score_values).sum(axis=-1).mean(axis=0)  # (J, U, Q)
    return (layout.unit_prompts.T[:, :, None] * expected).sum(axis=0)


def symbolic_layout(layout: FacetLayout) -> FacetLayout:
    """The layout the PyTensor graph reads: the ratings' codes (``unit``, ``prompt``, ``rater``,
    ``category``, ``pair``, ``cell``) and ``unit_prompts`` as shared variables, not constants.

    Why: constants are part of the compiled log density's Numba cache key, so every new data set
    (a user's first fit, every SBC simulation) compiled it afresh, seconds where a cached one
    takes a tenth of a second (``models/irt_facets.md``). As shared variables they are inputs, and
    the cache holds across data sets of the same facets and scale."""
    shared = {name: pytensor.shared(np.asarray(getattr(layout, name)), name=f"facets_{name}")
              for name in ("unit", "prompt", "rater", "category", "unit_prompts")}
    graph = dataclasses.replace(layout, **shared)
    for name in ("pair", "cell"):  # cached properties: the shared codes, not symbolic arithmetic on them
        graph.__dict__[name] = pytensor.shared(np.asarray(getattr(layout, name)), name=f"facets_{name}")
    return graph


def facet_rule(layout: FacetLayout) -> QuadratureRule:
    """The trapezoid rule for the most-rated unit: a rating on K categories counts as K - 1
    binary answers."""
    most = int(np.bincount(layout.unit).max())
    return rule_for(most * (layout.n_categories - 1))


def system_arrays(systems: pd.DataFrame | None, layout: FacetLayout):
    """System scores as (units, systems) values and a 0/1 mask (responses a system did not
    score have no term), and the system ids; None without systems."""
    if systems is None:
        return None
    ids = list(pd.unique(systems["system"]))
    unit = pd.Index(layout.responses).get_indexer(systems["response"])
    if (unit < 0).any():
        missing = pd.unique(systems.loc[unit < 0, "response"])[:5].tolist()
        raise InvalidInputError(f"system scores: responses {missing} have no rating; drop them or add their ratings.")
    values, mask = np.zeros((len(layout.responses), len(ids))), np.zeros((len(layout.responses), len(ids)))
    column = pd.Index(ids).get_indexer(systems["system"])
    values[unit, column], mask[unit, column] = systems["score"].to_numpy(float), 1.0
    return values, mask, ids


def facet_priors(layout: FacetLayout, consistency: bool, centred: bool = True):
    r"""The module's priors: returns ``(a, location, thresholds)`` as tensors (ability units).

    With ``consistency=False`` the severities, difficulties and thresholds are sampled on the
    logit scale (``severity_logit`` etc., the priors of the module docstring there) and divided by
    the common :math:`a` (Deterministics ``severity``, ``difficulty``, ``thresholds``): the data
    pin down :math:`a\delta_r`, so in ability units :math:`a` and the severities' SD trade off
    along a ridge, which mixes poorly (``models/irt_facets.md``: InstEval).

    ``centred=False``: the same priors with every hierarchical group non-centred,
    :math:`\log a_r = \mu_a + \sigma_a z_r` (``log_a_z``), :math:`\delta = \sigma_\delta
    \tilde\delta` and :math:`b = \sigma_b \tilde b` with :math:`\tilde\delta, \tilde b \sim`
    ZeroSumNormal(1) (``severity_z``, ``difficulty_z``); :func:`bayes_raters.facets.fit.fit_facets`
    says when it is used."""
    mu_a = pm.Normal("mu_log_a", 0.0, 0.5)
    if consistency:
        sigma_a = pm.HalfNormal("sigma_log_a", 0.5)
        if centred:
            log_a = pm.Normal("log_a", mu_a, sigma_a, dims="rater")
        else:
            log_a = pm.Deterministic("log_a", mu_a + sigma_a * pm.Normal("log_a_z", 0.0, 1.0, dims="rater"), dims="rater")
        a = pm.Deterministic("a", pt.exp(log_a), dims="rater")
        scale, suffix = 1.0, ""
    else:
        a = pm.Deterministic("a", pt.exp(mu_a) * pt.ones(len(layout.raters)), dims="rater")
        scale, suffix = pt.exp(mu_a), "_logit"

    def in_ability_units(name, value, dims):
        return value if not suffix else pm.Deterministic(name, value / scale, dims=dims)

    def zero_sum(name, sigma_name, dims):
        sigma = pm.HalfNormal(sigma_name, 1.0)
        if centred:
            return pm.ZeroSumNormal(name, sigma=sigma, dims=dims)
        return pm.Deterministic(name, sigma * pm.ZeroSumNormal(f"{name}_z", sigma=1.0, dims=dims), dims=dims)

    severity = in_ability_units("severity", zero_sum("severity" + suffix, "sigma_severity", "rater"), "rater")
    if len(layout.prompts) > 1:
        difficulty = in_ability_units("difficulty", zero_sum("difficulty" + suffix, "sigma_difficulty", "prompt"), "prompt")
    else:
        difficulty = pm.Deterministic("difficulty", pt.zeros(1), dims="prompt")
    thresholds = in_ability_units("thresholds", pm.Normal("thresholds" + suffix, 0.0, 2.0, dims="threshold"), "threshold")
    return a, severity[:, None] + difficulty[None, :], thresholds


def system_priors(layout: FacetLayout):
    """alpha, beta, tau of each system, as in the true-score model, scaled to the score range."""
    width = layout.score_values[-1] - layout.score_values[0]
    alpha = pm.Normal("alpha", layout.score_center, width / 2, dims="system")
    beta = pm.Normal("beta", 1.0, 1.0, dims="system")
    tau = pm.Gamma("tau", alpha=2.0, beta=2.0 / (width / 8), dims="system")
    return alpha, beta, tau


def system_node_loglik(true_nodes, values, mask, alpha, beta, tau, center, lib=pt):
    """:math:`\\sum_s \\log N(M_{is}; \\alpha_s + \\beta_s (T_i(z_q) - c_0), \\tau_s)` (units, nodes)."""
    mean = alpha[None, :, None] + beta[None, :, None] * (true_nodes[:, None, :] - center)
    resid = (values[:, :, None] - mean) / tau[None, :, None]
    log_n = -0.5 * resid**2 - lib.log(tau)[None, :, None] - 0.5 * np.log(2 * np.pi)
    return (log_n * mask[:, :, None]).sum(axis=1)


def build_facets_model(
    ratings: pd.DataFrame, system_scores: pd.DataFrame | None = None, *, consistency: bool = True,
    response: str = "response", prompt: str = "prompt", rater: str = "rater", score: str = "score",
    system: str = "system", rule: QuadratureRule | None = None, adaptive: int | None = None, centred: bool = True,
    fused: bool = True,
) -> pm.Model:
    """The marginal many-facet model (no theta variable), returned without sampling.

    Coords ``rater``, ``prompt``, ``threshold``, ``response``, ``node`` (and ``system``); the
    likelihood is the Potential ``marginal_loglik``. The abilities are integrated on the shared
    trapezoid ``rule`` (default :func:`facet_rule`) or, with ``adaptive=n_nodes``, on each
    response's own ``n_nodes`` Gauss-Hermite nodes :math:`z_{iq} = m_i + s_i x_q` centred at its
    conditional mode at the current parameters (:func:`newton_centres`,
    :func:`bayes_raters.quadrature.adaptive_rule`; :mod:`bayes_raters.facets.adaptive` says
    when). ``centred=False``: the hierarchical groups non-centred (:func:`facet_priors`).
    ``fused=True`` (default): on the shared rule, the likelihood and its gradient are one compiled
    Op (:class:`bayes_raters.facets.kernel.FacetsMarginal`, Numba and Python backends only);
    ``fused=False`` writes it as a PyTensor graph (:func:`_graph_marginal`, any backend, JAX
    included; same value to 1e-12). The layout, scores, systems, shared rule
    (the theta draws use it) and ``adaptive`` are in ``model.facets`` for the fit and the tables.

    Parameters
    ----------
    ratings : pandas.DataFrame
        Long ratings, one row per (response, prompt, rater).
    system_scores : pandas.DataFrame, optional
        Long system scores; with them the model holds each system's calibration to the ability.
    consistency : bool
        Each rater's own slope (consistency); False gives the many-facet Rasch model.
    response, prompt, rater, score, system : str
        Column names in the two tables.
    rule : QuadratureRule, optional
        The shared quadrature rule; default :func:`facet_rule`.
    adaptive : int, optional
        Number of Gauss-Hermite nodes per response of the adaptive rule.
    centred : bool
        The hierarchical groups centred (True) or non-centred.
    fused : bool
        The likelihood and its gradient as one compiled Op (see above).

    Returns
    -------
    pymc.Model
        The model, not yet sampled.

    Examples
    --------
    >>> from bayes_raters.facets import build_facets_model, simulate_facet_ratings
    >>> ratings, scores, _ = simulate_facet_ratings(60, 4, 2, 4, random_seed=1)
    >>> model = build_facets_model(ratings, scores)
    >>> model.named_vars_to_dims["severity"]
    ('rater',)
    """
    table, scores = validate_facet_ratings(ratings, response=response, prompt=prompt, rater=rater, score=score)
    systems = None
    if system_scores is not None:
        systems = validate_long(system_scores, {"response": response, "system": system}, score, "system scores")
    layout = facet_layout(table, scores)
    rule = rule or facet_rule(layout)
    arrays = system_arrays(systems, layout)
    coords = {
        "rater": layout.raters, "prompt": layout.prompts, "response": layout.responses,
        "node": rule.nodes if adaptive is None else np.arange(adaptive),
        "threshold": [f"{scores[k - 1]:g}|{scores[k]:g}" for k in range(1, len(scores))],
    }
    if arrays is not None:
        coords["system"] = arrays[2]
    graph = symbolic_layout(layout)
    if arrays is not None:
        values, mask = (pytensor.shared(x, name=f"system_{n}") for x, n in zip(arrays[:2], ("values", "mask")))
    with pm.Model(coords=coords) as model:
        a, location, thresholds = facet_priors(layout, consistency, centred)
        system = None if arrays is None else system_priors(layout)
        systems_args = None if system is None else (values, mask, *system)
        if adaptive is None:
            nodes = pm.Data("quadrature_nodes", rule.nodes, dims="node")
            log_weights = pytensor.shared(rule.log_weights, name="quadrature_log_weights")
            if fused:
                no_system = (np.zeros((len(layout.responses), 0)),) * 2 + (np.zeros(0),) * 3
                total = FacetsMarginal(layout.score_center)(
                    a, location, thresholds, nodes, log_weights, graph.unit, graph.pair, graph.category, graph.unit_prompts,
                    layout.score_values, *(systems_args or no_system))[0]
            else:
                total = _graph_marginal(a, location, thresholds, nodes, log_weights, graph, layout, systems_args)
        else:
            center, scale = newton_centres(a, location, thresholds, graph, systems=systems_args)
            nodes, log_weights = adaptive_rule(center, scale, gauss_hermite_rule(adaptive))
            total = _graph_marginal(a, location, thresholds, nodes, log_weights, graph, layout, systems_args, adaptive=True)
        pm.Potential("marginal_loglik", total)
    model.facets = {"layout": layout, "table": table, "scores": scores, "systems": systems, "arrays": arrays,
                    "rule": rule, "consistency": consistency, "adaptive": adaptive, "centred": centred}
    return model


def _graph_marginal(a, location, thresholds, nodes, log_weights, graph: FacetLayout, layout: FacetLayout, systems=None,
                    adaptive: bool = False):
    """The total marginal log-likelihood as a PyTensor graph (the reference the fused kernel is
    tested against, the adaptive rule's form and JAX samplers' form): ratings on the shared
    ``nodes`` (Q,) or, ``adaptive``, each unit's own (units, Q), plus the system scores
    ``systems = (values, mask, alpha, beta, tau)`` when given."""
    if adaptive:
        node_ll = adaptive_node_loglik(a, location, thresholds, nodes, graph)
    else:
        log_p = category_table(a, location, thresholds, nodes)
        node_ll = rating_node_loglik(log_p, graph, nodes.shape[0])
    if systems is not None:
        values, mask, alpha, beta, tau = systems
        if adaptive:
            true_nodes = adaptive_true_score(a, location, thresholds, nodes, graph)
        else:
            true_nodes = true_score_curve(log_p, layout.score_values, graph.unit_prompts)
        node_ll = node_ll + system_node_loglik(true_nodes, values, mask, alpha, beta, tau, layout.score_center)
    return marginal_loglik(node_ll, log_weights).sum()
