"""The human-ratings planner: its information equals the joint normal posterior written out
response by response, its tables behave, its choices go where the comparison gains, and (slow)
its planned widths match refits."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import xarray as xr

from bayes_raters.errors import InvalidInputError
from bayes_raters.judges import judges_data, next_responses, plan_human_ratings, simulate_judges
from bayes_raters.judges.model import JudgesSpec, system_weights
from bayes_raters.judges.plan import Information, draw_parameters, response_groups


def _parameters(n_draws, n_systems, n_judges, rng):
    return {"mu": rng.normal(0, 0.5, (n_draws, n_systems)), "sigma_true": rng.uniform(0.5, 1.0, (n_draws, n_systems)),
            "sigma_human": rng.uniform(0.5, 1.0, n_draws), "beta": rng.uniform(0.5, 1.5, (n_draws, n_judges)),
            "sigma_judge": rng.uniform(0.3, 1.0, (n_draws, n_judges)), "sigma_bias": rng.uniform(0.1, 0.4, (n_draws, n_judges)),
            "loading": rng.uniform(0.0, 0.5, (n_draws, n_judges))}


def _joint_mean_covariance(data, p, d):
    """Posterior covariance of the systems' means for draw ``d``, written out with every
    response's true score and shared factor and every rating as unknowns and rows: biases as S
    free values per judge with a stiff penalty on their sum (the zero-sum prior in the limit)."""
    n_s, n_j, n_r = len(data.system_names), len(data.judge_names), len(data.responses)
    w, system = system_weights(data), data.response_system
    size = n_s + n_j * n_s + 2 * n_r
    t0, f0 = n_s + n_j * n_s, n_s + n_j * n_s + n_r
    rows, noise = [], []
    for r in data.human_response:
        row = np.zeros(size)
        row[system[r]], row[t0 + r] = 1.0, p["sigma_true"][d, system[r]]
        rows.append(row), noise.append(p["sigma_human"][d] ** 2)
    for r, j in zip(data.judge_response, data.judge_index, strict=True):
        row, s, beta = np.zeros(size), system[r], p["beta"][d, j]
        row[:n_s] -= beta * w
        row[s] += beta
        row[n_s + j * n_s + s] = 1.0
        row[t0 + r], row[f0 + r] = beta * p["sigma_true"][d, s], p["loading"][d, j]
        rows.append(row), noise.append(p["sigma_judge"][d, j] ** 2)
    design, noise = np.array(rows), np.array(noise)
    prior = np.zeros((size, size))
    prior[:n_s, :n_s] = np.eye(n_s) / 1.5**2
    for j in range(n_j):
        block = slice(n_s + j * n_s, n_s + (j + 1) * n_s)
        prior[block, block] = np.eye(n_s) / p["sigma_bias"][d, j] ** 2 + 1e8 * np.ones((n_s, n_s))
    prior[t0:, t0:] = np.eye(2 * n_r)
    covariance = np.linalg.inv(prior + design.T @ (design / noise[:, None]))
    return covariance[:n_s, :n_s]


def test_information_equals_the_joint_normal_posterior():
    sim = simulate_judges(n_systems=3, n_responses=10, judge_quality=(0.8, 0.5), human_share=0.3, ratings_per_response=2, random_seed=5)
    judges = sim["judge_scores"].drop(index=[0, 1, 2])  # some responses without the first judge's score
    data = judges_data(sim["human_ratings"], judges, sim["systems"])
    p = _parameters(2, 3, 2, np.random.default_rng(5))
    info = Information(p, system_weights(data))
    precision = info.prior()
    groups = response_groups(data)
    assert groups["n"].sum() == len(data.responses) and set(groups["ratings"]) == {0, 2}
    for row in groups.itertuples():
        precision = precision + row.n * info.response(row.system, row.mask, row.ratings)
    ours = np.linalg.inv(precision)[:, :3, :3]
    for d in range(2):
        np.testing.assert_allclose(ours[d], _joint_mean_covariance(data, p, d), rtol=1e-5, atol=1e-9)


@pytest.fixture(scope="module")
def pilot():
    """A fitted result's stand-in: the simulation's data with posterior draws around its truth."""
    sim = simulate_judges(n_systems=4, n_responses=150, judge_quality=(0.8, 0.5), human_share=0.1, random_seed=7)
    data = judges_data(sim["human_ratings"], sim["judge_scores"], sim["systems"])
    rng = np.random.default_rng(7)
    p = _parameters(400, 4, 2, rng)
    p["mu"] = ((sim["truth"]["panel_mean"].to_numpy() - data.center) / data.scale) + rng.normal(0, 0.1, (400, 4))

    def array(values, *dims):
        return xr.DataArray(values.reshape(2, 200, *values.shape[1:]), dims=("chain", "draw", *dims))

    posterior = xr.Dataset({"mu": array(p["mu"], "system"), "sigma_true": array(p["sigma_true"], "system"),
                            "sigma_human": array(p["sigma_human"]), "beta": array(p["beta"], "judge"),
                            "sigma_judge": array(p["sigma_judge"], "judge"), "sigma_bias": array(p["sigma_bias"], "judge"),
                            "system_mean": array(data.center + data.scale * p["mu"], "system")},
                           coords={"system": list(data.system_names), "judge": list(data.judge_names)})
    return SimpleNamespace(posterior=posterior, data=data, spec=JudgesSpec(shared_error=False))


def test_plan_starts_at_the_fit_and_narrows_with_more_ratings(pilot):
    plan = plan_human_ratings(pilot, extra=(0, 50, 200), raters=(1, 3), pairs=[("system0", "system1")], systems=["system2"], target_width=0.3)
    now = plan[plan["extra_responses"] == 0]
    np.testing.assert_allclose(now["expected_width"], now["current_width"])
    for _, rows in plan.groupby(["raters", "quantity"]):
        assert rows["expected_width"].is_monotonic_decreasing and rows["expected_width"].iloc[-1] < 0.95 * rows["current_width"].iloc[0]
    by_raters = plan[plan["extra_responses"] == 200].set_index(["quantity", "raters"])["expected_width"]
    assert by_raters[("system2", 3)] < by_raters[("system2", 1)]
    assert set(plan.columns) >= {"extra_ratings", "p_excludes_zero", "meets_target"}
    assert plan.loc[plan["quantity"] == "system2", "p_excludes_zero"].isna().all()


def test_targeted_allocation_beats_random_for_one_pair(pilot):
    kwargs = {"extra": (0, 100), "raters": 2, "pairs": [("system0", "system3")]}
    random = plan_human_ratings(pilot, allocation="random", **kwargs)["expected_width"].iloc[-1]
    targeted = plan_human_ratings(pilot, allocation="targeted", **kwargs)["expected_width"].iloc[-1]
    assert targeted < 0.97 * random


def test_next_responses_are_unrated_and_serve_the_pair(pilot):
    chosen = next_responses(pilot, 30, pairs=[("system1", "system2")], random_seed=3)
    assert len(chosen) == chosen["response"].nunique() == 30
    assert not chosen["response"].isin(pilot.data.humans["response"]).any()
    assert set(chosen["system"]) == {"system1", "system2"}
    assert chosen["expected_variance"].is_monotonic_decreasing
    again = next_responses(pilot, 30, pairs=[("system1", "system2")], random_seed=3)
    assert chosen.equals(again)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"pairs": [("system0", "nope")]}, "unknown systems"),
    ({"extra": (0, 10_000)}, "have no human rating"),
    ({"allocation": "best"}, "allocation must be"),
    ({"raters": 0}, "raters >= 1"),
])
def test_bad_plans_are_refused(pilot, kwargs, message):
    with pytest.raises(InvalidInputError, match=message):
        plan_human_ratings(pilot, **kwargs)


@pytest.mark.slow
def test_planned_widths_match_refits():
    from validation.judges_plan import one_replication, summary

    table = summary([row for seed in (1, 2) for row in one_replication(seed)])
    assert table["converged"].min() == 1.0
    assert ((table["ratio_mean"] > 0.8) & (table["ratio_mean"] < 1.2)).all(), table


def test_an_ordinal_pilot_counts_a_rating_by_its_information(pilot):
    """Ratings on a 1-5 scale carry less about the true score than the latent ratings they round:
    the planner reads an ordinal rating by its Fisher information, so a rated response adds less
    precision to its system's mean than under the normal model (same draws, same design)."""
    ordinal = SimpleNamespace(posterior=pilot.posterior, data=pilot.data, spec=JudgesSpec(shared_error=False, observation="ordinal", score_range=(1, 5)))
    gains = []
    for result in (pilot, ordinal):
        info = Information(draw_parameters(result, 100), system_weights(pilot.data))
        gains.append(info.response(2, (0, 1), 2)[:, 2, 2] - info.response(2, (0, 1), 0)[:, 2, 2])
    assert np.all(gains[1] < gains[0]) and np.all(gains[1] > 0.3 * gains[0])
