"""Simulated binary answers with a simple structure, for the multidimensional models."""

from __future__ import annotations

import numpy as np
import pandas as pd


def simulate_factor_answers(n_respondents: int = 1000, group_sizes=(10, 10), correlation: float = 0.3, *,
                            random_seed=None) -> tuple[pd.DataFrame, dict]:
    r"""Binary answers with a simple structure, for checking dimensionality as Lalor et al.
    (2016) did: item group g loads on ability g only, :math:`a_j \sim \text{LogNormal}(0.2, 0.3)`,
    :math:`d_j \sim N(0, 1)`, abilities :math:`N(0, R)` with correlation ``correlation`` between
    every pair of groups; ``group_sizes=(20,)`` gives one factor. Items are named
    ``g{group}_{k}``. Returns ``(answers, truth)`` with ``truth`` holding ``a`` (items, groups),
    ``d``, ``theta`` and the item -> group map ``dimensions``.

    Parameters
    ----------
    n_respondents : int
        The number of respondents.
    group_sizes : tuple of int
        Items per ability.
    correlation : float
        Correlation between every pair of abilities.
    random_seed : int, numpy.random.Generator or None
        Seed of every draw.

    Returns
    -------
    tuple of (pandas.DataFrame, dict)
        The answers and the true parameters.

    Examples
    --------
    >>> from bayes_raters.irt import simulate_factor_answers
    >>> answers, truth = simulate_factor_answers(100, (3, 3), random_seed=0)
    >>> answers.shape, sorted(set(truth["dimensions"].values()))
    ((600, 3), ['g1', 'g2'])
    """
    rng = np.random.default_rng(random_seed)
    groups = len(group_sizes)
    corr = np.full((groups, groups), correlation) + (1 - correlation) * np.eye(groups)
    theta = rng.multivariate_normal(np.zeros(groups), corr, n_respondents)
    group_of = np.repeat(np.arange(groups), group_sizes)
    n_items = len(group_of)
    a = np.zeros((n_items, groups))
    a[np.arange(n_items), group_of] = rng.lognormal(0.2, 0.3, n_items)
    d = rng.normal(0.0, 1.0, n_items)
    items = [f"g{g + 1}_{k}" for g, size in enumerate(group_sizes) for k in range(size)]
    correct = rng.random((n_respondents, n_items)) < 1 / (1 + np.exp(-(theta @ a.T + d)))
    answers = pd.DataFrame({"respondent": np.repeat(np.arange(n_respondents), n_items), "item": np.tile(items, n_respondents),
                            "correct": correct.ravel().astype(int)})
    truth = {"a": a, "d": d, "theta": theta, "dimensions": {item: f"g{g + 1}" for item, g in zip(items, group_of)}}
    return answers, truth
