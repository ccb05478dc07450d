"""Regenerate the reference posterior summaries of the model cards (long runs, fixed data).

    .venv/bin/python models/reference.py

Each reference is a CSV next to its card; the regression tests compare a short run on the
same data against it within Monte-Carlo error. Re-run only when a model changes on purpose.
"""

from __future__ import annotations

from pathlib import Path

import arviz as az
import pandas as pd

from bayes_raters.ctt import double_scored_subset, fit_true_score_model, simulate_dataset, system_scores_to_long

HERE = Path(__file__).parent
CTT_VARIABLES = ["mu", "sigma_T", "sigma_e", "alpha", "beta", "tau", "prmse", "mse_true", "true_score_variance", "error_variance"]


def ctt_reference_data():
    """2,000 responses of the Loukina design, 1,000 double-scored by two 'average' raters,
    the 'high' system sys_4."""
    data = simulate_dataset(2000, raters_per_category=2, systems_per_category=1, random_seed=2020)
    ratings = double_scored_subset(data, ("h_5", "h_6"), 1000, random_seed=2021)
    return ratings, system_scores_to_long(data, ["sys_4"])


def posterior_summary(posterior, variables) -> pd.DataFrame:
    """mean, sd and Monte-Carlo SE of the mean per variable (scalars per system)."""
    rows = {}
    for name in variables:
        values = posterior[name].squeeze(drop=True)
        rows[name] = {
            "mean": float(values.mean()),
            "sd": float(values.std(ddof=1)),
            "mcse_mean": float(az.mcse(values.to_dataset(name=name), method="mean")[name]),
        }
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("variable")


def main() -> None:
    ratings, systems = ctt_reference_data()
    result = fit_true_score_model(ratings, systems, draws=10_000, tune=2000, chains=4, random_seed=7)
    summary = posterior_summary(result.posterior, CTT_VARIABLES)
    summary.to_csv(HERE / "ctt_true_score_reference.csv", float_format="%.6g")
    print(summary)
    print(result.convergence())


if __name__ == "__main__":
    main()
