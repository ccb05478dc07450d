"""``bayes-raters pairwise --method arena``: ratings from a file of arena votes (millions of rows),
with style columns, a category column and the drop-k-votes check of the top rank
(:func:`bayes_raters.pairwise.fit_arena`)."""

from __future__ import annotations

import argparse

from bayes_raters.cli.files import Output, progressbar


def add_arguments(pairwise: argparse.ArgumentParser) -> None:
    """The options of ``--method arena`` on the ``pairwise`` sub-command."""
    arena = pairwise.add_argument_group("arena votes (--method arena)")
    arena.add_argument("--style-column", action="append", default=[], metavar="NAME",
                       help="a numeric style difference between the two answers, first minus second (repeat): the ratings "
                            "are then style-controlled")
    arena.add_argument("--category-column", default=None, metavar="NAME",
                       help="each vote's category: per-category ratings shrunk to the overall ones")
    arena.add_argument("--drop-check", action="store_true",
                       help="also find how few votes, dropped, would put the runner-up first (refits at the mode)")
    arena.add_argument("--top", type=int, default=20, metavar="N", help="rows of each table printed (all in --json and --output)")


def check_arena_options(args: argparse.Namespace) -> None:
    """Arena options only with ``--method arena``, and the options arena does not take."""
    from bayes_raters.errors import InvalidInputError

    given = [flag for flag, value in (("--style-column", args.style_column), ("--category-column", args.category_column),
                                      ("--drop-check", args.drop_check)) if value]
    if args.method != "arena" and given:
        raise InvalidInputError(f"{', '.join(given)} need --method arena.")
    if args.method == "arena" and args.annotator_column:
        raise InvalidInputError("--annotator-column is for --method bayes; arena votes have no annotator effects. Leave it out.")


def arena(table, args: argparse.Namespace) -> Output:
    """Fit the arena model to the votes file: system table (+ style and category tables, drop check)."""
    from bayes_raters.cli.commands import convergence_record, records, text_table
    from bayes_raters.pairwise import fit_arena  # imports PyMC: only when asked

    result = fit_arena(table, item_a=args.item_a_column, item_b=args.item_b_column, outcome=args.outcome_column,
                       style=args.style_column, category=args.category_column, count=args.count_column,
                       ties={"auto": None, "yes": True, "no": False}[args.ties], draws=args.draws, chains=args.chains,
                       random_seed=args.seed, progressbar=progressbar(args))
    tables = {"systems": result.system_table(args.ci)}
    if args.style_column:
        tables["style"] = result.style_table(args.ci)
    if args.category_column:
        tables["categories"] = result.category_table(args.ci)
    text = [f"models (best first; ratings in Elo points, mean 1000; {len(tables['systems'])} in all)\n"
            + text_table(tables["systems"].head(args.top), 3)]
    if "style" in tables:
        text.append("style effects (log odds of winning per unit of each column)\n" + text_table(tables["style"], 4))
    if "categories" in tables:
        top = tables["categories"].groupby(level="category").head(min(args.top, 5))
        text.append("categories (top models of each)\n" + text_table(top.reset_index(level="category"), 3))
    data = {"method": "arena", "systems": records(tables["systems"], "model"), "convergence": convergence_record(result.convergence),
            "inference": result.inference.to_dict()}
    if "style" in tables:
        data["style"] = records(tables["style"], "style")
    if "categories" in tables:
        data["categories"] = tables["categories"].reset_index().to_dict(orient="records")
    if args.drop_check:
        check = result.drop_votes_check()
        tables["drop_check"] = check.to_frame().T
        verdict = (f"dropping {int(check['votes_dropped']):,} of {result.data.n_votes:,} votes ({check['share_dropped']:.3%}) puts "
                   f"{check['runner_up']} above {check['top']} (refit margin {check['refit_margin']:.3f} log odds; P(rank 1) of "
                   f"{check['top']} {check['p_rank_1']:.3f})" if check["flips"] else
                   f"no flip of the top rank within 10% of the votes (P(rank 1) of {check['top']} {check['p_rank_1']:.3f})")
        text.append("drop-k-votes check of the top rank: " + verdict)
        data["drop_check"] = {key: (value.item() if hasattr(value, "item") else value) for key, value in check.items()}
    return Output("\n\n".join(text), data, tables)
