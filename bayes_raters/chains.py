"""Per-chain work after sampling (the abilities' conditional draws of the marginal IRT
families) run in threads, one generator per chain: the one scaffold :mod:`bayes_raters.irt.binary.marginal`,
:mod:`bayes_raters.irt.polytomous.fit` and :mod:`bayes_raters.facets.draws` share."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import xarray as xr
from threadpoolctl import threadpool_limits

from bayes_raters.sampling import resolve_cores


def map_chains(one_chain: Callable, chains: int, random_seed, cores: int | None) -> list:
    """``one_chain(chain, rng)`` for every chain of a posterior, in threads (one per usable core,
    BLAS at one thread each), each chain with its own generator: a Generator's ``spawn`` or
    ``SeedSequence(random_seed).spawn``, so the draws do not depend on the thread count. The
    per-draw work of the ability draws is small NumPy calls and ``nogil`` Numba kernels, which
    threads share without a process's start-up and pickling."""
    if isinstance(random_seed, np.random.Generator):
        generators = random_seed.spawn(chains)
    else:
        generators = [np.random.default_rng(s) for s in np.random.SeedSequence(random_seed).spawn(chains)]
    with threadpool_limits(limits=1), ThreadPoolExecutor(max_workers=resolve_cores(chains, cores)) as pool:
        return list(pool.map(one_chain, range(chains), generators))


def chain_array(per_chain: list, posterior: xr.Dataset, dim: str, labels, name: str) -> xr.DataArray:
    """Per-chain (draw, ``dim``) arrays as one (chain, draw, ``dim``) DataArray with the
    posterior's chain and draw coordinates."""
    coords = {"chain": posterior["chain"].values, "draw": posterior["draw"].values, dim: labels}
    return xr.DataArray(np.stack(per_chain), dims=("chain", "draw", dim), coords=coords, name=name)
