"""Classical agreement metrics against scipy / scikit-learn references."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from sklearn.metrics import r2_score as sklearn_r2

from bayes_raters import InvalidInputError
from bayes_raters.agreement import (
    degradation,
    pearson_r,
    quadratic_weighted_kappa,
    r2_score,
    standardized_mean_difference,
)


@pytest.fixture
def scores():
    rng = np.random.default_rng(42)
    true = rng.normal(3.5, 1, 500)
    human_1 = np.clip(np.round(true + rng.normal(0, 0.6, 500)), 1, 6)
    human_2 = np.clip(np.round(true + rng.normal(0, 0.6, 500)), 1, 6)
    system = true + rng.normal(0.2, 0.5, 500)
    return system, human_1, human_2


def test_qwk_on_integer_scores_equals_cohen_kappa_quadratic(scores):
    system, human_1, _ = scores
    discrete = np.clip(np.round(system), 1, 6)
    expected = cohen_kappa_score(human_1.astype(int), discrete.astype(int), weights="quadratic")
    assert quadratic_weighted_kappa(discrete, human_1) == pytest.approx(expected, abs=1e-12)


def test_qwk_continuous_matches_haberman_formula_and_is_symmetric(scores):
    system, human_1, _ = scores
    cov = np.cov(system, human_1, ddof=0)[0, 1]
    expected = 2 * cov / (np.var(system) + np.var(human_1) + (system.mean() - human_1.mean()) ** 2)
    assert quadratic_weighted_kappa(system, human_1) == pytest.approx(expected, rel=1e-12)
    assert quadratic_weighted_kappa(human_1, system) == pytest.approx(expected, rel=1e-12)
    assert quadratic_weighted_kappa(human_1, human_1) == pytest.approx(1.0)


def test_pearson_and_r2_match_references(scores):
    system, human_1, _ = scores
    assert pearson_r(system, human_1) == pytest.approx(stats.pearsonr(system, human_1).statistic, rel=1e-12)
    assert r2_score(system, human_1) == pytest.approx(sklearn_r2(human_1, system), rel=1e-12)


def test_degradation_sign_and_reference(scores):
    system, human_1, human_2 = scores
    hh = stats.pearsonr(human_1, human_2).statistic
    first = degradation(system, human_1, human_2)
    mean = degradation(system, human_1, human_2, reference="mean")
    assert first == pytest.approx(stats.pearsonr(system, human_1).statistic - hh, rel=1e-12)
    assert mean == pytest.approx(stats.pearsonr(system, (human_1 + human_2) / 2).statistic - hh, rel=1e-12)
    with pytest.raises(InvalidInputError, match="reference"):
        degradation(system, human_1, human_2, reference="last")


def test_standardized_mean_difference(scores):
    system, human_1, _ = scores
    unpooled = (system.mean() - human_1.mean()) / human_1.std(ddof=1)
    pooled = (system.mean() - human_1.mean()) / np.sqrt((human_1.var(ddof=1) + system.var(ddof=1)) / 2)
    assert standardized_mean_difference(system, human_1) == pytest.approx(unpooled, rel=1e-12)
    assert standardized_mean_difference(system, human_1, method="pooled") == pytest.approx(pooled, rel=1e-12)
    assert standardized_mean_difference(system, human_1) > 0  # the system was simulated 0.2 high


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: pearson_r([1, 2, 3], [1, 2]), "same length"),
        (lambda: pearson_r([1, 1, 1], [1, 2, 3]), "constant"),
        (lambda: r2_score([1, 2], [3, 3]), "constant"),
        (lambda: quadratic_weighted_kappa([1], [1]), "at least 2"),
        (lambda: quadratic_weighted_kappa([2, 2], [2, 2]), "undefined"),
        (lambda: quadratic_weighted_kappa([1, np.nan], [1, 2]), "non-finite"),
        (lambda: standardized_mean_difference([1, 2], [1, 2], method="x"), "method"),
    ],
)
def test_bad_input_raises(call, message):
    with pytest.raises(InvalidInputError, match=message):
        call()
