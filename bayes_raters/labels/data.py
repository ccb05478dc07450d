"""Categorical labels from several annotators per item, validated and laid out as index arrays
(:class:`LabelsData`): long rows ``(item, annotator, label)``, an annotator may label an item more
than once (Dawid & Skene's first anaesthetist saw each patient three times), and the classes are
the labels seen or a declared list.

Bad input gets an :class:`~bayes_raters.errors.InvalidInputError` naming the column and the rows:
a missing item, annotator or label, a label outside the declared classes, fewer than two classes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from bayes_raters.data import id_column, quote_rows, require_columns, require_frame
from bayes_raters.errors import InvalidInputError

LABELS = "labels"


@dataclass(frozen=True)
class LabelsData:
    """The validated rows and their layout: ``rows`` (``item``, ``annotator``, ``label`` as
    strings); ``items`` and ``annotators`` in order of first appearance, ``classes`` declared or
    seen; the index arrays ``item_index``, ``annotator_index`` and ``label_index`` into them."""

    rows: pd.DataFrame
    classes: pd.Index
    items: pd.Index
    annotators: pd.Index
    item_index: np.ndarray
    annotator_index: np.ndarray
    label_index: np.ndarray

    def counts(self) -> np.ndarray:
        """(items, annotators, classes): how often each annotator gave each item each label."""
        out = np.zeros((len(self.items), len(self.annotators), len(self.classes)))
        np.add.at(out, (self.item_index, self.annotator_index, self.label_index), 1.0)
        return out


def _class_index(labels: pd.Series, classes) -> pd.Index:
    """The declared ``classes`` as strings, or the labels seen (sorted as numbers where every
    label is one, else as text)."""
    if classes is not None:
        return pd.Index([str(c) for c in classes], name="class")
    seen = pd.unique(labels)
    numeric = pd.to_numeric(pd.Series(seen), errors="coerce")
    order = np.argsort(numeric.to_numpy(), kind="stable") if numeric.notna().all() else np.argsort(seen.astype(str), kind="stable")
    return pd.Index([str(seen[i]) for i in order], name="class")


def labels_data(labels: pd.DataFrame, *, item: str = "item", annotator: str = "annotator", label: str = "label",
                classes=None) -> LabelsData:
    """Validate long ``labels`` (one row per label given: ``item``, ``annotator``, ``label``
    columns) against the declared ``classes`` (default: the labels seen; at least two)."""
    table = require_frame(labels, LABELS)
    require_columns(table, {"item": item, "annotator": annotator, "label": label}, LABELS)
    if table.empty:
        raise InvalidInputError(f"{LABELS}: the table has no rows.")
    rows = pd.DataFrame({role: id_column(table, column, LABELS).astype(str).to_numpy() for role, column in
                         (("item", item), ("annotator", annotator), ("label", label))})
    names = _class_index(rows["label"], classes)
    if len(names) < 2:
        raise InvalidInputError(f"{LABELS}: column {label!r} holds one class ({names[0]!r}); declare the classes (classes=[...]) "
                                "or pass labels of two classes at least.")
    unknown = ~rows["label"].isin(names)
    if unknown.any():
        raise InvalidInputError(f"{LABELS}: column {label!r} has labels outside the declared classes {list(names)}: "
                                f"{quote_rows(table, unknown.to_numpy())}.")
    items, annotators = pd.Index(pd.unique(rows["item"]), name="item"), pd.Index(pd.unique(rows["annotator"]), name="annotator")
    return LabelsData(rows=rows, classes=names, items=items, annotators=annotators, item_index=items.get_indexer(rows["item"]),
                      annotator_index=annotators.get_indexer(rows["annotator"]), label_index=names.get_indexer(rows["label"]))
