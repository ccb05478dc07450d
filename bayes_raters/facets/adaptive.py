r"""When and how the many-facet model (:mod:`bayes_raters.facets.model`) integrates each response's
ability on its own nodes.

Why. The shared trapezoid rule (:func:`~bayes_raters.facets.model.facet_rule`) is sized for the
most-rated response, and every rating is evaluated at every node. Where responses differ
widely in their number of ratings that is wasteful: in lme4's InstEval subset (60 lecturers
rated 1-258 times each, ``tests/data/insteval/``) the most-rated lecturer needs 313 nodes, so
each of the 4,682 ratings costs 313 evaluations (several times the adaptive rule's cost per
gradient: ``models/irt_facets.md``). An adaptive Gauss-Hermite
rule centres each response's nodes at its conditional mode :math:`m_i` and scales them by the
SD of the Laplace approximation there, :math:`s_i`: :math:`z_{iq} = m_i + s_i x_q`
(:func:`bayes_raters.quadrature.adaptive_rule`), and :data:`ADAPTIVE_NODES` nodes suffice for any
number of ratings.

Centres that follow the parameters. :math:`m_i, s_i` are recomputed at every evaluation of the
log density by Newton steps (:func:`~bayes_raters.facets.model.newton_centres`, ratings x K work)
and held constant in the gradient (the change of variable is exact in value for any centre).
Why not constants fixed once at the posterior mode: tried first, it failed on InstEval, where
a lecturer rated 258 times has a conditional SD of 0.03 and moves by several of those between
posterior draws (through the common discrimination); the rule then erred by 2.0 per response
with 7 and 13 nodes. After sampling, :func:`adaptive_error` compares each response's adaptive
marginal with the shared rule's at posterior draws; above :data:`ADAPTIVE_TOLERANCE` the fit is
redone with :data:`REFINED_NODES` nodes, then warns.

When. Per gradient the shared rule costs ratings x (shared nodes) gathers and adds, the
adaptive one ratings x :data:`ADAPTIVE_NODES` x K exponentials plus the Newton steps, so the
adaptive rule is used when the shared rule has more than :data:`ADAPTIVE_ABOVE` nodes (the
essay designs of the tests, 55 nodes, keep the shared rule, which is faster there:
``models/irt_facets.md``).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bayes_raters.facets.draws import draw_parameters, node_loglik_at, parameter_arrays, system_terms
from bayes_raters.facets.model import adaptive_node_loglik, adaptive_true_score, newton_centres, system_node_loglik
from bayes_raters.quadrature import adaptive_rule, gauss_hermite_rule, marginal_loglik

ADAPTIVE_NODES = 7
REFINED_NODES = 13
ADAPTIVE_TOLERANCE = 1e-3
ADAPTIVE_ABOVE = 120


def uses_adaptive(model) -> bool:
    """Whether a shared-rule facets model should be refitted on adaptive nodes (module docstring)."""
    return len(model.facets["rule"]) > ADAPTIVE_ABOVE


def adaptive_marginal(a, location, thresholds, system, info: dict, n_nodes: int) -> np.ndarray:
    """Each response's log marginal (units,) on its adaptive nodes, for one set of parameters
    (NumPy; the model's Potential is the same sum)."""
    layout, arrays = info["layout"], info["arrays"]
    systems = None if system is None else (*arrays[:2], *system)
    center, scale = newton_centres(a, location, thresholds, layout, lib=np, systems=systems)
    z_units, log_weights = adaptive_rule(center, scale, gauss_hermite_rule(n_nodes))
    node_ll = adaptive_node_loglik(a, location, thresholds, z_units, layout, lib=np)
    if system is not None:
        true_nodes = adaptive_true_score(a, location, thresholds, z_units, layout, lib=np)
        node_ll = node_ll + system_node_loglik(true_nodes, arrays[0], arrays[1], *system, layout.score_center, lib=np)
    return marginal_loglik(node_ll, log_weights)


def adaptive_error(posterior: xr.Dataset, info: dict, n_nodes: int, n_draws: int = 6) -> float:
    """Largest difference of a response's log marginal between the adaptive rule with ``n_nodes``
    nodes and the shared rule, over ``n_draws`` evenly spaced posterior draws."""
    stacked = posterior.stack(sample=("chain", "draw"))
    worst, params = 0.0, parameter_arrays(stacked)
    for s in np.unique(np.linspace(0, stacked.sizes["sample"] - 1, n_draws).astype(int)):
        a, location, thresholds = draw_parameters(params, s)
        system = None if info["arrays"] is None else system_terms(params, s)
        shared = marginal_loglik(node_loglik_at(a, location, thresholds, system, info["layout"], info["rule"], info["arrays"]),
                                 info["rule"].log_weights)
        adaptive = adaptive_marginal(a, location, thresholds, system, info, n_nodes)
        worst = max(worst, float(np.abs(adaptive - shared).max()))
    return worst
