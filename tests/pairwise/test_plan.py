"""The pairwise planner (bayes_raters.pairwise.plan): its pieces against their definitions, its
table against the fit it starts from, and its prediction against real refits (two pilots here;
40 in make validate)."""

from __future__ import annotations

import functools
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

from bayes_raters.errors import InvalidInputError
from bayes_raters.pairwise.plan import (
    bald_scores,
    comparisons_to_stop,
    laplace_update,
    outcome_terms,
    plan_pairwise,
    plot_pairwise_plan,
    ranking_measures,
    ranks,
    top_k_probability,
    top_set_probability,
)
from bayes_raters.pairwise.simulate import outcome_probabilities, simulate_judgements
from validation.pairwise_plan_check import TRUTH, compare, one_replication, planted_truth, refit


@pytest.mark.parametrize("link", ["rao-kupper", "probit"])
def test_outcome_score_and_information_match_their_definitions(link):
    """E[score] = 0 and E[score^2] = Fisher information, summed over the three outcomes."""
    d = np.array([-1.5, 0.0, 0.7, 3.0])
    p = outcome_probabilities(d, 0.0, 1.0, 0.5, link)
    scores = np.stack([outcome_terms(d, np.full(4, y), 0.5, link)[0] for y in range(3)], axis=1)
    _, info = outcome_terms(d, np.zeros(4, int), 0.5, link)
    np.testing.assert_allclose((p * scores).sum(axis=1), 0, atol=1e-6)
    np.testing.assert_allclose((p * scores**2).sum(axis=1), info, rtol=1e-5)
    assert (info > 0).all()


def test_laplace_update_finds_the_mode_of_a_one_difference_posterior():
    """Two items, prior N(0, I), ten outcomes of (0, 1): the update's mean difference is the mode
    of the exact posterior of the difference (quadrature), its precision the curvature there."""
    a, b = np.zeros(10, int), np.ones(10, int)
    y = np.array([2] * 6 + [1] * 2 + [0] * 2)
    mean, precision = laplace_update(np.zeros(2), np.eye(2), a, b, y, 0.5, "rao-kupper")

    def log_post(diff):  # the difference u0 - u1 has prior N(0, 2)
        return stats.norm.logpdf(diff, 0, np.sqrt(2)) + np.log(outcome_probabilities(np.full(10, diff), 0, 1, 0.5)[np.arange(10), y]).sum()

    grid = np.linspace(-3, 3, 60001)
    mode = grid[np.argmax([log_post(g) for g in grid])]
    assert mean[0] - mean[1] == pytest.approx(mode, abs=1e-3)
    assert mean.sum() == pytest.approx(0, abs=1e-9)  # the data say nothing about the common shift
    v = np.array([1.0, -1.0])
    curvature = -(log_post(mode + 1e-3) - 2 * log_post(mode) + log_post(mode - 1e-3)) / 1e-6
    variance_of_difference = v @ np.linalg.solve(precision, v)
    assert 1 / variance_of_difference == pytest.approx(curvature, rel=0.05)  # Fisher vs observed information
    density = np.exp([log_post(g) for g in grid[::100]])
    exact_sd = np.sqrt(integrate.trapezoid(density * grid[::100] ** 2, grid[::100]) / integrate.trapezoid(density, grid[::100])
                       - (integrate.trapezoid(density * grid[::100], grid[::100]) / integrate.trapezoid(density, grid[::100])) ** 2)
    assert np.sqrt(variance_of_difference) == pytest.approx(exact_sd, rel=0.1)


def test_rank_measures_and_top_set_probability():
    draws = np.array([[3.0, 2, 1, 0], [2, 3, 1, 0], [3, 1, 2, 0], [0, 1, 2, 3]])
    np.testing.assert_array_equal(ranks(draws)[0], [1, 2, 3, 4])
    assert top_set_probability(draws, np.array([3.0, 2, 1, 0]), 2) == 0.5  # {0, 1} in rows 0 and 1
    assert top_set_probability(draws, np.array([3.0, 2, 1, 0]), 1) == 0.5
    measures = ranking_measures(np.tile([4.0, 3, 2, 1], (10, 1)), np.array([4.0, 3, 2, 1]), 2, 0.9)
    assert measures == {"rank_width": 0.0, "p_top_k": 1.0}


def test_bald_scores_favour_uncertain_close_pairs():
    rng = np.random.default_rng(0)
    u = np.column_stack([rng.normal(0, 0.05, 400), rng.normal(0, 1.0, 400), rng.normal(0.2, 1.0, 400), rng.normal(8, 0.05, 400)])
    i, j, score = bald_scores(u, np.full(400, 0.3), "rao-kupper", 4)
    assert len(i) == 6 and len({tuple(sorted(p)) for p in zip(i, j)}) == 6  # every unordered pair once
    assert np.all(np.diff(score) <= 0)
    assert set((i[0], j[0])) == {1, 2}  # both uncertain and close
    assert set((i[-1], j[-1])) == {0, 3}  # both certain and far apart: the outcome is known


@pytest.fixture(scope="module")
def pilot():
    truth = planted_truth()
    comparisons = simulate_judgements(truth, n_comparisons=150, lam=TRUTH["lam"], epsilon=TRUTH["epsilon"], random_seed=2)["comparisons"]
    return refit(comparisons, 3)


def test_plan_starts_at_the_fit_and_bald_gains_more_than_random(pilot):
    plan = plan_pairwise(pilot, extra=[0, 100, 200], simulations=20, random_seed=0)
    assert plan.attrs["top_k"] == 3 and set(plan["strategy"]) == {"bald", "random"}
    start = plan[plan["extra"] == 0].set_index("strategy")
    from bayes_raters.pairwise.plan import ability_draws

    u, _ = ability_draws(pilot)
    now = ranking_measures(u, pilot.posterior["s"].mean(("chain", "draw")).to_numpy(), 3, 0.9)
    assert start.loc["bald", "rank_width"] == pytest.approx(now["rank_width"], rel=0.05)  # Gaussian vs the draws
    assert start.loc["bald", "p_top_k"] == pytest.approx(now["p_top_k"], abs=0.05)
    assert top_k_probability(pilot, 3) == pytest.approx(now["p_top_k"])
    for strategy, rows in plan.groupby("strategy"):
        assert rows["rank_width"].is_monotonic_decreasing and rows["spearman"].is_monotonic_increasing, strategy
    at_200 = plan[plan["extra"] == 200].set_index("strategy")
    assert at_200.loc["bald", "rank_width"] < at_200.loc["random", "rank_width"] - 4 * at_200["rank_width_se"].max()
    assert comparisons_to_stop(plan, prob=0.0) == 0 and comparisons_to_stop(plan, prob=1.01) is None
    assert len(plot_pairwise_plan(plan)) == 3


@pytest.mark.parametrize(
    "kwargs, match",
    [({"extra": [-5]}, "extra must be >= 0"), ({"strategies": ["greedy"]}, "strategies must be drawn"),
     ({"top_k": 30}, "top_k must be between 1 and 29"), ({"ci_prob": 1.5}, "ci_prob"), ({"batch": 0}, "batch must be >= 1")],
)
def test_plan_input_errors(pilot, kwargs, match):
    with pytest.raises(InvalidInputError, match=match):
        plan_pairwise(pilot, **kwargs)


def _replications(seeds: list[int], **kwargs) -> pd.DataFrame:
    workers = min(len(seeds), os.cpu_count() or 1)
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pd.concat(pool.map(functools.partial(one_replication, **kwargs), seeds), ignore_index=True)


@pytest.mark.slow
def test_plan_predicts_two_pilots_refitted_for_real():
    """Two pilots (150 random comparisons of 30 items each), +100 comparisons in two BALD batches
    with a refit between them, or at random: the mean planned rank-interval width within
    0.8-1.25 of the refits'. Over 40 pilots one pilot's ratio at +100 had mean 1.01 (BALD) and
    1.06 (random) with SD 0.08-0.09, so a two-pilot mean has SD about 0.06: the bounds sit 3 SD
    or more from the means, while a plan that predicted no narrowing at all would give about
    1.3-1.5. The 15% rule over 40 pilots is in make validate. In ``make validate`` too since
    2026-11-26 (115 s of the suite's budget): ``make test`` runs the same planned-against-refitted
    check through notebook 07 in fast mode (one pilot, bounds 0.7-1.3)."""
    table = compare(_replications([7, 8], sizes=(0, 100))).set_index(["strategy", "extra"])
    assert table["ratio_rank_width"].between(0.8, 1.25).all(), table
    assert table["ratio_spearman"].between(0.9, 1.1).all(), table
    assert table.loc[("bald", 100), "realised_rank_width"] < table.loc[("bald", 0), "realised_rank_width"]


@pytest.mark.slow
def test_plan_predicts_refits_over_forty_pilots():
    """40 truths and pilots: planned / realised mean rank-interval width and Spearman within 15%
    at +50, +100 and +200 comparisons for both strategies; the planned gain in rank width within
    15% of the realised gain at +200; P(top-3 stable) within 3 standard errors of the realised
    one (it is the noisiest measure: over 20 pilots its ratio ranged 0.84-1.10 with seeds 120-139
    and 0.96-1.09 with seeds 100-119; figures in models/planner.md)."""
    replications = _replications(list(range(100, 140)))
    table = compare(replications)
    print(table.round(3).to_string())
    later = table[table["extra"] > 0].set_index(["strategy", "extra"])
    for measure in ("rank_width", "spearman"):
        assert later[f"ratio_{measure}"].between(0.85, 1.15).all(), later
    gain = later.xs(200, level="extra")
    assert (gain["planned_gain_rank_width"] / gain["realised_gain_rank_width"]).between(0.85, 1.15).all(), gain
    gap = (later["planned_p_top_k"] - later["realised_p_top_k"]).abs()
    assert (gap < 3 * later["se_difference_p_top_k"]).all(), later
