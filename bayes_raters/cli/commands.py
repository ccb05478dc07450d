"""The commands of ``bayes-raters``: ``prmse``, ``irt`` and ``demo``. Each returns an
:class:`~bayes_raters.cli.files.Output`; PyMC is imported only by the fits that need it."""

from __future__ import annotations

import argparse
import json
import re

import numpy as np
import pandas as pd

from bayes_raters.cli.files import Output, progress_on_stderr, progressbar, read_table
from bayes_raters.errors import InvalidInputError

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
    "prmse_mean": "prmse_mean",
    "prmse_sd": "prmse_sd",
    "prmse_lower": "prmse_lower",
    "prmse_upper": "prmse_upper",
    "r_hat": "r_hat",
    "ess_bulk": "ess_bulk",
}
CONVERGENCE_KEYS = ["converged", "max_r_hat", "min_ess_bulk", "divergences"]  # of the whole fit


def check_options(args: argparse.Namespace) -> None:
    """Reject impossible options before any file is read or model fitted."""
    checks = [
        (getattr(args, "ci", 0.5), lambda v: 0 < v < 1, "--ci must lie strictly between 0 and 1 (e.g. 0.9)"),
        (getattr(args, "draws", 1), lambda v: v is None or v >= 1, "--draws must be at least 1"),
        (getattr(args, "tune", 0), lambda v: v >= 0, "--tune must be at least 0"),
        (getattr(args, "chains", 2), lambda v: v >= 1, "--chains must be at least 1 (2 or more to check convergence)"),
        (getattr(args, "error_variance", None), lambda v: v is None or v >= 0, "--error-variance must be >= 0"),
        (getattr(args, "score_range", None), lambda v: v is None or v[0] < v[1], "--score-range needs LOW < HIGH"),
        (getattr(args, "n_options", None), lambda v: v is None or v >= 2, "--n-options must be at least 2"),
    ]
    for value, valid, message in checks:
        if not valid(value):
            raise InvalidInputError(f"{message}; got {value}.")
    if getattr(args, "command", None) == "irt" and args.model in ("grm", "gpcm"):
        for flag, value, default in (("--method", args.method, "marginal"), ("--n-options", args.n_options, None),
                                     ("--priors", args.priors, None)):
            if value != default:
                raise InvalidInputError(
                    f"{flag} is for the right/wrong models (1pl-4pl); --model {args.model} integrates the abilities "
                    f"out and has fixed priors. Leave out {flag}."
                )


def _wide_id(table: pd.DataFrame, column: str) -> str | None:
    """A wide file's response-id column, or None (row numbers) where the default name is absent."""
    return column if column in table.columns or column != "response" else None


def ratings_from_args(args: argparse.Namespace, table: pd.DataFrame, score_range) -> pd.DataFrame:
    """The validated long ratings (canonical columns) of the ratings file, long or wide."""
    from bayes_raters.data import validate_ratings, wide_to_long

    if args.human:
        return wide_to_long(table, args.human, response_column=_wide_id(table, args.response_column), score_range=score_range)
    return validate_ratings(
        table, response=args.response_column, rater=args.rater_column, score=args.score_column, score_range=score_range
    )


def systems_from_args(args: argparse.Namespace, table: pd.DataFrame | None, ratings_table: pd.DataFrame, ratings: pd.DataFrame) -> pd.DataFrame:
    """System scores, long (canonical columns), from --systems FILE (``table``) or the ratings
    file's --system columns."""
    from bayes_raters.data import validate_system_scores, wide_systems_to_long

    if table is None:
        return wide_systems_to_long(ratings_table, args.system, response_column=_wide_id(ratings_table, args.response_column))
    response = args.systems_response_column or args.response_column
    if args.system:
        if response not in table.columns:
            raise InvalidInputError(
                f"{args.systems} has no response id column {response!r}: name it with --systems-response-column NAME."
            )
        long = wide_systems_to_long(table, args.system, response_column=response)
        return validate_system_scores(long, ratings=ratings)
    try:
        return validate_system_scores(
            table, ratings=ratings, response=response, system=args.system_column, score=args.systems_score_column or args.score_column
        )
    except InvalidInputError as exc:  # advice for this file's own flags, not the ratings file's
        raise InvalidInputError(_SYSTEMS_KEYWORDS.sub(r"--systems-\1-column NAME", str(exc))) from None


_SYSTEMS_KEYWORDS = re.compile(r"\b(response|score)=\.\.\.")


def prmse_frame(args: argparse.Namespace) -> pd.DataFrame:
    """Closed-form PRMSE per system, with the posterior columns under ``--bayes``."""
    from bayes_raters.ctt.prmse import prmse_table

    if args.human and not (args.system or args.systems):
        raise InvalidInputError("wide format needs at least one --human COL and one --system COL (or --systems FILE).")
    if not (args.systems or args.system):
        raise InvalidInputError("give the system scores: --systems SYSTEMS.csv, or --system COL for columns of a wide ratings file.")
    score_range = tuple(args.score_range) if args.score_range else None
    ratings_table = read_table(args.ratings, args)
    systems_table = read_table(args.systems, args) if args.systems else None  # both read before either is judged
    ratings = ratings_from_args(args, ratings_table, score_range)
    systems = systems_from_args(args, systems_table, ratings_table, ratings)
    table = prmse_table(ratings, systems, error_variance=args.error_variance)
    if not args.bayes:
        return table
    if args.observation == "ordinal" and score_range is None:
        raise InvalidInputError("--observation ordinal needs the declared scale: add --score-range LOW HIGH (e.g. 1 6).")
    from bayes_raters.ctt.fit import fit_true_score  # imports PyMC: only when asked

    with progress_on_stderr():
        result = fit_true_score(
            ratings, systems, error_variance=args.error_variance, observation=args.observation, score_range=score_range,
            draws=args.draws, tune=args.tune, chains=args.chains, random_seed=args.seed, progressbar=progressbar(args),
        )
    posterior = result.prmse_table(ci_prob=args.ci)
    for key, column in BAYES_KEYS.items():
        table[key] = posterior[column].reindex(table.index)
    reports = {system: result.reports.get(system, result.reports.get("joint")) for system in table.index}
    for key in CONVERGENCE_KEYS:  # the whole fit's convergence (worst variable), not PRMSE's alone
        table[key] = [getattr(reports[system], key) for system in table.index]
    return table


def json_value(key: str, value):
    """Strict JSON: integers for counts, booleans for flags, ``null`` for NaN or infinity."""
    if key == "converged":
        return bool(value)
    if key in ("n", "divergences") or key.startswith("n_"):
        return int(value)
    value = float(value)
    return value if np.isfinite(value) else None


def json_records(table: pd.DataFrame) -> list[dict]:
    """The PRMSE table as JSON records, one per system, with the keys the CLI documents."""
    records = []
    keys = PRMSE_KEYS[1:] + [k for k in [*BAYES_KEYS, *CONVERGENCE_KEYS] if k in table.columns]
    for system, row in table.iterrows():
        record = {"system": system.item() if isinstance(system, np.generic) else system}
        record.update({key: json_value(key, row[key]) for key in keys})
        records.append(record)
    return records


def text_table(table: pd.DataFrame, digits: int = 7) -> str:
    """``table`` as plain text with ``digits`` decimals, wide enough not to wrap."""
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        return table.to_string(float_format=lambda x: f"{x:.{digits}f}")


def prmse(args: argparse.Namespace) -> Output:
    """The ``prmse`` sub-command: closed-form (and with ``--bayes`` posterior) PRMSE per system."""
    table = prmse_frame(args)
    return Output(text_table(table), json_records(table), {"prmse": table})


def records(table: pd.DataFrame, key: str) -> list[dict]:
    """Rows of a table as JSON-ready dicts with the index under ``key`` (NaN as null)."""
    frame = table.reset_index().rename(columns={table.index.name or "index": key})
    return json.loads(frame.to_json(orient="records", double_precision=15))


def convergence_record(report) -> dict:
    """The whole fit's convergence as strict JSON (``null`` where a figure cannot be computed)."""
    return {
        "converged": bool(report.converged),
        **{key: json_value(key, getattr(report, key)) for key in ("max_r_hat", "min_ess_bulk", "min_ess_tail", "divergences")},
        "chains": int(report.chains),
        "draws": int(report.draws),
        **({} if getattr(report, "pareto_k", None) is None else {"pareto_k": float(report.pareto_k)}),
    }


def irt(args: argparse.Namespace) -> Output:
    """The ``irt`` sub-command: fit an IRT model to the answers file and return its tables."""
    from bayes_raters.irt import fit_irt  # imports PyMC: only when asked

    answers = read_table(args.responses, args)
    if args.dims not in (None, 1) or args.dimensions is not None or args.anchors is not None:
        return _multidimensional(args, answers)
    if args.model in ("grm", "gpcm"):
        return _polytomous(args, answers)
    with progress_on_stderr():
        result = fit_irt(
            answers, args.model, n_options=args.n_options, method=args.method, hierarchical=None if args.priors is None else args.priors != "fixed",
            nuts_sampler=args.sampler, draws=args.draws, tune=args.tune, chains=args.chains, random_seed=args.seed,
            respondent=args.respondent_column, item=args.item_column, score=args.correct_column,
            progressbar=progressbar(args), inference=args.inference,
        )
    tables = {"items": result.item_table(), "respondents": result.respondent_table()}
    return _irt_output(result, tables, args)


def _irt_output(result, tables: dict, args: argparse.Namespace) -> Output:
    """Item (threshold) and respondent tables, with the item pairs of ``--local-dependence``:
    all pairs in CSV/JSON, the flagged ones (or a line saying there are none) on the terminal."""
    text = "\n\n".join(text_table(t, 3) for t in tables.values())
    if args.local_dependence:
        tables["pairs"] = pairs = result.local_dependence(random_seed=args.seed or 0).set_index(["item_a", "item_b"])
        flagged = pairs[pairs["flagged"]]
        text += ("\n\nlocally dependent item pairs (Yen's Q3, posterior predictive p < 0.05 and excess > 0.1):\n"
                 + text_table(flagged, 3) if len(flagged) else "\n\nno item pair flagged for local dependence (Yen's Q3)")
    data = {name: records(table, name.rstrip("s")) for name, table in tables.items()}  # pairs: item_a, item_b columns
    data["convergence"] = convergence_record(result.convergence)
    data["inference"] = result.inference.to_dict()  # which path ran and why, warm start, chains added
    return Output(text, data, tables)


def _multidimensional(args: argparse.Namespace, answers: pd.DataFrame) -> Output:
    """``irt --dims K`` / ``--dimensions MAP.csv``: item, loadings, (correlation) and
    respondent tables of the multidimensional model; options checked before any fitting."""
    from bayes_raters.irt import fit_irt

    if args.model not in ("2pl", "3pl"):
        raise InvalidInputError(f"--dims and --dimensions fit a multidimensional 2pl or 3pl, not --model {args.model}.")
    if args.local_dependence or args.method != "marginal":
        raise InvalidInputError("--dims and --dimensions go with the default --method marginal and without --local-dependence.")
    if args.anchors is not None and args.dimensions is not None:
        raise InvalidInputError("--anchors belongs to the exploratory model (--dims K), not to --dimensions.")
    dimensions = None
    if args.dimensions is not None:
        mapping = read_table(args.dimensions, args)
        missing = [c for c in ("item", "dimension") if c not in mapping.columns]
        if missing:
            raise InvalidInputError(f"{args.dimensions} needs the columns item,dimension; missing {missing}.")
        dimensions = dict(zip(mapping["item"].astype(str), mapping["dimension"].astype(str)))
        answers = answers.assign(**{args.item_column: answers[args.item_column].astype(str)})
    dims = args.dims if args.dims is not None else (None if dimensions is not None else len(args.anchors))
    with progress_on_stderr():
        result = fit_irt(
            answers, args.model, n_options=args.n_options, dims=dims, dimensions=dimensions, anchors=args.anchors,
            nuts_sampler=args.sampler, draws=args.draws, tune=args.tune, chains=args.chains, random_seed=args.seed,
            respondent=args.respondent_column, item=args.item_column, score=args.correct_column,
            progressbar=progressbar(args),
        )
    tables = {"items": result.item_table(), "loadings": result.loadings()}
    if dimensions is not None:
        tables["correlations"] = result.correlations()
    tables["respondents"] = result.respondent_table()
    return _irt_output(result, tables, args)


def _polytomous(args: argparse.Namespace, ratings: pd.DataFrame) -> Output:
    """``irt --model grm|gpcm``: item, threshold and respondent tables of the ordinal model."""
    from bayes_raters.irt import fit_polytomous

    with progress_on_stderr():
        result = fit_polytomous(
            ratings, args.model, nuts_sampler=args.sampler, draws=args.draws, tune=args.tune, chains=args.chains,
            random_seed=args.seed, respondent=args.respondent_column, item=args.item_column, score=args.score_column,
            progressbar=progressbar(args), inference=args.inference,
        )
    tables = {"items": result.item_table(), "thresholds": result.threshold_table(), "respondents": result.respondent_table()}
    return _irt_output(result, tables, args)
