r"""Simulated ratings on unbalanced designs, for checking agreement intervals.

Latent scores :math:`y^*_{ij} = \mu + u_i + r_j + e_{ij}` with normal :math:`u, r, e`; the
observed score is :math:`y^*` rounded to the nearest integer of the scale and clipped to its
ends. Each unit is rated by a random subset of the rater pool (2-5 raters by default, so the
raters' subsets overlap without any two raters sharing every unit).
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def simulate_agreement(
    n_units: int = 200,
    n_raters: int = 12,
    *,
    ratings_per_unit: tuple[int, int] = (2, 5),
    scale: tuple[int, int] = (1, 5),
    mu: float = 3.0,
    sigma_unit: float = 0.8,
    sigma_rater: float = 0.3,
    sigma_error: float = 0.6,
    abilities: str = "normal",
    random_seed=None,
) -> pd.DataFrame:
    """Long ratings ``response, rater, score`` of ``n_units`` units by a pool of ``n_raters``.

    Parameters
    ----------
    n_units, n_raters : int
        Units rated and the size of the rater pool.
    ratings_per_unit : tuple of int
        Fewest and most ratings of a unit (uniform in between).
    scale : tuple of int
        Lowest and highest integer score; None keeps the latent scores (continuous ratings).
    mu, sigma_unit, sigma_rater, sigma_error : float
        Mean and SDs of the latent unit, rater and error terms.
    abilities : {"normal", "skewed"}
        Distribution of the unit terms: normal, or a standardised chi-square(3) (skewed) with the same SD.
    random_seed : int, numpy.random.Generator or None
        Seed of every draw.

    Returns
    -------
    pandas.DataFrame
        Columns ``response, rater, score``.

    Examples
    --------
    >>> from bayes_raters.agreement.simulate import simulate_agreement
    >>> table = simulate_agreement(50, 6, random_seed=1)
    >>> int(table.groupby("response").size().min()), int(table.groupby("response").size().max())
    (2, 5)
    """
    rng = np.random.default_rng(random_seed)
    if abilities == "skewed":
        unit = sigma_unit * (rng.chisquare(3, n_units) - 3) / np.sqrt(6)
    else:
        unit = rng.normal(0, sigma_unit, n_units)
    rater = rng.normal(0, sigma_rater, n_raters)
    low, high = ratings_per_unit
    counts = rng.integers(low, high + 1, n_units)
    keys = rng.random((n_units, n_raters)).argsort(axis=1)
    units = np.repeat(np.arange(n_units), counts)
    raters = np.concatenate([keys[i, :c] for i, c in enumerate(counts)])
    latent = mu + unit[units] + rater[raters] + rng.normal(0, sigma_error, len(units))
    score = latent if scale is None else np.clip(np.round(latent), scale[0], scale[1])
    return pd.DataFrame({"response": units, "rater": [f"r{j:03d}" for j in raters], "score": score})
