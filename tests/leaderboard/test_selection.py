"""Small benchmarks from a fitted bank: the score estimate from a few items, the item choices,
and (slow) the issue's comparison on held-out systems: information-chosen items against random
items and tinyBenchmarks-style anchors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayes_raters.errors import InvalidInputError
from bayes_raters.leaderboard import compare_item_selections, estimate_scores, select_items
from bayes_raters.leaderboard.selection import cluster_anchors, greedy_information
from tests.leaderboard.conftest import answers_of, synthetic_bank


def long_answers(bank, a, b, thetas, rng) -> pd.DataFrame:
    frames = [answers_of(t, a, b, bank.items, rng).rename("correct").rename_axis("item").reset_index().assign(respondent=f"new{s:02d}")
              for s, t in enumerate(thetas)]
    return pd.concat(frames, ignore_index=True)


def test_a_system_that_answered_every_item_scores_its_share_correct():
    bank, a, b = synthetic_bank(60, random_seed=1)
    answers = long_answers(bank, a, b, [0.3], np.random.default_rng(2))
    table = estimate_scores(bank, answers, random_seed=3)
    assert table.loc["new00", "score_mean"] == pytest.approx(answers["correct"].mean(), abs=1e-12)
    assert table.loc["new00", "score_sd"] == pytest.approx(0.0, abs=1e-12)


def test_score_intervals_from_a_few_items_cover_the_full_scores():
    bank, a, b = synthetic_bank(500, random_seed=4)
    rng = np.random.default_rng(5)
    answers = long_answers(bank, a, b, rng.normal(0, 1.2, 60), rng)
    full = answers.groupby("respondent")["correct"].mean()
    chosen = select_items(bank, 40, method="random", random_seed=6)
    table = estimate_scores(bank, answers[answers["item"].isin(chosen.index)], random_seed=7)
    covered = (table["score_lower"] <= full[table.index]) & (full[table.index] <= table["score_upper"])
    assert 0.8 <= covered.mean() <= 1.0
    assert (table["n_answers"] == 40).all() and table["score_sd"].between(0.005, 0.1).all()


def test_information_items_lower_the_summed_score_variance_that_random_items_leave():
    bank, _, _ = synthetic_bank(400, random_seed=8)
    greedy = greedy_information(bank, 30)
    assert len(set(greedy)) == 30

    def summed_variance(positions):
        from scipy import special
        theta = bank.theta.mean(0)
        p = special.expit(bank.a_mean * (theta[:, None] - bank.b_mean))
        slope = (bank.a_mean * p * (1 - p)).mean(1)
        return (slope**2 / (1 + (bank.a_mean**2 * p * (1 - p))[:, positions].sum(1))).sum()

    rng = np.random.default_rng(9)
    random_sets = [summed_variance(rng.choice(400, 30, replace=False)) for _ in range(20)]
    assert summed_variance(greedy) < 0.8 * min(random_sets)


def test_cluster_anchors_weigh_each_cluster_by_its_share_of_the_items():
    rng = np.random.default_rng(10)
    centres = np.array([[0.0] * 8, [1.0] * 8, [0.0] * 4 + [1.0] * 4])
    sizes = [5, 10, 15]
    vectors = np.vstack([c + 0.01 * rng.standard_normal((n, 8)) for c, n in zip(centres, sizes, strict=True)])
    positions, weights = cluster_anchors(vectors, 3, rng)
    assert sorted(weights * 30) == pytest.approx(sizes)
    assert sorted(np.searchsorted(np.cumsum(sizes), positions, side="right")) == [0, 1, 2]


def test_item_selection_refuses_bad_input():
    bank, _, _ = synthetic_bank(30, random_seed=11)
    with pytest.raises(InvalidInputError, match="method='information'"):
        select_items(bank, 5, method="best")
    with pytest.raises(InvalidInputError, match="k must lie between"):
        select_items(bank, 30)
    with pytest.raises(InvalidInputError, match="pass the fitted leaderboard"):
        select_items(bank, 5, method="cluster")
    with pytest.raises(InvalidInputError, match="respondent, item, correct"):
        estimate_scores(bank, pd.DataFrame({"item": ["item0000"], "correct": [1]}))
    same = select_items(bank, 5, method="random", random_seed=12)
    assert same.index.equals(select_items(bank, 5, method="random", random_seed=12).index)


@pytest.mark.slow
def test_on_held_out_systems_information_items_reproduce_scores_best(held_out_bank):
    """The issue's comparison: 50 of 600 items chosen by information, at random, or as k-means
    anchors, each held-out system scored from its answers to them; the IRT estimate from the
    information items has the smallest error and its 90% intervals cover the full scores."""
    result, held = held_out_bank
    table = compare_item_selections(result, held, 50, random_seed=2)
    mae = table.groupby(["method", "estimator"])["error"].apply(lambda e: e.abs().mean())
    assert mae["information", "irt"] < 0.85 * min(mae["random", "irt"], mae["cluster", "mean"], mae["random", "mean"]), mae
    irt = table[table["estimator"] == "irt"]
    covered = irt.assign(c=(irt["lower"] <= irt["full_score"]) & (irt["full_score"] <= irt["upper"])).groupby("method")["c"].mean()
    assert covered.between(0.8, 1.0).all(), covered
