r"""Items whose data contradict the positive slope the models force.

Every IRT family here keeps discriminations positive (:math:`a = e^{\log a}`), so the
orientation of the scale cannot flip between runs. An item whose answers fall as the rest of
the test rises (a reverse-keyed Likert item left unrecoded, a miskeyed question) cannot get
its negative slope: its posterior piles up near :math:`a = 0` and nothing in the fit says why.
The evidence is read off the data instead, before any model: the item-rest correlation

.. math::

    r_j = \operatorname{corr}_i\big(x_{ij},\ \bar z_{i,-j}\big), \qquad
    \bar z_{i,-j} = \text{mean over the other items } k \text{ answered by } i \text{ of }
    (x_{ik} - \bar x_k) / s_k,

with :math:`x_{ij}` the 0/1 answer or the ordinal category (standardising puts items with
different numbers of categories on one footing; the mean over answered items handles missing
answers). Under any of the models with :math:`a_j > 0`, :math:`r_j > 0`. An item is flagged
when the data rule out a clearly positive correlation: the one-sided upper 95% limit of
:math:`r_j` (Fisher's z, :math:`\tanh(\operatorname{atanh} r_j + 1.645 / \sqrt{n_j - 3})`)
stays below :data:`REST_CORR_FLOOR` (tests of :data:`MIN_ITEMS` items or more). With 1,000 respondents that is :math:`r_j < 0.05`; with 50,
:math:`r_j < -0.14`, so small samples are not flagged by chance.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from bayes_raters.errors import SlopeWarning

#: Flag an item when the upper 95% limit of its item-rest correlation is below this.
REST_CORR_FLOOR = 0.1
Z_95 = 1.6448536269514722
#: Fewest items for the check (with two, a negative pair does not say which item is reversed).
MIN_ITEMS = 3


def rest_correlations(table: pd.DataFrame, value: str) -> pd.DataFrame:
    """Item-rest correlation of every item (module docstring) from a long table with columns
    ``respondent``, ``item`` and ``value``: one row per item (in order of appearance) with
    ``rest_corr``, ``rest_corr_upper`` (one-sided 95% limit) and ``contradicts_slope``."""
    wide = table.pivot(index="respondent", columns="item", values=value)
    wide = wide[pd.unique(table["item"])]
    x = wide.to_numpy(float)
    answered = ~np.isnan(x)
    sd = np.nanstd(x, axis=0)
    z = np.where(answered, (x - np.nanmean(x, axis=0)) / np.where(sd > 0, sd, 1.0), 0.0)
    totals, counts = z.sum(axis=1, keepdims=True), answered.sum(axis=1, keepdims=True)
    rows = []
    for j in range(x.shape[1]):
        others = counts[:, 0] - answered[:, j]
        use = answered[:, j] & (others > 0)
        rest = (totals[use, 0] - z[use, j]) / others[use]
        n = int(use.sum())
        r = _correlation(x[use, j], rest)
        upper = np.tanh(np.arctanh(np.clip(r, -0.999999, 0.999999)) + Z_95 / np.sqrt(n - 3)) if n > 3 else np.nan
        rows.append((r, upper))
    frame = pd.DataFrame(rows, index=pd.Index(wide.columns, name="item"), columns=["rest_corr", "rest_corr_upper"])
    # with two items the "rest" is the other item: a negative pair says one of them is reversed,
    # not which, so nothing is flagged
    frame["contradicts_slope"] = (frame["rest_corr_upper"] < REST_CORR_FLOOR) & (len(frame) >= MIN_ITEMS)
    return frame


def dimension_rest_correlations(table: pd.DataFrame, value: str, item_dimension: dict | None) -> pd.DataFrame:
    """:func:`rest_correlations` within each dimension's items (the confirmatory
    multidimensional model, where each item's one loading is forced positive): the rest of
    item j is the other items of its dimension. Empty for the exploratory model
    (``item_dimension`` None), where only the anchors' own loadings are forced positive and
    the anchors are chosen from the data for their strong loadings."""
    if not item_dimension:
        return pd.DataFrame(columns=["rest_corr", "rest_corr_upper", "contradicts_slope"], index=pd.Index([], name="item"))
    dimension = table["item"].map(item_dimension)
    parts = [rest_correlations(part, value) for _, part in table.groupby(dimension, sort=False)]
    return pd.concat(parts).reindex(pd.unique(table["item"]))


def rater_rest_correlations(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`rest_correlations` of raters (many-facet model, consistency :math:`a_r > 0`): a
    rating's unit is its (response, prompt), the rater's score against the standardised mean
    of the other raters' scores of the same unit. One row per rater (index ``item``, renamed
    ``rater``)."""
    unit = table["response"].astype(str) + "\x1f" + table["prompt"].astype(str)
    long = pd.DataFrame({"respondent": unit, "item": table["rater"], "score": table["score"].astype(float)})
    long = long.groupby(["respondent", "item"], sort=False, as_index=False)["score"].mean()
    return rest_correlations(long, "score").rename_axis("rater")


def _correlation(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson correlation; NaN where either side is constant."""
    if len(x) < 2 or np.std(x) == 0 or np.std(y) == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def slope_reason(row: pd.Series, rest: str = "item-rest") -> str | None:
    """The table reason for a flagged item (or rater: ``rest="rater-rest"``), or None."""
    flag = row.get("contradicts_slope", False)
    if pd.isna(flag) or not bool(flag):
        return None
    kind = "negative" if row["rest_corr"] < 0 else "near-zero"
    return (f"data point to a {kind} slope: {rest} r = {row['rest_corr']:.2f} "
            f"(upper 95% limit {row['rest_corr_upper']:.2f}); the model forces a > 0")


_WORDING = {
    "item": ("the answers to {n} item(s) fall or stay flat as the rest of the test rises, but the model "
             "forces every slope positive: {named}. Their discriminations sit near 0 instead of below it. "
             "Recode reverse-keyed items (or check the key), or drop them; item_table() lists them under 'reasons'."),
    "dimension": ("the answers to {n} item(s) fall or stay flat as the other items of their dimension rise, but "
                  "the model forces every loading positive: {named}. Their loadings sit near 0 instead of below "
                  "it. Recode reverse-keyed items, move them to another dimension, or drop them; item_table() "
                  "lists them under 'reasons'."),
    "rater": ("the scores of {n} rater(s) fall or stay flat as the other raters' scores of the same responses "
              "rise, but the model forces every rater's consistency positive: {named}. Check their score "
              "direction (a reversed scale) or drop them; rater_table() lists them under 'reasons'."),
}


def warn_contradicted_slopes(evidence: pd.DataFrame, what: str, subject: str = "item") -> None:
    """A :class:`~bayes_raters.errors.SlopeWarning` naming every item (``subject="dimension"``:
    item within its dimension; ``"rater"``: rater) whose data contradict a positive slope
    (``evidence`` from :func:`rest_correlations` or its variants above)."""
    flagged = evidence[evidence["contradicts_slope"].astype(bool)]
    if flagged.empty:
        return
    named = ", ".join(f"{name!r} (r = {r:.2f})" for name, r in flagged["rest_corr"].head(10).items())
    warnings.warn(f"{what}: " + _WORDING[subject].format(n=len(flagged), named=named), SlopeWarning, stacklevel=3)
