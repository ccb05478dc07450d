"""The judges' biases and the rater effects integrated out (``bayes_raters.judges.biases``):
against the dense multivariate normal of every observation with both added to its covariance."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from bayes_raters.judges import judges_data, simulate_judges
from bayes_raters.judges.biases import bias_draws, bias_loglik, block_bias_terms, group_bias_terms, zero_sum_basis
from bayes_raters.judges.groups import group_loglik, judge_groups
from bayes_raters.judges.marginal import block_loglik, response_block
from bayes_raters.judges.model import observation_rows, row_terms
from tests.judges.test_model import random_parameters


def dense_covariance(data, p, tau, tau_rater):
    """Every observation's mean and covariance, true scores, shared factor, biases (zero-sum over
    systems, scale ``tau`` per judge) and rater effects (zero-sum, ``tau_rater``) integrated out."""
    values, response, system, rater, judge = observation_rows(data)
    mean, load_true, load_shared, variance = row_terms(p, system, rater, judge)
    same = response[:, None] == response[None, :]
    cov = np.diag(variance) + np.where(same, np.outer(load_true, load_true) + np.outer(load_shared, load_shared), 0)
    scored, rated = judge >= 0, rater >= 0
    n_s, n_r = len(data.system_names), len(data.raters)
    same_judge = scored[:, None] & scored[None, :] & (judge[:, None] == judge[None, :])
    t = tau[np.maximum(judge, 0)]
    cov += np.where(same_judge, t[:, None] ** 2 * ((system[:, None] == system[None, :]) - 1 / n_s), 0)
    cov += np.where(rated[:, None] & rated[None, :], tau_rater**2 * ((rater[:, None] == rater[None, :]) - 1 / n_r), 0)
    return values, mean, cov


@pytest.fixture(scope="module")
def design():
    """Some responses rated once, some twice, most not; a judge that skipped some; four raters."""
    sim = simulate_judges(n_systems=3, n_responses=12, judge_quality=(0.8, 0.5, 0.4), human_share=0.5, n_raters=4, random_seed=3)
    judges = sim["judge_scores"]
    judges = judges.drop(index=judges.index[(judges["judge"] == "judge2") & (np.arange(len(judges)) % 5 == 0)])
    humans = sim["human_ratings"].drop(index=sim["human_ratings"].index[::4])
    data = judges_data(humans, judges, sim["systems"])
    rng = np.random.default_rng(0)
    n_s, n_j, n_r = len(data.system_names), len(data.judge_names), len(data.raters)
    p = random_parameters(rng, n_s, n_j, n_r)
    p.update(beta=np.abs(p["beta"]), bias=np.zeros((n_j, n_s)), rater_effect=np.zeros(n_r))
    values, response, system, rater, judge = observation_rows(data)
    rated = np.zeros(len(data.responses), bool)
    rated[data.human_response] = True
    assert set(np.bincount(data.human_response, minlength=len(data.responses))) == {0, 1, 2}
    keep = rated[response]
    numbering, compact = np.unique(response[keep], return_inverse=True)
    block = response_block(values[keep], compact, rater[keep], judge[keep], data.response_system[numbering], n_s, n_j, n_r)
    scored = judge >= 0
    groups = judge_groups(values[scored], response[scored], judge[scored], data.response_system, ~rated, n_j, n_s)
    return data, p, block, groups, rng.uniform(0.2, 0.6, n_j), 0.4


def terms(design):
    data, p, block, groups, tau, tau_rater = design
    g, h, g_rho, h_rho, h_cross = block_bias_terms(block, p, np, n_raters=len(data.raters))
    g_u, h_u = group_bias_terms(groups, p, len(data.system_names), np)
    return g + g_u, h + h_u, (g_rho, h_rho, h_cross, tau_rater, zero_sum_basis(len(data.raters)))


def test_biases_and_rater_effects_integrate_to_the_dense_normal(design):
    data, p, block, groups, tau, tau_rater = design
    values, mean, cov = dense_covariance(data, p, tau, tau_rater)
    g, h, raters = terms(design)
    basis = zero_sum_basis(len(data.system_names))
    ours = block_loglik(block, p, np).sum() + group_loglik(groups, p, np) + bias_loglik(g, h, tau, basis, np, raters)
    assert ours == pytest.approx(scipy.stats.multivariate_normal(mean, cov).logpdf(values), rel=1e-11)
    without_raters = dense_covariance(data, p, tau, 0.0)
    ours = block_loglik(block, p, np).sum() + group_loglik(groups, p, np) + bias_loglik(g, h, tau, basis, np)
    assert ours == pytest.approx(scipy.stats.multivariate_normal(without_raters[1], without_raters[2]).logpdf(values), rel=1e-11)


def test_draws_follow_the_dense_conditional(design):
    """4,000 draws of (biases, rater effects) given the rest: their mean within 5 standard errors
    of the dense conditional mean, their covariance within 0.1 of its largest entry."""
    data, p, block, groups, tau, tau_rater = design
    values, mean, cov = dense_covariance(data, p, tau, tau_rater)
    _, _, system, rater, judge = observation_rows(data)
    n_s, n_j, n_r = len(data.system_names), len(data.judge_names), len(data.raters)
    scored, rated = judge >= 0, rater >= 0
    cross = [np.where(scored & (judge == j), tau[j] ** 2 * ((system == s) - 1 / n_s), 0) for j in range(n_j) for s in range(n_s)]
    cross += [np.where(rated, tau_rater**2 * ((rater == h) - 1 / n_r), 0) for h in range(n_r)]
    cross = np.asarray(cross)
    prior = np.zeros((len(cross), len(cross)))
    for j in range(n_j):
        prior[j * n_s:(j + 1) * n_s, j * n_s:(j + 1) * n_s] = tau[j] ** 2 * (np.eye(n_s) - 1 / n_s)
    prior[n_j * n_s:, n_j * n_s:] = tau_rater**2 * (np.eye(n_r) - 1 / n_r)
    exact_mean = cross @ np.linalg.solve(cov, values - mean)
    exact_cov = prior - cross @ np.linalg.solve(cov, cross.T)
    g, h, raters = terms(design)
    rng = np.random.default_rng(9)
    draws = np.array([np.concatenate([b.ravel(), r]) for b, r in (bias_draws(g, h, tau, zero_sum_basis(n_s), rng, raters) for _ in range(4000))])
    se = np.sqrt(np.diag(exact_cov) / len(draws))
    assert np.abs((draws.mean(0) - exact_mean) / se).max() < 5
    assert np.abs(np.cov(draws.T) - exact_cov).max() < 0.1 * np.abs(exact_cov).max()
    assert np.abs(draws[:, : n_j * n_s].reshape(-1, n_j, n_s).sum(2)).max() < 1e-12  # zero-sum over systems
