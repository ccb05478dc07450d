"""The human ratings' independence check (``bayes_raters.judges.checks``) without a fit: a
posterior of fixed parameters, so the replicates' distribution is known."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import xarray as xr

from bayes_raters.judges import judges_data, simulate_judges
from bayes_raters.judges.checks import INDEPENDENCE_P, human_independence, replicate, replicate_humans, within_response_correlation
from bayes_raters.judges.model import JudgesSpec


def fixed_posterior(data, n_draws: int, seed: int = 0) -> xr.Dataset:
    """One chain of ``n_draws`` copies of one parameter set (standardised scale)."""
    rng = np.random.default_rng(seed)
    n_s, n_j, n_r = len(data.system_names), len(data.judge_names), len(data.raters)
    values = {"mu": ("system", rng.normal(0, 0.5, n_s)), "sigma_true": ("system", rng.uniform(0.4, 0.9, n_s)), "sigma_human": ((), 0.7),
              "alpha": ("judge", rng.normal(size=n_j)), "beta": ("judge", rng.uniform(0.5, 1.5, n_j)),
              "sigma_judge": ("judge", rng.uniform(0.3, 1, n_j)), "loading": ("judge", rng.uniform(0, 0.5, n_j)),
              "rater_effect": ("rater", rng.normal(0, 0.3, n_r)), "bias": (("judge", "system"), rng.normal(0, 0.2, (n_j, n_s)))}
    out = {}
    for name, (dims, value) in values.items():
        dims = (dims,) if isinstance(dims, str) else dims
        out[name] = (("chain", "draw", *dims), np.broadcast_to(value, (1, n_draws, *np.shape(value))))
    return xr.Dataset(out, coords={"system": list(data.system_names), "judge": list(data.judge_names), "rater": list(data.raters)})


def fake_result(data, posterior):
    return SimpleNamespace(data=data, posterior=posterior, spec=JudgesSpec(shared_error=True))


def test_vectorised_human_replicates_follow_the_per_draw_replicates():
    """Both replicate a rating as its system's mean + rater effect + true score + error: per
    rating the same mean and SD, and two ratings of one response correlate by
    :math:`\\sigma_s^2/(\\sigma_s^2 + \\sigma_H^2)` (z-scores within 5 standard errors)."""
    sim = simulate_judges(n_systems=3, n_responses=30, judge_quality=(0.8, 0.5), human_share=0.5, random_seed=5)
    data = judges_data(sim["human_ratings"], sim["judge_scores"], sim["systems"])
    n = 4000
    posterior = fixed_posterior(data, n)
    result = fake_result(data, posterior)
    fast = replicate_humans(result, posterior, np.random.default_rng(1))
    slow, _ = replicate(result, posterior, np.random.default_rng(2))
    assert fast.shape == slow.shape == (n, len(data.humans))
    sd = slow.std(axis=0)
    assert np.abs((fast.mean(axis=0) - slow.mean(axis=0)) / (sd * np.sqrt(2 / n))).max() < 5
    assert np.abs(np.log(fast.std(axis=0) / sd)).max() < 5 / np.sqrt(n / 2)
    first = data.humans.groupby(data.human_response).head(2).index.to_numpy().reshape(-1, 2)[:5]
    for a, b in first:
        r_fast, r_slow = np.corrcoef(fast[:, a], fast[:, b])[0, 1], np.corrcoef(slow[:, a], slow[:, b])[0, 1]
        assert abs(np.arctanh(r_fast) - np.arctanh(r_slow)) < 5 * np.sqrt(2 / (n - 3))


def test_ratings_the_model_made_are_flagged_at_the_family_wise_rate():
    """Ratings replicated from the posterior's own parameters, ten systems: the check flags
    about 2 x INDEPENDENCE_P of the data sets (one row flagged sinks the whole fit), not one
    per system (a per-row 2.5% per direction flagged about 40% of such fits)."""
    sim = simulate_judges(n_systems=10, n_responses=20, judge_quality=(0.8,), human_share=1.0, ratings_per_response=2, random_seed=6)
    base = judges_data(sim["human_ratings"], sim["judge_scores"], sim["systems"])
    posterior = fixed_posterior(base, 400)
    rng = np.random.default_rng(7)
    flagged = []
    for k in range(200):
        observed = replicate_humans(fake_result(base, posterior.isel(draw=[0])), posterior.isel(draw=[0]), rng)[0]
        data = dataclasses.replace(base, humans=base.humans.assign(score=observed))
        table = human_independence(fake_result(data, posterior), random_seed=k)
        assert len(table) == 11
        flagged.append(table["flagged"].any())
    share = np.mean(flagged)
    assert 0.005 <= share <= 2 * INDEPENDENCE_P + 0.07, share


def test_within_response_correlation_equals_the_sum_over_pairs():
    """Against a loop over every pair of ratings of one response, rows of replicates at once."""
    rng = np.random.default_rng(8)
    response = rng.integers(0, 40, 150)
    system = rng.integers(0, 3, 40)[response]
    scores = rng.normal(size=(4, 150)) + rng.normal(size=40)[response]
    got = within_response_correlation(scores, response, system)
    for k, y in enumerate(scores):
        means = np.array([y[system == s].mean() for s in range(3)])
        e = y - means[system]
        pairs = [(a, b) for a in range(150) for b in range(a + 1, 150) if response[a] == response[b]]
        expected = sum(e[a] * e[b] for a, b in pairs) / len(pairs) / np.mean(e**2)
        assert abs(got[k] - expected) < 1e-12
