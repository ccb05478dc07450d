r"""Per-draw NumPy pieces of the many-facet model (:mod:`bayes_raters.irt.facets`): each
response's marginal log-likelihood, its ability drawn from the exact conditional, its true
score :math:`T_i`, and the residuals behind the raters' fit statistics.

Fit statistics (Wright and Masters' mean squares, as FACETS reports them), for rater :math:`r`
over its ratings :math:`n` with expected category :math:`E_n` and variance :math:`V_n` at the
response's ability: outfit :math:`= \operatorname{mean}_n (x_n - E_n)^2 / V_n`, infit
:math:`= \sum_n (x_n - E_n)^2 / \sum_n V_n`. Both are about 1 for ratings the model describes,
above 1 for noisy (erratic) ratings and below 1 for too predictable ones (e.g. a rater who
avoids the extremes). Here they are computed for posterior draws of every parameter and of
every ability, so they come with intervals.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bayes_raters.irt.facets import (
    FacetLayout,
    adjacent_logp,
    category_table,
    rating_node_loglik,
    system_node_loglik,
    true_score_curve,
)
from bayes_raters.quadrature import QuadratureRule, draw_conditional, marginal_loglik


#: Posterior variables the per-draw functions read (those present).
PARAMETER_NAMES = ("a", "severity", "difficulty", "thresholds", "theta", "alpha", "beta", "tau")


def parameter_arrays(stacked: xr.Dataset) -> dict[str, np.ndarray]:
    """The facet, ability and system parameters of a (sample)-stacked posterior as NumPy arrays
    with the sample first, converted once: an xarray selection per sample cost 6.9 of the 80 s of
    the 400 x 8 x 2 essay fit on one core (4,000 selections of four variables)."""
    return {name: np.moveaxis(stacked[name].values, stacked[name].dims.index("sample"), 0)
            for name in PARAMETER_NAMES if name in stacked}


def draw_parameters(params: dict, s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(a, location, thresholds)`` of sample ``s`` of :func:`parameter_arrays`."""
    location = params["severity"][s][:, None] + params["difficulty"][s][None, :]
    return params["a"][s], location, params["thresholds"][s]


def rating_logits(a, location, thresholds, z, layout: FacetLayout) -> np.ndarray:
    """Log-probabilities of every category for every rating at its unit's ability ``z``
    (ratings, K)."""
    r, j = layout.rater, layout.prompt
    return adjacent_logp(a[r] * (z[layout.unit] - location[r, j]), a[r], thresholds, lib=np)


def true_scores_at(a, location, thresholds, z, layout: FacetLayout) -> np.ndarray:
    """:math:`T_i(z_i)` for every unit at its own ``z`` (units,): expected score over the
    raters, averaged over the unit's prompts."""
    out = np.zeros(len(z))
    for j in range(layout.unit_prompts.shape[1]):
        weight = layout.unit_prompts[:, j]
        rows = np.nonzero(weight)[0]
        if len(rows) == 0:
            continue
        eta = a[None, :] * (z[rows, None] - location[None, :, j])  # (units_j, R)
        p = np.exp(adjacent_logp(eta, a[None, :], thresholds, lib=np))  # (units_j, R, K)
        out[rows] += weight[rows] * (p @ layout.score_values).mean(axis=1)
    return out


def system_terms(params: dict, s: int):
    """``(alpha, beta, tau)`` of sample ``s`` of :func:`parameter_arrays`."""
    return params["alpha"][s], params["beta"][s], params["tau"][s]


def node_loglik_at(a, location, thresholds, system, layout: FacetLayout, rule: QuadratureRule, arrays) -> np.ndarray:
    """Each unit's log-likelihood (ratings and system scores) at the shared rule's nodes (units,
    nodes) for one set of parameters; ``system`` is ``(alpha, beta, tau)`` or None."""
    log_p = category_table(a, location, thresholds, rule.nodes, lib=np)
    node_ll = rating_node_loglik(log_p, layout, len(rule), lib=np)
    if system is None:
        return node_ll
    nodes_true = true_score_curve(log_p, layout.score_values, layout.unit_prompts, lib=np)
    return node_ll + system_node_loglik(nodes_true, arrays[0], arrays[1], *system, layout.score_center, lib=np)


def conditional_draws(stacked: xr.Dataset, layout: FacetLayout, rule: QuadratureRule, arrays,
                      rng: np.random.Generator, mh_steps: int = 2):
    """For every sample: each unit's marginal log-likelihood (samples, units), an exact
    conditional draw of its ability and its true score (samples, units); and the mean MH
    acceptance rate."""
    n, center = stacked.sizes["sample"], layout.score_center
    units = len(layout.responses)
    log_lik, theta, true = np.empty((n, units)), np.empty((n, units)), np.empty((n, units))
    rates, params = [], parameter_arrays(stacked)
    for s in range(n):
        a, location, thresholds = draw_parameters(params, s)
        system = None if arrays is None else system_terms(params, s)
        node_ll = node_loglik_at(a, location, thresholds, system, layout, rule, arrays)
        log_lik[s] = marginal_loglik(node_ll, rule.log_weights)

        def exact(z, a=a, location=location, thresholds=thresholds, system=system):
            logits = rating_logits(a, location, thresholds, z, layout)
            out = np.bincount(layout.unit, logits[np.arange(len(logits)), layout.category], minlength=units)
            if system is not None:
                t = true_scores_at(a, location, thresholds, z, layout)
                out = out + system_node_loglik(t[:, None], arrays[0], arrays[1], *system, center, lib=np)[:, 0]
            return out

        theta[s], rate = draw_conditional(node_ll, exact, rule, rng, mh_steps=mh_steps)
        true[s] = true_scores_at(a, location, thresholds, theta[s], layout)
        rates.append(rate)
    return log_lik, theta, true, float(np.mean(rates))


def fit_statistics(stacked: xr.Dataset, layout: FacetLayout) -> tuple[np.ndarray, np.ndarray]:
    """Infit and outfit mean squares of every rater for every sample (samples, raters), from
    the sample's parameters and abilities (module docstring)."""
    n, raters = stacked.sizes["sample"], len(layout.raters)
    infit, outfit = np.empty((n, raters)), np.empty((n, raters))
    k = np.arange(layout.n_categories)
    count = np.bincount(layout.rater, minlength=raters)
    params = parameter_arrays(stacked)
    for s in range(n):
        a, location, thresholds = draw_parameters(params, s)
        z = params["theta"][s]
        p = np.exp(rating_logits(a, location, thresholds, z, layout))
        expected = p @ k
        variance = np.maximum(p @ k**2 - expected**2, 1e-12)
        squared = (layout.category - expected) ** 2
        infit[s] = np.bincount(layout.rater, squared, raters) / np.bincount(layout.rater, variance, raters)
        outfit[s] = np.bincount(layout.rater, squared / variance, raters) / count
    return infit, outfit


def prmse_draws(true: np.ndarray, arrays) -> np.ndarray:
    r"""PRMSE of every system for every sample (samples, systems), over the responses it scored:
    :math:`1 - \sum_i (M_{is} - T_i)^2 / \sum_i (T_i - \bar T)^2` with the sample's true scores
    (the in-sample PRMSE of these responses)."""
    values, mask, ids = arrays
    out = np.empty((len(true), len(ids)))
    for c in range(len(ids)):
        used = mask[:, c] > 0
        t = true[:, used]
        mse = ((values[used, c][None, :] - t) ** 2).sum(axis=1)
        out[:, c] = 1.0 - mse / ((t - t.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    return out
