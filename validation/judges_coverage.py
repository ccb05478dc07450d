"""Coverage and width of the judges model's 90% intervals beside PPI++ (issue 65, point 4).

Each scenario simulates designs whose truth is not drawn from the model's priors
(:func:`~bayes_raters.judges.simulate_judges`: skewed true scores, set judge correlations with the
true score, biases for chosen systems, errors shared between judges, noisy humans), fits
:func:`~bayes_raters.judges.fit_judges` with its defaults, and checks each system's 90% interval
against ``panel_mean`` (what this panel of raters' mean rating estimates: the target of the fit's
``system_mean`` and of PPI), and each pair's difference. PPI++ (the package's arithmetic, equal to
ppi_py) runs on the same data. Module-level functions, so a process pool can run data sets.

Run: ``.venv/bin/python -m validation.judges_coverage --data-sets 20`` (the card's table), or the
slow test ``tests/judges/test_coverage.py``.
"""

from __future__ import annotations

import argparse
import itertools
import time
import warnings

import numpy as np
import pandas as pd

from bayes_raters.judges import fit_judges, simulate_judges

#: name -> simulate_judges keywords (4 systems x 150 responses each unless set).
SCENARIOS = {
    "good judge": {"judge_quality": (0.8,), "human_share": 0.1, "ratings_per_response": 2, "human_correlation": 0.5},
    "weak judge": {"judge_quality": (0.3,), "human_share": 0.1, "ratings_per_response": 2, "human_correlation": 0.5},
    "biased judge": {"judge_quality": (0.8, 0.6), "judge_bias": {(0, 0): 0.3, (0, 3): 0.3}, "human_share": 0.1,
                     "ratings_per_response": 2, "human_correlation": 0.5},
    "correlated judges": {"judge_quality": (0.7, 0.7, 0.7), "shared_error": 0.5, "human_share": 0.1, "ratings_per_response": 2,
                          "human_correlation": 0.5},
    "noisy, sparse humans": {"judge_quality": (0.8, 0.5), "human_share": 0.05, "ratings_per_response": 1, "human_correlation": 0.3},
    "three ratings, 20%": {"judge_quality": (0.5, 0.5), "human_share": 0.2, "ratings_per_response": 3, "human_correlation": 0.6},
}


def one_data_set(scenario: str, seed: int, n_systems: int = 4, n_responses: int = 150, ci_prob: float = 0.9) -> dict:
    """Coverage counts and mean widths of one data set, ours and PPI++'s, for system means and differences."""
    sim = simulate_judges(n_systems, n_responses, random_seed=seed, **SCENARIOS[scenario])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fit_judges(sim["human_ratings"], sim["judge_scores"], sim["systems"], random_seed=seed, progressbar=False)
    truth = sim["truth"]["panel_mean"]
    baselines = result.baseline_table(ci_prob)
    out = {"scenario": scenario, "seed": seed, "converged": result.convergence.converged}
    for method in ("bayes_raters", "ppi++"):
        table = baselines.xs(method, level="method").reindex(truth.index)
        out[f"{method}_covered"] = int(((table["lower"] <= truth) & (truth <= table["upper"])).sum())
        out[f"{method}_width"] = float((table["upper"] - table["lower"]).mean())
    differences = result.difference_table(ci_prob)
    z = 1.6448536269514722
    ppi = baselines.xs("ppi++", level="method")
    se = (ppi["upper"] - ppi["lower"]) / (2 * z)
    covered, width, ppi_covered, ppi_width = 0, [], 0, []
    for a, b in itertools.combinations(truth.index, 2):
        target = truth[a] - truth[b]
        row = differences.loc[(a, b)]
        covered += int(row["lower"] <= target <= row["upper"])
        width.append(row["upper"] - row["lower"])
        centre, half = ppi.loc[a, "mean"] - ppi.loc[b, "mean"], z * np.hypot(se[a], se[b])
        ppi_covered += int(centre - half <= target <= centre + half)
        ppi_width.append(2 * half)
    out.update({"n_systems": len(truth), "n_pairs": len(width), "difference_covered": covered, "difference_width": float(np.mean(width)),
                "ppi_difference_covered": ppi_covered, "ppi_difference_width": float(np.mean(ppi_width))})
    return out


def coverage_table(rows: list[dict]) -> pd.DataFrame:
    """Per scenario: data sets, converged share, coverage of system means and differences (ours and
    PPI++), mean widths and our width over PPI++'s."""
    frame = pd.DataFrame(rows)
    grouped = frame.groupby("scenario", sort=False)
    systems, pairs = grouped["n_systems"].sum(), grouped["n_pairs"].sum()
    table = pd.DataFrame({
        "data_sets": grouped.size(), "converged": grouped["converged"].mean(),
        "coverage": grouped["bayes_raters_covered"].sum() / systems, "ppi_coverage": grouped["ppi++_covered"].sum() / systems,
        "width": grouped["bayes_raters_width"].mean(), "ppi_width": grouped["ppi++_width"].mean(),
        "difference_coverage": grouped["difference_covered"].sum() / pairs, "ppi_difference_coverage": grouped["ppi_difference_covered"].sum() / pairs,
        "difference_width": grouped["difference_width"].mean(), "ppi_difference_width": grouped["ppi_difference_width"].mean(),
    })
    table["width_ratio"] = table["width"] / table["ppi_width"]
    table["difference_width_ratio"] = table["difference_width"] / table["ppi_difference_width"]
    return table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-sets", type=int, default=20)
    parser.add_argument("--scenarios", nargs="+", default=list(SCENARIOS))
    args = parser.parse_args()
    start, rows = time.perf_counter(), []
    for scenario in args.scenarios:
        for seed in range(1, args.data_sets + 1):
            rows.append(one_data_set(scenario, seed))
            print(rows[-1], flush=True)
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print(coverage_table(rows).round(3))
    print(f"{len(rows)} data sets in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
