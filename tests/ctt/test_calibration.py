"""Slow calibration check of the posterior PRMSE (``make validate``).

Over simulated data sets of the issue's design (5,000 responses, 1,000 double-scored by two
'average' raters, one 'high' and one 'medium' system), the 90% interval should contain the
PRMSE computed against the simulated true scores in 80-100% of data sets for each system.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayes_raters.ctt import double_scored_subset, fit_true_score, simulate_dataset, system_scores_to_long

pytestmark = pytest.mark.slow
N_DATASETS = 30


def _one_dataset(seed: int) -> list[dict]:
    data = simulate_dataset(5000, raters_per_category=2, systems_per_category=1, random_seed=seed)
    ratings = double_scored_subset(data, ("h_5", "h_6"), 1000, random_seed=seed + 10_000)
    systems = system_scores_to_long(data, ["sys_3", "sys_4"])
    table = fit_true_score(ratings, systems, random_seed=seed, nuts_sampler="pymc").prmse_table(0.9)
    true = data["true_score"].values
    rows = []
    for system, row in table.iterrows():
        scores = data["system_score"].sel(system=system).values
        truth = 1 - np.sum((scores - true) ** 2) / np.sum((true - true.mean()) ** 2)
        figures = row[["prmse_mean", "prmse_lower", "prmse_upper", "closed_form"]].rename(lambda c: c.removeprefix("prmse_"))
        rows.append({"system": system, "truth": truth, **figures.to_dict()})
    return rows


def test_posterior_prmse_90_interval_coverage():
    frame = pd.DataFrame([row for seed in range(N_DATASETS) for row in _one_dataset(seed)])
    frame["covered"] = (frame["lower"] <= frame["truth"]) & (frame["truth"] <= frame["upper"])
    frame["width"] = frame["upper"] - frame["lower"]
    summary = frame.groupby("system").agg(
        coverage=("covered", "mean"), mean_width=("width", "mean"),
        bias=("mean", lambda m: float(np.mean(m - frame.loc[m.index, "truth"]))),
    )
    print(f"\n90% interval coverage over {N_DATASETS} data sets\n{summary.round(3)}")
    assert summary["coverage"].between(0.8, 1.0).all(), summary


def test_ordinal_model_covers_the_latent_prmse_with_integer_ratings():
    """Integer ratings 1-6 (Loukina design, 'high' system), 1,000 double-scored responses per
    fit, 20 rater pairs each of 'average' and 'high' agreement: the ordinal model's 90% interval
    contains the PRMSE against the simulated latent scores in at least 85% of the 40 fits
    (the issue's lower bound; 33 or fewer of 40 has probability 0.09 at a true rate of 0.9), and
    at least as often as the normal model's. Measured 2026-11-25 with the finite-sample spread in
    the draws: 39 of 40 (the normal model 35 of 40); before it, with Rao-Blackwellised draws only,
    35 of 40 (normal 29). The same cells as ``benchmarks/study_ordinal_coverage.py --pairs 20
    --sizes 1000``, on a process pool."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from bayes_raters.ctt import study

    frames = {}
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("forkserver")) as pool:
        for observation in ("normal", "ordinal"):
            config = study.StudyConfig(
                double_scored=(1000,), bayes_pairs_per_category=20, bayes_categories=("average", "high"),
                bayes_observation=observation,
            )
            frames[observation] = study.bayesian_double_scoring(config, pool)
    coverage = {
        name: ((frame["lower"] <= frame["true_prmse"]) & (frame["true_prmse"] <= frame["upper"])).mean()
        for name, frame in frames.items()
    }
    print(f"\n90% interval coverage of the latent-score PRMSE, 40 fits each: {coverage}")
    assert coverage["ordinal"] >= 0.85
    assert coverage["ordinal"] >= coverage["normal"]
