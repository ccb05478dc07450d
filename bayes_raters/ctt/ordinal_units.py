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


def _response_keys(data, category: np.ndarray, raters_matter: bool) -> pd.Series:
    """A hashable key per response: its sorted (rater, category) ratings and system scores."""
    rater = data.rating_rater if raters_matter else np.zeros_like(data.rating_rater)
    rating_key = pd.Series(list(zip(rater, category))).groupby(data.rating_response).agg(lambda s: tuple(sorted(s)))
    keys = rating_key.reindex(np.arange(len(data.responses)))
    if len(data.systems):
        system_key = pd.Series(list(zip(data.system_index, data.systems["score"].to_numpy(float))))
        system_key = system_key.groupby(data.system_response).agg(lambda s: tuple(sorted(s)))
        keys = pd.Series(list(zip(keys, system_key.reindex(keys.index))), index=keys.index)
    return keys


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
    codes, uniques = pd.factorize(_response_keys(data, category, raters_matter))
    per_response = np.bincount(data.rating_response, minlength=len(codes))
    size = np.zeros(len(uniques), "int64")
    size[codes] = np.minimum(per_response, 3)
    relabel = np.empty(len(uniques), "int64")
    relabel[np.argsort(size, kind="stable")] = np.arange(len(uniques))  # singles, pairs, then more
    codes = relabel[codes]
    count = np.bincount(codes, minlength=len(uniques)).astype(float)
    representative = np.full(len(uniques), -1)
    representative[codes[::-1]] = np.arange(len(codes))[::-1]  # first response of each unit
    is_rep = np.zeros(len(codes), bool)
    is_rep[representative] = True
    rows = pd.DataFrame({"unit": codes[data.rating_response], "rater": data.rating_rater, "category": category})
    rows = rows[is_rep[data.rating_response]].sort_values(["unit", "rater", "category"], kind="stable")
    per_unit = rows.groupby("unit").size().reindex(np.arange(len(uniques)), fill_value=0).to_numpy()
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
