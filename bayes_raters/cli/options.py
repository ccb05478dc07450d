"""The option groups that several ``bayes-raters`` sub-commands share (files, columns of a
ratings file, sampler settings, output). Its own module so that each sub-command's module can
use them without importing the parser that imports the sub-commands (no import cycle)."""

from __future__ import annotations

import argparse


def rating_file_options(command: argparse.ArgumentParser) -> None:
    """The ratings file and --systems FILE with their column options (prmse, plan)."""
    command.add_argument("ratings", help="CSV of human ratings (long or wide)")
    command.add_argument("--systems", metavar="FILE", help="CSV of system scores (long, or wide with --system COL)")
    rating_columns(command)
    systems = command.add_argument_group("columns of the system-scores file (default: as in the ratings file)")
    systems.add_argument("--systems-response-column", metavar="NAME", help="response id in --systems FILE")
    systems.add_argument("--system-column", default="system", metavar="NAME", help="system id (long)")
    systems.add_argument("--systems-score-column", metavar="NAME", help="the system's score in --systems FILE (long)")
    systems.add_argument("--system", action="append", default=[], metavar="COL", help="wide: a column of system scores (repeat)")
    file_options(command)


def rating_columns(command: argparse.ArgumentParser) -> None:
    """The ratings file's columns: ``--response-column``, ``--rater-column``, ``--score-column``
    (long files) and ``--human COL`` (wide files, repeated) (prmse, plan, agreement)."""
    ratings = command.add_argument_group("columns of the ratings file")
    ratings.add_argument("--response-column", default="response", metavar="NAME", help="response id (wide files: row number if absent)")
    ratings.add_argument("--rater-column", default="rater", metavar="NAME", help="rater id (long)")
    ratings.add_argument("--score-column", default="score", metavar="NAME", help="the rating (long)")
    ratings.add_argument("--human", action="append", default=[], metavar="COL", help="wide: a column of human ratings (repeat)")


def column_options(command: argparse.ArgumentParser, **roles: str) -> None:
    """Add one ``--ROLE-column NAME`` option per keyword (default: the role's own name; the
    value is the option's help) in the group "columns of the files" (facets, judges)."""
    columns = command.add_argument_group("columns of the files")
    for role, text in roles.items():
        columns.add_argument(f"--{role}-column", default=role, metavar="NAME", help=text)


def file_options(command: argparse.ArgumentParser) -> None:
    """Add the options for reading a file (``--sep``, ``--encoding``) to ``command``."""
    files = command.add_argument_group("reading the files")
    files.add_argument("--sep", default=None, metavar="CHAR",
                       help="column delimiter, e.g. ',' ';' or '\\t' (default: detected, and named on stderr if not ',')")
    files.add_argument("--encoding", default="utf-8", metavar="NAME", help="text encoding, e.g. latin-1 or cp1252")


def sampler_options(group, *, draws: int | None, draws_help: str = "posterior draws per chain") -> None:
    """Add ``--draws`` (default ``draws``; None: the fit's, which ``draws_help`` states), ``--tune``,
    ``--chains`` and ``--seed`` to ``group``."""
    group.add_argument("--draws", type=int, metavar="N", default=draws, help=draws_help)
    group.add_argument("--tune", type=int, metavar="N", default=1000, help="warm-up draws per chain")
    group.add_argument("--chains", type=int, metavar="N", default=2, help="chains (2 or more to check convergence)")
    group.add_argument("--seed", type=int, metavar="N", default=0, help="random seed of the sampler")


def output_options(command: argparse.ArgumentParser, *, tables: bool = True) -> None:
    """Add ``--quiet`` and, with ``tables``, ``--json`` and ``--output FILE`` to ``command``."""
    output = command.add_argument_group("output")
    if tables:
        output.add_argument("--json", action="store_true", help="print strict JSON (null for missing) instead of a table")
        output.add_argument("--output", metavar="FILE", help="write the result to FILE.csv or FILE.json instead of stdout")
    output.add_argument("--quiet", action="store_true", help="no progress bar and no notes on stderr (warnings still)")
