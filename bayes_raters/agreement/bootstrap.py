r"""Every agreement coefficient that fits the data, and its bootstrap interval over units and raters.

The unit of resampling is the rated response (the unit): ``n_boot`` samples of the units with
replacement, each unit with all its ratings, the coefficients recomputed on each. That keeps the
raters as they are, so alone it describes these raters on new units. The coefficients whose value
depends on which raters were drawn (alpha, Fleiss' kappa, ICC1, ICC2 and their k forms: raters
random) also need the variance from the raters. For a statistic that is linear in the ratings
:math:`y_{ij} = a_i + b_j + e_{ij}` of a crossed design with :math:`N` ratings, :math:`n_i` per
unit and :math:`m_j` per rater,

.. math::
    V = \sum_i n_i^2 \sigma_a^2 / N^2 + \sum_j m_j^2 \sigma_b^2 / N^2 + \sigma_e^2 / N,

the bootstrap over units estimates :math:`V_U = \sum_i n_i^2\sigma_a^2/N^2 + (\sigma_b^2 + \sigma_e^2)/N`,
a jackknife over raters :math:`V_R = \sum_j m_j^2\sigma_b^2/N^2 + (\sigma_a^2 + \sigma_e^2)/N`
and a jackknife over single ratings :math:`V_C = (\sigma_a^2 + \sigma_b^2 + \sigma_e^2)/N`, so
:math:`V_U + V_R - V_C = V` (the crossed-design correction behind Owen's pigeonhole bootstrap;
for the nonlinear coefficients it holds for their linearisation). The reported interval is the
units' percentile interval widened about the estimate by :math:`\sqrt{(V_U + \max(V_R - V_C, 0))/V_U}`
(it keeps the percentile interval's skew); ``bootstrap_sd`` is that variance's root. Both
jackknives are delete-a-group: raters one at a time up to 50 raters (random groups beyond), the
ratings in 50 random groups. With fewer than three raters, and for ICC3, ICC3k and Cohen's kappa
(raters fixed by definition), the interval is the units' alone.

Why not resample raters with replacement as well: a rater drawn twice gives a unit two identical
ratings, which agreement coefficients count as perfect agreement. Measured
(``validation/agreement_coverage.py``, 100 unbalanced data sets of 200 responses x 12 raters per
design; card ``models/agreement.md``): the units' bootstrap alone covered 0.81-0.87 wherever the
rater variance enters; with the rater part, 0.88-0.91 (normal true scores) and 0.87-0.90 (skewed).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayes_raters.agreement.alpha import alpha_from_counts
from bayes_raters.agreement.icc import COEFFICIENTS, icc_values, variance_components
from bayes_raters.agreement.kappa import agreement_weights, cross_table, fleiss_from_counts, kappa_from_table
from bayes_raters.agreement.layout import Ratings
from bayes_raters.errors import InsufficientDataError

#: Coefficients with raters random (the rater part of the variance applies); see the module docstring.
RATERS_RANDOM = ("fleiss_kappa", "ICC1", "ICC2", "ICC1k", "ICC2k")
#: Jackknife groups: raters deleted one at a time up to this many, ratings split into this many groups.
JACKKNIFE_GROUPS = 50

#: Cohen's kappa weights reported at each level (two raters only).
KAPPA_WEIGHTS = {"nominal": (None,), "ordinal": ("linear", "quadratic"), "interval": (), "ratio": ()}


def two_rater_table(data: Ratings) -> np.ndarray | None:
    """K x K counts of the units both raters rated, when exactly two raters rated the units
    (rows: the first rater's category, columns: the second's); None otherwise."""
    if len(data.raters) != 2:
        return None
    both = ~np.isnan(data.values).any(axis=1)
    if both.sum() < 2:
        return None
    codes = data.codes[both]
    return cross_table(codes[:, 0], codes[:, 1], len(data.categories))


def coefficients(data: Ratings) -> pd.Series:
    """Point estimates of every coefficient that fits the level and design of ``data``.

    Alpha at the level; Fleiss' kappa at the nominal and ordinal levels; Cohen's kappa (weights
    of :data:`KAPPA_WEIGHTS`) with exactly two raters; the six ICCs at the ordinal, interval and
    ratio levels when unit and rater effects can both be fitted.
    """
    counts = data.counts
    out = {f"alpha_{data.level}": alpha_from_counts(counts, data.categories, data.level)}
    if data.level in ("nominal", "ordinal"):
        out["fleiss_kappa"] = fleiss_from_counts(counts)
    table = two_rater_table(data)
    if table is not None:
        for weights in KAPPA_WEIGHTS[data.level]:
            out[f"cohens_kappa_{weights or 'unweighted'}"] = kappa_from_table(table, agreement_weights(len(data.categories), weights))[0]
    if data.level != "nominal":
        try:
            out.update(zip(COEFFICIENTS, icc_values(variance_components(data.values)), strict=True))
        except InsufficientDataError:
            pass
    return pd.Series(out, dtype=float)


def bootstrap_coefficients(data: Ratings, n_boot: int = 1000, random_seed=None) -> pd.DataFrame:
    """``n_boot`` x coefficients: :func:`coefficients` on resampled units (module docstring).

    A resample on which a coefficient is undefined (all ratings equal, say) gives NaN there.
    """
    rng = np.random.default_rng(random_seed)
    names = coefficients(data).index
    rows = np.empty((n_boot, len(names)))
    with np.errstate(divide="ignore", invalid="ignore"):
        for b in range(n_boot):
            sample = data.subset(rng.integers(len(data.units), size=len(data.units)))
            try:
                rows[b] = coefficients(sample).reindex(names).to_numpy()
            except (InsufficientDataError, ValueError, np.linalg.LinAlgError):
                rows[b] = np.nan
    return pd.DataFrame(rows, columns=names)


def _group_jackknife(data: Ratings, groups: np.ndarray, cells: np.ndarray, names: pd.Index) -> pd.Series:
    r"""Delete-a-group jackknife variance :math:`(G-1)/G \sum_g (\hat\theta_{(g)} - \bar\theta)^2`
    of the coefficients ``names``, ``groups`` labelling each of ``cells`` with its group."""
    labels = np.unique(groups)
    rows = np.full((len(labels), len(names)), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        for g, label in enumerate(labels):
            try:
                rows[g] = coefficients(data.without(cells[groups == label])).reindex(names).to_numpy()
            except (InsufficientDataError, ValueError, np.linalg.LinAlgError):
                pass
    values = pd.DataFrame(rows, columns=names)
    return (len(labels) - 1) / len(labels) * ((values - values.mean()) ** 2).sum(min_count=len(labels))


def rater_variance(data: Ratings, names: pd.Index, random_seed=None) -> pd.Series:
    r"""The raters' share of each coefficient's variance, :math:`\max(V_R - V_C, 0)` of the module
    docstring, for the coefficients in :data:`RATERS_RANDOM` and alpha; 0 for the others and with
    fewer than three raters. A coefficient left undefined by one of the deletions (every
    remaining rating equal, say) gets NaN here and keeps the units' interval."""
    out = pd.Series(0.0, index=names)
    random = pd.Index([n for n in names if n in RATERS_RANDOM or n.startswith("alpha_")])
    if len(data.raters) < 3 or random.empty:
        return out
    rng = np.random.default_rng(random_seed)
    cells = np.argwhere(~np.isnan(data.values))
    rater_group = np.arange(len(data.raters)) if len(data.raters) <= JACKKNIFE_GROUPS else rng.permutation(len(data.raters)) % JACKKNIFE_GROUPS
    between_raters = _group_jackknife(data, rater_group[cells[:, 1]], cells, random)
    single_ratings = _group_jackknife(data, rng.permutation(len(cells)) % JACKKNIFE_GROUPS, cells, random)
    out[random] = np.maximum(between_raters - single_ratings, 0.0)
    return out


def bootstrap_intervals(draws: pd.DataFrame, ci_prob: float = 0.9, estimate: pd.Series | None = None,
                        extra_variance: pd.Series | None = None) -> pd.DataFrame:
    r"""Percentile intervals ``bootstrap_lower, bootstrap_upper`` of the draws over units and their
    SD ``bootstrap_sd``; with ``estimate`` and ``extra_variance`` (:func:`rater_variance`), the
    interval widened about the estimate by :math:`\sqrt{(V_U + V_{extra}) / V_U}` and the SD
    :math:`\sqrt{V_U + V_{extra}}` (module docstring)."""
    tail = (1 - ci_prob) / 2
    lower, upper, variance = draws.quantile(tail), draws.quantile(1 - tail), draws.var(ddof=1)
    if estimate is not None and extra_variance is not None:
        extra = extra_variance.reindex(variance.index).fillna(0.0)
        widen = np.sqrt((variance + extra) / variance).where(variance > 0, 1.0)
        lower, upper = estimate - (estimate - lower) * widen, estimate + (upper - estimate) * widen
        variance = variance + extra
    return pd.DataFrame({"bootstrap_sd": np.sqrt(variance), "bootstrap_lower": lower, "bootstrap_upper": upper})
