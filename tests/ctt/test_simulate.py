"""The Loukina et al. (2020) simulation design."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from bayes_raters import InvalidInputError
from bayes_raters.ctt import (
    double_scored_subset,
    ratings_to_long,
    simulate_dataset,
    system_scores_to_long,
)

TARGET_R = {"low": 0.40, "moderate": 0.55, "average": 0.65, "high": 0.80}
TARGET_R2 = {"poor": 0.0, "low": 0.40, "medium": 0.65, "high": 0.80, "perfect": 0.99}


@pytest.fixture(scope="module")
def data():
    return simulate_dataset(random_seed=2020)


def test_structure_and_names(data):
    assert dict(data.sizes) == {"response": 10_000, "rater": 200, "system": 25}
    assert data["rating"].dims == ("response", "rater")
    assert data["system_score"].dims == ("response", "system")
    assert list(data["rater"].values[:2]) == ["h_1", "h_2"]
    assert data["rater_category"].sel(rater="h_200").item() == "high"
    assert data["system_category"].sel(system="sys_25").item() == "perfect"
    ratings = data["rating"].values
    assert np.all(ratings == np.round(ratings)) and ratings.min() >= 1 and ratings.max() <= 6
    assert data["true_score"].min() >= 1 and data["true_score"].max() <= 6


@pytest.mark.parametrize("category", list(TARGET_R))
def test_inter_rater_correlation_per_category(data, category):
    raters = data["rater"].where(data["rater_category"] == category, drop=True).values
    corr = np.corrcoef(data["rating"].sel(rater=raters).values, rowvar=False)
    mean_r = corr[np.triu_indices_from(corr, k=1)].mean()
    assert mean_r == pytest.approx(TARGET_R[category], abs=0.02)


@pytest.mark.parametrize("category", list(TARGET_R2))
def test_system_r2_against_true_score_per_category(data, category):
    systems = data["system"].where(data["system_category"] == category, drop=True).values
    true = data["true_score"].values
    scores = data["system_score"].sel(system=systems).values
    r2 = 1 - ((scores - true[:, None]) ** 2).mean(axis=0) / true.var()
    assert r2.mean() == pytest.approx(TARGET_R2[category], abs=0.02)


def test_same_seed_same_data_bit_for_bit():
    a = simulate_dataset(500, random_seed=np.random.default_rng(9))
    b = simulate_dataset(500, random_seed=9)
    xr.testing.assert_identical(a, b)
    assert not simulate_dataset(500, random_seed=10)["rating"].equals(a["rating"])


def test_long_converters(data):
    small = data.isel(response=slice(0, 20))
    ratings = ratings_to_long(small, raters=["h_1", "h_2"])
    assert list(ratings.columns) == ["response", "rater", "score"] and len(ratings) == 40
    systems = system_scores_to_long(small)
    assert list(systems.columns) == ["response", "system", "score"] and len(systems) == 20 * 25
    row = systems.iloc[3]
    assert row["score"] == small["system_score"].sel(response=row["response"], system=row["system"]).item()


def test_double_scored_subset(data):
    subset = double_scored_subset(data, ("h_151", "h_152"), 250, random_seed=1)
    counts = subset.groupby("response").size()
    assert len(counts) == 10_000 and (counts == 2).sum() == 250
    assert set(subset.loc[subset["rater"] == "h_152", "response"]) == set(counts[counts == 2].index)
    only = double_scored_subset(data, ("h_151", "h_152"), 250, only_double_scored=True, random_seed=1)
    assert len(only) == 500 and only.groupby("response").size().eq(2).all()
    assert set(only["response"]) == set(counts[counts == 2].index)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"n_responses": 1}, "n_responses"),
        ({"true_sd": 0}, "true_sd"),
        ({"score_range": (6, 1)}, "score_range"),
        ({"system_r2": {"bad": 1.5}}, "R2"),
        ({"rater_error_sds": {"bad": -1}}, "SDs"),
    ],
)
def test_bad_design_raises(kwargs, message):
    with pytest.raises(InvalidInputError, match=message):
        simulate_dataset(**{"n_responses": 10, **kwargs})


def test_bad_subset_raises(data):
    with pytest.raises(InvalidInputError, match="n_double"):
        double_scored_subset(data, ("h_1", "h_2"), 0)
    with pytest.raises(InvalidInputError, match="different"):
        double_scored_subset(data, ("h_1", "h_1"), 5)
