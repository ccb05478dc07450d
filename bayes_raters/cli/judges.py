"""``bayes-raters judges HUMAN.csv JUDGES.csv --systems MAP.csv``: each evaluated system's mean true
score from judge (or metric) scores on every response and human ratings on a few, the judges'
calibration, bias and worth, and the baselines (humans alone, the judge alone, PPI, PPI++)."""

from __future__ import annotations

import argparse

from bayes_raters.cli.files import Output, progress_on_stderr, progressbar, read_table
from bayes_raters.cli.options import column_options, file_options, output_options, sampler_options
from bayes_raters.errors import InvalidInputError


def add_parser(commands, command) -> None:
    """The ``judges`` sub-command (``command`` builds a sub-parser with the shared formatter)."""
    judges = command(
        commands, "judges", "systems' true scores from LLM judges checked against noisy human ratings",
        "HUMAN.csv: human ratings, one row per (response, rater, score), any subset of the responses. JUDGES.csv: "
        "judge or metric scores, one row per (response, judge, score), every response. --systems MAP.csv: the "
        "evaluated system of every response (response, system). Fits the judges model (true scores integrated out, "
        "each judge calibrated against the true score with a bias per system) and prints the systems (mean true "
        "score, interval, rank, P(best)), the judges (calibration, PRMSE, worth in human ratings, biased systems), "
        "the pairwise differences, the baselines (humans alone, the judge alone, PPI, PPI++) and the check of the "
        "human ratings' independence; with --plan, how the differences' intervals narrow with more human ratings.",
    )
    judges.add_argument("humans", help="CSV of human ratings (response, rater, score)")
    judges.add_argument("judge_scores", metavar="judges", help="CSV of judge scores (response, judge, score)")
    judges.add_argument("--systems", metavar="FILE", required=True, help="CSV mapping each response to its system (response, system)")
    column_options(judges, response="response id (all three files)", rater="human rater id", judge="judge id",
                   score="the score (human and judge files)", system="system id (systems file)")
    file_options(judges)
    model = judges.add_argument_group("model")
    model.add_argument("--score-range", nargs=2, type=float, metavar=("LOW", "HIGH"), default=None, help="declared scale of the human ratings")
    model.add_argument("--observation", choices=["normal", "ordinal"], default="normal",
                       help="human ratings as true score plus normal error, or (ordinal: integer ratings on --score-range) the "
                            "category of such a latent rating")
    model.add_argument("--judge-range", nargs=2, type=float, metavar=("LOW", "HIGH"), default=None, help="declared scale of the judge scores")
    model.add_argument("--shared-error", action=argparse.BooleanOptionalAction, default=None,
                       help="whether the judges' errors share a factor (default: with three judges or more)")
    model.add_argument("--ci", type=float, default=0.9, metavar="P", help="credible interval probability")
    model.add_argument("--sampler", choices=["pymc", "nutpie", "numpyro"], default="nutpie", help="NUTS implementation")
    sampler_options(model, draws=1000)
    plan = judges.add_argument_group("planning the next human ratings")
    plan.add_argument("--plan", nargs="+", type=int, default=None, metavar="N",
                      help="also print the expected interval width of every system difference after N more human-rated responses "
                           "(random among the unrated ones; several N allowed)")
    plan.add_argument("--plan-raters", type=int, default=2, metavar="K", help="human raters per planned response")
    output_options(judges)


def _named_files(message: str, args: argparse.Namespace) -> str:
    """The package's table names followed by the files they came from."""
    for table, path in (("human ratings", args.humans), ("judge scores", args.judge_scores), ("systems", args.systems)):
        message = message.replace(f"{table}:", f"{table} ({path}):").replace(f"{table} table", f"{table} file {path}")
    return message


def judges(args: argparse.Namespace) -> Output:
    """The ``judges`` sub-command: fit the judges model and return its tables."""
    from bayes_raters.cli.commands import convergence_record, records, text_table
    from bayes_raters.judges import fit_judges  # imports PyMC: only when asked

    humans, scores, systems = read_table(args.humans, args), read_table(args.judge_scores, args), read_table(args.systems, args)
    try:
        with progress_on_stderr():
            result = fit_judges(
                humans, scores, systems, shared_error=args.shared_error, observation=args.observation,
                score_range=tuple(args.score_range) if args.score_range else None,
                judge_range=tuple(args.judge_range) if args.judge_range else None, response=args.response_column,
                rater=args.rater_column, judge=args.judge_column, score=args.score_column, system=args.system_column,
                draws=args.draws, tune=args.tune, chains=args.chains, random_seed=args.seed, nuts_sampler=args.sampler,
                progressbar=progressbar(args),
            )
    except InvalidInputError as error:
        raise InvalidInputError(_named_files(str(error), args)) from None
    tables = {"systems": result.system_table(args.ci), "judges": result.judge_table(args.ci),
              "differences": result.difference_table(args.ci), "baselines": result.baseline_table(args.ci),
              "human_check": result.human_check()}
    if args.plan:
        tables["plan"] = result.plan_human_ratings(extra=[0, *args.plan], raters=args.plan_raters, ci_prob=args.ci)
    text = "\n\n".join(f"{name}:\n{text_table(table, 3)}" for name, table in tables.items())
    keys = {"systems": "system", "judges": "judge", "differences": "pair", "baselines": "row", "human_check": "system", "plan": "row"}
    data = {name: records(table.reset_index() if table.index.nlevels > 1 else table, keys[name]) for name, table in tables.items()}
    data["convergence"] = convergence_record(result.convergence)
    data["inference"] = result.inference.to_dict()
    return Output(text, data, tables)
