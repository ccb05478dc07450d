r"""The labels result (the contract of :mod:`bayes_raters.results`): each item's class
probabilities (soft labels) beside the majority vote and any gold class; each annotator's
accuracy :math:`\sum_k \pi_k\theta_{akk}` and confusion matrix with intervals; the prevalence;
LOO over items (each item's labels with its class summed out)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.errors import InvalidInputError
from bayes_raters.labels import calibration, checks
from bayes_raters.labels.correlated import draw_readings
from bayes_raters.labels.data import NO_GOLD, LabelsData, labels_data
from bayes_raters.labels.draws import class_probabilities, flat_draws, item_log_likelihood, pattern_matrix, soft_labels
from bayes_raters.labels.model import LabelsSpec
from bayes_raters.labels.patterns import LabelPatterns, label_patterns
from bayes_raters.persistence import dataset_to_frame, frame_to_dataset
from bayes_raters.results import FitResult, draw_categories, interval_table
from bayes_raters.sampling import ConvergenceReport


def data_tree(data: LabelsData, gold: np.ndarray | None) -> dict:
    """The groups a saved result reads its data back from: ``observed_data`` (each row's label
    index), ``constant_data`` (each row's item and annotator index, each item's gold class index
    or -1) and ``labels`` (the validated rows)."""
    gold = np.full(len(data.items), NO_GOLD) if gold is None else gold
    return {"observed_data": xr.Dataset({"label": ("row", data.label_index)}),
            "constant_data": xr.Dataset({"item_index": ("row", data.item_index), "annotator_index": ("row", data.annotator_index),
                                         "gold": ("item", gold)}, coords={"item": list(data.items)}),
            "labels": frame_to_dataset(data.rows)}


@dataclass(repr=False, kw_only=True)
class LabelsResult(FitResult):
    """A fitted labels model: ``idata`` (posterior with ``prevalence``, ``confusion`` and
    ``accuracy`` in every model, the model's own parameters; sample_stats; observed_data,
    constant_data and the rows, :func:`data_tree`), the :class:`~bayes_raters.labels.data.LabelsData`,
    the gold class indices, the model's name and the convergence ``report``."""

    idata: xr.DataTree
    data: LabelsData
    gold: np.ndarray | None
    spec: LabelsSpec
    report: ConvergenceReport
    patterns: LabelPatterns | None = None

    summary_var_names = ("prevalence", "accuracy", "competence")
    family = "labels model"

    def __post_init__(self):
        if self.patterns is None:
            self.patterns = label_patterns(self.data, self.gold)

    @property
    def model(self) -> str:
        """``"dawid-skene"``, ``"one-coin"``, ``"mace"``, ``"hierarchical"`` or ``"correlated"``."""
        return self.spec.model

    @property
    def classes(self) -> list[str]:
        """The class names, in order."""
        return list(self.data.classes)

    def _size(self) -> str:
        d = self.data
        n_gold = 0 if self.gold is None else int((self.gold != NO_GOLD).sum())
        others = f" (and other labels {d.other_labels})" if d.other_labels else ""
        return f"{len(d.rows)} labels of {len(d.items)} items by {len(d.annotators)} annotators, {len(d.classes)} classes{others}, {n_gold} gold"

    @functools.cached_property
    def _soft(self) -> np.ndarray:
        return soft_labels(self.posterior, self.patterns, self.spec.kinds)

    def item_table(self) -> pd.DataFrame:
        """One row per item: ``n_labels``, ``majority`` (the most given label, which may be one
        that is not a class; ties to the first), ``gold`` (or missing), the posterior probability of each class ``p_<class>`` (the
        soft labels, averaged over the draws), ``map_class`` (the most probable) and ``p_map``."""
        d = self.data
        counts = np.zeros((len(d.items), len(d.labels)))
        np.add.at(counts, (d.item_index, d.label_index), 1.0)
        frame = pd.DataFrame({"n_labels": counts.sum(axis=1).astype(int), "majority": np.asarray(d.labels)[counts.argmax(axis=1)]},
                             index=d.items)
        gold = np.full(len(d.items), NO_GOLD) if self.gold is None else self.gold
        frame["gold"] = pd.Series(np.asarray(self.classes, dtype=object)[gold], index=d.items).where(gold != NO_GOLD)
        for k, name in enumerate(self.classes):
            frame[f"p_{name}"] = self._soft[:, k]
        frame["map_class"] = np.asarray(self.classes)[self._soft.argmax(axis=1)]
        frame["p_map"] = self._soft.max(axis=1)
        return frame

    def annotator_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per annotator: ``n_labels``, ``n_items``, its accuracy (``mean``, ``sd``,
        ``lower``, ``upper``: the probability that its label is the item's class), its R-hat and
        bulk ESS, and ``worse_than_chance`` (:func:`~bayes_raters.labels.checks.worse_than_chance`)."""
        d = self.data
        rows = d.rows.groupby("annotator", sort=False)
        frame = interval_table(self.posterior["accuracy"], ci_prob, ("annotator",))
        frame.insert(0, "n_items", rows["item"].nunique().reindex(frame.index).to_numpy())
        frame.insert(0, "n_labels", rows.size().reindex(frame.index).to_numpy())
        accuracy = self.posterior[["accuracy"]]
        frame["r_hat"] = az.rhat(accuracy)["accuracy"].to_series()
        frame["ess_bulk"] = az.ess(accuracy, method="bulk")["accuracy"].to_series()
        frame["worse_than_chance"] = checks.worse_than_chance(self.posterior["accuracy"], len(d.classes)).to_series()
        if self.spec.kinds:
            frame.insert(0, "kind", pd.Series(self.spec.kinds, index=d.annotators).reindex(frame.index).to_numpy())
        return frame

    def kind_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """``"hierarchical"``: one row per (kind, true_class, label), the kind's typical confusion
        matrix (an annotator at the kind's centre). ``"correlated"``: one row per (shared_kind,
        true_class, reading), the probability that the kind reads an item of the class as
        ``reading`` (off the diagonal: the errors its annotators share). Columns ``mean``, ``sd``,
        ``lower``, ``upper``."""
        if "kind_reading" in self.posterior:
            return interval_table(self.posterior["kind_reading"], ci_prob, ("shared_kind", "true_class", "reading"))
        if "kind_confusion" not in self.posterior:
            raise InvalidInputError(f"kind_table needs model='hierarchical' or 'correlated' (with annotator_kind=...); this fit is {self.model!r}.")
        return interval_table(self.posterior["kind_confusion"], ci_prob, ("kind", "true_class", "label"))

    def confusion_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per (annotator, true_class, label): the probability that the annotator gives
        ``label`` to an item of ``true_class`` (``mean``, ``sd``, ``lower``, ``upper``)."""
        return interval_table(self.posterior["confusion"], ci_prob, ("annotator", "true_class", "label"))

    def prevalence_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per class: its prevalence (``mean``, ``sd``, ``lower``, ``upper``) beside
        ``majority_share``, the share of items whose majority vote it is."""
        frame = interval_table(self.posterior["prevalence"], ci_prob, ("true_class",))
        majority = self.item_table()["majority"].value_counts(normalize=True)
        frame["majority_share"] = majority.reindex(frame.index).fillna(0.0).to_numpy()
        return frame

    def agreement(self) -> pd.Series:
        """The agreement coefficients of :mod:`bayes_raters.agreement` on the same labels, beside
        the model: Krippendorff's alpha (nominal) and Fleiss' kappa, and ``map_equals_majority``,
        the share of items whose most probable class is their majority vote. An annotator's
        repeated labels of one item count as separate codings (alpha and kappa take one label per
        rater and unit)."""
        from bayes_raters.agreement import fleiss_kappa, krippendorff_alpha

        rows = self.data.rows.assign(rater=lambda r: r["annotator"] + "#" + r.groupby(["item", "annotator"]).cumcount().astype(str))
        long = rows.rename(columns={"item": "response", "label": "score"})[["response", "rater", "score"]]
        items = self.item_table()
        return pd.Series({"krippendorff_alpha": krippendorff_alpha(long, level="nominal"), "fleiss_kappa": fleiss_kappa(long),
                          "map_equals_majority": float((items["map_class"] == items["majority"]).mean())})

    def next_items(self, n: int = 20, **kwargs) -> pd.DataFrame:
        """The items whose next label tells most about their class, and whether to stop
        (:func:`~bayes_raters.labels.plan.next_items`, same keywords)."""
        from bayes_raters.labels import plan

        return plan.next_items(self, n, **kwargs)

    def calibration_table(self, truth, bins: int = 10) -> pd.DataFrame:
        """The reliability table of the soft labels against known classes ``truth`` (a Series or
        dict item -> class, items the fit did not take as gold), its expected calibration error
        in ``attrs["ece"]`` (:mod:`bayes_raters.labels.calibration`)."""
        truth = pd.Series(truth).rename(index=str).astype(str)
        probabilities = self.item_table()[[f"p_{k}" for k in self.classes]].set_axis(self.classes, axis=1)
        table = calibration.reliability_table(probabilities, truth, bins)
        table.attrs["ece"] = calibration.expected_calibration_error(table)
        return table

    def _log_likelihood(self) -> xr.Dataset:
        values = item_log_likelihood(self.posterior, self.patterns, self.spec.kinds)
        return xr.Dataset({"labels": (("chain", "draw", "item"), values)},
                          coords={"chain": self.posterior["chain"].values, "draw": self.posterior["draw"].values, "item": list(self.data.items)})

    def _posterior_predictive(self, draws: xr.Dataset, rng: np.random.Generator) -> xr.Dataset:
        """Per draw: each item's class from its class posterior given the draw's parameters, then
        each row's label from the annotator's confusion row of that class (``"correlated"``: each
        kind's reading of the item from its reading matrix, then the label from the annotator's
        reading confusion)."""
        d = self.data
        parameters = flat_draws(draws, self.spec.kinds)
        matrix, replicates = pattern_matrix(self.patterns, len(d.annotators), len(d.labels)), []
        for s in range(len(parameters)):
            one = parameters[s:s + 1]
            z = draw_categories(class_probabilities(one, self.patterns, matrix), rng)
            if one.layer is not None:
                z = draw_readings(one.layer[0], z, rng)[d.item_index, one.kind_index[d.annotator_index]]
            else:
                z = z[d.item_index]
            replicates.append(draw_categories(np.exp(one.log_theta[0][d.annotator_index, z]), rng))
        shape = (draws.sizes["chain"], draws.sizes["draw"], len(d.rows))
        return xr.Dataset({"label": (("chain", "draw", "row"), np.reshape(replicates, shape))},
                          coords={"chain": draws["chain"].values, "draw": draws["draw"].values})

    def _saved_config(self) -> dict:
        return {"spec": self.spec.to_dict(), "report": self.report.to_dict()}

    @classmethod
    def _from_saved(cls, tree: xr.DataTree, config: dict):
        spec = LabelsSpec.from_dict(config["spec"])
        data = labels_data(dataset_to_frame(tree["labels"].to_dataset()), classes=spec.classes, other_labels=spec.other_labels)
        gold = tree["constant_data"]["gold"].values.astype(np.int64)
        return cls(idata=tree, data=data, gold=None if (gold == NO_GOLD).all() else gold, spec=spec, report=ConvergenceReport(**config["report"]))
