r"""Bivariate normal rectangle probabilities, in NumPy and as a differentiable PyTensor op.

Two ratings of one response are independent given its true score T, but not given what
is known before them (T ~ N(m, v)): their latent values :math:`U_j = T + \delta_j + e_j`
are bivariate normal with correlation :math:`\rho = v / \sqrt{(v + \sigma_1^2)(v + \sigma_2^2)}`,
so the probability of a pair of ordinal ratings is a rectangle probability

.. math::  P = \Phi_2(u_1, u_2) - \Phi_2(l_1, u_2) - \Phi_2(u_1, l_2) + \Phi_2(l_1, l_2)

on the standardised bounds. This replaces a quadrature over T, whose integrand has steps as
sharp as the rater error (Gauss-Hermite and trapezoid rules with 7-61 nodes missed 1e-6 by
up to 4e-4 on realistic cases, and cost a node count per response).

**Value.** Owen (1956):
:math:`\Phi_2(h, k; \rho) = \tfrac12\Phi(h) + \tfrac12\Phi(k) - T(h, a_h) - T(k, a_k) - \beta`
with :math:`a_h = (k - \rho h)/(h\sqrt{1 - \rho^2})`, :math:`a_k = (h - \rho k)/(k\sqrt{1 - \rho^2})`,
:math:`\beta = 1/2` when :math:`hk < 0` and 0 otherwise; Owen's T function is
``scipy.special.owens_t``. Arguments within 1e-12 of 0 are moved to
1e-12 (the function is continuous, so this changes the value by about 1e-13). Infinite
bounds are finite stand-ins of +-:data:`FAR` standard deviations, where
:math:`\Phi_2(h, \infty) = \Phi(h)` and :math:`\Phi_2(-\infty, k) = 0` are used exactly.
**Accuracy.** Each coordinate whose interval lies mostly above 0 is reflected (:math:`U \to -U`,
which flips the sign of :math:`\rho`), so the rectangle sits towards the lower tail where
:math:`\Phi_2` is small and the four-term sum loses little to cancellation.
``tests/test_bivariate.py`` checks :math:`\log P` against ``scipy.integrate.quad`` (to 1e-6 per
response) on agreeing, adjacent, opposite and extreme ratings with :math:`|\rho|` up to 0.99.

**Gradient** (closed form): :math:`\partial\Phi_2/\partial h = \varphi(h)\,\Phi((k - \rho h)/\sqrt{1-\rho^2})`,
:math:`\partial\Phi_2/\partial\rho = \varphi_2(h, k; \rho)`; these are PyTensor expressions,
so second derivatives (the conditional variance of T, by Tweedie's formula) exist too.
The op runs NumPy/SciPy code (no JAX or Numba kernel): models that use it sample with PyMC's
NUTS or nutpie, not numpyro.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from scipy.special import log_ndtr, ndtr, owens_t

FAR = 1e4  # stand-in for an infinite bound, in standard deviations
_TINY = 1e-12
TAIL = 1e-9  # below this P, the log-space quadrature gives the value
QUAD_NODES = 2001
MAX_RHO = 1 - 1e-9  # |rho| beyond this (a rater error SD near 0) is treated as this
_LOG_2PI = float(np.log(2 * np.pi))
_ROOT_HALF = np.float64(np.sqrt(0.5))  # a NumPy float64: PyTensor keeps its precision
_LOG_HALF = np.float64(np.log(0.5))


def _owen(h: np.ndarray, k: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """Owen's formula for finite h, k (see the module docstring)."""
    h = np.where(np.abs(h) < _TINY, _TINY, h)
    k = np.where(np.abs(k) < _TINY, _TINY, k)
    s = np.sqrt(1.0 - rho * rho)
    value = 0.5 * (ndtr(h) + ndtr(k)) - owens_t(h, (k - rho * h) / (h * s)) - owens_t(k, (h - rho * k) / (k * s))
    return value - np.where(h * k < 0, 0.5, 0.0)


def bvn_cdf(h: np.ndarray, k: np.ndarray, rho: np.ndarray) -> np.ndarray:
    r""":math:`P(X \le h, Y \le k)` for standard bivariate normal (X, Y) with correlation rho."""
    h, k, rho = (np.ravel(x) for x in np.broadcast_arrays(*(np.asarray(x, float) for x in (h, k, rho))))
    value = np.zeros(h.shape)
    top_h, top_k = h >= FAR / 2, k >= FAR / 2
    value[top_k] = ndtr(h[top_k])
    value[top_h] = ndtr(k[top_h])
    finite = ~(top_h | top_k | (h <= -FAR / 2) | (k <= -FAR / 2))
    value[finite] = _owen(h[finite], k[finite], rho[finite])
    return np.clip(value, 0.0, 1.0)


def log_diff_ndtr_np(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """log(Phi(b) - Phi(a)) for a <= b, stable in both tails."""
    flip = a > 0  # upper tail: Phi(b) - Phi(a) = Phi(-a) - Phi(-b)
    hi, lo = np.where(flip, -a, b), np.where(flip, -b, a)
    top = log_ndtr(hi)
    with np.errstate(divide="ignore"):
        return top + np.log1p(-np.exp(np.minimum(log_ndtr(lo) - top, 0.0)))


def log_diff_ndtr(lower, upper):
    r""":math:`\log(\Phi(u) - \Phi(l))` for :math:`l < u` (PyTensor), stable in both tails through
    :math:`\Phi(-x) = \tfrac12 e^{-x^2/2}\,\mathrm{erfcx}(x/\sqrt2)`. PyMC's
    ``log_diff_normal_cdf`` has the same algebra but scales by ``pt.sqrt(2.0)``, a float32
    constant, so it is off by about 3e-8 relative to the squared argument: 4.5e-7 at
    :math:`\log P = -15` and 1.1e-5 at -312 (measured against mpmath)."""
    x, y = upper * _ROOT_HALF, lower * _ROOT_HALF
    both_above = -pt.square(y) + pt.log(pt.erfcx(y) - pt.exp(pt.square(y) - pt.square(x)) * pt.erfcx(x))
    both_below = -pt.square(x) + pt.log(pt.erfcx(-x) - pt.exp(pt.square(x) - pt.square(y)) * pt.erfcx(-y))
    across = pt.log(pt.erf(x) - pt.erf(y))
    return _LOG_HALF + pt.switch(pt.gt(y, 0), both_above, pt.switch(pt.lt(x, 0), both_below, across))


def log_diff_ndtr_erfc(lower, upper):
    r""":math:`\log(\Phi(u) - \Phi(l))` for :math:`l < u` (PyTensor) by one difference of two
    ``erfc``, the interval first reflected so that its midpoint is at or below 0: about a third of
    the cost of :func:`log_diff_ndtr` (which evaluates three branches), equal to it within
    4.4e-14 relative for midpoints within 37 SDs and widths from 1e-3 to 30 SDs
    (``tests/judges/test_ordinal.py``). Beyond about 38 SDs the difference underflows and the log is
    held at that of the smallest normal double (gradient zero): for quadrature nodes, whose
    weight there is nil, not for tail probabilities themselves."""
    flip = pt.gt(lower + upper, 0)
    lo, hi = pt.switch(flip, -upper, lower), pt.switch(flip, -lower, upper)
    difference = pt.erfc(-hi * _ROOT_HALF) - pt.erfc(-lo * _ROOT_HALF)
    return _LOG_HALF + pt.log(pt.maximum(difference, np.finfo(float).tiny))


def _oriented(lower, upper):
    """Reflect an interval whose midpoint is above 0: returns (lower, upper, sign)."""
    flip = (lower + upper) > 0
    return np.where(flip, -upper, lower), np.where(flip, -lower, upper), np.where(flip, -1.0, 1.0)


def _log_rectangle_by_quadrature(l1, u1, l2, u2, rho, nodes: int = QUAD_NODES) -> np.ndarray:
    r"""log P by :math:`P = \int_{l_1}^{u_1} \varphi(x)[\Phi((u_2 - \rho x)/s) - \Phi((l_2 - \rho x)/s)]\,dx`
    in log space: the integrand is log-concave, so a coarse grid finds where it lies within
    e^-45 of its peak and Simpson's rule with ``nodes`` (odd) points integrates that window."""
    s = np.sqrt(1.0 - rho**2)[:, None]
    hi = np.minimum(u1, 40.0)  # phi(x) is below e^-800 beyond 40 of the interval's top or of 0
    lo, hi = np.maximum(l1, np.minimum(hi, 0.0) - 40.0)[:, None], hi[:, None]

    def log_f(x):
        return -0.5 * x**2 - 0.5 * _LOG_2PI + log_diff_ndtr_np((l2[:, None] - rho[:, None] * x) / s, (u2[:, None] - rho[:, None] * x) / s)

    coarse = lo + (hi - lo) * np.linspace(0.0, 1.0, 401)
    values = log_f(coarse)
    keep = values >= values.max(axis=1, keepdims=True) - 45.0
    first = np.argmax(keep, axis=1)
    last = keep.shape[1] - 1 - np.argmax(keep[:, ::-1], axis=1)
    rows = np.arange(len(coarse))
    a = coarse[rows, np.maximum(first - 1, 0)][:, None]
    b = coarse[rows, np.minimum(last + 1, keep.shape[1] - 1)][:, None]
    grid = a + (b - a) * np.linspace(0.0, 1.0, nodes)
    values = log_f(grid)
    weights = np.where(np.arange(nodes) % 2 == 1, 4.0, 2.0) / 3.0  # Simpson's rule
    weights[[0, -1]] = 1.0 / 3.0
    top = values.max(axis=1, keepdims=True)
    total = np.log(np.sum(weights * np.exp(values - top), axis=1)) + top[:, 0]
    return total + np.log((b - a)[:, 0] / (nodes - 1))


def log_rectangle(l1, u1, l2, u2, rho) -> np.ndarray:
    r""":math:`\log P(l_1 < X \le u_1, l_2 < Y \le u_2)`, (X, Y) standard bivariate normal with
    correlation ``rho``; bounds beyond +-FAR/2 act as infinite (NumPy arrays of one shape)."""
    shape = np.broadcast_shapes(*(np.shape(x) for x in (l1, u1, l2, u2, rho)))
    l1, u1, l2, u2, rho = (np.broadcast_to(np.asarray(x, float), shape).ravel() for x in (l1, u1, l2, u2, rho))
    rho = np.clip(rho, -MAX_RHO, MAX_RHO)
    l1, u1, s1 = _oriented(l1, u1)
    l2, u2, s2 = _oriented(l2, u2)
    r = rho * s1 * s2
    corners = bvn_cdf(np.concatenate([u1, l1, u1, l1]), np.concatenate([u2, u2, l2, l2]), np.tile(r, 4))
    first, second, third, fourth = corners.reshape(4, -1)
    total = first - second - third + fourth
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(total)
    tail = ~(total >= TAIL)
    if tail.any():
        out[tail] = _log_rectangle_by_quadrature(l1[tail], u1[tail], l2[tail], u2[tail], r[tail])
    return out.reshape(shape)


def _normal_logpdf(x):
    return -0.5 * x**2 - 0.5 * _LOG_2PI


class LogRectangle(Op):
    r"""PyTensor op for :func:`log_rectangle` with the closed-form gradient of the module
    docstring, taken in log space so that it stays exact where P is tiny:
    :math:`\partial \log P/\partial u_1 = \varphi(u_1)[\Phi((u_2 - \rho u_1)/s) - \Phi((l_2 - \rho u_1)/s)]/P`
    (likewise for the other bounds) and :math:`\partial \log P/\partial \rho = \sum \pm \varphi_2/P`
    over the four corners."""

    __props__ = ()

    def make_node(self, *bounds):
        """The node: the bounds and rho broadcast to one shape, float64."""
        inputs = pt.broadcast_arrays(*(pt.as_tensor_variable(x).astype("float64") for x in bounds))
        return Apply(self, list(inputs), [inputs[0].type()])

    def perform(self, node, inputs, outputs):
        """The log rectangle probabilities, in NumPy/SciPy."""
        outputs[0][0] = np.asarray(log_rectangle(*inputs), dtype="float64")

    def infer_shape(self, node, shapes):
        """The output has the inputs' (broadcast) shape."""
        return [shapes[0]]

    def pullback(self, inputs, outputs, output_grads):
        """The gradient with respect to the four bounds and rho (see the module docstring)."""
        l1, u1, l2, u2, rho = inputs
        (g,) = output_grads
        (log_p,) = outputs
        rho = pt.clip(rho, -MAX_RHO, MAX_RHO)
        s = pt.sqrt(1.0 - rho**2)
        finite = [pt.clip(x, -FAR, FAR) for x in (l1, u1, l2, u2)]
        l1, u1, l2, u2 = finite

        def edge(x, lo, hi):  # log of phi(x) [Phi((hi - rho x)/s) - Phi((lo - rho x)/s)] - log P
            return _normal_logpdf(x) + log_diff_ndtr((lo - rho * x) / s, (hi - rho * x) / s) - log_p

        def corner(x, y):
            return pt.exp(-(x**2 - 2 * rho * x * y + y**2) / (2 * s**2) - _LOG_2PI - log_p) / s

        d_rho = corner(u1, u2) - corner(l1, u2) - corner(u1, l2) + corner(l1, l2)
        return [
            -g * pt.exp(edge(l1, l2, u2)),
            g * pt.exp(edge(u1, l2, u2)),
            -g * pt.exp(edge(l2, l1, u1)),
            g * pt.exp(edge(u2, l1, u1)),
            g * d_rho,
        ]


log_rectangle_op = LogRectangle()


def shift_derivatives(l1, u1, l2, u2, rho, w1, w2, log_p):
    r"""First and second derivatives of :math:`\log P` along a shift that moves bound j at
    rate :math:`w_j` (PyTensor; ``log_p`` from the op). With :math:`s = \sqrt{1-\rho^2}`, at an
    edge :math:`x \in \{l_1, u_1\}` let :math:`a, b = (u_2 - \rho x)/s, (l_2 - \rho x)/s`,
    :math:`D(x) = \Phi(a) - \Phi(b)`, :math:`A(x) = \varphi(x) D(x)/P` (the gradient's edge term)
    and :math:`R(x) = (\varphi(a) - \varphi(b))/D(x)`; then

    .. math::
        \frac{P'}{P} = w_1 \sum_x \pm A(x) + (1 \leftrightarrow 2),\qquad
        \frac{P''}{P} = w_1 \sum_x \pm A(x)\Big[-w_1 x + \frac{w_2 - \rho w_1}{s} R(x)\Big] + (1 \leftrightarrow 2),

    (+ at the upper bound, - at the lower) and :math:`(\log P)'' = P''/P - (P'/P)^2`. Each
    term is a ratio taken in log space, and the same :math:`\log D(x)` enters :math:`A` and
    :math:`R`, so its rounding cancels (written with :math:`\varphi_2/P` instead, the
    variance was off by 1e-3 relative at log P = -80). This replaces differentiating the op's
    gradient a second time, which was over ten times slower for the PRMSE deterministics
    (``models/implementation.md``)."""
    rho = pt.clip(rho, -MAX_RHO, MAX_RHO)
    s = pt.sqrt(1.0 - rho**2)
    l1, u1, l2, u2 = (pt.clip(x, -FAR, FAR) for x in (l1, u1, l2, u2))

    def edge(x, lo, hi, own, other):  # (A(x), A(x) [-own x + (other - rho own) R(x)/s])
        a, b = (hi - rho * x) / s, (lo - rho * x) / s
        log_d = log_diff_ndtr(b, a)
        weight = pt.exp(_normal_logpdf(x) + log_d - log_p)
        ratio = pt.exp(_normal_logpdf(a) - log_d) - pt.exp(_normal_logpdf(b) - log_d)
        return weight, weight * (-own * x + (other - rho * own) * ratio / s)

    (a_u1, b_u1), (a_l1, b_l1) = edge(u1, l2, u2, w1, w2), edge(l1, l2, u2, w1, w2)
    (a_u2, b_u2), (a_l2, b_l2) = edge(u2, l1, u1, w2, w1), edge(l2, l1, u1, w2, w1)
    first = w1 * (a_u1 - a_l1) + w2 * (a_u2 - a_l2)
    second = w1 * (b_u1 - b_l1) + w2 * (b_u2 - b_l2)
    return first, second - first**2


def log_rectangle_probability(l1, u1, l2, u2, rho, lib=pt):
    r""":math:`\log P(l_1 < X \le u_1, l_2 < Y \le u_2)` for standard bivariate normal (X, Y)
    with correlation ``rho``: the op (``lib=pt``, with gradients) or :func:`log_rectangle`."""
    return log_rectangle_op(l1, u1, l2, u2, rho) if lib is pt else log_rectangle(l1, u1, l2, u2, rho)


def _register_numba_fallback() -> None:
    """The op runs SciPy code through Numba's object mode (PyTensor's default for ops without
    a Numba kernel): registered here so that choice is explicit and PyTensor's warning about it
    does not reach users at every compile."""
    import warnings

    from pytensor.link.numba.dispatch.basic import generate_fallback_impl, numba_funcify

    @numba_funcify.register(LogRectangle)
    def _numba_log_rectangle(op, node=None, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return generate_fallback_impl(op, node, **kwargs)


_register_numba_fallback()
