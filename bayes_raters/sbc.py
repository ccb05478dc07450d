r"""Simulation-based calibration (SBC; Talts, Betancourt, Simpson, Vehtari & Gelman 2018).

If :math:`\theta^* \sim p(\theta)` and :math:`y \sim p(y \mid \theta^*)`, then
:math:`\theta^*` is a draw from :math:`p(\theta \mid y)`; so the rank of :math:`\theta^*`
among L independent posterior draws is uniform on 0..L whenever the fit is exact. A model
whose fit is biased, over- or under-dispersed shows ranks piled at one end, at both ends
or in the middle.

Here each configuration (:mod:`validation.sbc_models`) draws its parameters from the
model's own priors and its data from the model, fits with the package's real fit path, and
returns the posterior draws of each scalar quantity (parameters, PRMSE, a few per-item
values). The rank uses L = 99 draws evenly spaced over all chains (fits have bulk ESS well
above 99, so thinning leaves them nearly independent), so ranks lie in 0..99.

**Uniformity test, fixed before any run:** per quantity, Pearson's chi-square of the ranks in
20 equal bins (5 ranks each) against the uniform; a configuration fails when any quantity's
p-value is below 0.01 divided by the number of quantities in that configuration (Bonferroni;
the family-wise false alarm rate of a calibrated configuration is then at most 1%). The
ECDF-difference plot (ArviZ's ``plot_ecdf_pit``, which prints its own uniformity p-value in
each panel) shows where the ranks depart.

Why not ``simuk``: simuk 0.3 (ArviZ's SBC package) draws data from the model's prior
predictive and conditions by swapping observed variables. Our models integrate latents out
and enter the likelihood as ``pm.Potential`` terms on sufficient statistics or answer
patterns (no observed variables to swap), and the pivoted IRT difficulties are ``Flat``
variables that ``pm.sample_prior_predictive`` cannot draw; simuk's custom-simulator path
still needs observed variables to condition on. So the small runner below calls our fit
functions instead; its output (a ``prior_sbc`` group of PIT values) is the layout simuk and
``az.plot_ecdf_pit`` use.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from concurrent.futures import Executor, as_completed
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

RANK_DRAWS = 99  # L: ranks in 0..L
BINS = 20
FAMILY_ALPHA = 0.01


@dataclass(frozen=True)
class Configuration:
    """One SBC configuration: ``simulate(rng) -> (truth, data)`` with ``truth`` a dict of
    scalar quantities, and ``fit(data, seed) -> (draws, report)`` with ``draws`` a dict of
    1-D arrays of posterior draws of the same quantities and ``report`` the fit's
    :class:`~bayes_raters.sampling.ConvergenceReport` (or a bool: converged)."""

    name: str
    simulate: Callable
    fit: Callable


def thinned(draws: np.ndarray, size: int = RANK_DRAWS) -> np.ndarray:
    """``size`` draws evenly spaced over the flattened (chain, draw) array."""
    draws = np.asarray(draws).ravel()
    return draws[np.linspace(0, draws.size - 1, size).round().astype(int)]


def one_simulation(configuration: Configuration, seed: int) -> dict:
    """Simulate, fit and rank once; returns the rank of every quantity and ``converged``."""
    truth, data = configuration.simulate(np.random.default_rng([seed, 2018]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence is recorded, not warned, per simulation
        draws, report = configuration.fit(data, seed)
    ranks = {name: int(np.sum(thinned(draws[name]) < value)) for name, value in truth.items()}
    # a fit may add figures of its own beside the report's (``diag_`` keys of its draws, not ranked)
    extras = {name: float(value) for name, value in draws.items() if name.startswith(DIAGNOSTIC_PREFIX)}
    return {"seed": seed, "converged": bool(getattr(report, "converged", report)), **ranks, **diagnostics(report), **extras}


#: Prefix of the columns that record each fit's convergence figures (not ranks).
DIAGNOSTIC_PREFIX = "diag_"


def diagnostics(report) -> dict:
    """Max R-hat, min bulk and tail ESS and divergences of one fit (empty for a bare bool), so
    a configuration whose fits fail the convergence rule shows which check they fail."""
    if not hasattr(report, "max_r_hat"):
        return {}
    names = ("max_r_hat", "min_ess_bulk", "min_ess_tail", "divergences")
    out = {f"{DIAGNOSTIC_PREFIX}{name}": float(getattr(report, name)) for name in names}
    # importance-sampled Laplace draws (inference="auto" kept them): their Pareto k; NaN when NUTS ran
    k = getattr(report, "pareto_k", None)
    return {**out, f"{DIAGNOSTIC_PREFIX}pareto_k": float("nan") if k is None else float(k)}


def simulation_seeds(n_simulations: int, seed: int = 0) -> list[int]:
    """The seed of each of ``n_simulations`` simulations of a run started with ``seed``."""
    return [seed * 100_000 + k for k in range(n_simulations)]


def run_sbc(
    configuration: Configuration,
    n_simulations: int,
    *,
    seed: int = 0,
    executor: Executor | None = None,
    done: pd.DataFrame | None = None,
    on_row: Callable[[dict], None] | None = None,
) -> pd.DataFrame:
    """Ranks of every quantity in ``n_simulations`` simulations (one row each, with its seed
    and whether the fit converged, sorted by seed); runs on ``executor`` if given, e.g. a
    ``ProcessPoolExecutor(mp_context=multiprocessing.get_context("forkserver"))`` (forking a
    process that already runs PyTensor's threads may deadlock).

    Resumable: rows of ``done`` (an earlier, interrupted run's ranks) whose seeds belong to
    this run are kept and not simulated again, and ``on_row(row)`` is called as each new
    simulation finishes (``models/sbc.py`` appends it to a CSV file), so hours of fits are
    not lost when a long run is stopped."""
    seeds = set(simulation_seeds(n_simulations, seed))
    kept = [] if done is None else [r for r in done.to_dict("records") if r["seed"] in seeds]
    todo = sorted(seeds - {r["seed"] for r in kept})
    rows = list(kept)
    if executor is None:
        finished = (one_simulation(configuration, s) for s in todo)
    else:
        finished = (f.result() for f in as_completed([executor.submit(one_simulation, configuration, s) for s in todo]))
    for row in finished:
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return pd.DataFrame(rows).sort_values("seed", ignore_index=True)


def quantities(ranks: pd.DataFrame) -> list[str]:
    """The ranked quantities: every column but the seed, ``converged`` and the diagnostics."""
    return [c for c in ranks.columns if c not in ("seed", "converged") and not c.startswith(DIAGNOSTIC_PREFIX)]


def uniformity_table(ranks: pd.DataFrame, bins: int = BINS, family_alpha: float = FAMILY_ALPHA) -> pd.DataFrame:
    """Per quantity: chi-square statistic and p-value of the binned ranks against the
    uniform, the largest distance of the rank ECDF from the uniform one, and ``fails``
    (p below ``family_alpha`` / number of quantities). A quantity added to a configuration
    after some simulations were saved has no rank there: it is read over the simulations that
    have one (``n``)."""
    names = quantities(ranks)
    rows = {}
    for name in names:
        values = ranks[name].dropna().to_numpy().astype(int)
        counts = np.bincount(values * bins // (RANK_DRAWS + 1), minlength=bins)
        chi2, p = stats.chisquare(counts)
        pit = (values + 0.5) / (RANK_DRAWS + 1)
        rows[name] = {
            "n": len(values), "chi2": chi2, "p_value": p, "ecdf_distance": stats.kstest(pit, "uniform").statistic,
            "mean_pit": pit.mean(), "fails": p < family_alpha / len(names),
        }
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("quantity")


def as_datatree(ranks: pd.DataFrame) -> xr.DataTree:
    """PIT values (rank + 1/2) / (L + 1) in a ``prior_sbc`` group with dim ``sample``, the
    layout ``az.plot_ecdf_pit`` reads. A quantity ranked in only some simulations (added to a
    configuration after a partial run had saved rows; its other cells are empty) keeps the
    simulations that have it, on its own dim ``sample_NAME``: padding or dropping rows would
    misstate one quantity or all."""
    data = {}
    for name in quantities(ranks):
        values = ranks[name].dropna().to_numpy()
        dim = "sample" if len(values) == len(ranks) else f"sample_{name}"
        data[name] = (dim, (values + 0.5) / (RANK_DRAWS + 1))
    return xr.DataTree.from_dict({"prior_sbc": xr.Dataset(data)})


def plot_sbc(ranks: pd.DataFrame, **kwargs):
    """The ECDF-difference plot of every quantity (``az.plot_ecdf_pit``, with ArviZ's
    uniformity p-value per panel); returns the PlotCollection."""
    import arviz as az

    tree = as_datatree(ranks)
    sample_dims = sorted({dim for variable in tree["prior_sbc"].data_vars.values() for dim in variable.dims})
    return az.plot_ecdf_pit(tree, group="prior_sbc", sample_dims=sample_dims, **kwargs)
