"""Aggregated comparisons as they come: Stigler's citation counts among four statistics
journals (``tests/data/citations/``: 12 rows with counts, 3,727 comparisons, no ties),
fitted with ``fit_pairwise(..., count="n")`` (pooled into 6 multinomial pairs, no tie
band since the data have no tie) in both parametrisations (``values``: logit s and log lambda;
``differences``, the default for comparisons alone: ability differences and two log gaps) by
PyMC's NUTS and nutpie, beside choix's Bradley-Terry MLE
on the same comparisons. Prints wall time (compile included), ESS/s of s and lambda, R-hat,
divergences and whether the ranking equals the MLE's.
Run: ``.venv/bin/python benchmarks/bench_pairwise_counts.py [--samplers pymc nutpie] [--seed 1]``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine_line  # noqa: E402

from bayes_raters.pairwise import fit_pairwise  # noqa: E402

DATA = Path(__file__).parents[1] / "tests" / "data" / "citations" / "citations.csv"


def bradley_terry_mle(table: pd.DataFrame) -> pd.Series:
    """choix's maximum-likelihood Bradley-Terry abilities (log scale), one (winner, loser)
    pair per comparison."""
    import choix

    journals = pd.Index(sorted(set(table["cited"]) | set(table["citing"])))
    winners = np.repeat(journals.get_indexer(table["cited"]), table["n"])
    losers = np.repeat(journals.get_indexer(table["citing"]), table["n"])
    params = choix.opt_pairwise(len(journals), list(zip(winners, losers, strict=True)))
    return pd.Series(params - params[journals.get_loc("Biometrika")], index=journals)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samplers", nargs="+", default=["pymc", "nutpie"])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--parametrisations", nargs="+", default=["values", "differences"])
    args = parser.parse_args()
    print(machine_line())
    table = pd.read_csv(DATA)
    start = time.perf_counter()
    mle = bradley_terry_mle(table)
    print(f"choix Bradley-Terry MLE: {time.perf_counter() - start:.2f} s; abilities {mle.round(4).to_dict()}")
    order = list(mle.sort_values(ascending=False).index)
    for parametrisation, sampler in [(p, s) for p in args.parametrisations for s in args.samplers]:
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = fit_pairwise(
                table, item_a="cited", item_b="citing", count="n", random_seed=args.seed, nuts_sampler=sampler, progressbar=False,
                parametrisation=parametrisation,
            )
        seconds = time.perf_counter() - start
        posterior = result.posterior
        ess_s = az.ess(posterior[["s"]])["s"]
        ess_lambda = float(az.ess(posterior[["lambda"]])["lambda"])
        ranking = list(result.item_table().index)
        print(
            f"{parametrisation:>11}, {sampler:>6}: {seconds:6.1f} s wall; ESS/s of s min {float(ess_s.min()) / seconds:.1f}, "
            f"of lambda {ess_lambda / seconds:.1f}; max R-hat {result.report.max_r_hat:.3f}, "
            f"divergences {result.report.divergences}; ranking {'equals' if ranking == order else 'DIFFERS from'} the MLE's "
            f"{ranking}{'; warned: ' + str(caught[0].message)[:80] if caught else ''}"
        )


if __name__ == "__main__":
    main()
