r"""Per-response adaptive quadrature for the many-facet model (:mod:`bayes_raters.irt.facets`).

Why. The shared trapezoid rule (:func:`~bayes_raters.irt.facets.facet_rule`) is sized for the
most-rated response, and every rating is evaluated at every node. Where responses differ
widely in their number of ratings that is wasteful: in lme4's InstEval subset (60 lecturers
rated 1-258 times each, ``tests/data/insteval/``) the most-rated lecturer needs 313 nodes, so
each of the 4,682 ratings costs 313 evaluations. An adaptive Gauss-Hermite rule centres each
response's nodes at its conditional mean :math:`m_i` and scales them by its conditional SD
:math:`s_i`, :math:`z_{iq} = m_i + s_i x_q` (:func:`bayes_raters.quadrature.adaptive_rule`), and
:data:`ADAPTIVE_NODES` nodes then suffice for any number of ratings.

Where the centres come from. :math:`m_i, s_i` are constants: the conditional moments of each
response's ability on the shared rule at the posterior mode of the shared-rule model (L-BFGS,
:func:`bayes_raters.laplace.posterior_mode`). The change of variable is exact for any
constants; only the accuracy depends on how far a posterior draw's conditional moves from
them. After sampling, :func:`adaptive_error` compares each response's adaptive marginal with the
shared rule's at posterior draws; above :data:`ADAPTIVE_TOLERANCE` the fit is redone with
:data:`REFINED_NODES` nodes, then warns.

When. Per gradient the shared rule costs ratings x (shared nodes) gathers and adds, the
adaptive one ratings x :data:`ADAPTIVE_NODES` x K exponentials, so the adaptive rule is used when
the shared rule has more than :data:`ADAPTIVE_ABOVE` nodes (measured in ``models/irt_facets.md``).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import xarray as xr

from bayes_raters.irt.facets import adaptive_node_loglik, adaptive_true_score, system_node_loglik
from bayes_raters.irt.facets_draws import draw_parameters, node_loglik_at, system_terms
from bayes_raters.quadrature import adaptive_rule, conditional_moments, gauss_hermite_rule, marginal_loglik

ADAPTIVE_NODES = 7
REFINED_NODES = 13
ADAPTIVE_TOLERANCE = 1e-3
ADAPTIVE_ABOVE = 120
#: Values of the hierarchical scales while the centres are found: their priors' medians
#: (HalfNormal(s) has median 0.674 s).
SCALES_AT = {"sigma_log_a": 0.34, "sigma_severity": 0.67, "sigma_difficulty": 0.67}
#: Floor of the conditional SD used as a scale (a response with a degenerate conditional).
MIN_SCALE = 1e-3


def uses_adaptive(model) -> bool:
    """Whether a shared-rule facets model should be refitted on adaptive nodes (module docstring)."""
    return len(model.facets["rule"]) > ADAPTIVE_ABOVE


def mode_moments(model) -> tuple[np.ndarray, np.ndarray] | None:
    """``(m, s)``: each response's conditional mean and SD of its ability on the shared rule at
    the posterior mode of ``model`` (a shared-rule facets model) with its hierarchical scales
    held at :data:`SCALES_AT`; None when the optimiser failed. Why held: with the scales free the
    centred hierarchy has no interior mode (the density grows without bound as a scale and its
    group's spread go to 0 together; on InstEval L-BFGS ran into that and stopped on NaN)."""
    from bayes_raters.laplace import posterior_mode

    info = model.facets
    systems = [] if info["arrays"] is None else ["alpha", "beta", "tau"]
    free = {v.name for v in model.free_RVs}
    fixed = {name: value for name, value in SCALES_AT.items() if name in free}
    point = posterior_mode(pm.do(model, fixed), ["a", "severity", "difficulty", "thresholds", *systems])
    if point is None:
        return None
    location = point["severity"][:, None] + point["difficulty"][None, :]
    system = None if not systems else tuple(point[n] for n in systems)
    node_ll = node_loglik_at(point["a"], location, point["thresholds"], system, info["layout"], info["rule"], info["arrays"])
    center, scale = conditional_moments(node_ll, info["rule"])
    return center, np.maximum(scale, MIN_SCALE)


def adaptive_marginal(a, location, thresholds, system, info: dict, center, scale, n_nodes: int) -> np.ndarray:
    """Each response's log marginal (units,) on its adaptive nodes, for one set of parameters."""
    z_units, log_weights = adaptive_rule(center, scale, gauss_hermite_rule(n_nodes))
    layout, arrays = info["layout"], info["arrays"]
    node_ll = adaptive_node_loglik(a, location, thresholds, z_units, layout, lib=np)
    if system is not None:
        true_nodes = adaptive_true_score(a, location, thresholds, z_units, layout, lib=np)
        node_ll = node_ll + system_node_loglik(true_nodes, arrays[0], arrays[1], *system, layout.score_center, lib=np)
    return marginal_loglik(node_ll, log_weights)


def adaptive_error(posterior: xr.Dataset, info: dict, n_nodes: int, n_draws: int = 6) -> float:
    """Largest difference of a response's log marginal between the adaptive rule (``info["adaptive"]``
    centres, ``n_nodes`` nodes) and the shared rule, over ``n_draws`` evenly spaced posterior draws."""
    center, scale = info["adaptive"][:2]
    stacked = posterior.stack(sample=("chain", "draw"))
    worst = 0.0
    for s in np.unique(np.linspace(0, stacked.sizes["sample"] - 1, n_draws).astype(int)):
        a, location, thresholds = draw_parameters(stacked, s)
        system = None if info["arrays"] is None else system_terms(stacked, s)
        shared = marginal_loglik(node_loglik_at(a, location, thresholds, system, info["layout"], info["rule"], info["arrays"]),
                                 info["rule"].log_weights)
        adaptive = adaptive_marginal(a, location, thresholds, system, info, center, scale, n_nodes)
        worst = max(worst, float(np.abs(adaptive - shared).max()))
    return worst
