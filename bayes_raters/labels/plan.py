r"""Which items to send for another label, and when to stop.

One more label :math:`l` of item :math:`i` from annotator :math:`a` tells about the item's class
:math:`z_i` the mutual information

.. math:: I_{ia} = \sum_k \sum_l p_{ik}\,\theta_{akl}\,\log\frac{\theta_{akl}}{q_{ial}}, \qquad
   q_{ial} = \sum_k p_{ik}\theta_{akl},

the expected drop of the entropy of the item's class probabilities :math:`p_{i\cdot}` (its soft
labels), in nats, with :math:`\theta_a` the annotator's posterior mean confusion matrix (with many
items per annotator the confusion is far better known than any one item's class, so its
uncertainty is left out). For ``model="correlated"`` :math:`\theta_{akl}` is, per item, the
probability of the next label given the class and the item's labels so far (the kind's reading
of the item summed out given both, :func:`~bayes_raters.labels.correlated.next_label_confusion`):
a kind that already read the item tells less with its next annotator. Items are ranked by the
information the best available annotator gives (or a named one); an item is *settled* when its most probable class has probability at least
``confident``, and the labelling can stop when every item is settled or no label would tell more
than ``min_information``. ``validation/labels_plan.py`` checks the expected entropy drop against
refits with the new labels drawn from the true confusion matrices.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayes_raters.errors import InvalidInputError
from bayes_raters.labels.correlated import next_label_confusion
from bayes_raters.labels.draws import flat_draws, pattern_matrix

#: An item is settled when its most probable class has at least this probability.
CONFIDENT = 0.95


def label_information(soft: np.ndarray, confusion: np.ndarray) -> np.ndarray:
    """(items, annotators): the mutual information of the module docstring, from the soft labels
    (items, classes) and the confusion matrices (annotators, classes, labels), or one set per
    item (items, annotators, classes, labels)."""
    confusion = confusion if confusion.ndim == 4 else confusion[None]
    joint = soft[:, None, :, None] * confusion  # (items, annotators, classes, labels)
    marginal = joint.sum(axis=2, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(joint > 0, joint * (np.log(confusion) - np.log(marginal)), 0.0)
    return terms.sum(axis=(2, 3))


def next_label_confusions(result) -> np.ndarray:
    """The confusion matrices of the next label at the posterior means: (annotators, classes,
    labels), or for ``"correlated"`` one set per label pattern (patterns, annotators, classes,
    labels)."""
    posterior = result.posterior.mean(("chain", "draw"))
    if "kind_reading" not in posterior:
        return posterior["confusion"].transpose("annotator", "true_class", "label").values
    mean = posterior.expand_dims(chain=[0], draw=[0])
    draws = flat_draws(mean, result.spec.kinds)
    matrix = pattern_matrix(result.patterns, len(result.data.annotators), len(result.data.labels))
    return next_label_confusion(matrix, draws.log_theta[0], draws.layer[0], draws.kind_index)


def entropy(soft: np.ndarray) -> np.ndarray:
    """(items,): the entropy of each item's class probabilities, in nats."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.where(soft > 0, soft * np.log(soft), 0.0).sum(axis=1)


def next_items(result, n: int = 20, annotators=None, confident: float = CONFIDENT, min_information: float = 0.01) -> pd.DataFrame:
    """The ``n`` items whose next label tells most about their class: one row per item with
    ``p_map``, ``entropy`` (nats), ``information`` (the expected entropy drop from one label of
    the best of ``annotators``; default every annotator of the fit), ``annotator`` (that one) and
    ``settled``; ``attrs["stop"]`` says whether labelling can stop (every item settled, or no
    label tells more than ``min_information``)."""
    items = result.item_table()
    soft = items[[f"p_{k}" for k in result.classes]].to_numpy()
    names = list(result.data.annotators) if annotators is None else [str(a) for a in annotators]
    unknown = [a for a in names if a not in result.data.annotators]
    if unknown:
        raise InvalidInputError(f"annotators not in the fit: {unknown}; it has {list(result.data.annotators)[:10]}.")
    chosen = [list(result.data.annotators).index(a) for a in names]
    confusion = next_label_confusions(result)
    if confusion.ndim == 4:  # one set per label pattern: the items of a pattern share their soft labels
        item_pattern = result.patterns.item_pattern
        _, first = np.unique(item_pattern, return_index=True)
        information = label_information(soft[first], confusion[:, chosen])[item_pattern]
    else:
        information = label_information(soft, confusion[chosen])
    best = information.argmax(axis=1)
    frame = pd.DataFrame({"p_map": items["p_map"].to_numpy(), "entropy": entropy(soft), "information": information.max(axis=1),
                          "annotator": np.asarray(names)[best], "settled": items["p_map"].to_numpy() >= confident}, index=items.index)
    ranked = frame.sort_values("information", ascending=False, kind="stable")
    out = ranked.head(n).copy()
    out.attrs["stop"] = bool(frame["settled"].all() or frame["information"].max() < min_information)
    return out
