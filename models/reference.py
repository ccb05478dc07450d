"""Regenerate the reference posterior summaries of the model cards (long runs, fixed data).

    .venv/bin/python models/reference.py [ctt] [irt] [pairwise]

Each reference is a CSV next to its card; the regression tests compare a short run on the
same data against it within Monte-Carlo error. Re-run only when a model changes on purpose.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import arviz as az
import pandas as pd

from bayes_raters.ctt import double_scored_subset, fit_true_score, simulate_dataset, system_scores_to_long
from bayes_raters.irt import fit_irt, simulate_responses
from bayes_raters.pairwise import fit_pairwise, latent_values, simulate_judgements

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


IRT_VARIABLES = ["a", "b", "theta"]
IRT_RESPONDENTS = 5  # theta of the first respondents only: the reference stays a short table


def irt_reference_data() -> pd.DataFrame:
    """200 respondents x 10 items of a 2PL, about 10% of answers missing."""
    answers, _ = simulate_responses(200, 10, missing=0.1, random_seed=2016)
    return answers


def element_summary(posterior, variables, respondents: int = IRT_RESPONDENTS) -> pd.DataFrame:
    """mean, sd and Monte-Carlo SE of the mean per element (e.g. ``a[item_01]``)."""
    rows = {}
    for name in variables:
        values = posterior[name]
        if "respondent" in values.dims:
            values = values.isel(respondent=slice(0, respondents))
        dim = [d for d in values.dims if d not in ("chain", "draw")][0]
        mcse = az.mcse(values.to_dataset(name=name), method="mean")[name]
        for label in values[dim].values:
            element = values.sel({dim: label})
            rows[f"{name}[{label}]"] = {
                "mean": float(element.mean()),
                "sd": float(element.std(ddof=1)),
                "mcse_mean": float(mcse.sel({dim: label})),
            }
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("variable")


def irt_reference() -> None:
    result = fit_irt(irt_reference_data(), "2pl", hierarchical=False, draws=10_000, tune=2000, chains=4, cores=2, random_seed=7)
    summary = element_summary(result.idata["posterior"].to_dataset(), IRT_VARIABLES)
    summary.to_csv(HERE / "irt_2pl_reference.csv", float_format="%.6g")
    print(summary)
    print(result.report)


PAIRWISE_VARIABLES = ["s", "lambda", "epsilon", "phi"]


def pairwise_reference_data() -> dict:
    """20 items (uniform), 300 Rao-Kupper outcomes with ties and 100 slider values."""
    truth = latent_values(20, "uniform", random_seed=2018)
    return simulate_judgements(truth, n_comparisons=300, n_scalars=100, phi=10, random_seed=2019)


def pairwise_summary(posterior) -> pd.DataFrame:
    """Per item s and the scalar parameters: mean, sd, Monte-Carlo SE of the mean."""
    items = element_summary(posterior, ["s"])
    scalars = posterior_summary(posterior, PAIRWISE_VARIABLES[1:])
    return pd.concat([items, scalars])


def pairwise_reference() -> None:
    data = pairwise_reference_data()
    result = fit_pairwise(data["comparisons"], data["scalars"], draws=10_000, tune=2000, chains=4, cores=2, random_seed=7)
    summary = pairwise_summary(result.posterior)
    summary.to_csv(HERE / "pairwise_beta_latent_reference.csv", float_format="%.6g")
    print(summary)
    print(result.report)


def ctt_reference() -> None:
    ratings, systems = ctt_reference_data()
    result = fit_true_score(ratings, systems, draws=10_000, tune=2000, chains=4, random_seed=7)
    summary = posterior_summary(result.posterior, CTT_VARIABLES)
    summary.to_csv(HERE / "ctt_true_score_reference.csv", float_format="%.6g")
    print(summary)
    print(result.convergence_table())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    builders = {"ctt": ctt_reference, "irt": irt_reference, "pairwise": pairwise_reference}
    parser.add_argument("models", nargs="*", choices=list(builders), default=list(builders))
    for name in parser.parse_args().models:
        builders[name]()


if __name__ == "__main__":
    main()
