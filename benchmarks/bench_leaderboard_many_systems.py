"""Issue 64, point 3: leaderboards with many systems and few items, the Open LLM Leaderboard's
shape (thousands of models, 100-250 items, every model answering every item). ``fit_leaderboard``
with its defaults beside girth's marginal maximum likelihood 2PL (``girth.twopl_mml``, item
parameters only, no intervals) on the same answers in the same run, with the ratio of wall times.

Shapes: ``gsm8k`` 5,041 x 249 open answers; ``mmlu`` 4,278 x 102 four-option multiple choice,
where a system that does not know the answer guesses (``simulate_leaderboard(..., guessing=0.25)``:
a 3PL truth the 2PL does not assume). The answers come from ``simulate_leaderboard`` with
``missing=0`` (skewed abilities, a two-cluster mixture of difficulties, 3% flat items).

Printed per shape and seed: girth's wall time, ours, the ratio, draws per chain the default
needed, convergence (max R-hat, min bulk and tail ESS over every parameter), the correlation of
our posterior mean difficulties with girth's and of our abilities with the true ones.

Run: ``.venv/bin/python benchmarks/bench_leaderboard_many_systems.py [--shapes gsm8k mmlu] [--seeds 1 2 3]``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_line  # noqa: E402

from bayes_raters.leaderboard import fit_leaderboard, simulate_leaderboard  # noqa: E402
from bayes_raters.leaderboard.model import answer_matrix  # noqa: E402

SHAPES = {"gsm8k": (5041, 249, 0.0), "mmlu": (4278, 102, 0.25)}


def girth_fit(table) -> tuple[np.ndarray, float]:
    """girth's 2PL MML on the complete answer matrix (items x systems); returns the difficulties in
    the table's item order and the wall time."""
    import girth

    data = answer_matrix(table)
    start = time.perf_counter()
    estimate = girth.twopl_mml(data.answers_t.astype(int))
    return np.asarray(estimate["Difficulty"]), time.perf_counter() - start


def row(shape: str, seed: int) -> None:
    n_systems, n_items, guessing = SHAPES[shape]
    table, truth = simulate_leaderboard(n_systems, n_items, missing=0.0, guessing=guessing, random_seed=seed)
    girth_b, girth_seconds = girth_fit(table)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fit_leaderboard(table, random_seed=seed, progressbar=False)
    seconds = time.perf_counter() - start
    report, items, systems = result.convergence, result.item_table(), result.system_table()
    corr_b = np.corrcoef(items["b_mean"].to_numpy(), girth_b)[0, 1]
    corr_theta = np.corrcoef(systems["theta_mean"].reindex(truth["theta"].index), truth["theta"])[0, 1]
    print(f"{shape} {n_systems:,} x {n_items} seed {seed}: girth MML {girth_seconds:.1f} s, fit_leaderboard {seconds:.1f} s "
          f"(ratio {seconds / girth_seconds:.2f}), {report.draws} draws per chain, converged {report.converged}, "
          f"max R-hat {report.max_r_hat:.4f}, min bulk ESS {report.min_ess_bulk:.0f}, min tail ESS {report.min_ess_tail:.0f}, "
          f"corr(b, girth) {corr_b:.4f}, corr(theta, truth) {corr_theta:.4f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    args = parser.parse_args()
    print(machine_line())
    for shape in args.shapes:
        for seed in args.seeds:
            row(shape, seed)


if __name__ == "__main__":
    main()
