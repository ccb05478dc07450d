"""Pairs for a second annotation stage, chosen from a first-stage estimate of the items'
values (slider means, an EASL state, or posterior means).

An outcome between items whose latent values differ by d carries Fisher information
about d of about lambda^2 p (1 - p), p = invlogit(lambda d): with lambda = 20 it is 79 for
neighbours 0.05 apart, 0.5 for items 1/3 apart and 19 averaged over random pairs of
uniformly spread items. Random pairs therefore spend much of a pairwise budget on
comparisons whose result is known in advance, which is why
match quality (TrueSkill, RA, EASL) pairs items of similar value. Neighbours alone only
resolve local order and inherit the first stage's misplacements, so a share of random
pairs keeps the comparison graph tied together across the scale.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayes_raters.errors import InsufficientDataError, InvalidInputError


def random_pairs(n_items: int, n_pairs: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Positions of ``n_pairs`` uniformly random pairs of distinct items among ``n_items``."""
    a = rng.integers(0, n_items, n_pairs)
    return a, (a + rng.integers(1, n_items, n_pairs)) % n_items


def neighbour_pairs(values: pd.Series, n_pairs: int, random_fraction: float = 0.5, random_seed=None) -> pd.DataFrame:
    """``n_pairs`` comparisons (columns ``item_a``, ``item_b``): ``round((1 - random_fraction)
    n_pairs)`` between items adjacent in the order of ``values`` (rank gap 1 for every
    item, then gap 2, ...), the rest uniformly random pairs of distinct items. ``values``
    is indexed by item; items with a missing value are an error (judge them first).

    Parameters
    ----------
    values : pandas.Series
        Current value of each item (e.g. a posterior mean), indexed by item.
    n_pairs : int
        The number of comparisons.
    random_fraction : float
        Share of uniformly random pairs.
    random_seed : int, numpy.random.Generator or None
        Seed of the random pairs.

    Returns
    -------
    pandas.DataFrame
        Columns ``item_a, item_b``.

    Examples
    --------
    >>> from bayes_raters.pairwise import latent_values, neighbour_pairs
    >>> pairs = neighbour_pairs(latent_values(10, random_seed=0), 8, random_seed=0)
    >>> pairs.shape
    (8, 2)
    """
    if not isinstance(values, pd.Series):
        raise InvalidInputError(f"values must be a pandas Series indexed by item, got {type(values).__name__}.")
    if values.isna().any():
        missing = values.index[values.isna()][:5].tolist()
        raise InsufficientDataError(f"{int(values.isna().sum())} item(s) have no first-stage value, e.g. {missing}: judge them first.")
    if len(values) < 2:
        raise InsufficientDataError(f"need at least 2 items to pair, got {len(values)}.")
    if not 0 <= random_fraction <= 1:
        raise InvalidInputError(f"random_fraction must be in [0, 1], got {random_fraction}.")
    if n_pairs < 1:
        raise InvalidInputError(f"n_pairs must be >= 1, got {n_pairs}.")
    order = values.sort_values(kind="stable").index.to_numpy()
    n_near = int(round((1 - random_fraction) * n_pairs))
    first, second = [], []
    gap = 1
    while len(first) < n_near:
        gap = (gap - 1) % (len(order) - 1) + 1
        first.extend(order[:-gap])
        second.extend(order[gap:])
        gap += 1
    a, b = random_pairs(len(order), n_pairs - n_near, np.random.default_rng(random_seed))
    items = values.index.to_numpy()
    return pd.DataFrame({"item_a": np.concatenate([first[:n_near], items[a]]), "item_b": np.concatenate([second[:n_near], items[b]])})
