"""Checking :func:`~bayes_raters.pairwise.plan.plan_pairwise` against real refits: a planted
truth, a pilot of random comparisons, the plan from the pilot's fit, and then the comparisons
actually made (``next_pairs`` batches with a refit after each, or random pairs) with the
ranking measures of the refitted posterior against the planted truth."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import stats

from bayes_raters.errors import ConvergenceWarning
from bayes_raters.pairwise.design import random_pairs
from bayes_raters.pairwise.fit import fit_pairwise
from bayes_raters.pairwise.plan import ability_draws, plan_pairwise, ranking_measures
from bayes_raters.pairwise.simulate import latent_values, simulate_judgements

#: The planted truths of the check: 30 items spread uniformly (new values per replication),
#: lambda 8, tie band 0.5.
TRUTH = {"n_items": 30, "lam": 8.0, "epsilon": 0.5, "seed": 1}
#: Refits of the check (the package defaults, progress bar off).
REFIT = {"draws": 1000, "tune": 1000, "chains": 2, "progressbar": False}


def refit(comparisons: pd.DataFrame, seed: int):
    """A fit for the check at the package's defaults. Its ConvergenceWarning is silenced: the
    measures read posterior means and 5%/95% rank quantiles, which the weakest fits still give
    (320 refits of the 40-pilot check: min bulk ESS median 348, lowest 64; max R-hat under 1.01
    in 81%, at most 1.054); each realised row records the fit's max R-hat and min bulk ESS."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fit_pairwise(comparisons, random_seed=seed, **REFIT)


def planted_truth(seed: int = TRUTH["seed"]) -> pd.Series:
    """30 item values drawn uniformly on (0, 1). The probability that the top-k set is settled
    depends on the gaps between the k-th and the next items, which vary from truth to truth
    (seed 1 has its 3rd, 4th and 5th items within 0.012), so the check draws a new truth per
    replication: the plan is an expectation over truths drawn from the posterior."""
    return latent_values(TRUTH["n_items"], random_seed=seed)


def realised_measures(result, truth: pd.Series, k: int, ci_prob: float) -> dict[str, float]:
    """The plan's measures read off a real fit: Spearman of the posterior mean of s with the
    truth, mean rank-interval width, top-k probability, whether the top-k set is the true one."""
    u, _ = ability_draws(result)
    center = result.posterior["s"].mean(("chain", "draw")).to_numpy()
    true = truth.reindex(result.data.items).to_numpy()
    out = {"spearman": float(stats.spearmanr(center, true)[0])}
    out.update(ranking_measures(u, center, k, ci_prob))
    out["top_k_correct"] = float(set(np.argsort(-center)[:k]) == set(np.argsort(-true)[:k]))
    return out


def _judge(truth: pd.Series, pairs: pd.DataFrame, seed) -> pd.DataFrame:
    return simulate_judgements(truth, pairs=pairs, lam=TRUTH["lam"], epsilon=TRUTH["epsilon"], random_seed=seed)["comparisons"]


def realise(pilot: pd.DataFrame, pilot_fit, truth: pd.Series, strategy: str, sizes: list[int], batch: int, k: int,
            ci_prob: float, seed: int) -> list[dict]:
    """Make the planned comparisons for real, in rounds of ``batch`` (BALD: ``next_pairs`` of the
    latest fit, refitted after every round) and refit: measures at each size in ``sizes``."""
    rng = np.random.default_rng(seed)
    comparisons, done, rows, result = pilot, 0, [], pilot_fit
    for size in sizes:
        while done < size:
            m = min(batch, size - done)
            if strategy == "bald":
                if result is None:
                    result = refit(comparisons, int(rng.integers(2**31)))
                pairs = result.next_pairs(m, random_seed=int(rng.integers(2**31)))[["item_a", "item_b"]]
            else:
                a, b = random_pairs(len(truth), m, rng)
                pairs = pd.DataFrame({"item_a": truth.index[a], "item_b": truth.index[b]})
            comparisons = pd.concat([comparisons, _judge(truth, pairs, int(rng.integers(2**31)))], ignore_index=True)
            done += m
            result = None
        if result is None:
            result = refit(comparisons, int(rng.integers(2**31)))
        rows.append({"strategy": strategy, "extra": size, **realised_measures(result, truth, k, ci_prob),
                     "max_r_hat": result.report.max_r_hat, "min_ess_bulk": result.report.min_ess_bulk})
    return rows


def one_replication(seed: int, sizes=(0, 50, 100, 200), pilot_size: int = 150, batch: int = 50, top_k: int = 3,
                    ci_prob: float = 0.9, simulations: int = 20) -> pd.DataFrame:
    """Planned and realised measures for one truth and pilot: rows (source, strategy, extra, measures...)."""
    truth = planted_truth(seed)
    pilot = simulate_judgements(truth, n_comparisons=pilot_size, lam=TRUTH["lam"], epsilon=TRUTH["epsilon"],
                                random_seed=[seed, 0])["comparisons"]
    fit = refit(pilot, seed)
    planned = plan_pairwise(fit, list(sizes), batch=batch, top_k=top_k, ci_prob=ci_prob, simulations=simulations,
                            random_seed=seed)
    realised = [row for i, strategy in enumerate(("bald", "random"))
                for row in realise(pilot, fit, truth, strategy, list(sizes), batch, top_k, ci_prob, seed * 10 + i)]
    return planned_and_realised(planned, realised, seed)


COLUMNS = ["source", "strategy", "extra", "spearman", "rank_width", "p_top_k", "top_k_correct", "max_r_hat", "min_ess_bulk"]


def planned_and_realised(plan: pd.DataFrame, realised: list[dict], replication: int) -> pd.DataFrame:
    """One frame of a plan's rows at the realised sizes and the realised rows, for :func:`compare`."""
    realised = pd.DataFrame(realised).assign(source="realised")
    planned = plan[plan["extra"].isin(realised["extra"])].assign(source="planned", max_r_hat=np.nan, min_ess_bulk=np.nan)
    return pd.concat([planned, realised], ignore_index=True)[COLUMNS].assign(replication=replication)


def compare(replications: pd.DataFrame) -> pd.DataFrame:
    """Mean planned and realised measures per (strategy, extra) over replications, their ratio,
    the standard error of the mean planned - realised difference (paired by replication), and
    the planned and realised improvement over the pilot (the extra = 0 row)."""
    means = (replications.drop(columns=["replication", "max_r_hat", "min_ess_bulk"])
             .groupby(["source", "strategy", "extra"]).mean(numeric_only=True))
    planned, realised = means.loc["planned"], means.loc["realised"]
    out = planned.add_prefix("planned_").join(realised.add_prefix("realised_"))
    keys = ["replication", "strategy", "extra"]
    measures = ["spearman", "rank_width", "p_top_k"]
    by_source = {source: rows.set_index(keys)[measures] for source, rows in replications.groupby("source")}
    paired = (by_source["planned"] - by_source["realised"]).groupby(level=["strategy", "extra"])
    for measure in measures:
        out[f"ratio_{measure}"] = out[f"planned_{measure}"] / out[f"realised_{measure}"]
        out[f"se_difference_{measure}"] = paired[measure].std() / np.sqrt(paired[measure].count())
        for source in ("planned", "realised"):
            base = out[f"{source}_{measure}"].groupby(level="strategy").transform("first")
            out[f"{source}_gain_{measure}"] = out[f"{source}_{measure}"] - base
    return out.reset_index()
