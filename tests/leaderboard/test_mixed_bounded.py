"""Bounded scores in [0, 1] (the ordered beta) on a mixed leaderboard: the blocked sampler against NUTS on the
same PyMC model, recovery on a suite the priors did not generate, what the data reveal, the result's contract and
bad input."""

from __future__ import annotations

import arviz as az
import numpy as np
import pandas as pd
import pytest

from bayes_raters.errors import InvalidInputError
from bayes_raters.leaderboard import fit_leaderboard
from bayes_raters.leaderboard.mixed import item_type_table
from bayes_raters.leaderboard.simulate import simulate_mixed_leaderboard
from tests.leaderboard.test_mixed import blocked_and_nuts
from tests.leaderboard.test_sampler import assert_agrees_with_nuts


@pytest.mark.slow  # nutpie's compile and 2 x 1,500 NUTS draws beside 2 x 3,000 blocked draws
def test_the_blocked_sampler_agrees_with_nuts_with_bounded_scores():
    """The 2PL's agreement rule (means within 5 MCSE, SDs within 20%, on average within 6%) for every parameter
    of 14 systems x (6 0/1 + 10 bounded items), the bounded scale's cutpoints and precision included."""
    answers, truth = simulate_mixed_leaderboard(14, 6, 0, 0, n_bounded=10, missing=0.1, random_seed=4)
    ours, nuts = blocked_and_nuts(answers, truth["item_type"].to_dict())
    names = ["theta", "b", "log_a", "b_mean", "b_sigma", "log_a_mean", "log_a_sigma", "bounded_cutpoints", "precision"]
    assert_agrees_with_nuts(ours, nuts, names)


@pytest.fixture(scope="module")
def bounded_fit():
    answers, truth = simulate_mixed_leaderboard(120, 20, 0, 0, n_bounded=40, random_seed=1)
    return answers, truth, fit_leaderboard(answers, random_seed=1, progressbar=False)


def test_a_bounded_fit_converges_and_recovers_a_suite_the_priors_did_not_generate(bounded_fit):
    """120 systems x (20 0/1 + 40 bounded items): skewed abilities, clustered difficulties, the bounded scale's
    cutpoint spacing U(3, 6) and precision U(5, 30) (the priors are log-normal). The fit converges by its own
    rule, ranks the systems as the truth does (rank correlation > 0.95), its 90% intervals cover the
    difficulties of both types at least 75% of the time (truth standardised as the N(0, 1) prior fixes the
    abilities) and the shared cutpoint and precision lie within three posterior SDs of the truth."""
    _, truth, result = bounded_fit
    assert result.convergence.converged, result.convergence
    post = result.posterior
    theta = post["theta"].mean(("chain", "draw")).to_series()
    true_theta = truth["theta"].reindex(theta.index)
    assert theta.corr(true_theta, method="spearman") > 0.95
    loc, scale = true_theta.mean(), true_theta.std(ddof=0)
    types = truth["item_type"]
    for kind in ("2pl", "bounded"):
        items = types.index[types == kind]
        low, high = post["b"].sel(item=items).astype(float).quantile([0.05, 0.95], ("chain", "draw")).transpose("quantile", "item").values
        true = ((truth["b"][items] - loc) / scale).to_numpy()
        assert np.mean((low <= true) & (true <= high)) >= 0.75, kind
    for name, true in (("precision", truth["precision"]), ("bounded_cutpoints", truth["bounded_cutpoints"]["one"])):
        draws = post[name].sel(bounded_cutpoint="one") if name == "bounded_cutpoints" else post[name]
        assert abs(float(draws.mean()) - true) < 3 * float(draws.std()), (name, float(draws.mean()), true)


def test_a_bounded_fit_keeps_the_result_contract(bounded_fit):
    _, truth, result = bounded_fit
    post = result.posterior
    assert post["bounded_cutpoints"].dims == ("chain", "draw", "bounded_cutpoint")
    assert list(post["bounded_cutpoint"].values) == ["zero", "one"] and post["precision"].dims == ("chain", "draw")
    assert (post["bounded_cutpoints"].sel(bounded_cutpoint="zero") < post["bounded_cutpoints"].sel(bounded_cutpoint="one")).all()
    assert post.sizes["item_bounded"] == 40
    summary = az.summary(result.idata, var_names=["bounded_cutpoints", "precision"])
    assert len(summary) == 3 and summary["r_hat"].max() <= 1.01
    assert 0.2 < float(result.idata["sample_stats"]["accept_bounded"].mean()) < 1
    assert np.isfinite(result.idata["log_likelihood"]["item_answers"].values).all()
    table = result.item_table()
    assert table["item_type"].value_counts().to_dict() == {"bounded": 40, "2pl": 20}


def test_scores_in_0_1_make_an_item_bounded_without_item_types():
    answers, truth = simulate_mixed_leaderboard(30, 4, 0, 3, grades=4, n_bounded=3, random_seed=2)
    types = item_type_table(answers.rename(columns={"correct": "score"}), None)
    assert types.to_dict() == truth["item_type"].to_dict()


def test_replicated_bounded_scores_stay_in_0_1_with_exact_ends(bounded_fit):
    """Replicated scores of bounded items lie in [0, 1], exact 0s and 1s among them in the observed shares
    (within 0.05), and each item's mean replicated score is close to its observed mean."""
    _, _, result = bounded_fit
    replicated = result.sample_posterior_predictive(100, random_seed=1)["posterior_predictive"]["correct"]
    observed = result.idata["observed_data"]["correct"].values
    item = result.idata["constant_data"]["item_index"].values
    bounded = result.idata["constant_data"]["item_type"].values[item] == "bounded"
    values = replicated.values.reshape(-1, len(observed))[:, bounded]
    assert values.min() >= 0 and values.max() <= 1
    for end in (0.0, 1.0):
        assert abs((values == end).mean() - (observed[bounded] == end).mean()) < 0.05, end
    per_item = pd.DataFrame({"item": item[bounded], "obs": observed[bounded], "rep": values.mean(0)}).groupby("item").mean()
    assert (per_item["obs"] - per_item["rep"]).abs().max() < 0.1


@pytest.mark.parametrize(("low", "high", "declared", "match"), [
    (0.1, 1.4, None, "rescale a metric to"),
    (1.1, 1.9, "bounded", "declared 'bounded'.* outside"),
    (0.1, 0.9, "2pl", "declared '2pl'.* not 0/1"),
])
def test_bad_bounded_input_is_refused_with_advice(low, high, declared, match):
    """Scores past 1 (a metric on another scale), an item declared bounded with such scores, and fractional
    scores declared 0/1."""
    answers, truth = simulate_mixed_leaderboard(10, 4, 0, 0, n_bounded=4, random_seed=2)
    item = truth["item_type"].index[truth["item_type"] == "bounded"][0]
    rows = answers["item"] == item
    answers.loc[rows, "correct"] = np.linspace(low, high, rows.sum())
    with pytest.raises(InvalidInputError, match=match):
        fit_leaderboard(answers, item_types={item: declared} if declared else None, progressbar=False)
