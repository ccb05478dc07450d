"""Long-format rating tables: validation and conversion.

Every model family reads long tables, one row per observation; a missing rating is
an absent row, never a NaN cell in a dense matrix. This module turns user tables
into validated frames with canonical column names:

* ratings: ``response, rater, score``
* system scores: ``response, system, score``

Column names in the user's table are arguments; the returned frame always uses
the canonical names. Validation raises :class:`~bayes_raters.errors.InvalidInputError`
with a message that names the column, shows offending rows and says what to fix.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from bayes_raters.errors import InvalidInputError
from bayes_raters.input_checks import (
    MIN_RATINGS_CONSTANT_RATER,
    fused_header_advice,
    id_type_advice,
    require_varying_scores,
    warn_gross_outliers,
    warn_padded_ids,
)

_SHOW = 5  # offending rows quoted in an error message


def require_frame(table: object, what: str) -> pd.DataFrame:
    """``table`` if it is a DataFrame; else an InvalidInputError naming ``what`` and the long format."""
    if not isinstance(table, pd.DataFrame):
        raise InvalidInputError(
            f"{what} must be a pandas DataFrame in long format, got {type(table).__name__}."
        )
    return table


def require_columns(table: pd.DataFrame, columns: dict[str, str], what: str, renamable: bool = True) -> None:
    """``columns`` maps canonical role -> the user's column name. ``renamable``: the roles
    are keyword arguments of the caller (advice names them); else the names are fixed."""
    absent = {role: name for role, name in columns.items() if name not in table.columns}
    if absent:
        listed = ", ".join(f"{name!r} ({role})" for role, name in absent.items())
        if renamable:
            fix = f"Rename the columns or pass the names you use ({', '.join(f'{role}=...' for role in absent)})."
        else:
            fix = (
                f"These column names are fixed: rename yours, e.g. table.rename(columns={{'your_name': {next(iter(absent.values()))!r}}})."
            )
        raise InvalidInputError(
            f"{what} is missing column(s) {listed}; it has {list(table.columns)}. {fix}"
            f"{fused_header_advice(table.columns)}"
        )


def quote_rows(table: pd.DataFrame, mask: np.ndarray | pd.Series) -> str:
    """The first rows of ``table`` where ``mask`` holds, as text for an error message (and how many more)."""
    rows = table.loc[np.asarray(mask)]
    shown = rows.head(_SHOW).to_dict(orient="records")
    more = f" and {len(rows) - _SHOW} more" if len(rows) > _SHOW else ""
    return f"{shown}{more}"


def _as_numbers(values: pd.Series, booleans: bool) -> pd.Series | None:
    """``values`` as numbers if every non-missing entry is one: numbers, numeric text ("3.0"),
    and with ``booleans`` True/False and 'true'/'false' (any case) as 1/0; else None."""
    if pd.api.types.is_bool_dtype(values):
        return values.astype(float) if booleans else None
    if pd.api.types.is_numeric_dtype(values):
        return values
    if booleans:
        words = values.map(lambda v: {"true": 1.0, "false": 0.0}.get(v.strip().lower(), v) if isinstance(v, str) else v)
        values = words.map(lambda v: float(v) if isinstance(v, (bool, np.bool_)) else v)
    coerced = pd.to_numeric(values.map(lambda v: v.strip() if isinstance(v, str) else v), errors="coerce")
    if (coerced.isna() & values.notna()).any() or values.map(lambda v: isinstance(v, (bool, np.bool_))).any():
        return None
    return coerced


#: Largest score magnitude accepted: squares stay below 1e200, so sums of squares over any
#: realistic number of rows cannot overflow float64 (a fuzzed 4.8e155 gave PRMSE -inf).
MAX_ABS_SCORE = 1e100
TOO_LARGE = (f"has score(s) beyond +-{MAX_ABS_SCORE:g}, where sums of squared scores overflow "
             "(such a value is a typo or a wrong unit)")


def too_large(values: np.ndarray) -> np.ndarray:
    """Mask of ``|values| > MAX_ABS_SCORE`` (NaN is not flagged): the check every score
    input path shares, long tables and arrays alike."""
    with np.errstate(invalid="ignore"):
        return np.abs(values) > MAX_ABS_SCORE


def numeric_scores(table: pd.DataFrame, column: str, what: str, booleans: bool = False) -> pd.Series:
    """The numeric values of ``column`` (``booleans``: True/False as 1/0); an error quoting the rows that are not."""
    values = table[column]
    numbers = _as_numbers(values, booleans)
    if numbers is None:
        coerced = pd.to_numeric(values, errors="coerce")
        bad = coerced.isna() & values.notna()
        if pd.api.types.is_bool_dtype(values) or not bad.any():
            bad = values.notna()
        raise InvalidInputError(
            f"{what}: column {column!r} must hold numbers, but it has dtype {values.dtype}; "
            f"non-numeric rows: {quote_rows(table, bad)}. Convert or drop these rows."
        )
    values = numbers
    scores = values.astype(float)
    missing = scores.isna().to_numpy()
    if missing.any():
        raise InvalidInputError(
            f"{what}: column {column!r} has {missing.sum()} missing (NaN) score(s), e.g. "
            f"{quote_rows(table, missing)}. A missing rating is an absent row: drop these rows."
        )
    infinite = ~np.isfinite(scores.to_numpy())
    if infinite.any():
        raise InvalidInputError(
            f"{what}: column {column!r} has infinite score(s): {quote_rows(table, infinite)}."
        )
    huge = too_large(scores.to_numpy())
    if huge.any():
        raise InvalidInputError(f"{what}: column {column!r} {TOO_LARGE}: {quote_rows(table, huge)}. Fix or drop these rows.")
    return scores


def id_column(table: pd.DataFrame, column: str, what: str) -> pd.Series:
    """The ids of ``column`` as strings; an error quoting the rows where an id is missing."""
    ids = table[column]
    missing = ids.isna().to_numpy()
    if missing.any():
        raise InvalidInputError(
            f"{what}: column {column!r} has {missing.sum()} missing id(s), e.g. "
            f"{quote_rows(table, missing)}. Every row needs an id."
        )
    warn_padded_ids(ids, column, what)
    return ids


def _no_duplicates(table: pd.DataFrame, keys: list[str], what: str) -> None:
    duplicated = table.duplicated(subset=keys, keep=False).to_numpy()
    if duplicated.any():
        raise InvalidInputError(
            f"{what}: {duplicated.sum()} rows repeat a ({', '.join(keys)}) pair, e.g. "
            f"{quote_rows(table, duplicated)}. Keep one row per pair."
        )


def check_score_range(scores: pd.Series, score_range: tuple[float, float] | None, what: str) -> None:
    """Raise if any score lies outside the declared closed interval ``score_range``."""
    if score_range is None:
        return
    low, high = score_range
    if not low < high:
        raise InvalidInputError(f"score_range must be (low, high) with low < high, got {score_range}.")
    outside = ((scores < low) | (scores > high)).to_numpy()
    if outside.any():
        raise InvalidInputError(
            f"{what}: {outside.sum()} score(s) lie outside the declared scale [{low}, {high}], "
            f"e.g. {scores[outside].head(_SHOW).tolist()}. Fix the scores or the declared score_range."
        )


def validate_long(
    table: pd.DataFrame, ids: dict[str, str], score: str, what: str, score_role: str = "score", booleans: bool = False
) -> pd.DataFrame:
    """Validate a long table keyed by the id columns ``ids`` (canonical role -> user's
    column name) with one numeric ``score`` per key; returns canonical columns. ``score_role``
    is the caller's keyword for the score column, named in the advice of a missing-column error.
    Numeric text ("3.0") is read as numbers; ``booleans`` also reads True/False and
    'true'/'false' as 1/0. Text ids with surrounding blanks are warned about (InputWarning).

    Raises :class:`InvalidInputError` for a non-frame, missing columns, no rows, missing
    ids, non-numeric, NaN or infinite scores, and repeated keys. Every long-format input
    of the package (ratings, system scores, comparisons, IRT responses) goes through here.
    """
    table = require_frame(table, what)
    require_columns(table, {**ids, score_role: score}, what)
    if table.empty:
        raise InvalidInputError(f"{what}: the table has no rows.")
    out = pd.DataFrame({role: id_column(table, column, what).to_numpy() for role, column in ids.items()})
    out["score"] = numeric_scores(table, score, what, booleans).to_numpy()
    _no_duplicates(out, list(ids), what)
    return out


def require_varying_ratings(rated: pd.DataFrame, systems: pd.DataFrame | None = None) -> None:
    """Raise when every human rating is the same (no true-score or error variance exists to
    estimate; the closed form would return PRMSE = -inf), when one rater gives the same score
    to 20 or more responses, or when a system gives the same score to every response it scored."""
    if rated["score"].nunique() < 2:
        raise InvalidInputError(
            f"every human rating is {rated['score'].iloc[0]}: with constant scores there is no "
            "true-score or error variance to estimate."
        )
    require_varying_scores(rated, "rater", "ratings", MIN_RATINGS_CONSTANT_RATER)
    if systems is not None:
        require_varying_scores(systems, "system", "system scores", 2)


def validate_ratings(
    ratings: pd.DataFrame,
    *,
    response: str = "response",
    rater: str = "rater",
    score: str = "score",
    score_range: tuple[float, float] | None = None,
) -> pd.DataFrame:
    """Validate a long table of human ratings, one row per (response, rater).

    Returns a new frame with columns ``response, rater, score`` (score as float64).
    Raises :class:`InvalidInputError` for missing columns, missing ids, non-numeric,
    NaN or infinite scores, repeated (response, rater) pairs, and scores outside
    ``score_range`` when one is declared.

    Parameters
    ----------
    ratings : pandas.DataFrame
        Long ratings, one row per (response, rater).
    response, rater, score : str
        Names of the response id, rater id and score columns in ``ratings``.
    score_range : tuple of float, optional
        The scale's lowest and highest score; scores outside it raise.

    Returns
    -------
    pandas.DataFrame
        Columns ``response, rater, score``.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayes_raters.data import validate_ratings
    >>> table = pd.DataFrame({"essay": [1, 1, 2], "judge": ["a", "b", "a"], "mark": [3, 4, 2]})
    >>> validate_ratings(table, response="essay", rater="judge", score="mark").columns.tolist()
    ['response', 'rater', 'score']
    """
    out = validate_long(ratings, {"response": response, "rater": rater}, score, "ratings")
    check_score_range(out["score"], score_range, "ratings")
    if score_range is None:
        warn_gross_outliers(out["score"], out[["response", "rater"]], "ratings")
    return out


def validate_system_scores(
    system_scores: pd.DataFrame,
    *,
    ratings: pd.DataFrame | None = None,
    response: str = "response",
    system: str = "system",
    score: str = "score",
) -> pd.DataFrame:
    """Validate a long table of system (machine) scores, one row per (response, system).

    Returns a new frame with columns ``response, system, score``. If validated
    ``ratings`` (canonical columns) are given, every scored response must have at
    least one human rating, otherwise :class:`InvalidInputError` names them.

    Parameters
    ----------
    system_scores : pandas.DataFrame
        Long system scores, one row per (response, system).
    ratings : pandas.DataFrame, optional
        Validated human ratings; every scored response must be among them.
    response, system, score : str
        Names of the response id, system id and score columns in ``system_scores``.

    Returns
    -------
    pandas.DataFrame
        Columns ``response, system, score``.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayes_raters.data import validate_system_scores
    >>> table = pd.DataFrame({"response": [1, 2], "engine": ["e", "e"], "score": [3.2, 2.1]})
    >>> validate_system_scores(table, system="engine").shape
    (2, 3)
    """
    out = validate_long(system_scores, {"response": response, "system": system}, score, "system scores")
    if ratings is not None:
        unrated = ~out["response"].isin(ratings["response"]).to_numpy()
        if unrated.any():
            ids = pd.unique(out.loc[unrated, "response"])
            raise InvalidInputError(
                f"system scores: {len(ids)} response(s) have system scores but no human rating, "
                f"e.g. {ids[:_SHOW].tolist()}. Drop them or add their ratings; PRMSE needs "
                f"at least one human rating per evaluated response.{id_type_advice(ids, ratings['response'])}"
            )
    warn_gross_outliers(out["score"], out[["response", "system"]], "system scores")
    return out


def _numeric_scores_allow_nan(table: pd.DataFrame, column: str, what: str) -> None:
    values = table[column]
    if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
        bad = pd.to_numeric(values, errors="coerce").isna() & values.notna()
        raise InvalidInputError(
            f"{what}: column {column!r} must hold numbers (NaN for a missing rating), but it has "
            f"dtype {values.dtype}; non-numeric rows: {quote_rows(table, bad)}."
        )


def _wide_frame(wide: pd.DataFrame, columns: Sequence[str], response_column: str | None, what: str):
    table = require_frame(wide, what)
    columns = list(columns)
    if not columns:
        raise InvalidInputError(f"{what}: name at least one score column.")
    needed = {f"column {c}": c for c in columns}
    if response_column is not None:
        needed["response id"] = response_column
    require_columns(table, needed, what)
    ids = table[response_column] if response_column is not None else table.index.to_series()
    if ids.duplicated().any():
        raise InvalidInputError(
            f"{what}: response ids repeat, e.g. {ids[ids.duplicated()].head(_SHOW).tolist()}; "
            "a wide table needs one row per response."
        )
    return table, columns, ids.to_numpy()


def wide_to_long(
    wide: pd.DataFrame,
    human_columns: Sequence[str],
    *,
    response_column: str | None = None,
    score_range: tuple[float, float] | None = None,
) -> pd.DataFrame:
    """Convert a wide ratings table (one column per rater, NaN = not rated) to long format.

    The rater id is the column name; the response id is ``response_column`` or the
    row index. Rows where every human column is NaN raise :class:`InvalidInputError`
    (a response nobody rated cannot be evaluated). Returns validated long ratings.

    Parameters
    ----------
    wide : pandas.DataFrame
        One row per response, one column per human rater (NaN where not rated).
    human_columns : sequence of str
        The rater columns; each name becomes a rater id.
    response_column : str, optional
        Column of response ids; default the row index.
    score_range : tuple of float, optional
        The scale's lowest and highest score; scores outside it raise.

    Returns
    -------
    pandas.DataFrame
        Validated long ratings ``response, rater, score``.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayes_raters.data import wide_to_long
    >>> wide = pd.DataFrame({"h1": [3, 2], "h2": [4, None]})
    >>> wide_to_long(wide, ["h1", "h2"], score_range=(1, 6)).to_numpy().tolist()
    [[0, 'h1', 3.0], [0, 'h2', 4.0], [1, 'h1', 2.0]]
    """
    table, columns, ids = _wide_frame(wide, human_columns, response_column, "wide ratings")
    block = table[columns]
    for column in columns:
        _numeric_scores_allow_nan(block, column, "wide ratings")
    values = block.to_numpy(dtype=float)
    unrated = np.isnan(values).all(axis=1)
    if unrated.any():
        raise InvalidInputError(
            f"wide ratings: {unrated.sum()} response(s) have no rating in {columns}, e.g. ids "
            f"{ids[unrated][:_SHOW].tolist()}. Drop them or add their ratings."
        )
    rows, cols = np.nonzero(~np.isnan(values))
    long = pd.DataFrame(
        {"response": ids[rows], "rater": np.asarray(columns, dtype=object)[cols], "score": values[rows, cols]}
    )
    return validate_ratings(long, score_range=score_range)


def wide_systems_to_long(
    wide: pd.DataFrame, system_columns: Sequence[str], *, response_column: str | None = None
) -> pd.DataFrame:
    """Convert system score columns of a wide table to long ``response, system, score``.

    A NaN system score means that system did not score the response; the row is dropped.

    Parameters
    ----------
    wide : pandas.DataFrame
        One row per response, one column per system.
    system_columns : sequence of str
        The columns holding system scores; each name becomes a system id.
    response_column : str, optional
        Column of response ids; default the row index.

    Returns
    -------
    pandas.DataFrame
        Columns ``response, system, score``.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayes_raters.data import wide_systems_to_long
    >>> wide = pd.DataFrame({"id": ["r1", "r2"], "e1": [3.1, None], "e2": [2.9, 4.2]})
    >>> len(wide_systems_to_long(wide, ["e1", "e2"], response_column="id"))
    3
    """
    table, columns, ids = _wide_frame(wide, system_columns, response_column, "wide system scores")
    block = table[columns]
    for column in columns:
        _numeric_scores_allow_nan(block, column, "wide system scores")
    values = block.to_numpy(dtype=float)
    rows, cols = np.nonzero(~np.isnan(values))
    long = pd.DataFrame(
        {"response": ids[rows], "system": np.asarray(columns, dtype=object)[cols], "score": values[rows, cols]}
    )
    return validate_system_scores(long)


def long_to_wide(ratings: pd.DataFrame, *, value: str = "score", columns: str = "rater") -> pd.DataFrame:
    """Convert validated long ratings (or system scores, ``columns="system"``) to a wide
    table indexed by response with one column per rater (system); NaN where absent.

    Parameters
    ----------
    ratings : pandas.DataFrame
        Validated long table (:func:`validate_ratings` or :func:`validate_system_scores`).
    value : str
        Column holding the values of the wide table.
    columns : str
        Column whose ids become the wide table's columns (``"rater"`` or ``"system"``).

    Returns
    -------
    pandas.DataFrame
        One row per response, one column per rater (system).

    Examples
    --------
    >>> import pandas as pd
    >>> from bayes_raters.data import long_to_wide, validate_ratings
    >>> long = validate_ratings(pd.DataFrame({"response": ["r1", "r1", "r2"], "rater": ["h1", "h2", "h1"],
    ...                                       "score": [3, 4, 2]}))
    >>> long_to_wide(long).to_numpy().tolist()
    [[3.0, 4.0], [2.0, nan]]
    """
    require_columns(ratings, {"response": "response", columns: columns, "score": value}, "long table")
    wide = ratings.pivot(index="response", columns=columns, values=value)
    wide.columns.name = None
    return wide


def as_float_vector(values: object, name: str, *, allow_nan: bool = False) -> np.ndarray:
    """Return ``values`` as a 1-D float64 array, or raise :class:`InvalidInputError`."""
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be numeric: {exc}.") from None
    if array.ndim != 1:
        raise InvalidInputError(f"{name} must be one-dimensional, got shape {array.shape}.")
    bad = ~np.isfinite(array) if not allow_nan else np.isinf(array)
    if bad.any():
        raise InvalidInputError(
            f"{name} has {bad.sum()} non-finite value(s) at positions {np.flatnonzero(bad)[:_SHOW].tolist()}."
        )
    huge = too_large(array)
    if huge.any():
        raise InvalidInputError(f"{name} {TOO_LARGE}, at positions {np.flatnonzero(huge)[:_SHOW].tolist()}.")
    return array
