"""Annotators who err together (``model="correlated"``): the likelihood against brute-force
enumeration of the class and every kind's reading, the NumPy draws against it, recovery on data
from another mechanism than the model's, and bad input."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytensor
import pytest
import xarray as xr
from scipy.special import logsumexp

from bayes_raters.errors import BoundWarning, InvalidInputError
from bayes_raters.labels import build_labels_model, fit_labels, labels_data, simulate_labels
from bayes_raters.labels.data import gold_classes
from bayes_raters.labels.draws import item_log_likelihood, soft_labels

LLMS = {"annotator3": "llm", "annotator4": "llm", "annotator5": "llm"}


def brute_force(counts, gold, prevalence, phi_by_kind, theta, kind_of):
    """(items, classes) log p(labels, class) by enumerating the class and each kind's reading;
    ``phi_by_kind``: kind -> (classes, readings), the identity for a kind of one annotator."""
    n_items, n_classes = counts.shape[0], len(prevalence)
    kinds = sorted(set(kind_of))
    out = np.zeros((n_items, n_classes))
    for i, k in itertools.product(range(n_items), range(n_classes)):
        total = prevalence[k]
        for g in kinds:
            members = [a for a in range(len(kind_of)) if kind_of[a] == g]
            total *= sum(phi_by_kind[g][k, r] * np.prod([theta[a, r] ** counts[i, a] for a in members]) for r in range(n_classes))
        out[i, k] = np.log(total) if gold[i] < 0 or gold[i] == k else -np.inf
    return out


@pytest.fixture(scope="module")
def design():
    sim = simulate_labels(n_items=40, n_annotators=6, n_classes=3, labels_per_item=4, correlated=3, random_seed=3)
    data = labels_data(sim["labels"])
    gold = gold_classes(data, sim["classes"].iloc[:6])
    return data, gold


def random_point(rng, n_annotators, n_shared):
    return rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3), size=(n_shared, 3)), rng.dirichlet(np.ones(3), size=(n_annotators, 3))


def test_the_likelihood_sums_out_the_class_and_every_kinds_reading(design):
    """The model's log density (over label patterns, gold items kept apart) equals the sum over
    items of log sum_k pi_k prod_g sum_r phi_gkr prod_(a in g) theta_ar^n, enumerated item by
    item, at random parameters; the three annotators left out of ``annotator_kind`` read alone."""
    data, gold = design
    model = build_labels_model(data, "correlated", gold=gold, annotator_kind=LLMS)
    assert list(model.coords["shared_kind"]) == ["llm"]
    likelihood = pytensor.function([model["prevalence"], model["kind_reading"], model["reading_confusion"]], model.potentials[0])
    kinds = model.labels["spec"].kinds
    kind_of = [list(dict.fromkeys(kinds)).index(k) for k in kinds]
    llm = kind_of[list(data.annotators).index("annotator3")]
    rng = np.random.default_rng(5)
    for _ in range(3):
        prevalence, phi, theta = random_point(rng, len(data.annotators), 1)
        phi_by_kind = {g: (phi[0] if g == llm else np.eye(3)) for g in set(kind_of)}
        expected = brute_force(data.counts(), gold, prevalence, phi_by_kind, theta, kind_of)
        np.testing.assert_allclose(float(likelihood(prevalence, phi, theta)), logsumexp(expected, axis=1).sum(), rtol=1e-10)


def test_the_numpy_draws_give_the_same_items(design):
    """Soft labels and each item's log-likelihood from the NumPy evaluation of posterior draws equal
    the brute-force enumeration at those draws (a gold item's own prior term dropped)."""
    from scipy.special import softmax

    data, gold = design
    model = build_labels_model(data, "correlated", gold=gold, annotator_kind=LLMS)
    kinds = model.labels["spec"].kinds
    kind_of = [list(dict.fromkeys(kinds)).index(k) for k in kinds]
    llm = kind_of[list(data.annotators).index("annotator3")]
    rng = np.random.default_rng(6)
    draws = [random_point(rng, len(data.annotators), 1) for _ in range(2)]
    posterior = xr.Dataset({"prevalence": (("chain", "draw", "true_class"), np.stack([d[0] for d in draws])[None]),
                            "kind_reading": (("chain", "draw", "shared_kind", "true_class", "reading"), np.stack([d[1] for d in draws])[None]),
                            "reading_confusion": (("chain", "draw", "annotator", "reading", "label"), np.stack([d[2] for d in draws])[None])},
                           coords={"shared_kind": ["llm"], "annotator": list(data.annotators)})
    expected = [brute_force(data.counts(), gold, p, {g: (phi[0] if g == llm else np.eye(3)) for g in set(kind_of)}, theta, kind_of)
                for p, phi, theta in draws]
    np.testing.assert_allclose(soft_labels(posterior, model.labels["patterns"], kinds),
                               np.mean([softmax(e, axis=1) for e in expected], axis=0), atol=1e-10)
    prior = [np.where(gold[:, None] >= 0, np.log(p)[gold.clip(0)][:, None], 0.0)[:, 0] for p, _, _ in draws]
    np.testing.assert_allclose(item_log_likelihood(posterior, model.labels["patterns"], kinds)[0],
                               [logsumexp(e, axis=1) - q for e, q in zip(expected, prior, strict=True)], atol=1e-9)


def test_the_next_label_reads_through_the_kinds_reading_of_the_item(design):
    """The planner's information of one more label from annotator a equals the expected entropy
    drop of the item's class probabilities enumerated over that label (the item's labels with one
    more, by brute force), at random parameters: for an LLM whose kind already read the item the
    next label's confusion is not the marginal one."""
    from scipy.special import softmax

    from bayes_raters.labels.correlated import next_label_confusion
    from bayes_raters.labels.draws import pattern_matrix
    from bayes_raters.labels.plan import entropy, label_information

    data, _ = design
    model = build_labels_model(data, "correlated", annotator_kind=LLMS)
    patterns = model.labels["patterns"]
    kinds = model.labels["spec"].kinds
    kind_of = np.asarray([list(dict.fromkeys(kinds)).index(k) for k in kinds])
    llm = kind_of[list(data.annotators).index("annotator3")]
    rng = np.random.default_rng(9)
    prevalence, phi, theta = random_point(rng, len(data.annotators), 1)
    layer = np.stack([np.log(phi[0]) if g == llm else np.log(np.eye(3) + 1e-300) for g in range(kind_of.max() + 1)])
    confusion = next_label_confusion(pattern_matrix(patterns, len(data.annotators), 3), np.log(theta), layer, kind_of)[patterns.item_pattern]
    phi_by_kind = {g: (phi[0] if g == llm else np.eye(3)) for g in set(kind_of)}
    counts = data.counts()
    soft = softmax(brute_force(counts, np.full(len(counts), -1), prevalence, phi_by_kind, theta, kind_of), axis=1)
    planned = label_information(soft, confusion)
    annotator = list(data.annotators).index("annotator4")
    for i in range(0, len(counts), 8):
        drop = entropy(soft[i:i + 1])[0]
        for label in range(3):
            more = counts[i:i + 1].copy()
            more[0, annotator, label] += 1
            joint = brute_force(more, np.full(1, -1), prevalence, phi_by_kind, theta, kind_of)
            drop -= np.exp(logsumexp(joint) - logsumexp(brute_force(counts[i:i + 1], np.full(1, -1), prevalence, phi_by_kind, theta, kind_of))) \
                * entropy(softmax(joint, axis=1))[0]
        np.testing.assert_allclose(planned[i, annotator], drop, atol=1e-10)
    marginal = np.einsum("kr,arl->akl", phi[0], theta)[annotator]
    assert not np.allclose(confusion[:, annotator], marginal), "the kind's reading of the item should move the next label's confusion"


def test_annotators_who_err_together_no_longer_make_confident_wrong_labels():
    """Data from another mechanism than the model's (three of six annotators, on half the items,
    all give the label the first of them draws; accuracies uniform on 0.6-0.9): Dawid-Skene's
    soft labels are over-confident (``models/labels.md``); the correlated
    model, with the three as one kind, is right more often and calibrated."""
    sim = simulate_labels(n_items=600, n_annotators=6, n_classes=3, correlated=3, correlation=0.5, random_seed=4)
    truth = sim["classes"].astype(str)
    rows = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BoundWarning)
        for model, kinds in (("dawid-skene", None), ("correlated", LLMS)):
            fit = fit_labels(sim["labels"], model, annotator_kind=kinds, random_seed=2, progressbar=False)
            assert fit.convergence.converged, model
            items = fit.item_table()
            rows[model] = ((items["map_class"] == truth).mean(), fit.calibration_table(truth).attrs["ece"])
    assert rows["correlated"][0] > rows["dawid-skene"][0] + 0.04, rows  # measured 0.973 against 0.897
    assert rows["correlated"][1] < 0.04 < rows["dawid-skene"][1], rows  # ECE measured 0.015 against 0.083
    table = fit.kind_table()
    assert set(table.index.get_level_values("shared_kind")) == {"llm"}
    assert fit.annotator_table()["kind"].tolist()[:3] == ["alone:annotator0", "alone:annotator1", "alone:annotator2"]


@pytest.mark.filterwarnings("ignore::bayes_raters.errors.ConvergenceWarning")  # 300 draws: the result's contract is tested
def test_the_result_contract_with_other_labels(tmp_path):
    """A correlated fit whose annotators also answer "unsure" (a label that is not a class): LOO over
    items, posterior predictive labels from each kind's reading (seeded: the same seed, the same
    labels; the labels that are not classes among them), the next items, save and load with the
    kinds and the other labels."""
    from bayes_raters.labels import LabelsResult

    sim = simulate_labels(n_items=80, n_annotators=5, n_classes=2, correlated=3, random_seed=5)
    rows = sim["labels"].astype({"label": str})
    rows.loc[rows.index % 7 == 0, "label"] = "unsure"
    fit = fit_labels(rows, "correlated", annotator_kind={"annotator2": "llm", "annotator3": "llm", "annotator4": "llm"},
                     classes=["0", "1"], other_labels=["unsure"], draws=300, tune=300, inference="nuts", random_seed=1, progressbar=False)
    assert fit.posterior["reading_confusion"].sizes["label"] == 3 and fit.posterior["kind_reading"].sizes["reading"] == 2
    loo = fit.loo()
    assert np.isfinite(loo.elpd) and loo.n_data_points == 80
    first = fit.sample_posterior_predictive(n_draws=40, random_seed=3)["posterior_predictive"]["label"].values
    again = fit.sample_posterior_predictive(n_draws=40, random_seed=3)["posterior_predictive"]["label"].values
    np.testing.assert_array_equal(first, again)
    assert set(np.unique(first)) == {0, 1, 2}
    plan = fit.next_items(5)
    assert len(plan) == 5 and (plan["information"] >= 0).all() and plan["information"].is_monotonic_decreasing
    loaded = LabelsResult.load(fit.save(tmp_path / "correlated.nc"))
    assert loaded.spec == fit.spec and loaded.spec.other_labels == ("unsure",) and repr(loaded) == repr(fit)
    np.testing.assert_allclose(loaded.item_table()[["p_0", "p_1"]].to_numpy(), fit.item_table()[["p_0", "p_1"]].to_numpy())


def test_correlated_needs_a_kind_of_two_annotators():
    sim = simulate_labels(n_items=20, n_annotators=3, random_seed=1)
    with pytest.raises(InvalidInputError, match="needs annotator_kind"):
        fit_labels(sim["labels"], "correlated", progressbar=False)
    with pytest.raises(InvalidInputError, match="two or more annotators"):
        fit_labels(sim["labels"], "correlated", annotator_kind={"annotator0": "llm"}, progressbar=False)
    with pytest.raises(InvalidInputError, match=r"names annotators with no labels: \['llm-x'\]"):
        fit_labels(sim["labels"], "correlated", annotator_kind={"annotator0": "llm", "annotator1": "llm", "llm-x": "llm"}, progressbar=False)
    with pytest.raises(InvalidInputError, match="'hierarchical' or 'correlated'"):
        fit_labels(sim["labels"], "dawid-skene", annotator_kind={"annotator0": "llm"}, progressbar=False)
