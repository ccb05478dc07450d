"""Categorical labels from several annotators per item, human and LLM: the Dawid-Skene family
(Dawid-Skene, one-coin, MACE, pooled by annotator kind, annotators of one kind erring together),
each item's class summed out exactly, gold items as observed classes, labels that are not classes
(:func:`fit_labels`; the card is ``models/labels.md``)."""

from bayes_raters.labels.data import LabelsData, gold_classes, labels_data
from bayes_raters.labels.fit import fit_labels
from bayes_raters.labels.model import LabelsSpec, build_labels_model, majority_vote_start
from bayes_raters.labels.result import LabelsResult
from bayes_raters.labels.simulate import simulate_labels

__all__ = ["LabelsData", "LabelsResult", "LabelsSpec", "build_labels_model", "fit_labels", "gold_classes", "labels_data", "majority_vote_start",
           "simulate_labels"]
