"""The ``bayes-raters`` command line.

``bayes-raters prmse RATINGS.csv --systems SYSTEMS.csv``   long format, one set of column names per file
``bayes-raters prmse SCORES.csv --human h1 --human h2 --system sys``   wide format
``bayes-raters irt ANSWERS.csv --model 2pl``   item and respondent tables
``bayes-raters demo``   closed-form and posterior PRMSE on a small simulated data set

Results go to stdout (``--json`` for strict JSON) or ``--output FILE.csv|.json``; progress bars,
notes and warnings go to stderr (``--quiet`` drops the bar and the notes). Bad input prints one
line ``bayes-raters: error: ...`` and exits with code 2. Only the argument parser is imported
before the command runs, and PyMC only by the commands that fit, so ``--help`` is immediate.
"""

from __future__ import annotations

import json
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


def _json_records(table) -> str:
    """The ``prmse --json`` text of a PRMSE table."""
    from bayes_raters.cli.commands import json_records

    return json.dumps(json_records(table), indent=2, allow_nan=False)


def _run(args):
    from bayes_raters.cli import commands, files

    commands.check_options(args)
    if args.command == "demo":
        from bayes_raters.cli.demo import demo

        output = demo(args)
    else:
        output = commands.prmse(args) if args.command == "prmse" else commands.irt(args)
    files.emit(output, args)


def main(argv: Sequence[str] | None = None) -> int:
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
