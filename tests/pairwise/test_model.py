"""Bayesian beta-latent pairwise model: structure without sampling, likelihood against
the closed-form probabilities, design checks and bad input, a small seeded recovery, the
bounds, result tables, active selection, and the Belz & Kow analyses."""

from __future__ import annotations

import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm
import pytest
import xarray as xr
from pytensor.compile.sharedvalue import SharedVariable
from scipy import special, stats

from bayes_raters.agreement import eta_squared, kendalls_w
from bayes_raters.errors import BayesRatersError, ConvergenceWarning, InputWarning, InsufficientDataError, InvalidInputError
from bayes_raters.pairwise import (
    PairwiseResult,
    fit_pairwise,
    latent_values,
    neighbour_pairs,
    outcome_probabilities,
    simulate_judgements,
)
from bayes_raters.pairwise.evaluation import compare_rse_pje, simulate_rse_pje
from bayes_raters.pairwise.model import build_pairwise_model, prepare_data

FIT = {"draws": 1000, "tune": 1000, "chains": 4, "cores": 2, "nuts_sampler": "pymc"}


@pytest.fixture(scope="module")
def mixed():
    truth = latent_values(12, "uniform", random_seed=5)
    return truth, simulate_judgements(
        truth, n_comparisons=150, n_scalars=60, n_strengths=40, n_annotators=3, sigma_consistency=0.2,
        sigma_bias=0.2, random_seed=6,
    )


def test_model_builds_without_sampling_with_named_dims(mixed):
    _, sim = mixed
    data = prepare_data(sim["comparisons"], sim["scalars"], sim["strengths"])
    model = build_pairwise_model(data)
    assert model.named_vars_to_dims["s"] == ("item",)
    assert model.named_vars_to_dims["outcome"] == ("pair", "outcome_kind")
    assert model.named_vars_to_dims["value"] == ("scalar",)
    assert model.named_vars_to_dims["preference"] == ("strength",)
    assert model.named_vars_to_dims["consistency"] == ("annotator",)
    assert {"pair_item_a", "pair_total", "scalar_value", "strength_value"} <= set(model.named_vars)
    assert all(isinstance(model[name], SharedVariable) for name in ("pair_item_a", "pair_total", "scalar_value", "strength_value"))
    assert "s" in pm.model_to_graphviz(model).source
    assert np.isfinite(model.compile_logp()(model.initial_point()))


def _set_point(model, s, lam, eps=None):
    point = model.initial_point()
    point["s_logodds__"] = np.log(s / (1 - s))
    point["lambda_log__"] = np.log(lam)
    if eps is not None:
        point["epsilon_log__"] = np.log(eps)
    return point


def _outcome_logp(model, point):
    return model.compile_fn(model.logp(vars=[model["outcome"]], sum=False)[0], inputs=model.value_vars)(point)


@pytest.mark.parametrize("link", ["rao-kupper", "probit"])
def test_outcome_likelihood_equals_closed_form_probabilities(link):
    comparisons = pd.DataFrame({"item_a": ["x", "x", "y"], "item_b": ["y", "z", "z"], "outcome": ["win", "tie", "loss"]})
    model = build_pairwise_model(prepare_data(comparisons), link=link, parametrisation="values")
    s, lam, eps = np.array([0.8, 0.5, 0.3]), 6.0, 0.4
    logp = _outcome_logp(model, _set_point(model, s, lam, eps))
    p = outcome_probabilities(s[[0, 0, 1]], s[[1, 2, 2]], lam, eps, link)
    expected = np.log(p[np.arange(3), [2, 1, 0]])
    # PyTensor's normal log-CDF agrees with scipy's to ~1e-8 relative
    np.testing.assert_allclose(logp, expected, rtol=1e-10 if link == "rao-kupper" else 1e-7)
    np.testing.assert_allclose(p.sum(axis=-1), 1.0)


@pytest.mark.parametrize("link", ["rao-kupper", "probit"])
def test_identical_comparisons_pool_into_counts_with_the_same_likelihood(link):
    """Rows of one pair in either order (and repeats) become one multinomial count vector whose
    log-probability is the sum of the rows' categorical log-probabilities plus the parameter-free
    multinomial coefficient log(5! / (1! 1! 3!)) = log 20."""
    comparisons = pd.DataFrame(
        {"item_a": ["x", "y", "x", "x", "y", "y"], "item_b": ["y", "x", "y", "y", "x", "z"],
         "outcome": ["win", "win", "tie", "win", "loss", "loss"]}
    )
    model = build_pairwise_model(prepare_data(comparisons), link=link, parametrisation="values")
    np.testing.assert_array_equal(model.rvs_to_values[model["outcome"]].data, [[1, 1, 3], [1, 0, 0]])
    s, lam, eps = np.array([0.8, 0.5, 0.3]), 6.0, 0.4
    logp = _outcome_logp(model, _set_point(model, s, lam, eps))
    p = outcome_probabilities(s[[0, 1]], s[[1, 2]], lam, eps, link)
    expected = [np.log(20) + 3 * np.log(p[0, 2]) + np.log(p[0, 1]) + np.log(p[0, 0]), np.log(p[1, 0])]
    np.testing.assert_allclose(logp, expected, rtol=1e-7)


def test_ties_false_is_bradley_terry_and_refuses_tied_data():
    comparisons = pd.DataFrame({"item_a": ["x", "y", "x"], "item_b": ["y", "z", "z"], "outcome": ["win", "win", "loss"]})
    data = prepare_data(comparisons)
    model = build_pairwise_model(data, parametrisation="values")  # ties=None: no tie in the data, no tie band
    assert "epsilon" not in model.named_vars
    assert "epsilon" in build_pairwise_model(data, ties=True).named_vars
    s, lam = np.array([0.8, 0.5, 0.3]), 6.0
    logp = _outcome_logp(model, _set_point(model, s, lam))
    d = lam * (s[[0, 0, 1]] - s[[1, 2, 2]])
    np.testing.assert_allclose(np.sort(logp), np.sort(-np.logaddexp(0, -d * np.array([1, -1, 1]))), rtol=1e-10)
    tied = comparisons.assign(outcome=["win", "tie", "loss"])
    with pytest.raises(InvalidInputError, match="ties=False, but 1 comparison"):
        build_pairwise_model(prepare_data(tied), ties=False)


def test_scalars_at_the_bounds_are_kept_and_finite():
    scalars = pd.DataFrame({"item": ["a", "a", "b", "b"], "value": [0.0, 0.02, 1.0, 0.97]})
    model = build_pairwise_model(prepare_data(scalars=scalars))
    assert model["scalar_value"].get_value().shape == (4,)
    assert np.isfinite(model.compile_logp()(model.initial_point()))


def test_censored_slider_likelihood_equals_scipy_even_far_in_the_tails():
    """Slider log-likelihood = scipy's Beta logcdf at r, logsf at 1 - r, logpdf inside,
    including a point where pm.Censored's log(1 - F) is -inf: a slider at 1 for an item with
    mean 0.05 and concentration 40 (P = 3e-75)."""
    scalars = pd.DataFrame({"item": ["a", "a", "b", "b"], "value": [0.0, 0.3, 1.0, 0.97]})
    model = build_pairwise_model(prepare_data(scalars=scalars))
    point = model.initial_point()
    s = np.array([0.6, 0.05])
    point["s_logodds__"] = np.log(s / (1 - s))
    point["phi_log__"] = np.log(40.0)
    logp = model.compile_fn(model.logp(vars=[model["value"]], sum=False)[0], inputs=model.value_vars)(point)
    mean = s[[0, 0, 1, 1]]
    beta = stats.beta(mean * 40, (1 - mean) * 40)
    expected = [beta.logcdf(0.01)[0], beta.logpdf(0.3)[1], beta.logsf(0.99)[2], beta.logpdf(0.97)[3]]
    naive = pm.Censored.dist(pm.Beta.dist(0.05 * 40, 0.95 * 40), lower=0.01, upper=0.99)
    assert -200 < expected[2] < -100 and np.isneginf(pm.logp(naive, 0.99).eval())
    np.testing.assert_allclose(logp, expected, rtol=1e-6)


def test_panel_offset_parametrisation_keeps_the_beta_prior_and_iid_biases():
    """With slider biases the sampler works on x = logit(s) + delta (delta the panel's mean
    bias) and zero-sum deviations. The model must stay s ~ Beta(a0, b0), u_k ~ iid
    N(0, sigma_bias): the density of x is scipy's Beta density of invlogit(x - delta) times
    the Jacobian, prior draws of s pass a KS test against Beta(2, 3), and the biases over
    sigma_bias have unit variances and no correlation (a zero-sum part alone would give
    variance 1 - 1/K = 0.75 and correlation -1/3)."""
    scalars = pd.DataFrame({"item": list("abcd") * 2, "value": np.linspace(0.1, 0.9, 8), "annotator": list("pqrs") * 2})
    model = build_pairwise_model(prepare_data(scalars=scalars), prior=(2.0, 3.0))
    assert model.named_vars_to_dims["item_level"] == ("item",)
    assert model.named_vars_to_dims["bias"] == ("annotator",)
    point = model.initial_point()
    x = np.array([-1.0, 0.2, 1.5, 3.0])
    point["item_level"], point["sigma_bias_log__"], point["panel_bias_z"] = x, np.log(0.4), 0.7
    delta = 0.4 * 0.7 / np.sqrt(4)
    logp = model.compile_fn(model.logp(vars=[model["item_level"]], sum=False)[0], inputs=model.value_vars, on_unused_input="ignore")(point)
    s = 1 / (1 + np.exp(-(x - delta)))
    np.testing.assert_allclose(logp, stats.beta(2, 3).logpdf(s) + np.log(s * (1 - s)), rtol=1e-10)

    s_draws, bias, sigma = pm.draw([model["s"], model["bias"], model["sigma_bias"]], draws=4000, random_seed=1)
    assert stats.kstest(s_draws[:, 0], stats.beta(2, 3).cdf).pvalue > 0.01
    np.testing.assert_allclose(np.cov((bias / sigma[:, None]).T), np.eye(4), atol=0.1)


def test_neighbour_pairs_pair_adjacent_items_then_random_ones():
    values = pd.Series([0.9, 0.1, 0.5, 0.3, 0.7], index=list("abcde"))  # order b d c e a
    pairs = neighbour_pairs(values, 10, random_fraction=0.3, random_seed=0)
    assert len(pairs) == 10 and (pairs["item_a"] != pairs["item_b"]).all()
    near = list(zip(pairs["item_a"][:7], pairs["item_b"][:7]))
    assert near == [("b", "d"), ("d", "c"), ("c", "e"), ("e", "a"), ("b", "c"), ("d", "e"), ("c", "a")]
    assert pairs.equals(neighbour_pairs(values, 10, random_fraction=0.3, random_seed=0))
    with pytest.raises(InsufficientDataError, match="no first-stage value"):
        neighbour_pairs(values.where(values > 0.2), 4)
    with pytest.raises(InvalidInputError, match="random_fraction"):
        neighbour_pairs(values, 4, random_fraction=1.5)


def test_simulated_outcomes_for_given_pairs_follow_the_model():
    truth = pd.Series([0.2, 0.5, 0.8], index=["x", "y", "z"])
    pairs = pd.DataFrame({"item_a": ["x", "y"] * 3000, "item_b": ["y", "z"] * 3000})
    comparisons = simulate_judgements(truth, pairs=pairs, lam=8.0, epsilon=0.5, random_seed=3)["comparisons"]
    assert comparisons[["item_a", "item_b"]].equals(pairs)
    for a, b in (("x", "y"), ("y", "z")):
        seen = comparisons.loc[comparisons["item_a"] == a, "outcome"].value_counts().reindex(["loss", "tie", "win"]).to_numpy()
        expected = outcome_probabilities(truth[a], truth[b], 8.0, 0.5) * seen.sum()
        assert stats.chisquare(seen, expected).pvalue > 0.001
    with pytest.raises(InvalidInputError, match="item of truth"):
        simulate_judgements(truth, pairs=pd.DataFrame({"item_a": ["x"], "item_b": ["w"]}))


def test_disconnected_comparisons_are_named_unless_anchored():
    comparisons = pd.DataFrame({"item_a": ["a", "c"], "item_b": ["b", "d"], "outcome": ["win", "loss"]})
    with pytest.raises(InsufficientDataError, match=r"2 disconnected groups.*\['a', 'b'\].*\['c', 'd'\]"):
        prepare_data(comparisons)
    anchored = pd.DataFrame({"item": ["a", "c"], "value": [0.7, 0.2]})
    assert len(prepare_data(comparisons, anchored).items) == 4
    with pytest.raises(InsufficientDataError, match=r"\['c', 'd'\]"):
        prepare_data(comparisons, anchored.iloc[:1])
    with pytest.warns(InputWarning, match="rest on the prior alone"):
        assert len(prepare_data(comparisons, allow_disconnected=True).items) == 4


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"comparisons": pd.DataFrame({"item_a": ["a"], "item_b": ["b"], "outcome": ["draw"]})}, InvalidInputError, "must be one of"),
        ({"comparisons": pd.DataFrame({"item_a": ["a"], "item_b": ["a"], "outcome": ["win"]})}, InvalidInputError, "with itself"),
        ({"comparisons": pd.DataFrame({"item_a": ["a"], "outcome": ["win"]})}, InvalidInputError, "missing column"),
        ({"strengths": pd.DataFrame({"item_a": ["a"], "item_b": ["b"], "strength": [60.0]}), "strength_max": 50}, InvalidInputError, r"outside \[-50"),
        ({"scalars": pd.DataFrame({"item": ["a"], "value": [1.5]})}, InvalidInputError, r"outside \[0, 1\]"),
        ({"scalars": pd.DataFrame({"item": ["a"], "value": ["good"]})}, InvalidInputError, "must hold numbers"),
        ({"scalars": pd.DataFrame({"item": ["a", "b"], "value": [0.1, 0.2]}), "items": ["a", "b", "c"]}, InsufficientDataError, "never judged"),
        ({}, InvalidInputError, "at least one"),
    ],
)
def test_bad_input_raises(kwargs, error, match):
    with pytest.raises(error, match=match):
        prepare_data(**kwargs)
    assert issubclass(error, BayesRatersError)


@pytest.mark.slow  # a recovery (50 s in the suite, 2026-11-28): `make validate`
def test_small_recovery_from_pairwise_outcomes_with_ties():
    """30 items, 600 Rao-Kupper outcomes (lambda 8, epsilon 0.5): rank recovery and both
    parameters inside their 90% intervals."""
    truth = latent_values(30, "uniform", random_seed=1)
    sim = simulate_judgements(truth, n_comparisons=600, lam=8.0, epsilon=0.5, random_seed=2)
    assert (sim["comparisons"]["outcome"] == "tie").sum() > 30
    result = fit_pairwise(sim["comparisons"], random_seed=3, **FIT)
    table = result.item_table(ci_prob=0.9)
    assert stats.spearmanr(table["s_mean"], truth.reindex(table.index)).statistic >= 0.9
    parameters = result.summary(var_names=result.scalar_parameters, ci_prob=0.9)
    for name, true in (("lambda", 8.0), ("epsilon", 0.5)):
        assert parameters.loc[name, "eti90_lb"] < true < parameters.loc[name, "eti90_ub"], parameters
    assert result.report.converged
    # result views agree with each other
    assert result.prob_above(table.index[0], table.index[-1]) > 0.95
    matrix = result.prob_above_matrix()
    np.testing.assert_allclose(matrix.to_numpy() + matrix.to_numpy().T, 1 - np.eye(30))
    ranks = result.rank_distribution()
    np.testing.assert_allclose(ranks.sum(axis=1), 1.0)
    assert stats.spearmanr(table["rank_mean"], np.arange(30)).statistic > 0.95
    nxt = result.next_pairs(5)
    assert len(nxt) == 5 and (nxt["item_a"] != nxt["item_b"]).all() and (nxt["information"] > 0).all()
    assert nxt["information"].is_monotonic_decreasing
    assert isinstance(result.plot_forest(), az.PlotCollection)


@pytest.mark.slow  # a recovery (60-117 s in the suite): make validate
def test_items_near_the_upper_bound_stay_there():
    truth = latent_values(15, "upper", random_seed=7)
    sim = simulate_judgements(truth, n_comparisons=100, n_scalars=60, random_seed=8)
    result = fit_pairwise(sim["comparisons"], sim["scalars"], random_seed=9, **FIT)
    table = result.item_table()
    assert truth.mean() > 0.85
    assert abs(table["s_mean"].mean() - truth.mean()) < 0.05
    assert table["s_mean"].min() > 0.6


def test_system_layer_groups_items(mixed, tmp_path):
    truth, sim = mixed
    systems = pd.Series(np.where(np.arange(12) < 6, "sys_A", "sys_B"), index=truth.index)
    # The system layer's shape and the round trip are tested, not accuracy: a short fit (this
    # model needs ~100 leapfrog steps per draw; 4 x (1000 + 1000) took 218 s in the suite, 2 x (100 + 100)
    # 129-157 s with the extra chains, a third of it PyMC building one gradient per variable).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = fit_pairwise(sim["comparisons"], sim["scalars"], sim["strengths"], systems=systems, random_seed=4,
                                    draws=50, tune=50, chains=2, cores=1, nuts_sampler="pymc")
    table = result.system_table()
    assert set(table.index) == {"sys_A", "sys_B"} and table["n_items"].sum() == 12
    assert (table["system_value_lower"] < table["system_value_mean"]).all() and (table["system_value_mean"] < table["system_value_upper"]).all()
    assert result.idata["posterior"]["system_value"].dims == ("chain", "draw", "system")
    loaded = PairwiseResult.load(result.save(tmp_path / "fit.nc"))  # lossless round trip
    pd.testing.assert_frame_equal(loaded.item_table(), result.item_table())
    pd.testing.assert_frame_equal(loaded.system_table(), result.system_table())
    assert loaded.report == result.report and loaded.spec == result.spec and loaded.inference == result.inference
    xr.testing.assert_identical(loaded.idata["sample_stats"].to_dataset(), result.idata["sample_stats"].to_dataset())
    constant = result.idata["constant_data"].to_dataset()  # the judgements are inputs of idata itself
    stored = pd.Series(constant["item_system"].values, index=constant["item"].values)
    assert stored.to_dict() == systems.to_dict() and constant.sizes["strengths_row"] == len(sim["strengths"])
    xr.testing.assert_identical(loaded.idata["constant_data"].to_dataset(), constant)


def test_kendalls_w_against_known_values():
    perfect = pd.DataFrame({"evaluator": np.repeat(["e1", "e2", "e3"], 4), "system": list("abcd") * 3, "score": [1, 2, 3, 4] * 3})
    assert kendalls_w(perfect) == pytest.approx(1.0)
    reversed_pair = perfect.assign(score=[1, 2, 3, 4, 4, 3, 2, 1, 1, 2, 3, 4])
    # rank sums 6, 7, 8, 9 -> S = 5, W = 12 * 5 / (9 * 60) = 1/9
    assert kendalls_w(reversed_pair) == pytest.approx(1 / 9)
    with pytest.raises(InvalidInputError, match="every rater"):
        kendalls_w(perfect.iloc[:-1])


def test_eta_squared_matches_anova_sums_of_squares():
    table = pd.DataFrame({"system": ["a"] * 3 + ["b"] * 3, "score": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    result = eta_squared(table)
    assert result["eta_squared"] == pytest.approx(13.5 / 17.5)
    assert result["F"] == pytest.approx(stats.f_oneway([1, 2, 3], [4, 5, 6]).statistic)


def test_rse_and_pje_simulation_has_a_latin_square_design_and_pje_agrees_more():
    sim = simulate_rse_pje(random_seed=1)
    rse, pje = sim["rse"], sim["pje"]
    first = rse[rse["repeat"] == 0]
    assert first.groupby("evaluator")["system"].value_counts().eq(1).all()  # each system once per evaluator
    assert first.groupby("test_item")["system"].nunique().eq(6).all()
    table = compare_rse_pje(rse, pje, fit=False)
    assert (table.loc[["eta_squared (System)", "Kendall's W", "self-consistency (r)"], "PJE"]
            > table.loc[["eta_squared (System)", "Kendall's W", "self-consistency (r)"], "RSE"]).all()


def test_aggregated_citation_counts_pool_to_six_pairs_with_the_bradley_terry_likelihood():
    """Stigler's citation counts (tests/data/citations, 12 rows, 3,727 comparisons, no ties)
    as R's BradleyTerry2 ships them: count= uses them as 3,727 judgements, the model pools them
    into 6 pairs, has no tie band, and its outcome log-likelihood at s, lambda equals the
    Bradley-Terry log-likelihood of the counts at abilities lambda * s plus the binomial
    coefficients."""
    table = pd.read_csv(Path(__file__).resolve().parents[1] / "data" / "citations" / "citations.csv")
    comparisons = table.rename(columns={"cited": "item_a", "citing": "item_b"})
    data = prepare_data(comparisons, count="n")
    assert len(data.comparisons) == 3727
    model = build_pairwise_model(data, parametrisation="values")
    counts = model.rvs_to_values[model["outcome"]].data
    assert counts.shape == (6, 3) and counts.sum() == 3727 and counts[:, 1].sum() == 0
    assert "epsilon" not in model.named_vars
    s, lam = np.array([0.7, 0.1, 0.6, 0.75]), 4.3
    logp = _outcome_logp(model, _set_point(model, s, lam)).sum()
    ability = pd.Series(lam * s, index=data.items)
    d = ability[table["cited"]].to_numpy() - ability[table["citing"]].to_numpy()
    expected = (table["n"] * -np.logaddexp(0, -d)).sum()
    pairs = table.assign(pair=[tuple(sorted(p)) for p in zip(table["cited"], table["citing"], strict=True)]).groupby("pair")["n"]
    expected += sum(special.gammaln(n.sum() + 1) - special.gammaln(n + 1).sum() for _, n in pairs)
    np.testing.assert_allclose(logp, expected, rtol=1e-10)


@pytest.mark.parametrize("link", ["rao-kupper", "probit"])
def test_difference_parametrisation_has_the_density_of_the_values_parametrisation(link):
    """Comparisons alone are sampled in ability differences and two log gaps
    (pairwise.abilities). At random points, its log density equals the value parametrisation's
    (logit s, log lambda) density at the same s, lambda plus log |det d(logit s, log lambda) /
    d(new coordinates)|, taken here by central finite differences, up to one constant: PyMC's
    zero-sum transform leaves out the volume factor of its linear map from n - 1 free
    coordinates, 1/2 log n. So the two are one model."""
    comparisons = pd.DataFrame(
        {"item_a": ["w", "x", "y", "w", "x", "z"], "item_b": ["x", "y", "z", "z", "z", "y"],
         "outcome": ["win", "tie", "loss", "loss", "win", "tie"]}
    )  # a strongly connected win graph (w > x > z > w, y ties x and z): every item bounded
    data = prepare_data(comparisons)
    new = build_pairwise_model(data, link=link)
    old = build_pairwise_model(data, link=link, parametrisation="values")
    assert "ability_difference" in new.named_vars and "ability_difference" not in old.named_vars
    annotated = prepare_data(comparisons.assign(annotator=["a", "b"] * 3))
    assert "log_panel_consistency" in build_pairwise_model(annotated).named_vars  # consistencies: differences too
    never_loses = prepare_data(comparisons.assign(outcome=["win", "tie", "loss", "win", "win", "tie"]))  # w never loses
    assert "ability_difference" not in build_pairwise_model(never_loses).named_vars
    new_logp, old_logp = new.compile_logp(), old.compile_logp()
    values = new.compile_fn(new.replace_rvs_by_values([new["s"], new["lambda"]]), inputs=new.value_vars, on_unused_input="ignore")
    names = ["ability_difference_zerosum__", "log_gap_low", "log_gap_high"]
    rng = np.random.default_rng(4)
    gaps = []

    def old_coordinates(flat, point):
        point = {**point, names[0]: flat[:3], names[1]: flat[3], names[2]: flat[4]}
        s, lam = values(point)
        return np.r_[np.log(s / (1 - s)), np.log(lam)]

    for _ in range(3):
        point = {**new.initial_point(), names[0]: rng.normal(0, 0.5, 3), names[1]: rng.normal(-1, 0.5),
                 names[2]: rng.normal(1, 0.5), "epsilon_log__": rng.normal(-1, 0.3)}
        flat = np.r_[point[names[0]], point[names[1]], point[names[2]]]
        step = 1e-6
        jacobian = np.column_stack([
            (old_coordinates(flat + step * e, point) - old_coordinates(flat - step * e, point)) / (2 * step) for e in np.eye(5)
        ])
        s, lam = values(point)
        old_point = {"s_logodds__": np.log(s / (1 - s)), "lambda_log__": np.log(lam), "epsilon_log__": point["epsilon_log__"]}
        gaps.append(new_logp(point) - old_logp(old_point) - np.linalg.slogdet(jacobian)[1])
    np.testing.assert_allclose(gaps, -0.5 * np.log(4), rtol=0, atol=1e-6)


def test_panel_consistency_differences_have_the_density_of_the_values_parametrisation():
    """With annotator consistencies, comparisons alone are sampled in ability differences with
    the panel's scale folded into them (pairwise.abilities.panel_consistency). At random points
    its log density minus the values parametrisation's (logit s, log lambda, z) density at the
    same s, lambda, c, less log |det| of the map between the coordinates (central finite
    differences), is one constant (the zero-sum transforms' volume factors): the same model. A
    missing or wrong Jacobian term (the -G of lambda = Lambda e^-G) makes the gaps differ."""
    comparisons = pd.DataFrame(
        {"item_a": ["w", "x", "y", "w", "x", "z", "w", "y"], "item_b": ["x", "y", "z", "z", "z", "y", "y", "x"],
         "outcome": ["win", "tie", "loss", "loss", "win", "tie", "win", "loss"], "annotator": list("abcabcab")}
    )
    data = prepare_data(comparisons)
    new = build_pairwise_model(data)
    old = build_pairwise_model(data, parametrisation="values")
    assert "consistency_deviation_z" in new.named_vars and "consistency_z" in old.named_vars
    new_logp, old_logp = new.compile_logp(), old.compile_logp()
    targets = [new["s"], new["lambda"], new["consistency"]]
    values = new.compile_fn(new.replace_rvs_by_values(targets), inputs=new.value_vars, on_unused_input="ignore")
    free = ["ability_difference_zerosum__", "log_gap_low", "log_gap_high", "panel_consistency_z", "consistency_deviation_z_zerosum__"]
    sizes = [3, 1, 1, 1, 2]
    rng = np.random.default_rng(11)
    gaps = []

    def unpack(flat, point):
        parts = np.split(flat, np.cumsum(sizes)[:-1])
        return {**point, **{name: (part if size > 1 else part[0]) for name, part, size in zip(free, parts, sizes, strict=True)}}

    def old_coordinates(flat, point):
        point = unpack(flat, point)
        s, lam, c = values(point)
        sigma = np.exp(point["sigma_consistency_log__"])
        return np.r_[np.log(s / (1 - s)), np.log(lam), np.log(c) / sigma]

    for _ in range(4):
        point = {**new.initial_point(), "sigma_consistency_log__": rng.normal(-1, 0.3), "epsilon_log__": rng.normal(-1, 0.3)}
        flat = np.r_[rng.normal(0, 0.5, 3), rng.normal(-1, 0.5), rng.normal(1, 0.5), rng.normal(0, 1), rng.normal(0, 1, 2)]
        step = 1e-6
        jacobian = np.column_stack([
            (old_coordinates(flat + step * e, point) - old_coordinates(flat - step * e, point)) / (2 * step) for e in np.eye(len(flat))
        ])
        coordinates = old_coordinates(flat, point)
        old_point = {"s_logodds__": coordinates[:4], "lambda_log__": coordinates[4], "consistency_z": coordinates[5:],
                     "sigma_consistency_log__": point["sigma_consistency_log__"], "epsilon_log__": point["epsilon_log__"]}
        gaps.append(new_logp(unpack(flat, point)) - old_logp(old_point) - np.linalg.slogdet(jacobian)[1])
    assert np.ptp(gaps) < 1e-5, gaps
