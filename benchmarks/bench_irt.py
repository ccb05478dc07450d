"""2PL IRT: wall time and ESS/s of the discriminations with nutpie and with PyMC's own NUTS,
and girth's marginal maximum likelihood (MML) time and accuracy on the same answers.

Sizes: 1,000 x 40 and 10,000 x 100 (respondents x items), 2 chains x (tune + draws), chains
in parallel on ``--cores`` (default 2). Needs the `bench` extra (nutpie): ``make bench``
installs it. The figures in ``models/irt.md`` came from
the defaults: 2 x (1,000 + 1,000) at 1,000 x 40 and 2 x (500 + 500) at 10,000 x 100 (about
13 min per sampler there).
Run: ``.venv/bin/python benchmarks/bench_irt.py [--skip-large | --skip-small] [--samplers pymc nutpie]
[--draws N --tune N --cores 2] [--gradient-only]``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine_line  # noqa: E402

from bayes_raters.irt import simulate_responses  # noqa: E402
from bayes_raters.irt.model import build_from_table, validate_responses  # noqa: E402
from bayes_raters.sampling import sample_model  # noqa: E402


def _corr(x, y) -> float:
    return float(np.corrcoef(x, y)[0, 1])


def run(n_respondents: int, n_items: int, samplers: list[str], draws: int = 1000, tune: int = 1000, cores: int = 2) -> None:
    answers, truth = simulate_responses(n_respondents, n_items, random_seed=1)
    table = validate_responses(answers)
    items = list(truth["item"].values)
    for sampler in samplers:
        model = build_from_table(table, "2pl", n_options=None, hierarchical=False)
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            idata, report = sample_model(model, random_seed=2, nuts_sampler=sampler, draws=draws, tune=tune, cores=cores)
        seconds = time.perf_counter() - start
        a = idata["posterior"].to_dataset()[["a"]]
        ess = az.ess(a)["a"]
        estimate = a["a"].mean(("chain", "draw")).sel(item=items)
        print(
            f"{n_respondents:>6} x {n_items:<4} {sampler:>6}, 2 chains x ({tune} + {draws}), {cores} core(s): "
            f"{seconds:7.1f} s wall (compile included); "
            f"ESS(a) min {float(ess.min()):.0f}, ESS/s {float(ess.mean()) / seconds:.1f}; "
            f"max R-hat {report.max_r_hat:.3f}, divergences {report.divergences}; corr(a, true a) "
            f"{_corr(estimate, truth['a']):.3f}{'; warned' if caught else ''}"
        )
    import girth

    wide = answers.pivot(index="item", columns="respondent", values="correct").loc[items]
    start = time.perf_counter()
    mml = girth.twopl_mml(wide.to_numpy().astype(int))
    seconds = time.perf_counter() - start
    print(
        f"{n_respondents:>6} x {n_items:<4}  girth: {seconds:7.1f} s (MML 2PL); corr(a, true a) "
        f"{_corr(mml['Discrimination'], truth['a']):.3f}, corr(b, true b) {_corr(mml['Difficulty'], truth['b']):.3f}"
    )


def gradient_cost(n_respondents: int, n_items: int, repeats: int = 20) -> None:
    """Compile time and wall time of one log-density + gradient evaluation (Numba backend):
    the unit cost of every leapfrog step, to size a NUTS run before starting it."""
    answers, _ = simulate_responses(n_respondents, n_items, random_seed=1)
    model = build_from_table(validate_responses(answers), "2pl", n_options=None, hierarchical=False)
    start = time.perf_counter()
    function = model.logp_dlogp_function(ravel_inputs=True, mode="NUMBA")
    function.set_extra_values({})
    point = np.concatenate([model.initial_point()[v.name].ravel() for v in model.value_vars])
    function(point)
    compiled = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(repeats):
        function(point)
    per_gradient = (time.perf_counter() - start) / repeats
    print(
        f"{n_respondents:>6} x {n_items:<4} gradient: {len(point)} parameters, {len(answers):,} answers; compile "
        f"{compiled:.1f} s, {1000 * per_gradient:.1f} ms per log-density + gradient "
        f"(a draw of 64 leapfrog steps: {64 * per_gradient:.1f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-large", action="store_true", help="only 1,000 x 40")
    parser.add_argument("--skip-small", action="store_true", help="only 10,000 x 100")
    parser.add_argument("--samplers", nargs="*", default=["nutpie", "pymc"])
    parser.add_argument("--draws", type=int, help="default 1,000 at 1,000 x 40 and 500 at 10,000 x 100")
    parser.add_argument("--tune", type=int, help="default as --draws")
    parser.add_argument("--cores", type=int, default=2, help="chains in parallel")
    parser.add_argument("--gradient-only", action="store_true", help="only time one log-density + gradient")
    args = parser.parse_args()
    print(machine_line())
    if args.gradient_only:
        for size in ([] if args.skip_small else [(1000, 40)]) + ([] if args.skip_large else [(10_000, 100)]):
            gradient_cost(*size)
        return
    if not args.skip_small:
        run(1000, 40, args.samplers, args.draws or 1000, args.tune or 1000, args.cores)
    if not args.skip_large:
        run(10_000, 100, args.samplers, args.draws or 500, args.tune or 500, args.cores)


if __name__ == "__main__":
    main()
