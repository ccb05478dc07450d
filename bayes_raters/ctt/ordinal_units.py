"""Responses of the ordinal true-score model pooled into units.

Two responses share a unit when they have the same ratings (as a multiset of
(rater, category), with the rater ignored unless raters differ in the model) and the
same system scores: their likelihood terms and true-score conditionals are then equal,
so the model evaluates each unit once and weights it by its count. Without system
scores, 10,000 responses rated on a 1-6 scale by two exchangeable raters cost at most
27 units (6 single ratings + 21 unordered pairs).

Units are split by how many ratings they have, because the likelihood differs:
one rating (closed form), two (a bivariate-normal rectangle), three or more (quadrature).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass
class OrdinalUnits:
    """Pooled responses. ``response_unit``: unit of each response; ``count``: responses per
    unit. ``single``/``pair``/``multi``: unit ids with one, two, three or more ratings, and
    for each group (units, slots) arrays ``*_rater``, ``*_category`` (``multi_used`` marks
    the filled slots). System rows of each unit's representative response:
    ``system_unit``, ``system_index``, ``system_score``."""

    response_unit: np.ndarray
    count: np.ndarray
    single: np.ndarray
    single_rater: np.ndarray
    single_category: np.ndarray
    pair: np.ndarray
    pair_rater: np.ndarray
    pair_category: np.ndarray
    multi: np.ndarray
    multi_rater: np.ndarray
    multi_category: np.ndarray
    multi_used: np.ndarray
    system_unit: np.ndarray
    system_index: np.ndarray
    system_score: np.ndarray

    @property
    def n_units(self) -> int:
        """How many units (responses) the three blocks hold together."""
        return int(self.single.size + self.pair.size + self.multi.size)

    def blocks(self) -> tuple[slice, slice, slice]:
        """Units are numbered singles first, then pairs, then the rest: their index ranges."""
        a, b = self.single.size, self.single.size + self.pair.size
        return slice(0, a), slice(a, b), slice(b, self.n_units)

    @property
    def one_row_each(self) -> bool:
        """Every unit has exactly one system row, in unit order (the separate model)."""
        return len(self.system_unit) == self.n_units and bool(np.all(self.system_unit == np.arange(self.n_units)))

    def rating_weights(self) -> tuple[np.ndarray, np.ndarray]:
        """Every rating of the data as (rater, number of responses with it), from the units."""
        raters = [self.single_rater[:, 0], self.pair_rater.ravel(), self.multi_rater[self.multi_used > 0]]
        counts = [
            self.count[self.single],
            np.repeat(self.count[self.pair], 2),
            np.repeat(self.count[self.multi], self.multi_used.sum(axis=1).astype(int)),
        ]
        return np.concatenate(raters).astype("int64"), np.concatenate(counts)


def _packed(owner: np.ndarray, columns: list[np.ndarray], n: int, fill: float) -> np.ndarray:
    """(n, width * len(columns)) rows: each owner's entries sorted, padded with ``fill``."""
    order = np.lexsort([*columns[::-1], owner])
    owner = owner[order]
    start = np.searchsorted(owner, np.arange(n))
    slot = np.arange(owner.size) - start[owner]
    width = int(slot.max()) + 1 if owner.size else 0
    out = np.full((n, width * len(columns)), fill)
    for j, column in enumerate(columns):
        out[owner, j * width + slot] = column[order]
    return out


def _response_keys(data, category: np.ndarray, raters_matter: bool) -> np.ndarray:
    """A row per response whose equality means 'same unit': its sorted (rater, category)
    ratings and sorted (system, score) rows (vectorised, not a pandas group-by of tuples:
    ``models/ctt_true_score.md``)."""
    n = len(data.responses)
    rater = data.rating_rater if raters_matter else np.zeros_like(data.rating_rater)
    parts = [_packed(data.rating_response, [rater.astype(float), category.astype(float)], n, -1.0)]
    if len(data.systems):
        scores = data.systems["score"].to_numpy(float)
        parts.append(_packed(data.system_response, [data.system_index.astype(float), scores], n, -np.inf))
    return np.concatenate(parts, axis=1)


def _factorize_rows(keys: np.ndarray) -> tuple[np.ndarray, int]:
    """Codes of identical rows, numbered in order of first appearance (as pandas.factorize)."""
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    rank = np.empty(first.size, "int64")
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return rank[inverse.ravel()], first.size


def _slots(rows: pd.DataFrame, units: np.ndarray, width: int):
    """(units, width) rater, category and used arrays from the rating rows of ``units``."""
    position = pd.Index(units)
    shape = (len(units), width)
    rater, category, used = np.zeros(shape, "int64"), np.zeros(shape, "int64"), np.zeros(shape)
    chosen = rows[rows["unit"].isin(units)]
    at = (position.get_indexer(chosen["unit"]), chosen.groupby("unit").cumcount().to_numpy())
    rater[at], category[at], used[at] = chosen["rater"], chosen["category"], 1.0
    return rater, category, used


def ordinal_units(data, score_low: float, raters_matter: bool) -> OrdinalUnits:
    """Pool the responses of prepared :class:`~bayes_raters.ctt.model.TrueScoreData`."""
    category = (data.ratings["score"].to_numpy() - score_low).astype("int64")
    codes, n_uniques = _factorize_rows(_response_keys(data, category, raters_matter))
    per_response = np.bincount(data.rating_response, minlength=len(codes))
    size = np.zeros(n_uniques, "int64")
    size[codes] = np.minimum(per_response, 3)
    relabel = np.empty(n_uniques, "int64")
    relabel[np.argsort(size, kind="stable")] = np.arange(n_uniques)  # singles, pairs, then more
    codes = relabel[codes]
    count = np.bincount(codes, minlength=n_uniques).astype(float)
    representative = np.full(n_uniques, -1)
    representative[codes[::-1]] = np.arange(len(codes))[::-1]  # first response of each unit
    is_rep = np.zeros(len(codes), bool)
    is_rep[representative] = True
    rows = pd.DataFrame({"unit": codes[data.rating_response], "rater": data.rating_rater, "category": category})
    rows = rows[is_rep[data.rating_response]].sort_values(["unit", "rater", "category"], kind="stable")
    per_unit = rows.groupby("unit").size().reindex(np.arange(n_uniques), fill_value=0).to_numpy()
    single, pair, multi = (np.flatnonzero(mask) for mask in (per_unit == 1, per_unit == 2, per_unit > 2))
    single_rater, single_category, _ = _slots(rows, single, 1)
    pair_rater, pair_category, _ = _slots(rows, pair, 2)
    multi_rater, multi_category, multi_used = _slots(rows, multi, int(per_unit.max()) if multi.size else 3)
    keep = np.flatnonzero(is_rep[data.system_response])
    keep = keep[np.argsort(codes[data.system_response[keep]], kind="stable")]  # rows in unit order
    return OrdinalUnits(
        response_unit=codes,
        count=count,
        single=single,
        single_rater=single_rater,
        single_category=single_category,
        pair=pair,
        pair_rater=pair_rater,
        pair_category=pair_category,
        multi=multi,
        multi_rater=multi_rater,
        multi_category=multi_category,
        multi_used=multi_used,
        system_unit=codes[data.system_response[keep]],
        system_index=data.system_index[keep],
        system_score=data.systems["score"].to_numpy(float)[keep],
    )


# ---- many responses, one system: rating patterns summed on a grid of system scores ----------

#: Chebyshev points per rating pattern (see :func:`on_grid`).
GRID_NODES = 128


def chebyshev_points(low: float, high: float, n: int) -> np.ndarray:
    """Chebyshev points of the second kind on [low, high] (the ends included)."""
    return 0.5 * (low + high) + 0.5 * (high - low) * np.cos(np.pi * np.arange(n) / (n - 1))


def barycentric_weights(x: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    r"""(len(x), n) weights :math:`w_{ik}` with :math:`p(x_i) = \sum_k w_{ik} f(\text{node}_k)` the
    polynomial interpolant through the Chebyshev points ``nodes`` (barycentric formula of the
    second kind, :math:`\lambda_k = (-1)^k`, halved at the ends; a point on a node gets that node)."""
    n = nodes.size
    lam = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    lam[[0, -1]] *= 0.5
    gap = x[:, None] - nodes[None, :]
    hit = gap == 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = lam / gap
        weights = terms / terms.sum(axis=1, keepdims=True)
    on_node = hit.any(axis=1)
    weights[on_node] = hit[on_node].astype(float)
    return weights


def _pattern_rows(units: OrdinalUnits, nodes: int):
    """Per block (singles, pairs): rows of the compressed units, as lists of
    (rater, category, count, system score) arrays."""
    out = []
    for ids, rater, category in ((units.single, units.single_rater, units.single_category),
                                 (units.pair, units.pair_rater, units.pair_category)):
        key = np.concatenate([rater, category], axis=1)
        patterns, which = np.unique(key, axis=0, return_inverse=True)
        score, count = units.system_score[ids], units.count[ids]
        parts = []
        which = which.ravel()
        grouped = np.split(np.argsort(which, kind="stable"), np.cumsum(np.bincount(which, minlength=len(patterns)))[:-1])
        for pattern, members in zip(patterns, grouped):  # members in their original order, one pass
            low, high = score[members].min(), score[members].max()
            if members.size <= nodes or not high > low:  # as cheap exactly: keep the units
                parts.append((rater[members], category[members], count[members], score[members]))
                continue
            grid = chebyshev_points(low, high, nodes)
            weight = np.zeros(nodes)
            for chunk in np.array_split(members, max(1, members.size // 50_000)):
                weight += count[chunk] @ barycentric_weights(score[chunk], grid)
            width = rater.shape[1]
            parts.append((np.tile(pattern[:width], (nodes, 1)), np.tile(pattern[width:], (nodes, 1)), weight, grid))
        out.append([np.concatenate(column) for column in zip(*parts)] if parts else None)
    return out


def on_grid(units: OrdinalUnits, nodes: int | None = None) -> OrdinalUnits:
    r"""Units whose sums over responses equal the originals' to interpolation accuracy, at a
    cost set by the rating patterns rather than the responses.

    With one system and one system score per unit, T | M ~ N(m, v) has the same v for every
    unit and m affine in M, so every per-unit quantity the model sums (log-likelihood,
    :math:`(M - E[T])^2 + Var[T]`, :math:`E[T]`, :math:`E[T]^2`, ...) is, within one rating
    pattern, a smooth function h(M). With :math:`w_{ik}` the barycentric weights of the
    degree-(n-1) interpolant at n Chebyshev points :math:`x_k` spanning the pattern's scores,
    :math:`\sum_i n_i h(M_i) \approx \sum_k c_k h(x_k)`, :math:`c_k = \sum_i n_i w_{ik}`
    (fixed by the data; :math:`\sum_k c_k = \sum_i n_i`). So a pattern becomes n pseudo-units
    with counts :math:`c_k` (some negative). Patterns with at most n units, units with three
    or more ratings, several systems or missing system scores stay as they are. The error is
    that of Chebyshev interpolation of an analytic function, geometric in n; measured in
    ``tests/ctt/test_ordinal.py``. Conditional draws of T use the original units."""
    nodes = GRID_NODES if nodes is None else nodes
    one_system = units.system_index.size == 0 or np.unique(units.system_index).size == 1
    if not (units.one_row_each and one_system and units.system_index.size):
        return units
    singles, pairs = _pattern_rows(units, nodes)
    n1, n2 = len(singles[2]) if singles else 0, len(pairs[2]) if pairs else 0
    n3 = units.multi.size
    empty = np.zeros((0, 1), "int64"), np.zeros((0, 2), "int64")

    def block(rows, width):
        return (rows[0], rows[1], rows[2], rows[3]) if rows else (empty[width - 1], empty[width - 1], np.zeros(0), np.zeros(0))

    s_rater, s_cat, s_count, s_score = block(singles, 1)
    p_rater, p_cat, p_count, p_score = block(pairs, 2)
    n = n1 + n2 + n3
    return OrdinalUnits(
        response_unit=np.zeros(0, "int64"),  # pseudo-units represent no single response
        count=np.concatenate([s_count, p_count, units.count[units.multi]]),
        single=np.arange(n1), single_rater=s_rater, single_category=s_cat,
        pair=np.arange(n1, n1 + n2), pair_rater=p_rater, pair_category=p_cat,
        multi=np.arange(n1 + n2, n), multi_rater=units.multi_rater, multi_category=units.multi_category,
        multi_used=units.multi_used,
        system_unit=np.arange(n),
        system_index=np.full(n, units.system_index[0]),
        system_score=np.concatenate([s_score, p_score, units.system_score[units.multi]]),
    )
