"""The leaderboard's 0/1 passes in JAX (``fit_leaderboard(backend="jax")``, ``bayes_raters.leaderboard.jax_passes``)
beside the Numba kernels, in one run, on JAX's default device (the GPU where one is present).

Printed: the device; per pass (item, ability) the median time of the Numba kernels on every core and of
JAX, with the largest relative difference of the sums; then per fit (the same seed, ``--tune`` +
``--draws`` sweeps, 2 chains) the wall time of each path and the largest difference of the posterior
means. On a GPU run it with a CUDA jaxlib (``pip install -U "jax[cuda12]"``).

Run: ``.venv/bin/python benchmarks/bench_leaderboard_jax.py [--shape 200 10000] [--tune 100] [--draws 200]``.
Measured figures: ``models/leaderboards.md``.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_line  # noqa: E402
from bench_leaderboard_sharded import fit_arguments, timed  # noqa: E402


def main() -> None:
    parser = fit_arguments(__doc__.split("\n")[0])
    parser.add_argument("--no-fit", action="store_true", help="the passes only")
    args = parser.parse_args()
    from bayes_raters.leaderboard import fit_leaderboard, simulate_leaderboard
    from bayes_raters.leaderboard.jax_passes import JaxPasses
    from bayes_raters.leaderboard.kernel import MatrixPasses
    from bayes_raters.leaderboard.model import answer_matrix

    print(machine_line())
    table, _ = simulate_leaderboard(*args.shape, random_seed=args.seed)
    data = answer_matrix(table)
    local, on_device = MatrixPasses(data.answers, data.answers_t), JaxPasses(data.answers)
    print(f"{args.shape[0]:,} systems x {args.shape[1]:,} items; JAX device: {on_device.device}", flush=True)
    rng = np.random.default_rng(0)
    theta, a, b = rng.normal(size=args.shape[0]), np.exp(0.3 * rng.normal(size=args.shape[1])), rng.normal(size=args.shape[1])
    for name in ("items", "abilities"):
        numba_s = timed(lambda n=name: getattr(local, n)(theta, a, b), 20)
        jax_s = timed(lambda n=name: getattr(on_device, n)(theta, a, b), 20)
        diff = max(float(np.max(np.abs(x - y) / np.maximum(np.abs(y), 1e-300)))
                   for x, y in zip(getattr(on_device, name)(theta, a, b), getattr(local, name)(theta, a, b)))
        print(f"  {name} pass: Numba {1e3 * numba_s:.2f} ms, JAX {1e3 * jax_s:.2f} ms ({numba_s / jax_s:.2f}x), "
              f"largest relative difference {diff:.1e}", flush=True)
    if args.no_fit:
        return
    settings = dict(draws=args.draws, tune=args.tune, random_seed=args.seed, progressbar=False)
    fits = {}
    for backend in ("numba", "jax"):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits[backend] = fit_leaderboard(table, backend=backend, **settings)
        print(f"  fit, backend={backend!r}: {time.perf_counter() - start:.1f} s ({args.tune} + {args.draws} sweeps, 2 chains)", flush=True)
    means = [float(np.abs(fits["jax"].posterior[v].mean().values - fits["numba"].posterior[v].mean().values))
             for v in fits["numba"].posterior.data_vars]
    print(f"  largest difference of the posterior means: {max(means):.1e}")


if __name__ == "__main__":
    main()
