"""IRT: validation, model construction, information, recovery, flags, scoring, scale, CLI."""

from __future__ import annotations

import json

import matplotlib
import numpy as np
import pandas as pd
import pymc as pm
import pytest

from bayes_raters import InsufficientDataError, InvalidInputError, SlopeWarning, SmallSampleWarning
from bayes_raters.cli import main
from bayes_raters.irt import (
    build_irt_model,
    build_scale,
    compare_irt_models,
    fit_irt,
    item_information,
    simulate_responses,
    validate_responses,
)
from bayes_raters.irt.binary.model import irt_probability
from bayes_raters.irt.binary.result import answer_log_likelihood

matplotlib.use("Agg")
FIT = {"draws": 1000, "tune": 1000, "chains": 2, "nuts_sampler": "pymc"}


@pytest.fixture(scope="module")
def scale(computed_once):
    """400 respondents x 20 items (10% missing), the last three planted bad: zero and
    negative discrimination, one mis-keyed (fitted once per run, also under xdist)."""

    def compute():
        table, truth = simulate_responses(400, 20, n_zero=1, n_negative=1, n_miskeyed=1, missing=0.1, random_seed=3)
        # 2,000 draws: with the pivoted difficulties (centred b from 330 answers per item) 1,000 draws
        # gave min bulk ESS 332 in the clean clone
        # the negative and the mis-keyed item contradict a positive slope (the flat one only by
        # chance could): the fit says so, naming them
        with pytest.warns(SlopeWarning, match="'i018'.*'i019'"):
            result = fit_irt(table, "2pl", random_seed=4, **{**FIT, "draws": 2000})
        return table, truth, result

    return computed_once("irt_scale", compute)


# ---- validation and construction --------------------------------------------------------


def test_bad_answers_get_clear_errors():
    table, _ = simulate_responses(20, 5, random_seed=1)
    with pytest.raises(InvalidInputError, match="must be 0 \\(wrong\\) or 1"):
        validate_responses(table.assign(correct=table["correct"] * 2))
    with pytest.raises(InvalidInputError, match="repeat a \\(respondent, item\\) pair"):
        validate_responses(pd.concat([table, table.head(1)]))
    with pytest.raises(InvalidInputError, match="item\\(s\\) have no answer"):
        validate_responses(table, items=["i000", "i001", "never_asked"])
    with pytest.raises(InvalidInputError, match="respondent\\(s\\) have no answer"):
        validate_responses(table, respondents=["p0000", "absent"])
    with pytest.raises(InvalidInputError, match="missing column.*pass the names you use \\(score=\\.\\.\\.\\)"):
        validate_responses(table.rename(columns={"correct": "right"}))
    assert len(validate_responses(table.rename(columns={"correct": "right"}), score="right")) == len(table)  # the advice works
    with pytest.raises(InsufficientDataError, match="two respondents"):
        validate_responses(table[table["respondent"] == "p0000"])
    with pytest.raises(InvalidInputError, match="model must be"):
        build_irt_model(table, "5pl")


def test_item_everyone_got_right_warns():
    table, _ = simulate_responses(30, 4, random_seed=2)
    table.loc[table["item"] == "i001", "correct"] = 1.0
    with pytest.warns(SmallSampleWarning, match="i001"):
        validate_responses(table)


@pytest.mark.parametrize("model", ["1pl", "2pl", "3pl", "4pl"])
def test_models_build_without_sampling(model):
    table, _ = simulate_responses(30, 6, missing=0.2, random_seed=5)
    irt = build_irt_model(table, model, n_options=4)
    assert set(irt.coords) >= {"respondent", "item", "answer"}
    for var in irt.free_RVs + irt.deterministics:
        if var.ndim:
            assert irt.named_vars_to_dims.get(var.name), var.name
    assert ("c" in irt.named_vars) == (model in ("3pl", "4pl"))
    assert ("d" in irt.named_vars) == (model == "4pl")
    assert np.isfinite(irt.compile_logp()(irt.initial_point()))
    assert len(irt.coords["answer"]) == len(table)


@pytest.mark.parametrize("model", ["1pl", "2pl", "3pl", "4pl"])
def test_answer_log_likelihood_is_the_bernoulli_log_pmf(model):
    """The written-out likelihoods (logit for 1PL/2PL, the cancellation-free guessing form for
    3PL/4PL) equal scipy.stats.bernoulli.logpmf at a random point; prior predictive draws are 0/1."""
    from scipy import stats

    table, _ = simulate_responses(40, 6, missing=0.1, random_seed=6)
    irt = build_irt_model(table, model)
    rng = np.random.default_rng(7)
    point = {name: value + rng.normal(0, 0.5, size=np.shape(value)) for name, value in irt.initial_point().items()}
    log_lik = irt.compile_logp(vars=[irt["correct"]], sum=False)(point)[0]
    names = ["theta", "a", "b"] + [n for n in ("c", "d") if n in irt.named_vars]
    values = irt.compile_fn(irt.replace_rvs_by_values([irt[n] for n in names]), inputs=irt.value_vars, on_unused_input="ignore")(point)
    theta, a, b = (np.asarray(v) for v in values[:3])
    person, item = irt["answer_respondent"].get_value(), irt["answer_item"].get_value()
    c = np.asarray(values[3])[item] if model in ("3pl", "4pl") else 0.0
    d = np.asarray(values[4])[item] if model == "4pl" else 1.0
    p = irt_probability(theta[person], a[item], b[item], c, d, lib=np)
    np.testing.assert_allclose(log_lik, stats.bernoulli.logpmf(table["correct"].to_numpy(), p), rtol=1e-9, atol=1e-12)
    draws = pm.sample_prior_predictive(draws=3, model=irt, random_seed=8)["prior_predictive"]["correct"]
    assert set(np.unique(draws.values)) <= {0, 1} and draws.sizes["answer"] == len(table)


def test_joint_3pl_density_stays_finite_for_a_steep_item():
    """A wrong answer far above a steep item's difficulty (eta > 37, sigmoid rounds to 1): PyMC's
    Bernoulli on P = c + (1 - c) sigmoid(eta) gave log(1 - P) = -inf there; the guessing form
    keeps the log-density and its gradient finite."""
    table, _ = simulate_responses(30, 5, guessing=0.2, random_seed=9)
    table.loc[table.index[0], "correct"] = 0
    irt = build_irt_model(table, "3pl", hierarchical=False)
    point = irt.initial_point()
    point["a_log__"] = np.log(np.full(5, 60.0))
    point["theta"] = np.full(len(irt.coords["respondent"]), 3.0)
    point["b"] = np.full(5, -2.0)
    assert np.isfinite(irt.compile_logp()(point))
    assert np.isfinite(irt.compile_dlogp()(point)).all()


def test_answer_log_likelihood_for_pareto_k_is_exact_in_the_tails():
    """The per-answer log-likelihood behind the Pareto-k check, against long-double values: a
    wrong answer at eta = 40 and 60 (P rounds to 1 in double; clipping P gave -36.7 for both)
    and a right one at eta = -40 (2PL, c = 0), 3PL and 4PL alike. The reference sums the two
    non-negative terms of P and 1 - P in long double."""
    eta = np.array([40.0, 60.0, -40.0, 0.3])
    correct = np.array([0, 0, 1, 1])
    for c, d in ((0.0, None), (0.2, None), (0.2, 0.97)):
        e, top = eta.astype(np.longdouble), np.longdouble(1.0 if d is None else d)
        up, down = 1 / (1 + np.exp(-e)), 1 / (1 + np.exp(e))  # sigma(eta), 1 - sigma(eta): no cancellation
        p, q = c * down + top * up, (1 - np.longdouble(c)) * down + (1 - top) * up
        expected = np.where(correct == 1, np.log(p), np.log(q)).astype(float)
        got = answer_log_likelihood(correct, eta, np.full(4, c), None if d is None else np.full(4, d))
        np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_item_information_equals_squared_slope_over_bernoulli_variance():
    """I(theta) = P'(theta)^2 / (P(1 - P)), checked by a numerical derivative."""
    theta = np.linspace(-3, 3, 13)
    a, b, c, d = 1.3, 0.4, 0.2, 0.95
    h = 1e-6
    p = irt_probability(theta, a, b, c, d, lib=np)
    slope = (irt_probability(theta + h, a, b, c, d, lib=np) - irt_probability(theta - h, a, b, c, d, lib=np)) / (2 * h)
    np.testing.assert_allclose(item_information(a, b, c, d, theta), slope**2 / (p * (1 - p)), rtol=1e-6)
    p2 = irt_probability(theta, a, b, 0.0, 1.0, lib=np)
    np.testing.assert_allclose(item_information(a, b, 0.0, 1.0, theta), a**2 * p2 * (1 - p2), rtol=1e-12)


# ---- a fitted 2PL ------------------------------------------------------------------------


@pytest.mark.slow  # the planted 2PL fit behind `scale` (94 s on 2 cores): make validate
def test_recovers_items_and_abilities_without_sign_flip(scale):
    _, truth, result = scale
    assert result.report.converged
    items = result.item_table()
    good = truth["item"].values[~truth["bad"].values]
    a_corr = np.corrcoef(items.loc[good, "a_mean"], truth["a"].sel(item=good))[0, 1]
    b_corr = np.corrcoef(items.loc[good, "b_mean"], truth["b"].sel(item=good))[0, 1]
    people = result.respondent_table()
    theta_corr = np.corrcoef(people["theta_mean"], truth["theta"].sel(respondent=people.index))[0, 1]
    assert a_corr > 0.7 and b_corr > 0.95 and theta_corr > 0.85, (a_corr, b_corr, theta_corr)
    covered = (items.loc[good, "b_lower"] < truth["b"].sel(item=good).values) & (
        truth["b"].sel(item=good).values < items.loc[good, "b_upper"]
    )
    assert covered.mean() >= 0.75


@pytest.mark.slow  # the planted 2PL fit behind `scale` (94 s on 2 cores): make validate
def test_planted_bad_items_are_flagged_with_reasons(scale):
    _, truth, result = scale
    items = result.item_table()
    bad = truth["bad"].to_series()
    assert items.loc[bad[bad].index, "flagged"].all()
    assert items.loc[bad[~bad].index, "flagged"].mean() <= 0.1
    for item in bad[bad].index:
        assert "low discrimination" in items.loc[item, "reasons"]
    misfit = truth["kind"].to_series().isin(["negative", "miskeyed"])
    assert (items.loc[misfit[misfit].index, "fit_ppp"] < 0.05).all()
    assert (items.loc[bad[~bad].index, "fit_ppp"] > 0.01).mean() >= 0.9


@pytest.mark.slow  # the planted 2PL fit behind `scale` (94 s on 2 cores): make validate
def test_item_table_columns_and_information(scale):
    items = scale[2].item_table(theta_points=(0.0,))
    for column in ("a_mean", "b_mean", "a_lower", "b_upper", "r_hat", "ess_bulk", "info_at_0", "flagged", "reasons"):
        assert column in items
    assert (items["info_at_0"] > 0).all()
    assert items.index.name == "item"


@pytest.mark.slow  # the planted 2PL fit behind `scale` (94 s on 2 cores): make validate
def test_scoring_new_respondents_orders_systems_and_covers_their_ability(scale):
    _, truth, result = scale
    rng = np.random.default_rng(8)
    good = truth["item"].values[~truth["bad"].values]
    abilities = {"weak_system": -1.0, "mid_system": 0.3, "strong_system": 1.5}
    rows = []
    for name, theta in abilities.items():
        for item in good:
            p = irt_probability(theta, truth["a"].sel(item=item).item(), truth["b"].sel(item=item).item(), lib=np)
            rows.append((name, item, float(rng.random() < p)))
    new = pd.DataFrame(rows, columns=["respondent", "item", "correct"])
    scores = result.score(new, random_seed=1)
    assert list(scores.sort_values("theta_mean").index) == ["weak_system", "mid_system", "strong_system"]
    for name, theta in abilities.items():
        assert scores.loc[name, "theta_lower"] - 0.3 < theta < scores.loc[name, "theta_upper"] + 0.3
    assert {"accuracy", "majority_agreement", "theta_sd"} <= set(scores)
    with pytest.raises(InvalidInputError, match="not on the calibrated scale"):
        result.score(new.groupby("respondent").head(1).assign(item="unknown_item"))


@pytest.mark.slow  # the planted 2PL fit behind `scale` (94 s on 2 cores): make validate
def test_plots_and_reliability(scale):
    result = scale[2]
    curves = result.plot_item_curves(items=["i000", "i019"], labels={"i019": "last item"})
    labels = [text.get_text() for text in curves.get_legend().get_texts()]
    assert labels[0].startswith("i000: a = ") and labels[1].startswith("last item (i019: a = ")
    information = result.plot_information()  # information on the left axis, SE on its twin
    assert [text.get_text() for text in information.get_legend().get_texts()] == ["test information", "SE of theta (right axis)"]
    assert len(information.get_lines()) == 1 and len(information.get_shared_x_axes().get_siblings(information)) == 2
    assert 0.5 < result.reliability() < 1


@pytest.mark.slow  # the planted 2PL fit behind `scale` (94 s on 2 cores): make validate
def test_build_scale_drops_flagged_items_and_reports_reliability(scale):
    _, truth, result = scale
    flagged = result.item_table()["flagged"]
    refit, report = build_scale(result, random_seed=5, **FIT)
    assert report.loc["before", "items"] == 20 and report.loc["after", "items"] == 20 - flagged.sum()
    kept = set(refit.posterior["item"].values)
    assert kept == set(flagged.index[~flagged]) and not kept & set(truth["item"].values[truth["bad"].values])
    assert report.loc["after", "reliability"] > 0.5


@pytest.mark.slow  # the planted 2PL fit behind `scale` (94 s on 2 cores): make validate
def test_loo_comparison_prefers_2pl_on_2pl_data(scale):
    table, _, two = scale
    with pytest.warns(SlopeWarning, match="'i018'.*'i019'"):
        one = fit_irt(table, "1pl", random_seed=6, **{**FIT, "draws": 2000})
    ranking = compare_irt_models({"1pl": one, "2pl": two})
    assert ranking.index[0] == "2pl"


def test_cli_irt_json(tmp_path, capsys):
    table, _ = simulate_responses(120, 8, random_seed=9)
    table.rename(columns={"respondent": "who"}).to_csv(tmp_path / "answers.csv", index=False)
    args = ["irt", str(tmp_path / "answers.csv"), "--model", "2pl", "--json", "--respondent-column", "who", "--seed", "1"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"items", "respondents", "convergence", "inference"}  # the fit's convergence and inference beside the tables
    assert isinstance(out["convergence"]["converged"], bool) and out["convergence"]["chains"] == 2
    assert out["inference"]["extra_chains"] == 0  # chains are added only when the first mix too little (and say why)
    # this fit's Laplace draws fail the Pareto check, and NUTS starts from the approximation (and says so)
    assert out["inference"]["path"] == "nuts_after_laplace" and out["inference"]["reason"].startswith("the Laplace draws were rejected")
    assert "300 tuning iterations" in out["inference"]["warm_start"]
    assert out["convergence"]["max_r_hat"] > 0.99 and out["convergence"]["divergences"] >= 0
    assert len(out["items"]) == 8 and len(out["respondents"]) == 120
    assert {"item", "a_mean", "b_mean", "flagged", "reasons"} <= set(out["items"][0])
    assert {"respondent", "theta_mean", "theta_sd"} <= set(out["respondents"][0])
    assert main(["irt", str(tmp_path / "missing.csv")]) == 2


def test_cli_irt_priors_and_sampler_reach_fit_irt(tmp_path, monkeypatch):
    """--priors fixed / --sampler numpyro become hierarchical=False / nuts_sampler='numpyro';
    without --priors fit_irt chooses (hierarchical from 10 items on, ``resolve_hierarchical``)."""
    import bayes_raters.irt as irt_package

    seen = []

    def spy(*args, **kwargs):
        seen.append(kwargs)
        raise KeyboardInterrupt  # stop before sampling: only the arguments are tested

    monkeypatch.setattr(irt_package, "fit_irt", spy)
    table, _ = simulate_responses(20, 4, random_seed=9)
    table.to_csv(tmp_path / "answers.csv", index=False)
    for extra in ([], ["--priors", "fixed", "--sampler", "numpyro", "--quiet"]):
        with pytest.raises(KeyboardInterrupt):
            main(["irt", str(tmp_path / "answers.csv"), *extra])
    assert seen[0]["hierarchical"] is None and seen[0]["nuts_sampler"] == "pymc"
    assert seen[1]["hierarchical"] is False and seen[1]["nuts_sampler"] == "numpyro"
    assert seen[0]["progressbar"] is None and seen[1]["progressbar"] is False  # --quiet: no bar; else a bar on a terminal
