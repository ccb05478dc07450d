"""Long ratings ``(response, rater, score)`` as the matrices the agreement coefficients read.

A *unit* is a rated response. Every coefficient here compares ratings of the same unit, so a
unit with a single rating carries no information about agreement and is left out (it is
counted in ``n_single``). Scores are numbers for the ordinal, interval and ratio levels; at
the nominal level any labels (text or numbers) are accepted and only their identity matters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from bayes_raters.data import id_column, require_columns, require_frame, validate_long
from bayes_raters.errors import InsufficientDataError, InvalidInputError

#: Levels of measurement, as Krippendorff names them.
LEVELS = ("nominal", "ordinal", "interval", "ratio")


@dataclass(frozen=True)
class Ratings:
    """Validated ratings of the units with two or more ratings.

    ``values`` is units x raters (NaN where a rater did not rate a unit); at the nominal level
    its entries are category codes ``0..K-1`` into ``categories``.
    """

    values: np.ndarray
    units: pd.Index
    raters: pd.Index
    categories: np.ndarray
    level: str
    n_single: int

    @property
    def counts(self) -> np.ndarray:
        """Units x categories: how many raters gave each category to each unit."""
        codes = self.codes
        counts = np.zeros((len(self.units), len(self.categories)))
        rows, cols = np.nonzero(~np.isnan(self.values))
        np.add.at(counts, (rows, codes[rows, cols].astype(int)), 1.0)
        return counts

    @property
    def codes(self) -> np.ndarray:
        """``values`` as positions in ``categories`` (NaN kept)."""
        if self.level == "nominal":
            return self.values
        out = np.full(self.values.shape, np.nan)
        seen = ~np.isnan(self.values)
        out[seen] = np.searchsorted(self.categories, self.values[seen])
        return out

    @property
    def long(self) -> pd.DataFrame:
        """The ratings used, long: ``response, rater, score`` (scores as given, labels at the nominal level)."""
        rows, cols = np.nonzero(~np.isnan(self.values))
        scores = self.values[rows, cols]
        if self.level == "nominal":
            scores = self.categories[scores.astype(int)]
        return pd.DataFrame({"response": self.units[rows], "rater": self.raters[cols], "score": scores})

    @property
    def per_unit(self) -> np.ndarray:
        """Ratings per unit."""
        return (~np.isnan(self.values)).sum(axis=1)

    @property
    def complete(self) -> bool:
        """Every rater rated every unit (a fully crossed, balanced design)."""
        return not np.isnan(self.values).any()

    def subset(self, rows: np.ndarray) -> Ratings:
        """The units at ``rows`` (repeats allowed: a bootstrap sample), as new units; raters
        left with no rating drop out."""
        return self._rebuilt(self.values[rows])

    def without(self, cells: np.ndarray) -> Ratings:
        """These ratings less those at ``cells`` (rows of (unit, rater) positions), as new units;
        units left with fewer than two ratings and raters left with none drop out."""
        values = self.values.copy()
        values[cells[:, 0], cells[:, 1]] = np.nan
        return self._rebuilt(values[(~np.isnan(values)).sum(axis=1) >= 2])

    def _rebuilt(self, values: np.ndarray) -> Ratings:
        """Ratings of these raters and scale from a units x raters ``values`` (its rows new
        units); raters with no rating in it drop out."""
        rated = ~np.isnan(values).all(axis=0)
        return Ratings(values[:, rated], pd.RangeIndex(len(values)), self.raters[rated], self.categories, self.level, 0)


def check_level(level: str) -> str:
    """``level`` if it is one of :data:`LEVELS`; else an error that lists them."""
    if level not in LEVELS:
        raise InvalidInputError(f"level={level!r} is not a level of measurement; use one of {list(LEVELS)}.")
    return level


def _nominal_long(ratings: pd.DataFrame, response: str, rater: str, score: str) -> tuple[pd.DataFrame, np.ndarray]:
    what = "ratings"
    table = require_frame(ratings, what)
    require_columns(table, {"response": response, "rater": rater, "score": score}, what)
    if table.empty:
        raise InvalidInputError(f"{what}: the table has no rows.")
    labels = table[score]
    if labels.isna().any():
        raise InvalidInputError(
            f"{what}: {int(labels.isna().sum())} missing score(s) in column {score!r}; drop those rows "
            "(a rating that was not given is a row that is not there)."
        )
    out = pd.DataFrame({"response": id_column(table, response, what).to_numpy(), "rater": id_column(table, rater, what).to_numpy()})
    if out.duplicated().any():
        raise InvalidInputError(f"{what}: a rater rates a response more than once; keep one rating per (response, rater).")
    codes, categories = pd.factorize(labels, sort=True)
    out["score"] = codes.astype(float)
    return out, np.asarray(categories)


def agreement_ratings(
    ratings: pd.DataFrame,
    level: str = "interval",
    *,
    categories=None,
    response: str = "response",
    rater: str = "rater",
    score: str = "score",
) -> Ratings:
    """Validate long ratings and arrange the units with two or more ratings as a matrix.

    ``categories`` (optional) lists the scale's possible scores in order (e.g. ``range(1, 6)``):
    the ordinal distances and the weights of weighted kappa count positions on that scale, so a
    score nobody gave still occupies its place. Raises :class:`InvalidInputError` for malformed
    tables, :class:`InsufficientDataError` when fewer than two units have two ratings.
    """
    check_level(level)
    if level == "nominal":
        long, found = _nominal_long(ratings, response, rater, score)
    else:
        long = validate_long(ratings, {"response": response, "rater": rater}, score, "ratings")
        found = np.unique(long["score"].to_numpy())
    scale = _scale(found, categories, level)
    if level == "nominal" and categories is not None:
        long["score"] = pd.Index(scale).get_indexer(found[long["score"].astype(int)]).astype(float)
    wide = long.pivot(index="response", columns="rater", values="score")
    per_unit = wide.notna().sum(axis=1).to_numpy()
    kept = wide[per_unit >= 2]
    kept = kept.loc[:, kept.notna().any()]  # raters who only rated single-rated units
    if len(kept) < 2:
        raise InsufficientDataError(
            f"agreement needs units rated twice or more; {len(kept)} of {len(wide)} response(s) have two ratings. "
            "Have a share of the responses scored by a second rater."
        )
    return Ratings(kept.to_numpy(float), kept.index, kept.columns, scale, level, int((per_unit < 2).sum()))


def _scale(found: np.ndarray, categories, level: str) -> np.ndarray:
    if categories is None:
        return found
    scale = np.asarray(list(categories))
    if level != "nominal":
        scale = scale.astype(float)
        if np.any(np.diff(scale) <= 0):
            raise InvalidInputError("categories must be the scale's scores in increasing order, each once.")
    missing = sorted(set(found.tolist()) - set(scale.tolist()))
    if missing:
        raise InvalidInputError(f"score(s) {missing} are not among categories={scale.tolist()}; list every score the scale has, in order (categories=[...]).")
    return scale


def paired_scores(scores_a, scores_b) -> tuple[np.ndarray, np.ndarray]:
    """Two equal-length vectors of labels, pairs with a missing side dropped."""
    a, b = pd.Series(np.asarray(scores_a, dtype=object)), pd.Series(np.asarray(scores_b, dtype=object))
    if a.ndim != 1 or len(a) != len(b):
        raise InvalidInputError(f"scores_a and scores_b must be 1-D and of equal length; got {len(a)} and {len(b)}.")
    both = a.notna() & b.notna()
    if both.sum() < 2:
        raise InsufficientDataError(f"{int(both.sum())} unit(s) have both ratings; kappa needs at least 2.")
    return a[both].to_numpy(), b[both].to_numpy()
