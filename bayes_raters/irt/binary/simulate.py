"""Simulated answer data for IRT: a scale with optional planted bad items and missing answers.

Good items: a ~ LogNormal(0, 0.3), b ~ N(0, 1), c = ``guessing`` (0 for 1PL/2PL data),
d = 1. Planted bad items: zero discrimination (answers unrelated to ability), negative
discrimination (a < 0), and mis-keyed items (a correct answer is scored wrong and vice
versa, i.e. the keyed item curve is flipped). Missing answers are dropped at random.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.errors import InvalidInputError
from bayes_raters.irt.binary.model import irt_probability


def simulate_responses(
    n_respondents: int = 1000,
    n_items: int = 40,
    *,
    guessing: float = 0.0,
    n_zero: int = 0,
    n_negative: int = 0,
    n_miskeyed: int = 0,
    missing: float = 0.0,
    random_seed: int | np.random.Generator | None = None,
) -> tuple[pd.DataFrame, xr.Dataset]:
    """Return ``(responses, truth)``: long answers ``respondent, item, correct`` and an
    xarray Dataset with the true ``theta`` (respondent), ``a``, ``b``, ``c``, ``d`` and
    ``bad`` / ``kind`` (item) of every item (the bad ones are the last items).

    Parameters
    ----------
    n_respondents, n_items : int
        Size of the answers table (bad items included).
    guessing : float
        Lower asymptote ``c`` of every good item.
    n_zero, n_negative, n_miskeyed : int
        Planted bad items: slope near zero, negative slope, and a miskeyed item.
    missing : float
        Share of answers removed at random.
    random_seed : int, numpy.random.Generator or None
        Seed of every draw.

    Returns
    -------
    tuple of (pandas.DataFrame, xarray.Dataset)
        The answers and the true parameters.

    Examples
    --------
    >>> from bayes_raters.irt import simulate_responses
    >>> answers, truth = simulate_responses(100, 6, n_negative=1, random_seed=0)
    >>> answers.shape, str(truth["kind"].values[-1])
    ((600, 3), 'negative')
    """
    n_bad = n_zero + n_negative + n_miskeyed
    if n_bad > n_items or min(n_respondents, n_items) < 2:
        raise InvalidInputError("need >= 2 respondents, >= 2 items, and no more bad items than items.")
    if not 0 <= missing < 1 or not 0 <= guessing < 1:
        raise InvalidInputError("missing and guessing must lie in [0, 1).")
    rng = np.random.default_rng(random_seed)
    theta = rng.normal(0, 1, n_respondents)
    a = rng.lognormal(0, 0.3, n_items)
    b = rng.normal(0, 1, n_items)
    kind = np.array(["good"] * (n_items - n_bad) + ["zero"] * n_zero + ["negative"] * n_negative + ["miskeyed"] * n_miskeyed)
    a[kind == "zero"] = 0.0
    a[kind == "negative"] = -rng.uniform(0.5, 1.5, n_negative)
    c = np.full(n_items, float(guessing))
    p = irt_probability(theta[:, None], a, b, c, 1.0, lib=np)
    answers = (rng.random(p.shape) < p).astype(float)
    answers[:, kind == "miskeyed"] = 1 - answers[:, kind == "miskeyed"]
    rows, cols = np.nonzero(rng.random(answers.shape) >= missing)
    respondents = np.array([f"p{i:04d}" for i in range(n_respondents)])
    items = np.array([f"i{j:03d}" for j in range(n_items)])
    table = pd.DataFrame({"respondent": respondents[rows], "item": items[cols], "correct": answers[rows, cols]})
    truth = xr.Dataset(
        {
            "theta": ("respondent", theta),
            "a": ("item", a),
            "b": ("item", b),
            "c": ("item", c),
            "d": ("item", np.ones(n_items)),
            "bad": ("item", kind != "good"),
            "kind": ("item", kind),
        },
        coords={"respondent": respondents, "item": items},
    )
    return table, truth
