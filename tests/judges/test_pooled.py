"""Every response by groups of sufficient statistics (``bayes_raters.judges.pooled``): the same
likelihood and the same bias and rater terms as the responses' rows one by one."""

from __future__ import annotations

import numpy as np
import pytest

from bayes_raters.judges import judges_data, simulate_judges
from bayes_raters.judges.biases import block_bias_terms
from bayes_raters.judges.marginal import block_loglik, response_block
from bayes_raters.judges.model import JudgesSpec, likelihood_data, observation_rows, poolable
from bayes_raters.judges.pooled import pooled_bias_terms, pooled_loglik, response_groups
from tests.judges.test_model import random_parameters


@pytest.fixture(scope="module")
def design():
    """Responses rated zero, one, two or three times by five raters; a judge that skipped some."""
    sim = simulate_judges(n_systems=4, n_responses=30, judge_quality=(0.8, 0.5, 0.4), human_share=0.6, ratings_per_response=3, n_raters=5,
                          random_seed=11)
    judges = sim["judge_scores"]
    judges = judges.drop(index=judges.index[(judges["judge"] == "judge0") & (np.arange(len(judges)) % 4 == 0)])
    humans = sim["human_ratings"]
    humans = humans.drop(index=humans.index[np.random.default_rng(0).random(len(humans)) < 0.4])
    data = judges_data(humans, judges, sim["systems"])
    assert set(np.bincount(data.human_response, minlength=len(data.responses))) == {0, 1, 2, 3}
    rng = np.random.default_rng(5)
    n_s, n_j, n_r = len(data.system_names), len(data.judge_names), len(data.raters)
    p = random_parameters(rng, n_s, n_j, n_r)
    p.update(beta=np.abs(p["beta"]), bias=np.zeros((n_j, n_s)), rater_effect=np.zeros(n_r))
    return data, p


def test_groups_give_the_rows_likelihood_and_bias_terms(design):
    data, p = design
    values, response, _, rater, judge = observation_rows(data)
    n_s, n_j, n_r = len(data.system_names), len(data.judge_names), len(data.raters)
    block = response_block(values, response, rater, judge, data.response_system, n_s, n_j, n_r)
    groups = response_groups(values, response, rater, judge, data.response_system, n_s, n_j, n_r)
    assert len(groups.count) < len(data.responses) / 3
    assert pooled_loglik(groups, p, np) == pytest.approx(block_loglik(block, p, np).sum(), rel=1e-12)
    for ours, rows in zip(pooled_bias_terms(groups, p, n_s, np, n_raters=n_r), block_bias_terms(block, p, np, n_raters=n_r), strict=True):
        np.testing.assert_allclose(ours, rows, rtol=1e-10, atol=1e-12)


def test_the_fit_pools_only_where_ratings_are_exchangeable(design):
    """Normal ratings with the rater effects integrated out: pooled; ordinal ratings, or the
    responses one by one (``grouped=False``): the block."""
    data, _ = design
    assert poolable(data, JudgesSpec(shared_error=True))
    assert likelihood_data(data, JudgesSpec(shared_error=True))[1].block is None
    assert likelihood_data(data, JudgesSpec(shared_error=True), grouped=False)[1].pooled is None
    ordinal = JudgesSpec(shared_error=True, observation="ordinal", score_range=(1, 5))
    assert not poolable(data, ordinal)
