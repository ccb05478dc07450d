"""The many-facet rater model on issue 36's essay design (400 essays x 8 raters x 2 prompts, 6
score categories, one engine's scores, one erratic rater; the tests' fit) with ``fit_facets``'s
defaults: the wall time of each fit and where it goes (the Laplace gate that decides the warm start,
NUTS, the abilities' conditional draws), leapfrog steps per draw, min bulk / tail ESS, max R-hat,
divergences (issue 36's target: <= 10 s, ESS >= 400, no divergences).

No maximum-likelihood anchor is timed: no installed package fits this model (R's ``ordinal::clmm``
fits the Rasch form's cumulative-logit cousin on InstEval in ``tests/data/ml/clmm_reference.R``, and
R is not part of the Python environment). The first fit of a process pays the Numba/PyTensor
compiles and is reported apart.

Run: ``.venv/bin/python benchmarks/bench_facets.py [--fits 3] [--cores 1] [--seed 11]``.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_line  # noqa: E402

import bayes_raters.irt.facets_fit as facets_fit  # noqa: E402
import bayes_raters.laplace as laplace  # noqa: E402
import bayes_raters.sampling as sampling  # noqa: E402
from bayes_raters.irt.facets_simulate import simulate_facet_ratings  # noqa: E402

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


def one_fit(ratings, systems, seed: int, cores: int | None, spent: dict) -> str:
    spent.clear()
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = facets_fit.fit_facets(ratings, systems, random_seed=seed, cores=cores, progressbar=False)
    wall = time.perf_counter() - start
    report, attrs = result.report, result.posterior.attrs
    steps = float(result.idata["sample_stats"]["n_steps"].mean())
    parts = ", ".join(f"{name.strip('_')} {seconds:.1f} s" for name, seconds in spent.items())
    start_kind = "warm" if "nuts_warm_start" in attrs else "cold"
    return (f"{wall:6.1f} s ({parts}); {attrs['parametrisation']} form, {start_kind} start, {steps:.1f} steps/draw, "
            f"ESS {report.min_ess_bulk:.0f}/{report.min_ess_tail:.0f}, R-hat {report.max_r_hat:.4f}, "
            f"div {report.divergences}, warnings {len(caught)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fits", type=int, default=3, help="fits after the first (compiling) one")
    parser.add_argument("--cores", type=int, default=None, help="fit_facets(cores=); default one chain per CPU")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    print(machine_line())
    ratings, systems, _ = simulate_facet_ratings(400, 8, 2, 6, erratic=(0,), random_seed=args.seed)
    spent = timed_parts()
    print(f"first fit of the process (compiles): {one_fit(ratings, systems, args.seed, args.cores, spent)}")
    for i in range(args.fits):
        print(f"fit {i + 1}: {one_fit(ratings, systems, args.seed, args.cores, spent)}")


if __name__ == "__main__":
    main()
