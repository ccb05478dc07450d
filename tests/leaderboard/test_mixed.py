"""Mixed leaderboards (0/1, 3PL and graded items on one ability): the blocked sampler against NUTS on the
same PyMC model, recovery on suites the priors did not generate, the result's contract and bad input."""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm
import pytest

from bayes_raters.errors import InvalidInputError
from bayes_raters.leaderboard import fit_leaderboard
from bayes_raters.leaderboard.ability import item_bank
from bayes_raters.leaderboard.mixed import build_mixed_model, item_type_table
from bayes_raters.leaderboard.simulate import simulate_mixed_leaderboard
from tests.leaderboard.test_sampler import assert_agrees_with_nuts


def _fit(answers, truth, **kwargs):
    return fit_leaderboard(answers, item_types=truth["item_type"].to_dict(), progressbar=False, **kwargs)


@pytest.mark.slow  # nutpie's compile and 2 x 2,500 NUTS draws beside 2 x 3,000 blocked draws
def test_the_blocked_sampler_agrees_with_nuts_on_a_mixed_leaderboard():
    """Posterior means within 5 Monte Carlo standard errors and SDs within 20% (on average over a vector's
    entries within 6%), the 2PL's rule (``test_sampler.assert_agrees_with_nuts``), for every parameter of a
    suite of 0/1, 3PL and graded items (14 systems x 8 + 8 + 8 items, five grades)."""
    answers, truth = simulate_mixed_leaderboard(14, 8, 8, 8, grades=5, missing=0.1, random_seed=4)
    ours, nuts = blocked_and_nuts(answers, truth["item_type"].to_dict())
    assert_agrees_with_nuts(ours, nuts, ["theta", "b", "log_a", "b_mean", "b_sigma", "log_a_mean", "log_a_sigma", "c", "cutpoints"])


def blocked_and_nuts(answers, types: dict):
    """The posteriors of the blocked sampler (2 x 3,000 draws, ``log_a`` added) and of nutpie's NUTS on
    ``build_mixed_model`` (2 x 1,500 draws, target acceptance 0.95) for the same suite, both seeded."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = fit_leaderboard(answers, item_types=types, draws=3000, tune=300, random_seed=5, progressbar=False).posterior
        with build_mixed_model(answers, types):
            nuts = pm.sample(1500, tune=1000, chains=2, random_seed=5, progressbar=False, target_accept=0.95,
                             nuts_sampler="nutpie", compute_convergence_checks=False)["posterior"].to_dataset()
    ours["log_a"] = np.log(ours["a"].astype(float))
    return ours, nuts


@pytest.fixture(scope="module")
def mixed_fit():
    answers, truth = simulate_mixed_leaderboard(150, 60, 40, 30, random_seed=7)
    return answers, truth, _fit(answers, truth, random_seed=7)


def test_a_mixed_fit_converges_and_recovers_a_suite_the_priors_did_not_generate(mixed_fit):
    """150 systems x (60 0/1 + 40 3PL + 30 graded items, ten grades): skewed abilities, clustered
    difficulties, guessing chances U(0.15, 0.35) and cutpoint spacings U(0.4, 1.6) (the priors are
    logit-normal and log-normal). The fit converges by its own rule, ranks the systems as the truth does
    (rank correlation > 0.95) and its 90% intervals cover the difficulties of every type, the guessing
    chances and the cutpoints at least 75% of the time each (the truth on the model's scale: abilities
    standardised over the systems, as the N(0, 1) prior fixes them)."""
    _, truth, result = mixed_fit
    assert result.convergence.converged, result.convergence
    post = result.posterior
    theta = post["theta"].mean(("chain", "draw")).to_series()
    true_theta = truth["theta"].reindex(theta.index)
    assert theta.corr(true_theta, method="spearman") > 0.95
    loc, scale = true_theta.mean(), true_theta.std(ddof=0)

    def covered(draws, true, dim):
        low, high = draws.quantile([0.05, 0.95], ("chain", "draw")).transpose("quantile", dim).values
        return np.mean((low <= true) & (true <= high))

    types = truth["item_type"]
    for kind in ("2pl", "3pl", "graded"):
        items = types.index[types == kind]
        b = post["b"].sel(item=items).astype(float)
        assert covered(b, ((truth["b"][items] - loc) / scale).to_numpy(), "item") >= 0.75, kind
    assert covered(post["c"].astype(float), truth["c"][post["c"]["item_3pl"].values].to_numpy(), "item_3pl") >= 0.75
    # cutpoints live on the eta scale, which the standardisation leaves alone
    assert covered(post["cutpoints"].astype(float), truth["cutpoints"].to_numpy(), "cutpoint") >= 0.75


def test_a_mixed_fit_keeps_the_result_contract(mixed_fit):
    answers, truth, result = mixed_fit
    post = result.posterior
    assert set(post["item"].values) == set(truth["item_type"].index)
    assert post["c"].dims == ("chain", "draw", "item_3pl") and post["cutpoints"].dims == ("chain", "draw", "cutpoint")
    types = result.idata["constant_data"]["item_type"].to_series()
    assert types.to_dict() == truth["item_type"].to_dict()
    summary = az.summary(result.idata, var_names=["c", "cutpoints"])
    assert len(summary) == 40 + 9 and summary["r_hat"].max() <= 1.01
    loglik = result.idata["log_likelihood"]["item_answers"]
    assert loglik.sizes["item"] == 130 and np.isfinite(loglik.values).all()
    stats = result.idata["sample_stats"]
    assert 0.3 < float(stats["accept_3pl"].mean()) < 1 and 0.3 < float(stats["accept_graded"].mean()) < 1
    table = result.item_table()
    assert table.loc[types.index[types == "graded"], "share_correct"].between(0, 1).all()


def test_grades_make_a_table_mixed_without_item_types():
    answers, truth = simulate_mixed_leaderboard(30, 8, 0, 6, grades=5, random_seed=1)
    types = item_type_table(answers.rename(columns={"correct": "score"}), None)
    assert types.to_dict() == truth["item_type"].to_dict()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 20 draws: the layout is checked here, not the mixing
        first = fit_leaderboard(answers, draws=20, tune=20, random_seed=3, progressbar=False)
        again = fit_leaderboard(answers, draws=20, tune=20, random_seed=3, progressbar=False)
    assert first.posterior["cutpoints"].sizes["cutpoint"] == 4 and "c" not in first.posterior
    for name in first.posterior.data_vars:
        np.testing.assert_array_equal(first.posterior[name].values, again.posterior[name].values)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"model": "1pl"}, "takes model='2pl'"),
    ({"item_types": {"item00000": "4pl"}}, "not item types"),
    ({"item_types": {"nobody": "3pl"}}, "without answers"),
    ({"item_types": {"item00000": "3pl"}, "options": 1}, "options must be"),
])
def test_bad_mixed_input_is_refused_with_advice(kwargs, match):
    answers, truth = simulate_mixed_leaderboard(10, 4, 4, 4, grades=4, random_seed=2)
    kwargs = {"item_types": truth["item_type"].to_dict()} | kwargs
    with pytest.raises(InvalidInputError, match=match):
        fit_leaderboard(answers, progressbar=False, **kwargs)


def test_a_graded_item_declared_binary_is_refused():
    answers, truth = simulate_mixed_leaderboard(10, 4, 0, 4, grades=4, random_seed=2)
    graded = truth["item_type"].index[truth["item_type"] == "graded"][0]
    with pytest.raises(InvalidInputError, match="declared '3pl'.* not 0/1"):
        fit_leaderboard(answers, item_types={graded: "3pl"}, progressbar=False)


def test_replicated_answers_follow_each_items_type(mixed_fit):
    """The posterior predictive draws 0/1 answers for 0/1 and 3PL items and grade positions for graded items;
    each item's mean replicated score is close to its observed mean (a 3PL item's floor of guessing included)."""
    _, truth, result = mixed_fit
    replicated = result.sample_posterior_predictive(200, random_seed=1)["posterior_predictive"]["correct"]
    observed = result.idata["observed_data"]["correct"].values
    item = result.idata["constant_data"]["item_index"].values
    kind = result.idata["constant_data"]["item_type"].values[item]
    values = replicated.values.reshape(-1, len(observed))
    assert set(np.unique(values[:, kind != "graded"])) == {0.0, 1.0}
    assert np.allclose(values[:, kind == "graded"] * 9, np.round(values[:, kind == "graded"] * 9))
    per_item = pd.DataFrame({"item": item, "obs": observed, "rep": values.mean(0)}).groupby("item").mean()
    assert (per_item["obs"] - per_item["rep"]).abs().max() < 0.1


def test_the_audit_and_the_item_bank_refuse_a_mixed_fit(mixed_fit):
    _, _, result = mixed_fit
    with pytest.raises(InvalidInputError, match="mixed leaderboard"):
        result.audit_table()
    with pytest.raises(InvalidInputError, match="mixed leaderboard"):
        item_bank(result)
    assert result.item_table()["item_type"].value_counts().to_dict() == {"2pl": 60, "3pl": 40, "graded": 30}


def test_a_suite_without_0_1_items_fits():
    """Only 3PL and graded items: the 2PL's block is empty and the sweep runs on the other types alone."""
    answers, truth = simulate_mixed_leaderboard(25, 0, 6, 6, grades=4, random_seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 30 draws: the layout is checked here, not the mixing
        result = _fit(answers, truth, draws=30, tune=30, random_seed=5)
    post = result.posterior
    assert post.sizes["item"] == 12 and post.sizes["item_3pl"] == 6 and post.sizes["cutpoint"] == 3
    assert np.isfinite(post["a"].values).all() and np.isfinite(result.idata["sample_stats"]["lp"].values).all()
