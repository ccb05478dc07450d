"""The leaderboard's passes sharded over a Dask cluster (:mod:`bayes_raters.leaderboard.sharded`): the sums
and the fits' draws are the in-process ones bit for bit on a LocalCluster of two worker processes, for
both layouts of the ability pass, with more shards than workers, for the 1PL and for a mixed leaderboard."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from bayes_raters.errors import InvalidInputError
from bayes_raters.leaderboard import fit_leaderboard, simulate_leaderboard, simulate_mixed_leaderboard
from bayes_raters.leaderboard.kernel import SYSTEM_BLOCK, MatrixPasses
from bayes_raters.leaderboard.model import answer_matrix
from bayes_raters.leaderboard.sharded import DaskPasses, shard_bounds

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                distributed.Client(cluster) as connected:
            yield connected


@pytest.mark.parametrize("n, shards, block", [(10, 3, 1), (7, 7, 1), (5, 9, 1), (600, 2, SYSTEM_BLOCK), (1300, 3, SYSTEM_BLOCK), (100, 4, SYSTEM_BLOCK)])
def test_shards_cover_the_rows_in_order_on_whole_blocks(n, shards, block):
    bounds = shard_bounds(n, shards, block)
    assert bounds[0][0] == 0 and bounds[-1][1] == n
    assert all(hi == lo for (_, hi), (lo, _) in zip(bounds[:-1], bounds[1:]))
    assert all(hi > lo for lo, hi in bounds) and len(bounds) <= shards
    assert all(hi % block == 0 for _, hi in bounds[:-1])
    sizes = [hi - lo for lo, hi in bounds[:-1]]
    assert max(sizes, default=0) - min(sizes, default=0) <= block


@pytest.mark.parametrize("shape, shards", [((700, 90), None), ((60, 301), None), ((1100, 40), 3), ((30, 7), 5)])
def test_sharded_passes_equal_the_in_process_passes_bit_for_bit(client, shape, shards):
    """Both layouts of the ability pass (by item from 512 systems), shards on whole blocks of systems, more
    shards than workers, more shards than items."""
    table, _ = simulate_leaderboard(*shape, missing=0.1, random_seed=2)
    data = answer_matrix(table)
    rng = np.random.default_rng(0)
    theta, a, b = rng.normal(size=data.answers.shape[0]), np.exp(0.4 * rng.normal(size=data.answers.shape[1])), rng.normal(size=data.answers.shape[1])
    local, sharded = MatrixPasses(data.answers, data.answers_t), DaskPasses(client, data.answers, shards)
    assert len(sharded.holders) == (2 if shards is None else shards) and sharded.shape == local.shape
    for name in ("abilities", "items"):
        for ours, theirs in zip(getattr(sharded, name)(theta, a, b), getattr(local, name)(theta, a, b)):
            assert ours.shape == theirs.shape and np.array_equal(ours, theirs), name


@pytest.mark.parametrize("shape, model", [((600, 50), "2pl"), ((40, 200), "2pl"), ((40, 120), "1pl")])
def test_a_sharded_fit_draws_what_the_in_process_fit_draws(client, shape, model):
    table, _ = simulate_leaderboard(*shape, random_seed=4)
    settings = dict(draws=40, tune=30, random_seed=5, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        here = fit_leaderboard(table, model, **settings)
        there = fit_leaderboard(table, model, client=client, **settings)
    assert "sharded over 2 Dask workers" in there.inference.sampler and "Dask" not in here.inference.sampler
    assert set(there.posterior.data_vars) == set(here.posterior.data_vars)
    for name in here.posterior.data_vars:
        assert np.array_equal(there.posterior[name].values, here.posterior[name].values), name
    assert np.array_equal(there.idata["sample_stats"]["lp"].values, here.idata["sample_stats"]["lp"].values)


@pytest.mark.parametrize("n_binary", [10, 0])
def test_a_sharded_mixed_fit_draws_what_the_in_process_fit_draws(client, n_binary):
    """The graded and 3PL answers stay in this process; the 0/1 answers (none: a suite without 0/1 items) go
    to the cluster."""
    table, truth = simulate_mixed_leaderboard(30, n_binary, 6, 6, grades=5, random_seed=3)
    settings = dict(item_types=truth["item_type"].to_dict(), draws=20, tune=20, random_seed=8, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        here, there = fit_leaderboard(table, **settings), fit_leaderboard(table, client=client, **settings)
    for name in here.posterior.data_vars:
        assert np.array_equal(there.posterior[name].values, here.posterior[name].values), name


def test_a_client_that_is_not_a_dask_client_is_refused():
    table, _ = simulate_leaderboard(10, 20, random_seed=1)
    with pytest.raises(InvalidInputError, match="distributed.Client"):
        fit_leaderboard(table, client="tcp://127.0.0.1:8786", draws=5, tune=5, progressbar=False)


@pytest.mark.slow
def test_a_sharded_default_fit_with_its_convergence_check_draws_what_the_in_process_fit_draws(client):
    """The defaults (draws extended while the convergence check fails) at 600 x 1,500, both layouts' shards on
    whole blocks: the same draws, the same number of them."""
    table, _ = simulate_leaderboard(600, 1500, random_seed=12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        here = fit_leaderboard(table, random_seed=12, progressbar=False)
        there = fit_leaderboard(table, random_seed=12, progressbar=False, client=client)
    assert there.convergence.draws == here.convergence.draws
    for name in here.posterior.data_vars:
        assert np.array_equal(there.posterior[name].values, here.posterior[name].values), name
