r"""Bradley-Terry comparisons by many annotators: each pooled row's log-likelihood and its
gradient in compiled passes (Numba), as two PyTensor Ops behind the ``outcome`` variable of
:func:`bayes_raters.pairwise.model.build_pairwise_model` (``fused=True``, the default).

Notation of :mod:`bayes_raters.pairwise.likelihood`: row :math:`n` pools the judgements of one
pair :math:`(a_n, b_n)` by one annotator :math:`k_n` into counts (losses :math:`l_n`, wins
:math:`w_n`, :math:`t_n = l_n + w_n`); with abilities :math:`u` and annotator multipliers
:math:`r` (consistencies),

.. math::

    x_n = r_{k_n} (u_{a_n} - u_{b_n}), \qquad
    \ell_n = C_n - t_n \,\mathrm{softplus}(-x_n) - l_n x_n, \qquad
    \frac{\partial \ell_n}{\partial x_n} = t_n\, \sigma(-x_n) - l_n ,

with :math:`\mathrm{softplus}(-x) = \log(1 + e^{-|x|}) + \max(-x, 0)` and
:math:`\sigma(-x) = e^{-|x|} / (1 + e^{-|x|})` for :math:`x \ge 0`, :math:`1 / (1 + e^{-|x|})`
otherwise. The forward Op returns :math:`\ell` and :math:`\partial\ell/\partial x` per row (the
pointwise log-likelihood stays per row for LOO); its pullback, for incoming row gradients
:math:`g_n`, is the second Op:

.. math::

    \frac{\partial}{\partial u_i} = \sum_n g_n \frac{\partial \ell_n}{\partial x_n} r_{k_n}
    ([a_n = i] - [b_n = i]), \qquad
    \frac{\partial}{\partial r_k} = \sum_{n: k_n = k} g_n \frac{\partial \ell_n}{\partial x_n}
    (u_{a_n} - u_{b_n}).

Rows come sorted by pair (``pool_comparisons`` orders them by item a, item b, annotator), so
both passes walk pair segments: one difference per segment, and the item gradient sums in a
register rather than by scatter-adds into a handful of slots (whose store-to-load chains cost
more than the arithmetic).

Why hand-written: on SoundQuality's 21,924 judge-by-pair rows the PyTensor graph of the same
log density and gradient (gathers, an elementwise softplus, three scatter-adds) took most of a
NUTS fit; the two passes take about a fifth of its time (``models/pairwise_beta_latent.md``,
Real data, gives the figures). As in :mod:`bayes_raters.facets.kernel`, the exponentials and
logarithms run in NumPy (one object-mode call: its SIMD ``exp`` and ``log1p`` are several times
faster than the scalar library calls Numba makes), and no fast-math flag is set, so the same seed
gives the same draws whether Numba compiled fresh or from its cache. The graph stays for ties,
the probit link and the JAX samplers (``fused=False``) and as the tests' reference (equal to
1e-12, ``tests/pairwise/test_kernel.py``).
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


def _jit(function):
    """Numba's compile: cached on disk, no GIL, NumPy's error model, strict IEEE arithmetic."""
    return numba.njit(cache=True, nogil=True, error_model="numpy")(function)


def pair_segments(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(starts, first, second)``: the row where each run of one pair begins (and the number of
    rows last), and the pair's two items. Rows need not be sorted; a pair split over several runs
    is several segments."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    change = np.flatnonzero((a[1:] != a[:-1]) | (b[1:] != b[:-1])) + 1
    starts = np.concatenate([[0], change, [len(a)]]).astype(np.int64) if len(a) else np.zeros(1, np.int64)
    return starts, a[starts[:-1]], b[starts[:-1]]


@_jit
def _products(u, r, starts, first, second, who):
    """x_n = r_k (u_a - u_b), one difference per pair segment."""
    x = np.empty(who.size)
    for p in range(first.size):
        d = u[first[p]] - u[second[p]]
        for n in range(starts[p], starts[p + 1]):
            x[n] = r[who[n]] * d
    return x


@numba.njit(cache=True, error_model="numpy")  # no nogil: the object-mode block holds the GIL
def _exp_log1p(x):
    """e^{-|x|} and log(1 + e^{-|x|}) by NumPy's vectorised functions."""
    with numba.objmode(e="float64[::1]", log_term="float64[::1]"):
        e = np.exp(-np.abs(x))
        log_term = np.log1p(e)
    return e, log_term


@_jit
def _row_terms(x, e, log_term, losses, totals, coefficient):
    """Each row's log-likelihood and its derivative in x (module docstring)."""
    loglik = np.empty(x.size)
    slope = np.empty(x.size)
    for n in range(x.size):
        softplus = log_term[n] + max(-x[n], 0.0)
        loglik[n] = coefficient[n] - totals[n] * softplus - losses[n] * x[n]
        sigmoid = (e[n] if x[n] >= 0.0 else 1.0) / (1.0 + e[n])
        slope[n] = totals[n] * sigmoid - losses[n]
    return loglik, slope


@numba.njit(cache=True, error_model="numpy")
def bradley_terry_rows(u, r, starts, first, second, who, losses, totals, coefficient):
    """``(loglik, slope)`` per row: the forward pass of the module docstring."""
    x = _products(u, r, starts, first, second, who)
    e, log_term = _exp_log1p(x)
    return _row_terms(x, e, log_term, losses, totals, coefficient)


@_jit
def bradley_terry_pullback(g, slope, u, r, starts, first, second, who):
    """``(du, dr)``: the gradient of sum_n g_n l_n in the abilities and the multipliers."""
    du = np.zeros(u.size)
    dr = np.zeros(r.size)
    for p in range(first.size):
        d = u[first[p]] - u[second[p]]
        along = 0.0
        for n in range(starts[p], starts[p + 1]):
            gx = g[n] * slope[n]
            along += gx * r[who[n]]
            dr[who[n]] += gx * d
        du[first[p]] += along
        du[second[p]] -= along
    return du, dr


class BradleyTerryRows(Op):
    """Inputs ``(u, r, starts, first, second, who, losses, totals, coefficient)``; outputs each
    row's log-likelihood and its derivative in x. Gradients flow to ``u`` and ``r`` only, through
    :class:`BradleyTerryPullback`."""

    __props__ = ()

    def make_node(self, u, r, starts, first, second, who, losses, totals, coefficient):
        """Float abilities and multipliers, the integer design, float counts; two row vectors out."""
        floats = [pt.as_tensor_variable(v).astype("float64") for v in (u, r)]
        ints = [pt.as_tensor_variable(v).astype("int64") for v in (starts, first, second, who)]
        counts = [pt.as_tensor_variable(v).astype("float64") for v in (losses, totals, coefficient)]
        return Apply(self, floats + ints + counts, [pt.dvector(), pt.dvector()])

    def perform(self, node, inputs, outputs):
        """Both row vectors by :func:`bradley_terry_rows` (Python; Numba runs its own form)."""
        for out, value in zip(outputs, bradley_terry_rows(*_contiguous(inputs))):
            out[0] = value

    def infer_shape(self, node, shapes):
        """One value per row."""
        return [shapes[5], shapes[5]]

    def pullback(self, inputs, outputs, output_grads):
        """The row gradients through :class:`BradleyTerryPullback`; none for the slope output."""
        if not isinstance(output_grads[1].type, DisconnectedType):
            raise NotImplementedError("BradleyTerryRows has no second derivative.")
        du, dr = BradleyTerryPullback()(output_grads[0], outputs[1], *inputs[:6])
        return [du, dr] + [disconnected_type() for _ in inputs[2:]]

    def connection_pattern(self, node):
        """Both outputs depend on ``u`` and ``r``, not on the design."""
        return [[True, True], [True, True]] + [[False, False]] * 7


class BradleyTerryPullback(Op):
    """Inputs ``(g, slope, u, r, starts, first, second, who)``; outputs the gradients in ``u``
    and ``r`` (:func:`bradley_terry_pullback`). No derivative of its own."""

    __props__ = ()

    def make_node(self, g, slope, u, r, starts, first, second, who):
        """Float row vectors and parameters, the integer design; two gradients shaped as u and r."""
        floats = [pt.as_tensor_variable(v).astype("float64") for v in (g, slope, u, r)]
        ints = [pt.as_tensor_variable(v).astype("int64") for v in (starts, first, second, who)]
        return Apply(self, floats + ints, [floats[2].type(), floats[3].type()])

    def perform(self, node, inputs, outputs):
        """The gradients by :func:`bradley_terry_pullback` (Python; Numba runs its own form)."""
        for out, value in zip(outputs, bradley_terry_pullback(*_contiguous(inputs))):
            out[0] = value

    def infer_shape(self, node, shapes):
        """Shaped as ``u`` and ``r``."""
        return [shapes[2], shapes[3]]


def _contiguous(inputs) -> list[np.ndarray]:
    return [np.ascontiguousarray(v) for v in inputs]


def _source_version() -> int:
    """CRC-32 of this file: part of PyTensor's Numba cache key, so a changed kernel is never
    served from a graph compiled with the old one."""
    return zlib.crc32(Path(__file__).read_bytes())


def _register_numba() -> None:
    """The Numba backend calls the two passes directly (no object mode around them)."""
    from pytensor.link.numba.dispatch.basic import numba_njit, register_funcify_default_op_cache_key

    version = _source_version()

    @register_funcify_default_op_cache_key(BradleyTerryRows)
    def _numba_rows(op, node=None, **kwargs):
        @numba_njit
        def rows(u, r, starts, first, second, who, losses, totals, coefficient):
            c = np.ascontiguousarray
            return bradley_terry_rows(c(u), c(r), c(starts), c(first), c(second), c(who), c(losses), c(totals), c(coefficient))

        return rows, version

    @register_funcify_default_op_cache_key(BradleyTerryPullback)
    def _numba_pullback(op, node=None, **kwargs):
        @numba_njit
        def pullback(g, slope, u, r, starts, first, second, who):
            c = np.ascontiguousarray
            return bradley_terry_pullback(c(g), c(slope), c(u), c(r), c(starts), c(first), c(second), c(who))

        return pullback, version


_register_numba()
