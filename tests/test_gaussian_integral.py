"""The Gaussian integral Op (``bayes_raters.gaussian_integral``): its value and gradient against
PyTensor's own Cholesky graph, against finite differences, and the same in Numba and JAX."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.gradient import verify_grad

from bayes_raters.gaussian_integral import gaussian_log_integral
from tests.modes import PYTHON


def _reference(q, c):
    chol = pt.linalg.cholesky(q)
    z = pt.linalg.solve_triangular(chol, c, lower=True)
    return 0.5 * (z**2).sum() - pt.log(pt.diagonal(chol)).sum()


@pytest.fixture(scope="module")
def point():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(7, 12))
    return np.eye(7) + a @ a.T / 12, rng.normal(size=7)


@pytest.mark.parametrize("mode", [PYTHON, "NUMBA", "JAX"])
def test_value_and_gradient_equal_the_cholesky_graph(point, mode):
    """The value and the gradient in ``c`` to 1e-12; in ``q`` (symmetric) the gradient summed
    with its transpose, as the Cholesky graph reads one triangle."""
    if mode == "JAX":
        pytest.importorskip("jax")
    q, c = pt.matrix("q", shape=(7, 7)), pt.vector("c", shape=(7,))
    ours, reference = gaussian_log_integral(q, c), _reference(q, c)
    f = pytensor.function([q, c], [ours, *pt.grad(ours, [q, c])], mode=mode)
    g = pytensor.function([q, c], [reference, *pt.grad(reference, [q, c])], mode=PYTHON)
    (value, dq, dc), (ref_value, ref_dq, ref_dc) = f(*point), g(*point)
    assert float(value) == pytest.approx(float(ref_value), rel=1e-12)
    np.testing.assert_allclose(dc, ref_dc, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dq + dq.T, ref_dq + ref_dq.T, rtol=1e-10, atol=1e-12)


def test_gradient_matches_finite_differences(point):
    """Through a symmetric parametrisation :math:`Q = I + A A^\\top`."""
    rng = np.random.default_rng(4)
    verify_grad(lambda a, c: gaussian_log_integral(pt.eye(7) + a @ a.T, c), [rng.normal(size=(7, 4)), point[1]], rng=rng, mode=PYTHON)
