"""Simulated arena votes for benchmarks, tests and the notebook: skewed true ratings (not the
model's normal prior), uneven popularity of models, ties, style covariates that better models
also score higher on (so ignoring style biases the ratings), and categories with their own
deviations."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayes_raters.errors import InvalidInputError
from bayes_raters.results import seeded_rng


def simulate_arena(
    n_models: int,
    n_votes: int,
    *,
    n_style: int = 0,
    n_categories: int = 0,
    epsilon: float = 0.35,
    category_sd: float = 0.25,
    random_seed=None,
) -> dict:
    r"""Votes from the Rao-Kupper model of :mod:`bayes_raters.pairwise.arena.model`.

    True ratings: a Gamma(2) draw scaled to SD 0.8 (log odds; right-skewed: a few far-ahead
    models, as on public arenas). Each vote picks its two models with probabilities proportional
    to a lognormal popularity (SD 0.8), so some pairs meet often and some rarely. Style
    covariates (``n_style``): per-vote differences, normal with SD 1, shifted by 0.5 x the rating
    difference (better models write longer answers), with effects 0.3, 0.15, -0.1, 0.05, -0.05, 0, ... Category
    deviations: normal with SD ``category_sd``.

    Parameters
    ----------
    n_models, n_votes : int
        Models and votes.
    n_style : int
        Style columns ``style_1``, ... .
    n_categories : int
        Categories (0: no category column).
    epsilon : float
        The tie band (0: almost no ties).
    category_sd : float
        SD of the category deviations (log odds).
    random_seed : int, numpy.random.Generator or None
        Seed of every draw.

    Returns
    -------
    dict
        ``votes`` (DataFrame ``model_a, model_b, outcome`` [, ``category``] [, ``style_1``...]),
        ``theta`` (true ratings, centred, Series by model), ``beta``, ``epsilon``, and
        ``category_theta`` (DataFrame category x model, centred per category) with categories.

    Examples
    --------
    >>> from bayes_raters.pairwise import simulate_arena
    >>> sim = simulate_arena(5, 200, n_style=1, random_seed=0)
    >>> list(sim["votes"].columns), len(sim["votes"])
    (['model_a', 'model_b', 'outcome', 'style_1'], 200)
    """
    if n_models < 2 or n_votes < 1:
        raise InvalidInputError("simulate_arena needs n_models >= 2 and n_votes >= 1.")
    rng = seeded_rng(random_seed)
    models = pd.Index([f"model_{i:03d}" for i in range(n_models)], name="model")
    raw = rng.gamma(2.0, 1.0, n_models)
    theta = 0.8 * (raw - raw.mean()) / raw.std()
    popularity = np.exp(0.8 * rng.standard_normal(n_models))
    popularity /= popularity.sum()
    a = rng.choice(n_models, n_votes, p=popularity)
    b = rng.choice(n_models - 1, n_votes, p=None)
    b = np.where(b >= a, b + 1, b)  # a second model, uniform among the others
    keep = rng.random(n_votes) < popularity[b] / popularity.max()  # thin the second by popularity, then refill
    b = np.where(keep, b, (a + 1 + rng.integers(0, n_models - 1, n_votes)) % n_models)
    table = np.tile(theta, (max(n_categories, 1), 1))
    c = np.zeros(n_votes, dtype=int)
    result = {}
    if n_categories:
        deviation = category_sd * rng.standard_normal((n_categories, n_models))
        table = table + deviation
        shares = rng.dirichlet(np.full(n_categories, 5.0))
        c = rng.choice(n_categories, n_votes, p=shares)
        names = [f"category_{k}" for k in range(n_categories)]
        centred = table - table.mean(axis=1, keepdims=True)
        result["category_theta"] = pd.DataFrame(centred, index=pd.Index(names, name="category"), columns=models)
    eta = table[c, a] - table[c, b]
    beta = np.array([0.3, 0.15, -0.1, 0.05, -0.05, 0.0][:n_style] + [0.0] * max(0, n_style - 6))
    z = rng.standard_normal((n_votes, n_style)) + 0.5 * (theta[a] - theta[b])[:, None]
    eta = eta + z @ beta
    u = rng.random(n_votes)
    p_win = 1 / (1 + np.exp(-(eta - epsilon)))
    p_loss = 1 / (1 + np.exp(eta + epsilon))
    outcome = np.where(u < p_win, "win", np.where(u < p_win + p_loss, "loss", "tie"))
    votes = pd.DataFrame({"model_a": models[a], "model_b": models[b], "outcome": outcome})
    if n_categories:
        votes["category"] = np.array(names)[c]
    for k in range(n_style):
        votes[f"style_{k + 1}"] = z[:, k]
    result.update(votes=votes, theta=pd.Series(theta, index=models, name="theta"), beta=beta, epsilon=epsilon)
    return result
