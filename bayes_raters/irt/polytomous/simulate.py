"""Simulated ordinal ratings for the graded response and generalized partial credit models."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayes_raters.irt.polytomous.model import CategoryLayout, category_logp
from bayes_raters.results import draw_categories


def simulate_ratings(n_respondents: int = 1000, n_items: int = 20, n_categories: int = 5, model: str = "grm", *,
                     random_seed=None, threshold_sd: float | None = None) -> tuple[pd.DataFrame, dict]:
    """Ordinal ratings ``respondent, item, score`` (scores 1..``n_categories``) from the GRM or
    GPCM (:func:`~bayes_raters.irt.polytomous.model.category_logp`) with theta ~ N(0, 1), a ~
    LogNormal(0, 0.3) and thresholds an item location N(0, 1) plus centred cumulative
    LogNormal(0, 0.3) gaps (ordered, so valid for both models). Returns ``(ratings, truth)`` with
    truth ``{"a": (items,), "b": (items * (n_categories - 1),), "theta": (respondents,)}``.
    ``threshold_sd``: instead, thresholds sorted N(0, threshold_sd) draws (adjacent ones can be
    very close) and a ~ U(0.5, 2.5), a design no prior of the package generates.

    Parameters
    ----------
    n_respondents, n_items, n_categories : int
        Size of the table and the number of score categories.
    model : {"grm", "gpcm"}
        The model the scores are drawn from.
    random_seed : int, numpy.random.Generator or None
        Seed of every draw.
    threshold_sd : float, optional
        Draw thresholds and slopes from the other design above.

    Returns
    -------
    tuple of (pandas.DataFrame, dict)
        The ratings and the true parameters.

    Examples
    --------
    >>> from bayes_raters.irt import simulate_ratings
    >>> ratings, truth = simulate_ratings(50, 3, 5, random_seed=0)
    >>> ratings.shape, truth["b"].shape
    ((150, 3), (12,))
    """
    rng = np.random.default_rng(random_seed)
    layout = CategoryLayout(np.full(n_items, n_categories))
    if threshold_sd is not None:
        a = rng.uniform(0.5, 2.5, n_items)
        b = np.sort(rng.normal(0, threshold_sd, (n_items, n_categories - 1)), axis=1).ravel()
    else:
        a = rng.lognormal(0, 0.3, n_items)
        gaps = np.cumsum(rng.lognormal(0, 0.3, (n_items, n_categories - 2)), axis=1)
        cumulative = np.concatenate([np.zeros((n_items, 1)), gaps], axis=1)
        b = (rng.normal(0, 1, n_items)[:, None] + cumulative - cumulative.mean(axis=1, keepdims=True)).ravel()
    theta = rng.normal(0, 1, n_respondents)
    p = np.exp(category_logp(model, a, b, theta, layout, lib=np))
    rows = []
    for j in range(n_items):
        categories = draw_categories(p[layout.cat_item == j].T, rng)
        rows += [(i, f"q{j:02d}", int(c) + 1) for i, c in enumerate(categories)]
    return pd.DataFrame(rows, columns=["respondent", "item", "score"]), {"a": a, "b": b, "theta": theta}
