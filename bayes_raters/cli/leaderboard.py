"""``bayes-raters leaderboard``: the leaderboard 2PL/1PL on a file of answers ``(system, item,
correct)``: the system table (ability, rank interval, P(rank 1)) and the item table (difficulty,
discrimination, flags), sampled by the blocked sampler of :mod:`bayes_raters.leaderboard`."""

from __future__ import annotations

import argparse
import contextlib

from bayes_raters.cli.files import Output, progressbar, read_table
from bayes_raters.cli.options import file_options, output_options
from bayes_raters.errors import InvalidInputError


def add_parser(commands, command) -> None:
    """The ``leaderboard`` sub-command (``command`` builds a sub-parser with the shared formatter)."""
    leaderboard = command(
        commands, "leaderboard", "IRT over a leaderboard: system abilities and ranks, item difficulty and discrimination",
        "ANSWERS.csv: one row per answer of a system to a benchmark item, correct 0/1, a whole grade or a score in [0, 1] (a skipped item "
        "is an absent row). Fits the hierarchical 2PL (or --model 1pl) with a blocked sampler that scales to hundreds "
        "of systems and tens of thousands of items, and prints the system table (ability, rank interval, P(rank 1)) and "
        "the item table (difficulty b, discrimination a, flags for items that rank systems backwards or not at all). "
        "A mixed suite (graded items, bounded scores in [0, 1], or multiple-choice items named 3pl in --item-types) ranks the "
        "systems on one ability.",
    )
    leaderboard.add_argument("answers", help="CSV of answers in long format")
    columns = leaderboard.add_argument_group("columns of the answers file")
    columns.add_argument("--respondent-column", default="respondent", metavar="NAME", help="system id")
    columns.add_argument("--item-column", default="item", metavar="NAME", help="benchmark item id")
    columns.add_argument("--correct-column", default="correct", metavar="NAME", help="0/1 answer (a whole grade on graded items, a score in [0, 1] on bounded)")
    file_options(leaderboard)
    model = leaderboard.add_argument_group("model")
    model.add_argument("--model", choices=["2pl", "1pl"], default="2pl", help="one discrimination per item (2pl) or one for all")
    model.add_argument("--item-types", metavar="FILE", default=None,
                       help="CSV with columns item, type (2pl, 3pl, graded or bounded): a mixed leaderboard (items not named take "
                            "what their answers reveal: 0/1 the 2PL, whole grades the graded model, scores in [0, 1] the bounded)")
    model.add_argument("--options", type=int, metavar="N", default=4, help="options of the 3PL items (guessing prior 1/N)")
    model.add_argument("--ci", type=float, default=0.9, metavar="P", help="credible interval probability")
    model.add_argument("--draws", type=int, metavar="N", default=None,
                       help="draws per chain (default: 700, and 300 more while the convergence check fails, up to 2,800)")
    model.add_argument("--tune", type=int, metavar="N", default=200, help="warm-up sweeps per chain")
    model.add_argument("--chains", type=int, metavar="N", default=2, help="chains (2 or more to check convergence)")
    model.add_argument("--seed", type=int, metavar="N", default=0, help="random seed of the sampler")
    model.add_argument("--audit", action="store_true",
                       help="also audit the items: P(mis-keyed), P(answered at random), saturation (sorted by P(mis-keyed))")
    model.add_argument("--backend", choices=["numba", "jax"], default="numba",
                       help="where the passes over the 0/1 answers run: Numba on this machine's cores, or JAX on its device (a GPU)")
    model.add_argument("--scheduler", metavar="ADDRESS", default=None,
                       help="a Dask scheduler (e.g. tcp://10.0.0.5:8786): the 0/1 passes sharded over its workers, the same draws")
    model.add_argument("--top", type=int, metavar="N", default=20, help="rows of each table printed (all in --json and --output)")
    output_options(leaderboard)


@contextlib.contextmanager
def dask_client(address: str | None):
    """A ``distributed.Client`` of the scheduler at ``address`` for the fit (None: no client)."""
    if address is None:
        yield None
        return
    try:
        from distributed import Client
    except ImportError as error:
        raise InvalidInputError("--scheduler needs dask.distributed: pip install 'bayes-raters[dask]'.") from error
    try:
        client = Client(address, timeout=10)
    except OSError as error:
        raise InvalidInputError(f"--scheduler {address}: no Dask scheduler answered ({error}); start one with "
                                "`dask scheduler` and its workers with `dask worker ADDRESS`.") from error
    with client:
        yield client


def leaderboard(args: argparse.Namespace) -> Output:
    """The ``leaderboard`` sub-command: fit the leaderboard model and return its system and item tables."""
    from bayes_raters.cli.commands import convergence_record, records, text_table
    from bayes_raters.leaderboard import fit_leaderboard  # imports PyMC: only when asked

    answers = read_table(args.answers, args)
    item_types = None
    if args.item_types is not None:
        declared = read_table(args.item_types, args)
        if list(declared.columns[:2]) != ["item", "type"]:
            raise InvalidInputError(f"{args.item_types}: the item types file needs the columns item, type; found {list(declared.columns)}.")
        item_types = dict(zip(declared["item"], declared["type"]))
    with dask_client(args.scheduler) as client:
        result = fit_leaderboard(answers, args.model, item_types=item_types, options=args.options, backend=args.backend, client=client,
                                 draws=args.draws, tune=args.tune, chains=args.chains, random_seed=args.seed,
                                 progressbar=progressbar(args), respondent=args.respondent_column, item=args.item_column,
                                 score=args.correct_column)
    tables = {"systems": result.system_table(args.ci), "items": result.item_table(args.ci)}
    flagged = tables["items"][tables["items"]["flag"] != ""]
    text = "\n\n".join([
        f"systems (best first; {len(tables['systems'])} in all)\n" + text_table(tables["systems"].head(args.top), 3),
        f"items ({len(tables['items'])} in all; {len(flagged)} flagged, shown first)\n"
        + text_table(flagged.sort_values("flag").head(args.top) if len(flagged) else tables["items"].head(args.top), 3),
    ])
    data = {"systems": records(tables["systems"], "system"), "items": records(tables["items"], "item"),
            "convergence": convergence_record(result.convergence)}
    if args.audit:
        audit = result.audit_table().sort_values("p_miskeyed", ascending=False)
        shares = ", ".join(f"{kind} {share:.3f}" for kind, share in audit.attrs["shares"].items())
        text += f"\n\naudit (most likely mis-keyed first; estimated shares: {shares})\n" + text_table(audit.head(args.top), 3)
        tables["audit"] = audit
        data["audit"] = records(audit, "item")
        data["audit_shares"] = audit.attrs["shares"]
    data["inference"] = result.inference.to_dict()  # the sampler and how many draws it needed (draws_rule)
    return Output(text, data, tables)
