r"""The blocked sampler's two passes over the 0/1 answers in JAX, for a GPU (``fit_leaderboard(backend="jax")``).

The same sums as :mod:`bayes_raters.leaderboard.kernel` (its docstring states them), written as array
expressions over the items x systems matrix held on the JAX device once: with
:math:`\eta = a_j(\theta_s - b_j)`, :math:`p = \operatorname{logit}^{-1}\eta`, :math:`w = p(1 - p)` and a
mask :math:`m` that is 0 for a missing answer,

* the **item pass**: :math:`\sum_s m(y\eta - \log(1 + e^\eta))`, the gradient
  :math:`(\sum_s m(y - p)\eta,\ -a_j\sum_s m(y - p))` and the information
  :math:`(\sum_s mw\eta^2,\ -a_j\sum_s mw\eta,\ a_j^2\sum_s mw)`;
* the **ability pass**: :math:`\sum_j m(y\eta - \log(1 + e^\eta))`, :math:`\sum_j a_j m(y - p)`,
  :math:`\sum_j a_j^2 mw`.

Each is one jitted function in double precision (``jax_enable_x64`` is switched on when a
:class:`JaxPasses` is made); the parameters go to the device and the sums come back each pass, and every
draw stays in NumPy in the calling process. The draws equal the Numba path's up to the sums' rounding
(a different summation order: the sums agree to about 1e-13 relative, ``tests/leaderboard/test_jax_passes.py``),
not bit for bit. Memory on the device: the int8 matrix plus a few float64 temporaries of its size
(about 40 bytes an answer at the peak). Timings on CPU and, when one was lent, on a GPU are in
``models/leaderboards.md`` (``benchmarks/bench_leaderboard_jax.py``).
"""

from __future__ import annotations

import functools

import numpy as np


def _sums(jnp, y, theta, a, b):
    """The per-answer terms of both passes on the items x systems matrix ``y`` (int8, -1 missing)."""
    observed = (y >= 0).astype(theta.dtype)
    right = (y > 0).astype(theta.dtype)
    eta = a[:, None] * (theta[None, :] - b[:, None])
    loglik = observed * (right * eta - jnp.logaddexp(0.0, eta))
    p = 1.0 / (1.0 + jnp.exp(-eta))
    resid = observed * (right - p)
    w = observed * p * (1.0 - p)
    return eta, loglik, resid, w


@functools.cache
def _compiled():
    """The two jitted passes (made on first use, so that importing this module does not import JAX; made
    once, so that a second fit reuses JAX's compiled code for the same shapes)."""
    import jax
    import jax.numpy as jnp

    @jax.jit
    def items(y, theta, a, b):
        eta, loglik, resid, w = _sums(jnp, y, theta, a, b)
        grad = jnp.stack([(resid * eta).sum(1), -a * resid.sum(1)], axis=1)
        info = jnp.stack([(w * eta * eta).sum(1), -a * (w * eta).sum(1), a * a * w.sum(1)], axis=1)
        return loglik.sum(1), grad, info

    @jax.jit
    def abilities(y, theta, a, b):
        _, loglik, resid, w = _sums(jnp, y, theta, a, b)
        return loglik.sum(0), (a[:, None] * resid).sum(0), (a[:, None] ** 2 * w).sum(0)

    return items, abilities


class JaxPasses:
    """:class:`~bayes_raters.leaderboard.kernel.MatrixPasses`' two passes computed by JAX on its default
    device (a GPU where JAX has one; module docstring). ``answers`` (systems x items, int8, -1 missing)
    stays here for the sampler's start values; its transpose is put on the device once. ``label`` and
    ``forkable`` as for :class:`~bayes_raters.leaderboard.kernel.MatrixPasses`.

    Parameters
    ----------
    answers : numpy.ndarray
        Systems x items, int8, 1 right, 0 wrong, -1 not answered.
    device : jax.Device, optional
        Where the passes run; None, JAX's default device.

    Examples
    --------
    >>> import numpy as np
    >>> passes = JaxPasses(np.array([[1, 0, -1], [1, 1, 0]], dtype=np.int8))
    >>> loglik, grad, info = passes.items(np.zeros(2), np.ones(3), np.zeros(3))
    >>> grad.shape, info.shape
    ((3, 2), (3, 3))
    """

    forkable = False

    def __init__(self, answers: np.ndarray, device=None):
        import jax

        jax.config.update("jax_enable_x64", True)
        self.answers = answers
        self.device = device or jax.devices()[0]
        self._y = jax.device_put(np.ascontiguousarray(answers.T), self.device)
        self._items, self._abilities = _compiled()

    @property
    def shape(self) -> tuple[int, int]:
        """(systems, items)."""
        return self.answers.shape

    @property
    def label(self) -> str:
        """Where the passes run, for the fit's inference record."""
        return f" (0/1 passes by JAX on {self.device})"

    def _run(self, function, theta, a, b) -> tuple:
        import jax

        put = lambda x: jax.device_put(np.asarray(x, dtype=np.float64), self.device)  # noqa: E731
        return tuple(np.asarray(part) for part in function(self._y, put(theta), put(a), put(b)))

    def abilities(self, theta: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple:
        """Per system ``(loglik, d/dtheta, information)``."""
        return self._run(self._abilities, theta, a, b)

    def items(self, theta: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple:
        """Per item ``(loglik, gradient (items, 2), information (items, 3))``."""
        return self._run(self._items, theta, a, b)
