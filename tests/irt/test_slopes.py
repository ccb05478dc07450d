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
    # JAX warns at every os.fork once an earlier test in the same xdist worker imported it (the
    # order changed when tests/ was laid out as the package): the process's state, not the fit's.
    other = [w for w in caught if not issubclass(w.category, (SlopeWarning, ConvergenceWarning))
             and not str(w.message).startswith("os.fork() was called")]
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


def test_a_reversed_rater_is_flagged_and_the_facets_fit_warns_before_sampling(monkeypatch):
    """Many-facet model: a rater whose scale runs backwards (score 7 - s on a 1-6 scale) has a
    negative rater-rest correlation (against the other raters of the same response and prompt)
    and is the only rater flagged; as simulated, none is. fit_facets names the rater."""
    import bayes_raters.facets.fit as facets_fit
    from bayes_raters.facets import fit_facets, simulate_facet_ratings
    from bayes_raters.irt.slopes import rater_rest_correlations

    ratings, _, _ = simulate_facet_ratings(400, 8, 2, 6, random_seed=11)
    clean = rater_rest_correlations(ratings)
    assert not clean["contradicts_slope"].any() and (clean["rest_corr"] > 0.3).all()
    reversed_ = ratings.assign(score=np.where(ratings["rater"] == "r3", 7 - ratings["score"], ratings["score"]))
    evidence = rater_rest_correlations(reversed_)
    assert evidence.index[evidence["contradicts_slope"]].tolist() == ["r3"]
    assert evidence.loc["r3", "rest_corr"] < -0.3

    def stop(*args, **kwargs):
        raise RuntimeError("stop before sampling")

    monkeypatch.setattr(facets_fit, "sample_model", stop)
    with pytest.warns(SlopeWarning, match=r"1 rater\(s\).*'r3'"), pytest.raises(RuntimeError, match="stop before"):
        fit_facets(reversed_, random_seed=1)


def test_a_reversed_item_of_a_confirmatory_dimension_is_flagged(monkeypatch):
    """Confirmatory multidimensional 2PL (each item's one loading forced positive): an item
    answered backwards (1 - correct) is flagged against the other items of its own dimension,
    and fit_irt(dimensions=...) names it; the exploratory model has no such check."""
    import bayes_raters.irt.multidimensional.fit as multidim_fit
    from bayes_raters.irt import simulate_factor_answers
    from bayes_raters.irt.slopes import dimension_rest_correlations

    answers, truth = simulate_factor_answers(800, (5, 5), 0.3, random_seed=4)
    assert not dimension_rest_correlations(answers, "correct", truth["dimensions"])["contradicts_slope"].any()
    flipped = answers.assign(correct=np.where(answers["item"] == "g1_2", 1 - answers["correct"], answers["correct"]))
    evidence = dimension_rest_correlations(flipped, "correct", truth["dimensions"])
    assert evidence.index[evidence["contradicts_slope"]].tolist() == ["g1_2"]
    assert dimension_rest_correlations(flipped, "correct", None).empty

    def stop(*args, **kwargs):
        raise RuntimeError("stop before sampling")

    monkeypatch.setattr(multidim_fit, "sample_model", stop)
    with pytest.warns(SlopeWarning, match=r"other items of their dimension.*'g1_2'"), pytest.raises(RuntimeError, match="stop before"):
        fit_irt(flipped, dimensions=truth["dimensions"], random_seed=1)
