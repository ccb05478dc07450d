"""How many of the judges model's chains freeze in warmup: many chains per simulated data set.

A frozen chain is one whose adapted step size is below 1e-3 or whose trees average more than
depth 8 after warmup: NUTS has stopped moving (``models/judges.md``, "A frozen chain"). Each data
set is the benchmark's design (:func:`~bayes_raters.judges.simulate_judges`: 10 systems x 1,000
responses, judges of quality 0.8, 0.5 and 0.3, 10% rated twice; no shared error), fitted with the
shared error factor by nutpie as ``fit_judges`` does, with ``--chains`` chains of 500 warmup and
100 kept draws. ``--prior beta`` puts the earlier Beta(1, 1) on the shared share back in place of
the capped uniform (:func:`~bayes_raters.judges.model.split_judge_error`), to count the chains
that froze under it.

Run: ``.venv/bin/python -m validation.judges_frozen_chains --seeds 1 2 3 4 5 6 7 8 [--prior beta]``.
"""

from __future__ import annotations

import argparse
import contextlib
import time
import warnings
from unittest import mock

import pymc as pm
import pytensor.tensor as pt

from bayes_raters.judges import judges_data, simulate_judges
from bayes_raters.judges import model as judges_model
from bayes_raters.judges.fit import ADAPTATION, SAMPLED, excluded_rewrites
from bayes_raters.nutpie_cache import compile_nutpie
from bayes_raters.sampling import numba_mode_excluding, strict_float

#: Below this adapted step size, or above this mean tree depth, a chain counts as frozen.
FROZEN_STEP, FROZEN_DEPTH = 1e-3, 8.0


def beta_split():
    """The shared share under Beta(1, 1), as before the cap (for ``--prior beta``)."""
    error = pm.Gamma("judge_error", alpha=2.0, beta=2.0, dims="judge")
    share = pm.Beta("shared_share", 1.0, 1.0, dims="judge")
    return (pm.Deterministic("sigma_judge", error * pt.sqrt(1 - share), dims="judge"),
            pm.Deterministic("loading", error * pt.sqrt(share), dims="judge"))


def frozen_chains(seed: int, chains: int, prior: str) -> tuple[int, float, float]:
    """(frozen chains, smallest adapted step size, largest mean depth) on data set ``seed``."""
    import nutpie

    sim = simulate_judges(10, 1000, judge_quality=(0.8, 0.5, 0.3), human_share=0.1, random_seed=seed)
    table = judges_data(sim["human_ratings"], sim["judge_scores"], sim["systems"])
    spec = judges_model.JudgesSpec(shared_error=True)
    with mock.patch.object(judges_model, "split_judge_error", beta_split) if prior == "beta" else contextlib.nullcontext():
        model = judges_model.build_judges_model(table, spec)
    with numba_mode_excluding(*excluded_rewrites(table, spec)), strict_float():
        compiled = compile_nutpie(model, var_names=[v for v in SAMPLED if v in model.named_vars])
        trace = nutpie.sample(compiled, draws=100, tune=500, chains=chains, cores=2, seed=1000 + seed, progress_bar=False,
                              target_accept=0.9, **ADAPTATION["nutpie"])
    step = trace.sample_stats["step_size"].values[:, 0]
    depth = trace.sample_stats["depth"].values.mean(axis=1)
    return int(((step < FROZEN_STEP) | (depth > FROZEN_DEPTH)).sum()), float(step.min()), float(depth.max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3, 4, 5, 6, 7, 8])
    parser.add_argument("--chains", type=int, default=64)
    parser.add_argument("--prior", choices=["cap", "beta"], default="cap")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    total = 0
    for seed in args.seeds:
        start = time.perf_counter()
        frozen, step, depth = frozen_chains(seed, args.chains, args.prior)
        total += frozen
        print(f"{args.prior} seed {seed}: frozen {frozen}/{args.chains} chains; smallest step size {step:.2g}, "
              f"largest mean depth {depth:.1f} ({time.perf_counter() - start:.0f} s)", flush=True)
    print(f"{args.prior}: {total} of {args.chains * len(args.seeds)} chains frozen")


if __name__ == "__main__":
    main()
