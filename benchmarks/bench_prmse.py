"""Closed-form PRMSE on 1,000,000 responses x 2 ratings, 20% double-scored.

Prints wall time of the wide-array path (``prmse_true``) and of the long-table path
(``prmse_table``, validation included). Target: well under one second for the wide path.
Run: ``make bench`` or ``.venv/bin/python benchmarks/bench_prmse.py``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine_line  # noqa: E402

from bayes_raters.ctt import prmse_table, prmse_true  # noqa: E402

N, DOUBLE, REPEATS = 1_000_000, 0.2, 5


def _data(rng: np.random.Generator):
    true = np.clip(rng.normal(3.844, 0.74, N), 1, 6)
    humans = np.clip(np.round(true[:, None] + rng.normal(0, 0.6, (N, 2))), 1, 6)
    humans[rng.random(N) >= DOUBLE, 1] = np.nan
    system = true + rng.normal(0, 0.33, N)
    return humans, system


def _best_of(fn, repeats: int = REPEATS) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    print(machine_line())
    humans, system = _data(np.random.default_rng(0))
    wide_time, value = _best_of(lambda: prmse_true(system, humans))
    print(f"prmse_true, {N:,} responses x 2 ratings ({DOUBLE:.0%} double-scored): "
          f"{wide_time * 1000:.0f} ms (best of {REPEATS}); PRMSE = {value:.4f}")

    rows, cols = np.nonzero(~np.isnan(humans))
    ratings = pd.DataFrame({"response": rows, "rater": np.array(["r1", "r2"])[cols], "score": humans[rows, cols]})
    systems = pd.DataFrame({"response": np.arange(N), "system": "m", "score": system})
    long_time, table = _best_of(lambda: prmse_table(ratings, systems), repeats=3)
    print(f"prmse_table (long format, {len(ratings):,} rating rows, validation included): "
          f"{long_time * 1000:.0f} ms (best of 3); PRMSE = {table.loc['m', 'prmse']:.4f}")


if __name__ == "__main__":
    main()
