"""IRT short forms (bayes_raters.irt.short_form): choice by expected information, expected
reliability with its interval against the realised reliability on held-out simulated
respondents (a 20-item bank here; 40 items, k = 5, 10, 20 in make validate)."""

from __future__ import annotations

import pytest

from bayes_raters.errors import InvalidInputError
from bayes_raters.irt import fit_irt, simulate_responses
from bayes_raters.irt.short_form import realised_reliability, short_form


@pytest.fixture(scope="module")
def bank():
    answers, truth = simulate_responses(500, 20, random_seed=17)
    return fit_irt(answers, "2pl", random_seed=3, progressbar=False), truth


def test_short_form_predicts_its_reliability(bank):
    result, truth = bank
    form = short_form(result, 8, random_seed=0)
    table = form["table"]
    assert len(form["items"]) == 8 and form["items"] == list(table.index[:8])
    assert table["expected_information"].is_monotonic_decreasing
    low, mean, high = (form["reliability"][k] for k in ("lower", "mean", "upper"))
    assert low < mean < high
    realised = realised_reliability(form["items"], truth, result, random_seed=1)
    assert abs(mean - realised) < 0.03, (mean, realised)
    # the chosen items carry more planted information than the rest of the bank
    a = truth["a"].to_series()
    assert a[form["items"]].mean() > a.drop(form["items"]).mean()


def test_target_reliability_takes_the_fewest_items(bank):
    result, _ = bank
    form = short_form(result, target_reliability=0.7, random_seed=0)
    k = len(form["items"])
    assert form["reliability"]["mean"] >= 0.7
    assert short_form(result, k - 1, random_seed=0)["reliability"]["mean"] < 0.7
    with pytest.raises(InvalidInputError, match="reaches an expected reliability"):
        short_form(result, target_reliability=0.99, random_seed=0)
    with pytest.raises(InvalidInputError, match="either k="):
        short_form(result)
    with pytest.raises(InvalidInputError, match="between 1 and"):
        short_form(result, 50)
    with pytest.raises(InvalidInputError, match="theta_range"):
        short_form(result, 5, theta_range=(1, -1))


@pytest.mark.slow
def test_short_forms_of_a_40_item_bank_match_held_out_reliability():
    """k = 5, 10, 20 from a 1,000 x 40 bank: expected reliability within 0.03 of the realised
    one on 5,000 held-out respondents (measured 2026-11-25 on this bank: differences at most
    0.02)."""
    answers, truth = simulate_responses(1000, 40, random_seed=7)
    # 2 x 2,000 draws: at 2 x 1,000 this fit's max R-hat is 1.0102, NUTS's floor at that length (models/irt.md)
    result = fit_irt(answers, "2pl", random_seed=1, draws=2000, progressbar=False)
    for k in (5, 10, 20):
        form = short_form(result, k, random_seed=0)
        realised = realised_reliability(form["items"], truth, result, random_seed=1)
        print(f"\nk = {k}: expected {form['reliability']['mean']:.3f} [{form['reliability']['lower']:.3f}, "
              f"{form['reliability']['upper']:.3f}], realised {realised:.3f}")
        assert abs(form["reliability"]["mean"] - realised) < 0.03
