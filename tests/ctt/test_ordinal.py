"""The ordinal true-score model with T integrated out, against a direct numerical integral
over T of the same generative model (Simpson's rule on a fine grid per response)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytensor
import pytest
from scipy import integrate
from scipy.special import log_ndtr

from bayes_raters.ctt import build_true_score_model, ordinal
from bayes_raters.ctt.model import TrueScoreSpec, model_data, validate_true_score_inputs
from bayes_raters.ctt.ordinal_units import ordinal_units


def _data(seed: int, n: int = 24):
    """Responses with one, two and three ratings (raters a-d, offsets and SDs differ), one
    system; a few identical responses so that pooling is exercised."""
    rng = np.random.default_rng(seed)
    true = rng.normal(3.5, 1.0, n)
    offsets = {"a": -0.3, "b": 0.0, "c": 0.2, "d": 0.4}
    sds = {"a": 0.3, "b": 0.5, "c": 0.7, "d": 0.4}
    rows = []
    for i in range(n):
        for rater in list(offsets)[: 1 + i % 3]:
            rows.append((i, rater, float(np.clip(np.round(true[i] + offsets[rater] + rng.normal(0, sds[rater])), 1, 6))))
    ratings = pd.DataFrame(rows, columns=["response", "rater", "score"])
    system = pd.DataFrame({"response": np.arange(n), "system": "m", "score": np.round(true + rng.normal(0, 0.5, n), 1)})
    return ratings, system


def _log_rating(t, score, offset, sd):
    cuts = np.concatenate([[-np.inf], np.arange(1, 6) + 0.5, [np.inf]])
    k = int(score) - 1
    hi, lo = (cuts[k + 1] - t - offset) / sd, (cuts[k] - t - offset) / sd
    with np.errstate(divide="ignore"):
        return np.log(np.exp(log_ndtr(hi)) - np.exp(log_ndtr(lo)))


def _reference(ratings, system, p):
    """Per response: log of int N(t; mu, sigma_T) N(M | alpha + beta (t - c0), tau) prod_j
    P(H_j | t) dt, and the mean and variance of T given the data, by Simpson's rule on a fine
    grid (within 1e-11 of scipy.integrate.quad at relative tolerance 1e-12, checked on two
    parameter sets of this data, in a tenth of the time)."""
    out = []
    for response, frame in ratings.groupby("response"):
        m_score = system.loc[system["response"] == response, "score"].iloc[0]

        def log_f(t):
            value = -0.5 * ((t - p["mu"]) / p["sigma_T"]) ** 2 - np.log(p["sigma_T"] * np.sqrt(2 * np.pi))
            mean_m = p["alpha"] + p["beta"] * (t - p["c0"])
            value += -0.5 * ((m_score - mean_m) / p["tau"]) ** 2 - np.log(p["tau"] * np.sqrt(2 * np.pi))
            for rater, score in zip(frame["rater"], frame["score"]):
                value += _log_rating(t, score, p["offset"][rater], p["sd"][rater])
            return value

        grid = np.linspace(-6, 13, 76001)  # spacing 0.00025 against conditional SDs of 0.1 or more
        log_density = log_f(grid)
        top = log_density.max()
        density = np.exp(log_density - top)
        moments = [integrate.simpson(grid**j * density, x=grid) for j in range(3)]
        mean = moments[1] / moments[0]
        out.append((np.log(moments[0]) + top, mean, moments[2] / moments[0] - mean**2, m_score))
    return pd.DataFrame(out, columns=["loglik", "mean", "var", "m"])


_COMPUTED = ["mu", "sigma_T", "alpha", "beta", "tau", "rater_offset", "sigma_rater", "marginal_likelihood", "mse_true", "true_score_variance"]


@pytest.fixture(scope="module")
def compiled_model():
    """The model of ``_data(5)`` and one compiled function of the quantities compared (built
    once for both shifts: the compilation is most of the test's time)."""
    ratings, system = _data(5)
    model = build_true_score_model(ratings, system, observation="ordinal", score_range=(1, 6), rater_effects=True, rater_error="rater")
    outputs = model.replace_rvs_by_values([model[name] for name in _COMPUTED])
    return ratings, system, model, pytensor.function(model.value_vars, outputs, on_unused_input="ignore")


@pytest.mark.parametrize("shift", [0.0, 0.4])
def test_marginal_likelihood_and_prmse_match_integration_over_t(shift, compiled_model):
    ratings, system, model, evaluate = compiled_model
    names = _COMPUTED
    point = {key: value + shift for key, value in model.initial_point().items()}
    values = dict(zip(names, evaluate(*[point[v.name] for v in model.value_vars])))
    raters = list(model.coords["rater"])
    params = {
        "mu": values["mu"], "sigma_T": values["sigma_T"], "alpha": values["alpha"][0], "beta": values["beta"][0],
        "tau": values["tau"][0], "c0": 3.5,
        "offset": dict(zip(raters, values["rater_offset"])), "sd": dict(zip(raters, values["sigma_rater"])),
    }
    reference = _reference(ratings, system, params)
    assert values["marginal_likelihood"] == pytest.approx(reference["loglik"].sum(), abs=1e-5)
    n = len(reference)
    var_t = (np.sum((reference["mean"] - reference["mean"].mean()) ** 2) + (1 - 1 / n) * reference["var"].sum()) / n
    mse = np.mean((reference["m"] - reference["mean"]) ** 2 + reference["var"])
    assert values["true_score_variance"] == pytest.approx(var_t, rel=1e-5)
    assert values["mse_true"][0] == pytest.approx(mse, rel=1e-5)
    if shift == 0.0:
        _check_conditional_draws(model, ratings, system, values, reference)


def _check_conditional_draws(model, ratings, system, values, reference):
    """4,000 draws of every T_i from its conditional (one rating: truncated normal then T | U;
    more: grid + MH) have the quadrature mean and variance within 4.5 standard errors."""
    spec = TrueScoreSpec(observation="ordinal", score_range=(1, 6), rater_effects=True, rater_error="rater")
    rated, scored = validate_true_score_inputs(ratings, system, spec)
    data = model_data(rated, scored, spec, None)
    units = ordinal_units(data, 1, raters_matter=True)
    params = ordinal.OrdinalParameters(
        values["mu"], values["sigma_T"], values["alpha"], values["beta"], values["tau"], values["rater_offset"],
        values["sigma_rater"], ordinal.padded_cutpoints(np.arange(1, 6) + 0.5, np), data.center,
    )
    rng = np.random.default_rng(3)
    draws = np.array([ordinal.draw_true_scores(units, params, rng) for _ in range(4000)])
    sd = np.sqrt(reference["var"].to_numpy())
    assert np.all(np.abs(draws.mean(axis=0) - reference["mean"].to_numpy()) < 4.5 * sd / np.sqrt(4000))
    assert np.all(np.abs(draws.var(axis=0) / reference["var"].to_numpy() - 1) < 4.5 * np.sqrt(2 / 4000))


def test_identical_responses_share_a_unit():
    ratings, system = _data(5)
    copies = pd.concat([ratings.assign(response=ratings["response"] + 100 * k) for k in range(3)])
    systems = pd.concat([system.assign(response=system["response"] + 100 * k) for k in range(3)])
    spec = TrueScoreSpec(observation="ordinal", score_range=(1, 6))
    rated, scored = validate_true_score_inputs(copies, systems, spec)
    units = ordinal_units(model_data(rated, scored, spec, None), 1, raters_matter=False)
    assert units.n_units == 24 and units.count.sum() == 72
    assert (units.single.size, units.pair.size, units.multi.size) == (8, 8, 8)


def test_jax_samplers_are_refused_with_advice():
    ratings, system = _data(5)
    from bayes_raters.ctt import fit_true_score
    from bayes_raters.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="nuts_sampler='nutpie'"):
        fit_true_score(ratings, system, observation="ordinal", score_range=(1, 6), nuts_sampler="numpyro")


def _many(n: int, rater_sd: float, system_sd: float, seed: int = 5):
    """n responses, a fifth double-scored, one system with noise ``system_sd``."""
    rng = np.random.default_rng(seed)
    true = rng.normal(3.5, 1.0, n)
    both = rng.random(n) < 0.2
    first = np.clip(np.round(true + rng.normal(0, rater_sd, n)), 1, 6)
    second = np.clip(np.round(true + rng.normal(0, rater_sd, n)), 1, 6)
    ratings = pd.concat([
        pd.DataFrame({"response": np.arange(n), "rater": "a", "score": first}),
        pd.DataFrame({"response": np.flatnonzero(both), "rater": "b", "score": second[both]}),
    ])
    system = pd.DataFrame({"response": np.arange(n), "system": "m", "score": true + rng.normal(0, system_sd, n)})
    return ratings, system


def _logp_and_prmse(ratings, system, nodes: int, monkeypatch, rater_sd: float, system_sd: float):
    """Model log density, PRMSE and true-score variance at 6 points around the simulated
    rater and system SDs (the sharpest likelihood the data support)."""
    from bayes_raters.ctt import ordinal_units as unit_module

    monkeypatch.setattr(unit_module, "GRID_NODES", nodes)
    model = build_true_score_model(ratings, system, observation="ordinal", score_range=(1, 6))
    outs = model.replace_rvs_by_values([model["prmse"], model["true_score_variance"]])
    f = pytensor.function(model.value_vars, [model.logp(), *outs], on_unused_input="ignore")
    start, rng = model.initial_point(), np.random.default_rng(0)
    rows = []
    for _ in range(6):
        point = {k: v + rng.normal(0, 0.15, np.shape(v)) for k, v in start.items()}
        point["sigma_e_log__"] = np.log(rater_sd) + rng.normal(0, 0.2)
        point["tau_log__"] = np.log(system_sd) + rng.normal(0, 0.2, np.shape(start["tau_log__"]))
        rows.append([float(np.ravel(o)[0]) for o in f(*[point[v.name] for v in model.value_vars])])
    return np.array(rows), len(model.coords["unit"])


@pytest.mark.parametrize("rater_sd, system_sd", [(0.5, 0.5), (0.05, 0.02)])
def test_grid_of_system_scores_matches_the_unit_sums(rater_sd, system_sd, monkeypatch):
    """Rating patterns with more than GRID_NODES units become Chebyshev pseudo-units
    (``on_grid``): log density within 1e-9 per response and PRMSE / true-score variance within
    1e-9 relative of the unit-by-unit sums, also for near-noiseless raters and system (0.05,
    0.02; measured 1e-10 there at 128 nodes, 9e-7 per response at 64 nodes)."""
    ratings, system = _many(3000, rater_sd, system_sd)
    exact, n_exact = _logp_and_prmse(ratings, system, 10**9, monkeypatch, rater_sd, system_sd)
    grid, n_grid = _logp_and_prmse(ratings, system, 128, monkeypatch, rater_sd, system_sd)
    assert n_grid < n_exact / 2  # the single-rating patterns were compressed
    assert np.all(np.abs(grid[:, 0] - exact[:, 0]) < 1e-9 * 3000 + 1e-12 * np.abs(exact[:, 0]))  # + rounding of the sum
    assert np.max(np.abs(grid[:, 1:] / exact[:, 1:] - 1)) < 1e-9


def test_barycentric_weights_reproduce_polynomials_and_nodes():
    from bayes_raters.ctt.ordinal_units import barycentric_weights, chebyshev_points

    nodes = chebyshev_points(-1.0, 4.0, 9)
    x = np.concatenate([np.linspace(-1.0, 4.0, 57), nodes[[0, 3]]])
    weights = barycentric_weights(x, nodes)
    poly = np.polynomial.Polynomial([0.3, -1.0, 0.5, 0.2, -0.05, 0.01, 0.0, 0.002, -0.0003])
    np.testing.assert_allclose(weights @ poly(nodes), poly(x), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-13)
    np.testing.assert_array_equal(weights[-2:], np.eye(9)[[0, 3]])


def test_default_sampler_is_nutpie_and_repeats_its_draws(monkeypatch):
    """The ordinal model's default sampler is nutpie (low-rank adaptation, chains in threads),
    and the same seed gives the same draws whatever the thread count. That the default
    converges is checked at full length by the CLI test (``--observation ordinal``: R-hat < 1.01,
    ESS > 400); measured here at 2 x (1,000 + 1,000) over seeds 7-9: max R-hat 1.004-1.008,
    min bulk ESS 1,929-2,480, tail 1,188-1,246. The two fits build the same model from the same
    data, so the second samples from the first's nutpie compile (the draws under test come from
    the sampler, not the compiler; a compile is most of such a fit)."""
    import warnings

    import nutpie

    compiled, compile_pymc_model = [], nutpie.compile_pymc_model

    def compile_once(*args, **kwargs):
        if not compiled:
            compiled.append(compile_pymc_model(*args, **kwargs))
        return compiled[0]

    monkeypatch.setattr(nutpie, "compile_pymc_model", compile_once)
    from bayes_raters.ctt import fit_true_score
    from bayes_raters.errors import ConvergenceWarning

    ratings, system = _many(2000, 0.5, 0.5, seed=8)
    settings = {"observation": "ordinal", "score_range": (1, 6), "random_seed": 7, "draws": 100, "tune": 100}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # 100 draws: enough to compare, not to converge
        short = [fit_true_score(ratings, system, cores=c, **settings) for c in (1, 2)]
    assert short[0].inference.sampler == "nutpie" and len(compiled) == 1
    for name in ("prmse", "sigma_e", "mu"):
        np.testing.assert_array_equal(short[0].posterior[name].values, short[1].posterior[name].values)


def test_integer_ratings_from_close_raters_point_to_the_ordinal_model():
    """'high' raters of the Loukina design (within-response variance about 0.13) get a
    RoundingWarning whose advice names both the Python keywords and the CLI flags; 'average'
    raters (about 0.29), non-integer ratings and too few double-scored responses do not."""
    import warnings

    from bayes_raters import RoundingWarning
    from bayes_raters.ctt import double_scored_subset, simulate_dataset
    from bayes_raters.ctt.fit import ROUNDING_VARIANCE, warn_if_rounding_dominates

    data = simulate_dataset(2000, raters_per_category=2, systems_per_category=1, random_seed=1)
    high = double_scored_subset(data, ("h_7", "h_8"), 1000, random_seed=1)
    with pytest.warns(RoundingWarning, match="observation='ordinal', score_range=") as caught:
        pooled = warn_if_rounding_dominates(high)
    assert "--observation ordinal --score-range" in str(caught[0].message)
    assert 0.1 < pooled < ROUNDING_VARIANCE
    average = double_scored_subset(data, ("h_5", "h_6"), 1000, random_seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RoundingWarning)
        assert ROUNDING_VARIANCE < warn_if_rounding_dominates(average) < 0.4
        assert warn_if_rounding_dominates(high.assign(score=high["score"] + 0.25)) is None  # not integers
        double = high.groupby("response")["rater"].transform("size") == 2
        few = high[~double | high["response"].isin(high.loc[double, "response"].unique()[:20])]
        assert warn_if_rounding_dominates(few) is None  # 20 double-scored responses: not judged
