"""Issue 38, point 3: arena-scale pairwise votes. ``fit_arena`` with its defaults beside the arena
recipe in the same run: a maximum-likelihood Bradley-Terry fit (scikit-learn's logistic regression
without penalty, ties counted as half a win for each side, as public arena leaderboards do) and
100 bootstrap refits. Without style columns the recipe fits aggregated pair counts and resamples
them multinomially (the fast way arena notebooks use); with style columns it fits the vote rows
(sparse design) and resamples rows, ``--style-bootstrap`` times, and the time for 100 is that
count's time scaled up (printed as such).

Votes come from ``simulate_arena``: skewed true ratings (standardised Gamma(2), not the normal
prior), lognormal popularity of models, ties from a Rao-Kupper tie band, style covariates that
better models score higher on, categories with their own deviations.

Printed per shape: wall times and their ratio, max R-hat, min ESS and Pareto k of the fit, the
share of true ranks inside the 90% rank intervals (ours: posterior; recipe: bootstrap quantiles
of each replicate's ranks), the share of true ratings in the 90% rating intervals (ours only: the
recipe's half-tie scale is not the model's), Spearman of the means with the truth, and the
drop-k-votes check of the top rank. ``--coverage N`` adds N smaller data sets (60 models x 100,000
votes, seeds 1..N) for the rank coverage of both.

Issue 38's targets: 150 x 1M in no more than the recipe's time; 250 x 4M within 5 min; rank
intervals covering the true rank >= 90% at nominal 90%. Measured figures: ``models/leaderboards.md``.

Run: ``.venv/bin/python benchmarks/bench_arena.py [--shapes 150 1000000 250 4000000] [--style 0]
[--categories 0] [--coverage 40]``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import sparse, stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_line  # noqa: E402

from bayes_raters.pairwise import fit_arena, simulate_arena  # noqa: E402


def _half_tie_rows(votes: pd.DataFrame, models: pd.Index):
    """Design rows (+1 first model, -1 second), labels (first model won) and weights: a win or
    loss is one row of weight 1, a tie two rows (one each way) of weight 1/2."""
    a, b = models.get_indexer(votes["model_a"]), models.get_indexer(votes["model_b"])
    outcome = votes["outcome"].to_numpy()
    tie = outcome == "tie"
    rows = np.concatenate([np.arange(len(votes)), np.nonzero(tie)[0]])
    label = np.concatenate([outcome == "win", np.zeros(tie.sum(), bool)])
    label[: len(votes)][tie] = True
    weight = np.concatenate([np.where(tie, 0.5, 1.0), np.full(tie.sum(), 0.5)])
    return a[rows], b[rows], label, weight, rows


def _logistic(a, b, label, weight, n_models, style=None):
    """Unpenalised logistic regression on the sparse design; ratings (log odds) centred."""
    from sklearn.linear_model import LogisticRegression

    n = a.size
    design = sparse.csr_array((np.concatenate([np.ones(n), -np.ones(n)]), (np.tile(np.arange(n), 2), np.concatenate([a, b]))),
                              shape=(n, n_models))
    if style is not None:
        design = sparse.hstack([design, sparse.csr_array(style)], format="csr")
    fit = LogisticRegression(fit_intercept=False, C=np.inf, tol=1e-6, max_iter=1000).fit(design, label, sample_weight=weight)
    theta = fit.coef_[0][:n_models]
    return theta - theta.mean()


def arena_recipe(votes: pd.DataFrame, models: pd.Index, style: list[str], rounds: int, rng) -> tuple[np.ndarray, np.ndarray, float]:
    """ML ratings, bootstrap ratings (rounds x models) and the seconds taken."""
    start = time.perf_counter()
    a, b, label, weight, rows = _half_tie_rows(votes, models)
    if not style:  # aggregate identical (pair, label) rows: counts are the weights
        key = (a * len(models) + b) * 2 + label
        cells, inverse = np.unique(key, return_inverse=True)
        counts = np.bincount(inverse, weights=weight)
        ca, cb, cl = cells // 2 // len(models), cells // 2 % len(models), (cells % 2).astype(bool)
        ml = _logistic(ca, cb, cl, counts, len(models))
        total = int(round(counts.sum() * 2))
        boots = []
        for _ in range(rounds):
            resampled = rng.multinomial(total, counts / counts.sum()) / 2
            keep = resampled > 0
            boots.append(_logistic(ca[keep], cb[keep], cl[keep], resampled[keep], len(models)))
        return ml, np.array(boots), time.perf_counter() - start
    z = votes[style].to_numpy(float)[rows]
    ml = _logistic(a, b, label, weight, len(models), z)
    boots = []
    for _ in range(rounds):
        pick = rng.integers(0, len(votes), len(votes))
        sub = votes.iloc[pick]
        sa, sb, sl, sw, srows = _half_tie_rows(sub, models)
        boots.append(_logistic(sa, sb, sl, sw, len(models), sub[style].to_numpy(float)[srows]))
    return ml, np.array(boots), time.perf_counter() - start


def _rank_cover(draws: np.ndarray, truth: np.ndarray, prob: float = 0.9) -> float:
    ranks = (-draws).argsort(axis=1).argsort(axis=1) + 1
    true_rank = (-truth).argsort().argsort() + 1
    tail = (1 - prob) / 2
    low, high = np.quantile(ranks, tail, axis=0, method="lower"), np.quantile(ranks, 1 - tail, axis=0, method="higher")
    return float(np.mean((true_rank >= low) & (true_rank <= high)))


def one_shape(n_models, n_votes, args, seed, quiet=False) -> dict:
    sim = simulate_arena(n_models, n_votes, n_style=args.style, n_categories=args.categories, random_seed=seed)
    votes = sim["votes"]
    style = [f"style_{k + 1}" for k in range(args.style)]
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fit_arena(votes, style=style, category="category" if args.categories else None, random_seed=seed, progressbar=False)
    ours = time.perf_counter() - start
    models = result.data.models
    truth = sim["theta"].reindex(models).to_numpy()
    draws = result.posterior["rating"].stack(s=("chain", "draw")).transpose("s", "model").to_numpy()
    table = result.system_table().reindex(models)
    low, high = (table["rating_lower"] - 1000) / (400 / np.log(10)), (table["rating_upper"] - 1000) / (400 / np.log(10))
    rounds = args.bootstrap if not style else args.style_bootstrap
    ml, boots, recipe = arena_recipe(votes, models, style, rounds, np.random.default_rng(seed))
    recipe_100 = recipe if not style else recipe * 100 / max(rounds, 1)
    row = {"shape": f"{n_models} x {n_votes:,}", "seed": seed, "ours_s": ours, "recipe_s": recipe, "recipe_100_s": recipe_100,
           "ratio": ours / recipe_100, "max_rhat": result.report.max_r_hat, "min_ess": result.report.min_ess_bulk,
           "pareto_k": result.report.pareto_k, "rank_cover": _rank_cover(draws, truth), "recipe_rank_cover": _rank_cover(boots, truth),
           "rating_cover": float(np.mean((truth >= low) & (truth <= high))),
           "spearman": stats.spearmanr(table["rating_mean"], truth)[0], "recipe_spearman": stats.spearmanr(ml, truth)[0],
           "warned": "; ".join(str(w.message)[:60] for w in caught)}
    if not quiet:
        start = time.perf_counter()
        check = result.drop_votes_check()
        row.update(drop_k=check["votes_dropped"], drop_share=check["share_dropped"], p_rank_1=check["p_rank_1"],
                   drop_refit_margin=check["refit_margin"], drop_s=time.perf_counter() - start)
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", type=int, nargs="+", default=[150, 1_000_000, 250, 4_000_000])
    parser.add_argument("--style", type=int, default=0)
    parser.add_argument("--categories", type=int, default=0)
    parser.add_argument("--bootstrap", type=int, default=100)
    parser.add_argument("--style-bootstrap", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--coverage", type=int, default=0)
    args = parser.parse_args()
    print(machine_line())
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 30)
    rows = [one_shape(m, n, args, args.seed) for m, n in zip(args.shapes[::2], args.shapes[1::2], strict=True)]
    print(pd.DataFrame(rows).round(4).to_string(index=False))
    if args.coverage:
        reps = pd.DataFrame([one_shape(60, 100_000, args, seed, quiet=True) for seed in range(1, args.coverage + 1)])
        print(f"\ncoverage over {args.coverage} data sets of 60 models x 100,000 votes (style {args.style}, categories {args.categories}):")
        print(reps[["ours_s", "recipe_s", "rank_cover", "recipe_rank_cover", "rating_cover", "max_rhat", "pareto_k"]].describe().round(4).to_string())


if __name__ == "__main__":
    main()
