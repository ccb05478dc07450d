"""Long-format validation and wide <-> long conversion."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayes_raters import BayesRatersError, InvalidInputError
from bayes_raters.ctt import prmse_table, prmse_true
from bayes_raters.data import (
    long_to_wide,
    validate_ratings,
    validate_system_scores,
    wide_systems_to_long,
    wide_to_long,
)


@pytest.fixture
def ratings():
    return pd.DataFrame(
        {"essay": [1, 1, 2, 3, 3], "judge": ["a", "b", "a", "a", "b"], "mark": [2, 3, 4, 5, 5]}
    )


def test_custom_column_names_map_to_canonical(ratings):
    out = validate_ratings(ratings, response="essay", rater="judge", score="mark")
    assert list(out.columns) == ["response", "rater", "score"]
    assert out["score"].dtype == np.float64
    assert out["score"].tolist() == [2.0, 3.0, 4.0, 5.0, 5.0]


def test_missing_column_names_it_and_the_fix(ratings):
    with pytest.raises(InvalidInputError, match=r"missing column\(s\) 'score'.*score="):
        validate_ratings(ratings, response="essay", rater="judge")


@pytest.mark.parametrize(
    "bad, message",
    [
        (["2", "x", 4, 5, 5], "must hold numbers"),
        ([2, np.nan, 4, 5, 5], "missing \\(NaN\\)"),
        ([2, 3, 4, 5, np.inf], "infinite"),
        ([2, 3, 4, 5, -1e155], r"beyond \+-1e\+100"),
        ([True, False, True, True, False], "must hold numbers"),
    ],
)
def test_bad_scores_are_rejected(ratings, bad, message):
    ratings["mark"] = pd.Series(bad, dtype=object if isinstance(bad[0], str) else None)
    with pytest.raises(InvalidInputError, match=message):
        validate_ratings(ratings, response="essay", rater="judge", score="mark")


def test_system_score_whose_square_overflows_is_rejected_not_turned_into_minus_inf():
    """Found by tests/test_fuzz.py: a system score of 4.8e155 made the sum of squares inf and
    PRMSE -inf (with numpy's overflow warning) instead of an input error."""
    systems = pd.DataFrame({"response": [0, 1, 2], "system": "m1", "score": [4.8e155, 0.0, 0.0]})
    with pytest.raises(InvalidInputError, match="beyond"):
        validate_system_scores(systems)
    human = np.array([[1.0, 2.0], [2.0, 3.0], [3.0, np.nan]])  # the array entry point shares the bound
    with pytest.raises(InvalidInputError, match="system has score.*beyond"):
        prmse_true(systems["score"].to_numpy(), human)
    with pytest.raises(InvalidInputError, match="human_scores has score.*beyond"):
        prmse_true(np.zeros(3), np.where(np.isnan(human), np.nan, human * 1e155))


def test_duplicate_response_rater_pair_is_rejected(ratings):
    ratings.loc[1, "judge"] = "a"
    with pytest.raises(InvalidInputError, match=r"repeat a \(response, rater\) pair"):
        validate_ratings(ratings, response="essay", rater="judge", score="mark")


def test_missing_ids_are_rejected(ratings):
    ratings.loc[2, "judge"] = None
    with pytest.raises(InvalidInputError, match="missing id"):
        validate_ratings(ratings, response="essay", rater="judge", score="mark")


def test_declared_score_range_is_enforced(ratings):
    validate_ratings(ratings, response="essay", rater="judge", score="mark", score_range=(1, 5))
    with pytest.raises(InvalidInputError, match=r"outside the declared scale \[1, 4\]"):
        validate_ratings(ratings, response="essay", rater="judge", score="mark", score_range=(1, 4))


def test_not_a_dataframe_is_rejected():
    with pytest.raises(InvalidInputError, match="DataFrame"):
        validate_ratings(np.ones((3, 3)))


def test_system_scores_for_unrated_responses_are_rejected(ratings):
    canonical = validate_ratings(ratings, response="essay", rater="judge", score="mark")
    systems = pd.DataFrame({"response": [1, 2, 3, 4], "system": "s", "score": [1.0, 2, 3, 4]})
    with pytest.raises(InvalidInputError, match=r"no human rating, e.g. \[4\]"):
        validate_system_scores(systems, ratings=canonical)
    with pytest.raises(InvalidInputError, match="no human rating"):
        prmse_table(canonical, systems)


def test_duplicate_system_scores_are_rejected():
    systems = pd.DataFrame({"response": [1, 1], "system": "s", "score": [1.0, 2.0]})
    with pytest.raises(InvalidInputError, match=r"\(response, system\)"):
        validate_system_scores(systems)


def test_wide_long_round_trip():
    wide = pd.DataFrame({"h1": [1.0, 2.0, np.nan], "h2": [2.0, np.nan, 4.0]}, index=[10, 11, 12])
    long = wide_to_long(wide, ["h1", "h2"])
    assert len(long) == 4
    assert set(long.columns) == {"response", "rater", "score"}
    back = long_to_wide(long)
    pd.testing.assert_frame_equal(back.sort_index()[["h1", "h2"]], wide, check_names=False, check_index_type=False)


def test_wide_response_column_and_system_columns():
    wide = pd.DataFrame({"id": ["x", "y"], "h1": [1.0, 2.0], "m": [1.5, np.nan]})
    long = wide_to_long(wide, ["h1"], response_column="id")
    assert long["response"].tolist() == ["x", "y"]
    systems = wide_systems_to_long(wide, ["m"], response_column="id")
    assert systems.to_dict("list") == {"response": ["x"], "system": ["m"], "score": [1.5]}


def test_wide_row_with_no_rating_is_rejected():
    wide = pd.DataFrame({"h1": [1.0, np.nan], "h2": [2.0, np.nan]})
    with pytest.raises(InvalidInputError, match="1 response\\(s\\) have no rating"):
        wide_to_long(wide, ["h1", "h2"])


def test_wide_non_numeric_column_is_rejected():
    wide = pd.DataFrame({"h1": ["1", "two"], "h2": [2.0, 3.0]})
    with pytest.raises(InvalidInputError, match="'h1' must hold numbers"):
        wide_to_long(wide, ["h1", "h2"])


def test_wide_duplicate_ids_are_rejected():
    wide = pd.DataFrame({"id": [1, 1], "h1": [1.0, 2.0]})
    with pytest.raises(InvalidInputError, match="ids repeat"):
        wide_to_long(wide, ["h1"], response_column="id")


def test_errors_share_one_base_class():
    assert issubclass(InvalidInputError, BayesRatersError)
    assert issubclass(InvalidInputError, ValueError)
