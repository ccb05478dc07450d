r"""Per-draw NumPy pieces of the many-facet model (:mod:`bayes_raters.facets.model`): each
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
from bayes_raters.facets.model import FacetLayout, adjacent_logp
from bayes_raters.irt.polytomous.kernel import gpcm_answered, gpcm_expected
from bayes_raters.quadrature import QuadratureRule, draw_conditional, logsumexp_np, marginal_loglik

#: Posterior variables the per-draw functions read (those present).
PARAMETER_NAMES = ("a", "severity", "difficulty", "thresholds", "theta", "alpha", "beta", "tau")


def parameter_arrays(stacked: xr.Dataset) -> dict[str, np.ndarray]:
    """The facet, ability and system parameters of a (sample)-stacked posterior as NumPy arrays
    with the sample first, converted once, not an xarray selection per sample
    (``models/irt_facets.md``)."""
    return {name: np.moveaxis(stacked[name].values, stacked[name].dims.index("sample"), 0)
            for name in PARAMETER_NAMES if name in stacked}


def draw_parameters(params: dict, s) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(a, location, thresholds)`` of sample ``s`` of :func:`parameter_arrays`: (raters,),
    (raters, prompts), (K - 1,) for an index; for a slice, the same with a leading draws axis."""
    location = params["severity"][s][..., :, None] + params["difficulty"][s][..., None, :]
    return params["a"][s], location, params["thresholds"][s]


def rating_logits(a, location, thresholds, z, layout: FacetLayout) -> np.ndarray:
    """Log-probabilities of every category for every rating at its unit's ability ``z``
    (ratings, K)."""
    r, j = layout.rater, layout.prompt
    return adjacent_logp(a[r] * (z[layout.unit] - location[r, j]), a[r], thresholds, lib=np)


def pair_items(a, location, thresholds) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Each (rater, prompt) pair as a GPCM item, flattened rater-major: the model's
    :math:`\log P(X = k) = a_r (k (z - b_j - \delta_r) - S_k) + \text{const}` with
    :math:`S_k = \sum_{v \le k} \tau_v` is the GPCM of :mod:`bayes_raters.irt.polytomous.kernel` with
    slope :math:`a_r` and step sums :math:`s_k = k (b_j + \delta_r) + S_k`. Returns the slopes
    (pairs,), the step sums and :math:`e^{-a s_k}` (pairs, K); with a leading draws axis on
    every argument (:func:`draw_parameters`), the same per draw."""
    zeros = np.zeros(thresholds.shape[:-1] + (1,))
    steps = np.concatenate([zeros, np.cumsum(thresholds, axis=-1)], axis=-1)  # (..., K)
    sums = np.arange(steps.shape[-1]) * location[..., None] + steps[..., None, None, :]  # (..., R, J, K)
    sums = sums.reshape(sums.shape[:-3] + (-1, steps.shape[-1]))
    slopes = np.repeat(a, location.shape[-1], axis=-1)
    with np.errstate(over="ignore"):
        coefficients = np.exp(-slopes[..., None] * sums)
    return slopes, sums, coefficients


def _block_codes(layout: FacetLayout, n: int) -> tuple[np.ndarray, ...]:
    """The ratings' (unit, pair, category) codes repeated for ``n`` draws, draw ``d``'s units and
    pairs offset by ``d`` times their count: ``n`` draws become one problem of ``n`` x units."""
    offset = np.arange(n)[:, None]
    pairs = len(layout.raters) * len(layout.prompts)
    return ((layout.unit + offset * len(layout.responses)).ravel(), (layout.pair + offset * pairs).ravel(),
            np.tile(layout.category, n))


def rating_loglik_at(items, z, layout: FacetLayout) -> np.ndarray:
    """Each unit's log-likelihood of its ratings at its own ``z`` (units,) from
    :func:`pair_items`, compiled (:func:`bayes_raters.irt.polytomous.kernel.gpcm_answered`); with a
    draws axis (``z`` (draws, units), ``items`` from a block), (draws, units) in one call."""
    slopes, sums, coefficients = items
    z = np.asarray(z, float)
    n = 1 if z.ndim == 1 else len(z)
    unit, pair, category = _block_codes(layout, n)
    k = np.full(slopes.size, layout.n_categories)
    out = gpcm_answered(z.ravel(), unit, pair, category, slopes.ravel(), sums.reshape(slopes.size, -1),
                        coefficients.reshape(slopes.size, -1), k, z.size)
    return out.reshape(z.shape)


def true_scores_from(items, z, layout: FacetLayout) -> np.ndarray:
    """:math:`T_i(z_i)` for every unit from :func:`pair_items` (units,), or with a draws axis
    (draws, units): per prompt, the expected score of every rater at the ``z`` of the units with
    that prompt, mean over raters, weighted by the unit's share of the prompt. Compiled
    (:func:`bayes_raters.irt.polytomous.kernel.gpcm_expected`), as is the ratings' term
    :func:`rating_loglik_at`: both were most of a posterior draw's time in NumPy (``models/irt_facets.md``
    gives the timings)."""
    slopes, sums, coefficients = (np.atleast_2d(items[0]), *(x if x.ndim == 3 else x[None] for x in items[1:]))
    z = np.asarray(z, float)
    zz = np.atleast_2d(z)
    n_prompts, out = len(layout.prompts), np.zeros(zz.shape)
    for j, rows in enumerate(layout.prompt_units):
        pairs = slice(j, None, n_prompts)  # rater-major: pair r * J + j
        expected = gpcm_expected(np.ascontiguousarray(zz[:, rows]), np.ascontiguousarray(slopes[:, pairs]),
                                 np.ascontiguousarray(sums[:, pairs]), np.ascontiguousarray(coefficients[:, pairs]), layout.score_values)
        out[:, rows] += layout.unit_prompts[rows, j] * expected.mean(axis=2)
    return out.reshape(z.shape)


def true_scores_at(a, location, thresholds, z, layout: FacetLayout) -> np.ndarray:
    """:math:`T_i(z_i)` for every unit at its own ``z`` (units,): expected score over the
    raters, averaged over the unit's prompts."""
    return true_scores_from(pair_items(a, location, thresholds), z, layout)


def system_terms(params: dict, s):
    """``(alpha, beta, tau)`` of sample ``s`` (an index or a slice) of :func:`parameter_arrays`."""
    return params["alpha"][s], params["beta"][s], params["tau"][s]


def category_tables(a, location, thresholds, nodes) -> np.ndarray:
    """:func:`bayes_raters.facets.model.category_table` for a block of draws (draws, raters,
    prompts, K, nodes), from :func:`draw_parameters`' arrays."""
    eta = a[:, :, None, None] * (nodes - location[:, :, :, None])  # (D, R, J, Q)
    steps = np.concatenate([np.zeros((len(a), 1)), np.cumsum(thresholds, axis=1)], axis=1)  # (D, K)
    logits = np.arange(steps.shape[1]) * eta[..., None] - a[:, :, None, None, None] * steps[:, None, None, None, :]
    return (logits - logsumexp_np(logits, axis=-1, keepdims=True)).transpose(0, 1, 2, 4, 3)


def system_loglik(true, values, mask, alpha, beta, tau, center) -> np.ndarray:
    """:func:`bayes_raters.facets.model.system_node_loglik` for a block of draws: ``true``
    (draws, units, nodes), ``alpha``, ``beta``, ``tau`` (draws, systems); (draws, units, nodes)."""
    mean = alpha[:, None, :, None] + beta[:, None, :, None] * (true[:, :, None, :] - center)
    resid = (values[None, :, :, None] - mean) / tau[:, None, :, None]
    log_n = -0.5 * resid**2 - np.log(tau)[:, None, :, None] - 0.5 * np.log(2 * np.pi)
    return np.einsum("dusq,us->duq", log_n, mask)


def node_logliks(a, location, thresholds, system, layout: FacetLayout, rule: QuadratureRule, arrays) -> np.ndarray:
    """Each unit's log-likelihood (ratings and system scores) at the shared rule's nodes for a
    block of draws (draws, units, nodes), from :func:`draw_parameters`' arrays; ``system`` is
    ``(alpha, beta, tau)`` with a draws axis, or None. The ratings' term for all draws is one
    sparse product of the units' cell counts with the draws' category tables side by side."""
    log_p = category_tables(a, location, thresholds, rule.nodes)  # (D, R, J, K, Q)
    n, q = len(a), len(rule)
    flat = log_p.reshape(n, -1, q).transpose(1, 0, 2).reshape(-1, n * q)
    node_ll = np.asarray(layout.cell_counts @ flat).reshape(-1, n, q).transpose(1, 0, 2)
    if system is None:
        return node_ll
    expected = np.einsum("drjkq,k->djq", np.exp(log_p), layout.score_values) / log_p.shape[1]
    true_nodes = np.einsum("uj,djq->duq", layout.unit_prompts, expected)
    return node_ll + system_loglik(true_nodes, arrays[0], arrays[1], *system, layout.score_center)


def node_loglik_at(a, location, thresholds, system, layout: FacetLayout, rule: QuadratureRule, arrays) -> np.ndarray:
    """:func:`node_logliks` for one set of parameters (units, nodes)."""
    system = None if system is None else tuple(np.asarray(x)[None] for x in system)
    return node_logliks(a[None], location[None], np.asarray(thresholds)[None], system, layout, rule, arrays)[0]


#: Elements of the largest array of one block of :func:`conditional_draws` (8 MB of floats).
BLOCK_ELEMENTS = 2**20


def draw_block(layout: FacetLayout, rule: QuadratureRule, systems: int) -> int:
    """Posterior draws per block of :func:`conditional_draws`: as many as keep the category
    tables (raters x prompts x K x nodes per draw) and the system term (units x systems x nodes)
    under :data:`BLOCK_ELEMENTS`, at least one."""
    per_draw = max(len(layout.raters) * len(layout.prompts) * layout.n_categories, len(layout.responses) * max(systems, 1)) * len(rule)
    return max(1, BLOCK_ELEMENTS // per_draw)


def conditional_draws(posterior: xr.Dataset, layout: FacetLayout, rule: QuadratureRule, arrays, random_seed,
                      cores: int | None = None, mh_steps: int = 2):
    """For every posterior draw: each unit's marginal log-likelihood, an exact conditional draw
    of its ability and its true score, each (chain x draw, units) in the order of
    ``posterior.stack(sample=("chain", "draw"))``; and the mean MH acceptance rate. Chains run
    in threads, each with its own generator (:func:`bayes_raters.chains.map_chains`).

    Draws are taken in blocks of :func:`draw_block` posterior draws (one node table, one
    interpolant and one exact log-likelihood pass per block): one draw at a time, the calls are
    too small for threads to share (``models/irt_facets.md``)."""
    center, units = layout.score_center, len(layout.responses)
    block = draw_block(layout, rule, 0 if arrays is None else arrays[0].shape[1])

    def one_chain(chain: int, rng: np.random.Generator):
        params = parameter_arrays(posterior.isel(chain=[chain]).stack(sample=("chain", "draw")))
        n = len(params["a"])
        log_lik, theta, true, rates = np.empty((n, units)), np.empty((n, units)), np.empty((n, units)), []
        for start in range(0, n, block):
            s = slice(start, min(start + block, n))
            size = s.stop - s.start
            a, location, thresholds = draw_parameters(params, s)
            system = None if arrays is None else system_terms(params, s)
            node_ll = node_logliks(a, location, thresholds, system, layout, rule, arrays)
            log_lik[s] = marginal_loglik(node_ll, rule.log_weights)
            items = pair_items(a, location, thresholds)

            def exact(z, items=items, system=system, size=size):
                z = z.reshape(size, units)
                out = rating_loglik_at(items, z, layout)
                if system is not None:
                    t = true_scores_from(items, z, layout)
                    out = out + system_loglik(t[:, :, None], arrays[0], arrays[1], *system, center)[:, :, 0]
                return out.ravel()

            z, rate = draw_conditional(node_ll.reshape(size * units, -1), exact, rule, rng, mh_steps=mh_steps)
            theta[s] = z.reshape(size, units)
            true[s] = true_scores_from(items, theta[s], layout)
            rates.extend([rate] * size)
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
