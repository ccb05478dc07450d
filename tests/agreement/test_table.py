"""agreement_table and the coefficient functions on designs of every kind: which coefficients
apply, classical / bootstrap / posterior columns, seeds, unbalanced data, bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayes_raters.agreement import (
    agreement_table,
    cohens_kappa,
    fleiss_kappa,
    intraclass_correlation,
    krippendorff_alpha,
)
from bayes_raters.agreement.bootstrap import bootstrap_coefficients, coefficients
from bayes_raters.agreement.icc import variance_components
from bayes_raters.agreement.layout import agreement_ratings
from bayes_raters.agreement.simulate import simulate_agreement
from bayes_raters.errors import InsufficientDataError, InvalidInputError


@pytest.fixture(scope="module")
def unbalanced():
    return simulate_agreement(150, 8, random_seed=3)


@pytest.fixture(scope="module")
def table(unbalanced):
    return agreement_table(unbalanced, level="ordinal", n_boot=300, random_seed=1, progressbar=False)


def test_table_has_every_coefficient_and_three_kinds_of_interval(table):
    assert list(table.index) == ["alpha_ordinal", "fleiss_kappa", "ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k"]
    assert table[["estimate", "bootstrap_lower", "bootstrap_upper"]].notna().all().all()
    icc = table.loc[table.index.str.startswith("ICC")]
    assert icc[["posterior_mean", "posterior_lower", "posterior_upper"]].notna().all().all()
    assert table.loc[["alpha_ordinal", "fleiss_kappa"], "posterior_mean"].isna().all()
    assert table["classical_lower"].isna().all()  # unbalanced: no F interval
    assert ((table["bootstrap_lower"] <= table["estimate"]) & (table["estimate"] <= table["bootstrap_upper"])).all()
    assert ((icc["posterior_lower"] < icc["estimate"]) & (icc["estimate"] < icc["posterior_upper"])).all()
    assert table.attrs["converged"] and set(table.attrs["convergence"]) == {"one-way (rater effects off)", "two-way (rater effects on)"}
    assert table.attrs["n_boot"] == 300 and not table.attrs["complete"] and table.attrs["k"] > 2


def test_the_table_estimates_are_the_functions(unbalanced, table):
    assert table.loc["alpha_ordinal", "estimate"] == pytest.approx(krippendorff_alpha(unbalanced, level="ordinal"), abs=1e-12)
    assert table.loc["fleiss_kappa", "estimate"] == pytest.approx(fleiss_kappa(unbalanced), abs=1e-12)
    icc = intraclass_correlation(unbalanced)
    np.testing.assert_allclose(table.loc[icc.index, "estimate"], icc["estimate"], atol=1e-12)


def test_same_seed_same_bootstrap_in_any_order(unbalanced):
    data = agreement_ratings(unbalanced, "interval")
    first = bootstrap_coefficients(data, 50, random_seed=7)
    bootstrap_coefficients(data, 20, random_seed=8)
    pd.testing.assert_frame_equal(first, bootstrap_coefficients(data, 50, random_seed=7))
    assert not first.equals(bootstrap_coefficients(data, 50, random_seed=9))


def test_complete_two_rater_design_gets_kappa_and_classical_intervals():
    rng = np.random.default_rng(5)
    truth = rng.normal(3, 1, 120)
    long = pd.DataFrame([(i, r, float(np.clip(np.round(truth[i] + rng.normal(0, 0.6)), 1, 5)))
                         for i in range(120) for r in ("a", "b")], columns=["essay", "judge", "mark"])
    table = agreement_table(long, level="ordinal", categories=range(1, 6), n_boot=200, posterior=False, random_seed=2,
                            response="essay", rater="judge", score="mark")
    assert {"cohens_kappa_linear", "cohens_kappa_quadratic"} <= set(table.index)
    wide = long.pivot(index="essay", columns="judge", values="mark")
    kappa = cohens_kappa(wide["a"], wide["b"], weights="quadratic", categories=range(1, 6))
    assert table.loc["cohens_kappa_quadratic", ["estimate", "classical_lower"]].tolist() == pytest.approx(
        [kappa["estimate"], kappa["lower"]], abs=1e-12)
    assert table.loc[["ICC1", "ICC2", "ICC3"], "classical_lower"].notna().all() and table.attrs["complete"]
    assert table["posterior_mean"].isna().all() and table.attrs["convergence"] == {}


def test_nominal_labels_get_alpha_and_kappa_but_no_icc():
    long = pd.DataFrame({"response": np.repeat(np.arange(40), 3), "rater": list("xyz") * 40,
                         "score": np.random.default_rng(1).choice(["pos", "neg", "neutral"], 120, p=[0.5, 0.3, 0.2])})
    long.loc[long.index % 3 == 1, "score"] = long.loc[long.index % 3 == 0, "score"].to_numpy()  # y copies x
    table = agreement_table(long, level="nominal", n_boot=100, random_seed=0)
    assert list(table.index) == ["alpha_nominal", "fleiss_kappa"]
    assert 0.2 < table.loc["alpha_nominal", "estimate"] < 0.9


def test_single_rated_units_and_idle_raters_drop_out(unbalanced):
    extra = pd.DataFrame({"response": [1000, 1001], "rater": ["lonely", "r000"], "score": [3.0, 4.0]})
    data = agreement_ratings(pd.concat([unbalanced, extra]), "interval")
    assert data.n_single == 2 and "lonely" not in data.raters
    assert krippendorff_alpha(pd.concat([unbalanced, extra])) == pytest.approx(krippendorff_alpha(unbalanced), abs=1e-12)


def test_henderson_components_are_unbiased_on_unbalanced_continuous_data():
    """Mean over 200 simulated unbalanced designs (continuous ratings) within 3 Monte Carlo SEs of the true variances."""
    draws = np.array([[variance_components(agreement_ratings(
        simulate_agreement(120, 10, scale=None, sigma_unit=1.0, sigma_rater=0.5, sigma_error=0.7, random_seed=s)).values)[c]
        for c in ("unit", "error")] for s in range(200)])
    mean, se = draws.mean(axis=0), draws.std(axis=0, ddof=1) / np.sqrt(len(draws))
    assert np.all(np.abs(mean - [1.0, 0.49]) < 3 * se), (mean, se)


@pytest.mark.parametrize(("call", "message"), [
    (lambda t: krippendorff_alpha(t, level="likert"), "level='likert' is not a level"),
    (lambda t: krippendorff_alpha(t.head(2)), "units rated twice or more"),
    (lambda t: agreement_table(t, observation="poisson"), "observation='poisson'"),
    (lambda t: krippendorff_alpha(t, categories=[1, 2, 3]), "are not among categories"),
    (lambda t: cohens_kappa([1, 2, 3], [1, 2]), "equal length"),
    (lambda t: cohens_kappa([1, 2, 3], [1, 2, 3], weights="cubic"), "weights='cubic'"),
    (lambda t: krippendorff_alpha(pd.concat([t, t.head(1)])), "repeat a \\(response, rater\\) pair"),
    (lambda t: fleiss_kappa(pd.concat([t, t.head(1)])), "more than once"),
])
def test_bad_input_gets_a_clear_error(unbalanced, call, message):
    with pytest.raises((InvalidInputError, InsufficientDataError), match=message):
        call(unbalanced)


def test_coefficients_skip_two_way_iccs_without_error_degrees_of_freedom():
    long = pd.DataFrame({"response": [0, 0, 1, 1], "rater": ["a", "b", "c", "d"], "score": [1.0, 2.0, 3.0, 5.0]})
    names = coefficients(agreement_ratings(long, "interval")).index
    assert "ICC2" not in names and "alpha_interval" in names
