"""``bayes-raters pairwise``: item scores from a file of pairwise comparisons, by the Bayesian
beta-latent model (with intervals and convergence) or by an online method (TrueSkill, bounded
RA), with the file's own column names and an optional count column for aggregated data."""

from __future__ import annotations

import argparse

from bayes_raters.cli.files import Output, progress_on_stderr, progressbar, read_table

ONLINE = {"trueskill": "TrueSkill", "bounded-ra": "BoundedRA"}


def add_parser(commands, command) -> None:
    """The ``pairwise`` sub-command (``command`` builds a sub-parser with the shared formatter)."""
    from bayes_raters.cli.parser import file_options, output_options, sampler_options

    pairwise = command(
        commands, "pairwise", "item scores from pairwise comparisons (Bayesian or online)",
        "COMPARISONS.csv: one row per judgement (or per distinct judgement with --count-column) with the "
        "two items and the outcome for the first item: win, tie or loss. --method bayes fits the "
        "beta-latent Rao-Kupper model (values in [0, 1] with intervals); trueskill and bounded-ra run "
        "the online updates in row order.",
    )
    pairwise.add_argument("comparisons", help="CSV of comparisons")
    pairwise.add_argument("--method", choices=["bayes", *ONLINE], default="bayes", help="how items are scored")
    columns = pairwise.add_argument_group("columns of the comparisons file")
    columns.add_argument("--item-a-column", default="item_a", metavar="NAME", help="the first item")
    columns.add_argument("--item-b-column", default="item_b", metavar="NAME", help="the second item")
    columns.add_argument("--outcome-column", default="outcome", metavar="NAME", help="win, tie or loss, for the first item")
    columns.add_argument("--count-column", default=None, metavar="NAME", help="how many identical judgements a row stands for")
    columns.add_argument("--annotator-column", default=None, metavar="NAME", help="annotator id (bayes: annotator effects)")
    file_options(pairwise)
    bayes = pairwise.add_argument_group("Bayesian model (--method bayes)")
    bayes.add_argument(
        "--ties", choices=["auto", "yes", "no"], default="auto",
        help="model a tie band: auto when the file holds a tie; no for tie-free data (Bradley-Terry)",
    )
    bayes.add_argument("--ci", type=float, default=0.9, metavar="P", help="credible interval probability")
    sampler_options(bayes, draws=1000)
    output_options(pairwise)


def _online_table(table, args: argparse.Namespace):
    """The comparisons with canonical column names, one row per judgement (counts expanded:
    online updates read one judgement per row, in file order)."""
    from bayes_raters.pairwise.hits import canonical_columns, expand_counts, reject_count_column

    names = {"item_a": args.item_a_column, "item_b": args.item_b_column, "outcome": args.outcome_column}
    table = canonical_columns(table, names | ({"count": args.count_column} if args.count_column else {}), "comparisons")
    if args.count_column:
        table = expand_counts(table, "count", "comparisons")
    else:
        reject_count_column(table, "comparisons", "Name it with --count-column {column} to use it as the number of judgements.")
    return table[["item_a", "item_b", "outcome"]]


def pairwise(args: argparse.Namespace) -> Output:
    from bayes_raters.cli.commands import records, text_table, convergence_record

    table = read_table(args.comparisons, args)
    if args.method == "bayes":
        from bayes_raters.pairwise import fit_pairwise_model  # imports PyMC: only when asked

        with progress_on_stderr():
            result = fit_pairwise_model(
                table, item_a=args.item_a_column, item_b=args.item_b_column, outcome=args.outcome_column,
                annotator=args.annotator_column, count=args.count_column, draws=args.draws, tune=args.tune,
                chains=args.chains, random_seed=args.seed, progressbar=progressbar(args),
                ties={"auto": None, "yes": True, "no": False}[args.ties],
            )
        items = result.item_table(ci_prob=args.ci)
        data = {"method": "bayes", "items": records(items, "item"), "convergence": convergence_record(result.convergence)}
        return Output(text_table(items, 3), data, {"items": items})
    from bayes_raters import pairwise as methods

    table = _online_table(table, args)
    ids = table[["item_a", "item_b"]].to_numpy().ravel()
    method = getattr(methods, ONLINE[args.method])(list(dict.fromkeys(ids)))
    items = method.observe_pairs(table).scores().sort_values("scalar", ascending=False)
    items.index.name = "item"
    return Output(text_table(items, 3), {"method": args.method, "items": records(items, "item")}, {"items": items})
