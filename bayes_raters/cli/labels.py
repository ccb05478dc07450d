"""``bayes-raters labels LABELS.csv [--model ...] [--gold GOLD.csv]``: each item's true class (soft
labels), each annotator's accuracy and confusion matrix, and the class prevalence from categorical
labels of several annotators per item."""

from __future__ import annotations

import argparse

from bayes_raters.cli.files import Output, progress_on_stderr, progressbar, read_table
from bayes_raters.cli.options import column_options, file_options, output_options, sampler_options
from bayes_raters.errors import InvalidInputError


def add_parser(commands, command) -> None:
    """The ``labels`` sub-command (``command`` builds a sub-parser with the shared formatter)."""
    labels = command(
        commands, "labels", "true classes, annotators' confusion matrices and prevalence from categorical labels",
        "LABELS.csv: one row per label given (item, annotator, label), several annotators per item, human or LLM; "
        "an annotator may label an item more than once. --gold GOLD.csv: known classes of some items (item, label). "
        "Fits a Dawid-Skene model (each item's class summed out exactly) and prints the items (the probability of "
        "each class, the most probable class, the majority vote, the gold class), the annotators (accuracy with "
        "its interval, flagged when worse than chance), the prevalence and, with --confusion, every confusion matrix.",
    )
    labels.add_argument("labels", help="CSV of labels (item, annotator, label)")
    labels.add_argument("--gold", metavar="FILE", default=None, help="CSV of gold classes (item, label), same column names")
    column_options(labels, item="item id (both files)", annotator="annotator id", label="the label given (both files)")
    file_options(labels)
    model = labels.add_argument_group("model")
    model.add_argument("--model", choices=["dawid-skene", "one-coin", "mace", "hierarchical", "correlated"], default="dawid-skene",
                       help="a confusion matrix per annotator, one accuracy per annotator, MACE (competence and a guessing strategy), "
                            "confusion matrices pooled by annotator kind (with --kinds), or annotators of one kind erring together "
                            "(with --kinds; annotators left out err independently)")
    model.add_argument("--kinds", metavar="FILE", default=None,
                       help="CSV of each annotator's kind (annotator, kind), e.g. human or llm: with --model hierarchical or correlated")
    model.add_argument("--classes", nargs="+", default=None, metavar="CLASS", help="the classes in order (default: the labels seen)")
    model.add_argument("--other-labels", nargs="+", default=None, metavar="LABEL",
                       help="labels that are not classes (e.g. Unsure): each confusion matrix gets a column for each")
    model.add_argument("--inference", choices=["auto", "nuts", "laplace"], default="auto",
                       help="auto: importance-sampled Laplace draws where their check passes, NUTS otherwise")
    model.add_argument("--ci", type=float, default=0.9, metavar="P", help="credible interval probability")
    model.add_argument("--confusion", action="store_true", help="also print every annotator's confusion matrix")
    sampler_options(model, draws=None, draws_help="posterior draws per chain: 1000, 2000 for hierarchical")
    labels.add_argument_group("planning the next labels").add_argument(
        "--next", type=int, default=None, metavar="N",
        help="also print the N items whose next label tells most about their class, the annotator to ask, and whether to stop")
    output_options(labels)


def _named_files(message: str, args: argparse.Namespace) -> str:
    """The package's table names followed by the files they came from."""
    for table, path in (("labels", args.labels), ("gold", args.gold), ("annotator_kind", args.kinds)):
        if path:
            message = message.replace(f"{table}:", f"{table} ({path}):")
    return message


def labels(args: argparse.Namespace) -> Output:
    """The ``labels`` sub-command: fit the labels model and return its tables."""
    from bayes_raters.cli.commands import convergence_record, records, text_table
    from bayes_raters.labels import fit_labels  # imports PyMC: only when asked

    rows = read_table(args.labels, args)
    gold = read_table(args.gold, args) if args.gold else None
    kinds = None
    if args.kinds:
        table = read_table(args.kinds, args)
        if not {args.annotator_column, "kind"} <= set(table.columns):
            raise InvalidInputError(f"annotator_kind ({args.kinds}): needs the columns {args.annotator_column!r} and 'kind'; "
                                    f"it has {list(table.columns)}.")
        kinds = dict(zip(table[args.annotator_column].astype(str), table["kind"].astype(str), strict=True))
    try:
        with progress_on_stderr():
            result = fit_labels(rows, args.model, gold=gold, annotator_kind=kinds, classes=args.classes, other_labels=args.other_labels,
                                inference=args.inference, item=args.item_column,
                                annotator=args.annotator_column, label=args.label_column, draws=args.draws, tune=args.tune,
                                chains=args.chains, random_seed=args.seed, progressbar=progressbar(args))
    except InvalidInputError as error:
        raise InvalidInputError(_named_files(str(error), args)) from None
    tables = {"items": result.item_table(), "annotators": result.annotator_table(args.ci), "prevalence": result.prevalence_table(args.ci)}
    if args.model in ("hierarchical", "correlated"):
        tables["kinds"] = result.kind_table(args.ci)
    if args.confusion:
        tables["confusion"] = result.confusion_table(args.ci)
    if args.next:
        tables["next"] = result.next_items(args.next)
    text = "\n\n".join(f"{name}:\n{text_table(table, 3)}" for name, table in tables.items())
    keys = {"items": "item", "annotators": "annotator", "prevalence": "class", "confusion": "row", "kinds": "row", "next": "item"}
    data = {name: records(table.reset_index() if table.index.nlevels > 1 else table, keys[name]) for name, table in tables.items()}
    data["convergence"] = convergence_record(result.convergence)
    data["inference"] = result.inference.to_dict()
    return Output(text, data, tables)
