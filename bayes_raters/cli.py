"""The ``bayes-raters`` command line.

``bayes-raters prmse RATINGS.csv --systems SYSTEMS.csv``   long format
``bayes-raters prmse SCORES.csv --human h1 --human h2 --system sys``   wide format
``bayes-raters demo``   closed-form PRMSE on a small simulated data set

Bad input prints one line ``bayes-raters: error: ...`` and exits with code 2.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import warnings
from collections.abc import Sequence
from importlib.metadata import version

import numpy as np
import pandas as pd

from bayes_raters.agreement import r2_score
from bayes_raters.ctt.prmse import prmse_table
from bayes_raters.ctt.simulate import double_scored_subset, simulate_dataset, system_scores_to_long
from bayes_raters.data import validate_ratings, validate_system_scores, wide_systems_to_long, wide_to_long
from bayes_raters.errors import BayesRatersError, BayesRatersWarning, InvalidInputError

EXIT_BAD_INPUT = 2
PRMSE_KEYS = [
    "system",
    "n",
    "n_raters",
    "n_single",
    "n_multiple",
    "error_variance",
    "true_score_variance",
    "mse_true",
    "prmse",
]
BAYES_KEYS = {  # JSON key -> column of TrueScoreResult.prmse_table
    "prmse_mean": "mean",
    "prmse_sd": "sd",
    "prmse_lower": "lower",
    "prmse_upper": "upper",
    "r_hat": "r_hat",
    "ess_bulk": "ess_bulk",
}
CONVERGENCE_KEYS = ["converged", "max_r_hat", "min_ess_bulk", "divergences"]  # of the whole fit


#: Python keyword named in package advice -> the command-line flag that does the same.
FLAGS = {
    "response": "--response-column", "rater": "--rater-column", "system": "--system-column",
    "score": "--score-column", "score_range": "--score-range", "error_variance": "--error-variance",
    "chains": "--chains", "draws": "--draws", "tune": "--tune", "ci_prob": "--ci", "sep": "--sep",
    "encoding": "--encoding", "respondent": "--respondent-column", "item": "--item-column",
    "correct": "--correct-column", "n_options": "--n-options", "method": "--method", "nuts_sampler": "--sampler",
}
_KEYWORD = re.compile(r"\b(" + "|".join(FLAGS) + r")=(\(low, high\)|\.\.\.|'[^']*'|\"[^\"]*\"|[\w.\-]+)")


def cli_advice(message: str) -> str:
    """Rewrite the Python keywords in a package message into this command line's flags,
    e.g. ``rater=...`` -> ``--rater-column NAME``, ``score_range=(low, high)`` ->
    ``--score-range LOW HIGH``, so that the advice works where it is read."""

    def flag(match: re.Match) -> str:
        value = {"(low, high)": "LOW HIGH", "...": "NAME"}.get(match.group(2), match.group(2))
        return f"{FLAGS[match.group(1)]} {value}"

    return _KEYWORD.sub(flag, message)


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bayes-raters", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {version('bayes_raters')}")
    commands = parser.add_subparsers(dest="command", required=True)

    prmse = commands.add_parser(
        "prmse",
        help="closed-form PRMSE of each system against the true score",
        description="Long format: RATINGS.csv has columns response, rater, score and --systems "
        "gives response, system, score. Wide format: one row per response, --human names each "
        "human rating column and --system each system column (NaN or empty = missing).",
    )
    prmse.add_argument("ratings", help="CSV of human ratings (long), or of all scores (wide)")
    _file_options(prmse)
    prmse.add_argument("--systems", help="CSV of system scores in long format")
    prmse.add_argument("--human", action="append", default=[], metavar="COL", help="wide: a human rating column")
    prmse.add_argument("--system", action="append", default=[], metavar="COL", help="wide: a system score column")
    prmse.add_argument("--response-column", default=None, help="response id column (default: 'response'; wide: row number)")
    prmse.add_argument("--rater-column", default="rater")
    prmse.add_argument("--system-column", default="system")
    prmse.add_argument("--score-column", default="score")
    prmse.add_argument("--error-variance", type=float, default=None, help="known rater error variance")
    prmse.add_argument("--score-range", type=float, nargs=2, metavar=("LOW", "HIGH"), help="declared scale")
    prmse.add_argument("--json", action="store_true", help="print a JSON list, one object per system")
    bayes = prmse.add_argument_group("posterior PRMSE (Bayesian true-score model)")
    bayes.add_argument("--bayes", action="store_true", help="add the posterior PRMSE beside the closed form")
    bayes.add_argument("--ci", type=float, default=0.9, help="credible interval probability (default 0.9)")
    bayes.add_argument("--draws", type=int, default=2000)
    bayes.add_argument("--tune", type=int, default=1000)
    bayes.add_argument("--chains", type=int, default=2)
    bayes.add_argument("--seed", type=int, default=0, help="random seed of the sampler (default 0)")
    bayes.add_argument(
        "--observation", choices=["normal", "ordinal"], default="normal",
        help="normal (default): ratings as continuous; ordinal: integer ratings rounded from the "
        "true score (needs --score-range; slower, see models/ctt_true_score.md)",
    )

    irt = commands.add_parser(
        "irt",
        help="fit an IRT model to right/wrong answers and print item and respondent tables",
        description="RESPONSES.csv has columns respondent, item, correct (0/1); one row per answer.",
    )
    irt.add_argument("responses", help="CSV of answers in long format")
    _file_options(irt)
    irt.add_argument("--model", choices=["1pl", "2pl", "3pl", "4pl"], default="2pl")
    irt.add_argument("--n-options", type=int, default=None, help="answer options per item (3PL/4PL guessing prior)")
    irt.add_argument(
        "--method", choices=["marginal", "joint"], default="marginal",
        help="marginal: abilities integrated out by quadrature (default); joint: abilities sampled",
    )
    irt.add_argument(
        "--priors", choices=["hierarchical", "fixed"], default="hierarchical",
        help="item priors: population location and scale (default), or fixed N(0, 2) / LogNormal(0, 0.5)",
    )
    irt.add_argument("--sampler", choices=["pymc", "nutpie", "numpyro"], default=None, help="NUTS sampler (default: the method's; numpyro needs jax)")
    irt.add_argument("--respondent-column", default="respondent")
    irt.add_argument("--item-column", default="item")
    irt.add_argument("--correct-column", default="correct")
    irt.add_argument("--draws", type=int, default=1000)
    irt.add_argument("--tune", type=int, default=1000)
    irt.add_argument("--chains", type=int, default=2)
    irt.add_argument("--seed", type=int, default=0)
    irt.add_argument("--json", action="store_true", help='print {"items": [...], "respondents": [...]}')

    demo = commands.add_parser("demo", help="closed-form and posterior PRMSE on a small simulated data set")
    demo.add_argument("--seed", type=int, default=2020)
    return parser


def _file_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--sep", default=",", help="column delimiter of the CSV files (default ','; e.g. ';' or '\\t')")
    command.add_argument("--encoding", default="utf-8", help="text encoding of the CSV files (default utf-8; e.g. latin-1)")


def _read_csv(path: str, args: argparse.Namespace) -> pd.DataFrame:
    sep = "\t" if args.sep in ("\\t", "tab") else args.sep
    try:
        return pd.read_csv(path, sep=sep, encoding=args.encoding)
    except FileNotFoundError:
        raise InvalidInputError(f"no such file: {path}") from None
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"cannot read {path} as {args.encoding} text ({exc.reason} at byte {exc.start}): give the file's "
            "encoding, e.g. --encoding latin-1 or --encoding cp1252."
        ) from None
    except LookupError:
        raise InvalidInputError(f"unknown encoding {args.encoding!r}: use e.g. --encoding utf-8 or --encoding latin-1.") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, IsADirectoryError, ValueError) as exc:
        raise InvalidInputError(f"cannot read {path} as CSV: {str(exc).splitlines()[0]}") from None


def _check_options(args: argparse.Namespace) -> None:
    """Reject impossible options before any file is read or model fitted."""
    checks = [
        (getattr(args, "ci", 0.5), lambda v: 0 < v < 1, "--ci must lie strictly between 0 and 1 (e.g. 0.9)"),
        (getattr(args, "draws", 1), lambda v: v >= 1, "--draws must be at least 1"),
        (getattr(args, "tune", 0), lambda v: v >= 0, "--tune must be at least 0"),
        (getattr(args, "chains", 2), lambda v: v >= 1, "--chains must be at least 1 (2 or more to check convergence)"),
        (getattr(args, "error_variance", None), lambda v: v is None or v >= 0, "--error-variance must be >= 0"),
        (getattr(args, "score_range", None), lambda v: v is None or v[0] < v[1], "--score-range needs LOW < HIGH"),
        (getattr(args, "n_options", None), lambda v: v is None or v >= 2, "--n-options must be at least 2"),
    ]
    for value, valid, message in checks:
        if not valid(value):
            raise InvalidInputError(f"{message}; got {value}.")


def _tables(args: argparse.Namespace) -> tuple[pd.DataFrame, pd.DataFrame, tuple | None]:
    """Validated long ratings and system scores (canonical columns) from either format."""
    score_range = tuple(args.score_range) if args.score_range else None
    table = _read_csv(args.ratings, args)
    system_table = _read_csv(args.systems, args) if args.systems else None
    if args.human or args.system:
        if not (args.human and args.system):
            raise InvalidInputError("wide format needs at least one --human COL and one --system COL.")
        if args.systems:
            raise InvalidInputError("use either --systems FILE (long format) or --human/--system (wide), not both.")
        ratings = wide_to_long(table, args.human, response_column=args.response_column, score_range=score_range)
        return ratings, wide_systems_to_long(table, args.system, response_column=args.response_column), score_range
    if not args.systems:
        raise InvalidInputError(
            "give the system scores: --systems SYSTEMS.csv (long format) or --human/--system columns (wide)."
        )
    response = args.response_column or "response"
    ratings = validate_ratings(
        table, response=response, rater=args.rater_column, score=args.score_column, score_range=score_range
    )
    systems = validate_system_scores(
        system_table, ratings=ratings, response=response, system=args.system_column, score=args.score_column
    )
    return ratings, systems, score_range


def _prmse_from_args(args: argparse.Namespace) -> pd.DataFrame:
    ratings, systems, score_range = _tables(args)
    table = prmse_table(ratings, systems, error_variance=args.error_variance)
    if not args.bayes:
        return table
    if args.observation == "ordinal" and score_range is None:
        raise InvalidInputError("--observation ordinal needs the declared scale: add --score-range LOW HIGH (e.g. 1 6).")
    from bayes_raters.ctt.posterior import fit_true_score_model  # imports PyMC: only when asked

    result = fit_true_score_model(
        ratings,
        systems,
        error_variance=args.error_variance,
        observation=args.observation,
        score_range=score_range,
        draws=args.draws,
        tune=args.tune,
        chains=args.chains,
        random_seed=args.seed,
    )
    posterior = result.prmse_table(ci_prob=args.ci)
    for key, column in BAYES_KEYS.items():
        table[key] = posterior[column].reindex(table.index)
    reports = {system: result.reports.get(system, result.reports.get("joint")) for system in table.index}
    for key in CONVERGENCE_KEYS:  # the whole fit's convergence (worst variable), not PRMSE's alone
        table[key] = [getattr(reports[system], key) for system in table.index]
    return table


def _json_value(key: str, value):
    """Strict JSON: integers for counts, booleans for flags, ``null`` for NaN or infinity."""
    if key == "converged":
        return bool(value)
    if key in ("n", "divergences") or key.startswith("n_"):
        return int(value)
    value = float(value)
    return value if np.isfinite(value) else None


def _json_records(table: pd.DataFrame) -> str:
    records = []
    keys = PRMSE_KEYS[1:] + [k for k in [*BAYES_KEYS, *CONVERGENCE_KEYS] if k in table.columns]
    for system, row in table.iterrows():
        record = {"system": system.item() if isinstance(system, np.generic) else system}
        record.update({key: _json_value(key, row[key]) for key in keys})
        records.append(record)
    return json.dumps(records, indent=2, allow_nan=False)


def _print_table(table: pd.DataFrame) -> None:
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.to_string(float_format=lambda x: f"{x:.7f}"))


def _demo(seed: int) -> None:
    from bayes_raters.ctt.posterior import fit_true_score_model  # imports PyMC

    data = simulate_dataset(2000, raters_per_category=2, systems_per_category=1, random_seed=seed)
    pair = tuple(data["rater"].where(data["rater_category"] == "average", drop=True).values[:2])
    ratings = double_scored_subset(data, pair, n_double=1000, random_seed=seed + 1)
    print(
        f"Simulated {data.sizes['response']} responses (Loukina et al. 2020 design, seed {seed}); "
        f"raters {pair[0]} and {pair[1]} ('average' agreement), 1000 responses double-scored.\n"
        "Fitting the Bayesian true-score model, one model per system ...\n"
    )
    result = fit_true_score_model(ratings, system_scores_to_long(data), random_seed=seed)
    table = result.prmse_table(ci_prob=0.9).rename(
        columns={"mean": "posterior", "lower": "lower_90", "upper": "upper_90"}
    )
    first_rater = data["rating"].sel(rater=pair[0])
    table.insert(0, "category", data["system_category"].to_series())
    table["r2_true"] = [r2_score(data["system_score"].sel(system=s), data["true_score"]) for s in table.index]
    table["r2_rater"] = [r2_score(data["system_score"].sel(system=s), first_rater) for s in table.index]
    columns = ["category", "closed_form", "posterior", "lower_90", "upper_90", "r_hat", "r2_true", "r2_rater"]
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table[columns].to_string(float_format=lambda x: f"{x:.3f}"))
    print(
        "\nHow to read it: closed_form (Haberman) and posterior (Bayesian, with its 90% interval) "
        "both estimate, from the human ratings alone, the PRMSE each system has against the "
        "unobservable true score; r2_true is that value computed with the simulated true scores "
        "(known only because the data are simulated). r2_rater, the usual R2 against one rater, "
        "is dragged down by rater error."
    )


def _records(table: pd.DataFrame, key: str) -> list[dict]:
    """Rows of a table as JSON-ready dicts with the index under ``key``."""
    frame = table.reset_index().rename(columns={table.index.name or "index": key})
    return json.loads(frame.to_json(orient="records", double_precision=15))


def _irt(args: argparse.Namespace) -> None:
    from bayes_raters.irt import fit_irt  # imports PyMC: only when asked

    result = fit_irt(
        _read_csv(args.responses, args),
        args.model,
        n_options=args.n_options,
        method=args.method,
        hierarchical=args.priors == "hierarchical",
        **({"nuts_sampler": args.sampler} if args.sampler else {}),
        draws=args.draws,
        tune=args.tune,
        chains=args.chains,
        random_seed=args.seed,
        respondent=args.respondent_column,
        item=args.item_column,
        correct=args.correct_column,
    )
    items, respondents = result.item_table(), result.respondent_table()
    if args.json:
        print(json.dumps({"items": _records(items, "item"), "respondents": _records(respondents, "respondent")}, indent=2))
        return
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(items.to_string(float_format=lambda x: f"{x:.3f}"))
        print()
        print(respondents.to_string(float_format=lambda x: f"{x:.3f}"))


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    try:
        _check_options(args)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", BayesRatersWarning)
            if args.command == "demo":
                _demo(args.seed)
            elif args.command == "irt":
                _irt(args)
            else:
                table = _prmse_from_args(args)
                if args.json:
                    print(_json_records(table))
                else:
                    _print_table(table)
        for message in dict.fromkeys(str(warning.message) for warning in caught):  # once per cause
            print(f"bayes-raters: warning: {cli_advice(message)}", file=sys.stderr)
    except BayesRatersError as exc:
        print(f"bayes-raters: error: {cli_advice(str(exc))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


if __name__ == "__main__":
    sys.exit(main())
