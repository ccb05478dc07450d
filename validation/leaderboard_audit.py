"""The benchmark audit on planted errors, many seeds: leaderboards simulated by
:func:`~bayes_raters.leaderboard.simulate_leaderboard` (skewed abilities, two-cluster difficulties:
not the model's priors; no flat items, which are what the audit calls random), a share of items mis-keyed (every answer flipped) and a
share answered at random (:func:`~bayes_raters.leaderboard.plant_item_errors`), fitted by
``fit_leaderboard`` and audited by ``result.audit_table()``.

``.venv/bin/python -m validation.leaderboard_audit --seeds 5 --shape 200 400`` prints per seed
the precision of the top-k items by ``p_miskeyed`` (k = the planted count) and by ``p_random``,
the recall of the ``"miskeyed"`` flag, the calibration of the three-way probabilities against
the planted kinds (top-label ECE, :mod:`bayes_raters.labels.calibration`), and the item table's
``backwards`` heuristic beside them (``models/leaderboards.md`` holds the table).
"""

from __future__ import annotations

import argparse
import time
import warnings

import pandas as pd

from bayes_raters.labels.calibration import expected_calibration_error, reliability_table
from bayes_raters.leaderboard import fit_leaderboard, plant_item_errors, simulate_leaderboard
from bayes_raters.leaderboard.audit import HYPOTHESES


def top_precision(score: pd.Series, planted: pd.Series) -> float:
    """Share of planted items among the ``planted.sum()`` items with the highest score."""
    k = int(planted.sum())
    return float(planted.reindex(score.nlargest(k).index).mean()) if k else float("nan")


def audit_one(seed: int, systems: int, items: int, miskeyed: float, random_items: float) -> dict:
    """Fit and audit one planted leaderboard; the row of the summary."""
    answers, _ = simulate_leaderboard(systems, items, flat_share=0.0, random_seed=seed)
    answers, kind = plant_item_errors(answers, miskeyed=miskeyed, random_items=random_items, random_seed=seed)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_leaderboard(answers, random_seed=seed, progressbar=False)
    fitted = time.perf_counter() - start
    audit = fit.audit_table()
    audited = time.perf_counter() - start - fitted
    kind = kind.reindex(audit.index)
    probabilities = audit[[f"p_{h}" for h in HYPOTHESES]].set_axis(list(HYPOTHESES), axis=1)
    flagged = audit["flag"] == "miskeyed"
    backwards = fit.item_table()["flag"].reindex(audit.index) == "backwards"
    return {"seed": seed, "converged": fit.convergence.converged,
            "precision_miskeyed": top_precision(audit["p_miskeyed"], kind == "miskeyed"),
            "precision_random": top_precision(audit["p_random"], kind == "random"),
            "flag_recall": float(flagged[kind == "miskeyed"].mean()),
            "flag_false": int((flagged & (kind != "miskeyed")).sum()),
            "backwards_recall": float(backwards[kind == "miskeyed"].mean()),
            "ece": expected_calibration_error(reliability_table(probabilities, kind)),
            "fit_s": fitted, "audit_s": audited}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--shape", type=int, nargs=2, default=(200, 400), metavar=("SYSTEMS", "ITEMS"))
    parser.add_argument("--miskeyed", type=float, default=0.05)
    parser.add_argument("--random-items", type=float, default=0.05)
    args = parser.parse_args()
    rows = [audit_one(seed, *args.shape, args.miskeyed, args.random_items) for seed in range(args.seeds)]
    frame = pd.DataFrame(rows).set_index("seed")
    print(frame.round(3).to_string())
    print(frame.drop(columns="converged").agg(["mean", "min", "max"]).round(3).to_string())


if __name__ == "__main__":
    main()
