"""Fitting a labels model (:mod:`bayes_raters.labels.model`): the mode and Laplace draws where
their importance check passes, NUTS otherwise, from the majority vote; the tables live on
:class:`~bayes_raters.labels.result.LabelsResult`."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.fit_signature import Inference, NutsSampler, sampler_block
from bayes_raters.inference import sample_model
from bayes_raters.labels import checks
from bayes_raters.labels.data import gold_classes, labels_data
from bayes_raters.labels.model import build_labels_model, check_model, log_theta_of, majority_vote_start
from bayes_raters.labels.result import LabelsResult, data_tree


def with_derived(posterior: xr.Dataset, model: str, n_classes: int, n_labels: int | None = None) -> xr.Dataset:
    """The posterior with every model's ``confusion`` (annotator, true_class, label) and
    ``accuracy`` (annotator): the probability that the annotator's label is the item's class,
    :math:`\\sum_k \\pi_k \\theta_{akk}` (label :math:`k` is class :math:`k`)."""
    out = posterior.copy()
    if model in ("one-coin", "mace"):
        names = ("accuracy",) if model == "one-coin" else ("competence", "strategy")
        values = {n: posterior[n].transpose("chain", "draw", ...).values for n in names}
        theta = np.exp(log_theta_of(values, model, n_classes, n_labels=n_labels))
        out["confusion"] = (("chain", "draw", "annotator", "true_class", "label"), theta)
    confusion = out["confusion"].transpose("chain", "draw", "annotator", "true_class", "label").values
    diagonal = xr.DataArray(confusion[..., np.arange(n_classes), np.arange(n_classes)], dims=("chain", "draw", "annotator", "true_class"))
    if model != "one-coin":
        out["accuracy"] = (diagonal * posterior["prevalence"].values[:, :, None, :]).sum("true_class").transpose("chain", "draw", "annotator")
    return out


#: The hierarchical model's sampler defaults (``draws``, ``target_accept``): its kinds' spreads mix
#: slowly with a few annotators per kind (``models/labels.md``).
HIERARCHICAL_DRAWS, HIERARCHICAL_TARGET_ACCEPT = 2000, 0.95


@sampler_block(reasons={
    "draws": 'None is 1000, and 2000 for ``model="hierarchical"``, whose kinds\' spreads mix slowly with a few annotators per '
             "kind: on 40 simulated designs of 2-3 annotators per kind, 80% of its fits passed the convergence rule with "
             "2000 draws and target_accept 0.95, against 52.5% with 1000 and 0.8.",
    "nuts_sampler": 'None is ``"nutpie"`` where NUTS runs (``inference="nuts"``, or ``"auto"`` after the Laplace '
                    "draws fail their check).",
    "target_accept": 'None is 0.8, and 0.95 for ``model="hierarchical"`` (see ``draws``).',
})
def fit_labels(
    data: pd.DataFrame,
    model: Literal["dawid-skene", "one-coin", "mace", "hierarchical", "correlated"] = "dawid-skene",
    *,
    gold=None,
    annotator_kind=None,
    classes=None,
    other_labels=None,
    prevalence_concentration=None,
    confusion_concentration=None,
    inference: Inference = "auto",
    item: str = "item",
    annotator: str = "annotator",
    label: str = "label",
    draws: int | None = None,
    tune: int = 1000,
    chains: int = 2,
    cores: int | None = None,
    random_seed: int | np.random.Generator | None = None,
    nuts_sampler: NutsSampler | None = None,
    target_accept: float | None = None,
    progressbar: bool | None = None,
) -> LabelsResult:
    """Each item's true class, each annotator's confusion matrix and the class prevalence from
    categorical labels of several annotators per item (human or LLM), the classes summed out
    exactly (:mod:`bayes_raters.labels.model`).

    The chains start from the majority vote. A chain whose classes switched (a mirror mode where
    annotators are mostly wrong) and annotators worse than chance are named in a warning
    (:mod:`bayes_raters.labels.checks`).

    Parameters
    ----------
    data : pandas.DataFrame
        Labels, long: one row per label given (item, annotator, label); an annotator may label an
        item more than once.
    model : {"dawid-skene", "one-coin", "mace", "hierarchical", "correlated"}
        A full confusion matrix per annotator, one accuracy per annotator, MACE (competence and
        a guessing strategy per annotator), full confusion matrices pooled toward a population
        per annotator kind (:mod:`bayes_raters.labels.hierarchical`), or annotators of one kind
        sharing a reading of each item, so that their errors coincide
        (:mod:`bayes_raters.labels.correlated`).
    gold : pandas.DataFrame, pandas.Series or dict, optional
        Known classes of some items (a table with the ``item`` and ``label`` columns, a Series
        indexed by item, or a dict): observed classes in the model.
    annotator_kind : dict or pandas.Series, optional
        Each annotator's kind (e.g. ``"human"``, ``"llm"``): ``"hierarchical"`` pools by kind
        (None, one kind); ``"correlated"`` (required) lets the annotators of a kind err together;
        an annotator left out, or alone in its kind, errs independently (give the LLMs a kind and
        leave the humans out).
    classes : sequence, optional
        The classes in order (default: the labels seen but ``other_labels``, sorted); a label
        outside the classes and ``other_labels`` is an error.
    other_labels : sequence, optional
        Labels annotators may give that are not classes (e.g. ``"Unsure"`` beside the classes
        ``"No"`` and ``"Yes"``): each confusion matrix then has a column per label, classes first,
        and says how often each class is labelled, say, unsure.
    prevalence_concentration, confusion_concentration : array-like or float, optional
        The Dirichlet (and Beta) concentrations of the priors
        (:func:`~bayes_raters.labels.model.build_labels_model`); None, the defaults that identify
        the classes (annotators mostly right); 1, flat.
    inference : {"auto", "nuts", "laplace"}
        ``"auto"``: importance-sampled Laplace draws where their Pareto check and convergence
        rules pass (large data sets, a nearly Gaussian posterior), NUTS otherwise;
        ``"nuts"``; ``"laplace"``.
    item, annotator, label : str
        Column names in ``data`` (and ``gold``).
    {sampler_block}

    Returns
    -------
    LabelsResult
        Items (soft labels), annotators (accuracy, confusion), prevalence.

    Examples
    --------
    >>> from bayes_raters.labels import fit_labels, simulate_labels
    >>> sim = simulate_labels(n_items=200, n_annotators=4, n_classes=3, random_seed=1)
    >>> result = fit_labels(sim["labels"], random_seed=1, progressbar=False)
    >>> result.item_table().shape[0], result.convergence.converged
    (200, True)
    """
    check_model(model)
    table = labels_data(data, item=item, annotator=annotator, label=label, classes=classes, other_labels=other_labels)
    gold_index = None if gold is None else gold_classes(table, gold, item=item, label=label)
    pymc_model = build_labels_model(table, model, gold=gold_index, prevalence_concentration=prevalence_concentration,
                                    confusion_concentration=confusion_concentration, annotator_kind=annotator_kind)
    hierarchical = model == "hierarchical"
    draws = (HIERARCHICAL_DRAWS if hierarchical else 1000) if draws is None else draws
    target_accept = (HIERARCHICAL_TARGET_ACCEPT if hierarchical else 0.8) if target_accept is None else target_accept
    coords = pymc_model.coords
    start = majority_vote_start(table, model, n_kinds=len(coords.get("shared_kind", coords.get("kind", [None]))))
    idata, report = sample_model(
        pymc_model, draws=draws, tune=tune, chains=chains, cores=cores, random_seed=random_seed,
        nuts_sampler="nutpie" if nuts_sampler is None else nuts_sampler, target_accept=target_accept,
        progressbar=progressbar, what="labels model", initvals=start, inference=inference, extra_chains=chains,
    )
    posterior = with_derived(idata["posterior"].to_dataset(), model, len(table.classes), len(table.labels))
    tree = xr.DataTree.from_dict({"posterior": posterior, "sample_stats": idata["sample_stats"].to_dataset(), **data_tree(table, gold_index)})
    tree["posterior"].attrs.update(idata["posterior"].attrs)
    result = LabelsResult(idata=tree, data=table, gold=gold_index, spec=pymc_model.labels["spec"], report=report,
                          patterns=pymc_model.labels["patterns"])
    checks.warn_switched(checks.switched_chains(posterior["confusion"]), list(table.classes))
    checks.warn_worse_than_chance(checks.worse_than_chance(posterior["accuracy"], len(table.classes)))
    return result
