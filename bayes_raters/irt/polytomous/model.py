r"""Polytomous items: the graded response model (GRM, Samejima 1969) and the generalized
partial credit model (GPCM, Muraki 1992), abilities integrated out by the quadrature engine
(:mod:`bayes_raters.quadrature`), as the binary marginal model does.

Item :math:`j` has :math:`K_j` ordered categories :math:`0, \dots, K_j - 1` (the observed
scores of the item, in order), discrimination :math:`a_j` and thresholds
:math:`b_{j1}, \dots, b_{j,K_j-1}`. With :math:`x_{jk}(\theta) = a_j(\theta - b_{jk})`:

- **GRM**: :math:`P(X_j \ge k \mid \theta) = \sigma(x_{jk})`, thresholds ordered, so
  :math:`P(X_j = k) = \sigma(x_{jk}) - \sigma(x_{j,k+1})`; in logs, for a middle category,
  :math:`\log P = x_{jk} + \log(1 - e^{-a_j (b_{j,k+1} - b_{jk})}) - \operatorname{sp}(x_{jk}) - \operatorname{sp}(x_{j,k+1})`
  (:math:`\operatorname{sp}(x) = \log(1 + e^x)`), the lowest category :math:`-\operatorname{sp}(x_{j1})`,
  the highest :math:`-\operatorname{sp}(-x_{j,K_j-1})`: no difference of probabilities is formed.
- **GPCM**: :math:`P(X_j = k) \propto \exp \sum_{v \le k} x_{jv}` (the empty sum for
  :math:`k = 0`); the step difficulties :math:`b_{jv}` need not be ordered.

Priors (generative, so prior predictive draws and SBC work), in slope-intercept form
:math:`x_{jk} = a_j\theta - d_{jk}` with :math:`d_{jk} = a_j b_{jk}` (mirt's parametrisation):
:math:`\log a_j \sim N(0, 0.5)`. GRM: item location :math:`c_j \sim N(0, 3)` (the mean
intercept) and gaps :math:`g_{jk} = d_{j,k+1} - d_{jk} \sim N^+(2)`, the intercepts being
:math:`c_j` plus the centred cumulative gaps. GPCM: :math:`d_{jv} \sim N(0, 3)`.
:math:`\theta \sim N(0, 1)` fixes location and scale. The thresholds :math:`b = d / a` are a
Deterministic. Why this form (``models/irt_polytomous.md``, "Priors"): the earlier
:math:`\text{LogNormal}(0, 0.5)` gaps between thresholds put almost no mass below 0.2, and
on 500 x 10 x 5 answers whose thresholds are sorted N(0, 1.2) draws (gaps down to 0.02) four
items' 90% intervals of :math:`a` missed the truth from below; the half-normal's density is
highest at 0. And :math:`d` is the logit at :math:`\theta = 0`, where the respondents are, so
it is nearly uncorrelated with :math:`a`, where :math:`b` and :math:`a` are not (2,449 x 15 x 5,
nutpie: bulk ESS 496 -> 1,220 of 2,000 draws).

Likelihood. Every (item, category) pair is one row of a "category" axis; the log-probability of
every category at every quadrature node is a (categories, nodes) matrix, and a pattern's
log-likelihood at the nodes is a one-hot (patterns, categories) matrix times it: one matrix
product, as for binary items (the NumPy paths form it by blocks of items,
:mod:`~bayes_raters.irt.polytomous.blocks`). Identical patterns (missing answers included) are pooled.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt

from bayes_raters.data import validate_long
from bayes_raters.errors import InputWarning, InsufficientDataError, InvalidInputError
from bayes_raters.fit_spec import FitSpec
from bayes_raters.irt.polytomous.blocks import BlockedOnehot
from bayes_raters.laplace import NumpyTerm
from bayes_raters.quadrature import QuadratureRule, exp_and_log_total, fast_softplus, marginal_loglik, rule_for

#: The ordinal IRT models `fit_polytomous` fits: graded response and generalized partial credit.
POLYTOMOUS_MODELS = ("grm", "gpcm")


@dataclass(frozen=True)
class PolytomousSpec(FitSpec):
    """Options of a polytomous fit: the ``model`` (:data:`POLYTOMOUS_MODELS`). Each item's
    categories come from the data (``PolytomousResult.categories``). ``method`` is always
    ``"marginal"`` (abilities integrated out), as :func:`~bayes_raters.irt.compare_irt_models` reads
    it on every IRT fit."""

    model: str = "grm"
    method: str = "marginal"


def validate_ordinal_ratings(
    responses: pd.DataFrame, *, respondent: str = "respondent", item: str = "item", score: str = "score"
) -> tuple[pd.DataFrame, dict]:
    """A long table, one row per (respondent, item), with integer-valued ordinal ``score``.

    Returns ``(table, categories)``: the table with a ``category`` column (0 .. K_j - 1, the
    item's observed scores in order) and ``{item: [scores in category order]}``. A score inside
    an item's range that nobody gave is collapsed (the categories above it move down) and an
    :class:`InputWarning` names it; an item everyone gave the same score raises."""
    table = validate_long(responses, {"respondent": respondent, "item": item}, score, "responses")
    values = table["score"].to_numpy(float)
    if not np.allclose(values, np.round(values)):
        raise InvalidInputError(
            f"responses: column {score!r} must hold whole-number ordinal scores (e.g. 1-5); found "
            f"{sorted(set(values[values != np.round(values)]))[:5]}."
        )
    if table["respondent"].nunique() < 2 or table["item"].nunique() < 2:
        raise InsufficientDataError("IRT needs at least two respondents and two items.")
    categories, collapsed = {}, []
    for name, scores in table.groupby("item", sort=False)["score"]:
        used = np.unique(scores.to_numpy(float))
        if len(used) < 2:
            raise InvalidInputError(
                f"responses: item {name!r} has one score only ({used[0]:g}) from everyone: it carries no information. Drop it."
            )
        gaps = sorted(set(range(int(used[0]), int(used[-1]) + 1)) - set(used.astype(int)))
        if gaps:
            collapsed.append(f"{name!r}: {gaps}")
        categories[name] = [float(v) for v in used]
    if collapsed:
        warnings.warn(
            "scores nobody gave were collapsed (the categories above move down one), by item: "
            + "; ".join(collapsed[:10]) + ". Collapse or rescore them yourself to choose otherwise.",
            InputWarning,
            stacklevel=2,
        )
    rank = {name: {v: k for k, v in enumerate(scores)} for name, scores in categories.items()}
    table = table.assign(category=[rank[i][s] for i, s in zip(table["item"], table["score"].astype(float))])
    return table, categories


class CategoryLayout:
    """Index arrays of the flat (item, category) and (item, threshold) axes.

    ``n_categories[j]`` = :math:`K_j`; category row ``r`` is category ``step[r]`` of item
    ``cat_item[r]``; threshold ``t`` is :math:`b_{j,k}` with ``j = thr_item[t]``, ``k = thr_step[t]``
    (1-based)."""

    def __init__(self, n_categories: np.ndarray):
        self.n_categories = np.asarray(n_categories, int)
        self.n_items = len(self.n_categories)
        self.cat_item = np.repeat(np.arange(self.n_items), self.n_categories)
        self.step = np.concatenate([np.arange(k) for k in self.n_categories])
        self.thr_item = np.repeat(np.arange(self.n_items), self.n_categories - 1)
        self.thr_step = np.concatenate([np.arange(1, k) for k in self.n_categories])
        self.cat_start = np.concatenate([[0], np.cumsum(self.n_categories)[:-1]])
        self.thr_start = np.concatenate([[0], np.cumsum(self.n_categories - 1)[:-1]])
        last = self.step == self.n_categories[self.cat_item] - 1
        self.first, self.last = self.step == 0, last
        # GRM: category k lies between thresholds k (below) and k + 1 (above), clipped to the item's own
        self.below = self.thr_start[self.cat_item] + np.clip(self.step - 1, 0, None)
        self.above = self.thr_start[self.cat_item] + np.minimum(self.step, self.n_categories[self.cat_item] - 2)

    @functools.cached_property
    def cumulative(self) -> np.ndarray:
        """GPCM: (category rows, thresholds) 1 where the threshold enters the row's step sum
        (built on first use: the GRM never needs it, and it grows with the square of the items)."""
        return ((self.thr_item[None, :] == self.cat_item[:, None]) & (self.thr_step[None, :] <= self.step[:, None])).astype(float)

    @functools.cached_property
    def padded(self) -> np.ndarray:
        """GPCM: the (items, K_max) category rows of each item, padded with the row past the last."""
        padded = np.full((self.n_items, int(self.n_categories.max())), len(self.cat_item))
        for j in range(self.n_items):
            padded[j, : self.n_categories[j]] = self.cat_start[j] + np.arange(self.n_categories[j])
        return padded


def category_logp(model: str, a, b, theta, layout: CategoryLayout, lib=pt):
    """:math:`\\log P(X_j = k \\mid \\theta)` for every category row and every ``theta``
    (rows, len(theta)): the module formulas. ``a`` (items,), ``b`` (thresholds,); NumPy
    (``lib=np``) or PyTensor."""
    a_cat = a[layout.cat_item][:, None]
    if model == "grm":
        x_below = a_cat * (theta[None, :] - b[layout.below][:, None])
        x_above = a_cat * (theta[None, :] - b[layout.above][:, None])
        gap = a[layout.cat_item] * (b[layout.above] - b[layout.below])
        middle = ~(layout.first | layout.last)
        gap = lib.where(middle, gap, 1.0)[:, None]  # a finite stand-in where the branch is not used
        softplus = pt.softplus if lib is pt else (lambda x: fast_softplus(x.copy()))  # faster than np.logaddexp (models/implementation.md)
        log1mexp = pt.log1mexp if lib is pt else (lambda x: np.log(-np.expm1(x)))
        inner = x_below + log1mexp(-gap) - softplus(x_below) - softplus(x_above)
        return lib.where(
            layout.first[:, None], -softplus(x_above), lib.where(layout.last[:, None], -softplus(-x_below), inner)
        )
    steps = lib.dot(layout.cumulative, b)  # sum of the item's b_v, v <= k
    z = a_cat * (layout.step[:, None] * theta[None, :] - steps[:, None])
    pad = lib.full((1, theta.shape[0]), -np.inf) if lib is np else pt.fill(z[:1], -np.inf)
    grouped = lib.concatenate([z, pad], axis=0)[layout.padded]  # (items, K_max, thetas)
    if lib is np:
        top = grouped.max(axis=1, keepdims=True)
        norm = (top + np.log(np.exp(grouped - top).sum(axis=1, keepdims=True)))[:, 0]
    else:
        norm = pt.logsumexp(grouped, axis=1)
    return z - norm[layout.cat_item]


def category_dlogp(model: str, a, b, theta, layout: CategoryLayout) -> np.ndarray:
    r""":math:`\partial_\theta \log P(X_j = k \mid \theta)` for every category row and every
    ``theta`` (rows, len(theta)), NumPy. GRM: :math:`a_j(\sigma(-x_{jk}) - \sigma(x_{j,k+1}))`
    (the missing threshold's term is 0 for the end categories); GPCM:
    :math:`a_j(k - E[X_j \mid \theta])`."""
    a, b, theta = np.asarray(a, float), np.asarray(b, float), np.asarray(theta, float)
    a_cat = a[layout.cat_item][:, None]
    if model == "grm":
        lower = np.where(layout.first[:, None], 0.0, 1.0 / (1.0 + np.exp(a_cat * (theta[None, :] - b[layout.below][:, None]))))
        upper = np.where(layout.last[:, None], 0.0, 1.0 / (1.0 + np.exp(-a_cat * (theta[None, :] - b[layout.above][:, None]))))
        return a_cat * (lower - upper)
    p = np.exp(category_logp(model, a, b, theta, layout, lib=np))
    step = layout.step[:, None].astype(float)
    mean = np.zeros((layout.n_items, len(theta)))
    np.add.at(mean, layout.cat_item, p * step)
    return a_cat * (step - mean[layout.cat_item])


def rating_patterns(table: pd.DataFrame, respondents, items, layout: CategoryLayout):
    """Distinct rating patterns: ``(onehot, index, counts)`` with ``onehot`` (patterns,
    category rows) 1 where the pattern gave that category (missing answers: a zero block)."""
    wide = table.pivot(index="respondent", columns="item", values="category").reindex(index=respondents, columns=items)
    coded = np.nan_to_num(wide.to_numpy(float), nan=-1.0)
    patterns, index, counts = np.unique(coded, axis=0, return_inverse=True, return_counts=True)
    onehot = np.zeros((len(patterns), len(layout.cat_item)))
    rows, cols = np.nonzero(patterns >= 0)
    onehot[rows, layout.cat_start[cols] + patterns[rows, cols].astype(int)] = 1.0
    return onehot, index.ravel(), counts.astype(float)


#: Half-width of the polytomous trapezoid rule (standard-normal scale).
POLYTOMOUS_HALF_WIDTH = 6.0


def polytomous_rule(table: pd.DataFrame, layout: CategoryLayout) -> QuadratureRule:
    """The trapezoid rule sized for the most informative respondent: an item with K categories
    counts as K - 1 binary answers (its K - 1 thresholds); spacing from
    :func:`~bayes_raters.quadrature.rule_for`, on [-6, 6] rather than the binary families'
    [-8, 8]. Measured against a 401-node rule on [-10, 10] (GRM, three random parameter sets
    each, a ~ U(0.5, 3)): bfi neuroticism 2,800 x 5 x 6, 55 -> 41 nodes, the summed
    log-likelihood moves by at most 8e-6 (worst respondent 8e-8); 2,449 x 15 x 5 simulated,
    63 -> 47 nodes, by at most 7e-5, the same as before (the spacing, not the range, sets it).
    Every gradient and every theta draw costs nodes-proportional work."""
    steps = (layout.n_categories - 1).max()
    return rule_for(int(table.groupby("respondent").size().max() * steps), half_width=POLYTOMOUS_HALF_WIDTH)


#: Prior SD of the item intercepts :math:`d_{jk} = a_j b_{jk}` (logit units; GPCM, and the GRM's
#: mean intercept per item).
INTERCEPT_SD = 3.0
#: Scale of the half-normal prior on the gaps between a GRM item's adjacent intercepts.
GAP_SD = 2.0


def item_thresholds(model: str, layout: CategoryLayout):
    r"""Priors of the module docstring in slope-intercept form, returning ``a`` (dim item) and the
    thresholds ``b = d / a`` (dim threshold, a Deterministic). GPCM: :math:`d_{jk} \sim N(0, 3)`.
    GRM: each item's mean intercept ``d_location`` :math:`\sim N(0, 3)` plus its centred
    cumulative gaps ``d_gap`` :math:`\sim N^+(2)`, so the intercepts (and thresholds) are ordered
    and the prior stays generative (prior predictive draws, SBC)."""
    log_a = pm.Normal("log_a", 0.0, 0.5, dims="item")
    a = pm.Deterministic("a", pt.exp(log_a), dims="item")
    if model == "gpcm":
        d = pm.Normal("d", 0.0, INTERCEPT_SD, dims="threshold")
        return a, pm.Deterministic("b", d / a[layout.thr_item], dims="threshold")
    location = pm.Normal("d_location", 0.0, INTERCEPT_SD, dims="item")
    n_gaps = int((layout.n_categories - 2).sum())
    if n_gaps == 0:  # binary items only: one threshold each
        d = pm.Deterministic("d", location[layout.thr_item], dims="threshold")
        return a, pm.Deterministic("b", d / a[layout.thr_item], dims="threshold")
    gaps = pm.HalfNormal("d_gap", GAP_SD, shape=n_gaps)
    # cumulative gaps per item, starting at 0 for the first threshold, then centred on the item
    gap_item = np.repeat(np.arange(layout.n_items), layout.n_categories - 2)
    gap_rank = np.concatenate([np.arange(k - 2) for k in layout.n_categories])
    before = ((gap_item[None, :] == layout.thr_item[:, None]) & (gap_rank[None, :] < layout.thr_step[:, None] - 1)).astype(float)
    offsets = pt.dot(before, gaps)
    same_item = layout.thr_item[:, None] == layout.thr_item[None, :]
    item_mean = pt.dot(same_item / same_item.sum(axis=1, keepdims=True), offsets)
    d = pm.Deterministic("d", location[layout.thr_item] + offsets - item_mean, dims="threshold")
    return a, pm.Deterministic("b", d / a[layout.thr_item], dims="threshold")


def build_polytomous_model(
    responses: pd.DataFrame, model: str = "grm", *, respondent: str = "respondent", item: str = "item",
    score: str = "score", rule: QuadratureRule | None = None,
) -> pm.Model:
    """The marginal GRM or GPCM (no theta variable), returned without sampling.

    Coords ``respondent``, ``item``, ``threshold`` (``"item:k"``), ``category`` (``"item:score"``),
    ``pattern``, ``node``; data ``pattern_onehot``, ``pattern_count``, ``respondent_pattern``;
    the likelihood is the Potential ``marginal_loglik``. The layout and the score of each
    category are stored in ``model.polytomous`` for the fit and the tables.

    Parameters
    ----------
    responses : pandas.DataFrame
        Long ordinal ratings, one row per (respondent, item).
    model : {"grm", "gpcm"}
        Graded response or generalised partial credit model.
    respondent, item, score : str
        Column names in ``responses``.
    rule : QuadratureRule, optional
        The quadrature rule over the ability; default chosen from the data.

    Returns
    -------
    pymc.Model
        The model, not yet sampled.

    Examples
    --------
    >>> from bayes_raters.irt import build_polytomous_model, simulate_ratings
    >>> ratings, _ = simulate_ratings(200, 4, 4, random_seed=1)
    >>> model = build_polytomous_model(ratings, "grm")
    >>> len(model.coords["threshold"])
    12
    """
    if model not in POLYTOMOUS_MODELS:
        raise InvalidInputError(f"model must be one of {POLYTOMOUS_MODELS}, got {model!r}.")
    table, categories = validate_ordinal_ratings(responses, respondent=respondent, item=item, score=score)
    respondents, items = pd.unique(table["respondent"]), list(categories)
    layout = CategoryLayout(np.array([len(categories[i]) for i in items]))
    onehot, index, counts = rating_patterns(table, respondents, items, layout)
    rule = rule or polytomous_rule(table, layout)
    coords = {
        "respondent": respondents, "item": items, "pattern": np.arange(len(counts)), "node": rule.nodes,
        "threshold": [f"{items[j]}:{k}" for j, k in zip(layout.thr_item, layout.thr_step)],
        "category": [f"{items[j]}:{categories[items[j]][k]:g}" for j, k in zip(layout.cat_item, layout.step)],
    }
    with pm.Model(coords=coords) as irt:
        y = pm.Data("pattern_onehot", onehot, dims=("pattern", "category"))
        n = pm.Data("pattern_count", counts, dims="pattern")
        pm.Data("respondent_pattern", index, dims="respondent")
        nodes = pm.Data("quadrature_nodes", rule.nodes, dims="node")
        a, b = item_thresholds(model, layout)
        per_pattern = marginal_loglik(pt.dot(y, category_logp(model, a, b, nodes, layout)), rule.log_weights)
        pm.Potential("marginal_loglik", (n * per_pattern).sum())
    blocked = BlockedOnehot(onehot, layout.cat_item)  # built once: the proposals and the theta draws share it
    irt.numpy_term = NumpyTerm("marginal_loglik", ("a", "b"), numpy_marginal(model, layout, blocked, counts, rule))
    irt.polytomous = {"model": model, "layout": layout, "categories": categories, "rule": rule, "table": table, "blocked": blocked}
    return irt


def numpy_marginal(model: str, layout: CategoryLayout, blocked: BlockedOnehot, counts: np.ndarray, rule: QuadratureRule):
    r"""The Potential ``marginal_loglik`` in NumPy, as a function of the slopes ``a`` and thresholds
    ``b``: :math:`\sum_p n_p \log\sum_q w_q \exp(y_p^\top \log P_{\cdot q})`, the category table
    by :func:`category_logp` (``lib=np``), the patterns :math:`y_p` as ``blocked``. The Laplace
    proposals' log densities use it (:class:`~bayes_raters.laplace.NumpyTerm`): NumPy's
    vectorised exponentials and one one-hot product by blocks of items
    (:class:`~bayes_raters.irt.polytomous.blocks.BlockedOnehot`) per evaluation against PyTensor's graph on the Numba backend, which evaluates them one at a
    time; and the log-sum-exp without its maximum pass where the sums allow
    (:func:`~bayes_raters.quadrature.exp_and_log_total`; ``models/irt_polytomous.md`` gives the timings)."""
    nodes, weights = np.asarray(rule.nodes, float), np.exp(rule.log_weights)

    def function(a, b):
        per_node = blocked.product(category_logp(model, np.asarray(a, float), np.asarray(b, float), nodes, layout, lib=np))
        return float(counts @ exp_and_log_total(per_node, weights)[1])

    return function


def item_information(model: str, a, b, theta, layout: CategoryLayout) -> np.ndarray:
    r"""Fisher information of every item at every ``theta`` (items, len(theta)), NumPy:
    :math:`I_j(\theta) = \sum_k P_{jk}'(\theta)^2 / P_{jk}(\theta) = \sum_k P_{jk} (\partial_\theta \log P_{jk})^2`,
    the score from :func:`category_dlogp` (GPCM: :math:`I_j = a_j^2 \operatorname{Var}(X_j \mid \theta)`)."""
    theta = np.asarray(theta, float)
    p = np.exp(category_logp(model, a, b, theta, layout, lib=np))  # (rows, thetas)
    terms = p * category_dlogp(model, a, b, theta, layout) ** 2  # P'^2 / P = P (d log P)^2
    information = np.zeros((layout.n_items, len(theta)))
    np.add.at(information, layout.cat_item, terms)
    return information
