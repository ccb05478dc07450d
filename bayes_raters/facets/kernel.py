r"""The many-facet model's marginal log-likelihood on the shared quadrature rule and its
gradient in one compiled pass (Numba), as a PyTensor Op: what :func:`bayes_raters.facets.model.build_facets_model`
uses by default (``fused=True``).

Notation of :mod:`bayes_raters.facets.model`: pair :math:`p = (r, j)`, nodes :math:`x_q` with
log-weights :math:`\log w_q`, cumulative thresholds :math:`c_k = \sum_{v \le k} \tau_v`
(:math:`c_0 = 0`), score values :math:`s_k`. Forward:

.. math::

    \eta_{pq} = a_r (x_q - b_j - \delta_r), \qquad
    \lambda_{pkq} = k\,\eta_{pq} - a_r c_k, \qquad
    \log P_{pkq} = \lambda_{pkq} - \log\textstyle\sum_m e^{\lambda_{pmq}},

    \ell_{iq} = \log w_q + \sum_{n \in i} \log P_{p_n k_n q}
      + \sum_s m_{is} \log N\big(M_{is};\ \alpha_s + \beta_s (T_{iq} - c_0),\ \tau^{sys}_s\big),
    \qquad T_{iq} = \sum_j u_{ij} \frac1R \sum_r \sum_k P_{(r,j)kq}\, s_k,

    L = \sum_i \log \textstyle\sum_q e^{\ell_{iq}}.

Backward (reverse mode by hand), with :math:`\pi_{iq} = e^{\ell_{iq} - L_i}` the posterior
weights of the nodes: :math:`\partial L/\partial \log P_{pkq} = \sum_{n: p_n = p, k_n = k}
\pi_{i_n q} + g^T_{pq} P_{pkq} s_k` where, with :math:`z = (M - \mu)/\tau^{sys}`,
:math:`g^T_{(r,j)q} = \frac1R \sum_i u_{ij} \pi_{iq} \sum_s m_{is} z_{isq} \beta_s / \tau^{sys}_s`;
through the log-softmax :math:`\partial L/\partial \lambda_{pmq} = D_{pmq} - P_{pmq} \sum_k D_{pkq}`;
then :math:`\partial \eta = \sum_m m\,\partial\lambda_m`, :math:`\partial a_r \mathrel{+}= (x_q - b_j
- \delta_r)\,\partial\eta - \sum_m c_m \partial\lambda_m`, :math:`\partial(b_j + \delta_r) \mathrel{-}=
a_r \partial\eta`, :math:`\partial \tau_v = -\sum_{m \ge v} a_r \partial\lambda_m`; the system
parameters: :math:`\partial\alpha_s = \sum \pi m z/\tau`, :math:`\partial\beta_s = \sum \pi m z (T - c_0)/\tau`,
:math:`\partial\tau_s = \sum \pi m (z^2 - 1)/\tau`.

Why hand-written: PyTensor's graph of the same density (category table, gather of each rating's
row, scatter-add per response, log-sum-exp, the system scores) took most of a NUTS fit's time and
seconds of graph rewriting per fit; this pass takes about half of its time per log density and
gradient (``models/irt_facets.md`` gives the figures and the steps that got there;
``benchmarks/bench_facets.py`` measures the fit). Two choices carry most of it: the exps of the
category table and of the log-sum-exp run in NumPy, one object-mode call each (NumPy's SIMD exp is
several times faster than the scalar C-library exp that Numba calls, whose slow path for results
that underflow doubled the kernel's time at PyMC's initial point), and their arguments are clamped at :data:`NEGLIGIBLE` below the row's
largest term (a term of :math:`e^{-50}` of the largest changes a sum of at least 1 by 2e-22). The
value and gradient equal the graph's to 1e-12 (``tests/facets/test_kernel.py``). The PyTensor graph
stays for the adaptive rule, for JAX samplers (``fused=False``) and as the test's reference.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numba
import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType, disconnected_type
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

_HALF_LOG_2PI = 0.5 * np.log(2 * np.pi)
#: Log-ratios to a row's largest term are clamped here before the exp (e^-50 = 2e-22 of the largest).
NEGLIGIBLE = -50.0
#: Numba's fast-math flags: none. With {"nsz", "arcp", "contract", "afn", "reassoc"} the kernel
#: was about a tenth faster, but LLVM then compiled it differently fresh (first fit after a change or
#: on a clean machine) than from the on-disk cache, and NUTS, being chaotic, gave other draws for
#: the same seed. Strict IEEE arithmetic, as :func:`bayes_raters.sampling.strict_float` for the
#: graphs: the same draws either way (``models/irt_facets.md``).
FAST = False


def _jit(function):
    """Numba's compile with this module's flags (cached on disk, no GIL, NumPy's error model)."""
    return numba.njit(cache=True, nogil=True, error_model="numpy", fastmath=FAST)(function)


def _vector_exp(x):
    """NumPy's exp (SIMD, several times faster than the C library's scalar exp that Numba calls:
    ``models/irt_facets.md``)."""
    return np.exp(x)


@numba.njit(cache=True, error_model="numpy", fastmath=FAST)  # no nogil: the object-mode block holds the GIL
def _category_table(a, location, thresholds, nodes):
    """``(log P, P, c)``: log P and P (pairs, K, Q), pairs rater-major (``rater * n_prompts +
    prompt``), and the cumulative thresholds c (K,). One exp per (pair, category, node), in
    NumPy (:func:`_vector_exp`)."""
    n_raters, n_prompts = location.shape
    n_cat, n_nodes = thresholds.size + 1, nodes.size
    steps = np.zeros(n_cat)
    for k in range(1, n_cat):
        steps[k] = steps[k - 1] + thresholds[k - 1]
    log_p, shifted = np.empty((n_raters * n_prompts, n_cat, n_nodes)), np.empty((n_raters * n_prompts, n_cat, n_nodes))
    tops = np.empty((n_raters * n_prompts, n_nodes))
    for r in range(n_raters):
        for j in range(n_prompts):
            p = r * n_prompts + j
            for k in range(n_cat):
                for q in range(n_nodes):
                    log_p[p, k, q] = k * a[r] * (nodes[q] - location[r, j]) - a[r] * steps[k]
            tops[p] = log_p[p, 0]
            for k in range(1, n_cat):
                for q in range(n_nodes):
                    tops[p, q] = max(tops[p, q], log_p[p, k, q])
            for k in range(n_cat):
                for q in range(n_nodes):
                    shifted[p, k, q] = max(log_p[p, k, q] - tops[p, q], NEGLIGIBLE)
    with numba.objmode(prob="float64[:, :, ::1]"):
        prob = _vector_exp(shifted)
    total = np.empty(n_nodes)
    for p in range(n_raters * n_prompts):
        total[:] = 0.0
        for k in range(n_cat):
            for q in range(n_nodes):
                total[q] += prob[p, k, q]
        for k in range(n_cat):
            for q in range(n_nodes):
                prob[p, k, q] /= total[q]
                log_p[p, k, q] -= tops[p, q] + np.log(total[q])
    return log_p, prob, steps


@_jit
def _rating_loglik(log_p, log_weights, unit, pair, category, n_units):
    r""":math:`\log w_q + \sum_{n \in i} \log P_{p_n k_n q}` (units, Q)."""
    n_nodes = log_weights.size
    ell = np.empty((n_units, n_nodes))
    for i in range(n_units):
        ell[i] = log_weights
    for n in range(unit.size):
        i, p, k = unit[n], pair[n], category[n]
        for q in range(n_nodes):
            ell[i, q] += log_p[p, k, q]
    return ell


@_jit
def _true_scores(prob, score_values, unit_prompts, n_raters):
    """T (units, Q): the raters' mean expected score per prompt, weighted by the unit's prompts."""
    n_pairs, n_cat, n_nodes = prob.shape
    n_units, n_prompts = unit_prompts.shape
    expected = np.zeros((n_prompts, n_nodes))
    for p in range(n_pairs):
        for k in range(n_cat):
            for q in range(n_nodes):
                expected[p % n_prompts, q] += prob[p, k, q] * score_values[k] / n_raters
    true = np.zeros((n_units, n_nodes))
    for i in range(n_units):
        for j in range(n_prompts):
            if unit_prompts[i, j] != 0.0:
                for q in range(n_nodes):
                    true[i, q] += unit_prompts[i, j] * expected[j, q]
    return true


@_jit
def _add_system_loglik(ell, true, values, mask, alpha, beta, tau, center):
    r"""Add :math:`\sum_s m_{is} \log N(M_{is}; \alpha_s + \beta_s (T_{iq} - c_0), \tau_s)` to ell."""
    n_units, n_systems = mask.shape
    precision, log_norm = 1.0 / tau, -np.log(tau) - _HALF_LOG_2PI
    for i in range(n_units):
        for s in range(n_systems):
            if mask[i, s] != 0.0:
                shift = values[i, s] - alpha[s] + beta[s] * center
                for q in range(ell.shape[1]):
                    z = (shift - beta[s] * true[i, q]) * precision[s]
                    ell[i, q] += mask[i, s] * (-0.5 * z * z + log_norm[s])


@numba.njit(cache=True, error_model="numpy", fastmath=FAST)  # no nogil: the object-mode block holds the GIL
def _normalise(ell):
    """``(sum_i L_i, pi)``: each row's log-sum-exp and its softmax (the nodes' posterior weights).
    Terms more than 50 below a row's largest are set to that (their weight, e^-50 of the largest,
    is below rounding); the exps run in NumPy (:func:`_vector_exp`)."""
    n_units, n_nodes = ell.shape
    shifted, tops = np.empty((n_units, n_nodes)), np.empty(n_units)
    for i in range(n_units):
        tops[i] = ell[i].max()
        for q in range(n_nodes):
            shifted[i, q] = max(ell[i, q] - tops[i], NEGLIGIBLE)
    with numba.objmode(weight="float64[:, ::1]"):
        weight = _vector_exp(shifted)
    total = 0.0
    for i in range(n_units):
        acc = 0.0
        for q in range(n_nodes):
            acc += weight[i, q]
        total += tops[i] + np.log(acc)
        for q in range(n_nodes):
            weight[i, q] /= acc
    return total, weight


@_jit
def _rating_backward(weight, unit, pair, category, n_pairs, n_cat):
    r""":math:`\partial L / \partial \log P_{pkq}` from the ratings: the weights scattered to their cells."""
    d_log_p = np.zeros((n_pairs, n_cat, weight.shape[1]))
    for n in range(unit.size):
        i, p, k = unit[n], pair[n], category[n]
        for q in range(weight.shape[1]):
            d_log_p[p, k, q] += weight[i, q]
    return d_log_p


@_jit
def _system_backward(weight, true, values, mask, alpha, beta, tau, center, unit_prompts, prob, score_values, d_log_p):
    r"""Gradients of the system scores' terms: ``(d_alpha, d_beta, d_tau)``, and their part of
    :math:`\partial L/\partial \log P` added to ``d_log_p`` (through :math:`T`)."""
    n_units, n_systems = mask.shape
    n_pairs, n_cat, n_nodes = prob.shape
    n_prompts = unit_prompts.shape[1]
    d_alpha, d_beta, d_tau = np.zeros(n_systems), np.zeros(n_systems), np.zeros(n_systems)
    d_true = np.zeros((n_units, n_nodes))
    precision = 1.0 / tau
    for i in range(n_units):
        for s in range(n_systems):
            if mask[i, s] != 0.0:
                shift, scale = values[i, s] - alpha[s] + beta[s] * center, mask[i, s] * precision[s]
                sum_wz, sum_wzt, sum_wzz, sum_w = 0.0, 0.0, 0.0, 0.0
                for q in range(n_nodes):  # local sums: the loop vectorises
                    z = (shift - beta[s] * true[i, q]) * precision[s]
                    wz = weight[i, q] * z
                    sum_wz += wz
                    sum_wzt += wz * true[i, q]
                    sum_wzz += wz * z
                    sum_w += weight[i, q]
                    d_true[i, q] += scale * beta[s] * wz
                d_alpha[s] += scale * sum_wz
                d_beta[s] += scale * (sum_wzt - center * sum_wz)
                d_tau[s] += scale * (sum_wzz - sum_w)
    d_expected = np.zeros((n_prompts, n_nodes))
    for i in range(n_units):
        for j in range(n_prompts):
            if unit_prompts[i, j] != 0.0:
                for q in range(n_nodes):
                    d_expected[j, q] += unit_prompts[i, j] * d_true[i, q]
    n_raters = n_pairs // n_prompts
    for p in range(n_pairs):
        for k in range(n_cat):
            for q in range(n_nodes):
                d_log_p[p, k, q] += d_expected[p % n_prompts, q] / n_raters * prob[p, k, q] * score_values[k]
    return d_alpha, d_beta, d_tau


@_jit
def _table_backward(d_log_p, prob, steps, a, location, nodes):
    r"""``(d_a, d_location, d_thresholds)`` from :math:`\partial L/\partial \log P` (the module
    docstring's chain through the log-softmax, :math:`\eta` and the cumulative thresholds)."""
    n_pairs, n_cat, n_nodes = prob.shape
    n_raters, n_prompts = location.shape
    d_a, d_location, d_steps = np.zeros(n_raters), np.zeros((n_raters, n_prompts)), np.zeros(n_cat)
    mass, d_eta = np.empty(n_nodes), np.empty(n_nodes)
    for r in range(n_raters):
        for j in range(n_prompts):
            p = r * n_prompts + j
            mass[:] = d_log_p[p, 0]
            for k in range(1, n_cat):
                mass += d_log_p[p, k]
            d_eta[:] = 0.0
            for m in range(n_cat):
                d_logit_sum = 0.0
                for q in range(n_nodes):
                    d_logit = d_log_p[p, m, q] - prob[p, m, q] * mass[q]
                    d_eta[q] += m * d_logit
                    d_logit_sum += d_logit
                d_a[r] -= steps[m] * d_logit_sum
                d_steps[m] -= a[r] * d_logit_sum
            for q in range(n_nodes):
                d_a[r] += (nodes[q] - location[r, j]) * d_eta[q]
                d_location[r, j] -= a[r] * d_eta[q]
    d_thresholds = np.zeros(n_cat - 1)
    running = 0.0
    for v in range(n_cat - 1, 0, -1):  # tau_v enters every c_m with m >= v
        running += d_steps[v]
        d_thresholds[v - 1] = running
    return d_a, d_location, d_thresholds


@_jit
def facets_marginal(a, location, thresholds, nodes, log_weights, unit, pair, category, unit_prompts, score_values,
                    values, mask, alpha, beta, tau, center):
    """``(L, dL/da, dL/dlocation, dL/dthresholds, dL/dalpha, dL/dbeta, dL/dtau)``: the module's
    total marginal log-likelihood (a 0-d array) and its gradient. ``values``, ``mask`` (units,
    S) and ``alpha``, ``beta``, ``tau`` (S,) may have S = 0 (no system scores)."""
    n_units, n_systems = mask.shape
    log_p, prob, steps = _category_table(a, location, thresholds, nodes)
    n_pairs, n_cat = prob.shape[0], prob.shape[1]
    ell = _rating_loglik(log_p, log_weights, unit, pair, category, n_units)
    true = np.zeros((0, 0))
    if n_systems > 0:
        true = _true_scores(prob, score_values, unit_prompts, location.shape[0])
        _add_system_loglik(ell, true, values, mask, alpha, beta, tau, center)
    total, weight = _normalise(ell)
    d_log_p = _rating_backward(weight, unit, pair, category, n_pairs, n_cat)
    d_alpha, d_beta, d_tau = np.zeros(0), np.zeros(0), np.zeros(0)
    if n_systems > 0:
        d_alpha, d_beta, d_tau = _system_backward(weight, true, values, mask, alpha, beta, tau, center, unit_prompts, prob,
                                                  score_values, d_log_p)
    d_a, d_location, d_thresholds = _table_backward(d_log_p, prob, steps, a, location, nodes)
    return np.array(total), d_a, d_location, d_thresholds, d_alpha, d_beta, d_tau


class FacetsMarginal(Op):
    """PyTensor Op of :func:`facets_marginal`: inputs in its order, outputs the total and the
    six gradients; the pullback scales the gradients by the total's output gradient (the
    Apply node is shared, so a log density with its gradient costs one kernel call). No second
    derivative (the Laplace Hessian is central differences of the gradient)."""

    __props__ = ("center",)

    def __init__(self, center: float):
        self.center = float(center)

    def make_node(self, *inputs):
        """The node: five float parameter inputs, the design's integer arrays, seven outputs."""
        floats = [pt.as_tensor_variable(x).astype("float64") for x in inputs[:5]]
        ints = [pt.as_tensor_variable(x).astype("int64") for x in inputs[5:8]]
        rest = [pt.as_tensor_variable(x).astype("float64") for x in inputs[8:]]
        ins = floats + ints + rest
        a, location, thresholds = ins[:3]
        alpha = ins[12]
        outs = [pt.dscalar(), a.type(), location.type(), thresholds.type(), alpha.type(), alpha.type(), alpha.type()]
        return Apply(self, ins, outs)

    def perform(self, node, inputs, outputs):
        """The log-likelihood and its gradients, by :func:`facets_marginal` (Python; Numba runs its own form)."""
        for out, value in zip(outputs, facets_marginal(*inputs, self.center)):
            out[0] = np.asarray(value, dtype="float64")

    def infer_shape(self, node, shapes):
        """A scalar log-likelihood and one gradient per parameter input, shaped as that input."""
        return [(), shapes[0], shapes[1], shapes[2], shapes[12], shapes[12], shapes[12]]

    def pullback(self, inputs, outputs, output_grads):
        """The reverse-mode product: the gradient outputs scaled by the incoming gradient."""
        if any(not isinstance(g.type, DisconnectedType) for g in output_grads[1:]):
            raise NotImplementedError("FacetsMarginal has no second derivative; take the Hessian by differences of the gradient.")
        g = output_grads[0]
        by_input = dict(zip(PARAMETERS, outputs[1:]))
        return [g * by_input[i] if i in by_input else disconnected_type() for i in range(len(inputs))]

    def connection_pattern(self, node):
        """Every output depends on the parameter inputs only, not on the design arrays."""
        return [[True] * 7 if i in PARAMETERS else [False] * 7 for i in range(len(node.inputs))]


#: Inputs with a gradient, in the order of the gradient outputs: a, location, thresholds, alpha, beta, tau.
PARAMETERS = (0, 1, 2, 12, 13, 14)


def _source_version() -> int:
    """CRC-32 of this file: part of PyTensor's Numba cache key, so a changed kernel is never
    served from a graph compiled with the old one (the Op's props alone would not change)."""
    return zlib.crc32(Path(__file__).read_bytes())


def _register_numba() -> None:
    """The Numba backend calls :func:`facets_marginal` directly (no object mode); the cache key is
    the Op's ``center`` and :func:`_source_version`."""
    from pytensor.link.numba.dispatch.basic import numba_njit, register_funcify_default_op_cache_key

    version = _source_version()

    @register_funcify_default_op_cache_key(FacetsMarginal)
    def _numba_facets_marginal(op, node=None, **kwargs):
        center = op.center

        @numba_njit
        def kernel(a, location, thresholds, nodes, log_weights, unit, pair, category, unit_prompts, score_values,
                   values, mask, alpha, beta, tau):
            c = np.ascontiguousarray  # PyTensor passes layout-"A" arrays; "C" lets the loops vectorise
            return facets_marginal(c(a), c(location), c(thresholds), c(nodes), c(log_weights), c(unit), c(pair), c(category),
                                   c(unit_prompts), c(score_values), c(values), c(mask), c(alpha), c(beta), c(tau), center)

        return kernel, version


_register_numba()
