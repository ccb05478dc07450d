"""GRM and GPCM at their defaults, side by side with marginal maximum likelihood on the same data,
in one run: girth's MML (``grm_mml``; ``pcm_mml`` has one slope per item as the GPCM) in this
process, and for the GRM OpenMx's Bock-Aitkin EM through ``Rscript`` where R and OpenMx are
installed (its own timer: the EM alone, not R's start-up).

Each row: wall time of ``fit_polytomous`` (sampling, theta draws, everything), min bulk and tail ESS, bulk ESS per
second of the whole fit, max R-hat, divergences,
and the ratio of our wall time to each ML fit. Data: bfi's neuroticism scale (real, 2,800 x 5 x 6,
``tests/data/bfi``) and simulated GRM answers of the issue's size (2,449 x 15 x 5, thresholds
sorted N(0, 1.2) draws, a ~ U(0.5, 2.5)). Run: ``.venv/bin/python benchmarks/bench_irt_polytomous.py
[--sets bfi sim] [--models grm gpcm] [--compare-nuts]``: the default (``inference="auto"``; the
path that ran is printed) and, with ``--compare-nuts``, NUTS on the same data beside it.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine_line  # noqa: E402

from bayes_raters.irt import fit_polytomous  # noqa: E402
from bayes_raters.irt.polytomous.model import CategoryLayout, category_logp  # noqa: E402
from bayes_raters.results import draw_categories  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"

OPENMX = r"""
suppressMessages({library(OpenMx); library(rpf)}); mxOption(key = "Number of Threads", value = 1)
data <- read.csv(commandArgs(TRUE)[1]); model <- commandArgs(TRUE)[2]
k <- sapply(data, function(x) length(unique(na.omit(x))))
spec <- lapply(k, function(n) rpf.grm(outcomes = n))
for (j in seq_along(data)) data[[j]] <- mxFactor(data[[j]], levels = sort(unique(na.omit(data[[j]]))))
start <- mxSimplify2Array(lapply(spec, rpf.rparam, version = 1))
ip <- mxMatrix(name = "item", values = start, free = !is.na(start))
ip$values[is.na(start)] <- NA
m <- mxModel("m", ip, mxData(observed = data, type = "raw"), mxExpectationBA81(ItemSpec = spec), mxFitFunctionML(),
             mxComputeEM("expectation", "scores", mxComputeNewtonRaphson()))
t <- system.time(fit <- mxRun(m, silent = TRUE))[["elapsed"]]
cat(t, -fit$output$fit / 2, "\n")
"""


def simulated(n: int = 2449, n_items: int = 15, n_categories: int = 5, seed: int = 0) -> pd.DataFrame:
    """GRM answers whose thresholds are NOT drawn from the model's prior (module docstring)."""
    rng = np.random.default_rng(seed)
    layout = CategoryLayout(np.full(n_items, n_categories))
    a = rng.uniform(0.5, 2.5, n_items)
    b = np.sort(rng.normal(0, 1.2, (n_items, n_categories - 1)), axis=1).ravel()
    p = np.exp(category_logp("grm", a, b, rng.normal(0, 1, n), layout, lib=np))
    columns = {f"q{j:02d}": draw_categories(p[layout.cat_item == j].T, rng) + 1 for j in range(n_items)}
    return pd.DataFrame(columns)


def long(wide: pd.DataFrame) -> pd.DataFrame:
    table = wide.rename_axis("respondent").reset_index().melt(id_vars="respondent", var_name="item", value_name="score")
    return table.dropna()


def girth_seconds(wide: pd.DataFrame, model: str) -> float:
    """girth's MML on complete rows (girth takes items x respondents, no missing values)."""
    import girth

    complete = wide.dropna().to_numpy(int).T
    complete = complete - complete.min(axis=1, keepdims=True) + 1
    start = time.perf_counter()
    (girth.grm_mml if model == "grm" else girth.pcm_mml)(complete)
    return time.perf_counter() - start


def openmx_seconds(wide: pd.DataFrame, model: str) -> float | None:
    if shutil.which("Rscript") is None or model != "grm":  # the GRM only: rpf's GPCM is its nominal model
        return None
    with tempfile.TemporaryDirectory() as folder:
        csv, script = Path(folder) / "data.csv", Path(folder) / "fit.R"
        wide.to_csv(csv, index=False)
        script.write_text(OPENMX)
        run = subprocess.run(["Rscript", str(script), str(csv), model], capture_output=True, text=True)
    if run.returncode != 0:
        return None
    return float(run.stdout.split()[0])


def ours(wide: pd.DataFrame, model: str, inference: str = "auto") -> dict:
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fit_polytomous(long(wide), model, random_seed=1, inference=inference)
    wall = time.perf_counter() - start
    report = result.convergence
    return {"wall": wall, "ess_bulk": report.min_ess_bulk, "ess_tail": report.min_ess_tail, "r_hat": report.max_r_hat,
            "divergences": report.divergences, "pareto_k": report.pareto_k, "result": result,
            "inference": result.inference.path}


def compare(default, nuts) -> str:
    """Per parameter: |posterior mean difference| / NUTS's SD (max over a; over thresholds), the
    range of SD ratios, and the correlation of the respondents' posterior mean thetas."""
    parts = []
    ratios = []
    for name in ("a", "b"):
        x, y = default.posterior[name], nuts.posterior[name]
        z = np.abs(x.mean(("chain", "draw")) - y.mean(("chain", "draw"))) / y.std(("chain", "draw"))
        parts.append(f"{float(z.max()):.3f}")
        ratios.append((x.std(("chain", "draw")) / y.std(("chain", "draw"))).values)
    ratios = np.concatenate(ratios)
    theta = np.corrcoef(default.posterior["theta"].mean(("chain", "draw")), nuts.posterior["theta"].mean(("chain", "draw")))[0, 1]
    return f"{'; '.join(parts)} | {ratios.min():.2f}-{ratios.max():.2f} | {theta:.5f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["bfi", "sim"], choices=["bfi", "sim"])
    parser.add_argument("--models", nargs="+", default=["grm", "gpcm"], choices=["grm", "gpcm"])
    parser.add_argument("--compare-nuts", action="store_true", help="also fit with inference='nuts' and compare the posteriors")
    args = parser.parse_args()
    print(machine_line())
    sets = {"bfi": ("bfi neuroticism 2,800 x 5 x 6 (real)", lambda: pd.read_csv(DATA / "bfi" / "bfi_neuroticism.csv")),
            "sim": ("simulated GRM 2,449 x 15 x 5", simulated)}
    print("| data | model | ours wall s (path) | min ESS bulk/tail | ESS/s | max R-hat | div | Pareto k | girth MML s | OpenMx EM s "
          "| ratio to girth / OpenMx |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    comparisons = []
    for key in args.sets:
        label, load = sets[key]
        wide = load()
        for model in args.models:
            row = ours(wide, model)
            g, o = girth_seconds(wide, model), openmx_seconds(wide, model)
            ratio_o = f"{row['wall'] / o:.0f}" if o else "n/a"
            k = "n/a" if row["pareto_k"] is None else f"{row['pareto_k']:.2f}"
            print(f"| {label} | {model.upper()} | {row['wall']:.1f} ({row['inference']}) | {row['ess_bulk']:.0f}/{row['ess_tail']:.0f} "
                  f"| {row['ess_bulk'] / row['wall']:.1f} | {row['r_hat']:.3f} | {row['divergences']} | {k} | {g:.2f} | "
                  f"{o if o is not None else 'n/a'} | {row['wall'] / g:.0f} / {ratio_o} |", flush=True)
            if args.compare_nuts:
                nuts = ours(wide, model, "nuts")
                comparisons.append(f"| {label} | {model.upper()} | {k} | {nuts['wall']:.1f} | {compare(row['result'], nuts['result'])} |")
    if comparisons:
        print("\nThe default against inference='nuts' on the same data (seed 1):\n")
        print("| data | model | Pareto k | NUTS wall s | max abs mean difference / NUTS SD (a; thresholds) | SD ratio range | theta means corr |")
        print("|---|---|---|---|---|---|---|")
        print("\n".join(comparisons))

if __name__ == "__main__":
    main()
