"""The marginal models on PyTensor's JAX backend (``nuts_sampler="numpyro"``), so a user
with a GPU can sample them there: same posterior as PyMC's NUTS, same draws for a seed."""

from __future__ import annotations

import numpy as np
import pytest
from arviz import mcse

pytest.importorskip("numpyro")  # in the test extra; the package itself does not need JAX

from bayes_raters.ctt import fit_true_score_model  # noqa: E402
from bayes_raters.irt import fit_irt, simulate_responses  # noqa: E402

SETTINGS = {"draws": 1000, "tune": 1000, "chains": 2}  # ESS >= 400 with margin


def _agree(left, right, name: str) -> None:
    """Posterior means within 5 combined Monte Carlo standard errors, per element."""
    a, b = left[name], right[name]
    tolerance = 5 * np.sqrt(mcse(left[[name]])[name] ** 2 + mcse(right[[name]])[name] ** 2)
    gap = np.abs(a.mean(("chain", "draw")) - b.mean(("chain", "draw")))
    assert bool((gap < tolerance).all()), (name, gap.values, tolerance.values)


def test_marginal_irt_on_numpyro_matches_pymc_and_repeats():
    table, _ = simulate_responses(300, 6, random_seed=11)
    jax_fit = fit_irt(table, "2pl", nuts_sampler="numpyro", random_seed=3, **SETTINGS)
    pymc_fit = fit_irt(table, "2pl", nuts_sampler="pymc", random_seed=3, **SETTINGS)
    assert jax_fit.posterior.attrs["nuts_sampler"] == "numpyro"
    assert jax_fit.report.converged
    for name in ("a", "b"):
        _agree(jax_fit.posterior, pymc_fit.posterior, name)
    again = fit_irt(table, "2pl", nuts_sampler="numpyro", random_seed=3, **SETTINGS)
    np.testing.assert_array_equal(again.posterior["a"].values, jax_fit.posterior["a"].values)
    np.testing.assert_array_equal(again.posterior["theta"].values, jax_fit.posterior["theta"].values)


def test_true_score_model_on_numpyro_matches_pymc(tmp_path):
    from bayes_raters.ctt import double_scored_subset, simulate_dataset, system_scores_to_long

    data = simulate_dataset(600, raters_per_category=2, systems_per_category=1, random_seed=12)
    ratings = double_scored_subset(data, ("h_5", "h_6"), 300, random_seed=13)
    systems = system_scores_to_long(data, ["sys_3"])
    jax_fit = fit_true_score_model(ratings, systems, nuts_sampler="numpyro", random_seed=4, **SETTINGS)
    pymc_fit = fit_true_score_model(ratings, systems, nuts_sampler="pymc", random_seed=4, **SETTINGS)
    assert bool(jax_fit.convergence()["converged"].all())
    _agree(jax_fit.posterior, pymc_fit.posterior, "prmse")
