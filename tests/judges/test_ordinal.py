"""Ordinal human ratings in the judges model: the likelihood against a direct double integral,
the model's log density against it, the bad-input errors, and a fit on a short scale."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
import pytest
import scipy.integrate
import scipy.stats

from bayes_raters.bivariate import log_diff_ndtr_erfc, log_diff_ndtr_np
from bayes_raters.errors import InvalidInputError
from bayes_raters.judges import build_judges_model, fit_judges, judges_data, ordinal, simulate_judges
from bayes_raters.judges.marginal import true_score_given_rows
from bayes_raters.judges.model import JudgesSpec, observation_rows, row_terms, system_weights
from tests.modes import PYTHON

SCALE = (1, 5)


@pytest.fixture(scope="module")
def sim():
    out = simulate_judges(n_systems=3, n_responses=30, human_share=0.4, ratings_per_response=3, score_range=SCALE, random_seed=7)
    humans = out["human_ratings"]
    out["human_ratings"] = humans.drop(index=humans.index[[1, 2, 4]])  # one response rated once, one twice
    return out


def parameters(rng, data):
    n_systems, n_judges = len(data.system_names), len(data.judge_names)
    p = {"mu": rng.normal(0, 0.5, n_systems), "sigma_true": rng.uniform(0.6, 1.2, n_systems), "sigma_human": 0.7,
         "alpha": rng.normal(size=n_judges), "beta": rng.uniform(0.5, 1.5, n_judges), "sigma_judge": rng.uniform(0.4, 1, n_judges),
         "rater_effect": rng.normal(0, 0.3, len(data.raters)), "bias": rng.normal(0, 0.2, (n_judges, n_systems)),
         "loading": rng.uniform(0, 0.6, n_judges)}
    p["grand_mean"] = system_weights(data) @ p["mu"]
    return p


def judge_rows(data, p):
    rows = observation_rows(data)
    values, response, system, rater, judge = (a[rows[4] >= 0] for a in rows)
    mean, load_true, load_shared, variance = row_terms(p, system, rater, judge)
    return values - mean, load_true, load_shared, variance, response


def rows_loglik(data, p, slots):
    """The ordinal likelihood of every response from its judge rows (the row form, beside the model's block)."""
    judged = true_score_given_rows(*judge_rows(data, p), len(data.responses))
    return ordinal.ordinal_loglik(judged, slots, p, ordinal.standardised_cutpoints(data, SCALE), len(data.responses), lib=np)


def direct_loglik(data, p, r):
    """log p(judge scores and ratings of response r) by Simpson's rule over (t_r, f_r) on a grid."""
    residual, load_true, load_shared, variance, response = judge_rows(data, p)
    rows = response == r
    grid = np.linspace(-9, 9, 901)
    t, f = np.meshgrid(grid, grid, indexing="ij")
    log_density = scipy.stats.norm.logpdf(t) + scipy.stats.norm.logpdf(f)
    for e, a, b, v in zip(residual[rows], load_true[rows], load_shared[rows], variance[rows]):
        log_density += scipy.stats.norm.logpdf(e, a * t + b * f, np.sqrt(v))
    s = data.response_system[r]
    cut = ordinal.standardised_cutpoints(data, SCALE)
    ratings = data.human_response == r
    for rater, score in zip(data.human_rater[ratings], data.humans["score"].to_numpy()[ratings]):
        latent = p["mu"][s] + p["sigma_true"][s] * t + p["rater_effect"][rater]
        k = int(score) - SCALE[0]
        log_density += log_diff_ndtr_np((cut[k] - latent) / p["sigma_human"], (cut[k + 1] - latent) / p["sigma_human"])
    peak = log_density.max()
    inner = scipy.integrate.simpson(np.exp(log_density - peak), x=grid, axis=1)
    return peak + np.log(scipy.integrate.simpson(inner, x=grid))


def test_the_likelihood_equals_a_direct_double_integral(sim):
    """Judge scores and one, two or three ordinal ratings of a response: the Gauss-Hermite
    likelihood (the factor integrated out exactly, the true score by quadrature) against Simpson's
    rule on a 901 x 901 grid over both latents."""
    data = judges_data(sim["human_ratings"], sim["judge_scores"], sim["systems"])
    p = parameters(np.random.default_rng(1), data)
    slots = ordinal.rating_slots(data, SCALE[0])
    got = rows_loglik(data, p, slots)
    counts = slots.used.sum(axis=1)
    assert set(counts[:12]) == {1.0, 2.0, 3.0}
    for r in slots.response[:12]:
        assert got[r] == pytest.approx(direct_loglik(data, p, r), abs=2e-6)


@pytest.mark.parametrize("grouped", [True, False])
def test_the_model_log_density_uses_the_same_likelihood(sim, grouped):
    """The model's potential (PyTensor, the erfc interval probability) equals the NumPy
    likelihood summed over every response, the unrated ones by groups or row by row."""
    data = judges_data(sim["human_ratings"], sim["judge_scores"], sim["systems"])
    model = build_judges_model(data, JudgesSpec(shared_error=True, observation="ordinal", score_range=SCALE), grouped=grouped)
    rng = np.random.default_rng(4)
    point = {name: value + rng.normal(0, 0.3, np.shape(value)) for name, value in model.initial_point().items()}
    names = ["mu", "sigma_true", "sigma_human", "alpha", "beta", "sigma_judge", "rater_effect", "bias", "loading"]
    outputs = model.replace_rvs_by_values([model[n] for n in names])
    p = dict(zip(names, model.compile_fn(outputs, inputs=model.value_vars, point_fn=True, on_unused_input="ignore", mode=PYTHON)(point)))
    p["grand_mean"] = system_weights(data) @ p["mu"]
    slots = ordinal.rating_slots(data, SCALE[0])
    expected = rows_loglik(data, p, slots).sum()
    got = model.compile_logp(vars=model.potentials, jacobian=False, mode=PYTHON)(point)
    assert float(got) == pytest.approx(expected, rel=1e-10)


def test_the_erfc_interval_probability_equals_the_exact_one():
    rng = np.random.default_rng(0)
    centre, width = rng.uniform(-37, 37, 4000), 10 ** rng.uniform(-3, 1.5, 4000)
    lower, upper = centre - width / 2, centre + width / 2
    lower[::10], upper[5::10] = -1e4, 1e4
    got = log_diff_ndtr_erfc(pt.as_tensor(lower), pt.as_tensor(upper)).eval()
    exact = log_diff_ndtr_np(lower, upper)
    assert np.max(np.abs(got - exact) / np.maximum(1, np.abs(exact))) < 1e-13


def test_ordinal_ratings_need_a_scale_and_integers(sim):
    tables = sim["human_ratings"], sim["judge_scores"], sim["systems"]
    with pytest.raises(InvalidInputError, match="score_range"):
        fit_judges(*tables, observation="ordinal")
    humans = sim["human_ratings"].assign(score=sim["human_ratings"]["score"] + 0.5)
    with pytest.raises(InvalidInputError, match="decimals"):
        fit_judges(humans, *tables[1:], observation="ordinal", score_range=(1, 6))
    with pytest.raises(InvalidInputError, match="observation"):
        fit_judges(*tables, observation="binary")


def test_an_ordinal_rating_is_worth_a_normal_one_with_its_fisher_information():
    """On a fine scale the equivalent variance is sigma_H^2 + 1/12 (Sheppard); on three
    categories it equals the expected Fisher information computed from finite differences of
    log P(category | T) on a dense grid of T."""
    fine = ordinal.padded_cutpoints(np.arange(-30, 30) + 0.5, np)
    assert ordinal.equivalent_noise_variance(np.array([0.2]), np.array([1.0]), 1.0, fine)[0] == pytest.approx(1 + 1 / 12, abs=1e-3)
    cut, mu, sigma_t, sigma_h = np.array([-0.5, 0.5]), 1.3, 0.8, 0.6
    t = np.linspace(mu - 9 * sigma_t, mu + 9 * sigma_t, 20001)
    info = np.zeros_like(t)
    for lower, upper in zip(ordinal.padded_cutpoints(cut, np)[:-1], ordinal.padded_cutpoints(cut, np)[1:]):
        def log_p(x, lower=lower, upper=upper):
            return log_diff_ndtr_np((lower - x) / sigma_h, (upper - x) / sigma_h)
        slope = (log_p(t + 1e-5) - log_p(t - 1e-5)) / 2e-5
        info += np.exp(log_p(t)) * slope**2
    expected = 1 / scipy.integrate.simpson(info * scipy.stats.norm.pdf(t, mu, sigma_t), x=t)
    got = ordinal.equivalent_noise_variance(np.array([mu]), np.array([sigma_t]), sigma_h, ordinal.padded_cutpoints(cut, np))[0]
    assert got == pytest.approx(expected, rel=1e-5)
    assert got > 1.5 * sigma_h**2


@pytest.mark.filterwarnings("ignore::bayes_raters.errors.ConvergenceWarning")  # 2 x 150 draws: the contract is tested
def test_an_ordinal_fit_replicates_scores_and_saves(sim, tmp_path):
    result = fit_judges(sim["human_ratings"], sim["judge_scores"], sim["systems"], observation="ordinal", score_range=SCALE,
                        draws=150, tune=250, random_seed=3, progressbar=False)
    assert result.model == "judges_shared_error_ordinal"
    replicated = result.sample_posterior_predictive(n_draws=20, random_seed=1)["posterior_predictive"]["human"].values
    assert set(np.unique(replicated)) <= set(range(1, 6)) and len(np.unique(replicated)) == 5
    loglik = result.compute_log_likelihood()["log_likelihood"]["responses"]
    assert loglik.sizes["response"] == len(sim["systems"]) and np.isfinite(loglik.values).all()
    path = result.save(tmp_path / "ordinal.nc")
    again = type(result).load(path)
    assert again.spec == result.spec
    np.testing.assert_allclose(again.compute_log_likelihood()["log_likelihood"]["responses"].values, loglik.values)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [5, 6])
def test_ratings_piled_at_the_top_keep_the_systems_apart(seed):
    """A 1-3 scale with most ratings at the top (skewed true scores, not the model's; 100
    responses per system, half rated twice): with the defaults, the ordinal fit's largest system
    difference is within 25% of the latent truth and at least 1.5 times the normal fit's, which the
    piled-up ratings compress (seeds 5, 6: 1.75 and 1.38 against 0.88 and 0.63, truth 1.6;
    ``models/judges.md``)."""
    sim = simulate_judges(n_systems=3, n_responses=100, human_share=0.5, score_range=(1, 3), spread=0.8, random_seed=seed)
    tables = sim["human_ratings"], sim["judge_scores"], sim["systems"]
    assert (sim["human_ratings"]["score"] == 3).mean() > 0.5
    gaps = {}
    for observation in ("normal", "ordinal"):
        result = fit_judges(*tables, observation=observation, score_range=(1, 3), random_seed=seed, progressbar=False)
        assert result.convergence.divergences == 0
        gaps[observation] = -result.difference_table().loc[("system0", "system2"), "mean"]
    truth = sim["truth"]["panel_mean"]["system2"] - sim["truth"]["panel_mean"]["system0"]
    assert 0 < gaps["normal"] < 0.7 * truth
    assert abs(gaps["ordinal"] / truth - 1) < 0.25 and gaps["ordinal"] > 1.5 * gaps["normal"]
