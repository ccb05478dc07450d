"""Posterior PRMSE of the Bayesian true-score model: wall time (compile included) and ESS.

Two sizes of the Loukina et al. design, 'average' raters, 20% of responses double-scored,
default fit (2 chains x 2,000 draws), 10,000 responses (target < 60 s, ESS >= 400)
and 1,000,000 responses (target < 5 min):

- normal model: 5 systems (one per category), 5 fits;
- ordinal model (integer ratings 1-6, T integrated out): the 'high' system, one fit per
  setting of ``ORDINAL_SETTINGS`` side by side; min bulk ESS over every parameter and PRMSE.
  At 1,000,000 responses only the default runs (``--all-large``: all of them).

Run: ``make bench`` or ``.venv/bin/python benchmarks/bench_ctt_model.py [--skip-large]
[--all-large] [--observations normal ordinal]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import arviz as az  # noqa: E402
from _machine import machine_line  # noqa: E402
from pymc.blocking import DictToArrayBijection  # noqa: E402

from bayes_raters.ctt import (  # noqa: E402
    build_true_score_model,
    double_scored_subset,
    fit_true_score,
    simulate_dataset,
    system_scores_to_long,
)


def run(n_responses: int) -> None:
    data = simulate_dataset(n_responses, raters_per_category=2, systems_per_category=1, random_seed=1)
    ratings = double_scored_subset(data, ("h_5", "h_6"), n_responses // 5, random_seed=2)
    systems = system_scores_to_long(data)
    start = time.perf_counter()
    result = fit_true_score(ratings, systems, random_seed=3, nuts_sampler="pymc")
    seconds = time.perf_counter() - start
    table = result.prmse_table()
    print(
        f"{n_responses:>9,} responses, {len(ratings):,} ratings, {len(table)} systems: "
        f"{seconds:6.1f} s wall (5 fits, compile included); ESS(PRMSE) min {table['ess_bulk'].min():.0f}, "
        f"ESS/s {table['ess_bulk'].sum() / seconds:.0f}; max R-hat {table['r_hat'].max():.3f}"
    )
    print(table[["prmse_mean", "prmse_lower", "prmse_upper", "closed_form", "ess_bulk"]].round(3).to_string())


def _ordinal_inputs(n_responses: int):
    data = simulate_dataset(n_responses, raters_per_category=2, systems_per_category=1, random_seed=1)
    ratings = double_scored_subset(data, ("h_5", "h_6"), n_responses // 5, random_seed=2)
    return ratings, system_scores_to_long(data, ["sys_4"])  # the 'high' system


def gradient_ms(model, repeats: int = 20) -> float:
    """Milliseconds per log-density + gradient at the initial point (compiled with Numba)."""
    function = model.logp_dlogp_function(ravel_inputs=True)
    function.set_extra_values({})
    start = model.initial_point()
    point = DictToArrayBijection.map({v.name: start[v.name] for v in model.value_vars}).data
    function(point)
    began = time.perf_counter()
    for _ in range(repeats):
        function(point)
    return (time.perf_counter() - began) / repeats * 1e3


#: Ordinal-model settings compared side by side: the defaults (nutpie, low-rank adaptation,
#: chains in 2 threads, 1,000 + 2,000), nutpie with half the draws, and PyMC's NUTS with its
#: dense adaptation on 2 cores.
ORDINAL_SETTINGS = {
    "default (nutpie low-rank, 1000+2000)": {},
    "nutpie low-rank, 1000+1000": {"draws": 1000},
    "pymc dense, 2 cores, 1000+1000": {"nuts_sampler": "pymc", "cores": 2, "draws": 1000},
}


def run_ordinal(n_responses: int, settings: dict[str, dict]) -> None:
    ratings, systems = _ordinal_inputs(n_responses)
    label = f"ordinal, {n_responses:>9,} responses ({n_responses // 5:,} double-scored), 1 system"
    start = time.perf_counter()
    model = build_true_score_model(ratings, systems, observation="ordinal", score_range=(1, 6))
    build = time.perf_counter() - start
    print(f"{label}: model built in {build:.1f} s, {len(model.coords['unit']):,} units; "
          f"{gradient_ms(model, repeats=10):.1f} ms per log-density + gradient")
    for name, options in settings.items():
        start = time.perf_counter()
        result = fit_true_score(ratings, systems, observation="ordinal", score_range=(1, 6), random_seed=3, **options)
        seconds = time.perf_counter() - start
        posterior = result.posterior
        names = [n for n in ("mu", "sigma_T", "sigma_e", "alpha", "beta", "tau", "prmse") if n in posterior]
        summary = az.summary(posterior[names], kind="diagnostics")
        stats = result.idata["sample_stats"]
        ess = summary["ess_bulk"].min()
        print(
            f"  {name:<38} {seconds:6.1f} s wall (build and compile included); min bulk ESS "
            f"{ess:.0f} (PRMSE {summary.filter(like='prmse', axis=0)['ess_bulk'].min():.0f}), {ess / seconds:.1f} per s of wall; "
            f"max R-hat {summary['r_hat'].max():.3f}; {float(stats['n_steps'].mean()):.1f} leapfrog steps per draw; "
            f"divergences {int(stats['diverging'].sum())}; PRMSE {float(posterior['prmse'].mean()):.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-large", action="store_true", help="only the 10,000-response case")
    parser.add_argument("--all-large", action="store_true", help="every ordinal setting at 1,000,000 too (default: nutpie's)")
    parser.add_argument("--observations", nargs="+", default=["normal", "ordinal"], choices=["normal", "ordinal"])
    args = parser.parse_args()
    print(machine_line())
    if "normal" in args.observations:
        run(10_000)
        if not args.skip_large:
            run(1_000_000)
    if "ordinal" in args.observations:
        run_ordinal(10_000, ORDINAL_SETTINGS)
        if not args.skip_large:
            default = {k: v for k, v in ORDINAL_SETTINGS.items() if k.startswith("default")}
            run_ordinal(1_000_000, ORDINAL_SETTINGS if args.all_large else default)


if __name__ == "__main__":
    main()
