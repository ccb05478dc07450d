r"""Intraclass correlations (Shrout & Fleiss 1979; McGraw & Wong 1996) on any rating design.

The six coefficients are ratios of variance components of the model

.. math:: y_{ij} = \mu + u_i + r_j + e_{ij},\qquad u_i \sim (0, \sigma^2_u),\;
          r_j \sim (0, \sigma^2_r),\; e_{ij} \sim (0, \sigma^2_e)

for unit :math:`i` and rater :math:`j`:

* ICC1 :math:`= \sigma^2_u / (\sigma^2_u + \sigma^2_w)`: one-way, raters random, their
  effects part of the within-unit variance :math:`\sigma^2_w`;
* ICC2 :math:`= \sigma^2_u / (\sigma^2_u + \sigma^2_r + \sigma^2_e)`: absolute agreement, two-way random;
* ICC3 :math:`= \sigma^2_u / (\sigma^2_u + \sigma^2_e)`: consistency, raters fixed;
* ICC1k, ICC2k, ICC3k: the same with the error terms divided by k, the reliability of the
  mean of k ratings.

Variance components are Henderson's method III (expected values of the sums-of-squares
reductions of the fitted additive model), which on a complete (balanced) design equals the
two-way ANOVA estimators that psych::ICC and pingouin use, so the coefficients agree with theirs
to rounding; on an unbalanced design (raters scoring overlapping subsets) it stays unbiased for
each component, whereas pingouin drops every unit with a missing rating. The rater effects come
from the rater x rater reduced normal equations :math:`A\beta = b`,
:math:`A = Z_r^\top M_u Z_r`, with :math:`M_u` the within-unit centring; so a fit is one small
solve (hand-written for that reason: REML, as in lme4 or statsmodels' MixedLM with variance
components, is an iterative fit, and its estimates are not the ANOVA ones psych reports). ``k`` of the k-rater forms is the number of raters on
a complete design and the harmonic mean of the ratings per unit otherwise (the average error
variance of a unit mean is :math:`\sigma^2 \overline{1/c_i}`). Estimates are not truncated at 0.

Classical intervals (F distributions of the mean-square ratios, with Satterthwaite's degrees of
freedom for ICC2) assume a complete design; they are NaN otherwise.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from bayes_raters.agreement.layout import Ratings, agreement_ratings
from bayes_raters.errors import InsufficientDataError

#: Coefficient names as in psych::ICC, with McGraw & Wong's descriptions.
COEFFICIENTS = {
    "ICC1": "single rating, absolute agreement, one-way random",
    "ICC2": "single rating, absolute agreement, two-way random",
    "ICC3": "single rating, consistency, two-way mixed",
    "ICC1k": "mean of k ratings, absolute agreement, one-way random",
    "ICC2k": "mean of k ratings, absolute agreement, two-way random",
    "ICC3k": "mean of k ratings, consistency, two-way mixed",
}


def variance_components(values: np.ndarray) -> dict[str, float]:
    """Henderson-III variance components of a units x raters matrix (NaN = not rated).

    Returns ``unit_oneway`` and ``within`` (one-way model), ``unit``, ``rater`` and ``error``
    (two-way additive model), ``k`` (harmonic mean ratings per unit) and the one-way mean
    squares ``msb``/``msw``, the two-way ``msr``/``msc``/``mse`` and their degrees of freedom
    (equal to the ANOVA mean squares on a complete design).
    """
    seen = ~np.isnan(values)
    y = np.where(seen, values, 0.0)
    c = seen.sum(axis=1).astype(float)
    n_r = seen.sum(axis=0).astype(float)
    n, total = len(c), c.sum()
    unit_mean = y.sum(axis=1) / c
    grand = y.sum() / total
    within = float((np.where(seen, values - unit_mean[:, None], 0.0) ** 2).sum())
    msw = within / (total - n)
    msb = float((c * (unit_mean - grand) ** 2).sum() / (n - 1))
    n0 = (total - (c**2).sum() / total) / (n - 1)
    a = np.diag(n_r) - (seen / c[:, None]).T @ seen
    b = (np.where(seen, values - unit_mean[:, None], 0.0)).sum(axis=0)
    beta = np.linalg.lstsq(a, b, rcond=None)[0]
    rank = np.linalg.matrix_rank(a)
    raters_reduction = float(b @ beta)
    df_e = total - n - rank
    if df_e < 1:
        raise InsufficientDataError(
            "no degrees of freedom are left for the rating error once unit and rater effects are fitted; "
            "two-way ICCs need more units rated by the same raters."
        )
    sse = within - raters_reduction
    error = sse / df_e
    rater_mean = y.sum(axis=0) / n_r
    sse_raters_only = float((np.where(seen, values - rater_mean[None, :], 0.0) ** 2).sum())
    units_reduction = sse_raters_only - sse
    df_units = n + rank - len(n_r)
    return {
        "unit_oneway": (msb - msw) / n0, "within": msw,
        "unit": (units_reduction - df_units * error) / (total - len(n_r)),
        "rater": (raters_reduction - rank * error) / (total - n),
        "error": error, "k": float(n / (1.0 / c).sum()),
        "msb": msb, "msw": msw, "df_b": n - 1.0, "df_w": total - n,
        "msr": units_reduction / df_units, "msc": raters_reduction / rank if rank else np.nan, "mse": error,
        "df_r": float(df_units), "df_c": float(rank), "df_e": float(df_e),
    }


def icc_values(v: dict[str, float]) -> np.ndarray:
    """The six coefficients, in the order of :data:`COEFFICIENTS`, from :func:`variance_components`."""
    k = v["k"]
    u1, u = v["unit_oneway"], v["unit"]
    return np.array([
        u1 / (u1 + v["within"]),
        u / (u + v["rater"] + v["error"]),
        u / (u + v["error"]),
        u1 / (u1 + v["within"] / k),
        u / (u + (v["rater"] + v["error"]) / k),
        u / (u + v["error"] / k),
    ])


def _classical(v: dict[str, float], icc2: float, n: int, k: int, ci_prob: float) -> pd.DataFrame:
    """F tests and intervals of a complete n x k design (Shrout & Fleiss 1979, McGraw & Wong 1996)."""
    q = 1 - (1 - ci_prob) / 2
    f1, df1, df1d = v["msb"] / v["msw"], n - 1, n * (k - 1)
    f3, df3d = v["msr"] / v["mse"], (n - 1) * (k - 1)
    f1_low, f1_up = f1 / stats.f.ppf(q, df1, df1d), f1 * stats.f.ppf(q, df1d, df1)
    f3_low, f3_up = f3 / stats.f.ppf(q, df1, df3d), f3 * stats.f.ppf(q, df3d, df1)
    msr, msc, mse = v["msr"], v["msc"], v["mse"]
    # ICC2: Satterthwaite's degrees of freedom for the denominator's mix of mean squares
    fj = msc / mse
    spread = n * (1 + (k - 1) * icc2) - k * icc2
    dof = (k - 1) * (n - 1) * (k * icc2 * fj + spread) ** 2 / ((n - 1) * k**2 * icc2**2 * fj**2 + spread**2)
    fu, fl = stats.f.ppf(q, n - 1, dof), stats.f.ppf(q, dof, n - 1)
    mix = k * msc + (k * n - k - n) * mse
    low2 = n * (msr - fu * mse) / (fu * mix + n * msr)
    up2 = n * (fl * msr - mse) / (mix + n * fl * msr)
    lower = [(f1_low - 1) / (f1_low + k - 1), low2, (f3_low - 1) / (f3_low + k - 1),
             1 - 1 / f1_low, low2 * k / (1 + low2 * (k - 1)), 1 - 1 / f3_low]
    upper = [(f1_up - 1) / (f1_up + k - 1), up2, (f3_up - 1) / (f3_up + k - 1),
             1 - 1 / f1_up, up2 * k / (1 + up2 * (k - 1)), 1 - 1 / f3_up]
    f = [f1, f3, f3, f1, f3, f3]
    df2 = [df1d, df3d, df3d, df1d, df3d, df3d]
    return pd.DataFrame({
        "lower": lower, "upper": upper, "f": f, "df1": float(df1), "df2": np.asarray(df2, float),
        "p_value": [stats.f.sf(fi, df1, d) for fi, d in zip(f, df2, strict=True)],
    }, index=list(COEFFICIENTS))


def icc_table(data: Ratings, ci_prob: float = 0.9) -> pd.DataFrame:
    """:func:`intraclass_correlation` on validated ratings."""
    v = variance_components(data.values)
    estimate = icc_values(v)
    table = pd.DataFrame({"description": list(COEFFICIENTS.values()), "estimate": estimate}, index=list(COEFFICIENTS))
    if data.complete:
        table = table.join(_classical(v, estimate[1], len(data.units), len(data.raters), ci_prob))
    else:
        table = table.assign(lower=np.nan, upper=np.nan, f=np.nan, df1=np.nan, df2=np.nan, p_value=np.nan)
    table.index.name = "coefficient"
    table.attrs.update({"k": v["k"], "n_units": len(data.units), "n_raters": len(data.raters),
                        "complete": data.complete, "ci_prob": ci_prob,
                        "variance_components": {key: v[key] for key in ("unit_oneway", "within", "unit", "rater", "error")}})
    return table


def intraclass_correlation(
    ratings: pd.DataFrame,
    *,
    ci_prob: float = 0.9,
    response: str = "response",
    rater: str = "rater",
    score: str = "score",
) -> pd.DataFrame:
    """The six intraclass correlations of long numeric ratings, on any design.

    See the module docstring for the model and the estimator. Units with one rating are left
    out. On a complete design (every rater rated every unit) the estimates, F tests and
    intervals equal psych::ICC's; on other designs the estimates use the Henderson-III variance
    components and the classical columns are NaN (use :func:`bayes_raters.agreement.agreement_table`
    for bootstrap and posterior intervals there).

    Parameters
    ----------
    ratings : pandas.DataFrame
        Long ratings, one row per (response, rater), numeric scores.
    ci_prob : float
        Probability of the classical intervals (psych::ICC's default alpha = 0.05 is ``ci_prob=0.95``).
    response, rater, score : str
        Column names in ``ratings``.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``coefficient`` (ICC1, ICC2, ICC3, ICC1k, ICC2k, ICC3k), columns
        ``description, estimate, lower, upper, f, df1, df2, p_value``; ``attrs`` holds ``k``,
        ``n_units``, ``n_raters``, ``complete`` and the variance components.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayes_raters.agreement import intraclass_correlation
    >>> sf = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]
    >>> long = pd.DataFrame([(i, j, s) for i, row in enumerate(sf) for j, s in enumerate(row)],
    ...                     columns=["response", "rater", "score"])
    >>> intraclass_correlation(long)["estimate"].round(2).tolist()
    [0.17, 0.29, 0.71, 0.44, 0.62, 0.91]
    """
    data = agreement_ratings(ratings, "interval", response=response, rater=rater, score=score)
    return icc_table(data, ci_prob)
