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

from bayes_raters.chains import map_chains
from bayes_raters.irt.facets import (
    FacetLayout,
    adjacent_logp,
    category_table,
    rating_node_loglik,
    system_node_loglik,
    true_score_curve,
)
from bayes_raters.irt.gpcm_kernel import gpcm_answered, gpcm_expected
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


def pair_items(a, location, thresholds) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Each (rater, prompt) pair as a GPCM item, flattened rater-major: the model's
    :math:`\log P(X = k) = a_r (k (z - b_j - \delta_r) - S_k) + \text{const}` with
    :math:`S_k = \sum_{v \le k} \tau_v` is the GPCM of :mod:`bayes_raters.irt.gpcm_kernel` with
    slope :math:`a_r` and step sums :math:`s_k = k (b_j + \delta_r) + S_k`. Returns the slopes
    (pairs,), the step sums and :math:`e^{-a s_k}` (pairs, K)."""
    steps = np.concatenate([np.zeros(1), np.cumsum(thresholds)])
    sums = (np.arange(len(steps)) * location[:, :, None] + steps).reshape(-1, len(steps))
    slopes = np.repeat(a, location.shape[1])
    with np.errstate(over="ignore"):
        coefficients = np.exp(-slopes[:, None] * sums)
    return slopes, sums, coefficients


def rating_loglik_at(items, z, layout: FacetLayout) -> np.ndarray:
    """Each unit's log-likelihood of its ratings at its own ``z`` (units,) from
    :func:`pair_items`, compiled (:func:`bayes_raters.irt.gpcm_kernel.gpcm_answered`)."""
    slopes, sums, coefficients = items
    k = np.full(len(slopes), layout.n_categories)
    return gpcm_answered(np.asarray(z, float), layout.unit, layout.pair, layout.category, slopes, sums, coefficients, k,
                         len(layout.responses))


def true_scores_from(items, z, layout: FacetLayout) -> np.ndarray:
    """:math:`T_i(z_i)` for every unit from :func:`pair_items` (units,): per prompt, the expected
    score of every rater at the ``z`` of the units with that prompt, mean over raters, weighted
    by the unit's share of the prompt. Compiled
    (:func:`bayes_raters.irt.gpcm_kernel.gpcm_expected`): the NumPy form cost 0.39 ms a call,
    four calls per posterior draw of the 400 x 8 x 2 essay fit; this one 0.07 ms (quiet 2-core VM;
    the ratings' term :func:`rating_loglik_at` 0.11 -> 0.03 ms)."""
    slopes, sums, coefficients = items
    n_prompts, out = len(layout.prompts), np.zeros(len(z))
    z = np.asarray(z, float)
    for j, rows in enumerate(layout.prompt_units):
        pairs = slice(j, None, n_prompts)  # rater-major: pair r * J + j
        expected = gpcm_expected(z[rows], slopes[pairs], sums[pairs], coefficients[pairs], layout.score_values)
        out[rows] += layout.unit_prompts[rows, j] * expected.mean(axis=1)
    return out


def true_scores_at(a, location, thresholds, z, layout: FacetLayout) -> np.ndarray:
    """:math:`T_i(z_i)` for every unit at its own ``z`` (units,): expected score over the
    raters, averaged over the unit's prompts."""
    return true_scores_from(pair_items(a, location, thresholds), z, layout)


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


def conditional_draws(posterior: xr.Dataset, layout: FacetLayout, rule: QuadratureRule, arrays, random_seed,
                      cores: int | None = None, mh_steps: int = 2):
    """For every posterior draw: each unit's marginal log-likelihood, an exact conditional draw
    of its ability and its true score, each (chain x draw, units) in the order of
    ``posterior.stack(sample=("chain", "draw"))``; and the mean MH acceptance rate. Chains run
    in threads, each with its own generator (:func:`bayes_raters.chains.map_chains`)."""
    center, units = layout.score_center, len(layout.responses)

    def one_chain(chain: int, rng: np.random.Generator):
        params = parameter_arrays(posterior.isel(chain=[chain]).stack(sample=("chain", "draw")))
        n = len(params["a"])
        log_lik, theta, true, rates = np.empty((n, units)), np.empty((n, units)), np.empty((n, units)), []
        for s in range(n):
            a, location, thresholds = draw_parameters(params, s)
            system = None if arrays is None else system_terms(params, s)
            node_ll = node_loglik_at(a, location, thresholds, system, layout, rule, arrays)
            log_lik[s] = marginal_loglik(node_ll, rule.log_weights)
            items = pair_items(a, location, thresholds)

            def exact(z, items=items, system=system):
                out = rating_loglik_at(items, z, layout)
                if system is not None:
                    t = true_scores_from(items, z, layout)
                    out = out + system_node_loglik(t[:, None], arrays[0], arrays[1], *system, center, lib=np)[:, 0]
                return out

            theta[s], rate = draw_conditional(node_ll, exact, rule, rng, mh_steps=mh_steps)
            true[s] = true_scores_from(items, theta[s], layout)
            rates.append(rate)
        return log_lik, theta, true, rates

    per_chain = map_chains(one_chain, posterior.sizes["chain"], random_seed, cores)
    stacked = [np.concatenate([result[i] for result in per_chain]) for i in range(3)]
    return (*stacked, float(np.mean([rate for result in per_chain for rate in result[3]])))


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
