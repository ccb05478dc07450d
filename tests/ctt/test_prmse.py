"""Closed-form Haberman estimators: RSMTool reference values, properties, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from bayes_raters import BayesRatersError, InputWarning, InsufficientDataError, InvalidInputError, SmallSampleWarning
from bayes_raters.ctt import (
    mse_true,
    prmse_table,
    prmse_true,
    ratings_to_long,
    simulate_dataset,
    system_scores_to_long,
    true_score_variance,
    variance_of_errors,
)
from bayes_raters.data import wide_systems_to_long, wide_to_long

HUMANS = ["h1", "h2", "h3", "h4"]
# RSMTool's expected values (tests of rsmtool.utils.prmse), see tests/data/README.md.
RSMTOOL = {
    "prmse_data.csv": (0.509375, 0.7765515, 0.3564625, 0.5409673),
    "prmse_data_sparse_matrix.csv": (0.5150882, 0.769816, 0.3550792, 0.538748),
}


@pytest.mark.parametrize("name", sorted(RSMTOOL))
def test_rsmtool_reference_values_wide(shared_data, name):
    frame = pd.read_csv(shared_data / "rsmtool_prmse" / name)
    humans, system = frame[HUMANS], frame["system"]
    expected = RSMTOOL[name]
    got = (
        variance_of_errors(humans),
        true_score_variance(humans),
        mse_true(system, humans),
        prmse_true(system, humans),
    )
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-7)


@pytest.mark.parametrize("name", sorted(RSMTOOL))
def test_rsmtool_reference_values_long(shared_data, name):
    frame = pd.read_csv(shared_data / "rsmtool_prmse" / name)
    table = prmse_table(wide_to_long(frame, HUMANS), wide_systems_to_long(frame, ["system"]))
    row = table.loc["system"]
    got = row[["error_variance", "true_score_variance", "mse_true", "prmse"]].to_numpy(float)
    np.testing.assert_allclose(got, RSMTOOL[name], rtol=0, atol=1e-7)
    counts = frame[HUMANS].notna().sum(axis=1)
    assert row["n"] == len(frame)
    assert row["n_single"] == (counts == 1).sum()
    assert row["n_multiple"] == (counts > 1).sum()
    assert row["n_raters"] == 4


def test_rsmtool_toy_case_exact():
    value = prmse_true(np.array([1, 2, 5]), np.array([[2], [3], [5]]), error_variance=0.5)
    assert value == 0.9090909090909091


def test_error_variance_is_pooled_within_variance():
    humans = np.array([[1.0, 3.0, np.nan], [2.0, 2.0, 5.0], [4.0, np.nan, np.nan]])
    # response 1: ss 2 with 1 dof; response 2: ss 6 with 2 dof; response 3: no dof
    assert variance_of_errors(humans) == pytest.approx(8 / 3, abs=1e-15)


def _sparse_example(rng: np.random.Generator, n: int = 300, k: int = 3, n_systems: int = 3):
    true = rng.normal(3, 1, n)
    humans = np.round(true[:, None] + rng.normal(0, 0.7, (n, k)))
    humans[rng.random((n, k)) < 0.4] = np.nan
    humans[np.isnan(humans).all(axis=1), 0] = 3.0
    systems = true[:, None] + rng.normal(0, 0.5, (n, n_systems))
    return humans, systems


def test_long_table_equals_wide_functions_for_every_system():
    humans, systems = _sparse_example(np.random.default_rng(7))
    wide = pd.DataFrame(humans, columns=["a", "b", "c"]).assign(**{f"s{j}": systems[:, j] for j in range(3)})
    table = prmse_table(wide_to_long(wide, ["a", "b", "c"]), wide_systems_to_long(wide, ["s0", "s1", "s2"]))
    for j in range(3):
        row = table.loc[f"s{j}"]
        assert row["prmse"] == pytest.approx(prmse_true(systems[:, j], humans), rel=1e-12)
        assert row["mse_true"] == pytest.approx(mse_true(systems[:, j], humans), rel=1e-12)
        assert row["true_score_variance"] == pytest.approx(true_score_variance(humans), rel=1e-12)


def test_each_system_is_evaluated_on_the_responses_it_scored():
    humans, systems = _sparse_example(np.random.default_rng(11), n=400)
    wide = pd.DataFrame(humans, columns=["a", "b", "c"]).assign(s0=systems[:, 0], s1=systems[:, 1])
    wide.loc[wide.index[:150], "s1"] = np.nan
    table = prmse_table(wide_to_long(wide, ["a", "b", "c"]), wide_systems_to_long(wide, ["s0", "s1"]))
    assert table.loc["s1", "n"] == 250
    assert table.loc["s1", "prmse"] == pytest.approx(prmse_true(systems[150:, 1], humans[150:]), rel=1e-12)
    assert table.loc["s0", "prmse"] == pytest.approx(prmse_true(systems[:, 0], humans), rel=1e-12)


# ---- properties -----------------------------------------------------------------------


@st.composite
def rated_responses(draw):
    n = draw(st.integers(8, 40))
    k = draw(st.integers(2, 4))
    scores = draw(st.lists(st.integers(1, 6), min_size=n * k, max_size=n * k))
    mask = draw(st.lists(st.booleans(), min_size=n * k, max_size=n * k))
    humans = np.array(scores, dtype=float).reshape(n, k)
    humans[np.array(mask).reshape(n, k)] = np.nan
    humans[np.isnan(humans).all(axis=1), 0] = 3.0
    humans[0] = [1.0] + [2.0] * (k - 1)  # at least one double-scored response
    system = np.array(draw(st.lists(st.floats(0, 7, allow_nan=False), min_size=n, max_size=n)))
    return humans, system


def _quiet_prmse(system, humans):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallSampleWarning)
        warnings.simplefilter("ignore", InputWarning)  # random systems may sit on another scale
        return prmse_true(system, humans)


def _usable(humans):
    return variance_of_errors(humans) > 1e-9 and abs(true_score_variance(humans)) > 1e-3


@given(rated_responses(), st.randoms(use_true_random=False))
def test_prmse_invariant_to_response_order(case, rnd):
    humans, system = case
    assume(_usable(humans))
    order = list(range(len(system)))
    rnd.shuffle(order)
    assert _quiet_prmse(system[order], humans[order]) == pytest.approx(_quiet_prmse(system, humans), rel=1e-9)


@given(rated_responses(), st.randoms(use_true_random=False))
def test_prmse_invariant_to_rating_order_within_response(case, rnd):
    humans, system = case
    assume(_usable(humans))
    shuffled = humans.copy()
    for row in shuffled:
        rnd.shuffle(row)
    assert _quiet_prmse(system, shuffled) == pytest.approx(_quiet_prmse(system, humans), rel=1e-9)


@given(rated_responses(), st.floats(-50, 50, allow_nan=False))
def test_prmse_invariant_to_common_shift(case, shift):
    humans, system = case
    assume(_usable(humans))
    assert _quiet_prmse(system + shift, humans + shift) == pytest.approx(_quiet_prmse(system, humans), rel=1e-7)


def test_true_score_as_system_with_many_raters_gives_prmse_near_one():
    data = simulate_dataset(2000, raters_per_category=40, systems_per_category=1, random_seed=3)
    moderate = data["rater"].where(data["rater_category"] == "moderate", drop=True).values
    humans = data["rating"].sel(rater=moderate).values
    # The estimator is unbiased, so for a perfect system it lands just above 1 about half
    # the time (and warns): closeness to 1 is the property, not being below it.
    value = _quiet_prmse(data["true_score"].values, humans)
    assert value == pytest.approx(1.0, abs=0.02)


def test_prmse_tracks_r2_against_true_score_on_the_paper_design():
    data = simulate_dataset(10_000, raters_per_category=2, systems_per_category=1, random_seed=5)
    ratings = ratings_to_long(data, raters=["h_5", "h_6"])  # 'average' pair
    table = prmse_table(ratings, system_scores_to_long(data))
    true = data["true_score"].values
    for system in table.index:
        scores = data["system_score"].sel(system=system).values
        r2_true = 1 - np.mean((scores - true) ** 2) / np.var(true)
        assert table.loc[system, "prmse"] == pytest.approx(r2_true, abs=0.03)


# ---- errors and warnings --------------------------------------------------------------


def test_no_double_scored_response_raises_clear_error():
    humans = np.array([[1.0, np.nan], [np.nan, 3.0], [4.0, np.nan]])
    with pytest.raises(InsufficientDataError, match="two or more ratings"):
        variance_of_errors(humans)
    with pytest.raises(InsufficientDataError, match="error_variance"):
        prmse_true([1, 2, 3], humans)
    with pytest.warns(SmallSampleWarning, match="error_variance you supplied"):
        prmse_true([1, 3, 4.5], humans, error_variance=0.3)
    assert 0 < prmse_true([1.8, 2.2, 4.6], humans, error_variance=0.3) < 1


def test_constant_human_scores_raise_instead_of_minus_infinity():
    """All ratings 3.0 gave PRMSE -inf with a warning that blamed the sample size (issue 16)."""
    ratings = pd.DataFrame({"response": np.repeat(np.arange(50), 2), "rater": ["a", "b"] * 50, "score": 3.0})
    systems = pd.DataFrame({"response": np.arange(50), "system": "m", "score": np.linspace(1, 5, 50)})
    with pytest.raises(InvalidInputError, match="every human rating is 3.0"):
        prmse_table(ratings, systems)


def test_no_double_scored_response_in_long_table_names_the_system():
    ratings = pd.DataFrame({"response": [1, 2, 3], "rater": ["a", "b", "a"], "score": [1, 2, 3]})
    systems = pd.DataFrame({"response": [1, 2, 3], "system": "sysA", "score": [1.0, 2.0, 3.5]})
    with pytest.raises(InsufficientDataError, match="sysA"):
        prmse_table(ratings, systems)


def test_out_of_range_prmse_is_returned_with_a_warning():
    rng = np.random.default_rng(0)
    true = rng.normal(3, 0.3, 30)
    humans = np.column_stack([true + rng.normal(0, 1, 30), true + rng.normal(0, 1, 30)])
    humans[5:, 1] = np.nan  # 5 double-scored responses
    system = true + rng.normal(0, 2, 30)
    with pytest.warns(SmallSampleWarning, match="5 double-scored"):
        value = prmse_true(system, humans)
    assert not 0 <= value <= 1


@pytest.mark.parametrize(
    "humans, system, message",
    [
        (np.array([1.0, 2.0, 3.0]), [1, 2, 3], "2-D"),
        (np.array([[1.0, 2.0], [np.nan, np.nan]]), [1, 2], "no rating"),
        (np.array([[1.0, 2.0], [2.0, 3.0]]), [1, 2, 3], "same responses"),
        (np.array([[1.0, 2.0], [2.0, np.inf]]), [1, 2], "infinite"),
        (np.array([["a", "b"], ["c", "d"]]), [1, 2], "numeric"),
        (np.array([[1.0, 2.0], [2.0, 3.0]]), [1, np.nan], "non-finite"),
    ],
)
def test_bad_wide_input_raises_invalid_input(humans, system, message):
    with pytest.raises(InvalidInputError, match=message):
        prmse_true(system, humans)


def test_negative_error_variance_is_rejected():
    with pytest.raises(InvalidInputError, match="error_variance"):
        true_score_variance(np.array([[1.0, 2.0], [3.0, 3.0]]), error_variance=-1)


def test_every_error_is_a_package_error():
    for cls in (InvalidInputError, InsufficientDataError):
        assert issubclass(cls, BayesRatersError)


def test_integer_and_fractional_response_ids_join_without_a_pandas_warning():
    """Found by the fuzzer: system ids 1..4 (int) against rating ids that include 4.5 (float)
    made pandas warn on the join; ids match exactly (4 == 4.0), so the table is the one the
    same ids written as floats give, and no warning leaks."""
    ratings = pd.DataFrame({"response": [1, 1, 2, 2, 3, 3, 4, 4, 4.5, 4.5], "rater": ["a", "b"] * 5,
                            "score": [1, 2, 2, 3, 3, 3, 4, 5, 2, 2]})
    systems = pd.DataFrame({"response": [1, 2, 3, 4], "system": "S", "score": [1.5, 2.5, 3, 4.5]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", SmallSampleWarning)  # 4 double-scored responses: ours, expected
        table = prmse_table(ratings, systems)
        as_floats = prmse_table(ratings, systems.assign(response=systems["response"].astype(float)))
    pd.testing.assert_frame_equal(table, as_floats)
