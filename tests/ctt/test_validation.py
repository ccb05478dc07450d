"""Slow statistical validation (``make validate``): properties over many replications."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from bayes_raters import SmallSampleWarning
from bayes_raters.ctt import double_scored_subset, prmse_table, simulate_dataset, system_scores_to_long

pytestmark = pytest.mark.slow


def _replicate(seed: int, n_double: int) -> tuple[float, float]:
    data = simulate_dataset(2000, raters_per_category=2, system_r2={"high": 0.8}, systems_per_category=1, random_seed=seed)
    ratings = double_scored_subset(data, ("h_3", "h_4"), n_double, random_seed=seed)  # 'moderate' pair
    with warnings.catch_warnings():  # out-of-range values are part of what is measured here
        warnings.simplefilter("ignore", SmallSampleWarning)
        prmse = prmse_table(ratings, system_scores_to_long(data)).loc["sys_1", "prmse"]
    true, scores = data["true_score"].values, data["system_score"].values[:, 0]
    return prmse, 1 - np.mean((scores - true) ** 2) / np.var(true)


def test_closed_form_prmse_is_unbiased_for_r2_against_true_score():
    pairs = np.array([_replicate(seed, 2000) for seed in range(200)])
    bias = np.mean(pairs[:, 0] - pairs[:, 1])
    assert abs(bias) < 0.005, f"mean PRMSE - R2(true) = {bias:.4f} over 200 replications"


def test_prmse_spread_shrinks_with_more_double_scored_responses():
    sds = [np.std([_replicate(seed, n)[0] for seed in range(100)]) for n in (100, 500, 2000)]
    assert sds[0] > sds[1] > sds[2], sds
