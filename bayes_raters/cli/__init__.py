"""The ``bayes-raters`` command line.

``bayes-raters prmse RATINGS.csv --systems SYSTEMS.csv``   long format, one set of column names per file
``bayes-raters prmse SCORES.csv --human h1 --human h2 --system sys``   wide format
``bayes-raters irt ANSWERS.csv --model 2pl``   item and respondent tables
``bayes-raters pairwise COMPARISONS.csv``   item scores from pairwise comparisons
``bayes-raters facets RATINGS.csv``   rater severity and consistency, prompt difficulty
``bayes-raters judges HUMAN.csv JUDGES.csv --systems MAP.csv``   systems' true scores from LLM judges and a few human ratings
``bayes-raters labels LABELS.csv [--gold GOLD.csv]``   true classes and annotators' confusion matrices from categorical labels
``bayes-raters leaderboard ANSWERS.csv``   system abilities, rank intervals and item tables at leaderboard size
``bayes-raters plan RATINGS.csv --systems SYSTEMS.csv``   how many more double-scored responses
``bayes-raters agreement RATINGS.csv --level ordinal``   inter-rater agreement: alpha, kappa, ICCs with intervals
``bayes-raters demo``   closed-form and posterior PRMSE on a small simulated data set

Results go to stdout (``--json`` for strict JSON) or ``--output FILE.csv|.json``; progress bars,
notes and warnings go to stderr (``--quiet`` drops the bar and the notes). Bad input prints one
line ``bayes-raters: error: ...`` and exits with code 2. Only the argument parser is imported
before the command runs, and PyMC only by the commands that fit, so ``--help`` is immediate.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence

from bayes_raters.cli.parser import build_parser, cli_advice
from bayes_raters.errors import BayesRatersError, BayesRatersWarning

EXIT_BAD_INPUT = 2

__all__ = ["EXIT_BAD_INPUT", "PRMSE_KEYS", "cli_advice", "main"]


def __getattr__(name: str):  # the key lists live with the commands (numpy, pandas)
    if name in ("PRMSE_KEYS", "BAYES_KEYS", "CONVERGENCE_KEYS"):
        from bayes_raters.cli import commands

        return getattr(commands, name)
    raise AttributeError(f"module 'bayes_raters.cli' has no attribute {name!r}")


#: What to try on each example file, in the example folder (the README runs these as written).
EXAMPLE_COMMANDS = [
    "bayes-raters prmse human_scores.csv --systems machine_scores.csv --response-column essay_id "
    "--rater-column rater_id --system-column engine --systems-score-column pred_score",
    "bayes-raters prmse scores_wide.csv --response-column essay_id --human human_1 --human human_2 "
    "--system engine_a --system engine_b",
    "bayes-raters irt answers.csv --model 1pl",
    "bayes-raters pairwise comparisons.csv --item-a-column system_a --item-b-column system_b --outcome-column result",
    "bayes-raters pairwise comparison_counts.csv --item-a-column system_a --item-b-column system_b "
    "--outcome-column result --count-column n --method trueskill",
]


def example(args):
    from bayes_raters.cli.files import Output
    from bayes_raters.examples import write_examples

    paths = write_examples(args.folder)
    lines = [f"wrote {len(paths)} files to {args.folder}: {', '.join(p.name for p in paths)}",
             f"try, in {args.folder}:", *(f"  {line}" for line in EXAMPLE_COMMANDS)]
    return Output("\n".join(lines))


def _run(args):
    from bayes_raters.cli import commands, files

    commands.check_options(args)
    if args.command == "example":
        output = example(args)
    elif args.command == "demo":
        from bayes_raters.cli.demo import demo

        output = demo(args)
    elif args.command == "pairwise":
        from bayes_raters.cli.pairwise import pairwise

        output = pairwise(args)
    elif args.command == "facets":
        from bayes_raters.cli.facets import facets

        output = facets(args)
    elif args.command == "judges":
        from bayes_raters.cli.judges import judges

        output = judges(args)
    elif args.command == "labels":
        from bayes_raters.cli.labels import labels

        output = labels(args)
    elif args.command == "leaderboard":
        from bayes_raters.cli.leaderboard import leaderboard

        output = leaderboard(args)
    elif args.command == "agreement":
        from bayes_raters.cli.agreement import agreement

        output = agreement(args)
    elif args.command == "plan":
        from bayes_raters.cli.plan import plan

        output = plan(args)
    else:
        output = commands.prmse(args) if args.command == "prmse" else commands.irt(args)
    files.emit(output, args)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``bayes-raters`` with ``argv`` (default: the command line); returns the exit code (2: bad input)."""
    args = build_parser().parse_args(argv)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", BayesRatersWarning)
            _run(args)
        for message in dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, BayesRatersWarning)):
            print(f"bayes-raters: warning: {cli_advice(message)}", file=sys.stderr)  # once per cause
    except BayesRatersError as exc:
        print(f"bayes-raters: error: {cli_advice(str(exc))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


if __name__ == "__main__":
    sys.exit(main())
