"""Independent pieces of work in forked processes, one per usable core, where the platform forks
and Numba's threading layer is the fork-safe one (:mod:`bayes_raters.threads`); in threads
otherwise.

Why processes: work made of many small NumPy calls between Python steps (the Laplace
proposals' log densities, :mod:`bayes_raters.laplace`) holds the GIL between its calls, so two
threads wait on each other, while two forked processes each keep a core busy
(``models/irt_polytomous.md`` gives the timings). A forked child inherits the caller's memory,
so the function may be a closure over compiled functions and arrays: nothing but the items'
indices and the results is pickled.

Python 3.12 warns (DeprecationWarning) when a process with several threads forks, because a
thread holding a lock at that moment leaves it held in the child. The children here run NumPy
and ``nogil`` Numba code and PyTensor's compiled functions only, as PyMC's chains forked on
Linux do; the warning is silenced for this fork alone.
"""

from __future__ import annotations

import multiprocessing
import threading
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numba
from threadpoolctl import threadpool_limits

from bayes_raters.sampling import usable_cores
from bayes_raters.threads import FORK_SAFE_LAYER

_LOCK = threading.Lock()
_TASK: tuple | None = None


def fork_workers(n_items: int) -> int:
    """How many processes :func:`map_forked` would fork for ``n_items`` pieces: one per usable
    core up to ``n_items`` where processes fork and Numba's threading layer is
    :data:`~bayes_raters.threads.FORK_SAFE_LAYER`; 1 (no fork) otherwise."""
    if n_items < 2 or "fork" not in multiprocessing.get_all_start_methods() or numba.config.THREADING_LAYER != FORK_SAFE_LAYER:
        return 1
    return min(n_items, usable_cores())


def _call(index: int):
    function, items = _TASK
    with threadpool_limits(limits=1):
        return function(items[index])


def map_forked(function: Callable, items: Sequence, *, processes: bool = True) -> list:
    """``[function(item) for item in items]``, the pieces side by side: in forked processes
    where :func:`fork_workers` allows and ``processes`` is true, else in threads (one per usable
    core, BLAS at one thread each). The results are the same either way when ``function`` uses
    no state shared between items (a generator passed in an item advances in the child only: return
    its state when the caller needs it)."""
    workers = fork_workers(len(items)) if processes else 1
    if workers == 1:
        with threadpool_limits(limits=1), ThreadPoolExecutor(max_workers=max(1, min(len(items), usable_cores()))) as pool:
            return list(pool.map(function, items))
    global _TASK
    with _LOCK:
        _TASK = (function, items)
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=r".*is multi-threaded, use of fork\(\) may lead to deadlocks", category=DeprecationWarning)
                with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
                    return list(pool.map(_call, range(len(items))))
        finally:
            _TASK = None
