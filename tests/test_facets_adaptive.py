"""The many-facet model's per-response adaptive quadrature (bayes_raters.irt.facets_adaptive):
the adaptive marginal equals the shared rule's (NumPy and the PyTensor model alike) on a design
whose responses have 2 to 160 ratings, and the fit switches to it only where the shared rule is
large."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytensor.tensor as pt

from bayes_raters.irt.facets import adaptive_node_loglik, adaptive_true_score, build_facets_model
from bayes_raters.irt.facets_adaptive import ADAPTIVE_NODES, adaptive_error, adaptive_marginal, uses_adaptive
from bayes_raters.irt.facets_draws import node_loglik_at
from bayes_raters.irt.facets_simulate import simulate_facet_ratings
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
        a, location, thresholds, system = _parameters(info, 1)
        node_ll = node_loglik_at(a, location, thresholds, system, info["layout"], info["rule"], info["arrays"])
        shared = marginal_loglik(node_ll, info["rule"].log_weights)
        center, scale = conditional_moments(node_ll, info["rule"])
        same = adaptive_marginal(a, location, thresholds, system, info, center, scale, ADAPTIVE_NODES)
        assert np.abs(same - shared).max() < 5e-4  # light responses: skewed conditionals (7 nodes: 1.5e-4)
        # centres from nearby parameters (a posterior draw away from the mode): still close, and
        # the heavy response's conditional has moved by more than its own SD
        rng = np.random.default_rng(3)
        a2, location2 = a * np.exp(rng.normal(0, 0.1, a.shape)), location + rng.normal(0, 0.1, location.shape)
        other_ll = node_loglik_at(a2, location2, thresholds + 0.1, system, info["layout"], info["rule"], info["arrays"])
        center2, scale2 = conditional_moments(other_ll, info["rule"])
        assert np.abs(center2 - center)[-1] > scale[-1]
        moved = adaptive_marginal(a, location, thresholds, system, info, center2, scale2, ADAPTIVE_NODES)
        assert np.abs(moved - shared).max() < 5e-4
        # and a far-off centre is not: the check that guards the fit can fail
        far = adaptive_marginal(a, location, thresholds, system, info, center2 + 5 * scale2, scale2, ADAPTIVE_NODES)
        assert np.abs(far - shared).max() > 1e-3


def test_pytensor_adaptive_terms_equal_the_numpy_ones_and_the_error_check_can_fail():
    """The model's symbolic adaptive terms (ratings and true scores at each response's own
    nodes) equal the NumPy ones, and ``adaptive_error`` tells good centres from bad. (The
    centres found at the posterior mode, ``mode_moments``, and the whole fit are exercised on
    InstEval in ``tests/test_irt_real_data.py``, slow.)"""
    ratings, systems = _uneven_ratings(60)
    info = build_facets_model(ratings, systems).facets
    a, location, thresholds, system = _parameters(info, 1)
    node_ll = node_loglik_at(a, location, thresholds, system, info["layout"], info["rule"], info["arrays"])
    center, scale = conditional_moments(node_ll, info["rule"])
    z_units = center[:, None] + scale[:, None] * np.linspace(-2, 2, 5)
    layout = info["layout"]
    for term in (adaptive_node_loglik, adaptive_true_score):
        symbolic = term(pt.as_tensor(a), pt.as_tensor(location), pt.as_tensor(thresholds), pt.as_tensor(z_units), layout).eval()
        assert np.allclose(symbolic, term(a, location, thresholds, z_units, layout, lib=np), rtol=1e-10, atol=1e-10)
    fake = _fake_posterior(info)
    assert adaptive_error(fake, {**info, "adaptive": (center, scale, ADAPTIVE_NODES)}, ADAPTIVE_NODES) < 5e-4
    assert adaptive_error(fake, {**info, "adaptive": (center + 5 * scale, scale, ADAPTIVE_NODES)}, ADAPTIVE_NODES) > 1e-3


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
