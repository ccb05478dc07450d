r"""Cohen's kappa (two raters, optionally weighted) and Fleiss' kappa (many raters).

Cohen (1960, 1968): with :math:`p_{ij}` the share of units rater A put in category :math:`i`
and rater B in :math:`j`, margins :math:`p_{i\cdot}, p_{\cdot j}` and agreement weights
:math:`w_{ij}` (1 on the diagonal; ``"linear"``: :math:`1 - |i-j|/(K-1)`, ``"quadratic"``:
:math:`1 - (i-j)^2/(K-1)^2`, positions on the scale of K categories),

.. math:: \kappa_w = \frac{p_o - p_e}{1 - p_e},\quad p_o = \sum w_{ij} p_{ij},\quad
          p_e = \sum w_{ij} p_{i\cdot} p_{\cdot j}.

Its large-sample standard error is that of Fleiss, Cohen & Everitt (1969), the one vcd::Kappa
reports, with :math:`\bar w_{i\cdot} = \sum_j w_{ij} p_{\cdot j}` and
:math:`\bar w_{\cdot j} = \sum_i w_{ij} p_{i\cdot}`:

.. math:: \operatorname{SE}^2 = \frac{\sum_{ij} p_{ij}\,[w_{ij} - (\bar w_{i\cdot} + \bar w_{\cdot j})(1-\kappa)]^2
          - [\kappa - p_e (1 - \kappa)]^2}{n (1 - p_e)^2}.

Fleiss' kappa for units with :math:`n_i` ratings, :math:`n_{ic}` of them in category :math:`c`,
is written in the form of Fleiss, Levin & Paik (2003, ch. 18) that allows :math:`n_i` to vary
(the form of Fleiss 1971 when every :math:`n_i = n`):

.. math:: \kappa = 1 - \frac{\sum_i \sum_c n_{ic}(n_i - n_{ic}) / n_i}
          {N (\bar n - 1) \sum_c \bar p_c (1 - \bar p_c)},\quad \bar p_c = \frac{\sum_i n_{ic}}{N \bar n}.

Hand-written: scikit-learn's ``cohen_kappa_score`` gives no standard error and statsmodels'
``fleiss_kappa`` needs the same number of ratings on every unit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from bayes_raters.agreement.layout import agreement_ratings, paired_scores
from bayes_raters.errors import InvalidInputError

WEIGHTS = (None, "linear", "quadratic")


def agreement_weights(n_categories: int, weights: str | None) -> np.ndarray:
    """Agreement weights :math:`w_{ij}` of ``K`` ordered categories (the identity for None)."""
    if weights not in WEIGHTS:
        raise InvalidInputError(f"weights={weights!r}; use None, 'linear' or 'quadratic'.")
    if weights is None or n_categories < 2:
        return np.eye(n_categories)
    gap = np.abs(np.subtract.outer(np.arange(n_categories), np.arange(n_categories))) / (n_categories - 1)
    return 1 - gap if weights == "linear" else 1 - gap**2


def kappa_from_table(table: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """Weighted kappa and its large-sample SE from a K x K table of counts (module docstring)."""
    n = table.sum()
    p = table / n
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    observed, expected = float((w * p).sum()), float(rows @ w @ cols)
    kappa = (observed - expected) / (1 - expected)
    w_rows, w_cols = w @ cols, w.T @ rows
    spread = (p * (w - (w_rows[:, None] + w_cols[None, :]) * (1 - kappa)) ** 2).sum()
    variance = (spread - (kappa - expected * (1 - kappa)) ** 2) / (n * (1 - expected) ** 2)
    return kappa, float(np.sqrt(max(variance, 0.0)))


def cross_table(codes_a: np.ndarray, codes_b: np.ndarray, n_categories: int) -> np.ndarray:
    """K x K counts of paired category codes ``0..K-1`` (rows: the first rater's, columns: the second's)."""
    table = np.zeros((n_categories, n_categories))
    np.add.at(table, (np.asarray(codes_a, dtype=int), np.asarray(codes_b, dtype=int)), 1.0)
    return table


def cohens_kappa(
    scores_a,
    scores_b,
    *,
    weights: str | None = None,
    categories=None,
    ci_prob: float = 0.9,
) -> pd.Series:
    """Cohen's kappa of two raters' scores of the same units, unweighted or weighted.

    Pairs with a missing score on either side are dropped. The categories are the scores that
    occur (sorted) unless ``categories`` lists the whole scale in order, which matters to the
    weights when a score in the middle of the scale was never given. The interval is the
    estimate plus or minus the normal quantile times the standard error (module docstring),
    as in ``confint(vcd::Kappa(...))``.

    Parameters
    ----------
    scores_a, scores_b : array-like
        The two raters' scores, aligned by unit (labels or numbers).
    weights : {None, "linear", "quadratic"}
        Agreement weights; None is Cohen's unweighted kappa.
    categories : sequence, optional
        Every score of the scale, in order.
    ci_prob : float
        Probability of the interval.

    Returns
    -------
    pandas.Series
        ``estimate, se, lower, upper, n_units``.

    Examples
    --------
    >>> from bayes_raters.agreement import cohens_kappa
    >>> a = [1, 2, 3, 3, 2, 1, 4, 1, 2, 3]
    >>> b = [1, 2, 3, 3, 2, 2, 4, 1, 2, 4]
    >>> round(float(cohens_kappa(a, b)["estimate"]), 4)
    0.7297
    """
    a, b = paired_scores(scores_a, scores_b)
    scale = np.asarray(sorted(set(a) | set(b)) if categories is None else list(categories), dtype=object)
    index = pd.Index(scale)
    ia, ib = index.get_indexer(a), index.get_indexer(b)
    if (ia < 0).any() or (ib < 0).any():
        raise InvalidInputError(f"a score is not among categories={list(scale)}; list every score the scale has.")
    kappa, se = kappa_from_table(cross_table(ia, ib, len(scale)), agreement_weights(len(scale), weights))
    z = stats.norm.ppf(1 - (1 - ci_prob) / 2)
    return pd.Series({"estimate": kappa, "se": se, "lower": kappa - z * se, "upper": kappa + z * se,
                      "n_units": float(len(a))}, name="cohens_kappa")


def fleiss_from_counts(counts: np.ndarray) -> float:
    """Fleiss' kappa from a units x categories matrix of counts (units with >= 2 ratings)."""
    per_unit = counts.sum(axis=1)
    disagreement = (counts * (per_unit[:, None] - counts)).sum(axis=1) / per_unit
    share = counts.sum(axis=0) / per_unit.sum()
    return float(1 - disagreement.sum() / ((per_unit.sum() - len(per_unit)) * (share * (1 - share)).sum()))


def fleiss_kappa(ratings: pd.DataFrame, *, response: str = "response", rater: str = "rater", score: str = "score") -> float:
    """Fleiss' kappa of long nominal ratings; units may have different numbers of ratings.

    Units with one rating are left out; rater identities are not used (Fleiss' kappa treats
    each unit's raters as a random draw). Equals statsmodels' ``fleiss_kappa`` when every unit
    has the same number of ratings (module docstring for the formula).

    Parameters
    ----------
    ratings : pandas.DataFrame
        Long ratings, one row per (response, rater); any labels.
    response, rater, score : str
        Column names in ``ratings``.

    Returns
    -------
    float
        Fleiss' kappa.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayes_raters.agreement import fleiss_kappa
    >>> long = pd.DataFrame({"response": [1, 1, 1, 2, 2, 2, 3, 3, 3], "rater": list("abc") * 3,
    ...                      "score": ["x", "x", "y", "y", "y", "y", "x", "x", "x"]})
    >>> round(fleiss_kappa(long), 4)
    0.55
    """
    data = agreement_ratings(ratings, "nominal", response=response, rater=rater, score=score)
    return fleiss_from_counts(data.counts)
