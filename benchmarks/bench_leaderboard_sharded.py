"""The leaderboard's blocked sampler with its 0/1 passes sharded over a Dask cluster
(``fit_leaderboard(client=...)``, ``bayes_raters.leaderboard.sharded``) beside the in-process fit, in one run.

Printed:

1. **Per pass** at the shape: the item and the ability pass in this process (Numba on one thread and on
   every core), the same pass sharded over 1 and 2 local workers, and the round trip of an empty call
   to a worker, by a Dask task (through the scheduler) and by an actor (direct, what ``DaskPasses``
   uses). A pass costs about ``answers x ns per answer / cores + round trip``.
2. **Per fit** (the same seed, ``--tune`` + ``--draws`` sweeps, 2 chains; not with ``--no-fit``): in
   process (the default: the chains in two forked processes), on LocalClusters of 1 and 2 workers of one
   thread each (1 -> 2 workers) and of 1 worker with every core (the chains side by side in threads
   here); wall time, seconds per sweep, and whether the draws equal the in-process draws bit for bit.
3. **The calling process's share of a sweep** (everything but the passes: proposals, Metropolis-Hastings,
   group moves, hyperparameters), measured by timing the passes inside a sweep; it does not shrink with
   workers and sets the floor.
4. **A projection to 16-64 workers** at this shape and at metabench's (5,000 systems x 28,632 items):
   per sweep = the calling process's share (scaled by systems + items) + per pass (round trip + bytes the
   calling process sends / bandwidth + answers x ns per answer / (workers x cores per worker)), with the
   round trip and ns per answer measured here and the bandwidth and cores per worker given
   (``--bandwidth``, ``--cores-per-worker``). The ability pass sends every worker all items' a and b
   (16 J bytes), the item pass all abilities (8 S bytes): the first grows with workers and is what
   stops the scaling of few-systems-many-items shapes.

Run: ``.venv/bin/python benchmarks/bench_leaderboard_sharded.py [--shape 200 10000] [--tune 100] [--draws 200]``.
Measured figures: ``models/leaderboards.md``.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_line  # noqa: E402


def timed(call, repeat: int) -> float:
    """Median seconds of ``repeat`` calls (after one call not counted)."""
    call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def noop(x):
    return x


class Echo:
    """An actor that answers at once: its call's time is the round trip."""

    def echo(self, x):
        return x


def round_trips(client, repeat: int = 50) -> tuple[float, float]:
    """Seconds of an empty call to every worker and back: by tasks, by actors."""
    workers = sorted(client.scheduler_info()["workers"])
    x = np.zeros(8)
    task = timed(lambda: client.gather([client.submit(noop, x, workers=[w], pure=False) for w in workers]), repeat)
    actors = [client.submit(Echo, actor=True, workers=[w]).result() for w in workers]
    actor = timed(lambda: [call.result() for call in [a.echo(x) for a in actors]], repeat)
    return task, actor


class CountingPasses:
    """A passes object that times every pass it forwards."""

    def __init__(self, inner):
        self.inner, self.seconds, self.calls = inner, 0.0, {"abilities": 0, "items": 0}
        self.answers, self.shape = inner.answers, inner.shape

    def _count(self, name, *args):
        start = time.perf_counter()
        out = getattr(self.inner, name)(*args)
        self.seconds += time.perf_counter() - start
        self.calls[name] += 1
        return out

    def abilities(self, *args):
        return self._count("abilities", *args)

    def items(self, *args):
        return self._count("items", *args)


def driver_share(data, sweeps: int) -> tuple[float, float, dict]:
    """(seconds per sweep, of them in the passes, passes of each kind per sweep) of one chain in this
    process, Numba on every core, after warmup and the independence proposals are fitted."""
    from bayes_raters.leaderboard.kernel import MatrixPasses
    from bayes_raters.leaderboard.sampler import Chain

    passes = CountingPasses(MatrixPasses(data.answers, data.answers_t))
    chain = Chain(passes, True, np.random.default_rng(1))
    chain.warm_up(60)
    passes.seconds, passes.calls = 0.0, {"abilities": 0, "items": 0}
    start = time.perf_counter()
    chain.sample(sweeps)
    total = time.perf_counter() - start
    return total / sweeps, passes.seconds / sweeps, {name: count / sweeps for name, count in passes.calls.items()}


def fit_row(label: str, table, settings: dict, reference=None, client=None):
    from bayes_raters.leaderboard import fit_leaderboard

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fit_leaderboard(table, client=client, **settings)
    seconds = time.perf_counter() - start
    sweeps = settings["tune"] + settings["draws"]
    same = "" if reference is None else ", draws equal to the in-process fit's bit for bit: " + str(
        all(np.array_equal(result.posterior[v].values, reference.posterior[v].values) for v in reference.posterior.data_vars))
    print(f"  {label}: {seconds:.1f} s, {1e3 * seconds / sweeps:.1f} ms a sweep (2 chains){same}", flush=True)
    return result


def projection(shape, share_per_element: float, passes: dict, ns_per_answer: float, trip: float, bandwidth: float, cores: int) -> None:
    """Print the projected seconds per sweep for 1-64 workers (module docstring, point 4)."""
    n_systems, n_items = shape
    answers = n_systems * n_items
    driver = share_per_element * (n_systems + n_items)
    row = []
    for workers in (1, 2, 4, 8, 16, 32, 64):
        sent = {"abilities": workers * 8 * (2 * n_items) + 8 * n_systems, "items": workers * 8 * n_systems + 16 * n_items}
        total = driver + sum(count * (trip + sent[name] / bandwidth + answers * ns_per_answer * 1e-9 / (workers * cores))
                             for name, count in passes.items())
        row.append(f"{workers}: {1e3 * total:.0f}")
    print(f"  {n_systems:,} x {n_items:,} ({answers / 1e6:.0f} million answers; calling process {1e3 * driver:.1f} ms a sweep): "
          "ms a sweep by workers, " + ", ".join(row), flush=True)


def fit_arguments(description: str) -> argparse.ArgumentParser:
    """The options both passes benchmarks take: the shape, the seed, the sweeps of each fit."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--shape", type=int, nargs=2, default=(200, 10000), metavar=("SYSTEMS", "ITEMS"))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tune", type=int, default=100)
    parser.add_argument("--draws", type=int, default=200)
    return parser


def main() -> None:
    parser = fit_arguments(__doc__.split("\n")[0])
    parser.add_argument("--bandwidth", type=float, default=1.25e9, help="bytes per second out of the calling process (10 GbE)")
    parser.add_argument("--cores-per-worker", type=int, default=8)
    parser.add_argument("--no-fit", action="store_true", help="the passes and the projection only, no fits")
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    from bayes_raters.leaderboard import simulate_leaderboard
    from bayes_raters.leaderboard.kernel import MatrixPasses
    from bayes_raters.leaderboard.model import answer_matrix
    from bayes_raters.leaderboard.sharded import DaskPasses

    logging.getLogger("distributed").setLevel(logging.CRITICAL)  # a worker's heartbeat cut off as its cluster closes
    print(machine_line())
    table, _ = simulate_leaderboard(*args.shape, random_seed=args.seed)
    data = answer_matrix(table)
    n_answers = data.answers.size
    print(f"{args.shape[0]:,} systems x {args.shape[1]:,} items ({n_answers / 1e6:.1f} million cells)", flush=True)
    rng = np.random.default_rng(0)
    theta, a, b = rng.normal(size=args.shape[0]), np.exp(0.3 * rng.normal(size=args.shape[1])), rng.normal(size=args.shape[1])
    local = MatrixPasses(data.answers, data.answers_t)
    cores = numba.config.NUMBA_NUM_THREADS
    print("1. per pass, ms (median of 20):", flush=True)
    numba.set_num_threads(1)
    one = {name: timed(lambda n=name: getattr(local, n)(theta, a, b), 20) for name in ("items", "abilities")}
    numba.set_num_threads(cores)
    every = {name: timed(lambda n=name: getattr(local, n)(theta, a, b), 20) for name in ("items", "abilities")}
    ns_per_answer = 1e9 * one["items"] / n_answers
    print(f"  in process, 1 thread: item pass {1e3 * one['items']:.1f}, ability pass {1e3 * one['abilities']:.1f} "
          f"({ns_per_answer:.2f} ns per answer in the item pass); {cores} threads: {1e3 * every['items']:.1f}, {1e3 * every['abilities']:.1f}")
    settings = dict(draws=args.draws, tune=args.tune, random_seed=args.seed, progressbar=False)
    print(f"2. per fit ({args.tune} + {args.draws} sweeps a chain):", flush=True)
    reference = None if args.no_fit else fit_row("in process (chains in forked processes)", table, settings)
    trip = None
    for workers, threads in ((1, 1), (2, 1), (1, cores)):  # 1 -> 2 workers of one core each; one worker with every core
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with LocalCluster(n_workers=workers, threads_per_worker=threads, processes=True, dashboard_address=None) as cluster, \
                    Client(cluster) as client:
                sharded = DaskPasses(client, data.answers)
                passes = {name: timed(lambda n=name, p=sharded: getattr(p, n)(theta, a, b), 20) for name in ("items", "abilities")}
                task, actor = round_trips(client)
                trip = actor if workers == 2 else trip
                print(f"  {workers} worker(s) x {threads} thread(s): item pass {1e3 * passes['items']:.1f} ms, ability pass "
                      f"{1e3 * passes['abilities']:.1f} ms; empty round trip by task {1e3 * task:.2f} ms, by actor {1e3 * actor:.2f} ms",
                      flush=True)
                del sharded
                if not args.no_fit:
                    fit_row(f"Dask, {workers} worker(s) x {threads} thread(s) (chains in threads)", table, settings, reference,
                            client)
    per_sweep, in_passes, kinds = driver_share(data, 100)
    share = per_sweep - in_passes
    print(f"3. one chain in process, {cores} threads: {1e3 * per_sweep:.1f} ms a sweep, {kinds['abilities']:.0f} ability and "
          f"{kinds['items']:.0f} item passes ({1e3 * in_passes:.1f} ms), the calling process's own steps {1e3 * share:.1f} ms", flush=True)
    small, _ = simulate_leaderboard(50, 286, random_seed=args.seed)  # metabench's shape, items outnumbering systems
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        metabench_kinds = driver_share(answer_matrix(small), 20)[2]
    print(f"4. projection ({args.cores_per_worker} cores a worker, {args.bandwidth / 1e9:.2f} GB/s out, round trip {1e3 * trip:.2f} ms, "
          f"{ns_per_answer:.2f} ns per answer):", flush=True)
    share_per_element = share / sum(args.shape)
    projection(tuple(args.shape), share_per_element, kinds, ns_per_answer, trip, args.bandwidth, args.cores_per_worker)
    projection((5000, 28632), share_per_element, metabench_kinds, ns_per_answer, trip, args.bandwidth, args.cores_per_worker)


if __name__ == "__main__":
    main()
