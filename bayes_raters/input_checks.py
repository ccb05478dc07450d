"""Checks for input that is well formed but probably wrong.

Each check either raises :class:`~bayes_raters.errors.InvalidInputError` (the result would be
meaningless) or warns once with :class:`~bayes_raters.errors.InputWarning` (the result is
computable but the input looks like a mistake), naming the rows and what to do. Advice names
Python keywords (``score_range=(low, high)``); the command line rewrites them into its flags.

The outlier rule: with q01 and q99 the 1st and 99th percentiles of the scores and
w = q99 - q01, a score outside [q01 - 3w, q99 + 3w] is a gross outlier. On a 1-6 scale that is
below -14 or above 21; for normal scores it lies 16 SDs out, which no honest rating does.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from bayes_raters.errors import InputWarning, InvalidInputError

_SHOW = 5
OUTLIER_WIDTHS = 3.0  # outliers lie more than this many central 98% widths outside it
MIN_RATINGS_CONSTANT_RATER = 20  # a rater with this many identical ratings is reported
DELIMITERS = {";": "semicolon", "\t": "tab", "|": "vertical bar"}


def fused_header_advice(columns: pd.Index) -> str:
    """If a table has one column whose name holds a delimiter (a file read with the wrong
    separator), the sentence that says so; else ''."""
    if len(columns) != 1:
        return ""
    name = str(columns[0])
    for delimiter, word in DELIMITERS.items():
        if delimiter in name:
            shown = repr(delimiter)
            return (
                f" The table has a single column {name!r}: the file is probably {word}-separated and was "
                f"read with the wrong delimiter; read it with sep={shown}."
            )
    return ""


def warn_gross_outliers(scores: pd.Series, ids: pd.DataFrame, what: str) -> None:
    """Warn (naming the rows) when some scores lie far outside the range of the rest, e.g. a
    rating typed as 1000000 among 1-6 ratings (which made every PRMSE about 0.001)."""
    values = scores.to_numpy(dtype=float)
    if values.size < 10:
        return
    low, high = np.quantile(values, [0.01, 0.99])
    width = high - low
    if width <= 0:
        return
    outside = (values < low - OUTLIER_WIDTHS * width) | (values > high + OUTLIER_WIDTHS * width)
    if outside.any():
        rows = ids.loc[outside].assign(score=values[outside]).head(_SHOW).to_dict(orient="records")
        warnings.warn(
            f"{what}: {outside.sum()} score(s) lie far outside the range of the others (1st-99th "
            f"percentile {low:g} to {high:g}), e.g. {rows}. A typing error ruins every estimate: "
            "fix or drop these rows, or declare the scale with score_range=(low, high) to make it an error.",
            InputWarning,
            stacklevel=4,
        )


def warn_padded_ids(ids: pd.Series, column: str, what: str) -> None:
    """Warn when text ids have leading or trailing blanks ('Team A ' and 'Team A' are two ids)."""
    if pd.api.types.is_numeric_dtype(ids) or pd.api.types.is_bool_dtype(ids):
        return
    distinct = pd.unique(ids.to_numpy())
    text = [value for value in distinct if isinstance(value, str)]
    unique = [value for value in text if value != value.strip()]
    if not unique:
        return
    stripped = {value for value in text if value == value.strip()}
    twins = [value for value in unique if value.strip() in stripped]
    shown = ", ".join(f"{v!r} and {v.strip()!r}" for v in twins[:3])
    clash = f"; {len(twins)} of them also occur without the blanks ({shown}) and count as different ids" if twins else ""
    warnings.warn(
        f"{what}: column {column!r} has {len(unique)} id(s) with leading or trailing blanks, e.g. "
        f"{[str(v) for v in unique[:_SHOW]]}{clash}. Strip them (table[{column!r}].str.strip()) if they are the same.",
        InputWarning,
        stacklevel=4,
    )


def id_type_advice(unmatched: np.ndarray, known: pd.Series) -> str:
    """A sentence for unmatched ids that match once both sides are text (e.g. '3' and 3)."""
    as_text = set(map(str, known))
    typed = [value for value in unmatched[:50] if str(value) in as_text]
    if not typed:
        return ""
    example = typed[0]
    other = next(v for v in known if str(v) == str(example))
    return (
        f" The ids differ in type: {example!r} ({type(example).__name__}) here and {other!r} "
        f"({type(other).__name__}) in the other table are different ids. Give both one type, "
        "e.g. column.astype(str) on both sides."
    )


def require_varying_scores(table: pd.DataFrame, key: str, what: str, min_rows: int) -> None:
    """Raise when one ``key`` (a system or a rater) gives the same score to all of at least
    ``min_rows`` responses while the scores vary overall."""
    grouped = table.groupby(key, sort=False)["score"]
    spread = grouped.agg(["nunique", "size", "first"])
    constant = spread[(spread["nunique"] == 1) & (spread["size"] >= min_rows)]
    if constant.empty:
        return
    cases = "; ".join(f"{name!r}: {row['first']:g} for all {int(row['size'])} responses" for name, row in constant.head(_SHOW).iterrows())
    consequence = (
        "its PRMSE would be <= 0 by construction, since a constant predicts no difference between responses"
        if key == "system"
        else "a rater who never varies carries no information on the true score and is likely a broken export"
    )
    raise InvalidInputError(
        f"{what}: {len(constant)} {key}(s) give every response the same score ({cases}): {consequence}. "
        f"Check the export, or drop that {key}'s rows."
    )
