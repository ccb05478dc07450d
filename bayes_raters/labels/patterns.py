r"""Items with the same labels are one term: the label patterns, the sufficient statistics of the
Dawid-Skene family.

An item's contribution to the likelihood, :math:`\log\sum_k \pi_k\prod_{a,l}\theta_{akl}^{n_{ial}}`,
depends on the item only through its counts :math:`n_{i\cdot\cdot}` (and its gold class, where it
has one). Items with the same counts and gold class share a *pattern* :math:`p` with weight
:math:`w_p` (the number of such items), and

.. math:: \log p(y) = \sum_p w_p \operatorname{logsumexp}_k\Big(\log\pi_k + g_{pk}
   + \sum_{a,l} n_{pal}\log\theta_{akl}\Big),

with :math:`g_{pk} = 0` for every class of an item without gold and :math:`-\infty` off the gold
class. The same number, at the cost of the distinct patterns instead of the items: 100,000
simulated items labelled by 10 annotators into 3 classes have about 15,000 patterns
(``models/labels.md``). Items are grouped where items x annotators x labels fits a dense count
array (:data:`DENSE_MAX`); beyond, each item is its own pattern (sparse designs, where two items
rarely share their annotators).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bayes_raters.labels.data import NO_GOLD, LabelsData

#: The largest items x annotators x classes count array grouped into patterns (int16 entries:
#: 100 million is 200 MB, ten million labels of 10 annotators into 3 classes).
DENSE_MAX = 100_000_000


@dataclass(frozen=True)
class LabelPatterns:
    """The distinct label patterns: ``item_pattern`` (items,) each item's pattern; ``weight``
    (patterns,) how many items share it; ``gold`` (patterns,) its gold class index or
    :data:`NO_GOLD`; and its labels as triples ``pattern``, ``annotator``, ``label``, ``count``
    (each (triples,))."""

    item_pattern: np.ndarray
    weight: np.ndarray
    gold: np.ndarray
    pattern: np.ndarray
    annotator: np.ndarray
    label: np.ndarray
    count: np.ndarray

    @property
    def n_patterns(self) -> int:
        """The number of distinct patterns."""
        return len(self.weight)

    def gold_mask(self, n_classes: int) -> np.ndarray:
        """(patterns, classes): 0 where a class is possible, ``-inf`` off a pattern's gold class."""
        mask = np.zeros((self.n_patterns, n_classes))
        has = self.gold != NO_GOLD
        mask[has] = -np.inf
        mask[np.flatnonzero(has), self.gold[has]] = 0.0
        return mask


def item_triples(data: LabelsData) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The distinct ``(item, annotator, label)`` index triples, sorted by item, and how often each was given."""
    n_a, n_l = len(data.annotators), len(data.labels)
    key = (data.item_index.astype(np.int64) * n_a + data.annotator_index) * n_l + data.label_index
    unique, counts = np.unique(key, return_counts=True)
    item, rest = np.divmod(unique, n_a * n_l)
    annotator, label = np.divmod(rest, n_l)
    return item, annotator, label, counts.astype(float)


def label_patterns(data: LabelsData, gold: np.ndarray | None = None) -> LabelPatterns:
    """The patterns of ``data`` (``gold``: (items,) gold class index or :data:`NO_GOLD`; None,
    no gold), grouped where the dense count array stays under :data:`DENSE_MAX` entries."""
    n_items, n_a, n_l = len(data.items), len(data.annotators), len(data.labels)
    gold = np.full(n_items, NO_GOLD) if gold is None else np.asarray(gold, dtype=np.int64)
    item, annotator, label, count = item_triples(data)
    if n_items * (n_a * n_l + 1) > DENSE_MAX or count.max() > np.iinfo(np.int16).max:
        return LabelPatterns(item_pattern=np.arange(n_items), weight=np.ones(n_items), gold=gold, pattern=item,
                             annotator=annotator, label=label, count=count)
    dense = np.zeros((n_items, n_a * n_l + 1), dtype=np.int16)
    dense[item, annotator * n_l + label] = count
    dense[:, -1] = gold
    rows = np.ascontiguousarray(dense).view(np.dtype((np.void, dense.itemsize * dense.shape[1]))).ravel()
    _, first, item_pattern, weight = np.unique(rows, return_index=True, return_inverse=True, return_counts=True)
    distinct = dense[first, :-1]
    pattern, column = np.nonzero(distinct)
    return LabelPatterns(item_pattern=item_pattern.ravel(), weight=weight.astype(float), gold=dense[first, -1].astype(np.int64),
                         pattern=pattern, annotator=column // n_l, label=column % n_l, count=distinct[pattern, column].astype(float))
