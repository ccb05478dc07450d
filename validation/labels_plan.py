"""The labels planner against refits: choose the items whose next label tells most
(:func:`~bayes_raters.labels.plan.next_items`), draw that label from the chosen annotator's TRUE
confusion row of the item's TRUE class (not from the model), refit with the new rows, and compare the
realised drop of the chosen items' class entropy with the planned one; beside, as many random items
labelled by random annotators.

Design: 300 items, 5 annotators (accuracies U(0.55, 0.85), uneven errors), 3 classes, 2 labels per
item; 40 new labels per replication.

Run from the repository root: ``.venv/bin/python -m validation.labels_plan [--replications 4]``.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd

from bayes_raters.labels import fit_labels, simulate_labels
from bayes_raters.labels.plan import entropy
from bayes_raters.results import draw_categories

N_NEW = 40


def one_replication(seed: int) -> dict:
    """Planned and realised entropy drops (nats, summed over the new labels' items) for the
    planner's choice and for random items."""
    rng = np.random.default_rng(seed)
    sim = simulate_labels(n_items=300, n_annotators=5, n_classes=3, accuracy=(0.55, 0.85), labels_per_item=2, random_seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = fit_labels(sim["labels"], random_seed=seed, progressbar=False)
    soft_before = first.item_table()[[f"p_{k}" for k in first.classes]]
    chosen = first.next_items(N_NEW)
    random_items = pd.Index(rng.choice(soft_before.index, N_NEW, replace=False))
    random_annotators = rng.choice(list(first.data.annotators), N_NEW)
    out = {"planned": float(chosen["information"].sum())}
    for name, items, annotators in (("plan", chosen.index, chosen["annotator"].to_numpy()), ("random", random_items, random_annotators)):
        a = np.asarray([int(x.removeprefix("annotator")) for x in annotators])
        z = sim["classes"].loc[items].to_numpy()
        new = draw_categories(sim["confusion"][a, z], rng)
        rows = pd.concat([sim["labels"], pd.DataFrame({"item": items, "annotator": annotators, "label": new})], ignore_index=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            refit = fit_labels(rows, random_seed=seed, progressbar=False)
        soft_after = refit.item_table()[[f"p_{k}" for k in refit.classes]].loc[items].to_numpy()
        out[f"realised_{name}"] = float((entropy(soft_before.loc[items].to_numpy()) - entropy(soft_after)).sum())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=4)
    args = parser.parse_args()
    rows = pd.DataFrame([one_replication(seed) for seed in range(1, args.replications + 1)])
    rows["ratio"] = rows["realised_plan"] / rows["planned"]
    print(rows.round(3).to_string())
    print(f"mean realised / planned {rows['realised_plan'].sum() / rows['planned'].sum():.3f}; "
          f"planned items' drop / random items' drop {rows['realised_plan'].sum() / rows['realised_random'].sum():.2f}")


if __name__ == "__main__":
    main()
