"""The leaderboard's passes in JAX (:mod:`bayes_raters.leaderboard.jax_passes`), on JAX's CPU here: the sums equal
the Numba kernels' to rounding on both layouts and with missing answers, and a fit with ``backend="jax"``
draws what the Numba fit draws (equal to rounding, not bit for bit: the sums are taken in another order)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from bayes_raters.errors import InvalidInputError
from bayes_raters.leaderboard import fit_leaderboard, simulate_leaderboard
from bayes_raters.leaderboard.kernel import MatrixPasses
from bayes_raters.leaderboard.model import answer_matrix

pytest.importorskip("jax")
from bayes_raters.leaderboard.jax_passes import JaxPasses  # noqa: E402


@pytest.mark.parametrize("shape", [(700, 60), (40, 300)])
def test_jax_sums_equal_the_numba_sums(shape):
    table, _ = simulate_leaderboard(*shape, missing=0.1, random_seed=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an item everyone answered alike: its sums are still sums
        data = answer_matrix(table)
    rng = np.random.default_rng(1)
    theta = 1.5 * rng.normal(size=data.answers.shape[0])
    a, b = np.exp(0.5 * rng.normal(size=data.answers.shape[1])), 2.0 * rng.normal(size=data.answers.shape[1])
    local, jax_passes = MatrixPasses(data.answers, data.answers_t), JaxPasses(data.answers)
    for name in ("abilities", "items"):
        for ours, theirs in zip(getattr(jax_passes, name)(theta, a, b), getattr(local, name)(theta, a, b)):
            assert ours.shape == theirs.shape
            np.testing.assert_allclose(ours, theirs, rtol=1e-11, atol=1e-10 * np.abs(theirs).max(), err_msg=name)


def test_a_jax_fit_draws_what_the_numba_fit_draws():
    table, _ = simulate_leaderboard(40, 150, random_seed=4)
    settings = dict(draws=30, tune=30, random_seed=5, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        numba_fit, jax_fit = fit_leaderboard(table, **settings), fit_leaderboard(table, backend="jax", **settings)
    assert "JAX" in jax_fit.inference.sampler
    for name in numba_fit.posterior.data_vars:
        np.testing.assert_allclose(jax_fit.posterior[name].values.astype(float), numba_fit.posterior[name].values.astype(float),
                                   rtol=1e-5, atol=1e-6, err_msg=name)


def test_jax_with_a_dask_client_or_an_unknown_backend_is_refused():
    table, _ = simulate_leaderboard(10, 20, random_seed=1)
    with pytest.raises(InvalidInputError, match="pass one of the two"):
        fit_leaderboard(table, backend="jax", client=object(), draws=5, tune=5, progressbar=False)
    with pytest.raises(InvalidInputError, match="'numba' or 'jax'"):
        fit_leaderboard(table, backend="cuda", draws=5, tune=5, progressbar=False)
