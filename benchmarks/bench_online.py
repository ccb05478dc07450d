"""Online elicitation updates per second on 1,000,000 judgements over 10,000 items:
EASL (one batch, includes id lookup and validation), bounded RA (sequential, numba),
DA, and TrueSkill (sequential, scipy; 100,000 games). The first RA call is timed
separately because it may compile the numba kernel.
Run: ``.venv/bin/python benchmarks/bench_online.py``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine_line  # noqa: E402

from bayes_raters.pairwise import EASL, BoundedRA, DirectAssessment, TrueSkill  # noqa: E402

N_ITEMS, N_JUDGEMENTS = 10_000, 1_000_000


def _timed(label: str, n: int, call) -> None:
    start = time.perf_counter()
    call()
    seconds = time.perf_counter() - start
    print(f"{label:<34} {n:>9,d} judgements in {seconds:7.3f} s: {n / seconds:>12,.0f} per second")


def main() -> None:
    print(machine_line())
    rng = np.random.default_rng(0)
    items = [f"item_{i:05d}" for i in range(N_ITEMS)]
    scalars = pd.DataFrame({"item": rng.choice(items, N_JUDGEMENTS), "value": rng.uniform(size=N_JUDGEMENTS)})
    first = rng.integers(0, N_ITEMS, N_JUDGEMENTS)
    second = (first + rng.integers(1, N_ITEMS, N_JUDGEMENTS)) % N_ITEMS
    pairs = pd.DataFrame(
        {
            "item_a": np.array(items)[first],
            "item_b": np.array(items)[second],
            "outcome": rng.choice(["win", "tie", "loss"], N_JUDGEMENTS, p=[0.45, 0.1, 0.45]),
        }
    )
    _timed("EASL observe_scalars (one batch)", N_JUDGEMENTS, lambda: EASL(items).observe_scalars(scalars))
    _timed("DA observe_scalars (one batch)", N_JUDGEMENTS, lambda: DirectAssessment(items).observe_scalars(scalars))
    _timed("RA observe_pairs (first call)", 1000, lambda: BoundedRA(items).observe_pairs(pairs.head(1000)))
    _timed("RA observe_pairs (sequential)", N_JUDGEMENTS, lambda: BoundedRA(items).observe_pairs(pairs))
    _timed("TrueSkill observe_pairs (sequential)", 100_000, lambda: TrueSkill(items).observe_pairs(pairs.head(100_000)))


if __name__ == "__main__":
    main()
