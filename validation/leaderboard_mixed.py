"""Mixed leaderboards (0/1, 3PL, graded and bounded items on one ability) on many seeds: suites simulated by
:func:`~bayes_raters.leaderboard.simulate_mixed_leaderboard` (skewed abilities, two-cluster difficulties,
guessing chances U(0.15, 0.35), cutpoint spacings U(0.4, 1.6), bounded scores' cutpoint spacing U(3, 6) and
precision U(5, 30): not the model's priors), fitted by ``fit_leaderboard`` with its defaults and the declared
item types.

``.venv/bin/python -m validation.leaderboard_mixed --seeds 5 --shape 150 60 40 30 --bounded 30`` prints per seed
the time, the draws the default rule needed, the largest R-hat and smallest bulk ESS, the rank correlation of
the abilities with the truth, and the coverage of the 90% intervals of the difficulties per type, of the
guessing chances, of the cutpoints and of the bounded scores' cutpoints and precision (the truth on the model's
scale: abilities standardised over the systems). ``models/leaderboards.md`` holds the table.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd

from bayes_raters.leaderboard import fit_leaderboard, simulate_mixed_leaderboard


def coverage(draws, true: np.ndarray, dim: str) -> float:
    """Share of ``true`` inside the equal-tailed 90% intervals of ``draws`` along ``dim``."""
    low, high = draws.astype(float).quantile([0.05, 0.95], ("chain", "draw")).transpose("quantile", dim).values
    return float(np.mean((low <= true) & (true <= high)))


def one_seed(shape: tuple[int, int, int, int], grades: int, seed: int, bounded: int = 0) -> dict:
    answers, truth = simulate_mixed_leaderboard(*shape, grades=grades, n_bounded=bounded, random_seed=seed)
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fit_leaderboard(answers, item_types=truth["item_type"].to_dict(), random_seed=seed, progressbar=False)
    seconds = time.perf_counter() - started
    post, report = result.posterior, result.convergence
    theta = post["theta"].mean(("chain", "draw")).to_series()
    true_theta = truth["theta"].reindex(theta.index)
    loc, scale = true_theta.mean(), true_theta.std(ddof=0)
    row = {"seed": seed, "seconds": round(seconds, 1), "draws": report.draws, "converged": report.converged,
           "max_r_hat": round(report.max_r_hat, 4), "min_ess_bulk": round(report.min_ess_bulk),
           "rank_corr": round(theta.corr(true_theta, method="spearman"), 3)}
    types = truth["item_type"]
    for kind in ("2pl", "3pl", "graded", "bounded"):
        items = types.index[types == kind]
        if len(items):
            row[f"cover_b_{kind}"] = round(coverage(post["b"].sel(item=items), ((truth["b"][items] - loc) / scale).to_numpy(), "item"), 3)
    if "c" in post:
        row["cover_c"] = round(coverage(post["c"], truth["c"][post["c"]["item_3pl"].values].to_numpy(), "item_3pl"), 3)
    if "cutpoints" in post:
        row["cover_cutpoints"] = round(coverage(post["cutpoints"], truth["cutpoints"].to_numpy(), "cutpoint"), 3)
    if "precision" in post:
        row["cover_bounded_cut"] = coverage(post["bounded_cutpoints"].sel(bounded_cutpoint=["one"]), truth["bounded_cutpoints"][["one"]].to_numpy(),
                                            "bounded_cutpoint")
        row["cover_precision"] = coverage(post["precision"].expand_dims(one=[0]), np.array([truth["precision"]]), "one")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--shape", type=int, nargs=4, default=(150, 60, 40, 30), metavar=("SYSTEMS", "BINARY", "GUESSING", "GRADED"))
    parser.add_argument("--grades", type=int, default=10)
    parser.add_argument("--bounded", type=int, default=0, help="items with bounded scores in [0, 1]")
    args = parser.parse_args()
    rows = [one_seed(tuple(args.shape), args.grades, seed, args.bounded) for seed in range(args.seeds)]
    table = pd.DataFrame(rows)
    print(table.to_string(index=False))
    print(table.drop(columns=["seed", "converged"]).mean().round(3).to_string())


if __name__ == "__main__":
    main()
