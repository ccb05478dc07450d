"""Labels that are not classes (``other_labels``, e.g. "Unsure" beside "No" and "Yes"): the
likelihood with a classes x labels confusion matrix, recovery of how often each class is labelled
unsure, and bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytensor
import pytest

from bayes_raters.errors import InvalidInputError
from bayes_raters.labels import build_labels_model, fit_labels, labels_data
from bayes_raters.labels.data import gold_classes
from bayes_raters.results import draw_categories
from tests.labels.test_model import dense_log_likelihood

#: Each annotator's confusion (true class No / Yes -> label No / Yes / Unsure): unsure more often on Yes.
CONFUSION = np.array([[[0.80, 0.10, 0.10], [0.10, 0.60, 0.30]],
                      [[0.70, 0.15, 0.15], [0.15, 0.55, 0.30]],
                      [[0.85, 0.05, 0.10], [0.05, 0.75, 0.20]],
                      [[0.75, 0.20, 0.05], [0.20, 0.70, 0.10]],
                      [[0.65, 0.15, 0.20], [0.10, 0.50, 0.40]]])


def simulate(n_items: int, seed: int) -> tuple[pd.DataFrame, pd.Series]:
    rng = np.random.default_rng(seed)
    z = draw_categories(np.broadcast_to([0.65, 0.35], (n_items, 2)), rng)
    items, annotators = np.repeat(np.arange(n_items), 5), np.tile(np.arange(5), n_items)
    labels = np.asarray(["No", "Yes", "Unsure"])[draw_categories(CONFUSION[annotators, z[items]], rng)]
    names = np.asarray([f"item{i}" for i in range(n_items)])
    rows = pd.DataFrame({"item": names[items], "annotator": [f"rater{a}" for a in annotators], "label": labels})
    return rows, pd.Series(np.asarray(["No", "Yes"])[z], index=names)


def test_the_likelihood_has_a_column_per_label():
    """The model's log density equals sum_i logsumexp_k (log pi_k + sum_(a,l) n_ial log theta_akl)
    with theta (annotators x 2 classes x 3 labels), at random parameters, gold items included; the
    labels are the classes first, then the other labels."""
    rows, truth = simulate(60, 1)
    data = labels_data(rows, classes=["No", "Yes"], other_labels=["Unsure"])
    assert list(data.labels) == ["No", "Yes", "Unsure"] and data.other_labels == ["Unsure"]
    gold = gold_classes(data, truth.iloc[:8])
    model = build_labels_model(data, gold=gold)
    assert model.initial_point()["confusion_simplex__"].shape == (5, 2, 2) and list(model.coords["label"]) == ["No", "Yes", "Unsure"]
    likelihood = pytensor.function([model["prevalence"], model["confusion"]], model.potentials[0])
    rng = np.random.default_rng(3)
    for _ in range(3):
        prevalence, confusion = rng.dirichlet(np.ones(2)), rng.dirichlet(np.ones(3), size=(5, 2))
        np.testing.assert_allclose(float(likelihood(prevalence, confusion)), dense_log_likelihood(data.counts(), gold, prevalence, confusion),
                                   rtol=1e-10)


@pytest.mark.parametrize("model", ["dawid-skene", "mace"])
def test_how_often_each_class_is_labelled_unsure_is_recovered(model):
    """500 items x 5 annotators, the truth not drawn from the priors: the Dawid-Skene unsure rates
    (annotators x classes) within their 95% intervals but for at most one of ten, the most probable
    class right on over 85% of the items, beside the majority vote of No/Yes labels; MACE fits the
    same labels (its strategy has a column per label)."""
    rows, truth = simulate(500, 7)
    result = fit_labels(rows, model, classes=["No", "Yes"], other_labels=["Unsure"], random_seed=2, progressbar=False)
    assert result.convergence.converged
    items = result.item_table()
    assert set(items["map_class"]) <= {"No", "Yes"} and "Unsure" in set(items["majority"])
    right = (items["map_class"] == truth.loc[items.index]).mean()
    assert right > 0.85, right
    if model == "dawid-skene":
        table = result.confusion_table(ci_prob=0.95).xs("Unsure", level="label")
        expected = pd.Series(CONFUSION[:, :, 2].ravel(), index=table.index)
        outside = ((expected < table["lower"]) | (expected > table["upper"])).sum()
        assert outside <= 1, table.assign(expected=expected)


def test_a_label_that_is_not_a_class_must_be_named():
    rows, _ = simulate(20, 1)
    with pytest.raises(InvalidInputError, match="goes in other_labels"):
        labels_data(rows, classes=["No", "Yes"])
    with pytest.raises(InvalidInputError, match="not classes"):
        labels_data(rows, classes=["No", "Yes", "Unsure"], other_labels=["Unsure"])
    seen = labels_data(rows, other_labels=["Unsure"])  # the classes are then the labels seen but the other labels
    assert list(seen.classes) == ["No", "Yes"] and list(seen.labels) == ["No", "Yes", "Unsure"]


@pytest.mark.parametrize("model", ["dawid-skene", "one-coin", "mace", "hierarchical", "correlated"])
def test_every_model_takes_other_labels(model):
    """Each model builds with 2 classes and 3 labels, its confusion has a column per label, and its
    log density is finite at the majority-vote start."""
    from bayes_raters.labels import majority_vote_start

    rows, _ = simulate(30, 2)
    data = labels_data(rows, classes=["No", "Yes"], other_labels=["Unsure"])
    kinds = {"rater3": "llm", "rater4": "llm"} if model == "correlated" else None
    built = build_labels_model(data, model, annotator_kind=kinds)
    n_kinds = len(built.coords.get("shared_kind", built.coords.get("kind", [None])))
    values = majority_vote_start(data, model, n_kinds=n_kinds)
    transforms = built.rvs_to_transforms
    point = built.initial_point() | {built.rvs_to_values[built[name]].name: (value if transforms[built[name]] is None else
                                                                              transforms[built[name]].forward(value).eval())
                                     for name, value in values.items()}
    assert np.isfinite(built.compile_logp()(point))
    if "confusion" in built.named_vars:  # dawid-skene, hierarchical, correlated (one-coin and MACE: derived by the fit)
        assert built.compile_fn(built["confusion"], inputs=built.value_vars, on_unused_input="ignore")(point).shape == (5, 2, 3)
