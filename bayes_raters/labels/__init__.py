"""Categorical labels from several annotators per item, human and LLM: the Dawid-Skene family.
So far the data layer and the models with each item's class summed out; the fit, its result and
tables are to come (``CHANGELOG.md``)."""

from bayes_raters.labels.data import LabelsData, labels_data
from bayes_raters.labels.model import build_labels_model, class_posterior, majority_vote_start

__all__ = ["LabelsData", "build_labels_model", "class_posterior", "labels_data", "majority_vote_start"]
