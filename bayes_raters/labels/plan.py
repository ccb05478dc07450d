r"""Which items to send for another label, and when to stop.

One more label :math:`l` of item :math:`i` from annotator :math:`a` tells about the item's class
:math:`z_i` the mutual information

.. math:: I_{ia} = \sum_k \sum_l p_{ik}\,\theta_{akl}\,\log\frac{\theta_{akl}}{q_{ial}}, \qquad
   q_{ial} = \sum_k p_{ik}\theta_{akl},

the expected drop of the entropy of the item's class probabilities :math:`p_{i\cdot}` (its soft
labels), in nats, with :math:`\theta_a` the annotator's posterior mean confusion matrix (with many
items per annotator the confusion is far better known than any one item's class, so its
uncertainty is left out). For ``model="correlated"`` :math:`\theta_a` is the confusion with the
kind's reading summed out, which takes the next label as independent of the item's other labels:
a label from a kind that already labelled the item tells less than this says (its reading is
shared), so prefer annotators of another kind there. Items are ranked by the information the best available annotator gives
(or a named one); an item is *settled* when its most probable class has probability at least
``confident``, and the labelling can stop when every item is settled or no label would tell more
than ``min_information``. ``validation/labels_plan.py`` checks the expected entropy drop against
refits with the new labels drawn from the true confusion matrices.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayes_raters.errors import InvalidInputError

#: An item is settled when its most probable class has at least this probability.
CONFIDENT = 0.95


def label_information(soft: np.ndarray, confusion: np.ndarray) -> np.ndarray:
    """(items, annotators): the mutual information of the module docstring, from the soft labels
    (items, classes) and the confusion matrices (annotators, classes, labels)."""
    joint = soft[:, None, :, None] * confusion[None]  # (items, annotators, classes, labels)
    marginal = joint.sum(axis=2, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(joint > 0, joint * (np.log(confusion[None]) - np.log(marginal)), 0.0)
    return terms.sum(axis=(2, 3))


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
    confusion = result.posterior["confusion"].mean(("chain", "draw")).sel(annotator=names).transpose("annotator", "true_class", "label").values
    information = label_information(soft, confusion)
    best = information.argmax(axis=1)
    frame = pd.DataFrame({"p_map": items["p_map"].to_numpy(), "entropy": entropy(soft), "information": information.max(axis=1),
                          "annotator": np.asarray(names)[best], "settled": items["p_map"].to_numpy() >= confident}, index=items.index)
    ranked = frame.sort_values("information", ascending=False, kind="stable")
    out = ranked.head(n).copy()
    out.attrs["stop"] = bool(frame["settled"].all() or frame["information"].max() < min_information)
    return out
