"""The many-facet model's per-response adaptive quadrature (bayes_raters.facets.adaptive):
the adaptive marginal equals the shared rule's (NumPy and the PyTensor model alike) on a design
whose responses have 2 to 160 ratings, and the fit switches to it only where the shared rule is
large."""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd
import pytensor.tensor as pt
import pytest
from scipy import stats

from bayes_raters.facets.adaptive import ADAPTIVE_NODES, adaptive_error, adaptive_marginal, uses_adaptive
from bayes_raters.facets.draws import node_loglik_at
from bayes_raters.facets.model import adaptive_node_loglik, adaptive_true_score, build_facets_model, newton_centres
from bayes_raters.facets.simulate import simulate_course_ratings, simulate_facet_ratings
from bayes_raters.quadrature import conditional_moments, marginal_loglik


def _uneven_ratings(heavy_ratings: int = 160):
    """40 responses rated twice by 10 raters, and one response rated by ``heavy_ratings`` other raters."""
    ratings, systems, _ = simulate_facet_ratings(40, 10, 1, 5, raters_per_response=2, random_seed=7)
    rng = np.random.default_rng(7)
    heavy = pd.DataFrame({"response": "heavy", "prompt": "p0", "rater": [f"x{i}" for i in range(heavy_ratings)],
                          "score": rng.choice([3, 4, 5], heavy_ratings, p=[0.2, 0.5, 0.3])})
    systems = pd.concat([systems, pd.DataFrame({"response": ["heavy"], "system": ["engine"], "score": [4.2]})])
    return pd.concat([ratings, heavy], ignore_index=True), systems


def _parameters(info, seed):
    rng = np.random.default_rng(seed)
    layout = info["layout"]
    a = rng.lognormal(0.1, 0.2, len(layout.raters))
    location = rng.normal(0, 0.5, (len(layout.raters), 1))
    system = (np.array([3.0]), np.array([0.9]), np.array([0.4])) if info["arrays"] is not None else None
    return a, location, np.sort(rng.normal(0, 1.5, layout.n_categories - 1)), system


def test_adaptive_marginal_matches_the_shared_rule_for_light_and_heavy_responses():
    ratings, systems = _uneven_ratings()
    for scores in (None, systems):
        model = build_facets_model(ratings, scores)
        info = model.facets
        assert uses_adaptive(model)  # the 160-rating response makes the shared rule large
        for seed in (1, 2):
            a, location, thresholds, system = _parameters(info, seed)
            node_ll = node_loglik_at(a, location, thresholds, system, info["layout"], info["rule"], info["arrays"])
            shared = marginal_loglik(node_ll, info["rule"].log_weights)
            default = np.abs(adaptive_marginal(a, location, thresholds, system, info, ADAPTIVE_NODES) - shared)
            assert default.max() < 5e-4  # light responses: skewed conditionals (7 nodes: 1e-4)
            assert np.abs(adaptive_marginal(a, location, thresholds, system, info, 13) - shared).max() < 5e-5
            assert np.abs(adaptive_marginal(a, location, thresholds, system, info, 1) - shared).max() > 1e-3  # Laplace alone is not
            # the Newton centres sit at the conditional's mode: near its mean for the heavy response
            extra = None if system is None else (*info["arrays"][:2], *system)
            center, scale = newton_centres(a, location, thresholds, info["layout"], lib=np, systems=extra)
            mean, sd = conditional_moments(node_ll, info["rule"])
            assert abs(center[-1] - mean[-1]) < 0.1 * sd[-1] and abs(scale[-1] / sd[-1] - 1) < 0.05
            assert sd[-1] < 0.3 * np.median(sd)  # 160 ratings pin it down


def test_pytensor_adaptive_terms_equal_the_numpy_ones_and_the_error_check_can_fail():
    """The model's symbolic adaptive terms (Newton centres, ratings and true scores at each
    response's own nodes) equal the NumPy ones; ``adaptive_error`` reads the rule's error off
    posterior-shaped draws, and reports a 1-node rule (the Laplace approximation) as too coarse.
    (The whole fit runs on InstEval in ``tests/irt/test_real_data.py``, slow.)"""
    ratings, systems = _uneven_ratings(60)
    info = build_facets_model(ratings, systems).facets
    a, location, thresholds, system = _parameters(info, 1)
    layout = info["layout"]
    symbolic = [pt.as_tensor(v) for v in (a, location, thresholds)]
    scores = (*info["arrays"][:2], *system)
    for extra in (None, scores):
        symbolic_extra = None if extra is None else (*extra[:2], *[pt.as_tensor(v) for v in extra[2:]])
        got = newton_centres(*symbolic, layout, systems=symbolic_extra)
        want = newton_centres(a, location, thresholds, layout, lib=np, systems=extra)
        for g, w in zip(got, want):
            assert np.allclose(g.eval(), w, rtol=1e-10, atol=1e-12)
    z_units = np.linspace(-2, 2, 5)[None, :] + np.arange(len(layout.responses))[:, None] / 50
    for term in (adaptive_node_loglik, adaptive_true_score):
        got = term(*symbolic, pt.as_tensor(z_units), layout).eval()
        assert np.allclose(got, term(a, location, thresholds, z_units, layout, lib=np), rtol=1e-10, atol=1e-10)
    fake = _fake_posterior(info)
    assert adaptive_error(fake, info, ADAPTIVE_NODES) < 5e-4
    assert adaptive_error(fake, info, 1) > 1e-3


def _fake_posterior(info):
    import xarray as xr

    a, location, thresholds, system = _parameters(info, 1)
    layout = info["layout"]
    data = {"a": (("chain", "draw", "rater"), a[None, None]), "severity": (("chain", "draw", "rater"), location[None, None, :, 0]),
            "difficulty": (("chain", "draw", "prompt"), np.zeros((1, 1, 1))),
            "thresholds": (("chain", "draw", "threshold"), thresholds[None, None])}
    if system is not None:
        data |= {n: (("chain", "draw", "system"), v[None, None]) for n, v in zip(("alpha", "beta", "tau"), system)}
    return xr.Dataset(data, coords={"rater": layout.raters})


def test_course_ratings_are_skewed_uneven_and_reproducible():
    """The InstEval-shaped simulator: lecturers rated 12-200 times (so the fit takes the adaptive
    rule), skewed abilities, a heavy-tailed severity spread; same seed, same table."""
    ratings, truth = simulate_course_ratings(random_seed=4)
    counts = ratings.groupby("response").size()
    assert counts.max() == 200 and counts.min() == 12 and len(counts) == 40
    assert not ratings.duplicated(["response", "rater"]).any()  # a student rates a lecturer once
    assert set(ratings["score"]) <= {1, 2, 3, 4, 5} and ratings["prompt"].nunique() == 1
    _, many = simulate_course_ratings(n_lecturers=2000, n_students=300, most=2, random_seed=1)
    assert stats.skew(many["theta"]) > 1.0 and abs(truth["severity"].mean()) < 1e-12  # Gamma(2): 1.41
    assert uses_adaptive(build_facets_model(ratings, consistency=False))
    again, _ = simulate_course_ratings(random_seed=4)
    pd.testing.assert_frame_equal(ratings, again)


def _course_fit(seed):
    """One Rasch-form fit of a simulated course evaluation (a fresh process per fit)."""
    import warnings

    from bayes_raters.errors import ConvergenceWarning
    from bayes_raters.facets import fit_facets

    ratings, truth = simulate_course_ratings(random_seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # judged below, with the margin the docstring gives
        result = fit_facets(ratings, consistency=False, random_seed=seed, cores=1, progressbar=False)
    lecturers = result.response_table(0.9).reindex([f"l{i}" for i in range(len(truth["theta"]))])
    students = result.rater_table(0.9).reindex([f"s{i}" for i in range(len(truth["severity"]))])
    rated = students["n_ratings"].notna().to_numpy()
    theta, severity, rows = truth["theta"], truth["severity"][rated], students[rated]
    return {
        "seed": seed, "quadrature": result.inference.quadrature, "error": result.inference.quadrature_error,
        "max_r_hat": result.report.max_r_hat, "min_ess": result.report.min_ess_bulk, "divergences": result.report.divergences,
        "corr_theta": np.corrcoef(lecturers["theta_mean"], theta)[0, 1],
        "theta_hits": int(((lecturers["theta_lower"] <= theta) & (theta <= lecturers["theta_upper"])).sum()), "n_theta": len(theta),
        "corr_severity": np.corrcoef(rows["severity_mean"], severity)[0, 1],
        "severity_hits": int(((rows["severity_lower"] <= severity) & (severity <= rows["severity_upper"])).sum()),
        "n_severity": len(severity),
    }


@pytest.mark.slow
def test_rasch_form_with_adaptive_rule_recovers_course_ratings_not_drawn_from_its_priors():
    """Issue 36: the many-facet Rasch form (logit-scale severities) with the per-response adaptive
    rule, on three simulated course evaluations whose parameters are NOT from the priors
    (:func:`simulate_course_ratings`: skewed abilities, t-distributed severities, thresholds 0.1
    apart; 2,702 ratings, lecturers rated 12-200 times). The adaptive rule is chosen and its error
    stays under the tolerance; pooled 90% coverage of the lecturers' abilities (120 intervals) and
    of the students' severities (600) within 0.85-0.97; corr >= 0.95 and >= 0.8 with the truth.
    Convergence: no divergence and max R-hat < 1.02 (the largest of ~250 parameters' R-hats over
    2 chains of 1,000 draws; measured 1.008-1.015, one seed above the package's 1.01 rule, which
    is why the fit warns there)."""
    with ProcessPoolExecutor(os.cpu_count() or 2, mp_context=multiprocessing.get_context("forkserver")) as pool:
        table = pd.DataFrame(list(pool.map(_course_fit, [1, 2, 3])))
    print("\n" + table.round(4).to_string())
    assert table["quadrature"].str.startswith("adaptive").all() and (table["error"] < 1e-3).all()
    assert (table["divergences"] == 0).all() and (table["max_r_hat"] < 1.02).all() and (table["min_ess"] >= 400).all()
    assert 0.85 <= table["theta_hits"].sum() / table["n_theta"].sum() <= 0.97
    assert 0.85 <= table["severity_hits"].sum() / table["n_severity"].sum() <= 0.97
    assert (table["corr_theta"] >= 0.95).all() and (table["corr_severity"] >= 0.8).all()
