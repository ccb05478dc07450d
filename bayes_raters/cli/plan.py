"""``bayes-raters plan``: how many more double-scored responses until each system's PRMSE
interval (and the difference of two systems) is narrow enough: the true-score model fitted to
the pilot's ratings, then :func:`bayes_raters.ctt.plan.plan_double_scoring` over a grid."""

from __future__ import annotations

import argparse

from bayes_raters.cli.files import Output, progress_on_stderr, progressbar, read_table
from bayes_raters.cli.options import output_options, rating_file_options, sampler_options

DEFAULT_EXTRA = [0, 100, 300, 1000, 3000, 10000]


def add_parser(commands, command) -> None:
    """The ``plan`` sub-command (``command`` builds a sub-parser with the shared formatter)."""
    plan = command(
        commands, "plan", "how many more double-scored responses for a narrow PRMSE interval",
        "Fits the Bayesian true-score model to the pilot's ratings and system scores (the files and columns "
        "as for 'prmse'), then plans: for each number of additional double-scored responses (--extra), the "
        "expected width of each system's PRMSE interval and of each difference between two systems, and "
        "with --threshold the probability that the interval's lower end will clear it. --target-width names "
        "the smallest number in the grid that reaches that width.",
    )
    rating_file_options(plan)
    options = plan.add_argument_group("planning")
    options.add_argument("--extra", type=int, nargs="+", default=DEFAULT_EXTRA, metavar="N",
                         help="numbers of additional double-scored responses to plan for")
    options.add_argument("--extra-single", type=int, default=0, metavar="N", help="additional single-scored responses with each")
    options.add_argument("--target-width", type=float, default=None, metavar="W", help="interval width to reach, e.g. 0.05")
    options.add_argument("--threshold", type=float, default=None, metavar="T", help="PRMSE the lower end should clear, e.g. 0.7")
    options.add_argument("--ci", type=float, metavar="P", default=0.9, help="credible interval probability")
    sampler_options(options, draws=2000)
    output_options(plan)


def reach(plan, target: float) -> dict:
    """Per quantity: the smallest ``extra_double`` whose expected width is at most ``target``
    (None when no grid point reaches it)."""
    out = {}
    for name, rows in plan.groupby("quantity", sort=False):
        hits = rows.loc[rows["expected_width"] <= target, "extra_double"]
        out[name] = int(hits.min()) if len(hits) else None
    return out


def plan(args: argparse.Namespace) -> Output:
    """The ``plan`` sub-command: fit the pilot, then the planner's table over a grid of designs."""
    from bayes_raters.cli.commands import convergence_record, ratings_from_args, records, systems_from_args, text_table
    from bayes_raters.errors import InvalidInputError

    if args.target_width is not None and args.target_width <= 0:
        raise InvalidInputError(f"--target-width must be positive, got {args.target_width}.")
    if min(args.extra) < 0 or args.extra_single < 0:
        raise InvalidInputError("--extra and --extra-single take numbers >= 0.")
    if not (args.systems or args.system):
        raise InvalidInputError("give the system scores: --systems SYSTEMS.csv, or --system COL for columns of a wide ratings file.")
    ratings_table = read_table(args.ratings, args)
    systems_table = read_table(args.systems, args) if args.systems else None
    ratings = ratings_from_args(args, ratings_table, None)
    systems = systems_from_args(args, systems_table, ratings_table, ratings)
    from bayes_raters.ctt.fit import fit_true_score  # imports PyMC: only when asked
    from bayes_raters.ctt.plan import plan_double_scoring

    with progress_on_stderr():
        result = fit_true_score(ratings, systems, draws=args.draws, tune=args.tune, chains=args.chains,
                                      random_seed=args.seed, progressbar=progressbar(args))
    table = plan_double_scoring(result, sorted(set(args.extra)), args.extra_single, ci_prob=args.ci,
                                threshold=args.threshold, random_seed=args.seed)
    text = text_table(table.set_index(["extra_double", "quantity"]), 3)
    data = {"plan": records(table.set_index("quantity"), "quantity"), "convergence": convergence_record(result.convergence),
            "inference": result.inference.to_dict()}
    if args.target_width is not None:
        reached = reach(table, args.target_width)
        data["target_width"], data["reaches_target"] = args.target_width, reached
        lines = [f"{name}: {'not reached within --extra ' + str(max(args.extra)) if n is None else f'{n} more double-scored responses'}"
                 for name, n in reached.items()]
        text += f"\n\nexpected width <= {args.target_width:g}:\n" + "\n".join(lines)
    return Output(text, data, {"plan": table})
