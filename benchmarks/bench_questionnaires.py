"""Issue 64, point 4: questionnaires at full size, the defaults beside maximum likelihood in the same run.

- EPI (psychTools; 3,516 respondents x 48 yes/no items, Extraversion and Neuroticism keyed;
  ``tests/data/epi/``): ``fit_irt(answers, "2pl", dimensions=...)`` against OpenMx's Bock-Aitkin EM
  of the same confirmatory two-factor 2PL (``benchmarks/openmx_epi.R``, one thread, 21 and 49
  quadrature points per axis), run through ``Rscript`` when it is installed.
- Generic Conspiracist Beliefs (psychotools' ConspiracistBeliefs2016; 2,356 complete rows x 15
  items x 5 categories; ``tests/data/conspiracist/``): ``fit_polytomous(ratings, "grm")`` against
  girth's ``grm_mml``.

Printed per fit and seed: wall times, the ratio to the ML fit (girth's timed again right before each of our fits), the path the default took
(Laplace draws or NUTS), convergence, and the agreement with ML (the factor correlation; the
correlation of the slopes).

Run from the repository root: ``.venv/bin/python benchmarks/bench_questionnaires.py [--seeds 1 2] [--sets epi beliefs]``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_line  # noqa: E402

from bayes_raters.irt import fit_irt, fit_polytomous  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


def _long(wide: pd.DataFrame, value: str) -> pd.DataFrame:
    return wide.rename_axis("respondent").reset_index().melt(id_vars="respondent", var_name="item", value_name=value).dropna()


def openmx_seconds(qpoints: int) -> tuple[float, float] | None:
    """OpenMx's wall time and factor correlation for the EPI model, or None without Rscript/OpenMx."""
    if shutil.which("Rscript") is None:
        return None
    done = subprocess.run(["Rscript", "benchmarks/openmx_epi.R", str(qpoints)], cwd=ROOT, capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("openmx ")]
    if done.returncode != 0 or not lines:
        print(f"OpenMx did not run: {done.stderr.strip()[-300:]}")
        return None
    fields = lines[-1].split()
    return float(fields[1]), float(fields[3])


def epi(seeds: list[int]) -> None:
    wide = pd.read_csv(DATA / "epi" / "epi_keyed.csv")
    dimensions = {item: "E" if j < 24 else "N" for j, item in enumerate(wide.columns)}
    answers = _long(wide, "correct")
    references = {q: openmx_seconds(q) for q in (21, 49)}
    for q, ref in references.items():
        if ref is not None:
            print(f"EPI OpenMx EM, {q} points per axis: {ref[0]:.2f} s, correlation {ref[1]:.4f}")
    anchor = references[21][0] if references[21] is not None else None
    for seed in seeds:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = fit_irt(answers, "2pl", dimensions=dimensions, random_seed=seed, progressbar=False)
        seconds = time.perf_counter() - start
        report, record = result.convergence, result.inference
        corr = float(result.correlations().iloc[0]["corr_mean"])
        ratio = f", {seconds / anchor:.1f}x OpenMx (21 points)" if anchor else ""
        print(f"EPI 2D 2PL seed {seed}: {seconds:.1f} s{ratio}; path {record.path}, {record.quadrature_nodes} nodes, "
              f"quadrature error {record.quadrature_error:.1e}; max R-hat {report.max_r_hat:.4f}, min bulk ESS "
              f"{report.min_ess_bulk:.0f}, divergences {report.divergences}; correlation {corr:.4f}", flush=True)


def girth_seconds(wide: pd.DataFrame, calls: int = 3) -> tuple[float, list[float], dict]:
    """girth's ``grm_mml`` on the wide table: the best of ``calls`` wall times, all of them, and its estimates."""
    import girth

    times = []
    for _ in range(calls):  # its first call pays imports and caches
        start = time.perf_counter()
        ml = girth.grm_mml(wide.to_numpy().T.astype(int) + 1)
        times.append(time.perf_counter() - start)
    return min(times), times, ml


def beliefs(seeds: list[int]) -> None:
    """girth's best of three calls right before each of our fits, and the ratio to that: the VM's
    speed moves by a third within minutes, so a girth time taken once before all fits made the
    later fits' ratios depend on the spell they ran in."""
    wide = pd.read_csv(DATA / "conspiracist" / "conspiracist_beliefs.csv")
    ratings = _long(wide, "score")
    first_call = None
    for position, seed in enumerate(seeds):
        best, times, ml = girth_seconds(wide)
        first_call = first_call or times[0]
        print(f"beliefs girth grm_mml: {best:.2f} s (best of {', '.join(f'{t:.2f}' for t in times)})")
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = fit_polytomous(ratings, "grm", random_seed=seed, progressbar=False)
        seconds = time.perf_counter() - start
        report = result.convergence
        corr_a = np.corrcoef(result.item_table().loc[wide.columns, "a_mean"], ml["Discrimination"])[0, 1]
        record = result.inference
        # the process's first fit pays one-time imports and compiles, as girth's first call does
        first = f" (first fit of the process; {seconds / first_call:.1f}x girth's first call)" if position == 0 else ""
        print(f"beliefs GRM seed {seed}: {seconds:.1f} s, {seconds / best:.1f}x girth's best just before{first}; path {record.path}; "
              f"max R-hat {report.max_r_hat:.4f}, min bulk ESS {report.min_ess_bulk:.0f}; corr(a, girth) {corr_a:.4f}; "
              f"theta draws: {record.theta_draws}, acceptance {record.theta_mh_acceptance:.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--sets", nargs="+", choices=["epi", "beliefs"], default=["epi", "beliefs"])
    args = parser.parse_args()
    print(machine_line())
    if "epi" in args.sets:
        epi(args.seeds)
    if "beliefs" in args.sets:
        beliefs(args.seeds)


if __name__ == "__main__":
    main()
