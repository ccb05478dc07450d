"""Issue 38, point 2: small and adaptive benchmarks from a fitted leaderboard, on held-out systems.

A leaderboard of S + H systems x J items is simulated (``simulate_leaderboard``: skewed
abilities, two difficulty clusters, 3% flat items, 5% missing); the bank is fitted
(``fit_leaderboard`` defaults) to the first S systems; the other H are held out with all their
answers. Then, in the same run:

- **small benchmarks**: k items chosen by information (``select_items``), at random, and as
  tinyBenchmarks-style k-means anchors; each held-out system's full-benchmark score (share correct
  over every item it answered) estimated from its answers to the k items: by the IRT posterior
  predictive (``estimate_scores``: mean and 90% interval) and, for random and anchor items, by the
  (weighted) mean of those answers. Printed: mean absolute error, RMSE, the expected error (root
  mean square of the posterior SDs: what the posterior says the RMSE will be), the 90% interval's
  coverage of the full score, seconds; ``--repeats`` rounds of selection (each its own seed) pooled.
- **adaptive tests**: each held-out system tested item by item (``run_adaptive_test``) until its
  90% ability interval is narrower than ``--width``, choosing by posterior-weighted information
  and, as the baseline, at random. Printed: items used (mean, median, max), how often the interval
  at the stop covers the full-bank ability (the posterior mean from all its answers, items at
  their posterior means), seconds per test.

Issue 38's target: the stopped interval covers the full-bank ability at its nominal rate and the
test uses fewer items than random selection. Measured figures: ``models/leaderboards.md``.

Run: ``.venv/bin/python benchmarks/bench_leaderboard_selection.py [--shape 100 2000] [--held-out 40] [--k 50] [--width 0.5]``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_line  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", nargs=2, type=int, default=(100, 2000), metavar=("SYSTEMS", "ITEMS"))
    parser.add_argument("--held-out", type=int, default=40)
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--width", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3, help="item selections per method (seeds seed, seed + 1, ...)")
    args = parser.parse_args()
    from bayes_raters.leaderboard import ItemBank, compare_item_selections, fit_leaderboard, run_adaptive_test, simulate_leaderboard
    from bayes_raters.leaderboard.ability import ability_from_answers

    n_systems, n_items = args.shape
    print(machine_line())
    answers, _ = simulate_leaderboard(n_systems + args.held_out, n_items, random_seed=args.seed)
    held_ids = sorted(answers["respondent"].unique())[n_systems:]
    held = answers[answers["respondent"].isin(held_ids)]
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fit_leaderboard(answers[~answers["respondent"].isin(held_ids)], random_seed=args.seed, progressbar=False)
    print(f"bank: {n_systems} systems x {n_items} items, fit {time.perf_counter() - start:.1f} s, converged {result.convergence.converged}; "
          f"held out: {args.held_out} systems")

    start = time.perf_counter()
    table = pd.concat([compare_item_selections(result, held, args.k, random_seed=args.seed + repeat) for repeat in range(args.repeats)])
    seconds = (time.perf_counter() - start) / args.repeats
    grouped = table.groupby(["method", "estimator"])
    summary = pd.DataFrame({"mae": grouped["error"].apply(lambda e: e.abs().mean()),
                            "rmse": grouped["error"].apply(lambda e: np.sqrt((e**2).mean())),
                            "expected_error": grouped["sd"].apply(lambda e: np.sqrt((e**2).mean())),
                            "coverage_90": grouped.apply(lambda d: ((d["lower"] <= d["full_score"]) & (d["full_score"] <= d["upper"])).mean()
                                                         if d["lower"].notna().any() else np.nan, include_groups=False)})
    print(f"\nsmall benchmarks: k = {args.k} of {n_items} items, {args.repeats} selections per method x {args.held_out} systems "
          f"({seconds:.1f} s per selection round: every method and system)")
    print(summary.round(4).to_string())

    bank = ItemBank.from_result(result)
    point = bank.at_means()
    rows = []
    for _, group in held.groupby("respondent"):
        given = group.set_index("item")["correct"]
        full = ability_from_answers(point, given).summary()
        for selection in ("information", "random"):
            start = time.perf_counter()
            last = run_adaptive_test(bank, given, width=args.width, selection=selection, random_seed=args.seed).iloc[-1]
            rows.append({"selection": selection, "items": last["n_items"], "seconds": time.perf_counter() - start,
                         "covers": last["theta_lower"] <= full["theta_mean"] <= last["theta_upper"], "full_sd": full["theta_sd"]})
    adaptive = pd.DataFrame(rows).groupby("selection").agg(items_mean=("items", "mean"), items_median=("items", "median"),
                                                            items_max=("items", "max"), coverage_90=("covers", "mean"),
                                                            seconds_per_test=("seconds", "mean"), full_bank_sd=("full_sd", "mean"))
    print(f"\nadaptive tests to a 90% ability interval narrower than {args.width} (the full bank: {n_items} items)")
    print(adaptive.round(3).to_string())


if __name__ == "__main__":
    main()
