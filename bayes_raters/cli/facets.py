"""``bayes-raters facets``: the many-facet rater model on a file of ratings
``(response, prompt, rater, score)``: rater table (severity, consistency, fit, flags), prompt
table and, with ``--systems``, each system's PRMSE against the model's true score."""

from __future__ import annotations

import argparse

from bayes_raters.cli.files import Output, progress_on_stderr, progressbar, read_table
from bayes_raters.cli.options import column_options, file_options, output_options, sampler_options


def add_parser(commands, command) -> None:
    """The ``facets`` sub-command (``command`` builds a sub-parser with the shared formatter)."""
    facets = command(
        commands, "facets", "rater severity and consistency, prompt difficulty (many-facet model)",
        "RATINGS.csv: one row per rating with the response, the prompt it answers, the rater and a whole-number "
        "score. Fits the many-facet rater model (response ability integrated out) and prints the rater table "
        "(severity, consistency a, infit/outfit, flags for erratic raters) and the prompt table; with --systems "
        "SYSTEMS.csv (response, system, score) also each system's PRMSE against the true score.",
    )
    facets.add_argument("ratings", help="CSV of ratings")
    facets.add_argument("--systems", metavar="FILE", default=None, help="CSV of system scores (response, system, score)")
    column_options(facets, response="response (essay) id", prompt="prompt (task) id", rater="rater id", score="the score (both files)",
                   system="system id (systems file)")
    file_options(facets)
    model = facets.add_argument_group("model")
    model.add_argument("--rasch", action="store_true", help="one consistency for all raters (many-facet Rasch model; the default with two raters)")
    model.add_argument("--ci", type=float, default=0.9, metavar="P", help="credible interval probability")
    model.add_argument("--sampler", choices=["pymc", "nutpie", "numpyro"], default="pymc", help="NUTS implementation")
    model.add_argument(
        "--inference", choices=["auto", "nuts", "laplace"], default="nuts",
        help="nuts (default); auto keeps importance-sampled Laplace draws when they pass their checks (Pareto k, R-hat, ESS) "
        "and runs NUTS otherwise (faster, but the rater scales' posterior SDs came out 18%% narrow in the card's check); "
        "laplace forces them",
    )
    sampler_options(model, draws=1000)
    output_options(facets)


def facets(args: argparse.Namespace) -> Output:
    """The ``facets`` sub-command: fit the many-facet rater model and return its rater, prompt and PRMSE tables."""
    from bayes_raters.cli.commands import convergence_record, records, text_table
    from bayes_raters.facets.fit import fit_facets  # imports PyMC: only when asked

    ratings = read_table(args.ratings, args)
    systems = None if args.systems is None else read_table(args.systems, args)
    with progress_on_stderr():
        result = fit_facets(
            ratings, systems, consistency=False if args.rasch else None, response=args.response_column, prompt=args.prompt_column,
            rater=args.rater_column, score=args.score_column, system=args.system_column, draws=args.draws,
            tune=args.tune, chains=args.chains, random_seed=args.seed, nuts_sampler=args.sampler,
            progressbar=progressbar(args), inference=args.inference,
        )
    tables = {"raters": result.rater_table(args.ci), "prompts": result.prompt_table(args.ci)}
    if systems is not None:
        tables["prmse"] = result.prmse_table(args.ci)
    text = "\n\n".join(text_table(t, 3) for t in tables.values())
    keys = {"raters": "rater", "prompts": "prompt", "prmse": "system"}
    data = {name: records(table, keys[name]) for name, table in tables.items()}
    data["convergence"] = convergence_record(result.convergence)
    data["inference"] = result.inference.to_dict()  # the path, and which form of the rater/prompt groups was kept
    return Output(text, data, tables)
