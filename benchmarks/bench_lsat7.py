"""LSAT-7's 2PL (1,000 x 5, real; ``tests/data/lsat7``) with ``fit_irt``'s defaults on many seeds,
beside girth's marginal maximum likelihood on the same answers in the same run (issue 36's target:
<= 3 s, converged on every seed).

For every seed: the wall time of ``fit_irt(answers, "2pl", random_seed=seed)``, the path it took
(importance-sampled Laplace draws, NUTS started from the Laplace approximation, or cold NUTS; extra
chains), Pareto k, min bulk ESS, max R-hat, divergences, and the ratio to girth's time. The first
fit of the process pays the compile and is reported apart. ``--cold`` adds, per seed, NUTS started
cold (``inference="nuts"``) for comparison.

Run: ``.venv/bin/python benchmarks/bench_lsat7.py [--seeds 1 2 ... 15] [--cold]``.
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

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "lsat7" / "lsat7.csv"


def lsat7() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The wide 0/1 answers and the same in long form (respondent, item, correct)."""
    wide = pd.read_csv(DATA)
    long = wide.rename_axis("respondent").reset_index().melt(id_vars="respondent", var_name="item", value_name="correct")
    return wide, long


def girth_seconds(wide: pd.DataFrame, repeats: int = 5) -> float:
    """The median wall time of girth's ``twopl_mml`` (items x respondents) over ``repeats`` runs."""
    import girth

    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        girth.twopl_mml(wide.to_numpy().T.astype(int))
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def path_of(record) -> str:
    """Which path the fit took, from its inference record."""
    if record.path == "laplace":
        return "laplace"
    path = "nuts (warm)" if record.warm_start else "nuts (cold)"
    return path + (" + extra chains" if record.extra_chains else "")


def one_fit(long: pd.DataFrame, seed: int, inference: str = "auto") -> dict:
    from bayes_raters.irt import fit_irt

    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fit_irt(long, "2pl", random_seed=seed, inference=inference, progressbar=False)
    seconds = time.perf_counter() - start
    report, record = result.report, result.inference
    k = np.nan if record.pareto_k is None else record.pareto_k  # NUTS after rejected draws: their k
    return {"seed": seed, "wall": seconds, "path": path_of(record), "pareto_k": k,
            "ess": report.min_ess_bulk, "r_hat": report.max_r_hat, "divergences": report.divergences,
            "converged": report.converged, "warnings": len(caught)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="*", default=list(range(1, 16)))
    parser.add_argument("--cold", action="store_true", help="also NUTS started cold (inference='nuts') per seed")
    args = parser.parse_args()
    print(machine_line(), flush=True)
    wide, long = lsat7()
    anchor = girth_seconds(wide)
    print(f"girth twopl_mml: {anchor:.3f} s (median of 5)", flush=True)
    first = one_fit(long, args.seeds[0])
    print(f"first fit of the process (compiles), seed {first['seed']}: {first['wall']:.2f} s, {first['path']}", flush=True)
    rows = []
    for seed in args.seeds:
        for inference in ("auto", "nuts") if args.cold else ("auto",):
            row = one_fit(long, seed, inference) | {"inference": inference}
            rows.append(row)
            print(f"seed {seed:>3} {inference:>4}: {row['wall']:6.2f} s ({row['wall'] / anchor:5.0f}x girth)  {row['path']:<28} "
                  f"k {row['pareto_k']:.2f}  ESS {row['ess']:6.0f}  R-hat {row['r_hat']:.4f}  div {row['divergences']}  "
                  f"converged {row['converged']}  warnings {row['warnings']}", flush=True)
    table = pd.DataFrame(rows)
    for inference, group in table.groupby("inference"):
        print(f"{inference}: {len(group)} fits, {int((group['wall'] <= 3.0).sum())} within 3 s, walls {group['wall'].min():.2f}-"
              f"{group['wall'].max():.2f} s (median {group['wall'].median():.2f}), all converged: {bool(group['converged'].all())}, "
              f"divergences {int(group['divergences'].sum())}; paths {group['path'].value_counts().to_dict()}", flush=True)


if __name__ == "__main__":
    main()
