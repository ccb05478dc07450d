"""The argument parser of ``bayes-raters`` and the rewriting of package advice into its flags.

Imports nothing heavy (no numpy, pandas or PyMC), so ``bayes-raters --help`` answers at once."""

from __future__ import annotations

import argparse
import re
import textwrap
from importlib.metadata import PackageNotFoundError, version

from bayes_raters.cli.agreement import add_parser as agreement_parser
from bayes_raters.cli.facets import add_parser as facets_parser
from bayes_raters.cli.judges import add_parser as judges_parser
from bayes_raters.cli.labels import add_parser as labels_parser
from bayes_raters.cli.leaderboard import add_parser as leaderboard_parser
from bayes_raters.cli.options import file_options, output_options, rating_file_options, sampler_options
from bayes_raters.cli.pairwise import add_parser as pairwise_parser
from bayes_raters.cli.plan import add_parser as plan_parser

#: Python keyword named in package advice -> the command-line flag that does the same.
FLAGS = {
    "response": "--response-column", "rater": "--rater-column", "system": "--system-column",
    "score": "--score-column", "judge": "--judge-column", "judge_range": "--judge-range", "shared_error": "--shared-error",
    "score_range": "--score-range", "error_variance": "--error-variance",
    "chains": "--chains", "draws": "--draws", "tune": "--tune", "ci_prob": "--ci", "sep": "--sep",
    "encoding": "--encoding", "respondent": "--respondent-column", "item": "--item-column",
    "correct": "--correct-column", "n_options": "--n-options", "method": "--method", "nuts_sampler": "--sampler",
    "item_a": "--item-a-column", "item_b": "--item-b-column", "outcome": "--outcome-column", "count": "--count-column",
    "annotator": "--annotator-column", "ties": "--ties", "dims": "--dims", "anchors": "--anchors",
    "prompt": "--prompt-column", "inference": "--inference", "model": "--model",
    "model_a": "--item-a-column", "model_b": "--item-b-column", "style": "--style-column", "category": "--category-column",
    "level": "--level", "categories": "--categories", "n_boot": "--bootstrap", "observation": "--observation",
    "posterior": "--no-posterior", "item_types": "--item-types", "options": "--options",
}
_CHOICES = {"ties": {"True": "yes", "False": "no", "None": "auto"}, "posterior": {"False": ""}}  # keyword value -> flag value
_KEYWORD = re.compile(r"\b(" + "|".join(FLAGS) + r")=(\(low, high\)|\.\.\.|\[[^\]]*\]|'[^']*'|\"[^\"]*\"|[\w.\-]+)")

DESCRIPTION = "Bayesian models of human ratings: PRMSE against the true score, IRT item tables."
EPILOG = """examples:
  bayes-raters prmse ratings.csv --systems systems.csv
  bayes-raters prmse scores.csv --human h1 --human h2 --system engine --json
  bayes-raters irt answers.csv --model 1pl --output items.csv
  bayes-raters pairwise comparisons.csv --count-column n
  bayes-raters facets essay_ratings.csv --systems systems.csv
  bayes-raters leaderboard answers.csv --output leaderboard.csv
  bayes-raters judges human.csv judges.csv --systems systems.csv
  bayes-raters labels labels.csv --gold gold.csv
  bayes-raters plan ratings.csv --systems systems.csv --target-width 0.05
  bayes-raters agreement ratings.csv --level ordinal
bad input prints one line 'bayes-raters: error: ...' and exits with code 2."""


def cli_advice(message: str) -> str:
    """Rewrite the Python keywords in a package message into this command line's flags,
    e.g. ``rater=...`` -> ``--rater-column NAME``, ``score_range=(low, high)`` ->
    ``--score-range LOW HIGH``, so that the advice works where it is read."""

    def flag(match: re.Match) -> str:
        value = {"(low, high)": "LOW HIGH", "...": "NAME", "[...]": "SCORE ..."}.get(match.group(2), match.group(2))
        if value.startswith("["):  # a list: its items, space-separated
            value = value.strip("[]").replace(",", "")
        if re.fullmatch(r"'[\w.\-]+'|\"[\w.\-]+\"", value):  # a quoted word ('2pl'): the shell needs no quotes
            value = value[1:-1]
        value = _CHOICES.get(match.group(1), {}).get(value, value)
        return f"{FLAGS[match.group(1)]} {value}".rstrip()

    return _KEYWORD.sub(flag, message)


def _version() -> str:
    try:
        return version("bayes_raters")
    except PackageNotFoundError:  # a source tree that was not installed
        return "0+unknown"


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Each option's default after its help (where there is one: not for flags, lists or
    "not set"); examples kept as written."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text, default = action.help or "", action.default
        unset = default is None or default is False or default == [] or default is argparse.SUPPRESS
        if action.option_strings and not unset and "%(default)" not in text:
            text += " (default: %(default)s)"
        return text


def command_parser(commands, name: str, help: str, description: str) -> argparse.ArgumentParser:
    """A sub-command's parser on ``commands`` with the shared help formatter."""
    return commands.add_parser(name, help=help, description=textwrap.fill(description, 88), formatter_class=_Formatter)


def build_parser() -> argparse.ArgumentParser:
    """The whole ``bayes-raters`` argument parser, every sub-command included."""
    parser = argparse.ArgumentParser(prog="bayes-raters", description=DESCRIPTION, epilog=EPILOG, formatter_class=_Formatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _prmse_parser(commands)
    _irt_parser(commands)
    pairwise_parser(commands, command_parser)
    facets_parser(commands, command_parser)
    judges_parser(commands, command_parser)
    labels_parser(commands, command_parser)
    leaderboard_parser(commands, command_parser)
    plan_parser(commands, command_parser)
    agreement_parser(commands, command_parser)
    example = command_parser(
        commands, "example", "write the example CSV files into a folder",
        "Writes small example files (an essay-scoring export, machine scores with their own column names, "
        "the same data wide, right/wrong answers, pairwise comparisons and their counts) into FOLDER and "
        "prints a command to try on each.",
    )
    example.add_argument("folder", help="where to write them (created if needed)")
    demo = command_parser(commands, "demo", "closed-form and posterior PRMSE on a small simulated data set",
                    "Simulate a Loukina et al. (2020) design, fit the true-score model and print both PRMSE estimates.")
    demo.add_argument("--seed", type=int, metavar="N", default=2020, help="seed of the simulation and the sampler")
    output_options(demo, tables=False)
    return parser


def _prmse_parser(commands) -> None:
    prmse = command_parser(
        commands, "prmse", "closed-form PRMSE of each system against the true score",
        "Human ratings: long (one row per rating: response, rater, score) or wide (one row per "
        "response, one --human column per rating). System scores: long in --systems FILE (response, "
        "system, score), or wide (one --system column per system) in --systems FILE or in the ratings "
        "file itself. Each file has its own column names. Empty cells are missing ratings.",
    )
    rating_file_options(prmse)
    prmse.add_argument("--error-variance", type=float, metavar="V", default=None, help="known rater error variance")
    prmse.add_argument("--score-range", type=float, nargs=2, metavar=("LOW", "HIGH"), help="declared scale, e.g. 1 6")
    bayes = prmse.add_argument_group("posterior PRMSE (Bayesian true-score model)")
    bayes.add_argument("--bayes", action="store_true", help="add the posterior PRMSE beside the closed form")
    bayes.add_argument("--ci", type=float, metavar="P", default=0.9, help="credible interval probability")
    bayes.add_argument(
        "--observation", choices=["normal", "ordinal"], default="normal",
        help="normal: ratings as continuous; ordinal: integer ratings rounded from the true score "
        "(needs --score-range; slower, see models/ctt_true_score.md)",
    )
    sampler_options(bayes, draws=2000)
    output_options(prmse)



def _irt_parser(commands) -> None:
    irt = command_parser(
        commands, "irt", "fit an IRT model to right/wrong answers or ordinal ratings and print item and respondent tables",
        "RESPONSES.csv: one row per answer with a respondent id, an item id and 1/0 (or true/false) "
        "for a correct answer, or (--model grm/gpcm) a whole-number score; unanswered items are absent rows.",
    )
    irt.add_argument("responses", help="CSV of answers in long format")
    irt.add_argument(
        "--model", choices=["1pl", "2pl", "3pl", "4pl", "grm", "gpcm"], default="2pl",
        help="IRT model: 1pl-4pl for right/wrong answers; grm (graded response) or gpcm (generalized partial credit) for ordinal scores",
    )
    irt.add_argument("--n-options", type=int, metavar="K", default=None, help="answer options per item (3PL/4PL guessing prior)")
    irt.add_argument(
        "--method", choices=["marginal", "joint"], default="marginal",
        help="marginal: abilities integrated out by quadrature; joint: abilities sampled",
    )
    irt.add_argument(
        "--priors", choices=["hierarchical", "fixed"], default=None,
        help="item priors of the 1pl-4pl: population location and scale (default: hierarchical from 10 items on), or fixed N(0, 2) / "
        "LogNormal(0, 0.5); grm and gpcm have fixed priors only",
    )
    irt.add_argument("--sampler", choices=["pymc", "nutpie", "numpyro"], default="pymc", help="NUTS sampler (numpyro needs jax)")
    irt.add_argument(
        "--inference", choices=["auto", "nuts", "laplace"], default="auto",
        help="marginal fits (unidimensional and --dims/--dimensions): auto keeps importance-sampled Laplace draws "
        "when they pass their checks (Pareto k, R-hat, ESS) "
        "and runs NUTS otherwise; nuts or laplace forces one",
    )
    structure = irt.add_mutually_exclusive_group()
    structure.add_argument(
        "--dims", type=int, metavar="K", default=None,
        help="exploratory multidimensional 2pl/3pl with K = 2 or 3 abilities (prints a loadings table; "
        "--sampler numpyro is faster per gradient here: models/irt_multidimensional.md, Computation)",
    )
    structure.add_argument(
        "--dimensions", metavar="MAP.csv", default=None,
        help="confirmatory multidimensional 2pl/3pl: a CSV with columns item,dimension naming each item's ability "
        "(2 or 3 names; prints their correlations)",
    )
    irt.add_argument("--anchors", nargs="+", metavar="ITEM", default=None,
                     help="with --dims: the anchor item of each dimension (default: chosen from the answers)")
    irt.add_argument(
        "--local-dependence", action="store_true",
        help="also check every item pair for local dependence (Yen's Q3 from posterior draws with a posterior "
        "predictive check); prints the flagged pairs, writes all pairs as the table 'pairs'",
    )
    columns = irt.add_argument_group("columns of the answers file")
    columns.add_argument("--respondent-column", default="respondent", metavar="NAME", help="respondent id")
    columns.add_argument("--item-column", default="item", metavar="NAME", help="item id")
    columns.add_argument("--correct-column", default="correct", metavar="NAME", help="1/0 or true/false (1pl-4pl)")
    columns.add_argument("--score-column", default="score", metavar="NAME", help="whole-number ordinal score (grm, gpcm)")
    file_options(irt)
    sampler_options(irt, draws=1000)
    output_options(irt)
