"""Checks of the marginal models on PyTensor's JAX backend (``nuts_sampler="numpyro"``), run
by ``tests/test_numpyro.py`` in a child interpreter: JAX starts threads, and a pytest process
that has loaded it would later fork (PyMC's parallel chains, process pools), which can deadlock.
Run alone: ``.venv/bin/python tests/numpyro_checks.py``."""

from __future__ import annotations

import warnings

import numpy as np
from arviz import mcse

from bayes_raters.ctt import fit_true_score
from bayes_raters.irt import fit_irt, simulate_responses

SETTINGS = {"draws": 1000, "tune": 1000, "chains": 2}  # ESS >= 400 with margin
# The IRT check compares backends, not priors: the fixed-prior 2PL on 300 x 6. Measured over seeds
# 3-7, 4 chains: max R-hat 1.0012-1.0043, min bulk ESS >= 2,560, no divergences on either sampler.
# The hierarchical 2PL on so few items gave one divergence in 3 of 5 PyMC seeds (300 x 6, and
# 1 in 5 at 400 x 10), and with 2 chains max R-hat reached 1.010: a failed check with no backend fault.
# inference="nuts": these checks are of the NUTS backends (the default would take Laplace draws here).
IRT_SETTINGS = {"draws": 1000, "tune": 1000, "chains": 4, "hierarchical": False, "inference": "nuts"}


def _agree(left, right, name: str) -> None:
    """Posterior means within 5 combined Monte Carlo standard errors, per element."""
    a, b = left[name], right[name]
    tolerance = 5 * np.sqrt(mcse(left[[name]])[name] ** 2 + mcse(right[[name]])[name] ** 2)
    gap = np.abs(a.mean(("chain", "draw")) - b.mean(("chain", "draw")))
    assert bool((gap < tolerance).all()), (name, gap.values, tolerance.values)


def check_marginal_irt_matches_pymc_and_repeats() -> None:
    table, _ = simulate_responses(300, 6, random_seed=11)
    jax_fit = fit_irt(table, "2pl", nuts_sampler="numpyro", random_seed=3, **IRT_SETTINGS)
    pymc_fit = fit_irt(table, "2pl", nuts_sampler="pymc", random_seed=3, **IRT_SETTINGS)
    assert jax_fit.inference.sampler == "numpyro"
    assert jax_fit.report.converged
    for name in ("a", "b"):
        _agree(jax_fit.posterior, pymc_fit.posterior, name)
    again = fit_irt(table, "2pl", nuts_sampler="numpyro", random_seed=3, **IRT_SETTINGS)
    np.testing.assert_array_equal(again.posterior["a"].values, jax_fit.posterior["a"].values)
    np.testing.assert_array_equal(again.posterior["theta"].values, jax_fit.posterior["theta"].values)


def check_true_score_model_matches_pymc() -> None:
    from bayes_raters.ctt import double_scored_subset, simulate_dataset, system_scores_to_long

    data = simulate_dataset(600, raters_per_category=2, systems_per_category=1, random_seed=12)
    ratings = double_scored_subset(data, ("h_5", "h_6"), 300, random_seed=13)
    systems = system_scores_to_long(data, ["sys_3"])
    jax_fit = fit_true_score(ratings, systems, nuts_sampler="numpyro", random_seed=4, **SETTINGS)
    pymc_fit = fit_true_score(ratings, systems, nuts_sampler="pymc", random_seed=4, **SETTINGS)
    assert bool(jax_fit.convergence_table()["converged"].all())
    _agree(jax_fit.posterior, pymc_fit.posterior, "prmse")


if __name__ == "__main__":
    from bayes_raters.errors import ConvergenceWarning

    warnings.simplefilter("error", ConvergenceWarning)  # as in the test suite
    check_marginal_irt_matches_pymc_and_repeats()
    check_true_score_model_matches_pymc()
    print("numpyro checks passed")
