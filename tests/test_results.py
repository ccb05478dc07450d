"""The result protocol (bayes_raters.results): every family's result has the same groups,
convergence type, summary, posterior predictive, LOO, save/load and repr, and ArviZ's own
functions read it."""

from __future__ import annotations

import dataclasses
import functools
import warnings

import arviz as az
import matplotlib
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from bayes_raters.ctt import protocol
from bayes_raters.ctt.fit import fit_true_score
from bayes_raters.ctt.model import TrueScoreSpec, build_from_data, model_data, validate_true_score_inputs
from bayes_raters.ctt.result import TrueScoreResult
from bayes_raters.errors import ConvergenceWarning, InvalidInputError
from bayes_raters.facets.fit import fit_facets
from bayes_raters.facets.result import FacetsResult
from bayes_raters.facets.simulate import simulate_facet_ratings
from bayes_raters.irt import IRTResult, fit_irt, fit_polytomous, simulate_factor_answers, simulate_ratings
from bayes_raters.irt.multidimensional.result import MultidimensionalIRTResult
from bayes_raters.irt.polytomous.result import PolytomousResult
from bayes_raters.leaderboard import LeaderboardResult, fit_leaderboard, simulate_leaderboard
from bayes_raters.pairwise import ArenaResult, PairwiseResult, fit_arena, fit_pairwise, simulate_arena
from bayes_raters.persistence import load_datatree
from bayes_raters.results import FitResult
from bayes_raters.sampling import ConvergenceReport
from validation.sbc_models import simulate_irt, simulate_pairwise, simulate_true_score

matplotlib.use("Agg")
SMALL = {"draws": 200, "tune": 300, "chains": 2}
STANDARD_GROUPS = {"posterior", "sample_stats", "observed_data", "constant_data", "log_likelihood"}


def _true_score_result(joint: bool = False):
    """One fit per system (default), or, ``joint=True``, all systems in one model and one NUTS
    run, whose sample_stats have no system dimension."""
    _, (ratings, systems) = simulate_true_score(np.random.default_rng(11), "normal")
    return fit_true_score(ratings, systems, joint=joint, random_seed=5, **SMALL)


def _irt_result():
    _, table = simulate_irt(np.random.default_rng(12), "2pl")
    small = table[(table["respondent"] < 150) & table["item"].isin([f"i{j}" for j in range(6)])]
    return fit_irt(small, "2pl", random_seed=5, **SMALL)


def _pairwise_result():
    """Outcomes and slider values (the censored-beta CustomDist), one anonymous annotator."""
    _, (comparisons, _, _) = simulate_pairwise(np.random.default_rng(13), "outcomes")
    _, (_, scalars, _) = simulate_pairwise(np.random.default_rng(14), "mixed")
    return fit_pairwise(comparisons.head(150), scalars.drop(columns="annotator"), annotator=None, random_seed=5, **SMALL)


def _polytomous_result():
    answers, _ = simulate_ratings(150, 5, 4, "grm", random_seed=16)
    return fit_polytomous(answers, "grm", random_seed=5, **SMALL)


def _multidimensional_result():
    answers, _ = simulate_factor_answers(150, (3, 3), 0.3, random_seed=17)
    return fit_irt(answers, "2pl", dims=2, random_seed=5, **SMALL)


def _facets_result():
    ratings, systems, _ = simulate_facet_ratings(60, 4, 2, 4, random_seed=18)
    return fit_facets(ratings, systems, random_seed=5, **SMALL)


def _leaderboard_result():
    answers, _ = simulate_leaderboard(40, 150, flat_share=0.0, random_seed=19)
    answers = answers[answers.groupby("item")["correct"].transform("std") > 0]  # no item everyone got right
    return fit_leaderboard(answers, random_seed=5, progressbar=False, **SMALL)


def _arena_result():
    """Votes with ties among 12 models: importance-sampled Laplace draws, 2 x 200 as the others."""
    votes = simulate_arena(12, 3000, random_seed=20)["votes"]
    return fit_arena(votes, random_seed=5, progressbar=False, draws=SMALL["draws"], chains=SMALL["chains"])


FAMILIES = {"true_score": _true_score_result, "true_score_joint": functools.partial(_true_score_result, joint=True),
            "irt": _irt_result, "pairwise": _pairwise_result,
            "polytomous": _polytomous_result, "multidimensional": _multidimensional_result, "facets": _facets_result,
            "leaderboard": _leaderboard_result, "arena": _arena_result}


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def fitted(request, computed_once):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # 2 x 200 draws: shapes are checked here, not mixing
        result = computed_once(f"protocol_{request.param}", FAMILIES[request.param])
    assert result.compute_log_likelihood() is result.idata
    return request.param, result


def _with_predictive(result):
    """The result with a posterior predictive group (computed once per worker: the pairwise
    model's compiled replicate function costs ~20 s each time)."""
    if "posterior_predictive" not in result.idata.children:
        result.sample_posterior_predictive(n_draws=100, random_seed=1)
    return result


def _one_fit(result):
    """``result.idata`` wherever the result is one sampler run. The true-score model's default
    fits each system on its own (its own NUTS run, like the closed form): its sample_stats carry a
    ``system`` dimension, which ArviZ 1.3's ``plot_energy`` cannot read (arviz_plots'
    ``_get_energy_ds`` takes ``energy.values`` as (chain, draw)), so there one system's run is
    plotted (``fit_tree``). ``joint=True`` is one run, read directly."""
    if isinstance(result, TrueScoreResult) and "system" in result.idata["sample_stats"].dims:
        return result.fit_tree()
    return result.idata


def test_every_family_has_the_groups_convergence_summary_and_repr(fitted):
    name, result = fitted
    assert isinstance(result, FitResult)
    assert STANDARD_GROUPS <= set(result.idata.children)  # log_likelihood added by the fixture
    assert isinstance(result.convergence, ConvergenceReport)
    chains = result.idata["posterior"].sizes["chain"]
    added = result.inference.extra_chains > 0  # an IRT fit that mixed too little adds chains, and says why
    assert result.convergence.draws == 200 and result.convergence.chains == chains == (4 if added else 2)
    expected_model = {"true_score": "normal", "true_score_joint": "normal", "irt": "2pl", "pairwise": "beta_latent_rao-kupper", "polytomous": "grm",
                      "multidimensional": "2pl", "facets": "many_facet", "leaderboard": "2pl", "arena": "rao_kupper"}
    assert isinstance(result.model, str) and str(result.model) == expected_model[name]
    text = repr(result)
    assert text.startswith(f"<{type(result).__name__}: ") and f"{chains} chains x 200 draws" in text
    assert ("NOT converged" in text) == (not result.convergence.converged)
    summary = result.summary(ci_prob=0.8)
    assert {"mean", "sd", "eti80_lb", "eti80_ub", "r_hat", "ess_bulk"} <= set(summary.columns)
    expected = [n for n in type(result).summary_var_names if n in result.posterior]
    assert expected and all(any(row == n or row.startswith(f"{n}[") for row in summary.index) for n in expected)
    with pytest.raises(InvalidInputError, match="not in the posterior"):
        result.summary(var_names=["no_such_variable"])
    with pytest.raises(InvalidInputError, match="no variables"):
        result.summary(var_names=[])
    assert all(result.posterior[n].dims == ("chain", "draw") for n in result.scalar_parameters)


def test_posterior_predictive_mirrors_the_observed_data_and_repeats_with_the_seed(fitted):
    name, result = fitted
    first = result.sample_posterior_predictive(n_draws=100, random_seed=3)["posterior_predictive"].to_dataset()
    again = result.sample_posterior_predictive(n_draws=100, random_seed=3)["posterior_predictive"].to_dataset()
    observed = result.idata["observed_data"].to_dataset()
    assert set(first.data_vars) == set(observed.data_vars)
    assert first.sizes["chain"] * first.sizes["draw"] == 100
    for variable in observed.data_vars:
        assert set(observed[variable].dims) <= set(first[variable].dims) <= set(observed[variable].dims) | {"chain", "draw", "system"}
        np.testing.assert_array_equal(first[variable].values, again[variable].values)
        # the replicates reproduce the data's location: a wrong index or a wrong draw would not
        replicated = np.nanmean(first[variable].values)
        spread = float(observed[variable].std()) / np.sqrt(observed[variable].size) * 6 + 0.02
        assert abs(replicated - float(observed[variable].mean())) < spread, variable


def test_arviz_reads_every_result(fitted):
    name, result = fitted
    tree = _one_fit(_with_predictive(result))
    variable = next(n for n in type(result).summary_var_names if n in result.posterior)
    assert len(az.summary(result.idata, var_names=[variable])) >= 1
    az.plot_trace_dist(result.idata, var_names=[variable])
    az.plot_rank(result.idata, var_names=[variable])
    if isinstance(result, LeaderboardResult):  # Metropolis-within-Gibbs: no Hamiltonian, so no energy to plot
        assert "energy" not in tree["sample_stats"].data_vars and "accept_items" in tree["sample_stats"].data_vars
    elif isinstance(result, ArenaResult):  # importance-sampled Laplace draws: no Hamiltonian either
        assert "energy" not in tree["sample_stats"].data_vars and result.inference.path == "laplace"
    else:
        az.plot_energy(tree)
    observed = sorted(tree["observed_data"].data_vars)
    az.plot_ppc_dist(tree, var_names=observed[:1])
    loo = az.loo(tree, var_name=sorted(tree["log_likelihood"].data_vars)[0])
    assert np.isfinite(loo.elpd) and loo.n_data_points > 10


def test_save_and_load_keep_every_group(fitted, tmp_path):
    name, result = fitted
    _with_predictive(result)
    path = result.save(tmp_path / f"{name}.nc")
    saved, _ = load_datatree(path)
    assert set(saved.children) == set(result.idata.children)  # the inputs live in idata itself (issue 37)
    loaded = type(result).load(path)
    assert set(loaded.idata.children) == set(result.idata.children)
    assert repr(loaded) == repr(result)
    # the typed records come back as they were: the options and what the inference did
    assert loaded.spec == result.spec and loaded.inference == result.inference
    for group in ("posterior_predictive", "log_likelihood", "observed_data"):
        original, back = result.idata[group].to_dataset(), loaded.idata[group].to_dataset()
        for variable in original.data_vars:
            np.testing.assert_array_equal(original[variable].values, back[variable].values)


#: Each family's unit table: the method and the parameter prefix of its columns.
UNIT_TABLES = {"true_score": ("response_table", "true_score"), "true_score_joint": ("response_table", "true_score"), "irt": ("respondent_table", "theta"),
               "polytomous": ("respondent_table", "theta"), "multidimensional": ("respondent_table", "theta"),
               "facets": ("response_table", "theta"), "pairwise": ("item_table", "s"), "leaderboard": ("system_table", "theta"),
               "arena": ("system_table", "rating")}


def test_every_family_has_a_unit_table_in_the_column_pattern(fitted):
    """One row per unit (response, respondent, item) with ``<param>_mean/_sd/_lower/_upper``,
    the interval nested in the draws' range and the mean inside it (issue 37, point 1)."""
    name, result = fitted
    method, param = UNIT_TABLES[name]
    table = getattr(result, method)(ci_prob=0.8)
    columns = [f"{param}_{part}" for part in ("mean", "sd", "lower", "upper")]
    assert set(columns) <= set(table.columns) and len(table) >= 10
    values = table[columns]
    assert values.notna().all().all() and (values[f"{param}_sd"] > 0).all()
    assert ((values[f"{param}_lower"] < values[f"{param}_mean"]) & (values[f"{param}_mean"] < values[f"{param}_upper"])).all()


RESULT_CLASSES = (TrueScoreResult, IRTResult, PairwiseResult, PolytomousResult, MultidimensionalIRTResult, FacetsResult,
                  LeaderboardResult, ArenaResult)


def test_result_classes_share_the_protocol():
    """Every result is a concrete FitResult (the abstract base declares what each family
    provides), built by keyword only, with a ``spec`` and a ``report`` field."""
    with pytest.raises(TypeError, match="abstract"):
        FitResult()
    for cls in RESULT_CLASSES:
        assert issubclass(cls, FitResult) and cls.summary_var_names and not cls.__abstractmethods__
        fields = {f.name: f for f in dataclasses.fields(cls)}
        assert {"idata", "spec"} <= set(fields) and all(f.kw_only for f in fields.values()), cls
        assert isinstance(cls.model, property), f"{cls.__name__}.model is a property (of its spec or data)"
        with pytest.raises(TypeError):
            cls(None, None, None)  # positionally: refused


def test_every_irt_family_compares_through_compare_irt_models(fitted):
    """``compare_irt_models`` reads the method from each fit's spec: binary, ordinal and
    multidimensional fits all have one (notebook 06 compares a 1D with a 2D fit)."""
    from bayes_raters.irt import compare_irt_models

    name, result = fitted
    if name not in ("irt", "polytomous", "multidimensional"):
        pytest.skip("not an IRT family")
    assert result.spec.method == "marginal"
    assert len(compare_irt_models({"one": result, "two": result})) == 2


def test_every_result_has_a_spec_an_inference_record_and_a_model_name(fitted):
    from bayes_raters.fit_spec import FitSpec
    from bayes_raters.inference_record import InferenceRecord

    name, result = fitted
    assert isinstance(result.spec, FitSpec) and isinstance(result.inference, InferenceRecord)
    expected_path = {"leaderboard": "metropolis_within_gibbs", "arena": "laplace"}
    if name in expected_path:
        assert result.inference.path == expected_path[name]
    else:  # every PyMC fit names its sampler; the Laplace path names the module
        assert result.inference.sampler in ("pymc", "nutpie", "bayes_raters.laplace"), result.inference
    assert type(result.spec).from_dict(result.spec.to_dict()) == result.spec


def test_every_family_has_loo_and_compares_with_itself(fitted):
    """``loo()`` and ``compare()`` on every family (FitResult): finite ELPD over the family's
    pointwise unit, and a fit compared with itself under another name differs by exactly 0;
    a fit of other data (another unit count) is refused, not compared."""
    name, result = fitted
    loo = result.loo()
    assert np.isfinite(loo.elpd) and loo.n_data_points >= 30
    table = result.compare({"again": result}, name=name)
    assert set(table.index) == {name, "again"} and np.allclose(table["elpd_diff"], 0.0)
    with pytest.raises(InvalidInputError, match="same name|also one of the others"):
        result.compare({name: result}, name=name)
    fewer = _dropping_one_unit(result)  # the same fit over one unit fewer: other data
    with pytest.raises(InvalidInputError, match="leave out different data"):
        result.compare({"fewer": fewer})


def _dropping_one_unit(result):
    """A stand-in result (what ``compare`` reads) whose log-likelihood lacks the last unit."""
    from types import SimpleNamespace

    tree = result.pointwise_tree().copy()
    group = tree["log_likelihood"].to_dataset()
    variable = next(iter(group.data_vars))
    unit = next(d for d in group[variable].dims if d not in ("chain", "draw"))
    tree["log_likelihood"] = xr.DataTree(group.isel({unit: slice(0, -1)}))
    return SimpleNamespace(idata=tree, pointwise_tree=lambda: tree)


@pytest.mark.parametrize("options", [{}, {"rater_effects": True, "rater_error": "rater"}, {"joint": True}])
def test_pointwise_log_likelihood_sums_to_the_models_likelihood(options):
    """The per-response terms (ctt.protocol) add up to the model's own likelihood terms (its
    Potentials) at random points: exactly for the one-row-per-rating form; for the pooled
    sufficient form up to a constant that does not depend on the parameters (the pooled form
    is the likelihood of the sufficient statistics, which drops the data-only terms)."""
    _, (ratings, systems) = simulate_true_score(np.random.default_rng(21), "rater_effects")
    systems = pd.concat([systems, systems.assign(system="n", score=systems["score"] * 0.8 + 1)], ignore_index=True)
    spec = TrueScoreSpec(**options)
    rated, scored = validate_true_score_inputs(ratings, systems, spec)
    data = model_data(rated, scored, spec, None if spec.joint else ["m"])
    model = build_from_data(data, spec)
    names = [v.name for v in model.free_RVs + model.deterministics if v.name not in ("true_score_mean", "true_score_sd")]
    parameters = model.compile_fn(model.replace_rvs_by_values([model[n] for n in names]), inputs=model.value_vars, on_unused_input="ignore")
    likelihood = model.compile_logp(vars=model.potentials, jacobian=False)
    rng = np.random.default_rng(1)
    gaps = []
    for _ in range(3):
        point = {name: value + 0.5 * rng.standard_normal(np.shape(value)) for name, value in model.initial_point().items()}
        draws = {name: np.asarray(value)[None, ...] for name, value in zip(names, parameters(point))}
        _, _, pointwise = protocol.conditional_and_loglik(data, draws)
        assert pointwise.shape == (1, len(data.responses))
        gaps.append(pointwise.sum() - float(likelihood(point)))
    np.testing.assert_allclose(gaps, gaps[0], atol=1e-8)
    if not spec.sufficient:
        assert abs(gaps[0]) < 1e-8


def test_fit_tree_selects_integer_system_ids(tmp_path):
    """System ids that are numbers (as read from a CSV) select their own rows: the observed
    data of each fit are that system's scores and the ratings of its responses."""
    rng = np.random.default_rng(15)
    true = rng.normal(3, 1, 120)
    ratings = pd.DataFrame({"response": np.repeat(np.arange(120), 2), "rater": np.tile(["a", "b"], 120),
                            "score": np.repeat(true, 2) + rng.normal(0, 0.5, 240)})
    systems = pd.DataFrame({"response": np.arange(120), "score": true + rng.normal(0, 0.4, 120)})
    scores = pd.concat([systems.assign(system=7), systems.iloc[:40].assign(system=11, score=true[:40] + rng.normal(0, 0.7, 40))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = fit_true_score(ratings, scores, random_seed=5, draws=100, tune=200, chains=2)
    assert list(result.idata["sample_stats"]["system"].values) == [7, 11]  # not '7', '11' (fit_tree's KeyError)
    with pytest.raises(InvalidInputError, match="one fit per system"):  # separate models: no pooled LOO
        result.loo()
    assert result.loo(system=11).n_data_points == 40 and np.isfinite(result.loo(system=7).elpd)
    result.save(tmp_path / "fit.nc")
    loaded = type(result).load(tmp_path / "fit.nc")
    for system, n in [(7, len(systems)), (11, 40)]:
        assert loaded.fit_tree(system)["observed_data"]["system_score"].size == n
        tree = result.fit_tree(system)
        assert tree["observed_data"]["system_score"].size == n, system
        responses = set(systems["response"].iloc[:n])
        assert tree["observed_data"]["rating_score"].size == ratings["response"].isin(responses).sum(), system


@pytest.mark.parametrize(
    "options",
    [{"joint": True, "rater_effects": True, "cutpoints": "estimated"},
     pytest.param({"joint": True}, marks=pytest.mark.slow), pytest.param({}, marks=pytest.mark.slow)],
)
def test_ordinal_pointwise_log_likelihood_sums_to_the_models_likelihood(options):
    """Ordinal ratings: each response's log p(ratings, scores) with T integrated out, from the
    exact units, adds up to the model's pooled likelihood (its ``marginal_likelihood``
    Potential) at random points: to rounding with two systems in one fit, and to the accuracy
    of the Chebyshev grid (tests/ctt/test_ordinal.py) for one system, which the model pools on
    that grid."""
    _, (ratings, systems) = simulate_true_score(np.random.default_rng(22), "ordinal")
    if options.get("joint"):
        systems = pd.concat([systems, systems.assign(system="n", score=systems["score"] * 0.8 + 1)], ignore_index=True)
    spec = TrueScoreSpec(observation="ordinal", score_range=(1, 6), **options)
    rated, scored = validate_true_score_inputs(ratings, systems, spec)
    data = model_data(rated, scored, spec, None if spec.joint else [scored["system"].iloc[0]])
    model = build_from_data(data, spec)
    names = [v.name for v in model.free_RVs + model.deterministics]
    parameters = model.compile_fn(model.replace_rvs_by_values([model[n] for n in names]), inputs=model.value_vars, on_unused_input="ignore")
    likelihood = model.compile_fn(model.replace_rvs_by_values([model["marginal_likelihood"]]), inputs=model.value_vars, on_unused_input="ignore")
    rng = np.random.default_rng(2)
    for _ in range(3):
        point = {name: value + 0.3 * rng.standard_normal(np.shape(value)) for name, value in model.initial_point().items()}
        draws = {name: np.asarray(value)[None, ...] for name, value in zip(names, parameters(point))}
        pointwise = protocol.ordinal_loglik(data, spec, draws)
        assert pointwise.shape == (1, len(data.responses)) and np.isfinite(pointwise).all()
        np.testing.assert_allclose(pointwise.sum(), float(likelihood(point)[0]), rtol=1e-9 if spec.joint else 1e-6)


def test_table_sds_are_the_sample_sd_that_arviz_reports():
    """One SD convention (issue 37): every table's posterior SD is the sample SD over the draws
    (ddof 1), the figure ``az.summary`` prints, not the population SD (which is smaller by
    sqrt((n - 1) / n): visible at few draws)."""
    from bayes_raters.results import interval_table

    values = np.random.default_rng(3).normal(size=(2, 5, 3))  # 10 draws: ddof matters by 5%
    tree = az.from_dict({"posterior": {"x": values}}, dims={"x": ["k"]})
    table = interval_table(tree["posterior"]["x"], 0.9, ("k",))
    np.testing.assert_allclose(table["sd"].to_numpy(), az.summary(tree, var_names=["x"])["sd"].to_numpy(), rtol=1e-3)
    assert not np.allclose(table["sd"].to_numpy(), values.reshape(10, 3).std(axis=0, ddof=0), rtol=1e-3)


def test_pairwise_model_is_the_models_name(monkeypatch):
    """``PairwiseResult.model`` names the model as on every result (a plain string);
    ``pymc_model()`` rebuilds the PyMC model."""
    from bayes_raters.pairwise.model import PairwiseSpec
    from bayes_raters.pairwise.result import PairwiseResult

    result = object.__new__(PairwiseResult)
    result.spec = PairwiseSpec(link="probit")
    assert result.model == "beta_latent_probit" and type(result.model) is str
