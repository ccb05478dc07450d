"""Run simulation-based calibration for the model cards and store ranks, table and plot.

    .venv/bin/python models/sbc.py [NAME ...] [--simulations 200] [--workers 2]

NAME is a key of ``validation.sbc_models.CONFIGURATIONS`` (default: all). For each it
writes ``models/sbc/NAME_ranks.csv`` (one row per simulation), ``NAME.csv`` (the uniformity
table of ``bayes_raters.sbc.uniformity_table``) and ``NAME.png`` (ECDF-difference plot),
and prints the table with the wall time and the machine. Each finished simulation is
appended to ``NAME_ranks.partial.csv`` at once; run the same command again after an
interruption and it resumes from there (the file is removed when the run completes).
``make validate`` runs the same simulations (``tests/test_sbc.py``, slow) and asserts that no quantity fails.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository's validation package (not installed)

from bayes_raters.sbc import plot_sbc, run_sbc, uniformity_table  # noqa: E402
from validation.sbc_models import CONFIGURATIONS  # noqa: E402

OUT = Path(__file__).parent / "sbc"


def append_row(path: Path, row: dict) -> None:
    """Append one simulation's ranks to ``path`` (header first if new), flushed at once: an
    interrupted run resumes from this file. A file written before the runner gained columns
    (the ``diag_`` convergence figures) is rewritten once with the union of the columns, the
    old rows' new cells empty, so that rows never shift under a stale header."""
    frame = pd.DataFrame([row])
    if path.exists():
        header = pd.read_csv(path, nrows=0).columns
        if list(header) != list(frame.columns):
            pd.concat([pd.read_csv(path), frame], ignore_index=True).to_csv(path, index=False)
            return
    frame.to_csv(path, mode="a", header=not path.exists(), index=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", default=list(CONFIGURATIONS))
    parser.add_argument("--simulations", type=int, default=200)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}")
    for name in args.names:
        start = time.perf_counter()
        partial = OUT / f"{name}_ranks.partial.csv"
        done = pd.read_csv(partial) if partial.exists() else None
        if done is not None:
            print(f"{name}: resuming, {len(done)} simulations already in {partial.name}")
        with ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("forkserver")) as pool:
            ranks = run_sbc(CONFIGURATIONS[name], args.simulations, seed=args.seed, executor=pool, done=done,
                            on_row=lambda row, path=partial: append_row(path, row))
        table = uniformity_table(ranks)
        ranks.to_csv(OUT / f"{name}_ranks.csv", index=False)
        partial.unlink(missing_ok=True)
        table.to_csv(OUT / f"{name}.csv", float_format="%.4g")
        plot = plot_sbc(ranks)
        plot.savefig(OUT / f"{name}.png")
        wall = time.perf_counter() - start
        print(f"\n== {name}: {args.simulations} simulations, {wall:.0f} s wall, {args.workers} workers, "
              f"{ranks['converged'].mean():.0%} of fits converged; fails: {int(table['fails'].sum())}")
        print(table.to_string(float_format=lambda x: f"{x:.3f}"))


if __name__ == "__main__":
    main()
