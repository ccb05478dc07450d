"""The chains of a leaderboard fit side by side: one forked process per chain, each running the
passes over the answers (:mod:`bayes_raters.leaderboard.kernel`) on its share of the cores, where
the platform forks and Numba's threading layer is the fork-safe one
(:mod:`bayes_raters.threads`); otherwise one chain after another, each pass on every core.

Why processes: a sweep is a few passes of about a millisecond each between Python steps; run one
chain after another, every pass wakes the threading layer's workers anew and the Python steps run
on one core, while two chains in two processes keep each core busy with one chain's whole sweep
(``models/leaderboards.md`` gives the timings). Threads would not do: the Python steps of two
chains wait on each other for the GIL. The draws are the same either way: a chain's arithmetic
does not depend on the number of threads that run its passes (``tests/leaderboard/test_fit.py``).

Python 3.12 warns (DeprecationWarning) when a process with several threads forks, because a thread
holding a lock at that moment leaves it held in the child. The threads here are the threading
layer's idle workers, which the layer resets in a forked child, and the children run the sampler's
NumPy and Numba code only; PyMC forks its chains in the same way on Linux. That warning is silenced
for this fork alone.
"""

from __future__ import annotations

import multiprocessing
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numba

from bayes_raters.leaderboard.sampler import Chain
from bayes_raters.sampling import usable_cores
from bayes_raters.threads import FORK_SAFE_LAYER


def chain_workers(chains: int, cores: int | None = None) -> int:
    """How many chains run at once: one per usable core (or ``cores``) up to ``chains`` where processes
    can be forked and Numba's threading layer is :data:`~bayes_raters.threads.FORK_SAFE_LAYER` (a user
    who chose TBB or OpenMP keeps one chain after another: a forked child cannot launch their
    kernels safely); 1 otherwise. ``cores=1`` keeps the chains in this process, one after another
    (inside a process pool of one's own, e.g. simulation-based calibration)."""
    if chains < 2 or "fork" not in multiprocessing.get_all_start_methods() or numba.config.THREADING_LAYER != FORK_SAFE_LAYER:
        return 1
    return min(chains, usable_cores() if cores is None else int(cores))


def progress_printer(name: str, phase: str, chain: int, chains: int, sweeps: int):
    """A progress callback that rewrites one line on stderr about every twentieth sweep."""
    step = max(1, sweeps // 20)

    def report(done: int) -> None:
        if done % step == 0 or done == sweeps:
            print(f"\rleaderboard {name}: chain {chain + 1}/{chains}, {phase} {done}/{sweeps}  ", end="", file=sys.stderr, flush=True)

    return report


def _advance(run: Chain, tune: int, draws: int, threads: int | None, label: tuple | None) -> tuple[Chain, dict]:
    """``tune`` warm-up sweeps (none: 0) then ``draws`` recorded ones; ``threads``: Numba's thread
    count for this chain (None: leave it); ``label``: ``(name, chain, chains)`` to show progress."""
    if threads is not None:
        numba.set_num_threads(threads)
    if tune:
        run.warm_up(tune, None if label is None else progress_printer(label[0], "warmup", label[1], label[2], tune))
    out = run.sample(draws, None if label is None else progress_printer(label[0], "draws", label[1], label[2], draws))
    return run, out


def advance_chains(runs: list[Chain], tune: int, draws: int, *, name: str, show: bool, cores: int | None = None,
                   in_threads: bool = False) -> tuple[list[Chain], list[dict]]:
    """Every chain by ``tune`` warm-up and ``draws`` recorded sweeps, side by side where
    :func:`chain_workers` allows (progress shown for the first chain there), else in turn. Returns
    the advanced chains (in a process they come back as copies) and each one's draws. ``in_threads``:
    the 0/1 passes run on a Dask cluster (:class:`~bayes_raters.leaderboard.sharded.DaskPasses`) or a
    JAX device (:class:`~bayes_raters.leaderboard.jax_passes.JaxPasses`), neither of which may cross a
    fork: the chains run side by side in threads of this process (a chain waiting on its passes holds
    no lock; up to ``cores`` at once), or in turn where they have answers of other types, whose Numba
    passes run here (the fork-safe threading layer takes one launching thread at a time)."""
    labels = [(name, chain, len(runs)) if show else None for chain in range(len(runs))]
    if in_threads:
        workers = 1 if runs[0].typed else min(len(runs), len(runs) if cores is None else int(cores))
        labels = labels if workers == 1 else [labels[0]] + [None] * (len(runs) - 1)
        with ThreadPoolExecutor(workers) as pool:
            results = list(pool.map(_advance, runs, [tune] * len(runs), [draws] * len(runs), [None] * len(runs), labels))
        return [run for run, _ in results], [out for _, out in results]
    workers = chain_workers(len(runs), cores)
    if workers == 1:
        results = [_advance(run, tune, draws, None, label) for run, label in zip(runs, labels)]
    else:
        threads = max(1, usable_cores() // workers)
        labels = [labels[0]] + [None] * (len(runs) - 1)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*is multi-threaded, use of fork\(\) may lead to deadlocks", category=DeprecationWarning)
            with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
                results = list(pool.map(_advance, runs, [tune] * len(runs), [draws] * len(runs), [threads] * len(runs), labels))
    return [run for run, _ in results], [out for _, out in results]
