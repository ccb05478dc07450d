"""Items whose data contradict the positive slope every IRT model forces
(:mod:`bayes_raters.irt.slopes`): the item-rest evidence, the warning at fit time and the
item-table reason, on simulated answers and on a real scale with a reverse-keyed item."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_raters.errors import ConvergenceWarning, SlopeWarning
from bayes_raters.irt import fit_irt, fit_polytomous, simulate_responses
from bayes_raters.irt.slopes import rest_correlations


def _agreeableness(shared_data, recode: bool) -> pd.DataFrame:
    wide = pd.read_csv(shared_data / "bfi" / "bfi_agreeableness.csv")
    if recode:
        wide["A1"] = 7 - wide["A1"]  # bfi.keys: "-A1", scored 1-6
    long = wide.rename_axis("respondent").reset_index().melt(id_vars="respondent", var_name="item", value_name="score")
    return long.dropna()


def test_a_reverse_keyed_item_of_a_real_scale_is_the_one_flagged(shared_data):
    """bfi's agreeableness scale (2,800 respondents, psychTools): A1 is reverse-keyed; as given,
    its item-rest correlation is negative and only it is flagged; recoded, none is."""
    raw = rest_correlations(_agreeableness(shared_data, recode=False), "score")
    assert raw.index[raw["contradicts_slope"]].tolist() == ["A1"]
    assert raw.loc["A1", "rest_corr"] < -0.2
    assert (raw.drop(index="A1")["rest_corr"] > 0.3).all()
    recoded = rest_correlations(_agreeableness(shared_data, recode=True), "score")
    assert not recoded["contradicts_slope"].any()
    assert recoded.loc["A1", "rest_corr"] > 0.2


def test_negative_and_flat_items_are_flagged_and_small_samples_are_not(shared_data):
    answers, truth = simulate_responses(1000, 12, n_zero=1, n_negative=1, random_seed=3)
    evidence = rest_correlations(answers, "correct")
    bad = truth["item"].values[truth["bad"].values].tolist()  # a = 0 and a < 0
    assert set(evidence.index[evidence["contradicts_slope"]]) == set(bad)
    # 40 respondents of pure noise: the one-sided limit keeps chance correlations unflagged
    rng = np.random.default_rng(0)
    noise = pd.DataFrame([(i, f"q{j}", int(rng.random() < 0.5)) for i in range(40) for j in range(8)],
                         columns=["respondent", "item", "correct"])
    assert rest_correlations(noise, "correct")["contradicts_slope"].sum() <= 1


def _short_fit(fit, *args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fit(*args, draws=60, tune=60, random_seed=1, **kwargs)
    slope = [w for w in caught if issubclass(w.category, SlopeWarning)]
    other = [w for w in caught if not issubclass(w.category, (SlopeWarning, ConvergenceWarning))]
    assert not other, [str(w.message) for w in other]
    return result, slope


def test_fits_warn_and_the_item_table_names_the_reason(shared_data):
    result, slope = _short_fit(fit_polytomous, _agreeableness(shared_data, recode=False), "grm")
    assert len(slope) == 1 and "'A1'" in str(slope[0].message) and "'A2'" not in str(slope[0].message)
    table = result.item_table()
    assert table.loc["A1", "flagged"] and "negative slope" in table.loc["A1", "reasons"]
    assert not table.drop(index="A1")["contradicts_slope"].any()
    answers, truth = simulate_responses(600, 10, n_negative=1, random_seed=5)
    last = str(truth["item"].values[-1])
    binary, slope = _short_fit(fit_irt, answers, "2pl")
    assert len(slope) == 1 and repr(last) in str(slope[0].message)
    assert "negative slope" in binary.item_table().loc[last, "reasons"]


def test_clean_data_raise_no_slope_warning(shared_data):
    _, slope = _short_fit(fit_polytomous, _agreeableness(shared_data, recode=True), "gpcm")
    assert not slope
