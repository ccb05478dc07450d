"""Posterior PRMSE of the Bayesian true-score model: wall time (compile included) and ESS.

Two sizes of the Loukina et al. design, 5 systems (one per category), 'average' raters,
20% of responses double-scored, default fit (2 chains x 2,000 draws, PyMC NUTS):
10,000 responses (target < 60 s, ESS of PRMSE >= 400) and 1,000,000 responses (target < 5 min).
Run: ``make bench`` or ``.venv/bin/python benchmarks/bench_ctt_model.py [--skip-large]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine_line  # noqa: E402

from bayes_raters.ctt import (  # noqa: E402
    double_scored_subset,
    fit_true_score_model,
    simulate_dataset,
    system_scores_to_long,
)


def run(n_responses: int) -> None:
    data = simulate_dataset(n_responses, raters_per_category=2, systems_per_category=1, random_seed=1)
    ratings = double_scored_subset(data, ("h_5", "h_6"), n_responses // 5, random_seed=2)
    systems = system_scores_to_long(data)
    start = time.perf_counter()
    result = fit_true_score_model(ratings, systems, random_seed=3, nuts_sampler="pymc")
    seconds = time.perf_counter() - start
    table = result.prmse_table()
    print(
        f"{n_responses:>9,} responses, {len(ratings):,} ratings, {len(table)} systems: "
        f"{seconds:6.1f} s wall (5 fits, compile included); ESS(PRMSE) min {table['ess_bulk'].min():.0f}, "
        f"ESS/s {table['ess_bulk'].sum() / seconds:.0f}; max R-hat {table['r_hat'].max():.3f}"
    )
    print(table[["mean", "lower", "upper", "closed_form", "ess_bulk"]].round(3).to_string())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-large", action="store_true", help="only the 10,000-response case")
    args = parser.parse_args()
    print(machine_line())
    run(10_000)
    if not args.skip_large:
        run(1_000_000)


if __name__ == "__main__":
    main()
