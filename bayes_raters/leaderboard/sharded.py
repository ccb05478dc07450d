r"""The blocked sampler's passes over the 0/1 answers, sharded over a Dask cluster.

A sweep of :mod:`bayes_raters.leaderboard.sampler` touches the answer matrix only through two passes
(:class:`~bayes_raters.leaderboard.kernel.MatrixPasses`): the **ability pass**, whose sums for system
:math:`s` read row :math:`s` only, and the **item pass**, whose sums for item :math:`j` read column
:math:`j` only. :class:`DaskPasses` therefore keeps two copies of the answers on the workers, cut
once when the fit starts:

* the systems cut into contiguous row shards, one per worker (in whole blocks of
  :data:`~bayes_raters.leaderboard.kernel.SYSTEM_BLOCK` systems where the by-item layout is taken,
  so each shard's blocks are the in-process pass's blocks);
* the items cut into contiguous column shards, one per worker.

A pass sends each shard the parameters it reads (the item pass: every ability and the shard's items;
the ability pass: the shard's abilities and every item), runs the same Numba kernel there, and
concatenates the per-shard sums in shard order. Every random draw, every Metropolis-Hastings
decision and every O(S + J) step stays in the calling process, so **the same seed gives the same
draws as the in-process sampler, bit for bit**, where the workers run the same compiled kernels
(the same CPU family; ``tests/leaderboard/test_sharded.py`` checks it on a LocalCluster).

What a sweep costs: six or seven passes, each one round trip to every worker, with
:math:`8(S + 2J/W)` bytes out and :math:`48J/W` back per worker for the item pass and
:math:`8(S/W + 2J)` out and :math:`24S/W` back for the ability pass, plus the calling process's own
steps. The scaling figures and the note on 16-64 workers
are in ``models/leaderboards.md`` (``benchmarks/bench_leaderboard_sharded.py`` measures them).
The answers of other response types (graded, bounded, 3PL items of a mixed leaderboard) stay in the
calling process.
"""

from __future__ import annotations

import numba
import numpy as np

from bayes_raters.errors import InvalidInputError
from bayes_raters.leaderboard.kernel import SYSTEM_BLOCK, by_item_layout, item_pass, system_sums


def shard_bounds(n: int, shards: int, block: int = 1) -> list[tuple[int, int]]:
    """``n`` rows cut into at most ``shards`` contiguous ``(start, stop)`` ranges as equal as whole
    blocks of ``block`` rows allow (the last range takes the remainder); no range is empty.

    Parameters
    ----------
    n : int
        Number of rows.
    shards : int
        Ranges wanted.
    block : int
        Every range but the last starts and stops on a multiple of ``block``.

    Returns
    -------
    list of tuple
        The ranges, in order, covering ``0 .. n``.

    Examples
    --------
    >>> shard_bounds(10, 3)
    [(0, 3), (3, 7), (7, 10)]
    >>> shard_bounds(600, 2, block=256)
    [(0, 512), (512, 600)]
    """
    blocks = -(-n // block)
    cuts = np.linspace(0, blocks, min(shards, blocks) + 1).round().astype(int)
    edges = [min(int(c) * block, n) for c in cuts]
    return [(lo, hi) for lo, hi in zip(edges[:-1], edges[1:]) if hi > lo]


def _with_threads(threads: int) -> None:
    """Numba's thread count for the passes on this worker (its share of the machine's cores); set in
    the thread that launches the kernels, as Numba's setting is per thread."""
    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))


class ShardHolder:
    """On a worker (a Dask actor): one row shard and one column shard of the answers and the two
    passes over them. ``by_item``: the row shard is items x the shard's systems (the by-item layout
    the whole matrix takes in process), else the shard's systems x items; ``threads``: Numba threads."""

    def __init__(self, rows: np.ndarray, columns: np.ndarray, by_item: bool, threads: int):
        self.rows, self.columns, self.by_item, self.threads = rows, columns, by_item, threads

    def abilities(self, theta: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple:
        """The row shard's ability sums (``theta``: the shard's systems; ``a``, ``b``: every item)."""
        _with_threads(self.threads)
        return system_sums(self.rows, self.by_item, theta, a, b)

    def items(self, theta: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple:
        """The column shard's item sums (``theta``: every system; ``a``, ``b``: the shard's items)."""
        _with_threads(self.threads)
        return item_pass(self.columns, theta, a, b)


class DaskPasses:
    """:class:`~bayes_raters.leaderboard.kernel.MatrixPasses`' two passes answered by the workers of a
    ``distributed.Client`` (module docstring): the answers cut once into row and column shards, as
    many of each as there are workers (or ``shards``), each pair held by a :class:`ShardHolder` actor
    on its worker; each pass sends every holder its parameters and gathers the sums. Actors, not
    tasks: a call goes to the worker directly, not through the scheduler, which made a pass's round
    trip several times shorter (``models/leaderboards.md`` gives the timings).
    ``answers`` stays here for the sampler's start values; the cluster frees the shards when this
    object goes. ``label`` and ``forkable`` as for :class:`~bayes_raters.leaderboard.kernel.MatrixPasses`.

    Parameters
    ----------
    client : distributed.Client
        A client of the cluster whose workers run the passes.
    answers : numpy.ndarray
        Systems x items, int8, 1 right, 0 wrong, -1 not answered.
    shards : int, optional
        Shards of each kind; None, one per worker.

    Examples
    --------
    >>> from distributed import Client, LocalCluster  # doctest: +SKIP
    >>> with LocalCluster(n_workers=2, processes=True) as cluster, Client(cluster) as client:  # doctest: +SKIP
    ...     passes = DaskPasses(client, answers)
    ...     loglik, grad, info = passes.items(theta, a, b)
    """

    forkable = False

    def __init__(self, client, answers: np.ndarray, shards: int | None = None):
        workers = sorted(client.scheduler_info()["workers"])
        if not workers:
            raise InvalidInputError("the Dask client has no workers: start the cluster's workers (e.g. LocalCluster(n_workers=2)) before fitting.")
        n_systems, n_items = answers.shape
        self.client, self.answers = client, answers
        self.by_item = by_item_layout(n_systems)
        count = len(workers) if shards is None else int(shards)
        self.system_bounds = shard_bounds(n_systems, count, SYSTEM_BLOCK if self.by_item else 1)
        self.item_bounds = shard_bounds(n_items, count)
        threads = client.nthreads()
        self.holders = []
        for k in range(max(len(self.system_bounds), len(self.item_bounds))):
            worker = workers[k % len(workers)]
            rows = self._system_shard(*self.system_bounds[k]) if k < len(self.system_bounds) else np.zeros((0, 0), np.int8)
            columns = np.ascontiguousarray(answers[:, slice(*self.item_bounds[k])].T) if k < len(self.item_bounds) else np.zeros((0, n_systems), np.int8)
            rows, columns = client.scatter([rows, columns], workers=[worker], direct=True, hash=False)  # equal shards, own keys
            holder = client.submit(ShardHolder, rows, columns, self.by_item, threads[worker], actor=True, workers=[worker])
            self.holders.append(holder.result())

    def _system_shard(self, lo: int, hi: int) -> np.ndarray:
        """The rows of systems ``lo .. hi`` in the layout the ability pass reads."""
        part = self.answers[lo:hi]
        return np.ascontiguousarray(part.T) if self.by_item else np.ascontiguousarray(part)

    @property
    def shape(self) -> tuple[int, int]:
        """(systems, items)."""
        return self.answers.shape

    @property
    def label(self) -> str:
        """Where the passes run, for the fit's inference record."""
        return f" (0/1 passes sharded over {len(self.holders)} Dask workers)"

    def abilities(self, theta: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple:
        """Per system ``(loglik, d/dtheta, information)``, each row shard on its worker."""
        calls = [holder.abilities(theta[lo:hi], a, b) for holder, (lo, hi) in zip(self.holders, self.system_bounds)]
        return _joined([call.result() for call in calls])

    def items(self, theta: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple:
        """Per item ``(loglik, gradient (items, 2), information (items, 3))``, each column shard on its worker."""
        if not self.item_bounds:  # no 0/1 items (a suite of graded or bounded items only)
            return item_pass(np.zeros((0, len(theta)), np.int8), theta, a, b)
        calls = [holder.items(theta, a[lo:hi], b[lo:hi]) for holder, (lo, hi) in zip(self.holders, self.item_bounds)]
        return _joined([call.result() for call in calls])


def _joined(parts: list[tuple]) -> tuple:
    """The per-shard ``(loglik, grad, info)`` concatenated in shard order."""
    return tuple(np.concatenate([part[k] for part in parts]) for k in range(3))
