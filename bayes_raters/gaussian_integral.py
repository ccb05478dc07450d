r"""The log of a Gaussian integral as one PyTensor Op, its gradient from the same factorisation.

For a symmetric positive definite :math:`Q` (n x n) and a vector :math:`c`,

.. math:: \log \int N(v; 0, I)\, e^{c^\top v - \frac12 v^\top (Q - I) v}\, dv
   = \tfrac12 c^\top Q^{-1} c - \tfrac12 \log\det Q,

with gradient :math:`Q^{-1} c` in :math:`c` and :math:`-\tfrac12(u u^\top + Q^{-1})`,
:math:`u = Q^{-1}c`, in :math:`Q`. :func:`gaussian_log_integral` computes the value, :math:`u`
and :math:`Q^{-1}` in one node from one Cholesky factor, and the gradient reads the last two:
built from PyTensor's ``cholesky`` and ``solve_triangular`` the gradient refactors and solves
with the whole matrix again (about 57 us against 26 us a value and gradient at n = 52 in Numba,
the judges model's biases and rater effects on HANNA; ``models/judges.md``). NumPy (Python
linker), Numba and JAX implementations.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import basic as numba_basic
from pytensor.link.numba.dispatch.basic import register_funcify_default_op_cache_key


class GaussianLogIntegral(Op):
    """``(Q, c) -> (value, Q^{-1} c, Q^{-1})`` (module docstring); the gradient flows through the
    value only."""

    __props__ = ()

    def make_node(self, q, c):
        """The node of a matrix ``q`` and a vector ``c`` (float64 outputs)."""
        q, c = pt.as_tensor_variable(q), pt.as_tensor_variable(c)
        if q.type.ndim != 2 or c.type.ndim != 1:
            raise TypeError("GaussianLogIntegral takes a matrix and a vector.")
        dtype = "float64"
        return Apply(self, [q, c], [pt.scalar(dtype=dtype), pt.vector(dtype=dtype, shape=c.type.shape), pt.matrix(dtype=dtype, shape=q.type.shape)])

    def perform(self, node, inputs, output_storage):
        """NumPy, for PyTensor's Python and C linkers."""
        value, u, inverse = _numpy_integral(*inputs)
        output_storage[0][0], output_storage[1][0], output_storage[2][0] = np.asarray(value), u, inverse

    def infer_shape(self, node, shapes):
        """A scalar, ``c``'s shape and ``q``'s."""
        return [(), shapes[1], shapes[0]]

    def pullback(self, inputs, outputs, cotangents):
        """The value's gradient from the node's own :math:`u` and :math:`Q^{-1}` (module
        docstring); not implemented through the other two outputs, which nothing differentiates."""
        from pytensor.gradient import DisconnectedType, grad_not_implemented

        if any(not isinstance(g.type, DisconnectedType) for g in cotangents[1:]):
            return [grad_not_implemented(self, 0, inputs[0]), grad_not_implemented(self, 1, inputs[1])]
        g_value, u, inverse = cotangents[0], outputs[1], outputs[2]
        return [-0.5 * g_value * (pt.outer(u, u) + inverse), g_value * u]

    def connection_pattern(self, node):
        """Every output depends on ``q``; the value and :math:`u` on ``c``."""
        return [[True, True, True], [True, True, False]]


_OP = GaussianLogIntegral()


def gaussian_log_integral(q, c):
    r""":math:`\tfrac12 c^\top Q^{-1} c - \tfrac12 \log\det Q` (module docstring) of a symmetric
    positive definite ``q`` and a vector ``c``, PyTensor."""
    return _OP(q, c)[0]


def _numpy_integral(q, c):
    """The Op's three outputs in NumPy."""
    chol = np.linalg.cholesky(q)
    inverse = np.linalg.inv(q)
    u = inverse @ c
    return 0.5 * float(c @ u) - float(np.log(np.diagonal(chol)).sum()), u, inverse


@register_funcify_default_op_cache_key(GaussianLogIntegral)
def _numba_gaussian_log_integral(op, node, **kwargs):
    @numba_basic.numba_njit
    def integral(q, c):
        chol = np.linalg.cholesky(q)
        inverse = np.linalg.inv(q)
        u = inverse @ c
        return np.asarray(0.5 * (c @ u) - np.log(np.diag(chol)).sum()), u, inverse

    cache_version = 1
    return integral, cache_version


try:  # JAX is optional: NumPyro and BlackJAX fits compile the graph with it
    from pytensor.link.jax.dispatch import jax_funcify

    @jax_funcify.register(GaussianLogIntegral)
    def _jax_gaussian_log_integral(op, **kwargs):
        import jax.numpy as jnp

        def integral(q, c):
            chol = jnp.linalg.cholesky(q)
            inverse = jnp.linalg.inv(q)
            u = inverse @ c
            return 0.5 * (c @ u) - jnp.log(jnp.diag(chol)).sum(), u, inverse

        return integral
except ImportError:  # pragma: no cover - JAX not installed
    pass
