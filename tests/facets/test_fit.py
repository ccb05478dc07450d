"""The many-facet rater model (bayes_raters.facets.model): the category table, the marginal
against scipy, input checks, and one small fit with a planted erratic rater. The pooled
severity coverage over replications is slow (tests/irt/test_validation.py)."""

from __future__ import annotations

import dataclasses
import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pymc as pm
import pytest
from scipy import integrate, stats

from bayes_raters.errors import InputWarning, InsufficientDataError, InvalidInputError, PersistenceError
from bayes_raters.facets.draws import pair_items, rating_logits, rating_loglik_at, true_scores_at
from bayes_raters.facets.fit import _sample_forms, fit_facets
from bayes_raters.facets.model import (
    build_facets_model,
    category_table,
    facet_layout,
    rating_node_loglik,
    true_score_curve,
    validate_facet_ratings,
)
from bayes_raters.facets.result import FacetsResult
from bayes_raters.facets.simulate import simulate_facet_ratings
from bayes_raters.quadrature import marginal_loglik, trapezoid_rule
from bayes_raters.sampling import RefinedFit


def _parameters(layout, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.lognormal(0.2, 0.3, len(layout.raters))
    location = rng.normal(0, 0.5, (len(layout.raters), len(layout.prompts)))
    return a, location, np.sort(rng.normal(0, 1.5, layout.n_categories - 1))


def test_category_table_is_the_adjacent_category_model_in_numpy_and_pytensor():
    ratings, _, _ = simulate_facet_ratings(40, 4, 2, 5, random_seed=1)
    layout = facet_layout(*validate_facet_ratings(ratings))
    a, location, thresholds = _parameters(layout)
    theta = np.array([-1.3, 0.0, 0.7])
    table = category_table(a, location, thresholds, theta, lib=np)
    assert np.allclose(np.exp(table).sum(axis=2), 1.0)
    # log P(k) - log P(k - 1) = a_r (theta - location - tau_k)
    adjacent = np.diff(table, axis=2)
    expected = a[:, None, None, None] * (theta[None, None, None, :] - location[:, :, None, None] - thresholds[None, None, :, None])
    assert np.allclose(adjacent, expected)
    symbolic = category_table(a, location, thresholds, theta).eval()
    assert np.allclose(symbolic, table)
    nodes = rating_node_loglik(table, layout, 3, lib=np)
    assert np.allclose(rating_node_loglik(symbolic, layout, 3).eval(), nodes)
    # the rating-by-rating form agrees with the table form at a common theta
    direct = rating_logits(a, location, thresholds, np.full(len(layout.responses), 0.7), layout)
    summed = np.bincount(layout.unit, direct[np.arange(len(direct)), layout.category], len(layout.responses))
    assert np.allclose(summed, nodes[:, 2])


@pytest.mark.parametrize("spread", [1.0, 60.0, 400.0])
def test_compiled_rating_loglik_is_the_category_model_at_every_ability(spread):
    """The compiled per-unit log-likelihood (each rater-prompt pair as a GPCM item) equals the
    NumPy category model summed over each unit's ratings, also where the polynomial form
    overflows (abilities of +-60 and +-400 take the kernel's log-sum-exp fallback)."""
    ratings, _, _ = simulate_facet_ratings(40, 4, 2, 5, random_seed=1)
    layout = facet_layout(*validate_facet_ratings(ratings))
    a, location, thresholds = _parameters(layout)
    z = np.random.default_rng(3).normal(0.0, spread, len(layout.responses))
    logits = rating_logits(a, location, thresholds, z, layout)
    summed = np.bincount(layout.unit, logits[np.arange(len(logits)), layout.category], len(layout.responses))
    compiled = rating_loglik_at(pair_items(a, location, thresholds), z, layout)
    assert np.all(np.isfinite(compiled))
    assert np.allclose(compiled, summed, rtol=1e-10, atol=1e-9)


def test_true_score_on_nodes_matches_true_score_at_points():
    ratings, _, _ = simulate_facet_ratings(30, 5, 3, 6, random_seed=2)
    layout = facet_layout(*validate_facet_ratings(ratings))
    a, location, thresholds = _parameters(layout, 1)
    z = np.array([-300.0, -2.0, 0.3, 1.5, 300.0])  # +-300: the compiled curve's overflow fallback
    on_nodes = true_score_curve(category_table(a, location, thresholds, z, lib=np), layout.score_values, layout.unit_prompts, lib=np)
    for q, point in enumerate(z):
        assert np.allclose(true_scores_at(a, location, thresholds, np.full(len(layout.responses), point), layout), on_nodes[:, q])
    assert np.all(np.diff(on_nodes, axis=1) > 0)  # more ability, higher expected score


@pytest.mark.parametrize("with_system", [False, True])
def test_block_of_draws_equals_each_draw_alone(with_system):
    """The ability draws evaluate a block of posterior draws at once (node tables side by side,
    every draw's units offset into one problem); each draw of the block must equal the model's
    own NumPy forms for that draw alone (facets.py's category table, rating rows, true-score curve
    and system term) and the rating-by-rating category model at a point."""
    from bayes_raters.facets.draws import draw_parameters, node_logliks, system_loglik, true_scores_from
    from bayes_raters.facets.model import system_arrays, system_node_loglik

    ratings, systems, _ = simulate_facet_ratings(30, 5, 2, 6, random_seed=7)
    table, scores = validate_facet_ratings(ratings)
    layout = facet_layout(table, scores)
    arrays = system_arrays(systems, layout) if with_system else None
    rule = trapezoid_rule(21, 5.0)
    rng = np.random.default_rng(5)
    n, n_raters, n_prompts = 3, len(layout.raters), len(layout.prompts)
    params = {"a": rng.lognormal(0, 0.3, (n, n_raters)), "severity": rng.normal(0, 0.5, (n, n_raters)),
              "difficulty": rng.normal(0, 0.3, (n, n_prompts)), "thresholds": np.sort(rng.normal(0, 1.5, (n, layout.n_categories - 1)), axis=1)}
    system = None
    if with_system:
        k = arrays[0].shape[1]
        params |= {"alpha": rng.normal(3, 0.2, (n, k)), "beta": rng.normal(1, 0.1, (n, k)), "tau": rng.gamma(4, 0.1, (n, k))}
        system = tuple(params[x] for x in ("alpha", "beta", "tau"))
    a, location, thresholds = draw_parameters(params, slice(0, n))
    block = node_logliks(a, location, thresholds, system, layout, rule, arrays)
    z = rng.normal(0, 1.2, (n, len(layout.responses)))
    items = pair_items(a, location, thresholds)
    ratings_at, true_at = rating_loglik_at(items, z, layout), true_scores_from(items, z, layout)
    for d in range(n):
        log_p = category_table(a[d], location[d], thresholds[d], rule.nodes, lib=np)
        alone = rating_node_loglik(log_p, layout, len(rule), lib=np)
        if with_system:
            true_nodes = true_score_curve(log_p, layout.score_values, layout.unit_prompts, lib=np)
            alone = alone + system_node_loglik(true_nodes, arrays[0], arrays[1], *(x[d] for x in system), layout.score_center, lib=np)
        np.testing.assert_allclose(block[d], alone, rtol=1e-12, atol=1e-10)
        logits = rating_logits(a[d], location[d], thresholds[d], z[d], layout)
        summed = np.bincount(layout.unit, logits[np.arange(len(logits)), layout.category], len(layout.responses))
        np.testing.assert_allclose(ratings_at[d], summed, rtol=1e-10, atol=1e-9)
        np.testing.assert_allclose(true_at[d], true_scores_at(a[d], location[d], thresholds[d], z[d], layout), rtol=1e-12)
        if with_system:
            point = system_loglik(true_at[:, :, None], arrays[0], arrays[1], *system, layout.score_center)[d, :, 0]
            reference = system_node_loglik(true_at[d][:, None], arrays[0], arrays[1], *(x[d] for x in system), layout.score_center, lib=np)[:, 0]
            np.testing.assert_allclose(point, reference, rtol=1e-12)


def test_marginal_matches_scipy_for_a_response_rated_three_times():
    ratings, _, _ = simulate_facet_ratings(20, 5, 1, 6, raters_per_response=3, random_seed=3)
    layout = facet_layout(*validate_facet_ratings(ratings))
    a, location, thresholds = _parameters(layout, 2)
    a[0] = 3.0  # a steep rater: the spacing rule must still hold
    rule = build_facets_model(ratings).facets["rule"]
    ours = marginal_loglik(rating_node_loglik(category_table(a, location, thresholds, rule.nodes, lib=np), layout, len(rule), lib=np), rule.log_weights)
    for unit in (0, 1):
        def integrand(z, unit=unit):
            point = np.full(len(layout.responses), z)
            logits = rating_logits(a, location, thresholds, point, layout)
            rows = layout.unit == unit
            return np.exp(logits[rows, layout.category[rows]].sum()) * stats.norm.pdf(z)
        exact, _ = integrate.quad(integrand, -10, 10, epsabs=0, epsrel=1e-11, limit=200)
        assert abs(ours[unit] - np.log(exact)) < 1e-6


def test_bad_ratings_get_clear_errors():
    ratings, systems, _ = simulate_facet_ratings(40, 4, 2, 5, random_seed=4)
    with pytest.raises(InvalidInputError, match="whole-number"):
        validate_facet_ratings(ratings.assign(score=ratings["score"] + 0.5))
    with pytest.raises(InsufficientDataError, match="two raters"):
        validate_facet_ratings(ratings.drop_duplicates(["response", "prompt"]).assign(rater="only"))
    with pytest.raises(InvalidInputError, match="every score is 3"):
        validate_facet_ratings(ratings.assign(score=3))
    with pytest.raises(InvalidInputError, match="prompt"):
        validate_facet_ratings(ratings.drop(columns="prompt"))
    renamed = ratings.rename(columns={"prompt": "task"})
    assert len(validate_facet_ratings(renamed, prompt="task")[0]) == len(ratings)
    gap = ratings.assign(score=np.where(ratings["score"] == 3, 2, ratings["score"]))
    with pytest.warns(InputWarning, match=r"score\(s\) \[3\]"):
        _, scores = validate_facet_ratings(gap)
    assert scores == [1.0, 2.0, 4.0, 5.0]
    stranger = pd.concat([systems, pd.DataFrame({"response": ["x"], "system": ["engine"], "score": [3.0]})])
    with pytest.raises(InvalidInputError, match=r"\['x'\] have no rating"):
        build_facets_model(ratings, stranger)


@pytest.fixture(scope="module")
def erratic_fit():
    ratings, systems, truth = simulate_facet_ratings(400, 8, 2, 6, erratic=(0,), random_seed=11)
    return fit_facets(ratings, systems, random_seed=11, progressbar=False), ratings, systems, truth


def test_fit_recovers_severities_and_flags_the_erratic_rater(erratic_fit):
    result, _, _, truth = erratic_fit
    assert result.convergence.converged, result.convergence
    table = result.rater_table(0.95).loc[[f"r{r}" for r in range(8)]]
    inside = (table["severity_lower"] <= truth["severity"]) & (truth["severity"] <= table["severity_upper"])
    assert inside.sum() >= 7  # 95% intervals; binomial(8, 0.95) gives >= 7 with probability 0.94
    assert np.corrcoef(table["severity_mean"], truth["severity"])[0, 1] > 0.9
    assert list(table.index[table["reasons"].str.contains("erratic")]) == ["r0"]
    assert list(table.index[table["flagged"]]) == ["r0"] and "severity_direction" in table
    assert not table["contradicts_slope"].any() and table.loc["r0", "reasons"] == "erratic"  # erratic, not reversed
    assert (table["reasons"].drop("r0") == "").all()
    assert table.loc["r0", "rest_corr"] < table["rest_corr"].drop("r0").min()
    assert table.loc["r0", "a_upper"] < table["a_lower"].drop("r0").min()
    thetas = result.response_table()
    assert np.corrcoef(thetas["theta_mean"], truth["theta"])[0, 1] > 0.85
    prmse = result.prmse_table().loc["engine"]
    t, m = truth["true_score"], erratic_fit[2]["score"].to_numpy()
    planted = 1 - ((m - t) ** 2).sum() / ((t - t.mean()) ** 2).sum()
    assert prmse["prmse_lower"] < planted < prmse["prmse_upper"]
    assert 0.1 < result.inference.theta_mh_acceptance <= 1.0
    # raters that differ and rate often: the centred form does not diverge, so it is kept and the
    # non-centred one never runs (its 2 divergences and 34 leapfrog steps per draw: card)
    assert result.inference.parametrisation == "centred"
    assert result.inference.divergences_by_form == {"centred": 0}
    # near-Gaussian posterior (Pareto k 0.62 <= 0.7): NUTS started from the Laplace approximation,
    # about 8 leapfrog steps per draw where the cold start took 12 (card)
    assert "300 tuning iterations" in result.inference.warm_start
    assert float(result.idata["sample_stats"]["n_steps"].mean()) < 10


def test_tables_loo_and_predictive(erratic_fit):
    result, ratings, _, _ = erratic_fit
    prompts = result.prompt_table()
    assert list(prompts.index) == ["p0", "p1"] and prompts["n_responses"].sum() == 400
    assert prompts["difficulty_mean"].sum() == pytest.approx(0.0, abs=1e-9)  # zero-sum prompts
    assert len(result.threshold_table()) == 5
    loo = result.loo()
    assert loo.elpd_i.shape == (400,)
    tree = result.sample_posterior_predictive(50, random_seed=1)
    replicated = tree["posterior_predictive"]["category"].values
    assert replicated.shape[-1] == len(ratings) and replicated.min() >= 0 and replicated.max() <= 5
    mean_rep = replicated.mean()
    assert abs(mean_rep - tree["observed_data"]["category"].values.mean()) < 0.15
    with pytest.raises(InvalidInputError, match="ci_prob"):
        result.rater_table(1.5)
    with pytest.raises(InvalidInputError, match="observation='ordinal'"):
        result.compare_with_true_score(object())
    ordinal_like = SimpleNamespace(spec=SimpleNamespace(observation="ordinal"))
    with pytest.raises(InvalidInputError, match=r"fit_facets\(ratings, system_scores\)"):
        dataclasses.replace(result, systems=None).compare_with_true_score(ordinal_like)


def test_save_load_round_trip(erratic_fit, tmp_path):
    result = erratic_fit[0]
    path = result.save(tmp_path / "facets.nc")
    again = FacetsResult.load(path)
    pd.testing.assert_frame_equal(again.prmse_table(), result.prmse_table())
    assert again.table[["response", "rater", "score"]].astype(str).equals(result.table[["response", "rater", "score"]].astype(str))
    assert again.spec.consistency and again.scores == result.scores and again.inference == result.inference
    (tmp_path / "bad.nc").write_bytes(b"not a netcdf file")
    with pytest.raises(PersistenceError):
        FacetsResult.load(tmp_path / "bad.nc")


def test_rasch_form_samples_the_logit_scale_and_reports_ability_units():
    """``consistency=False``: severities, difficulties and thresholds are free on the logit scale
    (what the data pin down) and reported in ability units, divided by the common a."""
    ratings, _, _ = simulate_facet_ratings(40, 4, 2, 5, random_seed=5)
    model = build_facets_model(ratings, consistency=False)
    free = {v.name for v in model.free_RVs}
    assert {"severity_logit", "difficulty_logit", "thresholds_logit"} <= free and "severity" not in free
    names = ["mu_log_a", "severity_logit", "severity", "difficulty_logit", "difficulty", "thresholds_logit", "thresholds", "a"]
    draws = dict(zip(names, pm.draw([model[n] for n in names], random_seed=1)))
    a = np.exp(draws["mu_log_a"])
    for name in ("severity", "difficulty", "thresholds"):
        assert np.allclose(draws[name], draws[f"{name}_logit"] / a)
    assert np.allclose(draws["a"], a)


def _fake_form(divergences):
    """A stand-in for one form's fit: its report's divergences and a warning naming the form."""
    def sample_form(form):
        warnings.warn(f"form {form}", UserWarning, stacklevel=2)
        report = SimpleNamespace(divergences=divergences[form])
        return RefinedFit("model", "idata", report, None, 0.0)
    return sample_form


C, C_SMALL_STEP, N = (True, 0.9), (True, 0.95), (False, 0.9)


@pytest.mark.parametrize(("divergences", "kept", "tried"), [
    ({C: 0, C_SMALL_STEP: 0, N: 5}, C, "centred: 0"),                                      # no divergence: one fit only
    ({C: 107, C_SMALL_STEP: 0, N: 0}, N, "centred: 107, non-centred: 0"),                  # SBC simulation 1 (card): a funnel
    ({C: 1, C_SMALL_STEP: 0, N: 28}, C_SMALL_STEP, "centred: 1, centred, target_accept 0.95: 0"),  # essays seed 16: a stray one
    ({C: 3, C_SMALL_STEP: 2, N: 9}, C_SMALL_STEP, "centred: 3, centred, target_accept 0.95: 2, non-centred: 9"),  # the fewest
    ({C: 30, C_SMALL_STEP: 0, N: 30}, C, "centred: 30, non-centred: 30"),                  # a tie keeps the centred form
])
def test_the_centred_form_runs_first_and_the_fewer_divergences_win(divergences, kept, tried):
    """``fit_facets(centred=None)``: after a few stray divergences (at most 1% of the 2,000
    draws) the centred form runs again with a smaller step, after more (or if they remain) the
    non-centred form; the fit with the fewest divergences is kept, and only its warnings reach
    the user."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (form, fit), counts = _sample_forms(_fake_form(divergences), None, 0.9, 2000)
    assert form is kept[0] and fit.report.divergences == divergences[kept]
    assert ", ".join(f"{k}: {v}" for k, v in counts.items()) == tried
    assert [str(w.message) for w in caught] == [f"form {kept}"]
    with pytest.warns(UserWarning, match=r"form \(False, 0.9\)"):  # a named form runs alone, once
        (form, _), counts = _sample_forms(_fake_form(divergences), False, 0.9, 2000)
    assert form is False and list(counts) == ["non-centred"]
    with pytest.warns(UserWarning, match=r"form \(True, 0.9\)"):
        (form, _), counts = _sample_forms(_fake_form(divergences), True, 0.9, 2000)
    assert form is True and list(counts) == ["centred"]


def test_non_centred_form_has_the_same_prior():
    """``centred=False`` reparametrises, it does not change the prior: the prior draws of the
    rater and prompt parameters match the centred model's (KS, 4,000 draws each)."""
    ratings, _, _ = simulate_facet_ratings(40, 5, 2, 5, random_seed=6)
    draws = {}
    for form in (True, False):
        model = build_facets_model(ratings, centred=form)
        draws[form] = pm.draw([model["log_a"], model["severity"], model["difficulty"]], draws=4000, random_seed=3)
        names = {v.name for v in model.free_RVs}
        assert ({"log_a", "severity", "difficulty"} <= names) is form
        assert ({"log_a_z", "severity_z", "difficulty_z"} <= names) is not form
    for centred, non_centred in zip(draws[True], draws[False]):
        for column in range(centred.shape[1]):
            assert stats.ks_2samp(centred[:, column], non_centred[:, column]).pvalue > 0.001


def test_the_log_density_graph_holds_no_data_as_constants():
    """The ratings' codes, the units' prompt shares, the system scores and the quadrature weights
    enter the graph as shared variables: as constants they were hashed into the compiled log
    density's Numba cache key, and every new data set paid a fresh compile (11.6-11.9 s on the
    essays). Only the score values (one per category) may be a constant."""
    from pytensor.graph.basic import Constant
    from pytensor.graph.traversal import ancestors

    ratings, systems, _ = simulate_facet_ratings(40, 4, 2, 5, random_seed=1)
    for adaptive in (None, 5):
        model = build_facets_model(ratings, systems, adaptive=adaptive)
        sizes = [np.asarray(v.data).size for v in ancestors([model.logp()]) if isinstance(v, Constant)]
        assert max(sizes) <= 5, sorted(sizes)[-5:]
