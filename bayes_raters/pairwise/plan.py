r"""Planning the next pairwise judgements from a fitted beta-latent result (a preposterior
analysis): how well will the ranking be known after :math:`n` more comparisons chosen by
:meth:`~bayes_raters.pairwise.result.PairwiseResult.next_pairs` (BALD) or at random, and when can
annotation stop?

Coordinates. Comparisons read the items only through the abilities :math:`u_i = \lambda s_i`
(Rao-Kupper log-strengths; probit: :math:`\lambda (s_i - s_j) = u_i - u_j`), and only through
their differences. A common shift of every :math:`s` and the scale :math:`\lambda` stay with the
priors, so the intervals of :math:`s` itself narrow towards a floor that no number of comparisons
removes. The planner therefore reports what comparisons do identify: the order. Its measures are
the Spearman correlation of the posterior mean ranking with the truth, the mean width of the
items' ``ci_prob`` rank intervals (in rank positions), and the probability that the top-:math:`k`
set is the posterior mean's top-:math:`k` (the stopping rule).

Method (assumed density filtering; no refit). The posterior of :math:`u` is approximated by
:math:`N(m, \Sigma)` (moments of the fit's draws). For each of ``simulations`` runs, a posterior
draw :math:`u^*, \epsilon^*` plays the truth. In rounds of ``batch`` comparisons:

1. choose the pairs: BALD on 200 draws of the current Gaussian (the score of ``next_pairs``),
   or uniformly random distinct pairs;
2. draw their outcomes from :math:`u^*, \epsilon^*`;
3. update by a Laplace step: the mode of :math:`\log N(u; m, \Sigma) + \sum_c \log p(y_c \mid
   u_{a_c} - u_{b_c}, \hat\epsilon)` by Fisher scoring (:math:`\hat\epsilon` the posterior mean),
   precision :math:`\Sigma^{-1} + \sum_c f(d_c) v_c v_c^\top` with :math:`v_c = e_{a_c} -
   e_{b_c}` and :math:`f` the outcome's Fisher information about the difference.

At each planned size the current Gaussian gives the measures (ranks of 400 of its draws), and
the run's truth gives the Spearman correlation; the table averages over the runs. Annotator
consistencies are left out: a comparison counts with the panel's mean consistency. Checked against real
refits on simulated data in ``tests/pairwise/test_plan.py`` (figures in ``models/planner.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from bayes_raters.errors import InvalidInputError
from bayes_raters.pairwise.design import random_pairs
from bayes_raters.pairwise.simulate import outcome_probabilities
from bayes_raters.results import check_ci_prob, draw_categories, seeded_rng

STRATEGIES = ("bald", "random")
SELECTION_DRAWS = 200  # draws that score candidate pairs: posterior draws in next_pairs, Gaussian ones here
SUMMARY_DRAWS = 400  # Gaussian draws that give rank intervals and the top-k probability
STEP = 1e-5  # finite-difference step for the outcome's derivatives in the difference


def _entropy(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-12, 1.0)
    return -(p * np.log(p)).sum(axis=-1)


def bald_scores(u: np.ndarray, epsilon: np.ndarray, link: str, n_anchors: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BALD score H[E p] - E H[p] of the next outcome of (i, j) over draws ``u`` (draws, items)
    of the abilities, for the ``n_anchors`` items of highest variance paired with every item;
    each unordered pair once. Returns positions i, j and scores, best first."""
    anchors = np.argsort(-u.var(axis=0), kind="stable")[: min(n_anchors, u.shape[1])]
    i, j = np.meshgrid(anchors, np.arange(u.shape[1]), indexing="ij")
    keep = i != j
    i, j = i[keep], j[keep]
    low, high = np.minimum(i, j), np.maximum(i, j)
    _, first = np.unique(low * u.shape[1] + high, return_index=True)
    i, j = i[np.sort(first)], j[np.sort(first)]
    p = outcome_probabilities(u[:, i], u[:, j], 1.0, epsilon[:, None], link)
    score = _entropy(p.mean(axis=0)) - _entropy(p).mean(axis=0)
    order = np.argsort(-score, kind="stable")
    return i[order], j[order], score[order]


def outcome_terms(d: np.ndarray, y: np.ndarray, epsilon: float, link: str) -> tuple[np.ndarray, np.ndarray]:
    """For outcomes ``y`` (0 loss, 1 tie, 2 win of item_a) at ability differences ``d``: the
    derivative of log p(y) in d and the outcome's Fisher information about d,
    sum_k p_k'(d)^2 / p_k (central differences of :func:`outcome_probabilities`)."""
    p = outcome_probabilities(d, 0.0, 1.0, epsilon, link)
    dp = (outcome_probabilities(d + STEP, 0.0, 1.0, epsilon, link) - outcome_probabilities(d - STEP, 0.0, 1.0, epsilon, link)) / (2 * STEP)
    p = np.clip(p, 1e-300, None)
    rows = np.arange(len(d))
    return dp[rows, y] / p[rows, y], (dp**2 / p).sum(axis=1)


def laplace_update(mean: np.ndarray, precision: np.ndarray, a: np.ndarray, b: np.ndarray, y: np.ndarray,
                   epsilon: float, link: str, iterations: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian N(mean, precision^-1) times the outcomes' likelihood, approximated by a Gaussian
    at its mode (Fisher scoring from ``mean``). Returns the new mean and precision."""
    u = mean.copy()
    n = len(mean)
    for _ in range(iterations):
        score, info = outcome_terms(u[a] - u[b], y, epsilon, link)
        gradient = -precision @ (u - mean) + np.bincount(a, score, n) - np.bincount(b, score, n)
        hessian = precision + _information_matrix(a, b, info, n)
        step = np.linalg.solve(hessian, gradient)
        u = u + step
        if np.max(np.abs(step)) < 1e-8:
            break
    _, info = outcome_terms(u[a] - u[b], y, epsilon, link)
    return u, precision + _information_matrix(a, b, info, n)


def _information_matrix(a: np.ndarray, b: np.ndarray, info: np.ndarray, n: int) -> np.ndarray:
    """sum_c info_c (e_a - e_b)(e_a - e_b)^T as a dense (n, n) matrix."""
    out = np.zeros((n, n))
    np.add.at(out, (a, a), info)
    np.add.at(out, (b, b), info)
    np.add.at(out, (a, b), -info)
    np.add.at(out, (b, a), -info)
    return out


def ranks(u: np.ndarray) -> np.ndarray:
    """Rank of each item within each row (1 = highest)."""
    return (-u).argsort(axis=-1).argsort(axis=-1) + 1


def top_set_probability(draws: np.ndarray, center: np.ndarray, k: int) -> float:
    """Share of draws (draws, items) whose top-k set is the top-k set of ``center``."""
    top = np.sort(np.argsort(-center, kind="stable")[:k])
    return float(np.mean((np.sort(np.argsort(-draws, axis=1)[:, :k], axis=1) == top).all(axis=1)))


def ranking_measures(draws: np.ndarray, center: np.ndarray, k: int, ci_prob: float) -> dict[str, float]:
    """Mean width of the items' equal-tailed rank intervals and the top-k probability."""
    r = ranks(draws)
    low, high = np.quantile(r, [0.5 - ci_prob / 2, 0.5 + ci_prob / 2], axis=0)
    return {"rank_width": float(np.mean(high - low)), "p_top_k": top_set_probability(draws, center, k)}


def ability_draws(result, what: str = "plan_pairwise") -> tuple[np.ndarray, np.ndarray]:
    """(draws, items) abilities u = c-bar lambda s and the draws of epsilon (zeros without ties);
    c-bar is the panel's mean consistency (1 without annotator effects): the scale at which a
    comparison by a typical annotator reads the items, which the data identify (lambda alone
    is not, beside the panel's scale: :func:`~bayes_raters.pairwise.abilities.panel_consistency`)."""
    posterior = result.posterior
    if "lambda" not in posterior:
        raise InvalidInputError(f"{what} needs a fit with pairwise comparisons (lambda).")
    stacked = posterior.stack(sample=("chain", "draw"))
    scale = stacked["lambda"] * (stacked["consistency"].mean("annotator") if "consistency" in posterior else 1.0)
    u = (stacked["s"] * scale).transpose("sample", "item").to_numpy()
    eps = stacked["epsilon"].to_numpy() if "epsilon" in posterior else np.zeros(u.shape[0])
    return u, eps


@dataclass(frozen=True)
class _Run:
    """One preposterior run's fixed inputs."""

    truth: np.ndarray
    truth_epsilon: float
    epsilon: float
    link: str
    k: int
    ci_prob: float


def _one_run(run: _Run, mean, precision, strategy: str, sizes: list[int], batch: int, n_anchors: int, rng) -> list[dict]:
    """Measures at each planned size for one truth and one strategy."""
    n, done, rows = len(mean), 0, []
    for size in sizes:
        while done < size:
            m = min(batch, size - done)
            if strategy == "bald":
                draws = rng.multivariate_normal(mean, np.linalg.inv(precision), SELECTION_DRAWS, method="cholesky")
                a, b, _ = bald_scores(draws, np.full(SELECTION_DRAWS, run.epsilon), run.link, n_anchors)
                a, b = a[:m], b[:m]
            else:
                a, b = random_pairs(n, m, rng)
            p = outcome_probabilities(run.truth[a], run.truth[b], 1.0, run.truth_epsilon, run.link)
            y = draw_categories(p, rng)
            mean, precision = laplace_update(mean, precision, a, b, y, run.epsilon, run.link)
            done += m
        draws = rng.multivariate_normal(mean, np.linalg.inv(precision), SUMMARY_DRAWS, method="cholesky")
        row = {"strategy": strategy, "extra": size, "spearman": float(stats.spearmanr(mean, run.truth)[0])}
        row.update(ranking_measures(draws, mean, run.k, run.ci_prob))
        row["top_k_correct"] = float(set(np.argsort(-mean)[: run.k]) == set(np.argsort(-run.truth)[: run.k]))
        rows.append(row)
    return rows


def plan_pairwise(
    result, extra=(0, 25, 50, 100, 200), *, strategies=STRATEGIES, batch: int = 25, top_k: int = 3,
    ci_prob: float = 0.9, simulations: int = 40, n_anchors: int = 50, random_seed=None,
) -> pd.DataFrame:
    """Expected ranking measures after ``extra`` more comparisons, chosen in rounds of ``batch``
    by BALD (``next_pairs``, refitted between rounds) or at random, from a fitted
    :func:`~bayes_raters.pairwise.fit_pairwise` result; module docstring for the method.

    Returns a tidy table, one row per (strategy, extra): ``spearman`` (expected Spearman
    correlation of the posterior mean ranking with the truth), ``rank_width`` (expected mean
    width of the items' ``ci_prob`` rank intervals), ``p_top_k`` (expected posterior probability
    that the top-``top_k`` set is the posterior mean's), ``top_k_correct`` (probability that the
    posterior mean's top-``top_k`` set is the true one), each with its Monte Carlo standard error
    (``*_se``) over the ``simulations`` runs.

    Parameters
    ----------
    result : PairwiseResult
        A fitted pairwise result.
    extra : sequence of int
        Numbers of extra comparisons to plan for.
    strategies : sequence of str
        ``"bald"`` and/or ``"random"``.
    batch : int
        Comparisons chosen per round.
    top_k : int
        Size of the top set.
    ci_prob : float
        Probability of the rank intervals.
    simulations : int
        Simulated futures per strategy.
    n_anchors : int
        Posterior draws the simulated truths are drawn from.
    random_seed : int, numpy.random.Generator or None
        Seed of every draw.

    Returns
    -------
    pandas.DataFrame
        One row per (strategy, extra), the columns above.

    Examples
    --------
    >>> from bayes_raters.pairwise import fit_pairwise, latent_values, plan_pairwise, simulate_judgements
    >>> data = simulate_judgements(latent_values(6, random_seed=1), n_comparisons=60, random_seed=1)
    >>> result = fit_pairwise(data["comparisons"], random_seed=1, progressbar=False)
    >>> plan = plan_pairwise(result, extra=(0, 20), strategies=("random",), batch=10, simulations=2, random_seed=1)
    >>> plan.shape[0], "spearman" in plan
    (2, True)
    """
    check_ci_prob(ci_prob)
    sizes = sorted({int(e) for e in np.atleast_1d(extra)})
    if sizes[0] < 0:
        raise InvalidInputError(f"extra must be >= 0 comparisons, got {sizes}.")
    unknown = sorted(set(strategies) - set(STRATEGIES))
    if unknown or not len(strategies):
        raise InvalidInputError(f"strategies must be drawn from {STRATEGIES}, got {list(strategies)}.")
    if batch < 1 or simulations < 2:
        raise InvalidInputError(f"batch must be >= 1 and simulations >= 2, got {batch} and {simulations}.")
    u, eps = ability_draws(result)
    if not 1 <= top_k < u.shape[1]:
        raise InvalidInputError(f"top_k must be between 1 and {u.shape[1] - 1} (the fit has {u.shape[1]} items), got {top_k}.")
    rng = seeded_rng(random_seed)
    mean = u.mean(axis=0)
    precision = np.linalg.inv(np.cov(u, rowvar=False) + 1e-9 * np.eye(u.shape[1]))
    rows = []
    for _ in range(simulations):
        pick = int(rng.integers(u.shape[0]))
        run = _Run(u[pick], float(eps[pick]), float(eps.mean()), result.spec.link, top_k, ci_prob)
        seed = int(rng.integers(2**31))
        for strategy in strategies:  # common random numbers: the same truth and stream per strategy
            rows += _one_run(run, mean, precision, strategy, sizes, batch, n_anchors, np.random.default_rng(seed))
    runs = pd.DataFrame(rows)
    grouped = runs.groupby(["strategy", "extra"], sort=False)
    table = grouped.mean()
    se = grouped.std() / np.sqrt(simulations)
    table = table.join(se.add_suffix("_se")).reset_index()
    table.attrs.update(top_k=top_k, ci_prob=ci_prob, batch=batch, simulations=simulations, items=u.shape[1])
    return table


def top_k_probability(result, k: int = 3) -> float:
    """Posterior probability that the top-k set is the posterior mean's top-k set (the
    stopping rule reads this against a target such as 0.9).

    Parameters
    ----------
    result : PairwiseResult
        A fitted pairwise result.
    k : int
        Size of the top set.

    Returns
    -------
    float
        The probability.

    Examples
    --------
    >>> from bayes_raters.pairwise import fit_pairwise, latent_values, simulate_judgements, top_k_probability
    >>> data = simulate_judgements(latent_values(6, random_seed=2), n_comparisons=80, random_seed=2)
    >>> result = fit_pairwise(data["comparisons"], random_seed=2, progressbar=False)
    >>> 0 <= top_k_probability(result, k=2) <= 1
    True
    """
    u, _ = ability_draws(result)
    return top_set_probability(u, result.posterior["s"].mean(("chain", "draw")).to_numpy(), k)


def comparisons_to_stop(plan: pd.DataFrame, prob: float = 0.9, strategy: str = "bald") -> int | None:
    """Stopping rule read off a plan: the fewest planned extra comparisons at which the top-k set
    is expected to be stable with probability ``prob`` (None if no planned size reaches it).

    Parameters
    ----------
    plan : pandas.DataFrame
        A table of :func:`plan_pairwise`.
    prob : float
        The probability the top-k set must reach.
    strategy : str
        The strategy read (``"bald"`` or ``"random"``).

    Returns
    -------
    int or None
        The number of extra comparisons, or None.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayes_raters.pairwise import comparisons_to_stop
    >>> plan = pd.DataFrame({"strategy": "bald", "extra": [0, 50, 100], "p_top_k": [0.6, 0.85, 0.93]})
    >>> comparisons_to_stop(plan, prob=0.9)
    100
    """
    rows = plan[(plan["strategy"] == strategy) & (plan["p_top_k"] >= prob)]
    return int(rows["extra"].min()) if len(rows) else None


def plot_pairwise_plan(plan: pd.DataFrame, axes=None):
    """Expected Spearman, rank-interval width and top-k probability against extra comparisons,
    one line per strategy. Returns the Axes.

    Parameters
    ----------
    plan : pandas.DataFrame
        A table of :func:`plan_pairwise`.
    axes : sequence of matplotlib.axes.Axes, optional
        Three Axes to draw on; default a new figure.

    Returns
    -------
    numpy.ndarray of matplotlib.axes.Axes
        The three Axes.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> from bayes_raters.pairwise import plot_pairwise_plan
    >>> plan = pd.DataFrame({"strategy": "random", "extra": [0, 50], "spearman": [0.7, 0.8], "spearman_se": 0.01,
    ...                      "rank_width": [3.0, 2.5], "rank_width_se": 0.1, "p_top_k": [0.5, 0.6], "p_top_k_se": 0.02,
    ...                      "top_k_correct": [0.4, 0.5], "top_k_correct_se": 0.02})
    >>> len(plot_pairwise_plan(plan))
    3
    """
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(1, 3, figsize=(12, 3.5))
    for strategy, rows in plan.groupby("strategy", sort=False):
        for ax, column in zip(axes, ("spearman", "rank_width", "p_top_k")):
            ax.errorbar(rows["extra"], rows[column], yerr=2 * rows[f"{column}_se"], marker="o", label=strategy, capsize=2)
    for ax, label in zip(axes, ("Spearman with the truth", f"mean {plan.attrs.get('ci_prob', 0.9):.0%} rank width",
                                f"P(top-{plan.attrs.get('top_k', 3)} set stable)")):
        ax.set_xlabel("further comparisons")
        ax.set_ylabel(label)
    axes[0].legend()
    return axes
