r"""Small benchmarks from a fitted leaderboard: which :math:`k` items reproduce the full
benchmark's scores, and each new system's full-benchmark score from its answers to them.

The full-benchmark score of a system is its share of right answers over the bank's :math:`J`
items. From answers :math:`y_K` to a subset :math:`K`, its posterior predictive is

.. math::

    S = \frac{1}{J}\Big(\sum_{j \in K} y_j + \sum_{j \notin K} y_j^{\text{new}}\Big), \qquad
    y_j^{\text{new}} \sim \text{Bernoulli}\big(p_{jd}(\theta)\big), \quad
    \theta \sim p(\theta \mid y_K), \; d \sim \text{bank draws}

(:mod:`bayes_raters.leaderboard.ability`; the sum of the unanswered Bernoullis is drawn as a normal
with their mean and variance, exact to well below the Monte Carlo error for hundreds of items).
Its posterior SD is the expected error of the score from those :math:`k` items.

Item choice (:func:`select_items`):

- ``"information"``: greedy, each step adds the item that most lowers
  :math:`\sum_s c_s^2 / (1 + \sum_{j \in K} I_j(\theta_s))` over the bank's systems (at their
  posterior means), where :math:`I_j(\theta) = a_j^2 p_j(1 - p_j)` is item :math:`j`'s Fisher
  information and :math:`c_s = \frac{1}{J}\sum_j a_j p_j(1-p_j)` the slope of the full score in
  :math:`\theta` at :math:`\theta_s`: the sum over systems of the delta-method variance of the
  score, so items go where the systems are;
- ``"random"``: :math:`k` items at random (the baseline);
- ``"cluster"``: anchor items as in tinyBenchmarks (Polo et al. 2024): k-means
  (:func:`scipy.cluster.vq.kmeans2`) on the items' right/wrong vectors over the bank's systems,
  the item nearest each centre, weighted by its cluster's share of the items (the weighted mean of
  a system's anchor answers estimates its score).

:func:`compare_item_selections` scores held-out systems each way and sets the estimates beside
their full-benchmark scores.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special
from scipy.cluster.vq import kmeans2

from bayes_raters.errors import InvalidInputError
from bayes_raters.leaderboard.ability import MAX_DRAWS, ItemBank, ability_from_answers, item_bank
from bayes_raters.results import check_ci_prob, seeded_rng

SELECTION_METHODS = ("information", "random", "cluster")


def select_items(result, k: int, *, method: str = "information", random_seed=None) -> pd.DataFrame:
    """``k`` items of a fitted leaderboard for a small benchmark (module docstring).

    Parameters
    ----------
    result : LeaderboardResult
        The fitted leaderboard (the bank).
    k : int
        How many items.
    method : {"information", "random", "cluster"}
        How to choose them.
    random_seed : int, numpy.random.Generator or None
        Seeds ``"random"`` and the k-means of ``"cluster"``.

    Returns
    -------
    pandas.DataFrame
        Indexed by item, in the order chosen: ``weight`` (sums to 1: the cluster share for
        ``"cluster"``, else 1/k), the weights of the anchor estimator.

    Examples
    --------
    >>> from bayes_raters.leaderboard import fit_leaderboard, select_items, simulate_leaderboard
    >>> answers, _ = simulate_leaderboard(60, 400, random_seed=3)
    >>> chosen = select_items(fit_leaderboard(answers, random_seed=3, progressbar=False), 20)
    >>> len(chosen), bool(abs(chosen["weight"].sum() - 1) < 1e-12)
    (20, True)
    """
    if method not in SELECTION_METHODS:
        raise InvalidInputError(f"method={method!r} is not known; use method='information', 'random' or 'cluster'.")
    bank = item_bank(result)
    n_items = len(bank.items)
    if not 1 <= int(k) < n_items:
        raise InvalidInputError(f"k must lie between 1 and the bank's {n_items - 1} items, got {k}.")
    rng = seeded_rng(random_seed)
    if method == "random":
        positions = rng.choice(n_items, int(k), replace=False)
        weights = np.full(int(k), 1 / int(k))
    elif method == "information":
        positions = greedy_information(bank, int(k))
        weights = np.full(int(k), 1 / int(k))
    elif isinstance(result, ItemBank):
        raise InvalidInputError("method='cluster' clusters the bank's answers: pass the fitted leaderboard, not an ItemBank.")
    else:
        positions, weights = cluster_anchors(answer_vectors(result, bank), int(k), rng)
    return pd.DataFrame({"weight": weights}, index=pd.Index(bank.items[positions], name="item"))


def greedy_information(bank: ItemBank, k: int) -> np.ndarray:
    """Positions of ``k`` items chosen greedily to lower the summed delta-method variance of the
    bank systems' full scores (module docstring)."""
    theta = bank.theta.mean(0)
    a, b = bank.a_mean, bank.b_mean
    p = special.expit(a[None, :] * (theta[:, None] - b[None, :]))
    slope_terms = a[None, :] * p * (1 - p)
    info = a[None, :] * slope_terms
    c2 = slope_terms.mean(1) ** 2
    total = np.ones(theta.size)  # the N(0, 1) prior's precision
    chosen = np.zeros(a.size, bool)
    order = []
    for _ in range(k):
        gain = (c2 / total).sum() - (c2[:, None] / (total[:, None] + info)).sum(0)
        gain[chosen] = -np.inf
        j = int(np.argmax(gain))
        order.append(j)
        chosen[j] = True
        total = total + info[:, j]
    return np.array(order)


def answer_vectors(result, bank: ItemBank) -> np.ndarray:
    """Items x systems right/wrong matrix of the bank's answers, a missing answer set to the item's
    share correct."""
    table = result.answer_table().pivot_table(index="item", columns="respondent", values="correct", aggfunc="mean")
    table = table.reindex(index=bank.items, columns=bank.systems)
    return table.T.fillna(table.mean(axis=1)).T.to_numpy(float)


def cluster_anchors(vectors: np.ndarray, k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """tinyBenchmarks' anchors: k-means on the item vectors, the item nearest each non-empty
    centre, weighted by its cluster's share of the items."""
    centres, labels = kmeans2(vectors, k, seed=rng, minit="++")
    positions, weights = [], []
    for cluster in np.unique(labels):
        members = np.flatnonzero(labels == cluster)
        distance = ((vectors[members] - centres[cluster]) ** 2).sum(1)
        positions.append(members[np.argmin(distance)])
        weights.append(members.size / len(labels))
    return np.array(positions), np.array(weights)


def estimate_scores(result, answers: pd.DataFrame, *, ci_prob: float = 0.9, n_samples: int = 1000,
                    max_draws: int = MAX_DRAWS, random_seed=None) -> pd.DataFrame:
    """Each system's full-benchmark score (share correct over all the bank's items) and ability
    from its answers to some bank items (module docstring).

    Parameters
    ----------
    result : LeaderboardResult or ItemBank
        The fitted bank.
    answers : pandas.DataFrame
        Long answers ``respondent, item, correct`` of the systems to score (new systems; any
        subset of the bank's items).
    ci_prob : float
        Probability of the intervals.
    n_samples : int
        Posterior predictive draws of each score.
    max_draws : int
        Item draws kept from the bank.
    random_seed : int, numpy.random.Generator or None
        Same seed, same intervals.

    Returns
    -------
    pandas.DataFrame
        One row per system: ``n_answers``, ``share_correct`` (on the items answered),
        ``theta_mean/_sd/_lower/_upper`` and ``score_mean/_sd/_lower/_upper``.

    Examples
    --------
    >>> from bayes_raters.leaderboard import estimate_scores, fit_leaderboard, select_items, simulate_leaderboard
    >>> answers, _ = simulate_leaderboard(60, 400, random_seed=3)
    >>> held_out = answers["respondent"] == "sys0059"
    >>> bank = fit_leaderboard(answers[~held_out], random_seed=3, progressbar=False)
    >>> small = answers[held_out & answers["item"].isin(select_items(bank, 30).index)]
    >>> table = estimate_scores(bank, small, random_seed=4)
    >>> full = answers.loc[held_out, "correct"].mean()
    >>> bool(table.loc["sys0059", "score_lower"] < full < table.loc["sys0059", "score_upper"])
    True
    """
    check_ci_prob(ci_prob)
    missing = {"respondent", "item", "correct"} - set(answers.columns)
    if missing:
        raise InvalidInputError(f"answers need the columns respondent, item, correct; missing {sorted(missing)}.")
    bank = item_bank(result, max_draws)
    rng = seeded_rng(random_seed)
    rows = {}
    for system, group in answers.groupby("respondent", sort=False):
        given = group.set_index("item")["correct"].astype(float)
        posterior = ability_from_answers(bank, given, ci_prob)
        scores = score_draws(bank, posterior, int(n_samples), rng)
        tail = (1 - ci_prob) / 2
        rows[system] = {"n_answers": len(given), "share_correct": given.mean(), **posterior.summary(ci_prob).drop("n_items"),
                        "score_mean": scores.mean(), "score_sd": scores.std(ddof=1),
                        "score_lower": np.quantile(scores, tail), "score_upper": np.quantile(scores, 1 - tail)}
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "system"
    return table


def score_draws(bank: ItemBank, posterior, n: int, rng: np.random.Generator) -> np.ndarray:
    """Posterior predictive draws of the full-benchmark share correct (module docstring)."""
    asked = np.zeros(len(bank.items), bool)
    asked[posterior.answered] = True
    theta = posterior.sample(n, rng)
    draw = rng.integers(0, bank.a.shape[0], n)
    p = special.expit(bank.a[draw][:, ~asked] * (theta[:, None] - bank.b[draw][:, ~asked]))
    rest = p.sum(1) + np.sqrt((p * (1 - p)).sum(1)) * rng.standard_normal(n)
    return (sum(posterior.correct) + rest) / len(bank.items)


def compare_item_selections(result, held_out: pd.DataFrame, k: int, *, methods=SELECTION_METHODS, ci_prob: float = 0.9,
                            random_seed=None) -> pd.DataFrame:
    """Score held-out systems from ``k`` items chosen each way and set the estimates beside their
    full-benchmark scores.

    Parameters
    ----------
    result : LeaderboardResult
        The bank, fitted without the held-out systems.
    held_out : pandas.DataFrame
        The held-out systems' answers to all the bank's items (``respondent, item, correct``).
    k : int
        Items per small benchmark.
    methods : sequence of str
        Selections to compare (:func:`select_items`).
    ci_prob, random_seed :
        As in :func:`estimate_scores`.

    Returns
    -------
    pandas.DataFrame
        One row per (``method``, ``estimator``, ``system``): ``estimate``, ``sd`` and
        ``lower``/``upper`` (the IRT estimator's posterior SD, its expected error, and interval;
        NaN for the plain weighted mean), ``full_score``
        (share correct over every item the system answered) and ``error`` = estimate - full.
        Estimators: ``"irt"`` (:func:`estimate_scores`) for every method, and ``"mean"`` (the
        ``weight``-ed mean of the answers to the chosen items) for ``"random"`` and ``"cluster"``.

    Examples
    --------
    >>> from bayes_raters.leaderboard import compare_item_selections, fit_leaderboard, simulate_leaderboard
    >>> answers, _ = simulate_leaderboard(60, 400, random_seed=3)
    >>> held_out = answers["respondent"].isin(["sys0057", "sys0058", "sys0059"])
    >>> bank = fit_leaderboard(answers[~held_out], random_seed=3, progressbar=False)
    >>> table = compare_item_selections(bank, answers[held_out], 30, random_seed=4)
    >>> table.groupby(["method", "estimator"]).size().to_dict()
    {('cluster', 'irt'): 3, ('cluster', 'mean'): 3, ('information', 'irt'): 3, ('random', 'irt'): 3, ('random', 'mean'): 3}
    """
    rng = seeded_rng(random_seed)
    full = held_out.groupby("respondent", sort=False)["correct"].mean()
    rows = []
    for method in methods:
        chosen = select_items(result, k, method=method, random_seed=rng)
        small = held_out[held_out["item"].isin(chosen.index)]
        irt = estimate_scores(result, small, ci_prob=ci_prob, random_seed=rng)
        rows.append(pd.DataFrame({"method": method, "estimator": "irt", "system": irt.index, "estimate": irt["score_mean"].to_numpy(),
                                  "sd": irt["score_sd"].to_numpy(), "lower": irt["score_lower"].to_numpy(),
                                  "upper": irt["score_upper"].to_numpy()}))
        if method != "information":
            weighted = small.assign(w=small["item"].map(chosen["weight"]))
            mean = weighted.groupby("respondent", sort=False).apply(lambda g: np.average(g["correct"], weights=g["w"]), include_groups=False)
            rows.append(pd.DataFrame({"method": method, "estimator": "mean", "system": mean.index, "estimate": mean.to_numpy(),
                                      "sd": np.nan, "lower": np.nan, "upper": np.nan}))
    table = pd.concat(rows, ignore_index=True)
    table["full_score"] = table["system"].map(full).to_numpy()
    table["error"] = table["estimate"] - table["full_score"]
    return table
