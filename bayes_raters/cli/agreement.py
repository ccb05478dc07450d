"""``bayes-raters agreement RATINGS.csv``: inter-rater agreement (Krippendorff's alpha, Fleiss' and
Cohen's kappa, the six ICCs) with classical, bootstrap and posterior intervals
(:func:`bayes_raters.agreement.agreement_table`)."""

from __future__ import annotations

import argparse
import json

from bayes_raters.cli.files import Output, progressbar, read_table
from bayes_raters.cli.options import file_options, output_options, rating_columns


def add_parser(commands, command) -> None:
    """The ``agreement`` sub-command (``command`` builds a sub-parser with the shared formatter)."""
    agreement = command(
        commands, "agreement", "inter-rater agreement: alpha, kappa, ICCs with classical, bootstrap and posterior intervals",
        "RATINGS.csv: long (one row per rating: response, rater, score) or wide (one --human column per rating, an "
        "empty cell for a rating not given). Any design: raters may score different subsets and responses may have "
        "2-5 ratings; responses with one rating are left out. Prints every coefficient that fits --level, with "
        "intervals from the closed form (where one exists), a bootstrap over responses and the true-score model.",
    )
    agreement.add_argument("ratings", help="CSV of ratings (long, or wide with --human)")
    rating_columns(agreement)
    file_options(agreement)
    options = agreement.add_argument_group("coefficients and intervals")
    options.add_argument("--level", choices=["nominal", "ordinal", "interval", "ratio"], default="interval",
                         help="level of measurement: sets alpha's distance and which coefficients apply")
    options.add_argument("--categories", nargs="+", metavar="SCORE", default=None,
                         help="every score of the scale in order, e.g. 1 2 3 4 5 (weighted kappa counts positions on it)")
    options.add_argument("--ci", type=float, default=0.9, metavar="P", help="probability of every interval")
    options.add_argument("--bootstrap", type=int, default=1000, metavar="N", help="bootstrap resamples of the responses")
    options.add_argument("--no-posterior", action="store_true", help="skip the true-score model (no posterior ICC columns)")
    options.add_argument("--observation", choices=["normal", "ordinal"], default="normal",
                         help="the true-score model's observations; ordinal gives ICCs of the latent scale (slower)")
    options.add_argument("--draws", type=int, metavar="N", default=1000, help="posterior draws per chain")
    options.add_argument("--chains", type=int, metavar="N", default=2, help="chains (2 or more to check convergence)")
    options.add_argument("--seed", type=int, metavar="N", default=0, help="seed of the bootstrap and the sampler")
    output_options(agreement)


def _categories(values: list[str] | None, level: str):
    if values is None or level == "nominal":
        return values
    from bayes_raters.errors import InvalidInputError

    try:
        return [float(v) for v in values]
    except ValueError as exc:
        raise InvalidInputError(f"--categories must be numbers at --level {level}; got {values}.") from exc


def agreement(args: argparse.Namespace) -> Output:
    """The ``agreement`` sub-command: the agreement table of the ratings file."""
    from bayes_raters.agreement import agreement_table
    from bayes_raters.cli.commands import records, text_table
    from bayes_raters.data import wide_to_long
    from bayes_raters.errors import InvalidInputError

    if args.bootstrap < 2:
        raise InvalidInputError(f"--bootstrap must be at least 2 resamples; got {args.bootstrap}.")
    table = read_table(args.ratings, args)
    names = {"response": args.response_column, "rater": args.rater_column, "score": args.score_column}
    if args.human:
        response = args.response_column if args.response_column in table else None
        table = wide_to_long(table, args.human, response_column=response)
        names = {"response": "response", "rater": "rater", "score": "score"}
    result = agreement_table(table, level=args.level, categories=_categories(args.categories, args.level), ci_prob=args.ci,
                             n_boot=args.bootstrap, posterior=not args.no_posterior, observation=args.observation,
                             draws=args.draws, chains=args.chains, random_seed=args.seed, progressbar=progressbar(args), **names)
    attrs = result.attrs
    head = (f"agreement ({attrs['level']} level; {int(result['n_units'].iloc[0])} responses rated twice or more, "
            f"{int(result['n_ratings'].iloc[0])} ratings, {attrs['n_single']} single-rated left out; "
            f"{'complete' if attrs['complete'] else 'unbalanced'} design; {args.ci:.0%} intervals; bootstrap over responses)")
    shown = result.drop(columns=["n_units", "n_ratings"]).dropna(axis=1, how="all")
    data = {"level": attrs["level"], "ci_prob": attrs["ci_prob"], "complete": bool(attrs["complete"]), "k": attrs["k"],
            "coefficients": records(result, "coefficient"),
            "convergence": json.loads(json.dumps(attrs["convergence"], default=float)),
            "converged": bool(attrs["converged"]), "below_bound": attrs["below_bound"]}
    return Output(head + "\n" + text_table(shown, 3), data, {"agreement": result})
