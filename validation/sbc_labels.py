"""SBC configurations of the labels models (:mod:`bayes_raters.sbc`): Dawid-Skene, one-coin,
MACE, hierarchical (kinds: three humans, two LLMs) and correlated (annotators 0-1 alone, 2-4 one
kind sharing a reading; kind reading rows Dirichlet(8, 1, 1)), each with its default priors (:mod:`bayes_raters.labels.model`: prevalence Dirichlet(3),
confusion rows Dirichlet with 4.8 on the diagonal and 1.6 elsewhere for three classes, accuracy
and competence Beta(4.8, 3.2), MACE strategies Dirichlet(1)).

Design: 60 items, 5 annotators, 3 classes, each item labelled by 3 annotators at random (by all
5 for the correlated model, so that the kind's annotators meet on every item); fitted
by :func:`~bayes_raters.labels.fit_labels` with its defaults (``inference="auto"``: at this size
the Laplace draws are mostly rejected and NUTS runs). Parameters drawn from the priors include
annotators worse than chance; the fit must still be calibrated there, since the priors, not a
constraint, identify the classes.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from bayes_raters.labels import fit_labels
from bayes_raters.labels.correlated import kind_reading_concentration
from bayes_raters.labels.hierarchical import MU_SD, TAU_SD
from bayes_raters.labels.model import PREVALENCE_CONCENTRATION, default_accuracy_prior, default_confusion_concentration, log_theta_of
from bayes_raters.results import draw_categories
from bayes_raters.sbc import Configuration

#: items, annotators, classes, labels per item
SIZE = (60, 5, 3, 3)
#: The hierarchical model's annotator kinds: three humans, two LLMs.
KINDS = {"0": "human", "1": "human", "2": "human", "3": "llm", "4": "llm"}
#: The correlated model's shared kind: annotators 2-4 (0 and 1 are left out: they err independently).
SHARED = {"2": "llm", "3": "llm", "4": "llm"}


def draw_parameters(rng: np.random.Generator, model: str) -> dict:
    """One draw of the model's parameters from its default priors."""
    _, n_annotators, n_classes, _ = SIZE
    out = {"prevalence": rng.dirichlet(np.full(n_classes, PREVALENCE_CONCENTRATION))}
    a, b = default_accuracy_prior()
    if model in ("dawid-skene", "correlated"):
        rows = default_confusion_concentration(n_classes)
        out["confusion"] = np.stack([np.stack([rng.dirichlet(rows[k]) for k in range(n_classes)]) for _ in range(n_annotators)])
        if model == "correlated":
            phi = kind_reading_concentration(n_classes)
            out["kind_reading"] = np.stack([rng.dirichlet(phi[k]) for k in range(n_classes)])[None]
            out["reading_confusion"] = out.pop("confusion")
    elif model == "one-coin":
        out["accuracy"] = rng.beta(a, b, n_annotators)
    elif model == "hierarchical":
        kind = np.asarray([0, 0, 0, 1, 1])
        out["kind_mu"] = rng.normal(np.log(0.4 / (n_classes - 1) / 0.6), MU_SD, (2, n_classes, n_classes - 1))
        out["kind_tau"] = np.abs(rng.normal(0, TAU_SD, 2))
        off = out["kind_mu"][kind] + out["kind_tau"][kind][:, None, None] * rng.standard_normal((n_annotators, n_classes, n_classes - 1))
        eta = np.zeros((n_annotators, n_classes, n_classes))
        eta[:, ~np.eye(n_classes, dtype=bool)] = off.reshape(n_annotators, -1)
        out["confusion"] = np.exp(eta) / np.exp(eta).sum(axis=-1, keepdims=True)
    else:
        out["competence"] = rng.beta(a, b, n_annotators)
        out["strategy"] = rng.dirichlet(np.ones(n_classes), n_annotators)
    return out


def tracked(values: dict, model: str) -> dict:
    """The ranked quantities from parameter values (truths or draws with leading axes)."""
    out = {"prevalence[0]": values["prevalence"][..., 0], "prevalence[2]": values["prevalence"][..., 2]}
    if model == "correlated":
        out |= {"reading_confusion[0,0,0]": values["reading_confusion"][..., 0, 0, 0], "reading_confusion[3,1,1]": values["reading_confusion"][..., 3, 1, 1],
                "kind_reading[0,0,0]": values["kind_reading"][..., 0, 0, 0], "kind_reading[0,2,1]": values["kind_reading"][..., 0, 2, 1]}
    elif model == "hierarchical":
        out |= {"confusion[0,0,0]": values["confusion"][..., 0, 0, 0], "confusion[3,1,1]": values["confusion"][..., 3, 1, 1],
                "kind_mu[0,0,0]": values["kind_mu"][..., 0, 0, 0], "kind_tau[0]": values["kind_tau"][..., 0],
                "kind_tau[1]": values["kind_tau"][..., 1]}
    elif model == "dawid-skene":
        out |= {"confusion[0,0,0]": values["confusion"][..., 0, 0, 0], "confusion[0,1,0]": values["confusion"][..., 0, 1, 0],
                "confusion[1,2,2]": values["confusion"][..., 1, 2, 2]}
    elif model == "one-coin":
        out |= {"accuracy[0]": values["accuracy"][..., 0], "accuracy[1]": values["accuracy"][..., 1]}
    else:
        out |= {"competence[0]": values["competence"][..., 0], "strategy[0,0]": values["strategy"][..., 0, 0]}
    return out


def simulate_labels_sbc(rng: np.random.Generator, model: str):
    """``(truth, labels)``: parameters from the priors, labels from the model."""
    n_items, n_annotators, n_classes, per_item = SIZE
    parameters = draw_parameters(rng, model)
    z = draw_categories(np.broadcast_to(parameters["prevalence"], (n_items, n_classes)), rng)
    if model == "correlated":  # every annotator labels every item; annotators 2-4 label from the kind's reading
        annotators, items = np.tile(np.arange(n_annotators), n_items), np.repeat(np.arange(n_items), n_annotators)
        reading = draw_categories(parameters["kind_reading"][0][z], rng)
        seen = np.where(np.isin(annotators, [int(a) for a in SHARED]), reading[items], z[items])
        labels = draw_categories(parameters["reading_confusion"][annotators, seen], rng)
    else:
        theta = np.exp(log_theta_of(parameters, model, n_classes))
        annotators = rng.random((n_items, n_annotators)).argsort(axis=1)[:, :per_item].ravel()
        items = np.repeat(np.arange(n_items), per_item)
        labels = draw_categories(theta[annotators, z[items]], rng)
    table = pd.DataFrame({"item": items, "annotator": annotators, "label": labels})
    return {k: float(v) for k, v in tracked(parameters, model).items()}, table


def fit_labels_sbc(table: pd.DataFrame, seed: int, model: str):
    """:func:`~bayes_raters.labels.fit_labels` with its defaults (all classes declared: a class
    no annotator used in a small data set is still a class)."""
    kinds = {"hierarchical": KINDS, "correlated": SHARED}.get(model)
    result = fit_labels(table, model, classes=list(range(SIZE[2])), annotator_kind=kinds, random_seed=seed, cores=1, progressbar=False)
    posterior = result.posterior.sel(annotator=[str(a) for a in range(SIZE[1])])  # the fit orders annotators (and kinds) as they first appear
    if model == "hierarchical":
        posterior = posterior.sel(kind=["human", "llm"])
    values = {name: posterior[name].transpose("chain", "draw", ...).values for name in ("prevalence", "confusion", "accuracy", "competence", "strategy",
                                                                                   "kind_mu", "kind_tau", "kind_reading", "reading_confusion")
              if name in posterior}
    return tracked(values, model), result.convergence


LABELS_CONFIGURATIONS = {
    f"labels_{model.replace('-', '_')}": Configuration(f"labels_{model.replace('-', '_')}", functools.partial(simulate_labels_sbc, model=model),
                                                       functools.partial(fit_labels_sbc, model=model))
    for model in ("dawid-skene", "one-coin", "mace", "hierarchical", "correlated")
}
