"""Bayesian beta-latent model at scale: 1,000 items x 50,000 Rao-Kupper outcomes with ties,
2 chains x (1,000 + 1,000); wall time (compile included), ESS/s of s and lambda, and
rank recovery. Samplers: PyMC's NUTS and, if the `bench` extra is installed, nutpie.
Run: ``.venv/bin/python benchmarks/bench_pairwise.py [--items 1000] [--comparisons 50000] [--samplers pymc nutpie]``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import arviz as az
from scipy import stats

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine_line  # noqa: E402

from bayes_raters.pairwise import fit_pairwise, latent_values, simulate_judgements  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--comparisons", type=int, default=50_000)
    parser.add_argument("--samplers", nargs="+", default=["pymc", "nutpie"])
    args = parser.parse_args()
    print(machine_line())
    truth = latent_values(args.items, "uniform", random_seed=1)
    comparisons = simulate_judgements(truth, n_comparisons=args.comparisons, random_seed=2)["comparisons"]
    for sampler in args.samplers:
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = fit_pairwise(comparisons, random_seed=3, nuts_sampler=sampler, chains=2, cores=2)
        seconds = time.perf_counter() - start
        posterior = result.posterior
        ess_s = az.ess(posterior[["s"]])["s"]
        ess_lambda = float(az.ess(posterior[["lambda"]])["lambda"])
        table = result.item_table()
        rho = stats.spearmanr(table["s_mean"], truth.reindex(table.index)).statistic
        print(
            f"{args.items} items x {args.comparisons} outcomes, {sampler:>6}: {seconds:7.1f} s wall; "
            f"ESS/s of s mean {float(ess_s.mean()) / seconds:.1f} (min ESS {float(ess_s.min()):.0f}), "
            f"of lambda {ess_lambda / seconds:.2f}; max R-hat {result.report.max_r_hat:.3f}, "
            f"divergences {result.report.divergences}; Spearman with truth {rho:.3f}"
            f"{'; warned: ' + str(caught[0].message)[:80] if caught else ''}"
        )


if __name__ == "__main__":
    main()
