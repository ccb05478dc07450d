"""Marginal IRT (abilities integrated out): pooling of answer patterns, the marginal
likelihood against numerical integration, conditional theta draws, reproducibility,
method checks, and sampler settings reaching every sampler."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, special, stats

from bayes_raters import InvalidInputError
from bayes_raters.errors import ConvergenceWarning
from bayes_raters.inference import sample_model
from bayes_raters.inference_record import InferenceRecord
from bayes_raters.irt import IRTResult, compare_irt_models, fit_irt, simulate_responses, validate_responses
from bayes_raters.irt.binary.marginal import answer_patterns, build_marginal_from_table
from bayes_raters.irt.binary.model import irt_probability, item_pivots
from bayes_raters.sampling import sampler_settings

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


@pytest.mark.parametrize("model", ["3pl", "4pl"])
def test_guessing_models_stay_finite_for_a_steep_item_at_the_outer_nodes(model):
    """One item with a = 60 puts eta = a (theta - b) far past 37 at the outer quadrature nodes,
    where sigmoid(eta) rounds to 1: the log-density and its gradient must stay finite (written
    as the difference (1 - c) - (1 - c) sigmoid(eta), the 3PL's were -inf and NaN, and NUTS counted each such
    step as a divergence: 470 of 2,000 on the SBC's 3PL simulation 0)."""
    table, _ = simulate_responses(60, 6, guessing=0.2, random_seed=4)
    irt = build_marginal_from_table(validate_responses(table), model, n_options=4, hierarchical=False)
    point = irt.initial_point()
    point["a_log__"] = np.log(np.r_[60.0, np.ones(5)])
    logp, dlogp = irt.compile_logp(), irt.compile_dlogp()
    assert np.isfinite(logp(point))
    assert np.isfinite(dlogp(point)).all()


def test_marginal_model_has_no_theta_and_dims_on_every_variable():
    table, _ = simulate_responses(60, 6, random_seed=4)
    irt = build_marginal_from_table(validate_responses(table), "2pl", n_options=None, hierarchical=True)
    assert "theta" not in irt.named_vars
    assert {v.name for v in irt.free_RVs} == {"b_mu", "b_sigma", "b_z", "log_a_mu", "log_a_sigma", "log_a_z"}
    for var in irt.free_RVs + irt.deterministics + list(irt.data_vars):
        if var.ndim:
            assert irt.named_vars_to_dims.get(var.name), var.name
    # b centred from 330 answers per item (as logits at the pivots), log a from 500 (the items'
    # mean and deviations)
    centred = {"b": {"b_logit", "b_shift"}, "log_a": {"log_a_mean", "log_a_dev"}}
    non_centred = {name: {f"{name}_mu", f"{name}_z"} for name in ("b", "log_a")}
    for n, kinds in ((300, (non_centred, non_centred)), (350, (centred, non_centred)), (600, (centred, centred))):
        big, _ = simulate_responses(n, 4, random_seed=4)
        irt = build_marginal_from_table(validate_responses(big), "2pl", n_options=None, hierarchical=True)
        expected = {"b_sigma", "log_a_sigma"} | kinds[0]["b"] | kinds[1]["log_a"]
        assert {v.name for v in irt.free_RVs} == expected
        assert {"a", "b"} <= {v.name for v in irt.deterministics}


def small_table():
    return simulate_responses(300, 8, missing=0.1, random_seed=5)


def test_marginal_fit_has_theta_draws_respondent_log_likelihood_and_saves_losslessly(tmp_path):
    """One fit, every check on it in one test (a module fixture would be computed on each
    pytest-xdist worker: 107 + 89 s in the suite)."""
    table, truth = small_table()
    # 2,000 draws: min bulk ESS 755-1,103 over seeds 6-9 (1,000 draws gave 367-537, too close to 400)
    result = fit_irt(table, "2pl", random_seed=6, **{**FAST, "draws": 2000})
    posterior = result.posterior
    assert posterior["theta"].dims == ("chain", "draw", "respondent")
    record = result.inference
    assert record.method == "marginal" and record.sampler == "pymc" and result.spec.method == "marginal"
    assert record.theta_mh_acceptance > 0.9
    assert record.quadrature_error < 1e-6 and record.quadrature_nodes == 55  # rule_for(8): no refit
    log_lik = result.idata["log_likelihood"]["answers"]
    assert log_lik.dims == ("chain", "draw", "respondent") and np.all(np.asarray(log_lik) < 0)
    assert "observed_data" in result.idata.children
    people = result.respondent_table()
    # 8 items: reliability about 0.55, so corr(theta_mean, theta) near its square root, 0.74;
    # theta draws mixed up between respondents would give about 0
    assert np.corrcoef(people["theta_mean"], truth["theta"].sel(respondent=people.index))[0, 1] > 0.65
    assert result.loo().elpd < 0 and len(result.item_table()) == 8
    _assert_round_trip(result, tmp_path)


def test_same_seed_same_draws_theta_included_and_marginal_vs_joint_comparison_refused():
    """Short fits (2 x (100 + 100)): whether draws repeat is the point, not convergence."""
    table, _ = small_table()
    short = {**FAST, "draws": 100, "tune": 100}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        first, again, other = (fit_irt(table, "2pl", random_seed=seed, **short) for seed in (6, 6, 7))
    for name in ("a", "b", "theta"):
        np.testing.assert_array_equal(first.posterior[name].values, again.posterior[name].values)
    assert not np.array_equal(first.posterior["theta"].values, other.posterior["theta"].values)
    _assert_marginal_and_joint_fits_are_not_compared(table, first)


def _assert_round_trip(result, tmp_path):
    loaded = IRTResult.load(result.save(tmp_path / "irt.nc"))
    pd.testing.assert_frame_equal(loaded.table, result.table)
    pd.testing.assert_frame_equal(loaded.item_table(), result.item_table())
    pd.testing.assert_frame_equal(loaded.respondent_table(), result.respondent_table())
    assert (loaded.spec, loaded.report, loaded.inference) == (
        result.spec, result.report, result.inference
    )
    np.testing.assert_array_equal(loaded.loo().elpd_i, result.loo().elpd_i)


def _assert_marginal_and_joint_fits_are_not_compared(table, marginal):
    joint = dataclasses.replace(marginal, spec=dataclasses.replace(marginal.spec, method="joint"))  # the check looks at the method only
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
    assert InferenceRecord.of(idata).sampler == "nutpie"


def test_parallel_chains_get_their_share_of_blas_threads(monkeypatch):
    """While chains run in parallel, BLAS gets the machine's cores shared out (one thread per
    chain on 2 cores), because PyMC's blas_cores is ignored under fork and nutpie's chains are
    threads; one chain at a time leaves BLAS alone."""
    import os

    import pymc as pm
    from threadpoolctl import threadpool_info

    from bayes_raters.sampling import blas_threads

    cpus = os.cpu_count()
    assert blas_threads(2, 1) is None and blas_threads(1, 4) is None
    assert blas_threads(2, 2) == max(1, cpus // 2) and blas_threads(4, 8) == max(1, cpus // 4)
    seen = []

    def fake_sample(**kwargs):
        seen.append({info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"})
        raise RuntimeError("stop here")

    monkeypatch.setattr(pm, "sample", fake_sample)
    irt = build_marginal_from_table(validate_responses(simulate_responses(50, 4, random_seed=8)[0]), "1pl", n_options=None, hierarchical=False)
    with pytest.raises(RuntimeError, match="stop here"):
        sample_model(irt, chains=2, cores=2, what="test")
    assert seen[0] == {max(1, cpus // 2)}



def test_cores_none_runs_one_chain_per_cpu(monkeypatch):
    """cores=None reaches pm.sample as a number, one chain per usable CPU: passed through as
    None, PyMC took half the CPU count and ran the 2 chains one after the other on 2 cores."""
    import pymc as pm

    from bayes_raters.sampling import resolve_cores, usable_cores

    seen = []

    def fake_sample(**kwargs):
        seen.append(kwargs["cores"])
        raise RuntimeError("stop here")

    monkeypatch.setattr(pm, "sample", fake_sample)
    irt = build_marginal_from_table(validate_responses(simulate_responses(50, 4, random_seed=8)[0]), "1pl", n_options=None, hierarchical=False)
    with pytest.raises(RuntimeError, match="stop here"):
        sample_model(irt, chains=2, cores=None, what="test")
    assert seen == [min(2, usable_cores())] and resolve_cores(3, 1) == 1 and resolve_cores(1, None) == 1


@pytest.mark.parametrize("model, dims, expected", [("3pl", None, (0.97, 2, "never")), ("4pl", None, (0.97, 2, "never")),
                                                   ("2pl", None, (0.9, 2, "after_laplace")), ("3pl", 2, (0.9, 0, "never"))])
def test_irt_families_sample_with_their_own_nuts_defaults(monkeypatch, model, dims, expected):
    """The unidimensional 3PL/4PL default to target_accept 0.97, the others to 0.9; every
    unidimensional marginal fit adds chains when the first mix too little, and the 1PL/2PL's
    NUTS starts from the Laplace approximation when its draws were rejected (``fit_irt``
    docstring); an explicit target_accept wins."""
    import bayes_raters.irt.binary.fit as irt_fit
    import bayes_raters.irt.multidimensional.fit as multidim_fit

    seen = []

    def fake_sample_model(model, **kwargs):
        seen.append((kwargs["target_accept"], kwargs.get("extra_chains", 0), kwargs.get("warm_start", "never")))
        raise RuntimeError("stop here")

    monkeypatch.setattr(irt_fit, "sample_model", fake_sample_model)
    monkeypatch.setattr(multidim_fit, "sample_model", fake_sample_model)
    table, _ = simulate_responses(60, 6, guessing=0.2, random_seed=8)
    for target_accept in (None, 0.8):
        with pytest.raises(RuntimeError, match="stop here"):
            fit_irt(table, model, dims=dims, target_accept=target_accept, inference="nuts", random_seed=1)
    assert seen == [expected, (0.8, *expected[1:])]


def _scipy_marginal(y, a, b) -> float:
    """log int prod_j p(y_j | theta) phi(theta) dtheta by scipy quad (rel. tol 1e-13), centred at the mode."""
    grid = np.linspace(-12, 12, 24001)
    log_f = (np.outer(grid, a) * y - a * b * y - np.logaddexp(0.0, np.outer(grid, a) - a * b)).sum(1) + stats.norm.logpdf(grid)
    mode, top = grid[np.argmax(log_f)], log_f.max()

    def density(t):
        eta = a * (t - b)
        return np.exp((y * eta - np.logaddexp(0.0, eta)).sum() + stats.norm.logpdf(t) - top)

    value, _ = integrate.quad(density, mode - 10, mode + 10, points=[mode], epsabs=0, epsrel=1e-13, limit=1000)
    return float(np.log(value) + top)


@pytest.mark.parametrize("steepness", [1.0, 2.5])
def test_score_grid_is_accurate_to_1e6_on_hard_cases(steepness):
    """Complete 2PL patterns through the weighted-score grid (2 knots per item), 100 items, true
    ability -4 to 4, all right, all wrong. With a ~ LogNormal(0, 0.5) against scipy's quadrature
    to 1e-6 per unit; with items 2.5 times steeper (mean a 2.9, up to 6.8) against the same
    nodes summed directly (the grid's own error: the nodes themselves then need the finer rule
    of ``test_steep_items_get_a_finer_rule``). One knot per item misses 1e-6 there, so the knot
    count is measured, not padded."""
    from bayes_raters.irt.binary.marginal import KNOTS_PER_ITEM, node_loglik, score_grid_loglik
    from bayes_raters.quadrature import marginal_loglik, rule_for

    rng = np.random.default_rng(0)
    a, b = steepness * rng.lognormal(0, 0.5, 100), rng.normal(0, 1.2, 100)
    thetas = np.repeat([-4.0, -2.0, 0.0, 2.0, 4.0], 4)
    y = (rng.random((len(thetas), 100)) < 1 / (1 + np.exp(-a * (thetas[:, None] - b)))).astype(float)
    y = np.vstack([y, np.ones(100), np.zeros(100)])
    rule = rule_for(100)
    if steepness == 1:
        reference = np.array([_scipy_marginal(row, a, b) for row in y])
    else:
        table = node_loglik(y, np.ones_like(y), a, b, 0 * a, 0 * a + 1, rule.nodes, logistic=True, complete=True, lib=np)
        reference = marginal_loglik(table, rule.log_weights)
    grid = score_grid_loglik(y, a, b, rule.nodes, rule.log_weights, KNOTS_PER_ITEM * 100, lib=np)
    assert np.abs(grid - reference).max() < 1e-6
    coarse = score_grid_loglik(y, a, b, rule.nodes, rule.log_weights, 100, lib=np)
    if steepness > 1:
        assert np.abs(coarse - reference).max() > 1e-6


def test_complete_2pl_model_uses_the_score_grid_and_matches_the_integral():
    """900 respondents x 16 items, complete: the model goes through the weighted-score grid
    (far more patterns than knots) and its likelihood term still equals scipy's integral to
    1e-6 per respondent; with 10% missing answers, or LSAT7's 32 patterns, it does not."""
    from bayes_raters.irt.binary.marginal import uses_score_grid

    table = validate_responses(simulate_responses(900, 16, random_seed=4)[0])
    _, answered, _, _ = answer_patterns(table, pd.unique(table["respondent"]), pd.unique(table["item"]))
    assert uses_score_grid("2pl", answered) and not uses_score_grid("3pl", answered)
    assert not uses_score_grid("2pl", np.ones((32, 5)))
    gappy = validate_responses(simulate_responses(900, 16, missing=0.1, random_seed=4)[0])
    assert not uses_score_grid("2pl", answer_patterns(gappy, pd.unique(gappy["respondent"]), pd.unique(gappy["item"]))[1])
    irt = build_marginal_from_table(table, "2pl", n_options=None, hierarchical=False)
    rng = np.random.default_rng(5)
    point = {v.name: rng.normal(0, 0.5, size=np.shape(value)) for v, value in zip(irt.value_vars, irt.initial_point().values())}
    outputs = irt.replace_rvs_by_values([irt["marginal_loglik"], irt["a"], irt["b"]])
    potential, a, b = irt.compile_fn(outputs, inputs=irt.value_vars, on_unused_input="ignore")(point)
    items = list(irt.coords["item"])
    wide = table.pivot(index="respondent", columns="item", values="correct")[items].to_numpy(float)
    # reference: trapezoid rule with spacing 0.005 on [-12, 12] (spectrally accurate at this
    # sharpness), vectorised over respondents; spot-checked against scipy's quad
    grid = np.linspace(-12, 12, 4801)
    spread = np.logaddexp(0.0, a[:, None] * (grid - b[:, None])).sum(axis=0)
    log_f = np.outer(wide @ a, grid) - (wide @ (a * b))[:, None] - spread + stats.norm.logpdf(grid)
    reference = special.logsumexp(log_f, axis=1) + np.log(grid[1] - grid[0])
    assert abs(reference[0] - _scipy_marginal(wide[0], a, b)) < 1e-10
    assert abs(float(potential) - reference.sum()) < 1e-6 * len(wide)


def test_steep_items_get_a_finer_rule():
    """Items 2.5 times steeper than LogNormal(0, 0.5) (a up to 6.8) sharpen the conditional of
    theta beyond what rule_for's spacing resolves: quadrature_error (rule against half the
    spacing, at posterior draws) sees it, and two halvings bring it below 1e-6, as the refit in
    fit_irt does."""
    import xarray as xr

    from bayes_raters.irt.binary.marginal import QUADRATURE_TOLERANCE, default_rule, finer_rule, quadrature_error

    rng = np.random.default_rng(8)
    a, b, theta = 2.5 * rng.lognormal(0, 0.5, 30), rng.normal(0, 1, 30), rng.normal(0, 1, 400)
    y = (rng.random((400, 30)) < 1 / (1 + np.exp(-a * (theta[:, None] - b)))).astype(int)
    table = validate_responses(pd.DataFrame(
        {"respondent": np.repeat(np.arange(400), 30), "item": np.tile([f"i{j:02d}" for j in range(30)], 400), "correct": y.ravel()}
    ))
    irt = build_marginal_from_table(table, "2pl", n_options=None, hierarchical=False)
    draws = {name: (("chain", "draw", "item"), np.broadcast_to(value, (1, 2, 30))) for name, value in (("a", a), ("b", b))}
    posterior = xr.Dataset(draws, coords={"item": [f"i{j:02d}" for j in range(30)]})
    rule = default_rule(irt["pattern_answered"].get_value())
    assert quadrature_error(posterior, irt, "2pl", rule) > 1e-4
    assert quadrature_error(posterior, irt, "2pl", finer_rule(finer_rule(rule))) < QUADRATURE_TOLERANCE


def test_pivoted_difficulties_keep_the_exchangeable_prior():
    """Centred difficulties are sampled as zero-sum logits at data-based pivots plus a common
    shift, with the prior added as a Potential: it must equal the N(0, sigma^2 I + 1 1^T)
    density of b (mu integrated out) plus the Jacobian log sum a - sum log a; the map must give
    back any b; and the pivots must lie between the respondents' centre and the difficulty."""
    table, truth = simulate_responses(600, 6, random_seed=4)
    table = validate_responses(table)
    irt = build_marginal_from_table(table, "2pl", n_options=None, hierarchical=True)
    assert {"b_logit", "b_shift", "b_sigma"} <= {v.name for v in irt.free_RVs}
    rng = np.random.default_rng(0)
    shapes = irt.eval_rv_shapes()  # initial_point() cannot draw the flat variables
    point = {v.name: rng.normal(0, 0.5, shapes[v.name]) for v in irt.value_vars}
    point["b_sigma_log__"] = np.array(np.log(0.7))
    graphs = irt.replace_rvs_by_values([irt["b"], irt["a"], irt["b_prior"], irt["b_logit"]])
    outputs = irt.compile_fn(graphs, inputs=irt.value_vars, on_unused_input="ignore")(point)
    b, a, potential, logit = (np.asarray(v) for v in outputs)
    cov = 0.7**2 * np.eye(6) + np.ones((6, 6))
    expected = stats.multivariate_normal(np.zeros(6), cov).logpdf(b) + 3 * np.log(2 * np.pi) + np.log(a.sum()) - np.log(a).sum()
    assert abs(float(potential) - expected) < 1e-9
    pivots = item_pivots(table)
    assert abs(logit.sum()) < 1e-9
    np.testing.assert_allclose(pivots + float(point["b_shift"]) - logit / a, b)
    true_b = truth["b"].sel(item=pd.unique(table["item"])).to_numpy()
    assert np.all(np.abs(pivots) <= np.abs(true_b) + 0.1)
    assert np.corrcoef(pivots, true_b)[0, 1] > 0.9


def test_guessing_models_keep_b_non_centred_where_the_2pl_centres_it():
    """400 answers per item: the 2PL's b is centred (pivoted), the 3PL's non-centred (its
    centred form diverged on prior draws with near-equal difficulties: 101 against 8 divergences
    over six SBC simulations); from 1,500 answers per item the 3PL's is centred too."""
    from bayes_raters.irt.binary.model import centred_items

    table, _ = simulate_responses(400, 5, guessing=0.2, random_seed=11)
    big, _ = simulate_responses(1500, 3, guessing=0.2, random_seed=11)
    assert centred_items(table, "2pl") == {"b": True, "log_a": False}
    assert centred_items(table, "3pl") == {"b": False, "log_a": False}
    assert centred_items(big, "4pl") == {"b": True, "log_a": True}
    names = {m: set(build_marginal_from_table(validate_responses(table), m, n_options=4, hierarchical=True).named_vars) for m in ("2pl", "3pl")}
    assert "b_logit" in names["2pl"] and "b_z" in names["3pl"] and "b_logit" not in names["3pl"]
    # the form fit_irt tries when the centred difficulties diverge (_sample_marginal)
    override = build_marginal_from_table(validate_responses(table), "2pl", n_options=None, hierarchical=True,
                                         centred={"b": False, "log_a": False}).named_vars
    assert "b_z" in override and "b_logit" not in override


@pytest.mark.parametrize("model", ["2pl", "3pl", "4pl"])
def test_blocked_exact_loglik_equals_one_draw_at_a_time(model):
    """The ability draws evaluate the exact log-likelihood for a block of posterior draws at once
    (``point_loglik`` with (draws, items) parameters); each row must equal the one-draw call."""
    from bayes_raters.irt.binary.marginal import draw_block, point_loglik

    rng = np.random.default_rng(41)
    draws, rows, items = 4, 30, 6
    correct = (rng.random((rows, items)) < 0.5).astype(float)
    answered = (rng.random((rows, items)) < 0.8).astype(float)
    correct *= answered
    a, b = rng.lognormal(0, 0.4, (draws, items)), rng.normal(0, 1, (draws, items))
    c = rng.uniform(0, 0.3, (draws, items)) if model != "2pl" else np.zeros((draws, items))
    d = rng.uniform(0.8, 1.0, (draws, items)) if model == "4pl" else None
    theta = rng.normal(0, 1.5, (draws, rows))
    logistic = model == "2pl"
    blocked = point_loglik(correct, answered, a, b, c, d, theta, logistic=logistic)
    single = np.stack([point_loglik(correct, answered, a[s], b[s], c[s], None if d is None else d[s], theta[s], logistic=logistic)
                       for s in range(draws)])
    assert blocked.shape == (draws, rows)
    np.testing.assert_allclose(blocked, single, rtol=1e-12, atol=1e-12)
    # the direct Bernoulli sum, as a check on both
    p = c[:, None, :] + ((1 if d is None else d[:, None, :]) - c[:, None, :]) * special.expit(a[:, None, :] * (theta[..., None] - b[:, None, :]))
    direct = (answered * (correct * np.log(p) + (1 - correct) * np.log1p(-p))).sum(-1)
    np.testing.assert_allclose(blocked, direct, rtol=1e-9, atol=1e-9)
    assert draw_block(1000, 5) > 1 and draw_block(10_000, 100) == 1
