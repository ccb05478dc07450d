"""``bayes-raters pairwise``: item scores from a file of pairwise comparisons, by the Bayesian
beta-latent model (with intervals and convergence) or by an online method (TrueSkill, bounded
RA), with the file's own column names and an optional count column for aggregated data."""

from __future__ import annotations

import argparse

from bayes_raters.cli.arena import add_arguments as arena_arguments
from bayes_raters.cli.arena import check_arena_options
from bayes_raters.cli.files import Output, progress_on_stderr, progressbar, read_table
from bayes_raters.cli.options import file_options, output_options, sampler_options

ONLINE = {"trueskill": "TrueSkill", "bounded-ra": "BoundedRA"}


def add_parser(commands, command) -> None:
    """The ``pairwise`` sub-command (``command`` builds a sub-parser with the shared formatter)."""
    pairwise = command(
        commands, "pairwise", "item scores from pairwise comparisons (Bayesian or online)",
        "COMPARISONS.csv: one row per judgement (or per distinct judgement with --count-column) with the "
        "two items and the outcome for the first item: win, tie or loss. --method bayes fits the "
        "beta-latent Rao-Kupper model (values in [0, 1] with intervals); --method arena rates models from "
        "arena votes at any scale (Elo points, rank intervals, P(rank 1), style control, categories); trueskill and "
        "bounded-ra run the online updates in row order.",
    )
    pairwise.add_argument("comparisons", help="CSV of comparisons")
    pairwise.add_argument("--method", choices=["bayes", "arena", *ONLINE], default="bayes",
                          help="how items are scored (arena: the Rao-Kupper model for millions of votes)")
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
    bayes.add_argument(
        "--plan", type=int, nargs="+", default=None, metavar="N",
        help="also plan N more comparisons (BALD batches vs random pairs): expected Spearman, rank-interval "
             "width and P(top-k set stable); and list the next pairs to judge",
    )
    bayes.add_argument("--batch", type=int, default=25, metavar="B", help="comparisons per BALD batch in --plan")
    bayes.add_argument("--top-k", type=int, default=3, metavar="K", help="size of the top set in --plan's stopping rule")
    bayes.add_argument("--stop-prob", type=float, default=0.9, metavar="P",
                       help="--plan's stopping rule: stop when the top-k set is stable with this probability")
    sampler_options(bayes, draws=1000)
    arena_arguments(pairwise)
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


def check_plan_options(args: argparse.Namespace) -> None:
    """--plan's options, checked before the fit."""
    from bayes_raters.errors import InvalidInputError

    if args.plan is None:
        return
    if args.method != "bayes":
        raise InvalidInputError("--plan needs --method bayes (it plans from the posterior).")
    if min(args.plan) < 0 or args.batch < 1 or args.top_k < 1 or not 0 < args.stop_prob <= 1:
        raise InvalidInputError("--plan takes numbers >= 0, --batch and --top-k numbers >= 1, --stop-prob a probability in (0, 1].")


def _with_plan(output: Output, result, args: argparse.Namespace) -> Output:
    """Add the plan, its stopping rule and the next BALD batch to a fit's output."""
    from bayes_raters.cli.commands import records, text_table
    from bayes_raters.pairwise.plan import comparisons_to_stop, plan_pairwise, top_k_probability

    table = plan_pairwise(result, [0, *args.plan], batch=args.batch, top_k=args.top_k, ci_prob=args.ci, random_seed=args.seed)
    columns = ["strategy", "extra", "spearman", "rank_width", "p_top_k", "top_k_correct"]
    now = top_k_probability(result, args.top_k)
    stop = comparisons_to_stop(table, args.stop_prob)
    next_pairs = result.next_pairs(args.batch)
    verdict = (f"P(top-{args.top_k} set stable) now {now:.2f}: "
               + ("stop, it reaches --stop-prob" if now >= args.stop_prob else
                  f"expected to reach {args.stop_prob:g} after {stop} more BALD comparisons" if stop is not None else
                  f"not expected to reach {args.stop_prob:g} within --plan {max(args.plan)}"))
    text = (output.text + "\n\nplan (expected, ranks from the posterior of the abilities):\n"
            + text_table(table[columns].set_index(["strategy", "extra"]), 3) + "\n\n" + verdict
            + f"\n\nnext {args.batch} pairs (BALD):\n" + text_table(next_pairs.set_index("item_a"), 3))
    data = dict(output.data, plan=records(table.set_index("strategy"), "strategy"), p_top_k_now=now,
                stop_prob=args.stop_prob, comparisons_to_stop=stop, next_pairs=next_pairs.to_dict(orient="records"))
    return Output(text, data, dict(output.tables, plan=table, next_pairs=next_pairs))


def pairwise(args: argparse.Namespace) -> Output:
    """The ``pairwise`` sub-command: fit the chosen method to the comparisons file and return the item table."""
    from bayes_raters.cli.commands import convergence_record, records, text_table

    check_plan_options(args)
    check_arena_options(args)
    table = read_table(args.comparisons, args)
    if args.method == "arena":
        from bayes_raters.cli.arena import arena

        return arena(table, args)
    if args.method == "bayes":
        from bayes_raters.pairwise import fit_pairwise  # imports PyMC: only when asked

        with progress_on_stderr():
            result = fit_pairwise(
                table, item_a=args.item_a_column, item_b=args.item_b_column, outcome=args.outcome_column,
                annotator=args.annotator_column, count=args.count_column, draws=args.draws, tune=args.tune,
                chains=args.chains, random_seed=args.seed, progressbar=progressbar(args),
                ties={"auto": None, "yes": True, "no": False}[args.ties],
            )
        items = result.item_table(ci_prob=args.ci)
        data = {"method": "bayes", "items": records(items, "item"), "convergence": convergence_record(result.convergence),
                "inference": result.inference.to_dict()}
        output = Output(text_table(items, 3), data, {"items": items})
        return _with_plan(output, result, args) if args.plan else output
    from bayes_raters import pairwise as methods

    table = _online_table(table, args)
    ids = table[["item_a", "item_b"]].to_numpy().ravel()
    method = getattr(methods, ONLINE[args.method])(list(dict.fromkeys(ids)))
    items = method.observe_pairs(table).scores().sort_values("scalar", ascending=False)
    items.index.name = "item"
    return Output(text_table(items, 3), {"method": args.method, "items": records(items, "item")}, {"items": items})
