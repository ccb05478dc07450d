"""Annotators who err together, on many seeds: Dawid-Skene against ``model="correlated"`` on data
from another mechanism than the model's (:func:`~bayes_raters.labels.simulate_labels`: three of
six annotators, on a share ``correlation`` of the items, all give the label the first of them
draws), and the correlated model on data whose errors are independent (what it costs there).

``.venv/bin/python -m validation.labels_correlated --seeds 10`` prints, per design and model, the
share of items whose most probable class is right, the expected calibration error of the soft
labels against the true classes, and how many fits converged (``models/labels.md`` holds the
table).
"""

from __future__ import annotations

import argparse
import time
import warnings

import pandas as pd

from bayes_raters.errors import BoundWarning
from bayes_raters.labels import fit_labels, simulate_labels

#: The three annotators who err together are one kind; the other three are left out (independent).
LLMS = {"annotator3": "llm", "annotator4": "llm", "annotator5": "llm"}
#: The fits compared: (name, model, annotator_kind).
FITS = (("dawid-skene", "dawid-skene", None), ("correlated", "correlated", LLMS),
        ("correlated, humans one kind", "correlated", LLMS | {f"annotator{a}": "human" for a in range(3)}))


def one_seed(seed: int, n_items: int, correlated: int) -> list[dict]:
    """Every fit of :data:`FITS` on one simulated data set."""
    sim = simulate_labels(n_items=n_items, n_annotators=6, n_classes=3, correlated=correlated, correlation=0.5, random_seed=seed)
    truth = sim["classes"].astype(str)
    rows = []
    for name, model, kinds in FITS:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BoundWarning)
            fit = fit_labels(sim["labels"], model, annotator_kind=kinds, random_seed=seed, progressbar=False)
        items = fit.item_table()
        rows.append({"design": "3 err together" if correlated else "independent", "fit": name, "seed": seed,
                     "right": float((items["map_class"] == truth).mean()), "ece": fit.calibration_table(truth).attrs["ece"],
                     "converged": fit.convergence.converged, "seconds": time.perf_counter() - start})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--items", type=int, default=600)
    args = parser.parse_args()
    rows = [row for correlated in (3, 0) for seed in range(args.seeds) for row in one_seed(seed, args.items, correlated)]
    frame = pd.DataFrame(rows)
    summary = frame.groupby(["design", "fit"], sort=False).agg(
        right_mean=("right", "mean"), right_min=("right", "min"), ece_mean=("ece", "mean"), ece_max=("ece", "max"),
        converged=("converged", "sum"), fits=("converged", "size"), seconds=("seconds", "median"))
    print(summary.round(3).to_string())


if __name__ == "__main__":
    main()
