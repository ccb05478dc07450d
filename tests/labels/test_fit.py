"""fit_labels on simulated labels not drawn from its priors (accuracies uniform, errors uneven over
the wrong labels, skewed prevalence, a spammer): recovery, the tables, gold items, the result
contract, the Laplace path at scale against NUTS, and the checks that name a switched chain and
an annotator worse than chance."""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from bayes_raters.errors import BoundWarning, ConvergenceWarning, InvalidInputError
from bayes_raters.labels import LabelsResult, fit_labels, gold_classes, labels_data, simulate_labels
from bayes_raters.labels.checks import switched_chains, warn_switched

#: One design for the fits here (5 annotators, 3 classes): the compiled code is shared.
DESIGN = {"n_annotators": 5, "n_classes": 3}


@pytest.fixture(scope="module")
def sim():
    return simulate_labels(n_items=300, prevalence=[0.6, 0.3, 0.1], spammers=1, random_seed=3, **DESIGN)


@pytest.fixture(scope="module")
def result(sim):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return fit_labels(sim["labels"], inference="nuts", random_seed=1, progressbar=False)


def true_accuracy(sim) -> np.ndarray:
    """Each annotator's probability of giving the item's class, :math:`\\sum_k \\pi_k\\theta_{akk}`."""
    return np.einsum("k,akk->a", sim["prevalence"], sim["confusion"])


def test_converges_and_recovers_annotators_and_prevalence(result, sim):
    report = result.convergence
    assert report.converged and report.divergences == 0 and result.inference.path == "nuts"
    table = result.annotator_table(ci_prob=0.95).loc[[f"annotator{a}" for a in range(5)]]
    truth = true_accuracy(sim)
    assert ((table["lower"] < truth) & (truth < table["upper"])).all(), table.assign(truth=truth)
    assert table.loc["annotator0", "upper"] < 0.55 and not table["worse_than_chance"].any()  # the spammer: chance is 1/3
    prevalence = result.prevalence_table(ci_prob=0.95)
    assert ((prevalence["lower"] < sim["prevalence"]) & (sim["prevalence"] < prevalence["upper"])).all()
    confusion = result.confusion_table()
    assert len(confusion) == 5 * 3 * 3
    np.testing.assert_allclose(confusion["mean"].groupby(level=["annotator", "true_class"]).sum(), 1.0, atol=1e-9)


def test_soft_labels_beat_the_majority_vote_and_are_calibrated(result, sim):
    items = result.item_table()
    truth = sim["classes"].reindex(items.index).astype(str)
    right, majority = (items["map_class"] == truth).mean(), (items["majority"] == truth).mean()
    assert right >= majority and right > 0.85
    # calibration: the mean probability of the chosen class is the share chosen right (SE ~0.02)
    assert abs(items["p_map"].mean() - right) < 0.05
    p = items[[f"p_{k}" for k in result.classes]].to_numpy()
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    assert items["gold"].isna().all() and (items["n_labels"] == 5).all()


def test_result_contract(result, tmp_path):
    assert isinstance(result, LabelsResult) and result.model == "dawid-skene" and "converged" in repr(result)
    assert result.spec.classes == ("0", "1", "2") and result.spec.confusion_concentration[0] == pytest.approx(4.8)
    summary = result.summary()
    assert {"r_hat", "ess_bulk"} <= set(summary.columns) and any(i.startswith("accuracy[") for i in summary.index)
    loo = result.loo()
    assert np.isfinite(loo.elpd) and loo.n_data_points == 300
    assert np.allclose(result.compare({"again": result})["elpd_diff"], 0.0)
    first = result.sample_posterior_predictive(n_draws=50, random_seed=2)["posterior_predictive"]["label"].values
    again = result.sample_posterior_predictive(n_draws=50, random_seed=2)["posterior_predictive"]["label"].values
    np.testing.assert_array_equal(first, again)
    observed = result.idata["observed_data"]["label"].values
    shares = [np.bincount(first.ravel(), minlength=3) / first.size, np.bincount(observed, minlength=3) / observed.size]
    np.testing.assert_allclose(*shares, atol=0.03)
    assert len(az.summary(result.idata, var_names=["prevalence"])) == 3
    loaded = LabelsResult.load(result.save(tmp_path / "labels.nc"))
    assert loaded.spec == result.spec and loaded.inference == result.inference and repr(loaded) == repr(result)
    pd.testing.assert_frame_equal(loaded.item_table(), result.item_table())


def test_same_seed_same_draws(sim, result):
    again = fit_labels(sim["labels"], inference="nuts", random_seed=1, progressbar=False)
    xr.testing.assert_equal(again.posterior["confusion"], result.posterior["confusion"])


def test_gold_items_are_observed_classes(sim):
    gold = sim["classes"].iloc[:40]
    with_gold = fit_labels(sim["labels"], gold=gold, inference="nuts", random_seed=2, progressbar=False)
    items = with_gold.item_table()
    rows = items.loc[gold.index]
    assert (rows["gold"] == gold.astype(str)).all() and (rows["map_class"] == rows["gold"]).all()
    np.testing.assert_allclose(rows["p_map"], 1.0)
    assert items.loc[~items.index.isin(gold.index), "gold"].isna().all()
    assert with_gold.loo().n_data_points == 300 and "40 gold" in repr(with_gold)


def test_bad_gold_is_named(sim):
    data = labels_data(sim["labels"])
    with pytest.raises(InvalidInputError, match="no labels in the labels table.*'ghost'"):
        gold_classes(data, {"ghost": 1, "item0": 1})
    with pytest.raises(InvalidInputError, match=r"outside the classes \['0', '1', '2'\]"):
        gold_classes(data, {"item0": 7})
    with pytest.raises(InvalidInputError, match="two gold classes"):
        gold_classes(data, pd.DataFrame({"item": ["item0", "item0"], "label": [0, 1]}))
    with pytest.raises(InvalidInputError, match="'truth'"):
        gold_classes(data, pd.DataFrame({"item": ["item0"], "label": [0]}), label="truth")


def test_labels_read_as_numbers_match_declared_classes():
    rows = pd.DataFrame({"item": [1, 1, 2, 2], "annotator": ["a", "b", "a", "b"], "label": [1.0, 2.0, 2.0, 2.0]})
    data = labels_data(rows, classes=[1, 2, 3])
    assert list(data.classes) == ["1", "2", "3"] and list(data.label_index) == [0, 1, 1, 1]
    with pytest.raises(InvalidInputError, match="outside the declared classes"):
        labels_data(rows.assign(label=[1.0, 2.5, 2.0, 2.0]), classes=[1, 2, 3])


def test_an_annotator_worse_than_chance_is_named():
    sim = simulate_labels(n_items=300, adversarial=1, random_seed=4, **DESIGN)
    with pytest.warns(BoundWarning, match=r"worse than chance.*\['annotator0'\]"):
        fitted = fit_labels(sim["labels"], inference="nuts", random_seed=3, progressbar=False)
    table = fitted.annotator_table()
    assert table["worse_than_chance"].tolist() == [name == "annotator0" for name in table.index]
    assert fitted.item_table()["map_class"].eq(sim["classes"].astype(str)).mean() > 0.85  # read through its confusion matrix


def test_a_switched_chain_is_named():
    """Two chains of the same draws, the second with true classes 0 and 1 swapped (the rows of
    every confusion matrix: the mirror mode, where the labels observed stay and the classes
    behind them trade places): the check names chain 1 and the swap."""
    rng = np.random.default_rng(5)
    confusion = rng.dirichlet([8, 1, 1], size=(1, 50, 4, 3))  # each row's mass on label 0 ...
    confusion = np.stack([np.roll(confusion[0, :, :, k], k, axis=-1) for k in range(3)], axis=2)[None]  # ... moved to the diagonal
    swapped = confusion[:, :, :, [1, 0, 2]]
    draws = xr.DataArray(np.concatenate([confusion, swapped]), dims=("chain", "draw", "annotator", "true_class", "label"))
    assert switched_chains(draws) == {1: [1, 0, 2]}
    assert switched_chains(draws.isel(chain=[0])) == {}
    with pytest.warns(ConvergenceWarning, match="chain 1: a->b, b->a"):
        warn_switched(switched_chains(draws), ["a", "b", "c"])


def test_laplace_draws_at_scale_agree_with_nuts():
    """2,000 items: ``inference="auto"`` keeps the importance-sampled Laplace draws (Pareto k
    under its threshold), whose means and SDs match NUTS's within Monte Carlo error."""
    sim = simulate_labels(n_items=2000, prevalence=[0.5, 0.3, 0.2], random_seed=6, **DESIGN)
    laplace = fit_labels(sim["labels"], random_seed=4, progressbar=False)
    nuts = fit_labels(sim["labels"], inference="nuts", random_seed=4, progressbar=False)
    assert laplace.inference.path == "laplace" and laplace.convergence.converged and nuts.convergence.converged
    for table in ("annotator_table", "prevalence_table"):
        a, b = getattr(laplace, table)(), getattr(nuts, table)()
        np.testing.assert_allclose(a["mean"], b["mean"], atol=0.25 * b["sd"].max())
        np.testing.assert_allclose(a["sd"], b["sd"], rtol=0.2)


def test_agreement_coefficients_beside_the_model(result):
    """Krippendorff's alpha and Fleiss' kappa of the same labels (the agreement family's
    functions on the rows as they are) beside the share of items where the model's class is the
    majority vote."""
    from bayes_raters.agreement import fleiss_kappa, krippendorff_alpha

    table = result.agreement()
    long = result.data.rows.rename(columns={"item": "response", "annotator": "rater", "label": "score"})
    assert table["krippendorff_alpha"] == pytest.approx(krippendorff_alpha(long, level="nominal"))
    assert table["fleiss_kappa"] == pytest.approx(fleiss_kappa(long))
    assert 0.05 < table["fleiss_kappa"] < 0.5 and 0.8 < table["map_equals_majority"] < 1.0  # kappa 0.18: a spammer, prevalence 0.6/0.3/0.1


def test_hierarchical_pools_confusions_by_annotator_kind(tmp_path):
    """Eight annotators of two kinds (five humans, three LLMs), three labels per item: the fit
    converges, seven of eight accuracy intervals cover their truth at 95% (pooling shrinks the
    best annotator toward its kind), each kind's typical
    confusion matrix favours the correct label, and the kinds survive save and load."""
    sim = simulate_labels(n_items=300, n_annotators=8, n_classes=3, labels_per_item=3, random_seed=5)
    kinds = {f"annotator{a}": ("llm" if a >= 5 else "human") for a in range(8)}
    fitted = fit_labels(sim["labels"], "hierarchical", annotator_kind=kinds, random_seed=1, progressbar=False)
    assert fitted.convergence.converged and fitted.convergence.divergences == 0
    table = fitted.annotator_table(ci_prob=0.95).reindex(list(kinds))
    truth = true_accuracy(sim)
    inside = (table["lower"] < truth) & (truth < table["upper"])
    assert inside.sum() >= 7, table.assign(truth=truth)  # the best human (0.842) sits just above its shrunk interval (upper 0.839)
    assert np.abs(table["mean"] - truth).mean() < 0.05
    assert table["kind"].tolist() == list(kinds.values())
    typical = fitted.kind_table()["mean"].unstack("label")
    for kind in ("human", "llm"):
        rows = typical.loc[kind].to_numpy()
        assert (rows.argmax(axis=1) == np.arange(3)).all()
    loaded = LabelsResult.load(fitted.save(tmp_path / "hierarchical.nc"))
    assert loaded.spec.kinds == fitted.spec.kinds and loaded.model == "hierarchical"


def test_annotator_kinds_are_checked(sim, result):
    with pytest.raises(InvalidInputError, match=r"without a kind: \['annotator1'"):
        fit_labels(sim["labels"], "hierarchical", annotator_kind={"annotator0": "human"})
    with pytest.raises(InvalidInputError, match="needs model='hierarchical'"):
        fit_labels(sim["labels"], annotator_kind={"annotator0": "human"})
    with pytest.raises(InvalidInputError, match="needs model='hierarchical'"):
        result.kind_table()
