"""Checks of a labels fit: chains whose classes switched, and annotators worse than chance.

Label switching. The likelihood is the same when the classes are permuted with the rows of every
confusion matrix; the priors (:mod:`bayes_raters.labels.model`) make "annotators mostly right"
the mode, and the chains start there. A chain that crossed to a permuted mode anyway reads each
class as another: in the chain's posterior mean of the annotators' average confusion matrix,
the assignment of true classes to labels with the largest total probability
(:func:`scipy.optimize.linear_sum_assignment`) is then not the identity.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr
from scipy.optimize import linear_sum_assignment

from bayes_raters.errors import BoundWarning, ConvergenceWarning

#: An annotator is named worse than chance where its accuracy is below 1 / classes with at least
#: this posterior probability.
WORSE_THAN_CHANCE = 0.95


def switched_chains(confusion: xr.DataArray) -> dict[int, list[int]]:
    """Chains whose classes are permuted: chain -> the label each true class reads as (the
    assignment of the module docstring), for the chains where it is not the identity.
    ``confusion``: (chain, draw, annotator, true_class, label)."""
    mean = confusion.mean(("draw", "annotator")).transpose("chain", "true_class", "label").values
    out = {}
    for chain, matrix in enumerate(mean):
        _, labels = linear_sum_assignment(-matrix[:, : len(matrix)])  # the labels that are classes
        if (labels != np.arange(len(labels))).any():
            out[chain] = labels.tolist()
    return out


def warn_switched(switched: dict[int, list[int]], classes) -> None:
    """A :class:`~bayes_raters.errors.ConvergenceWarning` naming the switched chains."""
    if not switched:
        return
    text = "; ".join(f"chain {c}: " + ", ".join(f"{classes[k]}->{classes[j]}" for k, j in enumerate(p) if k != j)
                     for c, p in switched.items())
    warnings.warn(f"label switching: the classes of some chains are permuted (true class -> the label it reads as): {text}. "
                  "Their draws are of a mirror mode where annotators are mostly wrong; refit with another random_seed, "
                  "or with a stronger diagonal in confusion_concentration.", ConvergenceWarning, stacklevel=3)


def worse_than_chance(accuracy: xr.DataArray, n_classes: int) -> xr.DataArray:
    """Per annotator, whether its accuracy is below chance (1 / classes) with posterior
    probability at least :data:`WORSE_THAN_CHANCE`."""
    return (accuracy < 1 / n_classes).mean(("chain", "draw")) >= WORSE_THAN_CHANCE


def warn_worse_than_chance(flags: xr.DataArray) -> None:
    """A :class:`~bayes_raters.errors.BoundWarning` naming annotators worse than chance."""
    names = [str(a) for a in flags["annotator"].values[flags.values]]
    if names:
        warnings.warn(f"annotators worse than chance (accuracy below 1 / classes with posterior probability >= {WORSE_THAN_CHANCE}): "
                      f"{names}. The model reads their labels through their confusion matrices (an adversarial or "
                      "reversed annotator still informs); check their instructions or label mapping.", BoundWarning, stacklevel=3)
