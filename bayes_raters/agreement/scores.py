r"""Classical agreement metrics between system scores M and human scores H.

These are the metrics whose dependence on rater quality motivates PRMSE
(Loukina et al. 2020, Section 4). All take equal-length 1-D arrays of finite numbers;
moments are population moments (ddof=0) unless a docstring says otherwise.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from bayes_raters.data import as_float_vector
from bayes_raters.errors import InvalidInputError


def _pair(system: object, human: object, names: tuple[str, str] = ("system", "human")):
    m = as_float_vector(system, names[0])
    h = as_float_vector(human, names[1])
    if m.shape != h.shape:
        raise InvalidInputError(
            f"{names[0]} and {names[1]} must have the same length, got {m.size} and {h.size}."
        )
    if m.size < 2:
        raise InvalidInputError(f"agreement metrics need at least 2 responses, got {m.size}.")
    return m, h


def _require_variance(values: np.ndarray, name: str) -> None:
    if np.ptp(values) == 0:
        raise InvalidInputError(f"{name} is constant; the metric is undefined without variance.")


def pearson_r(system: object, human: object) -> float:
    """Pearson correlation between system and human scores (``scipy.stats.pearsonr``).

    Parameters
    ----------
    system, human : array_like
        Scores of the system and of a human on the same responses.

    Returns
    -------
    float
        The correlation coefficient.

    Examples
    --------
    >>> from bayes_raters.agreement import pearson_r
    >>> round(pearson_r([1, 2, 3, 4], [1, 2, 4, 4]), 3)
    0.947
    """
    m, h = _pair(system, human)
    _require_variance(m, "system")
    _require_variance(h, "human")
    return float(stats.pearsonr(m, h).statistic)


def quadratic_weighted_kappa(system: object, human: object) -> float:
    r"""Quadratic weighted kappa, for discrete or continuous scores (Haberman's form):

    .. math:: \kappa_2 = \frac{2\,\mathrm{Cov}(M, H)}{\mathrm{Var}(H) + \mathrm{Var}(M) + (\bar M - \bar H)^2}

    with population moments. For integer scores this equals Cohen's kappa with
    quadratic weights computed from the confusion matrix.

    Parameters
    ----------
    system, human : array_like
        Scores of the system and of a human on the same responses (integer or continuous).

    Returns
    -------
    float
        Quadratic weighted kappa, 1 for identical scores.

    Examples
    --------
    >>> from bayes_raters.agreement import quadratic_weighted_kappa
    >>> round(quadratic_weighted_kappa([1, 2, 3, 4], [1, 2, 4, 4]), 3)
    0.917
    """
    m, h = _pair(system, human)
    covariance = np.mean((m - m.mean()) * (h - h.mean()))
    denominator = h.var() + m.var() + (m.mean() - h.mean()) ** 2
    if denominator == 0:
        raise InvalidInputError("QWK is undefined when both score vectors are the same constant.")
    return float(2 * covariance / denominator)


def r2_score(system: object, human: object) -> float:
    r""":math:`R^2 = 1 - \sum_i (H_i - M_i)^2 / \sum_i (H_i - \bar H)^2`, the human score as
    the observed value and the system score as the prediction.

    Parameters
    ----------
    system, human : array_like
        Scores of the system (the prediction) and of a human (the observed value).

    Returns
    -------
    float
        :math:`R^2`; negative when the system predicts worse than the human mean.

    Examples
    --------
    >>> from bayes_raters.agreement import r2_score
    >>> round(r2_score([1, 2, 3, 4], [1, 2, 4, 4]), 3)
    0.852
    """
    m, h = _pair(system, human)
    _require_variance(h, "human")
    return float(1 - np.sum((h - m) ** 2) / np.sum((h - h.mean()) ** 2))


def degradation(system: object, human_1: object, human_2: object, *, reference: str = "first") -> float:
    r"""Degradation: :math:`r(M, H_\mathrm{ref}) - r(H_1, H_2)`.

    ``reference`` is ``"first"`` (:math:`H_1`) or ``"mean"`` (:math:`(H_1 + H_2)/2`).
    The sign follows RSMTool and the values Loukina et al. (2020) report (-0.05 to
    -0.30): negative when the system agrees with humans less than humans agree with
    each other.

    Parameters
    ----------
    system, human_1, human_2 : array_like
        Scores of the system and of the two human raters on the same responses.
    reference : {"first", "mean"}
        The human score the system is correlated with.

    Returns
    -------
    float
        The degradation; negative when humans agree with each other more than with the system.

    Examples
    --------
    >>> from bayes_raters.agreement import degradation
    >>> round(degradation([1, 2, 3, 4], [1, 2, 4, 4], [1, 3, 3, 4]), 3)
    0.108
    """
    h1, h2 = _pair(human_1, human_2, ("human_1", "human_2"))
    if reference == "first":
        ref = h1
    elif reference == "mean":
        ref = (h1 + h2) / 2
    else:
        raise InvalidInputError(f"reference must be 'first' or 'mean', got {reference!r}.")
    return pearson_r(system, ref) - pearson_r(h1, h2)


def standardized_mean_difference(system: object, human: object, *, method: str = "unpooled") -> float:
    r"""Standardized mean difference :math:`(\bar M - \bar H) / s`.

    ``method="unpooled"``: :math:`s` is the human SD; ``"pooled"``:
    :math:`s = \sqrt{(s_H^2 + s_M^2)/2}`. Sample SDs (ddof=1), as in RSMTool.

    Parameters
    ----------
    system, human : array_like
        Scores of the system and of a human on the same responses.
    method : {"unpooled", "pooled"}
        The standard deviation in the denominator.

    Returns
    -------
    float
        The difference of means in standard deviations; positive when the system scores higher.

    Examples
    --------
    >>> from bayes_raters.agreement import standardized_mean_difference
    >>> round(standardized_mean_difference([1, 2, 3, 4], [1, 2, 4, 4]), 3)
    -0.167
    """
    m, h = _pair(system, human)
    if method == "unpooled":
        scale = h.std(ddof=1)
    elif method == "pooled":
        scale = np.sqrt((h.var(ddof=1) + m.var(ddof=1)) / 2)
    else:
        raise InvalidInputError(f"method must be 'unpooled' or 'pooled', got {method!r}.")
    if scale == 0:
        raise InvalidInputError("standardized mean difference is undefined: zero standard deviation.")
    return float((m.mean() - h.mean()) / scale)


def _long_numeric(table, columns: dict[str, str], what: str):
    from bayes_raters.data import id_column, numeric_scores, require_columns, require_frame

    table = require_frame(table, what)
    require_columns(table, columns, what)
    import pandas as pd

    out = pd.DataFrame({role: id_column(table, name, what).to_numpy() for role, name in columns.items() if role != "score"})
    out["score"] = numeric_scores(table, columns["score"], what).to_numpy()
    return out


def kendalls_w(table, *, rater: str = "evaluator", item: str = "system", score: str = "score") -> float:
    """Kendall's coefficient of concordance W of m raters ranking n objects, with the
    correction for ties:

        W = 12 S / (m^2 (n^3 - n) - m sum_raters sum_ties (t^3 - t)),
        S = sum_objects (R_j - m (n + 1) / 2)^2,

    where R_j is the sum of the ranks (scipy.stats.rankdata, average ties) of object j.
    ``table`` is long (rater, item, score); repeated (rater, item) rows are averaged; every
    rater must score every object."""
    long = _long_numeric(table, {"rater": rater, "item": item, "score": score}, "Kendall's W input")
    wide = long.pivot_table(index="rater", columns="item", values="score", aggfunc="mean")
    if wide.isna().any().any():
        raise InvalidInputError(
            f"Kendall's W needs every rater to score every {item}; {int(wide.isna().sum().sum())} "
            "(rater, object) cells are empty. Restrict to a complete block."
        )
    m, n = wide.shape
    if m < 2 or n < 2:
        raise InvalidInputError(f"Kendall's W needs at least 2 raters and 2 objects, got {m} and {n}.")
    ranks = np.apply_along_axis(stats.rankdata, 1, wide.to_numpy())
    s = float(((ranks.sum(axis=0) - m * (n + 1) / 2) ** 2).sum())
    ties = sum(float((counts**3 - counts).sum()) for counts in (np.unique(row, return_counts=True)[1] for row in wide.to_numpy()))
    return 12 * s / (m**2 * (n**3 - n) - m * ties)


def eta_squared(table, *, group: str = "system", score: str = "score") -> dict[str, float]:
    """Proportion of the variance of ``score`` explained by ``group`` in a one-way ANOVA:
    eta^2 = SS_between / SS_total, with F and its p-value from scipy.stats.f_oneway."""
    long = _long_numeric(table, {"group": group, "score": score}, "eta-squared input")
    groups = [g.to_numpy() for _, g in long.groupby("group")["score"]]
    if len(groups) < 2:
        raise InvalidInputError(f"eta-squared needs at least two {group} groups, got {len(groups)}.")
    grand = long["score"].mean()
    between = sum(len(g) * (g.mean() - grand) ** 2 for g in groups)
    total = float(((long["score"] - grand) ** 2).sum())
    if total == 0:
        raise InvalidInputError("every score is equal: eta-squared is undefined.")
    f = stats.f_oneway(*groups)
    return {"eta_squared": between / total, "F": float(f.statistic), "p_value": float(f.pvalue)}
