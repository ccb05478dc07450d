"""Calibration of the posterior PRMSE interval under integer ratings: the normal and the
ordinal true-score models side by side on the Loukina et al. (2020) design (experiment 6 of
:mod:`bayes_raters.ctt.study`: 10,000 simulated responses rated 1-6, the 'high' system,
double-scored-only samples of one rater pair each).

For each model, rater category and number of double-scored responses it prints the share of
90% intervals that contain the PRMSE against the simulated true scores of the same responses,
the mean interval width, the mean absolute error of the posterior mean, the fits that did not
converge and the mean seconds per fit. The replication unit is a rater pair (its own errors
and its own random subset of responses).

Run: ``.venv/bin/python benchmarks/study_ordinal_coverage.py [--pairs 10] [--sizes 1000 10000]
[--categories average high] [--workers 2] [--csv out.csv]``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine_line  # noqa: E402

from bayes_raters.ctt import study  # noqa: E402


def coverage_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (observation, rater category, n double-scored): fits, coverage, width, MAE, ..."""
    frame = frame.assign(
        covered=(frame["lower"] <= frame["true_prmse"]) & (frame["true_prmse"] <= frame["upper"]),
        width=frame["upper"] - frame["lower"],
        error=(frame["posterior_mean"] - frame["true_prmse"]).abs(),
    )
    return frame.groupby(["observation", "rater_category", "n_double"], sort=False).agg(
        fits=("covered", "size"), coverage=("covered", "mean"), width=("width", "mean"),
        mae=("error", "mean"), not_converged=("converged", lambda c: int((~c.astype(bool)).sum())),
        seconds=("seconds", "mean"),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=10, help="rater pairs (fits) per cell")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--categories", nargs="+", default=["average", "high"])
    parser.add_argument("--observations", nargs="+", default=["normal", "ordinal"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--csv", type=Path, default=None)
    args = parser.parse_args()
    print(machine_line())
    frames = []
    context = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(args.workers, mp_context=context) as pool:
        for observation in args.observations:
            config = study.StudyConfig(
                double_scored=tuple(args.sizes), bayes_pairs_per_category=args.pairs,
                bayes_categories=tuple(args.categories), bayes_observation=observation,
            )
            start = time.perf_counter()
            frame = study.bayesian_double_scoring(config, pool)
            print(f"{observation}: {len(frame)} fits in {time.perf_counter() - start:.0f} s wall ({args.workers} workers)", flush=True)
            frames.append(frame)
    frame = pd.concat(frames, ignore_index=True)
    if args.csv:
        frame.to_csv(args.csv, index=False)
    with pd.option_context("display.width", 160):
        print(coverage_table(frame).round(3).to_string())


if __name__ == "__main__":
    main()
