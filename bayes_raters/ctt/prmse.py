r"""Closed-form true-score estimators of Haberman (Loukina et al. 2020, Appendix B).

Classical test theory: rating :math:`H_{ij} = T_i + e_{ij}` of response
:math:`i = 1..N` by its :math:`j = 1..c_i`-th rater, errors uncorrelated with common
variance :math:`V_e`; the true score is :math:`T_i = E[H_{ij}]`. With
:math:`\bar H_i` the mean rating of response i, :math:`c_\cdot = \sum_i c_i` and
:math:`\bar H = \sum_i c_i \bar H_i / c_\cdot`:

.. math::

    \hat V_e &= \frac{\sum_i \sum_j (H_{ij} - \bar H_i)^2}{\sum_i (c_i - 1)}
    \quad\text{(pooled within-response variance)}\\
    \hat V_T &= \frac{\sum_i c_i (\bar H_i - \bar H)^2 - (N - 1)\hat V_e}
                      {c_\cdot - \sum_i c_i^2 / c_\cdot}\\
    \widehat{MSE}(T|M) &= \frac{\sum_i c_i (\bar H_i - M_i)^2 - N \hat V_e}{c_\cdot}\\
    \widehat{PRMSE} &= 1 - \widehat{MSE} / \hat V_T

All four are unbiased or ratios of unbiased estimators; they agree with
``rsmtool.utils.prmse`` on the same input. Every estimator here is computed from
per-response sufficient statistics (count, mean, within sum of squares), so the
long-format path never builds a dense response x rater matrix.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bayes_raters.data import (
    TOO_LARGE,
    as_float_vector,
    require_varying_ratings,
    too_large,
    validate_ratings,
    validate_system_scores,
)
from bayes_raters.errors import InputWarning, InsufficientDataError, InvalidInputError, SmallSampleWarning

#: Loukina et al. (2020): consistent PRMSE needs about this many double-scored responses.
RECOMMENDED_DOUBLE_SCORED = 1000


@dataclass(frozen=True)
class _Sums:
    """Sufficient sums of one evaluation set (scalars or arrays, one entry per system)."""

    n: np.ndarray  # responses N
    n_multiple: np.ndarray  # responses with two or more ratings
    c_total: np.ndarray  # total ratings c.
    c2_total: np.ndarray  # sum of c_i^2
    dof: np.ndarray  # sum of (c_i - 1): degrees of freedom for the error variance
    ss_within: np.ndarray  # sum_i sum_j (H_ij - mean_i)^2
    ss_between: np.ndarray  # sum_i c_i (mean_i - grand mean)^2
    ss_system: np.ndarray | None = None  # sum_i c_i (mean_i - M_i)^2
    s_offset: np.ndarray | None = None  # sum_i c_i (M_i - mean_i): the system's offset times c.


def _error_variance(sums: _Sums) -> np.ndarray:
    if np.any(sums.dof == 0):
        raise InsufficientDataError(
            "No response has two or more ratings, so the rater error variance cannot be "
            "estimated. Double-score some responses (ideally 1,000 or more) or pass a known "
            "error_variance."
        )
    return sums.ss_within / sums.dof


def _true_score_variance(sums: _Sums, error_variance: np.ndarray) -> np.ndarray:
    if np.any(sums.n < 2):
        raise InsufficientDataError("The true-score variance needs at least two rated responses.")
    denominator = sums.c_total - sums.c2_total / sums.c_total
    return (sums.ss_between - (sums.n - 1) * error_variance) / denominator


def _mse_true(sums: _Sums, error_variance: np.ndarray) -> np.ndarray:
    return (sums.ss_system - sums.n * error_variance) / sums.c_total


def _checked_error_variance(error_variance: float | None, sums: _Sums) -> np.ndarray:
    if error_variance is None:
        return _error_variance(sums)
    value = float(error_variance)
    if not np.isfinite(value) or value < 0:
        raise InvalidInputError(f"error_variance must be a finite number >= 0, got {error_variance!r}.")
    return np.full(np.shape(sums.n), value)


def _human_matrix(human_scores: object) -> np.ndarray:
    try:
        matrix = np.asarray(human_scores, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"human_scores must be numeric (NaN for a missing rating): {exc}."
        ) from None
    if matrix.ndim != 2:
        raise InvalidInputError(
            f"human_scores must be 2-D (n_responses, n_ratings) with NaN for a missing rating, "
            f"got shape {matrix.shape}."
        )
    if np.isinf(matrix).any():
        raise InvalidInputError("human_scores contains infinite values.")
    if too_large(matrix).any():
        raise InvalidInputError(f"human_scores {TOO_LARGE}.")
    counts = (~np.isnan(matrix)).sum(axis=1)
    unrated = np.flatnonzero(counts == 0)
    if unrated.size:
        raise InvalidInputError(
            f"human_scores: {unrated.size} response(s) have no rating (all NaN), at rows "
            f"{unrated[:5].tolist()}. Drop them: a response nobody rated cannot be evaluated."
        )
    return matrix


def _wide_sums(human_scores: object, system: object | None = None) -> _Sums:
    matrix = _human_matrix(human_scores)
    counts = (~np.isnan(matrix)).sum(axis=1).astype(float)
    means = np.nanmean(matrix, axis=1)
    ss_within = np.nansum((matrix - means[:, None]) ** 2)
    grand = np.sum(counts * means) / counts.sum()
    ss_system = s_offset = None
    if system is not None:
        scores = as_float_vector(system, "system")
        if scores.shape[0] != matrix.shape[0]:
            raise InvalidInputError(
                f"system has {scores.shape[0]} scores but human_scores has {matrix.shape[0]} rows; "
                "they must describe the same responses in the same order."
            )
        ss_system = np.sum(counts * (means - scores) ** 2)
        s_offset = np.sum(counts * (scores - means))
    return _Sums(
        n=np.asarray(matrix.shape[0]),
        n_multiple=np.sum(counts > 1),
        c_total=counts.sum(),
        c2_total=np.sum(counts**2),
        dof=np.sum(counts - 1),
        ss_within=ss_within,
        ss_between=np.sum(counts * (means - grand) ** 2),
        ss_system=ss_system,
        s_offset=s_offset,
    )


def _offset_share(sums: _Sums, mse: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The system's mean offset from the human scores, (sum_i c_i (M_i - mean_i)) / c., and
    the share of its estimated MSE that the squared offset explains."""
    offset = np.atleast_1d(sums.s_offset / sums.c_total)
    mse = np.atleast_1d(mse)
    share = np.where(mse > 0, offset**2 / np.where(mse > 0, mse, 1.0), 0.0)
    return offset, share


def _warn_out_of_range(
    prmse: np.ndarray, sums: _Sums, mse: np.ndarray, labels: list[str], error_variance_given: bool
) -> None:
    """Warn about every PRMSE outside [0, 1] (or not finite), once per cause: a system whose
    scores sit on another scale (PRMSE < 0 and the squared mean offset is at least half its
    MSE, so the offset is at least 0.7 SD of the true score: :class:`InputWarning`), or
    sampling error near a bound (:class:`SmallSampleWarning`; a poor system's PRMSE near 0
    falls just below it even with 10,000 double-scored responses)."""
    prmse, n_multiple = np.atleast_1d(prmse), np.atleast_1d(sums.n_multiple)
    offset, share = _offset_share(sums, mse)
    bad = ~((prmse >= 0) & (prmse <= 1))
    shifted = bad & (prmse < 0) & (share >= 0.5)
    labels = np.asarray(labels)

    def cases(mask):
        return "; ".join(
            f"{label}PRMSE={value:.3f} from {int(m)} double-scored responses"
            for label, value, m in zip(labels[mask], prmse[mask], n_multiple[mask])
        )

    if shifted.any():
        offsets = "; ".join(f"{label}{o:+.3g} ({s:.0%} of its MSE)" for label, o, s in zip(labels[shifted], offset[shifted], share[shifted]))
        warnings.warn(
            f"PRMSE below 0 ({cases(shifted)}) because the system's scores are offset from the human "
            f"scores on average ({offsets}): it is probably on another scale or shifted. PRMSE judges "
            "scores on the human scale; rescale the system's scores (or check the export) first.",
            InputWarning,
            stacklevel=3,
        )
    small = bad & ~shifted
    if not small.any():
        return
    if error_variance_given:
        cause = (
            "check that the error_variance you supplied is on the scale of these ratings; "
            "with few responses the true-score variance estimate is also noisy."
        )
    else:
        cause = (
            "its sampling error exceeds the distance to the bound: the double-scored sample is "
            "too small or too noisy to estimate the rater error variance at this precision "
            f"(Loukina et al. 2020 recommend at least ~{RECOMMENDED_DOUBLE_SCORED} double-scored "
            "responses), or the true value lies close to 0 or 1."
        )
    warnings.warn(f"PRMSE outside [0, 1] ({cases(small)}): {cause}", SmallSampleWarning, stacklevel=3)


def variance_of_errors(human_scores: object) -> float:
    r"""Rater error variance :math:`\hat V_e`: the within-response variances (ddof=1) of
    all responses with two or more ratings, pooled with weights :math:`c_i - 1`.

    ``human_scores`` is an (n_responses, n_ratings) array or DataFrame, NaN for a
    missing rating. Raises :class:`InsufficientDataError` if no response has two ratings.

    Parameters
    ----------
    human_scores : array_like or pandas.DataFrame
        Human ratings, (n_responses, n_ratings), NaN for a missing rating.

    Returns
    -------
    float
        The pooled within-response variance of the ratings.

    Examples
    --------
    >>> import numpy as np
    >>> from bayes_raters.ctt import variance_of_errors
    >>> float(variance_of_errors(np.array([[3, 4], [2, 2], [5, np.nan]])))
    0.25
    """
    return float(_error_variance(_wide_sums(human_scores)))


def true_score_variance(human_scores: object, error_variance: float | None = None) -> float:
    r"""Unbiased true-score variance
    :math:`\hat V_T = [\sum_i c_i(\bar H_i - \bar H)^2 - (N-1)\hat V_e] / (c_\cdot - \sum_i c_i^2/c_\cdot)`.

    ``error_variance`` defaults to :func:`variance_of_errors` of the same scores.

    Parameters
    ----------
    human_scores : array_like or pandas.DataFrame
        Human ratings, (n_responses, n_ratings), NaN for a missing rating.
    error_variance : float, optional
        Rater error variance; default :func:`variance_of_errors` of ``human_scores``.

    Returns
    -------
    float
        The estimated variance of the true scores.

    Examples
    --------
    >>> from bayes_raters.ctt import simulate_dataset, true_score_variance
    >>> data = simulate_dataset(2000, raters_per_category=1, systems_per_category=1, random_seed=0)
    >>> round(true_score_variance(data["rating"].sel(rater=["h_3", "h_4"]).values), 3)
    0.543
    """
    sums = _wide_sums(human_scores)
    return float(_true_score_variance(sums, _checked_error_variance(error_variance, sums)))


def mse_true(system: object, human_scores: object, error_variance: float | None = None) -> float:
    r"""Unbiased mean squared error of system scores against the true score,
    :math:`\widehat{MSE}(T|M) = [\sum_i c_i(\bar H_i - M_i)^2 - N\hat V_e] / c_\cdot`.

    Parameters
    ----------
    system : array_like
        System scores, one per response.
    human_scores : array_like or pandas.DataFrame
        Human ratings, (n_responses, n_ratings), NaN for a missing rating.
    error_variance : float, optional
        Rater error variance; default :func:`variance_of_errors` of ``human_scores``.

    Returns
    -------
    float
        The estimated mean squared error against the true score.

    Examples
    --------
    >>> from bayes_raters.ctt import mse_true, simulate_dataset
    >>> data = simulate_dataset(2000, raters_per_category=1, systems_per_category=1, random_seed=0)
    >>> humans = data["rating"].sel(rater=["h_3", "h_4"]).values
    >>> round(mse_true(data["system_score"].sel(system="sys_4").values, humans), 3)
    0.107
    """
    sums = _wide_sums(human_scores, system)
    return float(_mse_true(sums, _checked_error_variance(error_variance, sums)))


def prmse_true(system: object, human_scores: object, error_variance: float | None = None) -> float:
    r"""Proportional reduction in mean squared error against the true score,
    :math:`\widehat{PRMSE} = 1 - \widehat{MSE}(T|M) / \hat V_T`.

    Warns with :class:`SmallSampleWarning` (and still returns the value) when the
    estimate falls outside [0, 1], which happens when too few responses are double-scored.

    Parameters
    ----------
    system : array_like
        System scores, one per response.
    human_scores : array_like or pandas.DataFrame
        Human ratings, (n_responses, n_ratings), NaN for a missing rating.
    error_variance : float, optional
        Rater error variance; default :func:`variance_of_errors` of ``human_scores``.

    Returns
    -------
    float
        PRMSE of the system against the true score.

    Examples
    --------
    >>> from bayes_raters.ctt import prmse_true, simulate_dataset
    >>> data = simulate_dataset(2000, raters_per_category=1, systems_per_category=1, random_seed=0)
    >>> humans = data["rating"].sel(rater=["h_3", "h_4"]).values
    >>> round(prmse_true(data["system_score"].sel(system="sys_4").values, humans), 3)
    0.804
    """
    sums = _wide_sums(human_scores, system)
    variance = _checked_error_variance(error_variance, sums)
    mse = _mse_true(sums, variance)
    value = float(1 - mse / _true_score_variance(sums, variance))
    _warn_out_of_range(np.asarray(value), sums, mse, [""], error_variance is not None)
    return value


def _per_response(ratings: pd.DataFrame) -> pd.DataFrame:
    """Per-response count, mean and within sum of squares of validated long ratings."""
    grouped = ratings.groupby("response", sort=False)["score"]
    stats = grouped.agg(count="count", mean="mean", var="var")
    stats["ss_within"] = (stats["var"] * (stats["count"] - 1)).fillna(0.0)
    return stats.drop(columns="var")


@contextlib.contextmanager
def _exact_id_match():
    """Joins on response ids with integers on one side and fractional numbers on the other (e.g.
    4 and 4.5): pandas matches them exactly (4 == 4.0) and warns that 4.5 has no integer twin,
    which is the intended result, so that warning is silenced here (found by the fuzzer)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="You are merging on int and float columns")
        yield


def _system_sums(ratings: pd.DataFrame, systems: pd.DataFrame) -> tuple[_Sums, pd.DataFrame]:
    """Sufficient sums per system, each over the responses that system scored."""
    with _exact_id_match():
        joined = systems.join(_per_response(ratings), on="response", how="inner")
        raters = ratings.merge(systems[["response", "system"]], on="response").groupby("system")["rater"].nunique()
    c = joined["count"].astype(float)
    grand = (c * joined["mean"]).groupby(joined["system"]).transform("sum") / c.groupby(
        joined["system"]
    ).transform("sum")
    parts = pd.DataFrame(
        {
            "system": joined["system"],
            "n": 1.0,
            "n_multiple": (c > 1).astype(float),
            "c_total": c,
            "c2_total": c**2,
            "dof": c - 1,
            "ss_within": joined["ss_within"],
            "ss_between": c * (joined["mean"] - grand) ** 2,
            "ss_system": c * (joined["mean"] - joined["score"]) ** 2,
            "s_offset": c * (joined["score"] - joined["mean"]),
        }
    )
    totals = parts.groupby("system", sort=False).sum()  # systems in order of first appearance
    sums = _Sums(**{field: totals[field].to_numpy() for field in _Sums.__dataclass_fields__})
    counts = pd.DataFrame(
        {
            "n": totals["n"].astype(int),
            "n_raters": raters.reindex(totals.index),
            "n_single": (totals["n"] - totals["n_multiple"]).astype(int),
            "n_multiple": totals["n_multiple"].astype(int),
        }
    )
    return sums, counts


def prmse_table(
    ratings: pd.DataFrame,
    system_scores: pd.DataFrame,
    *,
    error_variance: float | None = None,
    score_range: tuple[float, float] | None = None,
    response: str = "response",
    rater: str = "rater",
    system: str = "system",
    score: str = "score",
) -> pd.DataFrame:
    """Closed-form PRMSE of many systems at once, from long-format tables.

    ``ratings`` has one row per (response, rater) and ``system_scores`` one row per
    (response, system); both share the ``response`` and ``score`` column names.
    Each system is evaluated on the responses it scored, exactly as
    :func:`prmse_true` on those rows (so the error variance is estimated from that
    system's responses unless ``error_variance`` is given).

    Returns a DataFrame indexed by ``system`` with columns ``n`` (responses),
    ``n_raters``, ``n_single``, ``n_multiple`` (responses with one / several ratings),
    ``error_variance``, ``true_score_variance``, ``mse_true`` and ``prmse``.

    Parameters
    ----------
    ratings : pandas.DataFrame
        Long human ratings, one row per (response, rater).
    system_scores : pandas.DataFrame
        Long system scores, one row per (response, system).
    error_variance : float, optional
        Rater error variance to use for every system; default estimated per system.
    score_range : tuple of float, optional
        The scale's lowest and highest score; ratings outside it raise.
    response, rater, system, score : str
        Column names in the two tables.

    Returns
    -------
    pandas.DataFrame
        One row per system, the columns above.
    """
    ratings = validate_ratings(ratings, response=response, rater=rater, score=score, score_range=score_range)
    systems = validate_system_scores(
        system_scores, ratings=ratings, response=response, system=system, score=score
    )
    require_varying_ratings(ratings, systems)
    sums, table = _system_sums(ratings, systems)
    if error_variance is None and np.any(sums.dof == 0):
        names = table.index[sums.dof == 0].tolist()
        raise InsufficientDataError(
            f"System(s) {names} were scored only on responses with a single rating, so the "
            "rater error variance cannot be estimated for them. Double-score some of their "
            "responses (ideally 1,000 or more) or pass a known error_variance."
        )
    variance = _checked_error_variance(error_variance, sums)
    table["error_variance"] = variance
    table["true_score_variance"] = _true_score_variance(sums, variance)
    table["mse_true"] = _mse_true(sums, variance)
    table["prmse"] = 1 - table["mse_true"] / table["true_score_variance"]
    table.index.name = "system"
    labels = [f"system {name!r}: " for name in table.index]
    _warn_out_of_range(table["prmse"].to_numpy(), sums, table["mse_true"].to_numpy(), labels, error_variance is not None)
    return table
