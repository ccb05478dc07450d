"""Simulated categorical labels, from other distributions than the priors of
:mod:`bayes_raters.labels.model`: accuracies uniform on an interval, errors spread unevenly over the
wrong labels, optionally skewed prevalence, spammers (every label at random), adversarial
annotators (worse than chance) and a group of annotators whose errors coincide (as LLM
annotators' do), which breaks the model's conditional independence."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayes_raters.errors import InvalidInputError
from bayes_raters.results import draw_categories, seeded_rng


def confusion_matrices(accuracy: np.ndarray, n_classes: int, rng: np.random.Generator) -> np.ndarray:
    """(annotators, classes, labels): ``accuracy`` on the diagonal, the rest of each row split
    over the wrong labels by a flat Dirichlet draw (errors uneven, not the one-coin model's)."""
    confusion = np.empty((len(accuracy), n_classes, n_classes))
    for a, q in enumerate(accuracy):
        for k in range(n_classes):
            wrong = rng.dirichlet(np.ones(n_classes - 1))
            confusion[a, k] = np.insert((1 - q) * wrong, k, q)
    return confusion


def simulate_labels(n_items: int = 500, n_annotators: int = 5, n_classes: int = 3, *, prevalence=None, accuracy=(0.6, 0.9),
                    labels_per_item: int | None = None, spammers: int = 0, adversarial: int = 0, correlated: int = 0,
                    correlation: float = 0.5, random_seed=None) -> dict:
    """Labels of ``n_items`` items by ``n_annotators`` annotators (each item by
    ``labels_per_item`` of them at random; None, by all).

    ``prevalence``: the classes' shares (default flat); ``accuracy``: each annotator's accuracy
    drawn uniformly from this interval; the first ``spammers`` annotators label at random, the
    next ``adversarial`` have accuracy 0.1 with their errors on one wrong label per class (worse
    than chance); the last ``correlated`` annotators share their errors: on each item, with
    probability ``correlation``, they all give the label the first of them draws.

    Returns a dict: ``labels`` (long table item, annotator, label), ``classes`` (each item's
    true class, a Series), ``prevalence`` and ``confusion`` (annotators, classes, labels)."""
    if spammers + adversarial + correlated > n_annotators:
        raise InvalidInputError("spammers + adversarial + correlated exceed n_annotators.")
    rng = seeded_rng(random_seed)
    prevalence = np.full(n_classes, 1 / n_classes) if prevalence is None else np.asarray(prevalence, float)
    accuracies = rng.uniform(*accuracy, size=n_annotators)
    confusion = confusion_matrices(accuracies, n_classes, rng)
    confusion[:spammers] = 1 / n_classes
    for a in range(spammers, spammers + adversarial):
        confusion[a] = 0.1 * np.eye(n_classes) + 0.9 * np.roll(np.eye(n_classes), 1, axis=1)
    z = draw_categories(np.broadcast_to(prevalence, (n_items, n_classes)), rng)
    per_item = n_annotators if labels_per_item is None else labels_per_item
    annotators = (np.tile(np.arange(n_annotators), n_items) if per_item == n_annotators
                  else rng.random((n_items, n_annotators)).argsort(axis=1)[:, :per_item].ravel())
    items = np.repeat(np.arange(n_items), per_item)
    labels = draw_categories(confusion[annotators, z[items]], rng)
    if correlated:
        group = np.arange(n_annotators - correlated, n_annotators)
        shared_label = draw_categories(confusion[group[0], z], rng)
        shared = rng.random(n_items) < correlation
        mask = np.isin(annotators, group) & shared[items]
        labels[mask] = shared_label[items[mask]]
    item_names = np.array([f"item{i}" for i in range(n_items)])
    table = pd.DataFrame({"item": item_names[items], "annotator": [f"annotator{a}" for a in annotators], "label": labels})
    return {"labels": table, "classes": pd.Series(z, index=pd.Index(item_names, name="item"), name="class"),
            "prevalence": prevalence, "confusion": confusion}
