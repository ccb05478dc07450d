r"""Multidimensional (compensatory) IRT with the abilities integrated out.

**Model** (slope-intercept form, as R's mirt writes it). Respondent :math:`i` has abilities
:math:`\theta_i \in \mathbb{R}^K` and answers item :math:`j` correctly with probability

.. math::

    P_j(\theta) = c_j + (1 - c_j)\,\sigma(\mathbf{a}_j^\top \theta + d_j)

(:math:`c_j = 0` for the 2PL). A high ability on any dimension can make up for a low one on
another (compensatory). The multidimensional difficulty is
:math:`-d_j / \lVert \mathbf{a}_j \rVert` and the multidimensional discrimination
:math:`\lVert \mathbf{a}_j \rVert` (Reckase 2009).

- **Exploratory** (``dims=K``): :math:`\theta_i \sim N(0, I_K)`; the loadings matrix
  :math:`A` is free except on K *anchor* items: anchor k loads on dimensions 1..k only, with a
  positive loading on dimension k. That removes rotation (the zeros) and reflection (the
  signs), so repeated fits agree. Anchors are chosen from the data (:func:`anchor_items`:
  pivoted Cholesky of the rank-K approximation of the answers' correlation matrix, i.e. the
  items that span the K leading directions best) unless given; an anchor with almost no
  loading of its own on dimension k would leave the reflection of k unidentified. Priors:
  anchor diagonal loadings LogNormal(0, 0.5), other loadings N(0, 1).
- **Confirmatory** (``dimensions={item: name}``): item j loads on its own dimension only,
  :math:`a_j \sim \text{LogNormal}(0, 0.5)`; :math:`\theta_i \sim N(0, R)`,
  :math:`R \sim \text{LKJ}(2)` (``corr``: the correlation of the named abilities).

Intercepts :math:`d_j \sim N(0, 2)`; guessing (3PL) :math:`c_j \sim \text{Beta}(2, 2(k - 1))`
for k answer options, as in the unidimensional model.

**Marginal likelihood.** Write :math:`\theta = L z` with :math:`z \sim N(0, I_K)` and
:math:`L` the Cholesky factor of :math:`R` (:math:`I` when exploratory). On a product
Gauss-Hermite rule :math:`(z_q, w_q)` (:func:`product_rule`; nodes whose weight is below
:data:`PRUNE` of the largest are dropped: their share of the integral is below that for any
pattern whose conditional lies inside the grid), each distinct answer pattern p has

.. math::

    \log p(y_p) \approx \operatorname{logsumexp}_q \Big(\sum_j y_{pj} \log P_j(L z_q)
    + (m_{pj} - y_{pj}) \log(1 - P_j(L z_q)) + \log w_q\Big),

two matrix products (patterns x items times items x nodes) per evaluation, as in the
unidimensional engine (:mod:`bayes_raters.irt.binary.marginal`). Why Gauss-Hermite here where the
unidimensional engine uses the trapezoid rule: a product trapezoid grid fine enough for 100
items has 81^K nodes; with K dimensions the items are shared among them, each conditional is
wider, and 21 (K = 2) or 11 (K = 3) Gauss-Hermite nodes per dimension reach the tolerance
(:func:`bayes_raters.irt.multidimensional.fit.quadrature_error` checks every fit against a rule with
more nodes and refines it when needed).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt

from bayes_raters.errors import InvalidInputError
from bayes_raters.fit_spec import FitSpec
from bayes_raters.irt.binary.marginal import answer_patterns
from bayes_raters.irt.binary.model import asymptote_logs, option_count
from bayes_raters.irt.multidimensional.factorised import AxisRule
from bayes_raters.irt.multidimensional.likelihood import pattern_node_loglik
from bayes_raters.laplace import NumpyTerm
from bayes_raters.quadrature import marginal_loglik

#: Radius of the ball of nodes by number of dimensions: prior mass outside below 2e-8 (K = 2)
#: and 1e-6 (K = 3).
RADIUS = {1: 8.0, 2: 6.0, 3: 5.5}
#: Largest node spacing (the logistic's poles: error about ``exp(-2 pi^2 / (|a| h))`` per item).
MAX_SPACING = 0.6
MAX_DIMENSIONS = 3


@dataclass(frozen=True)
class MultidimensionalSpec(FitSpec):
    """Options of a multidimensional fit: the ``model`` (``"2pl"``, ``"3pl"``), the ``dimensions``'
    names, the ``anchors`` (exploratory: one item per dimension whose loadings on later dimensions
    are fixed at 0) or ``item_dimension`` (confirmatory: item -> its one dimension), and
    ``n_options`` behind the 3PL's guessing prior. ``method`` is always ``"marginal"`` (abilities
    integrated out), as :func:`~bayes_raters.irt.compare_irt_models` reads it on every IRT fit."""

    model: str = "2pl"
    dimensions: list = ()
    anchors: list | None = None
    item_dimension: dict | None = None
    n_options: int | None = None
    method: str = "marginal"


def ball_rule(n_dimensions: int, spacing: float, radius: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Nodes (Q, K) and log-weights (Q,) of the product trapezoid rule for :math:`E f(Z)`,
    :math:`Z \\sim N(0, I_K)`: grid points :math:`h\\,k` (k integer) within ``radius`` of 0
    (default :data:`RADIUS` for K), weights :math:`h^K \\varphi_K(z)`."""
    radius = RADIUS[n_dimensions] if radius is None else radius
    axis = spacing * np.arange(-np.floor(radius / spacing), np.floor(radius / spacing) + 1)
    nodes = np.stack([g.ravel() for g in np.meshgrid(*[axis] * n_dimensions, indexing="ij")], axis=1)
    nodes = nodes[(nodes**2).sum(axis=1) <= radius**2 + 1e-9]
    log_weights = n_dimensions * np.log(spacing) - 0.5 * (nodes**2).sum(axis=1) - 0.5 * n_dimensions * np.log(2 * np.pi)
    return nodes, log_weights


def default_spacing(n_items: int, n_dimensions: int) -> float:
    """Node spacing for ``n_items`` items shared by K dimensions. The sharpest conditional has
    SD about :math:`s = 1/\\sqrt{1 + 0.75\\,n/K}` (n/K items per dimension with
    discriminations up to about 1.7 and :math:`P(1 - P) \\le 1/4`); the trapezoid error
    :math:`2e^{-2\\pi^2 s^2/h^2}` is then below 1e-5 for :math:`h = 1.2 s`, at most
    :data:`MAX_SPACING`. Measured on 1,000 x 20 two-factor answers (10 items per factor):
    h = 0.4 (this rule) errs by 8e-6 per respondent, 0.5 by 2e-4, 0.6 by 2e-3."""
    return float(min(MAX_SPACING, 1.2 / np.sqrt(1 + 0.75 * n_items / n_dimensions)))


def wide_correct(table: pd.DataFrame, respondents, items) -> np.ndarray:
    """(respondents, items) answers, NaN where unanswered."""
    wide = table.pivot(index="respondent", columns="item", values="correct")
    return wide.reindex(index=respondents, columns=items).to_numpy(float)


def _filled(wide: np.ndarray) -> np.ndarray:
    filled = np.where(np.isnan(wide), np.nanmean(wide, axis=0), wide)
    if np.any(filled.std(axis=0) == 0):
        raise InvalidInputError("an item was answered the same way by everyone; drop it before a multidimensional fit.")
    return filled


def factor_loadings(wide: np.ndarray, n_dimensions: int, pivots: list[int] | None = None) -> tuple[list[int], np.ndarray]:
    r"""Pivoted Cholesky of :math:`C_K = V_K \Lambda_K V_K^\top`, the rank-K approximation of the
    answers' correlation matrix (unanswered cells at the item mean). Returns the pivots and
    the (items, K) loadings :math:`\Lambda` with :math:`\Lambda\Lambda^\top = C_K`, lower
    triangular on the pivots: the rotation the exploratory model uses. Unless ``pivots`` are
    given, the first is the item with the largest communality and each next one the item
    with the most communality left after the directions already chosen, so every anchor has
    a clear loading of its own on its dimension."""
    values, vectors = np.linalg.eigh(np.corrcoef(_filled(wide), rowvar=False))
    top = np.argsort(values)[::-1][:n_dimensions]
    residual = (vectors[:, top] * values[top]) @ vectors[:, top].T
    chosen: list[int] = []
    loadings = np.zeros((wide.shape[1], n_dimensions))
    for k in range(n_dimensions):
        diagonal = np.diag(residual).copy()
        diagonal[chosen] = -np.inf
        pivot = int(np.argmax(diagonal)) if pivots is None else pivots[k]
        loadings[:, k] = residual[:, pivot] / np.sqrt(max(residual[pivot, pivot], 1e-12))
        residual = residual - np.outer(loadings[:, k], loadings[:, k])
        chosen.append(pivot)
    return chosen, loadings


def anchor_items(wide: np.ndarray, n_dimensions: int) -> list[int]:
    """Column indices of the K anchor items (the pivots of :func:`factor_loadings`)."""
    return factor_loadings(wide, n_dimensions)[0]


def initial_values(wide: np.ndarray, anchors: list[int], free_rows, free_cols) -> dict:
    r"""Starting values of the exploratory model from :func:`factor_loadings` in its rotation:
    slopes :math:`a = 1.702\,\lambda / \sqrt{1 - \lVert\lambda\rVert^2}` (normal-ogive
    to logistic), intercepts the logits of the proportions correct. Why: the exploratory
    posterior has a local mode in which the last dimension collapses (its anchor loading near
    0, every item on the earlier dimensions); at 300 x 20 two-factor answers one of two chains
    started at PyMC's random points stayed there (R-hat 1.83), none does from here."""
    _, loadings = factor_loadings(wide, len(anchors), anchors)
    slopes = 1.702 * loadings / np.sqrt(np.clip(1 - (loadings**2).sum(axis=1, keepdims=True), 0.1, None))
    p = np.clip(np.nanmean(wide, axis=0), 0.02, 0.98)
    own = np.maximum(slopes[anchors, np.arange(len(anchors))], 0.3)
    return {"d": np.log(p / (1 - p)), "loading_free": slopes[free_rows, free_cols], "loading_anchor": own}


def resolve_structure(items, dims: int | None, dimensions: dict | None, anchors, wide: np.ndarray):
    """``(dimension names, confirmatory map or None, anchor item indices or None)`` from the
    user's ``dims`` / ``dimensions`` / ``anchors``, checked."""
    items = list(items)
    if dimensions is not None:
        if dims is not None or anchors is not None:
            raise InvalidInputError("give either dimensions={item: name} (confirmatory) or dims=K (exploratory), not both; "
                                    "anchors= belongs to the exploratory model.")
        missing = [i for i in items if i not in dimensions]
        if missing:
            raise InvalidInputError(f"dimensions= must name a dimension for every item; missing: {missing[:5]}.")
        names = list(pd.unique(pd.Series([dimensions[i] for i in items], dtype=object)))
        if not 2 <= len(names) <= MAX_DIMENSIONS:
            raise InvalidInputError(f"dimensions= must use 2 to {MAX_DIMENSIONS} names, got {len(names)}: {names}.")
        return names, np.array([names.index(dimensions[i]) for i in items]), None
    if dims is None or not isinstance(dims, (int, np.integer)) or not 1 <= dims <= MAX_DIMENSIONS:
        raise InvalidInputError(f"dims=K must be an integer from 1 to {MAX_DIMENSIONS}, got {dims!r}.")
    names = [f"dim{k + 1}" for k in range(dims)]
    if anchors is None:
        chosen = anchor_items(wide, dims)
    else:
        unknown = [a for a in anchors if a not in items]
        if len(anchors) != dims or unknown or len(set(anchors)) != dims:
            raise InvalidInputError(f"anchors=... must list {dims} distinct items of the data (one per dimension), got {list(anchors)}.")
        chosen = [items.index(a) for a in anchors]
    return names, None, chosen


def loading_layout(n_items: int, n_dimensions: int, anchors: list[int]):
    """Positions in the (items, K) loadings matrix: ``(free_rows, free_cols)`` of the N(0, 1)
    loadings and the rows of the K positive anchor loadings (column k for anchor k); the
    anchor's loadings on dimensions after its own are zero."""
    fixed = np.zeros((n_items, n_dimensions), dtype=bool)
    for k, row in enumerate(anchors):
        fixed[row, k:] = True
    free_rows, free_cols = np.nonzero(~fixed)
    return free_rows, free_cols, np.asarray(anchors)


def build_mirt_model(
    table: pd.DataFrame, model: str = "2pl", *, dims: int | None = None, dimensions: dict | None = None,
    anchors=None, n_options: int | None = None, spacing: float | None = None,
) -> pm.Model:
    """The marginal multidimensional model of the module docstring, built without sampling,
    from a validated answers table. Coords: ``respondent``, ``item``, ``dimension``,
    ``dimension_other`` (the second axis of ``corr``), ``pattern``, ``node``; free loadings
    ``loading`` (exploratory). Variables: ``d`` (item), ``a`` (item, dimension), ``c`` (3PL),
    ``corr`` and its free entries ``corr_pair`` (confirmatory). ``model.mirt`` holds the
    dimension names, the item -> dimension map (confirmatory), the anchor items and the
    starting values (exploratory).

    Parameters
    ----------
    table : pandas.DataFrame
        Validated long answers ``respondent, item, correct``.
    model : {"2pl", "3pl"}
        The item response function.
    dims : int, optional
        Number of abilities of the exploratory model.
    dimensions : dict, optional
        Item -> ability name: the confirmatory model.
    anchors : list, optional
        The exploratory model's anchor items, one per ability.
    n_options : int, optional
        Answer options per item (guessing prior of the 3PL).
    spacing : float, optional
        Node spacing of the quadrature grid; default from the number of items and abilities.

    Returns
    -------
    pymc.Model
        The model, not yet sampled.

    Examples
    --------
    >>> from bayes_raters.irt import build_mirt_model, simulate_factor_answers, validate_responses
    >>> answers, truth = simulate_factor_answers(200, (4, 4), random_seed=0)
    >>> model = build_mirt_model(validate_responses(answers), dimensions=truth["dimensions"])
    >>> model.named_vars_to_dims["a"]
    ('item', 'dimension')
    """
    if model not in ("2pl", "3pl"):
        raise InvalidInputError(f"multidimensional models are '2pl' or '3pl', got {model!r}.")
    respondents, items = pd.unique(table["respondent"]), pd.unique(table["item"])
    names, item_dim, anchor_rows = resolve_structure(items, dims, dimensions, anchors, wide_correct(table, respondents, items))
    k_dims = len(names)
    spacing = spacing or default_spacing(len(items), k_dims)
    correct, answered, index, counts = answer_patterns(table, respondents, items)
    if item_dim is None:
        nodes, log_weights = ball_rule(k_dims, spacing)
        axis_rule = None
    else:  # simple structure: the rule factorises over the abilities
        axis_rule = AxisRule(correct, answered, item_dim, k_dims, spacing, RADIUS[k_dims])
        nodes, log_weights = axis_rule.grid, None
    pairs = [f"{names[i]}~{names[j]}" for i, j in zip(*np.triu_indices(k_dims, 1))]
    coords = {"respondent": respondents, "item": items, "dimension": names, "dimension_other": names, "dimension_pair": pairs,
              "pattern": np.arange(len(counts)), "node": np.arange(len(nodes)), "node_axis": names}
    with pm.Model(coords=coords) as mirt:
        y = pm.Data("pattern_correct", correct, dims=("pattern", "item"))
        m = pm.Data("pattern_answered", answered, dims=("pattern", "item"))
        n = pm.Data("pattern_count", counts, dims="pattern")
        pm.Data("respondent_pattern", index, dims="respondent")
        z = pm.Data("quadrature_nodes", np.ascontiguousarray(nodes.T), dims=("node_axis", "node"))
        if log_weights is not None:
            pm.Data("quadrature_log_weights", log_weights, dims="node")
        d = pm.Normal("d", 0.0, 2.0, dims="item")
        if item_dim is None:
            loadings, chol = _exploratory_loadings(len(items), k_dims, anchor_rows), None
            free_rows, free_cols, _ = loading_layout(len(items), k_dims, anchor_rows)
            initvals = initial_values(wide_correct(table, respondents, items), anchor_rows, free_rows, free_cols)
        else:
            loadings, chol, own = _confirmatory_loadings(item_dim, k_dims)
            initvals = None
        a = pm.Deterministic("a", loadings, dims=("item", "dimension"))
        c = pm.Beta("c", 2.0, 2.0 * (option_count(n_options) - 1), dims="item") if model == "3pl" else None
        if axis_rule is None:
            eta = pt.dot(a, z) + d[:, None]  # (items, nodes)
            table_q = pattern_node_loglik(y, m, eta, c, complete=bool(answered.all()))
            log_p = marginal_loglik(table_q, log_weights)
        else:
            tables = axis_rule.axis_loglik(own, d, c, lib=pt, correct=y, answered=m)
            log_p = axis_rule.log_marginal(tables, axis_rule.log_weights(chol, lib=pt), lib=pt)
        pm.Potential("marginal_loglik", (n * log_p).sum())
    inputs = ("a", "d") + (("c",) if c is not None else ()) + (("corr_cholesky",) if chol is not None else ())
    if axis_rule is None:
        mirt.numpy_term = NumpyTerm("marginal_loglik", inputs, numpy_marginal(correct, answered, counts, nodes, log_weights, c is not None))
    else:
        mirt.numpy_term = NumpyTerm("marginal_loglik", inputs, _axis_marginal(axis_rule, counts, c is not None))
    mirt.mirt = {"dimensions": names, "item_dimension": item_dim,
                 "anchors": None if anchor_rows is None else [items[r] for r in anchor_rows], "initvals": initvals}
    return mirt


class NodeTable:
    r"""Every pattern's log-likelihood plus the rule's log-weight at every node,
    :math:`\ell_{pq} + \log w_q`, in NumPy, written into one (patterns, nodes) buffer per thread:
    a fresh 5 MB array per evaluation costs its page faults, which took longer than the
    exponentials (``models/irt_multidimensional.md`` gives the timing). With
    :math:`\log P` and :math:`\log Q = \log(1 - P)` per (item, node),
    :math:`\ell_{pq} = \sum_j y_{pj}(\log P_{jq} - \log Q_{jq}) + \sum_j m_{pj}\log Q_{jq}`:
    one matrix product (the 2PL's :math:`\log P - \log Q` is :math:`\eta`)."""

    def __init__(self, correct, answered, nodes, log_weights):
        self.correct, self.nodes, self.log_weights = correct, nodes, log_weights
        self.complete = bool(answered.all())
        self.both = np.hstack([correct, answered])
        self._local = threading.local()

    def fill(self, a, d, c=None, chol=None):
        r"""The buffer holding :math:`\ell_{pq} + \log w_q` at these item parameters, and the
        abilities at the nodes (nodes, K) (:math:`L z_q` with the correlation's Cholesky factor)."""
        theta = self.nodes if chol is None else self.nodes @ chol.T
        eta = a @ theta.T + d[:, None]
        buffer = getattr(self._local, "buffer", None)
        if buffer is None:
            buffer = self._local.buffer = np.empty((len(self.correct), len(self.nodes)))
        if c is None:
            log_odds, log_q = eta, -np.logaddexp(0.0, eta)
        else:
            log_p, log_q = asymptote_logs(eta, c[:, None], None, np)
            log_odds = log_p - log_q
        if self.complete:
            np.dot(self.correct, log_odds, out=buffer)
            buffer += log_q.sum(axis=0) + self.log_weights
        else:  # one product [y, m] @ [log P - log Q; log Q]
            np.dot(self.both, np.concatenate([log_odds, log_q]), out=buffer)
            buffer += self.log_weights
        return buffer, theta


def normalise_rows(table: np.ndarray) -> np.ndarray:
    r"""Each row's log-sum-exp; ``table`` is overwritten by the normalised weights
    :math:`\exp(t_{pq}) / \sum_q \exp(t_{pq})` (one exponential per entry). Not
    :func:`bayes_raters.quadrature.logsumexp_np`: the callers need the normalised weights too
    (the theta draws and the gradient), which that function would compute with a second
    exponential of every entry of a (patterns x nodes) table."""
    top = table.max(axis=1)
    top = np.where(np.isfinite(top), top, 0.0)
    table -= top[:, None]
    np.exp(table, out=table)
    total = table.sum(axis=1)
    table /= total[:, None]
    with np.errstate(divide="ignore"):  # a row of zero likelihood: log 0 = -inf, which the caller rejects
        return np.log(total) + top


def numpy_marginal(correct, answered, counts, nodes, log_weights, guessing: bool):
    r"""The ``marginal_loglik`` potential in NumPy, :math:`\sum_p n_p \operatorname{logsumexp}_q
    (\ell_{pq} + \log w_q)`, as a function of ``(a, d[, c][, L])`` (L the abilities' Cholesky
    factor, confirmatory): the Laplace proposals' log densities
    (:class:`bayes_raters.laplace.NumpyTerm` says why; :class:`NodeTable`)."""
    nodes_table = NodeTable(correct, answered, nodes, log_weights)

    def value(a, d, *rest):
        c = rest[0] if guessing else None
        chol = rest[-1] if len(rest) > int(guessing) else None
        return float(counts @ normalise_rows(nodes_table.fill(a, d, c, chol)[0]))

    return value


def _axis_marginal(rule: AxisRule, counts: np.ndarray, guessing: bool):
    """:func:`numpy_marginal` for the confirmatory model's factorised rule: a function of
    ``(a, d[, c], L)``."""

    def value(a, d, *rest):
        return float(counts @ rule.numpy_log_marginal(a, d, rest[0] if guessing else None, rest[-1]))

    return value


def _exploratory_loadings(n_items: int, k_dims: int, anchor_rows: list[int]):
    free_rows, free_cols, rows = loading_layout(n_items, k_dims, anchor_rows)
    free = pm.Normal("loading_free", 0.0, 1.0, shape=len(free_rows))
    own = pm.LogNormal("loading_anchor", 0.0, 0.5, dims="dimension")
    loadings = pt.zeros((n_items, k_dims))
    loadings = pt.set_subtensor(loadings[free_rows, free_cols], free)
    return pt.set_subtensor(loadings[rows, np.arange(k_dims)], own)


def _confirmatory_loadings(item_dim: np.ndarray, k_dims: int):
    own = pm.LogNormal("a_own", 0.0, 0.5, dims="item")
    # initval: PyMC's default starting point of LKJCorr compiles through the C backend, which
    # warns about BLAS on pip installs at every fit; the identity (independent abilities) does not
    chol = pm.LKJCorr("corr_cholesky", n=k_dims, eta=2.0, dims=("dimension", "dimension_other"), initval=np.eye(k_dims))
    corr = pm.Deterministic("corr", pt.dot(chol, chol.T), dims=("dimension", "dimension_other"))
    upper = np.triu_indices(k_dims, 1)
    pm.Deterministic("corr_pair", corr[upper], dims="dimension_pair")  # the free correlations, for R-hat
    loadings = pt.zeros((len(item_dim), k_dims))
    return pt.set_subtensor(loadings[np.arange(len(item_dim)), item_dim], own), chol, own
