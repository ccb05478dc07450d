"""The judges model's marginal likelihood, its data checks and the baselines against ppi_py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from bayes_raters.errors import InvalidInputError
from bayes_raters.judges import baseline_table, build_judges_model, judges_data, ppi_mean, simulate_judges
from bayes_raters.judges.marginal import block_loglik, response_block, response_loglik
from bayes_raters.judges.model import JudgesSpec, observation_rows, row_terms, system_weights
from tests.modes import PYTHON


@pytest.fixture(scope="module")
def sim():
    return simulate_judges(n_systems=3, n_responses=40, judge_bias={(1, 0): 0.3}, random_seed=3)


def tables(sim):
    return sim["human_ratings"], sim["judge_scores"], sim["systems"]


def random_parameters(rng, n_systems, n_judges, n_raters):
    return {"mu": rng.normal(size=n_systems), "sigma_true": rng.uniform(0.5, 1.5, n_systems), "sigma_human": 0.8,
            "alpha": rng.normal(size=n_judges), "beta": rng.normal(size=n_judges), "sigma_judge": rng.uniform(0.3, 1, n_judges),
            "rater_effect": rng.normal(size=n_raters), "bias": rng.normal(size=(n_judges, n_systems)), "loading": rng.uniform(0, 1, n_judges),
            "grand_mean": 0.3}


def test_marginal_equals_the_dense_multivariate_normal(sim):
    data = judges_data(*tables(sim))
    values, response, system, rater, judge = observation_rows(data)
    rng = np.random.default_rng(0)
    p = random_parameters(rng, len(data.system_names), len(data.judge_names), len(data.raters))
    mean, load_true, load_shared, variance = row_terms(p, system, rater, judge)
    loglik = response_loglik(values - mean, load_true, load_shared, variance, response, len(data.responses))
    rated = data.human_response[0]
    for r in (rated, int(np.flatnonzero(~np.isin(np.arange(len(data.responses)), data.human_response))[0])):
        rows = np.flatnonzero(response == r)
        loadings = np.stack([load_true[rows], load_shared[rows]], axis=1)
        dense = scipy.stats.multivariate_normal(mean[rows], np.diag(variance[rows]) + loadings @ loadings.T).logpdf(values[rows])
        assert loglik[r] == pytest.approx(dense, rel=1e-10)


def test_the_block_layout_equals_the_rows_with_uneven_ratings_and_missing_scores(sim):
    """The graph's layout (:class:`ResponseBlock`: ratings in slots, judge scores by judge)
    gives every response the same marginal as its rows, where some responses have one human
    rating, others two and most none, and a judge skipped some responses."""
    humans, judges, systems = tables(sim)
    judges = judges.drop(index=judges.index[(judges["judge"] == "judge2") & (np.arange(len(judges)) % 5 == 0)])
    data = judges_data(humans.drop(index=humans.index[::5]), judges, systems)
    values, response, system, rater, judge = observation_rows(data)
    counts = np.bincount(data.human_response, minlength=len(data.responses))
    assert set(counts) == {0, 1, 2}
    rng = np.random.default_rng(1)
    p = random_parameters(rng, len(data.system_names), len(data.judge_names), len(data.raters))
    mean, load_true, load_shared, variance = row_terms(p, system, rater, judge)
    rows = response_loglik(values - mean, load_true, load_shared, variance, response, len(data.responses))
    block = response_block(values, response, rater, judge, data.response_system, len(data.system_names), len(data.judge_names))
    assert block.judge_used.min() == 0 and block.human_used.min() == 0
    np.testing.assert_allclose(block_loglik(block, p, lib=np), rows, rtol=1e-12)


@pytest.mark.parametrize("grouped", [True, False])
@pytest.mark.parametrize("missing", [False, True])
def test_the_model_log_density_uses_the_same_marginal(sim, grouped, missing):
    """The model's potential (unrated responses by groups of sufficient statistics, or row by
    row; biases and rater effects integrated out) equals the dense multivariate normal of every
    observation, with every judge scoring every response and with scores missing (other groups)."""
    from tests.judges.test_biases import dense_covariance

    humans, judges, systems = tables(sim)
    if missing:
        judges = judges.drop(index=judges.index[(judges["judge"] == "judge1") & (np.arange(len(judges)) % 3 == 0)])
    data = judges_data(humans, judges, systems)
    assert len(data.raters) > 1
    model = build_judges_model(data, JudgesSpec(shared_error=True), grouped=grouped)
    assert "bias_z" not in model.named_vars and "rater_z" not in model.named_vars
    rng = np.random.default_rng(4)
    point = {name: value + rng.normal(0, 0.3, np.shape(value)) for name, value in model.initial_point().items()}
    names = ["mu", "sigma_true", "sigma_human", "alpha", "beta", "sigma_judge", "loading", "sigma_bias", "sigma_rater"]
    outputs = model.replace_rvs_by_values([model[n] for n in names])
    p = dict(zip(names, model.compile_fn(outputs, inputs=model.value_vars, point_fn=True, on_unused_input="ignore", mode=PYTHON)(point)))
    p.update(grand_mean=system_weights(data) @ p["mu"], bias=np.zeros((len(data.judge_names), len(data.system_names))),
             rater_effect=np.zeros(len(data.raters)))
    values, mean, cov = dense_covariance(data, p, p["sigma_bias"], p["sigma_rater"])
    expected = scipy.stats.multivariate_normal(mean, cov).logpdf(values)
    got = model.compile_logp(vars=model.potentials, jacobian=False, mode=PYTHON)(point)
    assert float(got) == pytest.approx(expected, rel=1e-9)


def numba_cache_key(model) -> str:
    """The key under which PyTensor's Numba backend caches the compiled log density and gradient
    of ``model`` (the graph after the rewrites a fit runs; nothing is compiled)."""
    import pytensor
    from pytensor.compile.mode import get_mode
    from pytensor.link.numba.dispatch.basic import numba_funcify_and_cache_key

    from bayes_raters.sampling import numba_mode_excluding

    logp = model.logp()
    with numba_mode_excluding("scalarize"):
        graph = pytensor.graph.fg.FunctionGraph(outputs=[logp, *pytensor.grad(logp, model.value_vars)], clone=True)
        get_mode("NUMBA").optimizer.rewrite(graph)
    return numba_funcify_and_cache_key(graph)[1]


def test_data_sets_of_one_design_share_the_compiled_code():
    """The data enter the model's graph as inputs, not constants: the Numba backend keys its
    compiled code by the graph and its constants' bytes, so two data sets of one design (systems,
    judges, raters, most ratings per response) must give one key, and the second fit compiles
    nothing anew. With the data as constants the keys differed and every new data set paid the
    whole compile again (``models/judges.md``). A data set of another design gets another key."""
    keys = []
    for seed, n_systems in ((5, 3), (6, 3), (5, 4)):
        sim = simulate_judges(n_systems=n_systems, n_responses=40, random_seed=seed)
        data = judges_data(*tables(sim))
        assert len(data.raters) == 6 and data.humans.groupby("response").size().max() == 2
        keys.append(numba_cache_key(build_judges_model(data, JudgesSpec(shared_error=True))))
    assert keys[0] is not None
    assert keys[0] == keys[1]
    assert keys[2] != keys[0]


def test_bad_input_names_the_table_and_rows(sim):
    humans, judges, systems = tables(sim)
    with pytest.raises(InvalidInputError, match="no system"):
        judges_data(humans, pd.concat([judges, pd.DataFrame({"response": ["ghost"], "judge": ["judge0"], "score": [1.0]})]), systems)
    rated = systems["response"].isin(humans["response"])
    lone = systems.loc[systems["system"] == "system2"].assign(system="unrated")
    with pytest.raises(InvalidInputError, match=r"\['unrated'\] have no human rating"):
        judges_data(humans[~humans["response"].isin(lone["response"])], judges, pd.concat([systems[systems["system"] != "system2"], lone]))
    with pytest.raises(InvalidInputError, match="same score"):
        judges_data(humans, judges.assign(score=np.where(judges["judge"] == "judge2", 1.0, judges["score"])), systems)
    with pytest.raises(InvalidInputError, match="outside the declared scale"):
        judges_data(humans, judges, systems, judge_range=(0, 3))
    with pytest.raises(InvalidInputError, match="no judge score"):
        judges_data(humans, judges[judges["response"] != systems["response"][0]], systems)
    with pytest.raises(InvalidInputError, match="more than one system"):
        judges_data(humans, judges, pd.concat([systems, systems.head(1).assign(system="other")]))
    assert rated.any()


def test_ppi_and_ppi_plus_plus_equal_ppi_py(sim):
    ppi_py = pytest.importorskip("ppi_py")
    data = judges_data(*tables(sim))
    frame = baseline_table(data, ci_prob=0.9)
    means = data.systems.set_index("response")
    means["human"] = data.humans.groupby("response")["score"].mean()
    means["judge"] = data.judges.groupby("response")["score"].mean()
    for system, group in means.groupby("system"):
        rated = group["human"].notna().to_numpy()
        y, yhat, unlabeled = group["human"].to_numpy()[rated], group["judge"].to_numpy()[rated], group["judge"].to_numpy()[~rated]
        for method, lam in (("ppi", 1.0), ("ppi++", None)):
            lower, upper = ppi_py.ppi_mean_ci(y, yhat, unlabeled, alpha=0.1, lam=lam)
            assert frame.loc[(system, method), "lower"] == pytest.approx(float(np.ravel(lower)[0]), rel=1e-10)
            assert frame.loc[(system, method), "upper"] == pytest.approx(float(np.ravel(upper)[0]), rel=1e-10)
        estimate = ppi_py.ppi_mean_pointestimate(y, yhat, unlabeled)
        assert frame.loc[(system, "ppi++"), "mean"] == pytest.approx(float(np.ravel(estimate)[0]), rel=1e-10)
        lower, upper = ppi_py.ppi_mean_ci(y, yhat, unlabeled, alpha=0.1, lam=0)  # classical: the labels alone
        assert ppi_mean(y, yhat, unlabeled, 0.0, 0.9)[1] == pytest.approx(float(np.ravel(lower)[0]), rel=1e-10)
        assert frame.loc[(system, "humans"), "lower"] == pytest.approx(float(np.ravel(lower)[0]), rel=1e-10)
