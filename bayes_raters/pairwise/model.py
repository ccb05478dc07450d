"""Bayesian beta-latent model for pairwise outcomes, scalar judgements and preference
strengths: the full-posterior counterpart of EASL and bounded RA.

Each item has a latent value s_i in (0, 1), s_i ~ Beta(a0, b0); with ``systems``, items
scatter around their system's value m_g ~ Beta(a0, b0) on the logit scale,
logit s_i = logit m_g + tau z_i, z_i ~ N(0, 1), tau ~ HalfNormal(1) (non-centred: a
Beta(m kappa, (1 - m) kappa) layer gave divergences in the funnel of small kappa).
Annotator k has a consistency c_k = exp(sigma_c z_k) and a bias u_k = sigma_u z'_k
(hierarchical, non-centred; absent without an ``annotator`` column; the bias only acts on
scalar judgements, so it exists only when there are some). Sliders cannot tell the panel's
mean offset from the items' level, so with biases the sampler works on
x_i = logit s_i + delta (delta the panel's mean bias; with systems, logit m_g + delta) and
zero-sum deviations from delta: the same model, written so that the weakly identified
delta is nearly orthogonal to the data.
Three likelihoods, any mix:

* pairwise outcome of (i, j) (Rao-Kupper, Sakaguchi & Van Durme Eqs. 20-22): with
  pi = exp(lambda c_k s), theta = exp(epsilon),
  P(i > j) = pi_i / (pi_i + theta pi_j), P(j > i) = pi_j / (theta pi_i + pi_j),
  P(tie) = the rest; or (``link="probit"``, Thurstone with a tie band)
  P(i > j) = Phi(d - epsilon), P(tie) = Phi(epsilon - d) - Phi(-epsilon - d),
  d = lambda c_k (s_i - s_j). Without a tie band (``ties=False``, or no tie in the data)
  epsilon = 0: Bradley-Terry (probit: Thurstone case V). Comparisons of the same pair by the
  same annotator are pooled into multinomial counts (:mod:`bayes_raters.pairwise.likelihood`).
* scalar y in [0, 1] (DA / EASL sliders): y ~ Beta with mean
  invlogit(logit(s_i) + u_k) and concentration phi c_k, censored at the slider ends
  [r, 1 - r] (r = ``slider_resolution``), so values at exactly 0 or 1 count as
  "at most r" / "at least 1 - r" instead of being dropped or giving infinite density.
* preference strength x in [-X, X] (Belz & Kow's PJE slider, positive = item_a better):
  x / X ~ Normal(g (s_a - s_b), sigma_x / c_k), censored at -1 and 1; g is estimated
  when scalars are present and fixed at 1 otherwise (strengths alone identify only
  g (s_a - s_b), so g = 1 puts s differences in units of the slider's half-range).

Priors: lambda ~ LogNormal(log 5, 1), epsilon ~ HalfNormal(1), phi ~ Gamma(2, 0.1),
g ~ LogNormal(0, 0.5), sigma_x ~ HalfNormal(0.5), sigma_c, sigma_u ~ HalfNormal(0.3).
Model card: ``models/pairwise_beta_latent.md``.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
from scipy import special
from scipy.sparse import coo_array
from scipy.sparse.csgraph import connected_components

from bayes_raters.data import id_column, numeric_scores, quote_rows, require_frame
from bayes_raters.errors import InputWarning, InsufficientDataError, InvalidInputError
from bayes_raters.fit_spec import FitSpec
from bayes_raters.pairwise.abilities import LAMBDA_PRIOR, PARAMETRISATIONS, abilities_from_differences, panel_consistency, panel_split, uses_differences
from bayes_raters.pairwise.hits import expand_counts, outcome_labels, pair_ids, reject_count_column, unit_values
from bayes_raters.pairwise.likelihood import OUTCOME_INDEX, OUTCOME_KINDS, outcome_likelihood, pool_comparisons, resolve_ties
from bayes_raters.pairwise.separation import likelihood_bounds_every_item

LINKS = ("rao-kupper", "probit")


@dataclass(frozen=True)
class PairwiseSpec(FitSpec):
    """Options of a beta-latent fit, as :func:`build_pairwise_model` takes them: the ``link``,
    the Beta ``prior`` of s, ``annotator_effects``, ``slider_resolution``, ``ties`` and the
    ``parametrisation`` (None and ``"auto"``: decided from the data when the model is built)."""

    link: str = "rao-kupper"
    prior: tuple[float, float] = (1.0, 1.0)
    annotator_effects: bool | None = None
    slider_resolution: float = 0.01
    ties: bool | None = None
    parametrisation: str = "auto"

    def builder_options(self) -> dict:
        """The keywords of :func:`build_pairwise_model` (every field)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


@dataclass(frozen=True)
class PairwiseData:
    """Validated judgements with integer item / annotator positions."""

    items: pd.Index
    annotators: pd.Index
    comparisons: pd.DataFrame  # a, b, outcome (0 loss, 1 tie, 2 win), annotator
    scalars: pd.DataFrame  # item, value, annotator
    strengths: pd.DataFrame  # a, b, value (scaled to [-1, 1]), annotator
    systems: pd.Series | None  # item -> system
    strength_max: float
    groups: pd.Series | None = None  # item -> unlinked group (only when the design has several)


def _annotator_column(table: pd.DataFrame, annotator: str | None, what: str) -> pd.Series:
    if annotator is None or annotator not in table.columns:
        return pd.Series(["(all)"] * len(table), index=table.index)
    return id_column(table, annotator, what).astype(str)


def _require_rows(table: pd.DataFrame, what: str) -> None:
    if table.empty:
        raise InvalidInputError(f"{what}: the table has no rows.")


def _check_comparisons(table: pd.DataFrame, annotator: str | None, count: str | None = None) -> pd.DataFrame:
    what = "comparisons"
    if count is not None:
        table = expand_counts(require_frame(table, what), count, what)
    first, second = pair_ids(table, "outcome", what)
    if count is None:
        reject_count_column(table, what, "Pass count={column!r} to use it as the number of judgements, or drop the column.")
    _require_rows(table, what)
    outcome = outcome_labels(table, what).map(OUTCOME_INDEX).to_numpy(np.int64)
    return pd.DataFrame(
        {"item_a": first.to_numpy(), "item_b": second.to_numpy(), "outcome": outcome,
         "annotator": _annotator_column(table, annotator, what).to_numpy()}
    )


def _check_scalars(table: pd.DataFrame, annotator: str | None) -> pd.DataFrame:
    what = "scalar judgements"
    value = unit_values(table, what)
    _require_rows(table, what)
    return pd.DataFrame(
        {"item": id_column(table, "item", what).to_numpy(), "value": value, "annotator": _annotator_column(table, annotator, what).to_numpy()}
    )


def _check_strengths(table: pd.DataFrame, annotator: str | None, strength_max: float) -> pd.DataFrame:
    what = "preference strengths"
    first, second = pair_ids(table, "strength", what)
    _require_rows(table, what)
    if not strength_max > 0:
        raise InvalidInputError(f"strength_max must be > 0, got {strength_max}.")
    value = numeric_scores(table, "strength", what).to_numpy()
    outside = np.abs(value) > strength_max
    if outside.any():
        raise InvalidInputError(
            f"{what}: {outside.sum()} strength(s) lie outside [-{strength_max}, {strength_max}], e.g. "
            f"{quote_rows(table, outside)}. Pass the slider's range as strength_max."
        )
    return pd.DataFrame(
        {"item_a": first.to_numpy(), "item_b": second.to_numpy(), "value": value / strength_max,
         "annotator": _annotator_column(table, annotator, what).to_numpy()}
    )


def comparison_components(items: pd.Index, pairs: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Connected-component label of every item in the graph of compared pairs (``pairs``: arrays
    of the two items' positions in ``items``): the one connectivity check of pairwise comparisons
    and arena votes, whose values are identified only within a component."""
    a = np.concatenate([p[0] for p in pairs]) if pairs else np.array([], dtype=int)
    b = np.concatenate([p[1] for p in pairs]) if pairs else np.array([], dtype=int)
    graph = coo_array((np.ones(len(a)), (a, b)), shape=(len(items), len(items)))
    return connected_components(graph, directed=False)[1]


def check_connected(data: PairwiseData, allow_disconnected: bool = False) -> pd.Series | None:
    """A comparison graph in several pieces leaves their relative position to the prior:
    an error unless every piece has an item anchored by a scalar judgement (or
    ``allow_disconnected``, which warns instead). The message names the pieces. Returns the
    group of every item (numbered from 0 in order of first appearance) when there are several
    groups, else None."""
    edges = [
        (data.items.get_indexer(t["item_a"]), data.items.get_indexer(t["item_b"]))
        for t in (data.comparisons, data.strengths)
        if len(t)
    ]
    labels = comparison_components(data.items, edges)
    if len(set(labels)) == 1:
        return None
    anchored = np.zeros(len(data.items), dtype=bool)
    anchored[data.items.get_indexer(data.scalars["item"])] = True
    groups = pd.Series(data.items.to_numpy()).groupby(labels)
    floating = [group.tolist() for label, group in groups if not anchored[labels == label].any()]
    numbered = pd.Series(pd.factorize(labels)[0], index=data.items, name="group")
    if not floating:
        return numbered
    shown = "; ".join(f"{len(g)} item(s) {g[:4]}{' ...' if len(g) > 4 else ''}" for g in floating[:5])
    message = (
        f"the comparisons form {len(set(labels))} disconnected groups and {len(floating)} of them "
        f"have no scalar judgement to anchor them: {shown}."
    )
    if not allow_disconnected:
        raise InsufficientDataError(
            f"{message} Compare items across groups, add scalar judgements, or pass "
            "allow_disconnected=True to let the prior place them."
        )
    warnings.warn(
        f"{message} Values and ranks across these groups rest on the prior alone; the result's "
        "item_table() has a 'group' column: compare items within a group.",
        InputWarning,
        stacklevel=4,
    )
    return numbered


def prepare_data(
    comparisons: pd.DataFrame | None = None,
    scalars: pd.DataFrame | None = None,
    strengths: pd.DataFrame | None = None,
    *,
    annotator: str | None = "annotator",
    systems: pd.Series | dict | None = None,
    strength_max: float = 1.0,
    items=None,
    allow_disconnected: bool = False,
    count: str | None = None,
) -> PairwiseData:
    """Validate every input, build the item and annotator coordinates (order of first
    appearance, or ``items``), and check that the design identifies the latent values.
    ``count`` names a column of ``comparisons`` holding how many identical judgements each
    row stands for (aggregated data); the rows are repeated accordingly."""
    if comparisons is None and scalars is None and strengths is None:
        raise InvalidInputError("give at least one of comparisons, scalars or strengths.")
    comp = _check_comparisons(comparisons, annotator, count) if comparisons is not None else pd.DataFrame(columns=["item_a", "item_b", "outcome", "annotator"])
    scal = _check_scalars(scalars, annotator) if scalars is not None else pd.DataFrame(columns=["item", "value", "annotator"])
    stre = _check_strengths(strengths, annotator, strength_max) if strengths is not None else pd.DataFrame(columns=["item_a", "item_b", "value", "annotator"])
    seen = pd.unique(np.concatenate([comp["item_a"], comp["item_b"], scal["item"], stre["item_a"], stre["item_b"]]).astype(object))
    if items is None:
        item_index = pd.Index(seen, name="item")
    else:
        item_index = pd.Index(list(items), name="item")
        unknown = set(seen) - set(item_index)
        if unknown:
            raise InvalidInputError(f"judgements name items not in items=: {sorted(map(str, unknown))[:5]}.")
        unjudged = item_index.difference(pd.Index(seen))
        if len(unjudged):
            raise InsufficientDataError(
                f"{len(unjudged)} item(s) were never judged, e.g. {unjudged[:5].tolist()}: nothing identifies "
                "their value. Judge them or leave them out of items=."
            )
    annotators = pd.Index(pd.unique(np.concatenate([comp["annotator"], scal["annotator"], stre["annotator"]]).astype(object)), name="annotator")
    system_series = None
    if systems is not None:
        system_series = pd.Series(systems) if isinstance(systems, dict) else systems
        missing = item_index.difference(system_series.index)
        if len(missing):
            raise InvalidInputError(f"systems= has no system for {len(missing)} item(s), e.g. {missing[:5].tolist()}.")
        system_series = system_series.reindex(item_index).astype(str).rename("system")
    data = PairwiseData(item_index, annotators, comp, scal, stre, system_series, float(strength_max))
    return dataclasses.replace(data, groups=check_connected(data, allow_disconnected))


def _censored_beta_logp(value, alpha, beta, low, high):
    r"""Beta(alpha, beta) censored to [low, high]: :math:`\log F(low)` at ``low``,
    :math:`\log F'(1 - high)` at ``high`` with :math:`F'` the cdf of Beta(beta, alpha) (the
    mirrored variable 1 - y), the Beta log-density inside.

    Not ``pm.Censored``: it takes the upper tail as log(1 - F(high)), which is -inf as soon as
    F(high) rounds to 1 (a slider at 1 for an item whose mean is low, e.g. at a jittered start),
    while the mirrored lower tail stays finite down to 1e-308.
    """
    lower = pm.logcdf(pm.Beta.dist(alpha, beta), low)
    upper = pm.logcdf(pm.Beta.dist(beta, alpha), 1 - high)
    inside = pm.logp(pm.Beta.dist(alpha, beta), pt.clip(value, low, high))
    return pt.switch(value <= low, lower, pt.switch(value >= high, upper, inside))


def _censored_beta_random(alpha, beta, low, high, rng=None, size=None):
    """Slider values for predictive draws: Beta draws clipped to [low, high]."""
    return np.clip(rng.beta(alpha, beta, size=size), low, high)


def _logit_beta_logp(value, shift, a, b):
    r"""Log-density of :math:`x = \operatorname{logit}(s) + shift` with :math:`s \sim
    \mathrm{Beta}(a, b)`: with :math:`y = x - shift`,
    :math:`a \log\sigma(y) + b \log\sigma(-y) - \log B(a, b)`."""
    y = value - shift
    return -a * pt.softplus(-y) - b * pt.softplus(y) - (pt.gammaln(a) + pt.gammaln(b) - pt.gammaln(a + b))


def _logit_beta_random(shift, a, b, rng=None, size=None):
    return special.logit(rng.beta(a, b, size=size)) + shift


def _logit_beta_support_point(rv, size, shift, a, b):
    return pt.full(size, shift + pt.log(a / b))


def _panel_bias(n_annotators: int):
    r"""Annotator biases :math:`u_k = \sigma_u z_k`, :math:`z_k \sim N(0, 1)` iid, written as
    the panel's mean offset :math:`\delta = \sigma_u \bar z`, :math:`\bar z \sim N(0, 1/K)`,
    plus zero-sum deviations :math:`\sigma_u (z - \bar z) \sim \sigma_u\,
    \mathrm{ZeroSumNormal}(1)` (the same distribution). Returns ``(bias, delta)``."""
    delta, deviation = panel_split(n_annotators, "sigma_bias", "panel_bias_z", "panel_bias", "bias_z")
    bias = pm.Deterministic("bias", delta + deviation, dims="annotator")
    return bias, delta


def _logit_level(name: str, prior: tuple[float, float], delta, dims: str):
    """logit(v) + delta for v ~ Beta(prior) along ``dims``, as a free variable (see
    :func:`_latent_values`)."""
    return pm.CustomDist(
        name, delta, np.float64(prior[0]), np.float64(prior[1]), logp=_logit_beta_logp, random=_logit_beta_random,
        support_point=_logit_beta_support_point, dims=dims,
    )


def _latent_values(data: PairwiseData, prior: tuple[float, float], delta, coords: dict):
    """s per item (see the module docstring). With a panel offset ``delta`` the free variable
    is the level as the panel sees it, ``item_level`` = logit(s) + delta (or, with systems,
    ``system_level`` = logit(m) + delta), whose prior is the logit-Beta shifted by delta: the
    same model as s ~ Beta, but sliders now inform the level alone, so the weakly identified
    panel offset no longer drags every s along (four chains of 1,000 reached R-hat 1.027 on
    the biases before)."""
    if data.systems is not None:
        if delta is None:
            m = pm.Beta("system_value", prior[0], prior[1], dims="system")
            logit_m = pm.math.logit(m)
        else:
            level = _logit_level("system_level", prior, delta, "system")
            m = pm.Deterministic("system_value", pm.math.invlogit(level - delta), dims="system")
            logit_m = level - delta
        spread = pm.HalfNormal("item_spread", 1.0)
        system_of_item = pd.Index(coords["system"]).get_indexer(data.systems.to_numpy())
        offset = pm.Normal("item_offset", 0.0, 1.0, dims="item")
        return pm.Deterministic("s", pm.math.invlogit(logit_m[system_of_item] + spread * offset), dims="item")
    if delta is None:
        return pm.Beta("s", prior[0], prior[1], dims="item")
    level = _logit_level("item_level", prior, delta, "item")
    return pm.Deterministic("s", pm.math.invlogit(level - delta), dims="item")


def build_pairwise_model(
    data: PairwiseData,
    *,
    link: str = "rao-kupper",
    prior: tuple[float, float] = (1.0, 1.0),
    annotator_effects: bool | None = None,
    slider_resolution: float = 0.01,
    ties: bool | None = None,
    parametrisation: str = "auto",
    fused: bool = True,
) -> pm.Model:
    """The PyMC model for validated ``data`` (see the module docstring); no sampling.
    ``annotator_effects`` defaults to True when more than one annotator is named. ``ties``:
    model a tie band (epsilon) or not (Bradley-Terry / Thurstone, P(tie) = 0); None models
    one when the comparisons hold a tie. Comparisons are pooled per (pair, annotator)
    (:mod:`bayes_raters.pairwise.likelihood`). ``parametrisation``: ``"values"`` samples
    logit s and log lambda, ``"differences"`` the abilities' differences
    (:mod:`bayes_raters.pairwise.abilities`; comparisons alone), ``"auto"`` the latter for
    comparisons alone whose win graph bounds every item (:mod:`bayes_raters.pairwise.separation`),
    with or without annotator consistencies. ``fused`` (default): Bradley-Terry comparisons (no
    tie band) are computed by the compiled passes of :mod:`bayes_raters.pairwise.kernel` (Numba
    and Python backends, PyMC's NUTS and nutpie); False writes them as a PyTensor graph, which
    the JAX samplers need."""
    if link not in LINKS:
        raise InvalidInputError(f"link must be one of {LINKS}, got {link!r}.")
    if not 0 < slider_resolution < 0.5:
        raise InvalidInputError(f"slider_resolution must be in (0, 0.5), got {slider_resolution}.")
    if min(prior) <= 0:
        raise InvalidInputError(f"the Beta prior needs positive parameters, got {prior}.")
    if annotator_effects is None:
        annotator_effects = len(data.annotators) > 1
    coords = {"item": data.items.to_numpy(), "annotator": data.annotators.to_numpy()}
    if data.systems is not None:
        coords["system"] = pd.unique(data.systems.to_numpy())
    if parametrisation not in PARAMETRISATIONS:
        raise InvalidInputError(f"parametrisation must be one of {PARAMETRISATIONS}, got {parametrisation!r}.")
    comparisons_only = not (len(data.scalars) or len(data.strengths)) and data.systems is None
    if parametrisation == "differences" and not comparisons_only:
        raise InvalidInputError('parametrisation="differences" is for comparisons alone (no scalars, strengths or systems).')
    differences = uses_differences(parametrisation, comparisons_only and likelihood_bounds_every_item(data.comparisons, data.items))
    ties = resolve_ties(data.comparisons, ties)
    pooled = pool_comparisons(data.comparisons, data.items, data.annotators) if len(data.comparisons) else None
    coords.update(
        pair=np.arange(0 if pooled is None else len(pooled)), outcome_kind=OUTCOME_KINDS,
        scalar=np.arange(len(data.scalars)), strength=np.arange(len(data.strengths)),
    )
    items, annotators = data.items, data.annotators
    with pm.Model(coords=coords) as model:
        consistency, bias, delta, log_panel = pt.ones(len(annotators)), pt.zeros(len(annotators)), None, None
        if annotator_effects and differences:
            consistency, log_panel = panel_consistency(len(annotators))
        elif annotator_effects:
            sigma_c = pm.HalfNormal("sigma_consistency", 0.3)
            consistency = pm.Deterministic("consistency", pt.exp(sigma_c * pm.Normal("consistency_z", 0, 1, dims="annotator")), dims="annotator")
            if len(data.scalars):
                bias, delta = _panel_bias(len(annotators))
        if differences:
            s, _, u = abilities_from_differences(prior, len(items), log_panel)
        else:
            s = _latent_values(data, prior, delta, coords)
            u = pm.LogNormal("lambda", *LAMBDA_PRIOR) * s if len(data.comparisons) else None
        if len(data.comparisons):
            epsilon = pm.HalfNormal("epsilon", 1.0) if ties else None
            outcome_likelihood(pooled, u, epsilon, consistency, link, fused)
        if len(data.scalars):
            scal = data.scalars
            where = pm.Data("scalar_item", items.get_indexer(scal["item"]), dims="scalar")
            who = pm.Data("scalar_annotator", annotators.get_indexer(scal["annotator"]), dims="scalar")
            low, high = slider_resolution, 1 - slider_resolution
            value = pm.Data("scalar_value", np.clip(scal["value"].to_numpy(float), low, high), dims="scalar")
            phi = pm.Gamma("phi", 2.0, 0.1)
            mean = pm.math.invlogit(pm.math.logit(s[where]) + bias[who])
            concentration = phi * consistency[who]
            pm.CustomDist(
                "value", mean * concentration, (1 - mean) * concentration, low, high,
                logp=_censored_beta_logp, random=_censored_beta_random, observed=value, dims="scalar",
            )
        if len(data.strengths):
            stre = data.strengths
            a = pm.Data("strength_item_a", items.get_indexer(stre["item_a"]), dims="strength")
            b = pm.Data("strength_item_b", items.get_indexer(stre["item_b"]), dims="strength")
            who = pm.Data("strength_annotator", annotators.get_indexer(stre["annotator"]), dims="strength")
            value = pm.Data("strength_value", stre["value"].to_numpy(float), dims="strength")
            # Strengths alone fix only the product gain * (s_a - s_b); without scalars the
            # gain is 1, so s differences are in units of the slider's half-range.
            gain = pm.LogNormal("strength_gain", 0.0, 0.5) if len(data.scalars) else 1.0
            sigma_x = pm.HalfNormal("strength_sigma", 0.5)
            pm.Censored(
                "preference", pm.Normal.dist(gain * (s[a] - s[b]), sigma_x / consistency[who]),
                lower=-1.0, upper=1.0, observed=value, dims="strength",
            )
    return model
