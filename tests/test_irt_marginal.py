"""Marginal IRT (abilities integrated out): pooling of answer patterns, the marginal
likelihood against numerical integration, conditional theta draws, reproducibility,
method checks, and sampler settings reaching every sampler."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

from bayes_raters import InvalidInputError
from bayes_raters.errors import ConvergenceWarning
from bayes_raters.irt import compare_irt_models, fit_irt, simulate_responses, validate_responses
from bayes_raters.irt.marginal import answer_patterns, build_marginal_from_table
from bayes_raters.irt.model import irt_probability
from bayes_raters.sampling import sample_model, sampler_settings

FAST = {"draws": 1000, "tune": 1000, "chains": 2, "nuts_sampler": "pymc"}


def test_identical_answer_patterns_are_pooled_with_their_missingness():
    """1,000 respondents x 5 items have at most 32 complete patterns; a missing answer makes
    its own pattern (not pooled with a wrong one)."""
    table, _ = simulate_responses(1000, 5, random_seed=1)
    table = validate_responses(table)
    correct, answered, index, counts = answer_patterns(table, pd.unique(table["respondent"]), pd.unique(table["item"]))
    assert len(counts) <= 32 and counts.sum() == 1000 and answered.all()
    wide = table.pivot(index="respondent", columns="item", values="correct").reindex(pd.unique(table["respondent"]))
    np.testing.assert_array_equal(correct[index], wide.to_numpy())
    gappy = table.drop(index=table.index[(table["respondent"] == "p0000") & (table["item"] == "i000")])
    correct, answered, index, counts = answer_patterns(gappy, pd.unique(gappy["respondent"]), sorted(pd.unique(gappy["item"])))
    assert answered[index[0]].tolist() == [0, 1, 1, 1, 1]
    assert counts[index[0]] == 1


@pytest.mark.parametrize("model", ["1pl", "2pl", "3pl", "4pl"])
def test_marginal_log_density_equals_the_numerical_integral(model):
    """The model's likelihood term at a random point equals the sum over respondents of
    log int prod_j p(y_ij | theta) phi(theta) dtheta by scipy quadrature, to 1e-6 per respondent."""
    table, _ = simulate_responses(40, 8, missing=0.2, guessing=0.2 if model in ("3pl", "4pl") else 0.0, random_seed=2)
    table = validate_responses(table)
    irt = build_marginal_from_table(table, model, n_options=4, hierarchical=False)
    rng = np.random.default_rng(3)
    point = {v.name: rng.normal(0, 0.3, size=np.shape(value)) for v, value in zip(irt.value_vars, irt.initial_point().values())}
    names = ("a", "b", *[n for n in ("c", "d") if n in irt.named_vars])
    outputs = irt.replace_rvs_by_values([irt["marginal_loglik"], *[irt[name] for name in names]])
    potential, *values = irt.compile_fn(outputs, inputs=irt.value_vars, on_unused_input="ignore")(point)
    a, b = values[0], values[1]
    c = values[2] if model in ("3pl", "4pl") else np.zeros_like(a)
    d = values[3] if model == "4pl" else np.ones_like(a)
    items = list(irt.coords["item"])
    total = 0.0
    for _, answers in table.groupby("respondent"):
        j = pd.Index(items).get_indexer(answers["item"])
        y = answers["correct"].to_numpy()

        def density(theta, j=j, y=y):
            p = irt_probability(theta, a[j], b[j], c[j], d[j], lib=np)
            return np.exp(np.sum(y * np.log(p) + (1 - y) * np.log1p(-p))) * stats.norm.pdf(theta)

        value, _ = integrate.quad(density, -12, 12, epsabs=0, epsrel=1e-12, limit=200)
        total += np.log(value)
    assert abs(float(potential) - total) < 1e-6 * table["respondent"].nunique()


def test_marginal_model_has_no_theta_and_dims_on_every_variable():
    table, _ = simulate_responses(60, 6, random_seed=4)
    irt = build_marginal_from_table(validate_responses(table), "2pl", n_options=None, hierarchical=True)
    assert "theta" not in irt.named_vars
    assert {v.name for v in irt.free_RVs} == {"b_mu", "b_sigma", "b_z", "log_a_mu", "log_a_sigma", "log_a_z"}
    for var in irt.free_RVs + irt.deterministics + list(irt.data_vars):
        if var.ndim:
            assert irt.named_vars_to_dims.get(var.name), var.name
    for n, names in ((300, {"b_z", "log_a_z"}), (350, {"b", "log_a_z"}), (600, {"b", "log_a"})):  # b from 330, log a from 500
        big, _ = simulate_responses(n, 4, random_seed=4)
        irt = build_marginal_from_table(validate_responses(big), "2pl", n_options=None, hierarchical=True)
        assert {v.name for v in irt.free_RVs} == {"b_mu", "b_sigma", "log_a_mu", "log_a_sigma"} | names


@pytest.fixture(scope="module")
def small_fit():
    table, truth = simulate_responses(300, 8, missing=0.1, random_seed=5)
    return table, truth, fit_irt(table, "2pl", random_seed=6, **FAST)


def test_marginal_fit_has_theta_draws_and_respondent_log_likelihood(small_fit):
    table, truth, result = small_fit
    posterior = result.posterior
    assert posterior["theta"].dims == ("chain", "draw", "respondent")
    assert posterior.attrs["method"] == "marginal" and posterior.attrs["nuts_sampler"] == "pymc"
    assert posterior.attrs["theta_mh_acceptance"] > 0.9
    log_lik = result.idata["log_likelihood"]["answers"]
    assert log_lik.dims == ("chain", "draw", "respondent") and np.all(np.asarray(log_lik) < 0)
    assert "observed_data" in result.idata.children
    people = result.respondent_table()
    # 8 items: reliability about 0.55, so corr(theta_mean, theta) near its square root, 0.74;
    # theta draws mixed up between respondents would give about 0
    assert np.corrcoef(people["theta_mean"], truth["theta"].sel(respondent=people.index))[0, 1] > 0.65
    assert result.loo().elpd < 0 and len(result.item_table()) == 8


def test_same_seed_same_draws_theta_included(small_fit):
    table, _, first = small_fit
    again = fit_irt(table, "2pl", random_seed=6, **FAST)
    for name in ("a", "b", "theta"):
        np.testing.assert_array_equal(first.posterior[name].values, again.posterior[name].values)
    with warnings.catch_warnings():  # another seed: whether its draws differ is the point, not convergence
        warnings.simplefilter("ignore", ConvergenceWarning)
        other = fit_irt(table, "2pl", random_seed=7, **FAST)
    assert not np.array_equal(first.posterior["theta"].values, other.posterior["theta"].values)


def test_comparing_marginal_and_joint_fits_is_refused(small_fit):
    table, _, marginal = small_fit
    joint = dataclasses.replace(marginal, method="joint")  # the check looks at the method only
    with pytest.raises(InvalidInputError, match="same method="):
        compare_irt_models({"marginal": marginal, "joint": joint})
    with pytest.raises(InvalidInputError, match="method must be one of"):
        fit_irt(table, "2pl", method="laplace")


def test_target_accept_reaches_every_sampler(monkeypatch):
    """nutpie used to run at its own default (0.8) whatever the model asked for."""
    assert sampler_settings("pymc", 0.95) == {"target_accept": 0.95}
    assert sampler_settings("nutpie", 0.95, {"adaptation": "low_rank"}) == {"nuts": {"target_accept": 0.95, "adaptation": "low_rank"}}
    assert sampler_settings("numpyro", 0.9) == {"nuts": {"target_accept": 0.9}}
    with pytest.raises(InvalidInputError, match="nuts_sampler must be one of"):
        sampler_settings("stan", 0.9)
    nutpie = pytest.importorskip("nutpie")
    seen = {}
    original = nutpie.sample

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(nutpie, "sample", spy)
    table, _ = simulate_responses(50, 4, random_seed=8)
    irt = build_marginal_from_table(validate_responses(table), "1pl", n_options=None, hierarchical=False)
    with warnings.catch_warnings():  # 50 draws: convergence is not what is tested here
        warnings.simplefilter("ignore", ConvergenceWarning)
        idata, _ = sample_model(irt, draws=50, tune=50, nuts_sampler="nutpie", target_accept=0.97, random_seed=1, what="test")
    assert seen["target_accept"] == 0.97
    assert idata["posterior"].attrs["nuts_sampler"] == "nutpie"
