"""The judges model on real data against the all-human answer (issue 65, point 5).

On HANNA Coherence (``tests/data/hanna``: 5 LLM judges, 3 crowd ratings of every story) and WMT23
English-German MQM (``tests/data/wmt23``: chrF as the judge, 3 professional ratings of every
translation; the human reference ``refA`` left out, as chrF against it cannot score it), every
human rating gives the reference answer, each system's mean rating. Each
replication keeps the ratings of a random ``share`` of each system's responses (all their
ratings; two responses at least), fits :func:`~bayes_raters.judges.fit_judges` with its defaults
on those and every judge score, and checks the 90% intervals of ours, PPI++ and the humans alone
(:meth:`~bayes_raters.judges.JudgesResult.baseline_table`) against the reference.

Run: ``.venv/bin/python -m validation.judges_real --sets wmt23 hanna --replications 10``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from bayes_raters.judges import fit_judges

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"


def load(name: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Human ratings, judge scores and systems of a shipped set (HANNA's unparsed -1 scores dropped)."""
    if name == "hanna":
        judges = pd.read_csv(DATA / "hanna" / "coherence_judges_p1.csv")
        return pd.read_csv(DATA / "hanna" / "coherence_human.csv"), judges[judges["score"] >= 0], pd.read_csv(DATA / "hanna" / "systems.csv")
    folder = DATA / "wmt23"
    humans, judges, systems = (pd.read_csv(folder / f) for f in ("mqm_human.csv", "chrf_judge.csv", "systems.csv"))
    systems = systems[systems["system"] != "refA"]  # chrF against the reference cannot score the reference (InputWarning)
    return humans[humans["response"].isin(systems["response"])], judges[judges["response"].isin(systems["response"])], systems


def kept_responses(systems: pd.DataFrame, share: float, rng: np.random.Generator) -> np.ndarray:
    """A random ``share`` of each system's responses (two at least)."""
    kept = [rng.choice(group.to_numpy(), size=max(2, round(share * len(group))), replace=False) for _, group in systems.groupby("system")["response"]]
    return np.concatenate(kept)


def one_subset(name: str, seed: int, share: float = 0.1, ci_prob: float = 0.9) -> list[dict]:
    """One row per (system, method): the interval, its width and whether it covers the all-human mean."""
    humans, judges, systems = load(name)
    reference = humans.merge(systems, on="response").groupby("system")["score"].mean()
    kept = kept_responses(systems, share, np.random.default_rng(seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fit_judges(humans[humans["response"].isin(kept)], judges, systems, random_seed=seed, progressbar=False)
    table = result.baseline_table(ci_prob).reset_index()
    table = table[table["method"].isin(["bayes_raters", "ppi++", "humans"])]
    truth = table["system"].map(reference)
    return [{"set": name, "seed": seed, "system": row.system, "method": row.method, "width": row.width,
             "covered": bool(row.lower <= t <= row.upper), "converged": result.convergence.converged}
            for row, t in zip(table.itertuples(), truth, strict=True)]


def summary(rows: list[dict]) -> pd.DataFrame:
    """Per (set, method): subsets, coverage of the all-human means, mean width, converged share."""
    frame = pd.DataFrame(rows)
    return frame.groupby(["set", "method"]).agg(subsets=("seed", "nunique"), coverage=("covered", "mean"), width=("width", "mean"),
                                                converged=("converged", "mean"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", nargs="+", default=["wmt23", "hanna"])
    parser.add_argument("--replications", type=int, default=10)
    parser.add_argument("--share", type=float, default=0.1)
    args = parser.parse_args()
    start, rows = time.perf_counter(), []
    for name in args.sets:
        for seed in range(1, args.replications + 1):
            rows += one_subset(name, seed, args.share)
            print(pd.DataFrame(rows[-3:]).to_string(), flush=True)
    with pd.option_context("display.width", 200):
        print(summary(rows).round(3))
    print(f"{len(rows)} rows in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
