"""Runtime of the Loukina et al. (2020) study at the paper's size (10,000 responses, 50 rater
pairs per category): experiments 1-5 (closed form) and the Bayesian double-scoring grid
(4 categories x 7 sizes x 10 pairs = 280 fits, 2 chains x (1,000 + 1,000)), each timed
separately, in process or on a process pool.
Run: ``.venv/bin/python benchmarks/bench_study.py [--workers 2] [--bayes-pairs 10]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine_line  # noqa: E402

from bayes_raters.ctt import study  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2, help="process pool size (1 = in process)")
    parser.add_argument("--bayes-pairs", type=int, default=10)
    args = parser.parse_args()
    print(machine_line())
    config = study.StudyConfig(bayes_pairs_per_category=args.bayes_pairs)
    pool = ProcessPoolExecutor(args.workers) if args.workers > 1 else None
    try:
        start = time.perf_counter()
        closed = study.run_study(config, pool, bayesian=False)
        closed_seconds = time.perf_counter() - start
        rows = sum(len(frame) for frame in closed.frames.values())
        print(f"closed-form experiments 1-5: {closed_seconds:7.1f} s wall ({rows:,} result rows, {args.workers} worker(s))")
        start = time.perf_counter()
        bayes = study.bayesian_double_scoring(config, pool)
        bayes_seconds = time.perf_counter() - start
        print(
            f"Bayesian grid: {len(bayes)} fits in {bayes_seconds:7.1f} s wall ({bayes_seconds * args.workers / len(bayes):.2f} "
            f"core-s per fit; {int((~bayes['converged']).sum())} fits warned about convergence)"
        )
    finally:
        if pool is not None:
            pool.shutdown()


if __name__ == "__main__":
    main()
