r"""Krippendorff's alpha, computed by the ``krippendorff`` package.

.. math:: \alpha = 1 - \frac{D_o}{D_e}

with :math:`D_o` the mean squared distance :math:`\delta^2(c, k)` between two values paired
within a unit (each unit with :math:`m_u \ge 2` values weighted :math:`1/(m_u - 1)`) and
:math:`D_e` the same over all pairs of pairable values. The level sets the distance:
nominal (0 or 1), ordinal (the number of values between c and k, by their frequencies),
interval :math:`(c - k)^2`, ratio :math:`((c - k)/(c + k))^2` (Krippendorff 2011, *Computing
Krippendorff's Alpha-Reliability*). Missing ratings are allowed; units with one value drop out.
"""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd

from bayes_raters.agreement.layout import Ratings, agreement_ratings


def alpha_from_counts(counts: np.ndarray, categories: np.ndarray, level: str) -> float:
    """Alpha from a units x values matrix of counts (the ``value_counts`` layout)."""
    domain = np.arange(len(categories)) if level == "nominal" else np.asarray(categories, float)
    return float(krippendorff.alpha(value_counts=counts, value_domain=domain, level_of_measurement=level))


def alpha_of(data: Ratings) -> float:
    """:func:`krippendorff_alpha` on validated ratings."""
    return alpha_from_counts(data.counts, data.categories, data.level)


def krippendorff_alpha(
    ratings: pd.DataFrame,
    *,
    level: str = "interval",
    categories=None,
    response: str = "response",
    rater: str = "rater",
    score: str = "score",
) -> float:
    """Krippendorff's alpha of long ratings with any pattern of missing ratings.

    Parameters
    ----------
    ratings : pandas.DataFrame
        Long ratings, one row per (response, rater); numbers, or any labels at ``level="nominal"``.
    level : {"nominal", "ordinal", "interval", "ratio"}
        Level of measurement (sets the distance between two values).
    categories : sequence, optional
        Every score of the scale, in order; the ordinal distance counts the frequencies of the
        values between two scores, so it only changes with values that occur.
    response, rater, score : str
        Column names in ``ratings``.

    Returns
    -------
    float
        Krippendorff's alpha.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayes_raters.agreement import krippendorff_alpha
    >>> long = pd.DataFrame({"response": [1, 1, 2, 2, 3, 3, 4, 4], "rater": list("ab") * 4,
    ...                      "score": [1, 1, 2, 3, 3, 3, 4, 4]})
    >>> round(krippendorff_alpha(long, level="interval"), 4)
    0.9114
    """
    data = agreement_ratings(ratings, level, categories=categories, response=response, rater=rater, score=score)
    return alpha_of(data)
