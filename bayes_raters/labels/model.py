r"""The Dawid-Skene family: each item's true class summed out exactly.

Item :math:`i` has true class :math:`z_i \in \{1, \dots, K\}` with prevalence :math:`\pi`;
annotator :math:`a` reports label :math:`l` for an item of class :math:`k` with probability
:math:`\theta_{akl}` (row :math:`k` of its confusion matrix). With :math:`n_{ial}` the number of
times annotator :math:`a` gave item :math:`i` label :math:`l`,

.. math:: \log p(y) = \sum_i \log \sum_k \pi_k \prod_{a,l} \theta_{akl}^{n_{ial}}
   = \sum_i \operatorname{logsumexp}_k \Big(\log\pi_k + \sum_{a,l} n_{ial} \log\theta_{akl}\Big),

Dawid & Skene (1979). ``"dawid-skene"``: a full confusion matrix per annotator, each row
Dirichlet; ``"one-coin"``: one accuracy :math:`q_a` per annotator, :math:`\theta_{akk} = q_a`
and the other labels :math:`(1 - q_a)/(K - 1)` each. The sum over classes runs over the distinct
``(item, annotator, label)`` triples with their counts, so its cost grows with the labels given,
not with items x annotators.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from bayes_raters.errors import InvalidInputError
from bayes_raters.labels.data import LabelsData

Model = Literal["dawid-skene", "one-coin"]


def distinct_triples(data: LabelsData) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The distinct ``(item, annotator, label)`` index triples and how often each was given."""
    keys = np.stack([data.item_index, data.annotator_index, data.label_index], axis=1)
    unique, counts = np.unique(keys, axis=0, return_counts=True)
    return unique[:, 0], unique[:, 1], unique[:, 2], counts.astype(float)


def class_log_likelihood(log_theta, item, annotator, label, count, n_items: int, lib=pt):
    r"""(items, classes): :math:`\sum_{a,l} n_{ial}\log\theta_{akl}` for every item and class
    (``log_theta``: annotators x classes x labels; the triples of :func:`distinct_triples`),
    PyTensor or NumPy (``lib``)."""
    per_triple = count[:, None] * log_theta[annotator, :, label]
    if lib is np:
        out = np.zeros((n_items, log_theta.shape[1]))
        np.add.at(out, item, per_triple)
        return out
    return pt.zeros((n_items, log_theta.shape[1]))[item].inc(per_triple)


def one_coin_log_theta(accuracy, n_classes: int):
    """(annotators, classes, labels) log confusion of the one-coin model."""
    eye = np.eye(n_classes)
    off = pt.log((1 - accuracy) / (n_classes - 1))
    return eye[None] * pt.log(accuracy)[:, None, None] + (1 - eye)[None] * off[:, None, None]


def build_labels_model(data: LabelsData, model: Model = "dawid-skene", *, prevalence_concentration=None,
                       confusion_concentration=None) -> pm.Model:
    """The PyMC model of the module docstring (coords ``item``, ``annotator``, ``true_class``,
    ``label``), not sampled. ``prevalence_concentration`` (classes,) and
    ``confusion_concentration`` (classes x labels; for ``"one-coin"`` the Beta(a, b) pair of the
    accuracy) default to ones: flat priors, whose posterior mode is the maximum likelihood that
    EM finds."""
    if model not in ("dawid-skene", "one-coin"):
        raise InvalidInputError(f"model must be 'dawid-skene' or 'one-coin', got {model!r}.")
    n_classes = len(data.classes)
    coords = {"item": list(data.items), "annotator": list(data.annotators), "true_class": list(data.classes), "label": list(data.classes)}
    item, annotator, label, count = distinct_triples(data)
    alpha = np.ones(n_classes) if prevalence_concentration is None else np.asarray(prevalence_concentration, float)
    with pm.Model(coords=coords) as labels_model:
        prevalence = pm.Dirichlet("prevalence", alpha, dims="true_class")
        if model == "dawid-skene":
            rows = np.ones((n_classes, n_classes)) if confusion_concentration is None else np.asarray(confusion_concentration, float)
            confusion = pm.Dirichlet("confusion", np.broadcast_to(rows, (len(data.annotators), n_classes, n_classes)),
                                     dims=("annotator", "true_class", "label"))
            log_theta = pt.log(confusion)
        else:
            a, b = (1.0, 1.0) if confusion_concentration is None else confusion_concentration
            accuracy = pm.Beta("accuracy", a, b, dims="annotator")
            log_theta = one_coin_log_theta(accuracy, n_classes)
        by_class = pt.log(prevalence)[None, :] + class_log_likelihood(log_theta, item, annotator, label, count, len(data.items))
        pm.Potential("labels_loglik", pt.sum(pt.logsumexp(by_class, axis=1)))
    labels_model.labels = {"data": data, "model": model}
    return labels_model


def class_posterior(log_prevalence: np.ndarray, log_theta: np.ndarray, data: LabelsData) -> np.ndarray:
    """(items, classes): each item's class probabilities given one value of the parameters
    (NumPy), the soft labels."""
    by_class = log_prevalence[None, :] + class_log_likelihood(log_theta, *distinct_triples(data), len(data.items), lib=np)
    by_class -= by_class.max(axis=1, keepdims=True)
    weights = np.exp(by_class)
    return weights / weights.sum(axis=1, keepdims=True)


def majority_vote_start(data: LabelsData, floor: float = 1e-4) -> dict:
    """A starting point off the symmetric saddle: each item's label shares as its class
    probabilities (the majority vote, soft), then the prevalence and confusion matrices they
    imply (one M-step of EM, as crowd-kit starts), every entry at least ``floor`` so that the
    simplex transforms stay finite. At the symmetric point (every row uniform) the gradient
    vanishes by the classes' exchangeability, and an optimiser started there stays."""
    item, annotator, label, count = distinct_triples(data)
    n_classes = len(data.classes)
    soft = np.zeros((len(data.items), n_classes))
    np.add.at(soft, (item, label), count)
    soft /= soft.sum(axis=1, keepdims=True)
    prevalence = np.maximum(soft.mean(axis=0), floor)
    confusion = np.zeros((len(data.annotators), n_classes, n_classes))
    np.add.at(confusion, (annotator, slice(None), label), count[:, None] * soft[item])
    confusion += floor
    return {"prevalence": prevalence / prevalence.sum(), "confusion": confusion / confusion.sum(axis=2, keepdims=True)}
