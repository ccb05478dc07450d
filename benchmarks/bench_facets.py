"""The many-facet rater model on issue 36's essay design (400 essays x 8 raters x 2 prompts, 6
score categories, one engine's scores, one erratic rater; the tests' fit) with ``fit_facets``'s
defaults: the wall time of each fit and where it goes (the Laplace gate that decides the warm start,
NUTS, the abilities' conditional draws), leapfrog steps per draw, min bulk / tail ESS, max R-hat,
divergences (issue 36's target: <= 10 s, ESS >= 400, no divergences).

Anchor (``--clmm``, where R and its ``ordinal`` package are installed: Debian's ``r-base-core
r-cran-ordinal``): the ordinal mixed model of the same ratings, R's ``ordinal::clmm(score ~ rater +
prompt + (1 | response))`` (cumulative logit, Laplace approximation; rater severities fixed, one
discrimination), timed inside R (``system.time``; R's start-up not counted). It is the many-facet
Rasch model's cumulative-logit cousin, not the same model (ours has a consistency per rater and
adjacent-category logits), so the ratio is indicative; the correlation of the raters' severities
checks that both read the same data. The first fit of a process pays the Numba/PyTensor compiles
and is reported apart.

Run: ``.venv/bin/python benchmarks/bench_facets.py [--fits 3] [--cores 1] [--seed 11] [--clmm]``.
"""

from __future__ import annotations

import argparse
import functools
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_line  # noqa: E402

import bayes_raters.facets.fit as facets_fit  # noqa: E402
import bayes_raters.laplace as laplace  # noqa: E402
import bayes_raters.sampling as sampling  # noqa: E402
from bayes_raters.facets.simulate import simulate_facet_ratings  # noqa: E402

#: (module, function) pairs whose time each fit reports.
PARTS = ((laplace, "checked_approximation"), (sampling, "_run_nuts"), (facets_fit, "conditional_draws"))


def timed_parts() -> dict:
    """Wrap :data:`PARTS` so that each call adds its seconds to the returned dict (cleared per fit)."""
    spent: dict = {}
    for module, name in PARTS:
        original = getattr(module, name)

        @functools.wraps(original)
        def wrapper(*args, original=original, name=name, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - start

        setattr(module, name, wrapper)
    return spent


def one_fit(ratings, systems, seed: int, cores: int | None, spent: dict):
    """One fit: its printed line, the result and the wall time."""
    spent.clear()
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = facets_fit.fit_facets(ratings, systems, random_seed=seed, cores=cores, progressbar=False)
    wall = time.perf_counter() - start
    report, record = result.report, result.inference
    steps = float(result.idata["sample_stats"]["n_steps"].mean())
    parts = ", ".join(f"{name.strip('_')} {seconds:.1f} s" for name, seconds in spent.items())
    start_kind = "warm" if record.warm_start else "cold"
    line = (f"{wall:6.1f} s ({parts}); {record.parametrisation} form, {start_kind} start, {steps:.1f} steps/draw, "
            f"ESS {report.min_ess_bulk:.0f}/{report.min_ess_tail:.0f}, R-hat {report.max_r_hat:.4f}, "
            f"div {report.divergences}, warnings {len(caught)}")
    return line, result, wall


CLMM = """suppressMessages(library(ordinal))
ratings <- read.csv(commandArgs(TRUE)[1])
ratings$rater <- relevel(factor(ratings$rater), ref = "r0")
seconds <- system.time(fit <- clmm(factor(score, ordered = TRUE) ~ rater + prompt + (1 | response),
                                   data = ratings, link = "logit"))[["elapsed"]]
beta <- fit$beta[grepl("^rater", names(fit$beta))]
cat(seconds, "\\n", paste(sub("^rater", "", names(beta)), -beta, sep = "=", collapse = " "), "\\n")
"""


def clmm_anchor(ratings) -> tuple[float, dict] | None:
    """Seconds of R's ``clmm`` on ``ratings`` and its rater severities (minus the rater effects on
    the cumulative logit, against rater ``r0``), or None without ``Rscript``."""
    if shutil.which("Rscript") is None:
        return None
    with tempfile.TemporaryDirectory() as folder:
        data, script = Path(folder) / "ratings.csv", Path(folder) / "clmm.R"
        ratings.to_csv(data, index=False)
        script.write_text(CLMM)
        lines = subprocess.run(["Rscript", str(script), str(data)], capture_output=True, text=True, check=True).stdout.split("\n")
    severity = {"r0": 0.0} | {k: float(v) for k, v in (pair.split("=") for pair in lines[1].split())}
    return float(lines[0]), severity


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fits", type=int, default=3, help="fits after the first (compiling) one")
    parser.add_argument("--cores", type=int, default=None, help="fit_facets(cores=); default one chain per CPU")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--clmm", action="store_true", help="time R's ordinal::clmm on the same ratings (needs Rscript)")
    args = parser.parse_args()
    print(machine_line())
    ratings, systems, _ = simulate_facet_ratings(400, 8, 2, 6, erratic=(0,), random_seed=args.seed)
    anchor = clmm_anchor(ratings) if args.clmm else None
    if args.clmm:
        print("clmm: Rscript not found" if anchor is None else f"clmm (R, ordinal): {anchor[0]:.1f} s")
    spent = timed_parts()
    print(f"first fit of the process (compiles): {one_fit(ratings, systems, args.seed, args.cores, spent)[0]}")
    for i in range(args.fits):
        line, result, wall = one_fit(ratings, systems, args.seed, args.cores, spent)
        ratio = f"; ratio to clmm {wall / anchor[0]:.1f}" if anchor else ""
        print(f"fit {i + 1}: {line}{ratio}")
    if anchor is not None:
        ours = result.rater_table()["severity_mean"]
        theirs = pd.Series(anchor[1]).reindex(ours.index)
        print(f"corr(rater severity, clmm's) over {len(ours)} raters: {np.corrcoef(ours, theirs)[0, 1]:.3f}")


if __name__ == "__main__":
    main()
