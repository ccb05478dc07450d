r"""The Dawid-Skene family: each item's true class summed out exactly.

Item :math:`i` has true class :math:`z_i \in \{1, \dots, K\}` with prevalence :math:`\pi`;
annotator :math:`a` reports label :math:`l` for an item of class :math:`k` with probability
:math:`\theta_{akl}` (row :math:`k` of its confusion matrix). With :math:`n_{ial}` the number of
times annotator :math:`a` gave item :math:`i` label :math:`l`,

.. math:: \log p(y) = \sum_i \log \sum_k \pi_k \prod_{a,l} \theta_{akl}^{n_{ial}}
   = \sum_i \operatorname{logsumexp}_k \Big(\log\pi_k + \sum_{a,l} n_{ial} \log\theta_{akl}\Big),

Dawid & Skene (1979); a gold item's class is observed, so its sum keeps the gold class only. The
sum runs over the label patterns (:mod:`bayes_raters.labels.patterns`), each once with its weight.

Models (``model``):

- ``"dawid-skene"``: a full confusion matrix per annotator, each row
  :math:`\theta_{ak\cdot} \sim \operatorname{Dirichlet}(\beta_{k\cdot})`;
- ``"one-coin"``: one accuracy :math:`q_a \sim \operatorname{Beta}(a, b)` per annotator,
  :math:`\theta_{akk} = q_a` and the other labels :math:`(1 - q_a)/(K - 1)` each;
- ``"mace"`` (Hovy et al. 2013): annotator :math:`a` knows the class with probability
  :math:`c_a \sim \operatorname{Beta}(a, b)` (its competence) and otherwise picks a label from its
  own strategy :math:`\xi_a \sim \operatorname{Dirichlet}(1)`:
  :math:`\theta_{akl} = c_a [k = l] + (1 - c_a)\xi_{al}`, so an annotator who answers at random
  is told apart from one who errs by class;
- ``"hierarchical"``: confusion matrices pooled toward a population per annotator kind
  (:mod:`bayes_raters.labels.hierarchical`);
- ``"correlated"``: annotators of one kind share a reading of each item, so their errors
  coincide (:mod:`bayes_raters.labels.correlated`).

Priors and how the classes are identified. Every model is unchanged when the classes are
permuted together with the rows of every confusion matrix (label switching); the data cannot tell
"annotators mostly right" from "annotators mostly wrong in a consistent way". The default priors
say which: each confusion row puts an expected :data:`DIAGONAL_SHARE` (0.6) of its mass on the
diagonal with total concentration :data:`ROW_CONCENTRATION` (8), the one-coin accuracy and the
MACE competence are Beta with the same mean and concentration, and the prevalence is
Dirichlet(:data:`PREVALENCE_CONCENTRATION`, 3 each); these are the defaults of the R package
rater (Pullin et al.). The fit starts from the majority vote and checks that no chain switched
(:func:`bayes_raters.labels.checks.switched_chains`). Concentrations of 1 everywhere are flat
priors, whose posterior mode is the maximum likelihood that EM finds (``models/labels.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt

from bayes_raters.errors import InvalidInputError
from bayes_raters.fit_spec import FitSpec
from bayes_raters.labels.correlated import correlated_log_likelihood, correlated_parameters, kind_reading_concentration, reading_kinds
from bayes_raters.labels.data import LabelsData, kind_layout
from bayes_raters.labels.hierarchical import annotator_kinds, hierarchical_log_theta
from bayes_raters.labels.patterns import LabelPatterns, label_patterns

Model = Literal["dawid-skene", "one-coin", "mace", "hierarchical", "correlated"]
MODELS = ("dawid-skene", "one-coin", "mace", "hierarchical", "correlated")
#: The default prevalence prior: Dirichlet with this concentration for every class.
PREVALENCE_CONCENTRATION = 3.0
#: The default confusion prior: each row's total Dirichlet concentration ...
ROW_CONCENTRATION = 8.0
#: ... and the expected share of its mass on the diagonal (the annotator right).
DIAGONAL_SHARE = 0.6


def default_confusion_concentration(n_classes: int, n_labels: int | None = None) -> np.ndarray:
    """(classes, labels): :data:`ROW_CONCENTRATION` split as :data:`DIAGONAL_SHARE` on the
    diagonal (label :math:`k` for class :math:`k`) and the rest evenly over the other labels
    (``n_labels``: the classes and the labels that are not classes; None, the classes)."""
    n_labels = n_classes if n_labels is None else n_labels
    rows = np.full((n_classes, n_labels), ROW_CONCENTRATION * (1 - DIAGONAL_SHARE) / (n_labels - 1))
    np.fill_diagonal(rows, ROW_CONCENTRATION * DIAGONAL_SHARE)
    return rows


def default_accuracy_prior() -> tuple[float, float]:
    """The Beta(a, b) of the one-coin accuracy and the MACE competence: mean
    :data:`DIAGONAL_SHARE`, concentration :data:`ROW_CONCENTRATION`."""
    return ROW_CONCENTRATION * DIAGONAL_SHARE, ROW_CONCENTRATION * (1 - DIAGONAL_SHARE)


def check_model(model: str) -> None:
    """Refuse a model name outside :data:`MODELS`."""
    if model not in MODELS:
        raise InvalidInputError(f"model must be one of {MODELS}, got {model!r}.")


def graph_inputs(patterns: LabelPatterns, n_classes: int) -> dict:
    """The patterns as PyTensor shared variables, static in every axis but the first: the data
    enter the compiled graph as inputs, not constants, so that a data set with the same
    annotators and classes reuses the compiled code (PyTensor's Numba backend keys it by the
    graph and its constants' bytes; ``models/labels.md``)."""
    arrays = {"pattern": patterns.pattern, "annotator": patterns.annotator, "label": patterns.label, "count": patterns.count,
              "weight": patterns.weight, "mask": patterns.gold_mask(n_classes)}
    return {name: pytensor.shared(value, name=f"labels_{name}", shape=(None, *value.shape[1:])) for name, value in arrays.items()}


def pattern_log_likelihood(log_theta, inputs: dict, n_classes: int):
    r"""(patterns, classes): :math:`\sum_{a,l} n_{pal}\log\theta_{akl}` for every pattern and
    class (``log_theta``: annotators x classes x labels; ``inputs``: :func:`graph_inputs`), in PyTensor."""
    per_triple = inputs["count"][:, None] * log_theta[inputs["annotator"], :, inputs["label"]]
    return pt.zeros((inputs["weight"].shape[0], n_classes))[inputs["pattern"]].inc(per_triple)


def one_coin_log_theta(accuracy, n_classes: int, lib=pt, n_labels: int | None = None):
    """(..., annotators, classes, labels) log confusion of the one-coin model (PyTensor or NumPy;
    ``accuracy`` (..., annotators); the other labels share the rest evenly)."""
    n_labels = n_classes if n_labels is None else n_labels
    eye = np.eye(n_classes, n_labels)
    off = lib.log((1 - accuracy) / (n_labels - 1))
    return eye * lib.log(accuracy)[..., None, None] + (1 - eye) * off[..., None, None]


def mace_log_theta(competence, strategy, n_classes: int, lib=pt, n_labels: int | None = None):
    """(..., annotators, classes, labels) log confusion of MACE (PyTensor or NumPy; ``competence``
    (..., annotators), ``strategy`` (..., annotators, labels))."""
    eye = np.eye(n_classes, n_classes if n_labels is None else n_labels)
    theta = competence[..., None, None] * eye + (1 - competence)[..., None, None] * strategy[..., None, :]
    return lib.log(theta)


def log_theta_of(posterior, model: str, n_classes: int, lib=np, n_labels: int | None = None):
    """The log confusion of ``model`` from its parameters (a mapping with the model's variables;
    NumPy arrays with leading draw axes are taken as they are for ``"dawid-skene"``)."""
    if model in ("dawid-skene", "hierarchical", "correlated"):
        return lib.log(posterior["confusion"])
    if model == "one-coin":
        return one_coin_log_theta(posterior["accuracy"], n_classes, lib, n_labels)
    return mace_log_theta(posterior["competence"], posterior["strategy"], n_classes, lib, n_labels)


@dataclass(frozen=True)
class LabelsSpec(FitSpec):
    """What a labels model was fitted with: the model's name, the classes in order, and the prior
    concentrations as used (raveled: the prevalence's (classes,), the confusion's (classes x
    labels) for ``"dawid-skene"`` and ``"correlated"`` (its reading confusion) or the Beta pair;
    none for ``"hierarchical"``, whose priors are fixed) and, for ``"hierarchical"`` and
    ``"correlated"``, each annotator's kind in the order of the annotators."""

    model: str = "dawid-skene"
    classes: tuple[str, ...] = ()
    other_labels: tuple[str, ...] = ()
    prevalence_concentration: tuple[float, ...] = ()
    confusion_concentration: tuple[float, ...] = ()
    kinds: tuple[str, ...] = ()


def _concentration(value, default, shape) -> np.ndarray:
    try:
        out = np.broadcast_to(np.asarray(default if value is None else value, float), shape)
    except ValueError as error:
        raise InvalidInputError(f"a prior concentration of shape {np.shape(value)} does not fit {shape}: {error}") from None
    if not (np.isfinite(out) & (out > 0)).all():
        raise InvalidInputError(f"prior concentrations must be positive and finite; got {value!r}.")
    return out


def labels_spec(data: LabelsData, model: str = "dawid-skene", prevalence_concentration=None, confusion_concentration=None,
                annotator_kind=None) -> LabelsSpec:
    """The spec with the priors resolved (None: the defaults of the module docstring; one number:
    every entry) and the annotators' kinds (``"hierarchical"`` only)."""
    check_model(model)
    n_classes, n_labels, others = len(data.classes), len(data.labels), tuple(data.other_labels)
    prevalence = _concentration(prevalence_concentration, PREVALENCE_CONCENTRATION, (n_classes,))
    if model == "hierarchical":
        if confusion_concentration is not None:
            raise InvalidInputError("the hierarchical model's confusion prior is fixed (a population per annotator kind); "
                                    "leave confusion_concentration=None.")
        kinds, index = annotator_kinds(data, annotator_kind)
        return LabelsSpec(model=model, classes=tuple(data.classes), other_labels=others, prevalence_concentration=tuple(map(float, prevalence)),
                          kinds=tuple(kinds[i] for i in index))
    kinds = ()
    if model == "correlated":
        if annotator_kind is None:
            raise InvalidInputError("model='correlated' needs annotator_kind (annotator -> kind): the annotators of a kind share "
                                    "their misreadings of an item.")
        kinds = reading_kinds(data.annotators, annotator_kind)
    elif annotator_kind is not None:
        raise InvalidInputError(f"annotator_kind groups annotators by kind: it needs model='hierarchical' or 'correlated', not {model!r}.")
    if model in ("dawid-skene", "correlated"):
        confusion = _concentration(confusion_concentration, default_confusion_concentration(n_classes, n_labels), (n_classes, n_labels))
    else:
        confusion = _concentration(confusion_concentration, default_accuracy_prior(), (2,))
    return LabelsSpec(model=model, classes=tuple(data.classes), other_labels=others, prevalence_concentration=tuple(map(float, prevalence.ravel())),
                      confusion_concentration=tuple(map(float, confusion.ravel())), kinds=kinds)


def independent_log_theta(spec: LabelsSpec, n_annotators: int, n_classes: int, n_labels: int):
    """Inside a model context: the parameters of ``spec.model`` (every model but ``"correlated"``)
    and the (annotators, classes, labels) log confusion they give."""
    if spec.model == "dawid-skene":
        rows = np.reshape(spec.confusion_concentration, (n_classes, n_labels))
        confusion = pm.Dirichlet("confusion", np.broadcast_to(rows, (n_annotators, n_classes, n_labels)), dims=("annotator", "true_class", "label"))
        return pt.log(confusion)
    if spec.model == "hierarchical":
        return hierarchical_log_theta(*kind_layout(spec.kinds), n_classes, n_labels)
    a, b = spec.confusion_concentration
    if spec.model == "one-coin":
        return one_coin_log_theta(pm.Beta("accuracy", a, b, dims="annotator"), n_classes, n_labels=n_labels)
    competence = pm.Beta("competence", a, b, dims="annotator")
    strategy = pm.Dirichlet("strategy", np.ones((n_annotators, n_labels)), dims=("annotator", "label"))
    return mace_log_theta(competence, strategy, n_classes, n_labels=n_labels)


def build_labels_model(data: LabelsData, model: Model = "dawid-skene", *, gold: np.ndarray | None = None,
                       prevalence_concentration=None, confusion_concentration=None, annotator_kind=None,
                       patterns: LabelPatterns | None = None) -> pm.Model:
    """The PyMC model of the module docstring (coords ``item``, ``annotator``, ``true_class``,
    ``label``), not sampled. ``gold``: (items,) each item's gold class index or -1
    (:func:`~bayes_raters.labels.data.gold_classes`). ``prevalence_concentration``: (classes,)
    or one number; ``confusion_concentration``: for ``"dawid-skene"`` (classes x labels) or one
    number, for ``"one-coin"`` and ``"mace"`` the Beta(a, b) pair or one number for both, for
    ``"correlated"`` the reading confusion's rows. None: the defaults of the module docstring; 1:
    flat. ``annotator_kind`` (``"hierarchical"``, ``"correlated"``): annotator -> kind. The spec
    (:func:`labels_spec`) is on the model as ``model.labels["spec"]``."""
    spec = labels_spec(data, model, prevalence_concentration, confusion_concentration, annotator_kind)
    n_classes, n_labels, n_annotators = len(data.classes), len(data.labels), len(data.annotators)
    patterns = label_patterns(data, gold) if patterns is None else patterns
    coords = {"item": list(data.items), "annotator": list(data.annotators), "true_class": list(data.classes), "label": list(data.labels)}
    with pm.Model(coords=coords) as labels_model:
        prevalence = pm.Dirichlet("prevalence", np.asarray(spec.prevalence_concentration), dims="true_class")
        inputs = graph_inputs(patterns, n_classes)
        if model == "correlated":
            kinds, kind_index = kind_layout(spec.kinds)
            log_layer, log_theta, kind_of = correlated_parameters(kinds, kind_index, np.reshape(spec.confusion_concentration, (n_classes, n_labels)),
                                                                  n_classes)
            labels_term = correlated_log_likelihood(log_layer, log_theta, kind_of, inputs, len(kinds), n_classes)
        else:
            labels_term = pattern_log_likelihood(independent_log_theta(spec, n_annotators, n_classes, n_labels), inputs, n_classes)
        by_class = pt.log(prevalence)[None, :] + inputs["mask"] + labels_term
        pm.Potential("labels_loglik", pt.sum(inputs["weight"] * pt.logsumexp(by_class, axis=1)))
    labels_model.labels = {"data": data, "spec": spec, "patterns": patterns}
    return labels_model


def majority_vote_start(data: LabelsData, model: Model = "dawid-skene", floor: float = 1e-4, n_kinds: int = 1) -> dict:
    """A starting point off the symmetric saddle: each item's label shares as its class
    probabilities (the majority vote, soft), then the parameters they imply (one M-step of EM,
    as crowd-kit starts), every probability at least ``floor`` so that the transforms stay
    finite. At the symmetric point (every row uniform) the gradient vanishes by the classes'
    exchangeability, and an optimiser started there stays. ``n_kinds``: the hierarchical model's
    number of annotator kinds, the correlated model's number of kinds that share a reading."""
    n_classes, n_labels = len(data.classes), len(data.labels)
    soft = np.zeros((len(data.items), n_classes))
    is_class = data.label_index < n_classes  # a label that is not a class says nothing here
    np.add.at(soft, (data.item_index[is_class], data.label_index[is_class]), 1.0)
    soft += np.where(soft.sum(axis=1, keepdims=True) > 0, 0.0, 1.0)
    soft /= soft.sum(axis=1, keepdims=True)
    prevalence = np.maximum(soft.mean(axis=0), floor)
    confusion = np.zeros((len(data.annotators), n_classes, n_labels))
    np.add.at(confusion, (data.annotator_index, slice(None), data.label_index), soft[data.item_index])
    confusion += floor
    confusion /= confusion.sum(axis=2, keepdims=True)
    start = {"prevalence": prevalence / prevalence.sum()}
    diagonal = confusion[:, np.arange(n_classes), np.arange(n_classes)]
    accuracy = np.clip(diagonal.mean(axis=1), floor, 1 - floor)
    if model == "dawid-skene":
        return start | {"confusion": confusion}
    if model == "correlated":  # every kind reads the class (its reading matrix at the prior mean), annotators as Dawid-Skene
        phi = kind_reading_concentration(n_classes)
        return start | {"reading_confusion": confusion, "kind_reading": np.broadcast_to(phi / phi.sum(axis=1, keepdims=True),
                                                                                          (n_kinds, n_classes, n_classes)).copy()}
    if model == "hierarchical":  # every annotator at its kind's centre, the centre at the mean log-odds of the wrong labels
        off = ~np.eye(n_classes, n_labels, dtype=bool)
        log_odds = (np.log(confusion) - np.log(diagonal)[:, :, None])[:, off].reshape(len(confusion), n_classes, -1)
        return start | {"kind_mu": np.broadcast_to(log_odds.mean(axis=0), (n_kinds, n_classes, n_labels - 1)).copy(),
                        "kind_tau": np.full(n_kinds, 0.5), "confusion_z": np.zeros_like(log_odds)}
    if model == "one-coin":
        return start | {"accuracy": accuracy}
    strategy = np.maximum(confusion.mean(axis=1), floor)
    return start | {"competence": np.clip((accuracy - 1 / n_labels) / (1 - 1 / n_labels), 0.05, 1 - floor),
                    "strategy": strategy / strategy.sum(axis=1, keepdims=True)}
