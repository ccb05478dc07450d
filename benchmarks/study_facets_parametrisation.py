"""Centred against non-centred rater and prompt groups in the many-facet model: divergences,
max R-hat, min bulk ESS, leapfrog steps per draw and wall time of each form, and which form the
default (``centred=None``) keeps, on the SBC configuration's simulations and on the tests' essay
fit. The table in ``models/irt_facets.md`` ("Parametrisation, chosen by the data") comes from it.

    .venv/bin/python benchmarks/study_facets_parametrisation.py [--simulations 1 2 3 4] [--no-essay]

One core per fit (the SBC runner's setting); about 45-150 s per fit here.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the validation package
from _machine import machine_line  # noqa: E402

from bayes_raters.facets import fit_facets  # noqa: E402
from bayes_raters.facets.simulate import simulate_facet_ratings  # noqa: E402
from validation.sbc_mirt_facets import simulate_facets  # noqa: E402


def row(name, ratings, systems, seed, centred):
    """One fit's figures."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        result = fit_facets(ratings, systems, random_seed=seed, cores=1, progressbar=False, centred=centred)
        seconds = time.perf_counter() - start
    report, record = result.report, result.inference
    steps = float(result.idata["sample_stats"]["n_steps"].mean())
    return (f"| {name} | {centred} -> {record.parametrisation} ({record.divergences_by_form}) | {report.divergences} | "
            f"{report.max_r_hat:.3f} | {report.min_ess_bulk:.0f} | {steps:.1f} | {seconds:.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--simulations", type=int, nargs="*", default=[1, 2, 3, 4])
    parser.add_argument("--no-essay", action="store_true")
    args = parser.parse_args()
    print(machine_line())
    print("| data | centred -> kept (divergences by form) | divergences | max R-hat | min bulk ESS | steps/draw | s |")
    print("|---|---|---|---|---|---|---|")
    for seed in args.simulations:
        truth, ratings = simulate_facets(np.random.default_rng([seed, 2018]))  # the SBC runner's generator
        scales = " / ".join(f"{truth[k]:.2f}" for k in ("sigma_log_a", "sigma_severity", "sigma_difficulty"))
        for centred in (True, False, None):
            print(row(f"SBC simulation {seed} (scales {scales})", ratings, None, seed, centred), flush=True)
    if not args.no_essay:
        ratings, systems, _ = simulate_facet_ratings(400, 8, 2, 6, erratic=(0,), random_seed=11)
        for centred in (True, False, None):
            print(row("essays 400 x 8 x 2, r0 erratic", ratings, systems, 11, centred), flush=True)


if __name__ == "__main__":
    main()
