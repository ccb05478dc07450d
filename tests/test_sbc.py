"""Simulation-based calibration: the runner, its rank frame and its plots on one simulation in
`make test`; a 20-simulation smoke run with a biased control and 200 simulations per
configuration in `make validate` (issue "Trust", point 1)."""

from __future__ import annotations

import functools
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd
import pytest

from bayes_raters.sbc import RANK_DRAWS, Configuration, as_datatree, plot_sbc, quantities, run_sbc, uniformity_table
from validation.sbc_models import CONFIGURATIONS, fit_true_score_normal, simulate_true_score_normal

SHORT = {"draws": 400, "tune": 400, "chains": 2, "cores": 1, "target_accept": 0.95}


def _with_biased_control(fit, data, seed):
    """The fit plus a deliberately wrong quantity: mu's draws shifted up by two posterior SDs
    (mean PIT Phi(-2 / sqrt 2) = 0.08 instead of 0.5). Its ranks pile at the low end: the
    check below can fail."""
    draws, converged = fit(data, seed)
    draws["mu_shifted_control"] = draws["mu"] + 2 * draws["mu"].std()
    return draws, converged


def _simulate_with_control(rng):
    truth, data = simulate_true_score_normal(rng)
    return {**truth, "mu_shifted_control": truth["mu"]}, data


SMOKE = Configuration(
    "true_score_normal_smoke", _simulate_with_control,
    functools.partial(_with_biased_control, functools.partial(fit_true_score_normal, settings=SHORT)),
)


@pytest.mark.slow  # 215 s in the suite (2026-11-28): a statistical check, so `make validate`
def test_smoke_ranks_are_uniform_the_biased_control_is_caught_and_arviz_plots_them():
    """One test, not one per check: pytest-xdist would compute a shared module fixture on
    each worker (194 + 167 s in the suite). One pool process: the executor path (pickled
    configuration, forkserver) is exercised, and the other core stays with the other worker."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("forkserver")) as pool:
        ranks = run_sbc(SMOKE, 20, seed=1, executor=pool)
    assert len(ranks) == 20  # 2 x 400 draws: ESS < 400 in most fits, fine for ranks of 99 draws
    assert ranks[quantities(ranks)].stack().between(0, RANK_DRAWS).all()
    # each fit's convergence figures are kept beside its ranks, so a failing rule can be traced
    assert {"diag_max_r_hat", "diag_min_ess_bulk", "diag_min_ess_tail", "diag_divergences"} <= set(ranks.columns)
    assert (ranks["diag_min_ess_bulk"] > 0).all() and (ranks["diag_max_r_hat"] < 1.5).all()
    assert (ranks["converged"] == ((ranks["diag_max_r_hat"] <= 1.01) & (ranks["diag_min_ess_bulk"] >= 400)
                                   & (ranks["diag_min_ess_tail"] >= 400) & (ranks["diag_divergences"] == 0))).all()
    table = uniformity_table(ranks, bins=5)  # 4 per bin expected: a coarse check at 20 runs
    honest = table.drop(index="mu_shifted_control")
    assert not honest["fails"].any(), honest
    assert table.loc["mu_shifted_control", "fails"], table
    assert table.loc["mu_shifted_control", "mean_pit"] < 0.2
    tree = as_datatree(ranks)  # the PIT layout ArviZ plots
    assert set(tree["prior_sbc"].data_vars) == set(quantities(ranks))
    assert np.all((tree["prior_sbc"]["mu"].values > 0) & (tree["prior_sbc"]["mu"].values < 1))
    assert plot_sbc(ranks, var_names=["mu", "prmse_finite"]) is not None


def test_same_seed_same_ranks_and_the_frame_arviz_plots():
    """One simulation twice in this process: the ranks repeat exactly; the rank frame keeps each
    fit's convergence figures beside its ranks (so a failing rule can be traced) and becomes the
    PIT layout ArviZ plots. Uniformity itself is the slow smoke run's check."""
    config = Configuration("x", simulate_true_score_normal, functools.partial(fit_true_score_normal, settings=SHORT))
    first, again = (run_sbc(config, 1, seed=3) for _ in range(2))
    pd.testing.assert_frame_equal(first, again)
    assert first[quantities(first)].stack().between(0, RANK_DRAWS).all()
    assert {"diag_max_r_hat", "diag_min_ess_bulk", "diag_min_ess_tail", "diag_divergences"} <= set(first.columns)
    assert (first["converged"] == ((first["diag_max_r_hat"] <= 1.01) & (first["diag_min_ess_bulk"] >= 400)
                                   & (first["diag_min_ess_tail"] >= 400) & (first["diag_divergences"] == 0))).all()
    tree = as_datatree(first)
    assert set(tree["prior_sbc"].data_vars) == set(quantities(first))
    assert np.all((tree["prior_sbc"]["mu"].values > 0) & (tree["prior_sbc"]["mu"].values < 1))
    assert plot_sbc(first, var_names=["mu", "prmse_finite"]) is not None


@pytest.mark.slow  # two worker processes and a Dask cluster compile the model anew (74-80 s): make validate
def test_a_dask_cluster_gives_the_ranks_of_the_process_pool():
    """The runner takes any ``concurrent.futures`` executor (issue 37): two simulations on a
    process pool and on a local Dask cluster's executor give identical ranks, row for row."""
    from distributed import Client, LocalCluster

    config = Configuration("x", simulate_true_score_normal, functools.partial(fit_true_score_normal, settings=SHORT))
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("forkserver")) as pool:
        pooled = run_sbc(config, 2, seed=5, executor=pool)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        clustered = run_sbc(config, 2, seed=5, executor=client.get_executor())
    assert len(pooled) == 2 and pooled["seed"].nunique() == 2
    pd.testing.assert_frame_equal(pooled, clustered)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONFIGURATIONS))
def test_sbc_ranks_are_uniform(name):
    """200 simulations per configuration (the card figures come from `models/sbc.py`, the
    same simulations): no quantity fails the Bonferroni chi-square rule of bayes_raters.sbc.
    The share of fits that pass the package's convergence rule is printed, not asserted:
    parameters drawn from the priors include extremes (sigma_T = 0.06 on a 1-6 scale) where
    2 x 1,000 draws end just under ESS 400, which is what the warning is for."""
    with ProcessPoolExecutor(os.cpu_count() or 2, mp_context=multiprocessing.get_context("forkserver")) as pool:
        ranks = run_sbc(CONFIGURATIONS[name], 200, seed=0, executor=pool)
    table = uniformity_table(ranks)
    print(f"\n{name}: {ranks['converged'].mean():.0%} converged\n{table}")
    assert not table["fails"].any(), table


def _cheap_simulate(rng):
    return {"mu": rng.normal()}, rng.normal(size=3)


def _cheap_fit(data, seed, calls):
    calls.append(seed)
    return {"mu": np.random.default_rng(seed).normal(data.mean(), 0.6, size=200)}, True


def test_interrupted_run_resumes_without_refitting_finished_simulations():
    """`models/sbc.py` saves each row as it finishes; run again, the saved rows are kept and
    only the missing seeds are fitted, and the result equals an uninterrupted run."""
    calls, saved = [], []
    config = Configuration("cheap", _cheap_simulate, functools.partial(_cheap_fit, calls=calls))
    whole = run_sbc(config, 5, seed=2)
    calls.clear()
    resumed = run_sbc(config, 5, seed=2, done=whole.iloc[[4, 0, 2]], on_row=saved.append)
    assert sorted(calls) == [200_001, 200_003] and sorted(row["seed"] for row in saved) == calls
    pd.testing.assert_frame_equal(resumed, whole)
    foreign = whole.assign(seed=whole["seed"] + 7)  # rows of another run are not taken
    calls.clear()
    run_sbc(config, 5, seed=2, done=foreign)
    assert len(calls) == 5


def test_uniformity_table_reads_a_quantity_added_after_some_simulations():
    """Rows saved before a configuration gained a quantity (``prmse``) have no rank for it;
    the table reads it over the rows that have one instead of failing on the NaN."""
    import pandas as pd

    from bayes_raters.sbc import RANK_DRAWS, uniformity_table

    rng = np.random.default_rng(5)
    ranks = pd.DataFrame({"seed": range(60), "converged": True, "mu": rng.integers(0, RANK_DRAWS + 1, 60),
                          "prmse": np.r_[np.full(15, np.nan), rng.integers(0, RANK_DRAWS + 1, 45)]})
    table = uniformity_table(ranks)
    assert table.loc["mu", "n"] == 60 and table.loc["prmse", "n"] == 45
    assert 0 <= table.loc["prmse", "p_value"] <= 1
    from bayes_raters.sbc import as_datatree, plot_sbc

    group = as_datatree(ranks)["prior_sbc"]
    assert group["mu"].dims == ("sample",) and group["prmse"].sizes == {"sample_prmse": 45}
    assert plot_sbc(ranks) is not None  # the plot reads both (ArviZ failed on the NaN rows before)


@pytest.mark.parametrize("model", ["grm", "gpcm"])
def test_polytomous_sbc_simulator_draws_from_the_models_own_priors(model):
    """The GRM/GPCM SBC configurations are only as good as their simulator: its slopes and
    intercepts must follow the priors of the model that is fitted (``item_thresholds``). 4,000
    draws of each side, two-sample KS on a, on the first intercept and on the spread of an
    item's intercepts (the GRM's gaps); every kept data set uses every category of every item;
    the same generator seed gives the same data."""
    import pymc as pm
    from scipy import stats

    from bayes_raters.irt.polytomous.model import build_polytomous_model
    from validation.sbc_polytomous import POLYTOMOUS_SIZE, item_parameters, simulate_polytomous

    n, n_items, n_categories = POLYTOMOUS_SIZE
    truth, ratings = simulate_polytomous(np.random.default_rng(4), model)
    again = simulate_polytomous(np.random.default_rng(4), model)
    pd.testing.assert_frame_equal(ratings, again[1])
    assert truth == again[0] and len(ratings) == n * n_items
    assert (ratings.groupby("item")["score"].nunique() == n_categories).all()
    irt = build_polytomous_model(ratings, model)
    prior = pm.draw([irt["a"], irt["d"]], draws=4000, random_seed=5)
    rng = np.random.default_rng(6)
    ours = [item_parameters(rng, model, n_items, n_categories) for _ in range(4000)]
    a_ours, d_ours = np.array([a for a, _ in ours]), np.array([d for _, d in ours])
    spread = lambda d: np.ptp(d[:, : n_categories - 1], axis=1)  # noqa: E731
    for left, right in ((prior[0][:, 0], a_ours[:, 0]), (prior[1][:, 0], d_ours[:, 0]), (spread(prior[1]), spread(d_ours))):
        assert stats.ks_2samp(left, right).pvalue > 0.001
    if model == "grm":
        assert (np.diff(d_ours.reshape(-1, n_items, n_categories - 1), axis=-1) >= 0).all()


def _simulate_half(rng):
    return {"x": float(rng.uniform())}, None


def _fit_with_extra(data, seed):
    return {"x": np.linspace(0.0, 1.0, 400), "diag_non_centred": 1.0}, True


def test_a_fits_own_diagnostic_is_kept_beside_the_ranks_and_not_ranked():
    """A configuration's fit may report figures of its own (the many-facet fit: which
    parametrisation it kept) as ``diag_`` keys of its draws: they reach the row, not the ranks."""
    ranks = run_sbc(Configuration("extra", _simulate_half, _fit_with_extra), 3, seed=2)
    assert (ranks["diag_non_centred"] == 1.0).all()
    assert quantities(ranks) == ["x"] and ranks["x"].between(0, RANK_DRAWS).all()
