"""IRT side by side in one run: marginal (abilities integrated out by quadrature) vs joint
(abilities sampled) NUTS, each with nutpie and PyMC's sampler, and girth's marginal maximum
likelihood (MML) on the same answers.

Printed per row: wall time (compilation and, for the marginal method, the theta draws
included), seconds of sampling, min bulk ESS of the discriminations per second of sampling,
max R-hat over the sampled item parameters, divergences, leapfrog steps per draw and the
correlation of the posterior mean of a with the truth.

Sizes (respondents x items): ``tiny`` 200 x 10 (2PL), ``small`` 1,000 x 5 (LSAT7's shape; 1PL and 2PL, defaults of
``fit_irt``), ``medium`` 2,000 x 100 (2PL; the issue's Stan comparison), ``large`` 10,000 x 100
(2PL, marginal and girth only: the joint fits took 775 s with nutpie and 5,870 s with PyMC).
Data: theta ~ N(0, 1), log a ~ N(0, 0.3), b ~ N(0, 1), 2 chains x (500 + 500) unless
``--draws/--tune``; chains in parallel on ``--cores`` (default 2).
After each size two references for the max R-hat: independent draws, and NUTS itself on
independent normals of the same dimension (``nuts_r_hat_reference``).
Run: ``.venv/bin/python benchmarks/bench_irt.py [--sizes small medium large]
[--methods marginal joint] [--samplers nutpie pymc] [--gradient-only] [--no-nuts-reference]``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import xarray as xr

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine_line  # noqa: E402

from bayes_raters.irt import fit_irt, simulate_responses  # noqa: E402
from bayes_raters.irt.binary.marginal import build_marginal_from_table  # noqa: E402
from bayes_raters.irt.binary.model import build_from_table, validate_responses  # noqa: E402

SIZES = {"tiny": (200, 10), "small": (1000, 5), "medium": (2000, 100), "large": (10_000, 100)}


def _corr(x, y) -> float:
    return float(np.corrcoef(x, y)[0, 1])


def run(size: str, methods: list[str], samplers: list[str], draws: int, tune: int, cores: int,
        nuts_reference: bool = True, inference: str = "auto") -> None:
    n_respondents, n_items = SIZES[size]
    answers, truth = simulate_responses(n_respondents, n_items, random_seed=1)
    items = list(truth["item"].values)
    models = ["1pl", "2pl"] if size == "small" else ["2pl"]  # tiny, medium, large: 2PL
    for model in models:
        for method in methods:
            if method == "joint" and size == "large":
                continue
            for sampler in samplers:
                start = time.perf_counter()
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    result = fit_irt(answers, model, method=method, nuts_sampler=sampler, draws=draws, tune=tune,
                                     chains=2, cores=cores, random_seed=2, inference=inference)
                seconds = time.perf_counter() - start
                posterior = result.posterior
                sampling = float(posterior.attrs.get("sampling_time", np.nan))
                name = "a_common" if model == "1pl" else "a"
                ess = az.ess(posterior[[name]])[name]
                stats = result.idata["sample_stats"].to_dataset()
                steps = next((float(stats[k].mean()) for k in ("n_steps", "tree_size") if k in stats), float("nan"))
                path = result.inference.path  # the Laplace draws have no NUTS steps
                r_hat = az.rhat(posterior[[v for v in ("a", "b") if v in posterior]])
                max_r_hat = max(float(r_hat[v].max()) for v in r_hat.data_vars)
                corr = _corr(posterior["a"].mean(("chain", "draw")).sel(item=items), truth["a"]) if model == "2pl" else float("nan")
                print(
                    f"{n_respondents:>6} x {n_items:<4} {model} {method:>8} {sampler:>6} ({path}): wall {seconds:6.1f} s, "
                    f"sampling {sampling:6.1f} s, min ESS({name}) {float(ess.min()):5.0f} (report {result.report.min_ess_bulk:.0f}), "
                    f"ESS/s of wall {result.report.min_ess_bulk / seconds:6.1f}, max R-hat(a, b) {max_r_hat:.3f}, "
                    f"divergences {result.report.divergences}, steps/draw {steps:4.1f}, corr(a) {corr:.3f}"
                    f"{'; warned' if caught else ''}",
                    flush=True,
                )
    print(iid_r_hat_reference(2 * n_items, 2, draws), flush=True)
    for sampler in samplers if nuts_reference else []:
        print(nuts_r_hat_reference(2 * n_items, 2, draws, tune, sampler), flush=True)
    import girth

    wide = answers.pivot(index="item", columns="respondent", values="correct").loc[items]
    start = time.perf_counter()
    mml = girth.twopl_mml(wide.to_numpy().astype(int))
    seconds = time.perf_counter() - start
    print(
        f"{n_respondents:>6} x {n_items:<4} 2pl  girth MML: wall {seconds:6.1f} s; corr(a) "
        f"{_corr(mml['Discrimination'], truth['a']):.3f}, corr(b) {_corr(mml['Difficulty'], truth['b']):.3f}",
        flush=True,
    )


def iid_r_hat_reference(n_parameters: int, chains: int, draws: int, repeats: int = 50) -> str:
    """Max R-hat over ``n_parameters`` of independent normal draws (what perfect sampling gives
    with this many chains and draws): median and 90th percentile over ``repeats`` replications."""
    rng = np.random.default_rng(0)
    values = [
        float(az.rhat(xr.Dataset({"x": (("chain", "draw", "k"), rng.normal(size=(chains, draws, n_parameters)))}))["x"].max())
        for _ in range(repeats)
    ]
    return (f"iid reference: max R-hat over {n_parameters} parameters of {chains} x {draws} independent draws: "
            f"median {np.median(values):.4f}, 90th percentile {np.quantile(values, 0.9):.4f}, "
            f"share above 1.01 {np.mean(np.array(values) > 1.01):.2f} ({repeats} replications)")


def nuts_r_hat_reference(n_parameters: int, chains: int, draws: int, tune: int, sampler: str, repeats: int = 5) -> str:
    """Max R-hat over ``n_parameters`` when NUTS itself samples the easiest posterior there is,
    independent standard normals N(0, I), with the fit's chains, draws, tuning and sampler.

    What this separates: a max R-hat above 1.01 that NUTS also gives on N(0, I) is the
    sampler's and the run length's, not the model's. NUTS's draws are antithetic in the bulk
    (bulk ESS above the number of draws) but mix the spread more slowly (tail ESS about half
    the draws in 200 dimensions), and ArviZ's default R-hat is the larger of the bulk and the
    folded (spread) R-hat."""
    import pymc as pm

    values = []
    with pm.Model():
        pm.Normal("x", 0, 1, shape=n_parameters)
        for seed in range(repeats):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                idata = pm.sample(draws, tune=tune, chains=chains, cores=chains, random_seed=seed, nuts_sampler=sampler,
                                  progressbar=False, compute_convergence_checks=False)
            values.append(float(az.rhat(idata.posterior.to_dataset())["x"].max()))
    return (f"NUTS reference ({sampler}): max R-hat over {n_parameters} independent N(0, 1) parameters sampled by NUTS, "
            f"{chains} x ({tune} + {draws}): median {np.median(values):.4f}, range {min(values):.4f}-{max(values):.4f}, "
            f"share above 1.01 {np.mean(np.array(values) > 1.01):.2f} ({repeats} seeds)")


def gradient_cost(n_respondents: int, n_items: int, method: str = "joint", repeats: int = 20) -> None:
    """Compile time and wall time of one log-density + gradient evaluation (Numba backend):
    the unit cost of every leapfrog step, to size a NUTS run before starting it."""
    answers, _ = simulate_responses(n_respondents, n_items, random_seed=1)
    table = validate_responses(answers)
    if method == "joint":
        model = build_from_table(table, "2pl", n_options=None, hierarchical=False)
    else:
        model = build_marginal_from_table(table, "2pl", n_options=None, hierarchical=False)
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
        f"{n_respondents:>6} x {n_items:<4} {method:>8} gradient: {len(point)} parameters, {len(answers):,} answers; compile "
        f"{compiled:.1f} s, {1000 * per_gradient:.1f} ms per log-density + gradient "
        f"(a draw of 64 leapfrog steps: {64 * per_gradient:.1f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", nargs="*", default=["small", "medium", "large"], choices=list(SIZES))
    parser.add_argument("--methods", nargs="*", default=["marginal", "joint"])
    parser.add_argument("--samplers", nargs="*", default=["nutpie", "pymc"])
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--cores", type=int, default=2, help="chains in parallel")
    parser.add_argument("--inference", default="auto", choices=["auto", "nuts", "laplace"], help="fit_irt's inference= (marginal method)")
    parser.add_argument("--gradient-only", action="store_true", help="only time one log-density + gradient")
    parser.add_argument("--no-nuts-reference", action="store_true", help="skip NUTS on N(0, I) of the same size")
    args = parser.parse_args()
    print(machine_line())
    if args.gradient_only:
        for size in args.sizes:
            for method in args.methods:
                gradient_cost(*SIZES[size], method)
        return
    for size in args.sizes:
        run(size, args.methods, args.samplers, args.draws, args.tune, args.cores, not args.no_nuts_reference, args.inference)


if __name__ == "__main__":
    main()
