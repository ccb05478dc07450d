"""The labels models on real data (``tests/data/labels/``, sources and licences in
``tests/data/README.md``), beside the majority vote and crowd-kit 1.4.2 (its numbers from
``tests/data/labels/crowdkit_real.json``, with the exact calls): accuracy against gold, and the
calibration of the soft labels against gold (reliability table, expected calibration error).

- Bluebirds (Welinder et al. 2010): 108 images x 39 workers, binary, gold for every image.
- DICES-350 (Aroyo et al. 2023): 350 conversations x 123 crowd labels "unsafe?" (No / Unsure / Yes),
  expert gold (No / Yes); no rater identity, so one pooled crowd annotator who labels each item
  123 times (its confusion matrix is the crowd's). Gold has no "Unsure": an item whose most
  probable class is "Unsure" counts as wrong. ``dices350_unsure``: the same labels with the classes
  No / Yes and "Unsure" a label that is not a class (``other_labels``), as the gold has them.
- The caries patterns (Espeland & Handelman 1989): 3,869 teeth x 5 dentists, binary, no gold:
  the prevalence beside crowd-kit's Dawid-Skene.

Run from the repository root: ``.venv/bin/python -m validation.labels_real [--models dawid-skene one-coin mace]``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import pandas as pd

from bayes_raters.labels import fit_labels

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "labels"


def bluebirds() -> tuple[pd.DataFrame, pd.Series]:
    """``(labels, gold)``: long labels (item, annotator, label) and the gold class per item."""
    rows = pd.read_csv(DATA / "bluebirds_welinder2010_long.csv")
    gold = rows.groupby("item")["gold"].first().rename(index=str).astype(str)
    return rows.rename(columns={"worker": "annotator"})[["item", "annotator", "label"]], gold


def dices350() -> tuple[pd.DataFrame, pd.Series]:
    """``(labels, gold)``: every crowd label as one pooled annotator's, and the expert gold."""
    rows = pd.read_csv(DATA / "dices350_crowd_Q_overall_long.csv")
    gold = pd.read_csv(DATA / "dices350_expert_gold.csv").set_index("item_id")["safety_gold_expert"]
    labels = pd.DataFrame({"item": rows["item_id"], "annotator": "crowd", "label": rows["Q_overall_unsafe"]})
    return labels, gold.rename(index=str).astype(str)


def caries() -> tuple[pd.DataFrame, None]:
    """``(labels, None)``: the 32 patterns expanded to one row per (tooth, dentist)."""
    patterns = pd.read_csv(DATA / "espeland_handelman_1989_caries_patterns.csv")
    teeth = patterns.loc[patterns.index.repeat(patterns["n"])].reset_index(drop=True)
    long = teeth.drop(columns="n").rename_axis("item").reset_index().melt(id_vars="item", var_name="annotator", value_name="label")
    return long, None


SETS = {"bluebirds": bluebirds, "dices350": dices350, "dices350_unsure": dices350, "caries": caries}
#: Fit options per set: DICES-350 with "Unsure" as a label that is not a class (gold is No / Yes).
OPTIONS = {"dices350_unsure": {"classes": ["No", "Yes"], "other_labels": ["Unsure"]}}


def evaluate(name: str, model: str, seed: int = 1) -> dict:
    """One fit with defaults: its accuracy and ECE against gold (or its prevalence), time and convergence."""
    labels, gold = SETS[name]()
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fit_labels(labels, model, random_seed=seed, progressbar=False, **OPTIONS.get(name, {}))
    row = {"set": name, "model": model, "seconds": round(time.perf_counter() - start, 1), "path": result.inference.path,
           "converged": result.convergence.converged, "max_r_hat": round(result.convergence.max_r_hat, 4),
           "divergences": result.convergence.divergences, "warnings": len(caught)}
    items = result.item_table()
    if gold is not None:
        known = items.loc[gold.index.intersection(items.index)]
        row["accuracy"] = float((known["map_class"] == gold.loc[known.index]).mean())
        row["majority_vote"] = float((known["majority"] == gold.loc[known.index]).mean())
        row["ece"] = result.calibration_table(gold).attrs["ece"]
    else:
        row["prevalence"] = result.prevalence_table()["mean"].round(4).to_dict()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=list(SETS))
    parser.add_argument("--models", nargs="+", default=["dawid-skene", "one-coin", "mace"])
    args = parser.parse_args()
    reference = json.loads((DATA / "crowdkit_real.json").read_text())
    for name in args.sets:
        for model in args.models:
            print(evaluate(name, model), flush=True)
        known = reference.get(name.removesuffix("_unsure"), {})
        print(f"  crowd-kit: { {method: entry for method, entry in known.items() if isinstance(entry, dict)} }", flush=True)


if __name__ == "__main__":
    main()
