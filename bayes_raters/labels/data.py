"""Categorical labels from several annotators per item, validated and laid out as index arrays
(:class:`LabelsData`): long rows ``(item, annotator, label)``, an annotator may label an item more
than once (Dawid & Skene's first anaesthetist saw each patient three times), and the classes are
the labels seen or a declared list. Annotators may also give labels that are not classes
(``other_labels``, e.g. "Unsure" beside the classes "No" and "Yes"): the labels are the classes
followed by the other labels, so class :math:`k` is label :math:`k`.

Labels are matched to declared classes as text, or as numbers where both are numbers (a label
``1.0`` read from a file is class ``1``). Gold classes (:func:`gold_classes`) come as a table
``(item, label)``, a Series indexed by item or a dict.

Bad input gets an :class:`~bayes_raters.errors.InvalidInputError` naming the column and the rows:
a missing item, annotator or label, a label outside the declared classes, fewer than two classes,
a gold item that has no labels or two gold classes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from bayes_raters.data import id_column, quote_rows, require_columns, require_frame
from bayes_raters.errors import InvalidInputError

LABELS = "labels"
GOLD = "gold"
NO_GOLD = -1


@dataclass(frozen=True)
class LabelsData:
    """The validated rows and their layout: ``rows`` (``item``, ``annotator``, ``label`` as
    strings); ``items`` and ``annotators`` in order of first appearance, ``classes`` declared or
    seen, ``labels`` the classes followed by the labels that are not classes; the index arrays
    ``item_index``, ``annotator_index`` and ``label_index`` (into ``labels``)."""

    rows: pd.DataFrame
    classes: pd.Index
    items: pd.Index
    annotators: pd.Index
    item_index: np.ndarray
    annotator_index: np.ndarray
    label_index: np.ndarray
    labels: pd.Index

    @property
    def other_labels(self) -> list[str]:
        """The labels that are not classes."""
        return list(self.labels[len(self.classes):])

    def counts(self) -> np.ndarray:
        """(items, annotators, labels): how often each annotator gave each item each label."""
        out = np.zeros((len(self.items), len(self.annotators), len(self.labels)))
        np.add.at(out, (self.item_index, self.annotator_index, self.label_index), 1.0)
        return out


def _class_index(labels: pd.Series, classes, other_labels=()) -> pd.Index:
    """The declared ``classes`` as strings, or the labels seen but ``other_labels`` (sorted as
    numbers where every label is one, else as text)."""
    if classes is not None:
        return pd.Index([str(c) for c in classes], name="class")
    seen = pd.unique(labels[~labels.isin([str(o) for o in other_labels])])
    numeric = pd.to_numeric(pd.Series(seen), errors="coerce")
    order = np.argsort(numeric.to_numpy(), kind="stable") if numeric.notna().all() else np.argsort(seen.astype(str), kind="stable")
    return pd.Index([str(seen[i]) for i in order], name="class")


def _as_declared(labels: pd.Series, names: pd.Index) -> pd.Series:
    """``labels`` as the declared class names: as text, or by numeric value where a label does not
    match as text and both it and every class are numbers."""
    if labels.isin(names).all():
        return labels
    numbers = pd.to_numeric(pd.Series(names), errors="coerce")
    if numbers.isna().any() or numbers.duplicated().any():
        return labels
    by_value = dict(zip(numbers.to_numpy(), names, strict=True))
    values = pd.to_numeric(labels, errors="coerce")
    matched = values.map(by_value)
    return labels.where(labels.isin(names) | matched.isna(), matched)


def labels_data(labels: pd.DataFrame, *, item: str = "item", annotator: str = "annotator", label: str = "label",
                classes=None, other_labels=None) -> LabelsData:
    """Validate long ``labels`` (one row per label given: ``item``, ``annotator``, ``label``
    columns) against the declared ``classes`` (default: the labels seen but ``other_labels``; at
    least two) and ``other_labels`` (labels an annotator may give that are not classes)."""
    table = require_frame(labels, LABELS)
    require_columns(table, {"item": item, "annotator": annotator, "label": label}, LABELS)
    if table.empty:
        raise InvalidInputError(f"{LABELS}: the table has no rows.")
    rows = pd.DataFrame({role: id_column(table, column, LABELS).astype(str).to_numpy() for role, column in
                         (("item", item), ("annotator", annotator), ("label", label))})
    others = [str(o) for o in (other_labels or ())]
    names = _class_index(rows["label"], classes, others)
    if len(names) < 2:
        raise InvalidInputError(f"{LABELS}: column {label!r} holds one class ({names[0] if len(names) else None!r}); declare the classes "
                                "(classes=[...]) or pass labels of two classes at least.")
    both = sorted(set(names) & set(others))
    if both or len(set(others)) < len(others):
        raise InvalidInputError(f"other_labels must be labels that are not classes, each once; got {others} with the classes {list(names)}.")
    every = pd.Index([*names, *others], name="label")
    rows["label"] = _as_declared(rows["label"], every)
    unknown = ~rows["label"].isin(every)
    if unknown.any():
        where = f"the declared classes {list(names)}" + (f" and other labels {others}" if others else "")
        raise InvalidInputError(f"{LABELS}: column {label!r} has labels outside {where}: {quote_rows(table, unknown.to_numpy())}. "
                                "A label that is not a class (e.g. 'Unsure') goes in other_labels=[...].")
    items, annotators = pd.Index(pd.unique(rows["item"]), name="item"), pd.Index(pd.unique(rows["annotator"]), name="annotator")
    return LabelsData(rows=rows, classes=names, items=items, annotators=annotators, item_index=items.get_indexer(rows["item"]),
                      annotator_index=annotators.get_indexer(rows["annotator"]), label_index=every.get_indexer(rows["label"]), labels=every)


def kind_layout(kinds) -> tuple[list[str], np.ndarray]:
    """``(names, index)``: the distinct kinds in order of first appearance and each entry's index
    into them (``kinds``: one kind per annotator)."""
    names = list(dict.fromkeys(kinds))
    return names, np.asarray([names.index(k) for k in kinds], dtype=np.int64)


def gold_classes(data: LabelsData, gold, *, item: str = "item", label: str = "label") -> np.ndarray:
    """(items,): each item's gold class index into ``data.classes``, or :data:`NO_GOLD`.
    ``gold``: a table with ``item`` and ``label`` columns, a Series indexed by item, or a dict;
    every gold item must have labels in ``data`` and one gold class."""
    if isinstance(gold, dict):
        gold = pd.Series(gold)
    if isinstance(gold, pd.Series):
        gold = pd.DataFrame({item: gold.index, label: gold.to_numpy()})
    table = require_frame(gold, GOLD)
    require_columns(table, {"item": item, "label": label}, GOLD)
    items = id_column(table, item, GOLD).astype(str)
    classes = _as_declared(id_column(table, label, GOLD).astype(str), data.classes)
    for mask, why in ((~items.isin(data.items).to_numpy(), "items with no labels in the labels table"),
                      (~classes.isin(data.classes).to_numpy(), f"gold classes outside the classes {list(data.classes)}")):
        if mask.any():
            raise InvalidInputError(f"{GOLD}: {why}: {quote_rows(table, mask)}.")
    pairs = pd.DataFrame({"item": items.to_numpy(), "label": classes.to_numpy()}).drop_duplicates()
    twice = pairs["item"].duplicated(keep=False).to_numpy()
    if twice.any():
        raise InvalidInputError(f"{GOLD}: items with two gold classes: {quote_rows(table, table[item].astype(str).isin(pairs['item'][twice]).to_numpy())}.")
    out = np.full(len(data.items), NO_GOLD)
    out[data.items.get_indexer(pairs["item"])] = data.classes.get_indexer(pairs["label"])
    return out
