"""The Dawid-Skene likelihood (classes summed out) against crowd-kit's EM on Dawid & Skene's 1979
anaesthesia data: under flat priors the posterior mode is the maximum likelihood EM finds."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pymc as pm
import pytensor
import pytest
from scipy.special import logsumexp

from bayes_raters.errors import InvalidInputError
from bayes_raters.labels.data import labels_data
from bayes_raters.labels.draws import ParameterDraws, class_probabilities, pattern_by_class, pattern_matrix
from bayes_raters.labels.model import build_labels_model, mace_log_theta, majority_vote_start
from bayes_raters.labels.patterns import label_patterns

FLAT = {"prevalence_concentration": 1.0, "confusion_concentration": 1.0}

DATA = Path(__file__).resolve().parents[1] / "data" / "labels"


@pytest.fixture(scope="module")
def anaesthesia():
    return labels_data(pd.read_csv(DATA / "dawid_skene_1979_anaesthesia_long.csv"), annotator="rater", label="rating")


@pytest.fixture(scope="module")
def reference():
    return json.loads((DATA / "crowdkit_1979.json").read_text())


def mode(model, start=None) -> dict:
    """The posterior mode (no Jacobian: the mode in the simplex, where the flat Dirichlet's
    density is constant), from L-BFGS started at ``start``."""
    with model:
        return pm.find_MAP(initvals=start, progressbar=False, maxiter=20000, method="L-BFGS-B", jitter=False, return_inferencedata=False)


def test_the_layout(anaesthesia):
    assert list(anaesthesia.classes) == ["1", "2", "3", "4"] and len(anaesthesia.items) == 45 and len(anaesthesia.annotators) == 5
    counts = anaesthesia.counts()
    assert counts.sum() == 315 and (counts[:, 0].sum(axis=1) == 3).all() and (counts[:, 1:].sum(axis=2) == 1).all()


def floored(probabilities, floor=1e-6):
    """``probabilities`` (last axis a simplex) with every entry at least ``floor``."""
    p = np.maximum(np.asarray(probabilities, float), floor)
    return p / p.sum(axis=-1, keepdims=True)


def log_likelihood(data, prevalence, confusion) -> float:
    """The marginal log-likelihood of the module docstring, in NumPy, through the soft labels'
    normaliser."""
    counts = data.counts()
    by_class = np.log(prevalence) + np.einsum("ial,akl->ik", counts, np.log(np.maximum(confusion, 1e-300)))
    top = by_class.max(axis=1)
    return float((top + np.log(np.exp(by_class - top[:, None]).sum(axis=1))).sum())


def test_crowdkits_dawid_skene_estimate_is_a_mode_and_not_the_highest(anaesthesia, reference):
    """crowd-kit's EM estimate is a mode of the model's density under flat priors (L-BFGS started
    there stays: prevalence and confusion within 5e-3; its parameters give its soft labels through
    :func:`~bayes_raters.labels.draws.class_probabilities`, to 0.02); started at the majority
    vote instead, L-BFGS reaches a higher mode than EM's fixed point (log-likelihood -189.41
    against -190.75): EM from the majority vote stops at a local maximum on these data."""
    ours = reference["dawid_skene"]
    start = {"prevalence": floored(ours["prevalence"]), "confusion": floored(ours["confusion"])}
    point = mode(build_labels_model(anaesthesia, **FLAT), start)
    np.testing.assert_allclose(point["prevalence"], ours["prevalence"], atol=2e-3)
    np.testing.assert_allclose(point["confusion"], np.asarray(ours["confusion"]), atol=5e-3)
    soft = class_probabilities(ParameterDraws(np.log(floored(ours["prevalence"], 1e-300))[None], np.log(floored(ours["confusion"], 1e-300))[None]),
                               label_patterns(anaesthesia))
    expected = np.asarray([ours["probas"][item] for item in anaesthesia.items])
    np.testing.assert_allclose(soft, expected, atol=0.02)  # crowd-kit's probas_ are 0.0125 at most from its parameters' E-step
    best = mode(build_labels_model(anaesthesia, **FLAT), majority_vote_start(anaesthesia))
    crowdkit = log_likelihood(anaesthesia, np.asarray(ours["prevalence"]), np.asarray(ours["confusion"]))
    assert crowdkit == pytest.approx(-190.75, abs=0.01)
    assert log_likelihood(anaesthesia, best["prevalence"], best["confusion"]) > crowdkit + 1.0


def test_one_coin_mode_equals_crowdkit(anaesthesia, reference):
    point = mode(build_labels_model(anaesthesia, "one-coin", **FLAT))
    ours = reference["one_coin"]
    np.testing.assert_allclose(point["prevalence"], ours["prevalence"], atol=2e-3)
    np.testing.assert_allclose(point["accuracy"], ours["accuracy"], atol=2e-3)


def test_bad_labels_are_named():
    rows = pd.DataFrame({"item": [1, 1, 2], "annotator": ["a", "b", "a"], "label": ["x", "y", "z"]})
    with pytest.raises(InvalidInputError, match=r"outside the declared classes \['x', 'y'\].*'z'"):
        labels_data(rows, classes=["x", "y"])
    with pytest.raises(InvalidInputError, match="one class"):
        labels_data(rows.assign(label="x"))
    with pytest.raises(InvalidInputError, match="'worker'"):
        labels_data(rows, annotator="worker")


def test_crowdkits_mace_estimate_is_a_mode(anaesthesia):
    """crowd-kit's MACE (EM, uniform class prior; its estimate on the rows sorted by label,
    ``tests/data/README.md``) is a mode of our MACE under flat priors with the prevalence held
    at uniform (Dirichlet(1e6)): L-BFGS started there stays (competence and strategy within
    2e-3), and the soft labels equal its ``probas_`` to 1e-3. The same data in the file's row order
    give crowd-kit other estimates (annotator 1's competence 0.8645 against 0.8022): its strategy
    columns are indexed by order of appearance, so only the sorted rows are compared."""
    ours = json.loads((DATA / "crowdkit_real.json").read_text())["mace_1979"]
    assert ours["workers"] == list(anaesthesia.annotators) and ours["labels"] == list(anaesthesia.classes)
    competence, strategy = np.asarray(ours["competence"]), floored(ours["strategy"])
    model = build_labels_model(anaesthesia, "mace", prevalence_concentration=1e6, confusion_concentration=1.0)
    moved = mode(model, {"prevalence": np.full(4, 0.25), "competence": competence, "strategy": strategy})
    np.testing.assert_allclose(moved["competence"], competence, atol=2e-3)
    np.testing.assert_allclose(moved["strategy"], np.asarray(ours["strategy"]), atol=2e-3)
    theta = np.log(competence[:, None, None] * np.eye(4) + (1 - competence)[:, None, None] * strategy[:, None, :])
    soft = class_probabilities(ParameterDraws(np.log(np.full((1, 4), 0.25)), theta[None]), label_patterns(anaesthesia))
    np.testing.assert_allclose(soft, np.asarray([ours["probas"][item] for item in anaesthesia.items]), atol=1e-3)
    assert abs(ours["competence_rows_as_read"][0] - competence[0]) > 0.05
    # a local maximum of the likelihood: 100 random nearby points are all lower
    patterns = label_patterns(anaesthesia)
    matrix, mask = pattern_matrix(patterns, 5, 4), patterns.gold_mask(4)

    def loglik(c, xi):
        by_class = pattern_by_class(matrix, np.log(np.full((1, 4), 0.25)), mace_log_theta(c, xi, 4, np)[None], mask)[0]
        return float(patterns.weight @ logsumexp(by_class, axis=1))

    rng, top = np.random.default_rng(0), loglik(competence, strategy)
    for _ in range(100):
        xi = strategy * np.exp(0.025 * rng.standard_normal(strategy.shape))
        assert loglik(np.clip(competence + 0.005 * rng.standard_normal(5), 0, 1), xi / xi.sum(axis=1, keepdims=True)) < top


def dense_log_likelihood(counts, gold, prevalence, confusion) -> float:
    """The Dawid-Skene log-likelihood summed item by item: counts (items, annotators, labels), gold
    (items,) class index or -1, confusion (annotators, classes, labels)."""
    by_class = np.log(prevalence) + np.einsum("ial,akl->ik", counts, np.log(confusion))
    has = gold >= 0
    by_class[has] = np.where(np.arange(len(prevalence)) == gold[has, None], by_class[has], -np.inf)
    return logsumexp(by_class, axis=1).sum()


def test_patterns_give_the_items_likelihood_with_gold():
    """The model's log density over label patterns (items with the same labels as one weighted
    term, gold items kept apart) equals the sum over items of the module docstring's formula,
    computed densely in NumPy, at random parameters; 200 simulated items share fewer than 60 patterns."""
    from bayes_raters.labels import simulate_labels
    from bayes_raters.labels.data import gold_classes

    sim = simulate_labels(n_items=200, n_annotators=3, n_classes=3, accuracy=(0.7, 0.95), random_seed=8)
    data = labels_data(sim["labels"])
    gold = gold_classes(data, sim["classes"].iloc[:30])
    patterns = label_patterns(data, gold)
    assert patterns.n_patterns < 60 and patterns.weight.sum() == 200
    model = build_labels_model(data, gold=gold)
    likelihood = pytensor.function([model["prevalence"], model["confusion"]], model.potentials[0])
    rng = np.random.default_rng(2)
    for _ in range(3):
        prevalence, confusion = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3), size=(3, 3))
        np.testing.assert_allclose(float(likelihood(prevalence, confusion)), dense_log_likelihood(data.counts(), gold, prevalence, confusion),
                                   rtol=1e-10)


def test_data_sets_of_one_design_share_the_compiled_code():
    """The patterns enter the graph as inputs, not constants: two data sets with the same
    annotators and classes give one Numba cache key (the second fit compiles nothing anew);
    another number of annotators gives another."""
    from bayes_raters.labels import simulate_labels
    from tests.judges.test_model import numba_cache_key

    keys = [numba_cache_key(build_labels_model(labels_data(simulate_labels(n_items=n, n_annotators=a, random_seed=s)["labels"])))
            for n, a, s in ((100, 4, 1), (150, 4, 2), (100, 5, 1))]
    assert keys[0] is not None and keys[0] == keys[1] and keys[2] != keys[0]


def test_past_the_dense_limit_each_item_is_its_own_pattern(monkeypatch):
    """Where items x annotators x labels exceeds DENSE_MAX the items are not grouped: every item is
    its own pattern of weight 1, and the model's log density is the grouped model's, at random
    parameters (gold items included)."""
    from bayes_raters.labels import patterns as patterns_module
    from bayes_raters.labels import simulate_labels
    from bayes_raters.labels.data import gold_classes

    sim = simulate_labels(n_items=150, n_annotators=4, n_classes=3, random_seed=11)
    data = labels_data(sim["labels"])
    gold = gold_classes(data, sim["classes"].iloc[:10])
    grouped = label_patterns(data, gold)
    monkeypatch.setattr(patterns_module, "DENSE_MAX", 10)
    each = label_patterns(data, gold)
    assert grouped.n_patterns < 150 and each.n_patterns == 150 and (each.weight == 1).all() and (each.gold == gold).all()
    values = []
    for patterns in (grouped, each):
        model = build_labels_model(data, gold=gold, patterns=patterns)
        values.append(pytensor.function([model["prevalence"], model["confusion"]], model.potentials[0]))
    rng = np.random.default_rng(4)
    for _ in range(3):
        prevalence, confusion = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3), size=(4, 3))
        np.testing.assert_allclose(float(values[1](prevalence, confusion)), float(values[0](prevalence, confusion)), rtol=1e-10)
