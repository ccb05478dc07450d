"""Coverage of the agreement intervals on unbalanced designs (issue 39, point 3).

Each data set: :func:`~bayes_raters.agreement.simulate.simulate_agreement` (200 units, a pool of
12 raters, 2-5 ratings per unit from random overlapping subsets, integer 1-5 scores), then
:func:`~bayes_raters.agreement.agreement_table` at the ordinal level; each coefficient's
bootstrap and posterior intervals are checked against the population value: the same
coefficient computed on one very large data set of the same process (60,000 units, a pool of
600 raters, so that the rater variance is that of the rater population). With
``observation="ordinal"`` the posterior ICCs are those of the latent scale, checked against
their values from the simulation's SDs. Module-level functions, so a process pool runs seeds.

Run: ``.venv/bin/python -m validation.agreement_coverage --data-sets 100`` (the table in the
card and the closing note), or the slow test ``tests/agreement/test_coverage.py``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

import numpy as np
import pandas as pd

from bayes_raters.agreement import agreement_table
from bayes_raters.agreement.bootstrap import coefficients
from bayes_raters.agreement.layout import agreement_ratings
from bayes_raters.agreement.simulate import simulate_agreement

#: The designs: latent SDs of units, raters and error, and the units' distribution.
CONFIGS = {
    "normal units": {"sigma_unit": 0.8, "sigma_rater": 0.3, "sigma_error": 0.6, "abilities": "normal"},
    "skewed units": {"sigma_unit": 0.8, "sigma_rater": 0.3, "sigma_error": 0.6, "abilities": "skewed"},
}


def population_values(config: str, level: str = "ordinal") -> pd.Series:
    """The coefficients on 60,000 units rated by a pool of 600 raters (seed fixed)."""
    table = simulate_agreement(60_000, 600, random_seed=20261129, **CONFIGS[config])
    return coefficients(agreement_ratings(table, level))


def latent_values(config: str, k: float) -> pd.Series:
    """The six ICCs of the latent scale, from the simulation's SDs (``k`` for the k forms)."""
    c = CONFIGS[config]
    u, r, e = c["sigma_unit"] ** 2, c["sigma_rater"] ** 2, c["sigma_error"] ** 2
    return pd.Series({"ICC1": u / (u + r + e), "ICC2": u / (u + r + e), "ICC3": u / (u + e),
                      "ICC1k": u / (u + (r + e) / k), "ICC2k": u / (u + (r + e) / k), "ICC3k": u / (u + e / k)})


def one_data_set(seed: int, config: str, truth: pd.Series, observation: str = "normal", ci_prob: float = 0.9) -> pd.DataFrame:
    """Per coefficient: whether the bootstrap / posterior interval covers ``truth``, and the fit's convergence."""
    ratings = simulate_agreement(200, 12, random_seed=seed, **CONFIGS[config])
    start = time.perf_counter()
    table = agreement_table(ratings, level="ordinal", ci_prob=ci_prob, observation=observation, random_seed=seed + 1,
                            progressbar=False)
    target = truth if observation == "normal" else pd.concat([truth.drop(latent_values(config, 1).index), latent_values(config, table.attrs["k"])])
    target = target.reindex(table.index)
    return pd.DataFrame({
        "seed": seed, "config": config, "observation": observation, "truth": target,
        "estimate": table["estimate"],
        "bootstrap_covered": (table["bootstrap_lower"] <= target) & (target <= table["bootstrap_upper"]),
        "posterior_covered": (table["posterior_lower"] <= target) & (target <= table["posterior_upper"]),
        "has_posterior": table["posterior_lower"].notna(),
        "converged": table.attrs["converged"], "seconds": time.perf_counter() - start,
    }).rename_axis("coefficient").reset_index()


def coverage_study(n_data_sets: int, observation: str = "normal", workers: int = 2, configs=tuple(CONFIGS),
                   out: str | None = None, first: int = 0) -> pd.DataFrame:
    """All rows of :func:`one_data_set` for data sets ``first..first+n_data_sets-1`` (seed 1000
    times that) of every config, on a process pool; with ``out``, each data set's rows are
    appended to that CSV as it finishes."""
    frames = []
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("forkserver")) as pool:
        futures = []
        for config in configs:
            truth = population_values(config)
            futures += [pool.submit(one_data_set, 1000 * seed, config, truth, observation) for seed in range(first, first + n_data_sets)]
        for future in as_completed(futures):
            frames.append(future.result())
            if out is not None:
                frames[-1].to_csv(out, mode="a", header=len(frames) == 1, index=False)
                print(f"{len(frames)} of {len(futures)} data sets", flush=True)
    return pd.concat(frames, ignore_index=True).sort_values(["config", "seed"], kind="stable")


def coverage_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Share of data sets whose interval covers the population value, per config and coefficient."""
    grouped = rows.groupby(["config", "coefficient"], sort=False)
    out = grouped.agg(truth=("truth", "first"), mean_estimate=("estimate", "mean"), bootstrap=("bootstrap_covered", "mean"),
                      posterior=("posterior_covered", "mean"), has_posterior=("has_posterior", "all"), converged=("converged", "mean"),
                      data_sets=("seed", "nunique"))
    out.loc[~out["has_posterior"], "posterior"] = np.nan
    return out.drop(columns="has_posterior")


def main() -> None:  # pragma: no cover - a command-line study
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-sets", type=int, default=100)
    parser.add_argument("--observation", default="normal", choices=["normal", "ordinal"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--configs", nargs="*", default=list(CONFIGS))
    parser.add_argument("--first", type=int, default=0, help="first data set (seed 1000 x it): more data sets in a second run")
    parser.add_argument("--out", default=None, help="CSV that each data set's rows are appended to as it finishes")
    args = parser.parse_args()
    start = time.perf_counter()
    rows = coverage_study(args.data_sets, args.observation, args.workers, args.configs, args.out, args.first)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(coverage_table(rows).round(3))
    print(f"{len(rows['seed'].unique())} seeds x {len(args.configs)} configs, {time.perf_counter() - start:.0f} s, "
          f"median {rows.groupby(['config', 'seed'])['seconds'].first().median():.1f} s per data set")


if __name__ == "__main__":
    main()
