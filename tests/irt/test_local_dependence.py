"""Local dependence (Yen's Q3 from posterior draws, posterior predictive check): the correlation
arithmetic, planted dependence, flags on fitted right/wrong and ordinal items, bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_raters.errors import InvalidInputError
from bayes_raters.irt import fit_irt, simulate_responses
from bayes_raters.irt.local_dependence import plant_local_dependence, q3_table, residual_correlations

PLANTED = [("i000", "i001"), ("i004", "i007")]


def test_residual_correlations_are_pairwise_complete_pearson_correlations():
    rng = np.random.default_rng(1)
    residual = rng.normal(size=(80, 6))
    seen = rng.random((80, 6)) > 0.25
    reference = pd.DataFrame(np.where(seen, residual, np.nan)).corr().to_numpy()
    assert np.allclose(residual_correlations(residual, seen), reference, atol=1e-12, equal_nan=True)
    seen[:, 0] = False
    seen[:2, 0] = True  # two shared respondents: no correlation
    assert np.isnan(residual_correlations(residual, seen)[0, 1:]).all()


def test_pairs_without_shared_respondents_are_nan_and_not_flagged():
    rng = np.random.default_rng(2)
    answers = (rng.random((60, 3)) < 0.5).astype(float)
    answers[:30, 0] = np.nan  # items 0 and 1 share no respondent
    answers[30:, 1] = np.nan

    def draws(s, rng):
        expected = np.full(answers.shape, 0.5)
        return expected, (rng.random(answers.shape) < expected).astype(float)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no stray RuntimeWarning from empty pairs
        pairs = q3_table(answers, draws, 50, pd.Index(["q0", "q1", "q2"]), random_seed=0)
    empty = pairs.iloc[0]
    assert (empty["item_a"], empty["item_b"], empty["n_both"]) == ("q0", "q1", 0)
    assert np.isnan(empty[["q3_mean", "excess", "ppp"]].astype(float)).all() and not empty["flagged"]
    assert np.isfinite(pairs.iloc[1:][["q3_mean", "excess", "ppp"]].to_numpy(float)).all()


def test_planted_dependence_copies_the_source_answer_on_the_copy_item_only():
    table, _ = simulate_responses(400, 6, missing=0.1, random_seed=3)
    planted = plant_local_dependence(table, [("i000", "i001")], 0.5, random_seed=1)
    before = table.pivot(index="respondent", columns="item", values="correct")
    after = planted.pivot(index="respondent", columns="item", values="correct")
    changed = (before != after) & before.notna()
    assert changed.drop(columns="i001").to_numpy().sum() == 0 and changed["i001"].sum() > 0
    both = after[["i000", "i001"]].dropna()
    agree_before = (before.loc[both.index, "i000"] == before.loc[both.index, "i001"]).mean()
    agree_after = (both["i000"] == both["i001"]).mean()
    # copying with probability 0.5 moves agreement halfway to 1
    assert abs(agree_after - (agree_before + 0.5 * (1 - agree_before))) < 0.06
    with pytest.raises(InvalidInputError, match="share"):
        plant_local_dependence(table, [("i000", "i001")], 0.0)


@pytest.fixture(scope="module")
def dependent_fit():
    table, _ = simulate_responses(600, 12, random_seed=5)
    table = plant_local_dependence(table, PLANTED, 0.5, random_seed=6)
    return fit_irt(table, "2pl", random_seed=7, progressbar=False)


def test_planted_pairs_are_flagged_and_independent_pairs_rarely(dependent_fit):
    pairs = dependent_fit.local_dependence(random_seed=1)
    assert len(pairs) == 66 and pairs["n_both"].eq(600).all()
    planted = pairs.set_index(["item_a", "item_b"]).loc[PLANTED]
    assert planted["flagged"].all() and (planted["ppp"] < 0.01).all() and (planted["excess"] > 0.15).all()
    independent = pairs[~pairs.set_index(["item_a", "item_b"]).index.isin(PLANTED)]
    assert independent["flagged"].mean() <= 0.05
    # under local independence the realised and replicated Q3 agree: p-values spread over (0, 1)
    assert 0.35 < independent["ppp"].mean() < 0.65 and abs(independent["excess"].mean()) < 0.02
    assert list(pairs.columns) == ["item_a", "item_b", "q3_mean", "q3_lower", "q3_upper", "q3_rep_mean", "excess",
                                   "ppp", "n_both", "flagged"]
    assert pairs["excess"].is_monotonic_decreasing
    pd.testing.assert_frame_equal(dependent_fit.local_dependence(random_seed=1), pairs)


@pytest.mark.parametrize("keyword, value", [("alpha", 1.5), ("min_excess", 1.0), ("ci_prob", 0.0), ("n_draws", 1)])
def test_bad_thresholds_are_refused_with_the_keyword(dependent_fit, keyword, value):
    with pytest.raises(InvalidInputError, match=keyword):
        dependent_fit.local_dependence(**{keyword: value})


def test_ordinal_items_with_a_planted_pair_are_flagged():
    """Ten items: with six, the planted pair pulled theta toward itself and two other pairs were
    flagged too (the few-items effect in the module docstring)."""
    from bayes_raters.irt import fit_polytomous
    from tests.irt.polytomous.test_fit import _simulated

    ratings = plant_local_dependence(_simulated("gpcm", n=400, n_items=10, seed=11), [("i0", "i3")], 0.5,
                                     random_seed=2, value="score")
    result = fit_polytomous(ratings, "gpcm", random_seed=4, progressbar=False)
    pairs = result.local_dependence(random_seed=0).set_index(["item_a", "item_b"])
    assert pairs.loc[("i0", "i3"), "flagged"] and pairs.loc[("i0", "i3"), "excess"] > 0.15
    assert pairs.drop(("i0", "i3"))["flagged"].mean() <= 0.05
