"""Issue 65's targets: the judges model beside ppi_py in the same run, defaults only.

- The simulated design of the issue: 10 systems x 1,000 responses, 3 judges (correlation 0.8, 0.5,
  0.3 with the true score), 10% of responses rated by 2 humans (``simulate_judges``): target <= 20 s.
- HANNA, Coherence (``tests/data/hanna/``: 1,056 stories, 5 LLM judges at prompt 1, 3 crowd ratings
  each): target <= 10 s.

Printed per fit: wall time, convergence, and per system our interval beside ppi_py's PPI++ interval
(``ppi_mean_ci``, the judges' mean score as the prediction, stratified by system), with the widths
and their ratio, and ppi_py's own wall time for all systems.

Run from the repository root: ``.venv/bin/python benchmarks/bench_judges.py [--sets simulated hanna] [--seeds 1 2]``.
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

from bayes_raters.judges import fit_judges, judges_data, simulate_judges  # noqa: E402
from bayes_raters.judges.baselines import response_means  # noqa: E402

HANNA = Path(__file__).resolve().parents[1] / "tests" / "data" / "hanna"


def ppi_py_table(humans, judges, systems, ci_prob: float = 0.9) -> tuple[pd.DataFrame, float]:
    """ppi_py's PPI++ interval per system and its wall time."""
    import ppi_py

    frame = response_means(judges_data(humans, judges, systems))
    start, rows = time.perf_counter(), {}
    for system, group in frame.groupby("system", sort=False):
        rated = group["human"].notna().to_numpy()
        y, yhat, unlabeled = group["human"].to_numpy()[rated], group["judge"].to_numpy()[rated], group["judge"].to_numpy()[~rated]
        if (~rated).sum() == 0:
            lower, upper = ppi_py.classical_mean_ci(y, alpha=1 - ci_prob)
        else:
            lower, upper = ppi_py.ppi_mean_ci(y, yhat, unlabeled, alpha=1 - ci_prob)
        rows[system] = (float(np.ravel(lower)[0]), float(np.ravel(upper)[0]))
    return pd.DataFrame(rows, index=["ppi_lower", "ppi_upper"]).T, time.perf_counter() - start


def run(name: str, humans, judges, systems, seed: int) -> None:
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fit_judges(humans, judges, systems, random_seed=seed, progressbar=False)
    seconds = time.perf_counter() - start
    report = result.convergence
    ours = result.system_table()[["mean", "lower", "upper"]]
    reference, ppi_seconds = ppi_py_table(humans, judges, systems)
    table = ours.join(reference)
    table["width_ratio"] = (table["upper"] - table["lower"]) / (table["ppi_upper"] - table["ppi_lower"])
    print(f"{name} seed {seed}: {seconds:.1f} s (ppi_py {ppi_seconds:.3f} s); max R-hat {report.max_r_hat:.4f}, "
          f"min bulk ESS {report.min_ess_bulk:.0f}, divergences {report.divergences}, converged {report.converged}; "
          f"median width ratio to PPI++ {table['width_ratio'].median():.2f}")
    for warning in caught:
        print(f"  warning: {str(warning.message)[:160]}")
    print(table.round(3).to_string())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", nargs="+", choices=["simulated", "hanna"], default=["simulated", "hanna"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[1])
    args = parser.parse_args()
    print(machine_line())
    for seed in args.seeds:
        if "simulated" in args.sets:
            sim = simulate_judges(10, 1000, judge_quality=(0.8, 0.5, 0.3), human_share=0.1, random_seed=seed)
            run("simulated 10 x 1,000 x 3 judges", sim["human_ratings"], sim["judge_scores"], sim["systems"], seed)
        if "hanna" in args.sets:
            judges = pd.read_csv(HANNA / "coherence_judges_p1.csv")
            run("HANNA Coherence", pd.read_csv(HANNA / "coherence_human.csv"), judges[judges["score"] >= 0],
                pd.read_csv(HANNA / "systems.csv"), seed)


if __name__ == "__main__":
    main()
