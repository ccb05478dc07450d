"""Validation of pairwise and scalar judgement tables, and HITs (a partial ranking of n
items with scalars) turned into the judgements each method reads.

A HIT answered with scalars y_1..y_n gives n scalar judgements (EASL, DA) and the
C(n, 2) pairwise outcomes (RA, TrueSkill): for i before j in the HIT, "win" when
y_i - y_j > tie_threshold, "loss" when y_j - y_i > tie_threshold, else "tie"
(Sakaguchi & Van Durme 2018, footnote 13).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayes_raters.data import id_column, numeric_scores, quote_rows, require_columns, require_frame
from bayes_raters.errors import InvalidInputError
from bayes_raters.input_checks import id_type_advice
from bayes_raters.pairwise.updates import OUTCOME_CODES


def item_positions(items: pd.Index, ids: pd.Series, column: str, what: str) -> np.ndarray:
    """Integer positions of ``ids`` in the state's item index; unknown ids are an error."""
    positions = items.get_indexer(ids.to_numpy())
    unknown = positions < 0
    if unknown.any():
        shown = pd.unique(ids.to_numpy()[unknown])[:5].tolist()
        raise InvalidInputError(
            f"{what}: column {column!r} names {unknown.sum()} row(s) with item(s) not in the "
            f"state, e.g. {shown}. Build the state with every item id you will judge."
            f"{id_type_advice(np.asarray(shown, dtype=object), pd.Series(items))}"
        )
    return positions.astype(np.int64)


def canonical_columns(table: pd.DataFrame, names: dict[str, str], what: str) -> pd.DataFrame:
    """``table`` with the user's column names (``names``: canonical name -> the user's, as
    passed to the keyword of the same name) renamed to the canonical ones; a named column that
    is missing is an error naming the keyword."""
    table = require_frame(table, what)
    renamed = {user: canonical for canonical, user in names.items() if user != canonical}
    missing = [f"{canonical}={user!r}" for user, canonical in renamed.items() if user not in table.columns]
    if missing:
        raise InvalidInputError(f"{what} has no column named by {', '.join(missing)}; it has {list(table.columns)}.")
    return table.drop(columns=[c for c in renamed.values() if c in table.columns]).rename(columns=renamed)


def pair_ids(table: pd.DataFrame, column: str, what: str) -> tuple[pd.Series, pd.Series]:
    """The ``item_a`` and ``item_b`` ids of a pair table with a ``column`` of judgements,
    checked present and different within each row."""
    table = require_frame(table, what)
    require_columns(table, {"item_a": "item_a", "item_b": "item_b", column: column}, what, renamable=False)
    first, second = id_column(table, "item_a", what), id_column(table, "item_b", what)
    same = first.to_numpy() == second.to_numpy()
    if same.any():
        raise InvalidInputError(
            f"{what}: {same.sum()} row(s) compare an item with itself, e.g. "
            f"{quote_rows(table, same)}. Drop these rows."
        )
    return first, second


#: Column names that usually hold the number of identical judgements a row stands for.
COUNT_NAMES = ("n", "count", "counts", "freq", "frequency", "weight", "weights", "times", "n_comparisons")


def reject_count_column(table: pd.DataFrame, what: str, advice: str) -> None:
    """Raise when the table has a count-like numeric column (name in :data:`COUNT_NAMES`, a
    value other than 1) that would be ignored: aggregated data such as R's BradleyTerry2
    tables were read as one judgement per row (12 comparisons instead of 3,727)."""
    for column in table.columns:
        values = table[column]
        if str(column).lower() in COUNT_NAMES and pd.api.types.is_numeric_dtype(values) and (values != 1).any():
            raise InvalidInputError(
                f"{what}: column {column!r} looks like the number of identical judgements each row stands for "
                f"({values.min():g} to {values.max():g}, {values.sum():g} in all over {len(table)} rows), but each "
                f"row would be read as one judgement. {advice.format(column=column)}"
            )


def expand_counts(table: pd.DataFrame, count: str, what: str) -> pd.DataFrame:
    """Repeat each row of ``table`` as many times as its ``count`` column says (whole numbers
    >= 0), so that aggregated judgements become one row per judgement."""
    require_columns(table, {"count": count}, what)
    counts = numeric_scores(table, count, what).to_numpy()
    bad = (counts < 0) | (counts != np.round(counts))
    if bad.any():
        raise InvalidInputError(
            f"{what}: the count column {count!r} must hold whole numbers >= 0; bad rows: {quote_rows(table, bad)}."
        )
    return table.loc[table.index.repeat(counts.astype(np.int64))].drop(columns=count).reset_index(drop=True)


def outcome_labels(table: pd.DataFrame, what: str) -> pd.Series:
    """The ``outcome`` column, checked to hold only "win", "tie" or "loss"."""
    bad = ~table["outcome"].isin(list(OUTCOME_CODES)).to_numpy()
    if bad.any():
        raise InvalidInputError(
            f"{what}: column 'outcome' must be one of {sorted(OUTCOME_CODES)} (seen from item_a); "
            f"bad rows: {quote_rows(table, bad)}."
        )
    return table["outcome"]


def validate_pairs(table: pd.DataFrame, items: pd.Index, what: str = "comparisons") -> dict[str, np.ndarray]:
    """Columns ``item_a, item_b, outcome`` (outcome in {"win", "tie", "loss"} from item_a)
    -> integer positions and outcome codes, in row order. A count column is refused: online
    updates read one judgement per row, in order."""
    first_ids, second_ids = pair_ids(table, "outcome", what)
    reject_count_column(
        table, what, "Online methods read one judgement per row, in order: repeat the rows first, e.g. "
        "table.loc[table.index.repeat(table[{column!r}])], or drop the column.",
    )
    outcome = outcome_labels(table, what).map(OUTCOME_CODES)
    return {
        "first": item_positions(items, first_ids, "item_a", what),
        "second": item_positions(items, second_ids, "item_b", what),
        "outcome": outcome.to_numpy(np.int64),
    }


def unit_values(table: pd.DataFrame, what: str) -> np.ndarray:
    """The ``value`` column of a scalar-judgement table (columns ``item, value``), checked
    to be numbers in [0, 1]."""
    table = require_frame(table, what)
    require_columns(table, {"item": "item", "value": "value"}, what, renamable=False)
    value = numeric_scores(table, "value", what).to_numpy()
    outside = (value < 0.0) | (value > 1.0)
    if outside.any():
        raise InvalidInputError(
            f"{what}: {outside.sum()} value(s) lie outside [0, 1], e.g. {quote_rows(table, outside)}. "
            "Rescale slider values to [0, 1] (e.g. divide a 0-100 slider by 100)."
        )
    return value


def validate_scalars(table: pd.DataFrame, items: pd.Index, what: str = "scalar judgements") -> dict[str, np.ndarray]:
    """Columns ``item, value`` with value in [0, 1] -> integer positions and values."""
    value = unit_values(table, what)
    return {"index": item_positions(items, id_column(table, "item", what), "item", what), "value": value}


def validate_hits(hits: pd.DataFrame, what: str = "HITs") -> pd.DataFrame:
    """Columns ``hit, item, value``: each HIT a set of distinct items with scalars in [0, 1]."""
    hits = require_frame(hits, what)
    require_columns(hits, {"hit": "hit", "item": "item", "value": "value"}, what, renamable=False)
    out = pd.DataFrame({"hit": id_column(hits, "hit", what).to_numpy(), "item": id_column(hits, "item", what).to_numpy()})
    out["value"] = unit_values(hits, what)
    repeated = out.duplicated(["hit", "item"], keep=False).to_numpy()
    if repeated.any():
        raise InvalidInputError(
            f"{what}: a HIT shows each item once, but {repeated.sum()} rows repeat an item within "
            f"a HIT, e.g. {quote_rows(out, repeated)}."
        )
    return out


def hits_to_pairs(hits: pd.DataFrame, tie_threshold: float = 0.0) -> pd.DataFrame:
    """The C(n, 2) pairwise outcomes of each HIT (columns ``hit, item_a, item_b, outcome``),
    item_a being the earlier row of the HIT; differences of at most ``tie_threshold`` are ties.

    Parameters
    ----------
    hits : pandas.DataFrame
        Scalar judgements ``hit, item, value``, several items per HIT.
    tie_threshold : float
        Largest difference read as a tie.

    Returns
    -------
    pandas.DataFrame
        Columns ``hit, item_a, item_b, outcome``.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayes_raters.pairwise import hits_to_pairs
    >>> hits = pd.DataFrame({"hit": [0, 0, 0], "item": ["x", "y", "z"], "value": [0.2, 0.7, 0.7]})
    >>> hits_to_pairs(hits)[["item_a", "item_b", "outcome"]].values.tolist()
    [['x', 'y', 'loss'], ['x', 'z', 'loss'], ['y', 'z', 'tie']]
    """
    if tie_threshold < 0:
        raise InvalidInputError(f"tie_threshold must be >= 0, got {tie_threshold}.")
    hits = validate_hits(hits)
    hits["position"] = hits.groupby("hit", sort=False).cumcount()
    pairs = hits.merge(hits, on="hit", suffixes=("_a", "_b"))
    pairs = pairs[pairs["position_a"] < pairs["position_b"]].reset_index(drop=True)
    pairs["difference"] = pairs["value_a"] - pairs["value_b"]
    pairs["outcome"] = np.select(
        [pairs["difference"] > tie_threshold, pairs["difference"] < -tie_threshold], ["win", "loss"], "tie"
    )
    return pairs[["hit", "item_a", "item_b", "outcome"]]


def hits_to_scalars(hits: pd.DataFrame) -> pd.DataFrame:
    """The n scalar judgements of each HIT (columns ``hit, item, value``).

    Parameters
    ----------
    hits : pandas.DataFrame
        Scalar judgements ``hit, item, value``, several items per HIT.

    Returns
    -------
    pandas.DataFrame
        Columns ``hit, item, value``.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayes_raters.pairwise import hits_to_scalars
    >>> hits = pd.DataFrame({"hit": [0, 0], "item": ["x", "y"], "value": [0.2, 0.7]})
    >>> hits_to_scalars(hits).shape
    (2, 3)
    """
    return validate_hits(hits)
