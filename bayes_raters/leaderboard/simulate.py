"""Simulated leaderboards: answers of many systems to many benchmark items, from distributions
the model's priors do not assume (so a check on them is not a check of the priors on their own
draws)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special

from bayes_raters.errors import InvalidInputError
from bayes_raters.leaderboard.responses import bounded_draw, ordered_draw
from bayes_raters.results import seeded_rng

#: The difficulties' two-cluster mixture: (share, mean, SD) of the hard items and of the others.
HARD_ITEMS, OTHER_ITEMS = (0.3, 1.5, 0.5), (0.7, -0.5, 0.8)


def simulate_leaderboard(n_systems: int, n_items: int, *, missing: float = 0.05, flat_share: float = 0.03,
                         guessing: float = 0.0, random_seed=None) -> tuple[pd.DataFrame, dict]:
    r"""Long 2PL answers ``respondent, item, correct`` of ``n_systems`` systems to ``n_items`` items
    and the true parameters. Abilities are skewed (standardised Gamma(2): a few systems far ahead),
    difficulties a two-cluster mixture (70% N(-0.5, 0.8), 30% N(1.5, 0.5)), discriminations
    LogNormal(0, 0.4) with a share ``flat_share`` of items at a = 0.05 (items that rank systems
    not at all), and a share ``missing`` of answers missing at random. With ``guessing`` = c > 0
    every item is multiple choice and a system that does not know the answer guesses it:
    :math:`P = c + (1 - c)\operatorname{logit}^{-1}(a(\theta - b))` (the 3PL the 2PL fits do
    not assume; 0.25 for four options, as MMLU's items have), so the weakest systems sit at chance.

    Parameters
    ----------
    n_systems, n_items : int
        The leaderboard's shape.
    missing : float
        Share of (system, item) answers left out at random.
    flat_share : float
        Share of items that barely discriminate.
    guessing : float
        Chance of a right answer by guessing, in [0, 1) (0: open answers, as GSM8K's).
    random_seed : int, numpy.random.Generator or None
        Same seed, same leaderboard.

    Returns
    -------
    (pandas.DataFrame, dict)
        The answers (ids ``sys0000``..., ``item00000``...) and ``{"theta", "a", "b"}`` as Series
        indexed by those ids.

    Examples
    --------
    >>> from bayes_raters.leaderboard import simulate_leaderboard
    >>> answers, truth = simulate_leaderboard(3, 4, missing=0.0, random_seed=0)
    >>> len(answers), sorted(truth)
    (12, ['a', 'b', 'theta'])
    >>> mc, _ = simulate_leaderboard(400, 50, guessing=0.25, random_seed=0)
    >>> bool(mc.groupby("respondent")["correct"].mean().min() > 0.15)  # the weakest guess a quarter right
    True
    """
    if n_systems < 2 or n_items < 2:
        raise InvalidInputError(f"a leaderboard needs n_systems >= 2 and n_items >= 2, got {n_systems} and {n_items}.")
    if not 0 <= missing < 1 or not 0 <= flat_share <= 1 or not 0 <= guessing < 1:
        raise InvalidInputError(f"missing and guessing must lie in [0, 1) and flat_share in [0, 1], got {missing}, {guessing} "
                                f"and {flat_share}.")
    rng = seeded_rng(random_seed)
    theta = (rng.gamma(2.0, 1.0, n_systems) - 2.0) / np.sqrt(2.0)
    hard = rng.random(n_items) < HARD_ITEMS[0]
    b = np.where(hard, rng.normal(*HARD_ITEMS[1:], n_items), rng.normal(*OTHER_ITEMS[1:], n_items))
    a = rng.lognormal(0.0, 0.4, n_items)
    a[rng.random(n_items) < flat_share] = 0.05
    p = guessing + (1 - guessing) * special.expit(a[None, :] * (theta[:, None] - b[None, :]))
    correct = (rng.random(p.shape) < p).astype(np.int8)
    keep = rng.random(p.shape) >= missing
    s, j = np.nonzero(keep)
    systems = np.array([f"sys{i:04d}" for i in range(n_systems)])
    items = np.array([f"item{k:05d}" for k in range(n_items)])
    table = pd.DataFrame({"respondent": systems[s], "item": items[j], "correct": correct[s, j]})
    truth = {"theta": pd.Series(theta, systems), "a": pd.Series(a, items), "b": pd.Series(b, items)}
    return table, truth


def plant_item_errors(answers: pd.DataFrame, *, miskeyed: float = 0.05, random_items: float = 0.05,
                      random_seed=None) -> tuple[pd.DataFrame, pd.Series]:
    """Answers with planted item errors, for checking an audit: a share ``miskeyed`` of the items
    has every answer flipped (a wrong key: the strong systems now fail it), a share
    ``random_items`` has its answers replaced by coin flips with the item's own chance, drawn
    U(0.2, 0.8) (an ambiguous item: ability does not matter). The items are drawn at random.

    Parameters
    ----------
    answers : pandas.DataFrame
        Long answers ``respondent, item, correct`` (as :func:`simulate_leaderboard` makes).
    miskeyed, random_items : float
        Shares of the items, each in [0, 1], summing to at most 1.
    random_seed : int, numpy.random.Generator or None
        Same seed, same errors.

    Returns
    -------
    (pandas.DataFrame, pandas.Series)
        The answers and each item's kind (``"keyed"``, ``"miskeyed"``, ``"random"``), indexed by item.

    Examples
    --------
    >>> from bayes_raters.leaderboard import plant_item_errors, simulate_leaderboard
    >>> answers, _ = simulate_leaderboard(50, 40, random_seed=0)
    >>> planted, kind = plant_item_errors(answers, miskeyed=0.1, random_items=0.05, random_seed=0)
    >>> kind.value_counts().to_dict()
    {'keyed': 34, 'miskeyed': 4, 'random': 2}
    """
    if not (0 <= miskeyed <= 1 and 0 <= random_items <= 1 and miskeyed + random_items <= 1):
        raise InvalidInputError(f"miskeyed and random_items must lie in [0, 1] and sum to at most 1, got {miskeyed} and {random_items}.")
    rng = seeded_rng(random_seed)
    items = pd.Index(answers["item"].unique())
    order = rng.permutation(len(items))
    n_flip, n_random = round(miskeyed * len(items)), round(random_items * len(items))
    kind = np.full(len(items), "keyed", dtype=object)
    kind[order[:n_flip]] = "miskeyed"
    kind[order[n_flip:n_flip + n_random]] = "random"
    kind = pd.Series(kind, items, name="kind")
    chance = pd.Series(rng.uniform(0.2, 0.8, len(items)), items)
    row_kind = kind.reindex(answers["item"]).to_numpy()
    correct = answers["correct"].to_numpy().astype(np.int8)
    coins = (rng.random(len(answers)) < chance.reindex(answers["item"]).to_numpy()).astype(np.int8)
    correct = np.where(row_kind == "miskeyed", 1 - correct, np.where(row_kind == "random", coins, correct))
    return answers.assign(correct=correct), kind


def simulate_mixed_leaderboard(n_systems: int, n_binary: int, n_guessing: int, n_graded: int, *, grades: int = 10,
                               n_bounded: int = 0, missing: float = 0.05, random_seed=None) -> tuple[pd.DataFrame, dict]:
    r"""A benchmark suite of mixed response types on one ability per system: ``n_binary`` 0/1 items
    (2PL), ``n_guessing`` multiple-choice items (3PL, guessing chance drawn U(0.15, 0.35), not the
    model's logit-normal prior), ``n_graded`` items graded 1..``grades`` (the graded model, its shared
    cutpoints with spacings drawn U(0.4, 1.6), not its log-normal prior) and ``n_bounded`` items scored in
    [0, 1] (the ordered beta, its cutpoints' spacing drawn U(3, 6) and its precision U(5, 30), not its
    log-normal priors). Abilities, difficulties and
    slopes are drawn as in :func:`simulate_leaderboard` (skewed abilities, a two-cluster difficulty
    mixture, LogNormal(0, 0.4) slopes), answers left out at random with probability ``missing``.

    Parameters
    ----------
    n_systems : int
        Systems (two or more).
    n_binary, n_guessing, n_graded : int
        Items of each type (0/1, 3PL, graded), two or more in all (with ``n_bounded``).
    grades : int
        Grades of the graded items (3 or more), 1..``grades``.
    n_bounded : int
        Items with bounded scores in [0, 1] (exact zeros and ones among them).
    missing : float
        Share of (system, item) answers left out at random.
    random_seed : int, numpy.random.Generator or None
        Same seed, same suite.

    Returns
    -------
    (pandas.DataFrame, dict)
        Long answers ``respondent, item, correct`` (the grade for graded items) and the truth:
        ``theta``, ``a``, ``b``, ``c`` (3PL items), ``cutpoints`` (the graded scale's, centred),
        ``item_type`` and, with bounded items, ``bounded_cutpoints`` and ``precision``.

    Examples
    --------
    >>> from bayes_raters.leaderboard.simulate import simulate_mixed_leaderboard
    >>> answers, truth = simulate_mixed_leaderboard(20, 5, 5, 5, missing=0.0, random_seed=0)
    >>> truth["item_type"].value_counts().to_dict(), int(answers["correct"].max())
    ({'2pl': 5, '3pl': 5, 'graded': 5}, 10)
    """
    counts = (n_binary, n_guessing, n_graded, n_bounded)
    if n_systems < 2 or min(counts) < 0 or sum(counts) < 2 or grades < 3:
        raise InvalidInputError("a mixed leaderboard needs two systems, two items (counts >= 0) and grades >= 3.")
    rng = seeded_rng(random_seed)
    n_items = sum(counts)
    theta = (rng.gamma(2.0, 1.0, n_systems) - 2.0) / np.sqrt(2.0)
    hard = rng.random(n_items) < HARD_ITEMS[0]
    b = np.where(hard, rng.normal(*HARD_ITEMS[1:], n_items), rng.normal(*OTHER_ITEMS[1:], n_items))
    a = rng.lognormal(0.0, 0.4, n_items)
    kind = np.repeat(["2pl", "3pl", "graded", "bounded"], counts)
    c = rng.uniform(0.15, 0.35, n_guessing)
    tau = np.concatenate([[0.0], np.cumsum(rng.uniform(0.4, 1.6, grades - 2))])
    kappa = tau - tau.mean()
    eta = a[None, :] * (theta[:, None] - b[None, :])
    p = special.expit(eta)
    p[:, kind == "3pl"] = c + (1 - c) * p[:, kind == "3pl"]
    score = (rng.random(p.shape) < p).astype(float)
    score[:, kind == "graded"] = 1 + ordered_draw(eta[:, kind == "graded"], kappa, rng)
    bounded = {}
    if n_bounded:  # drawn only here, so suites without bounded items keep their draws
        half, precision = rng.uniform(1.5, 3.0), rng.uniform(5.0, 30.0)
        score[:, kind == "bounded"] = bounded_draw(eta[:, kind == "bounded"], np.array([-half, half]), precision, rng)
        bounded = {"bounded_cutpoints": pd.Series([-half, half], ["zero", "one"]), "precision": precision}
    keep = rng.random(p.shape) >= missing
    s, j = np.nonzero(keep)
    systems = np.array([f"sys{i:04d}" for i in range(n_systems)])
    items = np.array([f"item{k:05d}" for k in range(n_items)])
    table = pd.DataFrame({"respondent": systems[s], "item": items[j], "correct": score[s, j]})
    truth = {"theta": pd.Series(theta, systems), "a": pd.Series(a, items), "b": pd.Series(b, items),
             "c": pd.Series(c, items[kind == "3pl"]), "cutpoints": pd.Series(kappa, np.arange(1, grades)),
             "item_type": pd.Series(kind, items)} | bounded
    return table, truth


