"""``bayes-raters demo``: closed-form and posterior PRMSE on a simulated Loukina et al. (2020) design."""

from __future__ import annotations

import argparse

from bayes_raters.cli.commands import text_table
from bayes_raters.cli.files import Output, progress_on_stderr, progressbar

READING = (
    "\nHow to read it: closed_form (Haberman) and posterior (Bayesian, with its 90% interval) "
    "both estimate, from the human ratings alone, the PRMSE each system has against the "
    "unobservable true score; r2_true is that value computed with the simulated true scores "
    "(known only because the data are simulated). r2_rater, the usual R2 against one rater, "
    "is dragged down by rater error."
)


def demo(args: argparse.Namespace) -> Output:
    """The ``demo`` sub-command: closed-form and posterior PRMSE on a simulated Loukina et al. design."""
    from bayes_raters.agreement import r2_score
    from bayes_raters.ctt.fit import fit_true_score  # imports PyMC
    from bayes_raters.ctt.simulate import double_scored_subset, simulate_dataset, system_scores_to_long

    seed = args.seed
    data = simulate_dataset(2000, raters_per_category=2, systems_per_category=1, random_seed=seed)
    pair = tuple(data["rater"].where(data["rater_category"] == "average", drop=True).values[:2])
    ratings = double_scored_subset(data, pair, n_double=1000, random_seed=seed + 1)
    header = (
        f"Simulated {data.sizes['response']} responses (Loukina et al. 2020 design, seed {seed}); "
        f"raters {pair[0]} and {pair[1]} ('average' agreement), 1000 responses double-scored.\n"
        "Fitting the Bayesian true-score model, one model per system ...\n"
    )
    print(header, flush=True)
    with progress_on_stderr():
        result = fit_true_score(ratings, system_scores_to_long(data), random_seed=seed, progressbar=progressbar(args))
    table = result.prmse_table(ci_prob=0.9).rename(columns={"prmse_mean": "posterior", "prmse_lower": "lower_90", "prmse_upper": "upper_90"})
    first_rater = data["rating"].sel(rater=pair[0])
    table.insert(0, "category", data["system_category"].to_series())
    table["r2_true"] = [r2_score(data["system_score"].sel(system=s), data["true_score"]) for s in table.index]
    table["r2_rater"] = [r2_score(data["system_score"].sel(system=s), first_rater) for s in table.index]
    columns = ["category", "closed_form", "posterior", "lower_90", "upper_90", "r_hat", "r2_true", "r2_rater"]
    return Output(text_table(table[columns], 3) + "\n" + READING)
