"""Polytomous IRT (GRM, GPCM), abilities integrated out: formulas, likelihood against
numerical integration, category handling and errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pymc as pm
import pytest
from scipy import integrate, special, stats

from bayes_raters.errors import BayesRatersError, InputWarning
from bayes_raters.inference_record import EXACT_REJECTION_THETA
from bayes_raters.irt.polytomous.answered import answered_logp
from bayes_raters.irt.polytomous.model import (
    CategoryLayout,
    build_polytomous_model,
    category_logp,
    validate_ordinal_ratings,
)
from tests.modes import PYTHON

LAYOUT = CategoryLayout(np.array([2, 3, 5, 4]))
A = np.array([0.7, 1.3, 2.0, 1.0])
B = np.array([0.2, -1.0, 0.5, -2.0, -0.5, 0.3, 1.8, -1.0, 0.0, 1.5])  # ordered within each item
THETA = np.linspace(-4, 4, 9)


def _thresholds(j):
    return B[LAYOUT.thr_item == j]


def test_grm_is_the_difference_of_cumulative_logistics():
    log_p = category_logp("grm", A, B, THETA, LAYOUT, lib=np)
    for row, (j, k) in enumerate(zip(LAYOUT.cat_item, LAYOUT.step)):
        b = _thresholds(j)
        upper = 1.0 if k == 0 else special.expit(A[j] * (THETA - b[k - 1]))
        lower = 0.0 if k == len(b) else special.expit(A[j] * (THETA - b[k]))
        np.testing.assert_allclose(np.exp(log_p[row]), upper - lower, atol=1e-13)


def test_gpcm_is_the_normalised_cumulative_step_sum():
    log_p = category_logp("gpcm", A, B, THETA, LAYOUT, lib=np)
    for j in range(LAYOUT.n_items):
        b = _thresholds(j)
        z = np.array([np.zeros_like(THETA)] + [sum(A[j] * (THETA - b[v]) for v in range(k)) for k in range(1, len(b) + 1)])
        np.testing.assert_allclose(np.exp(log_p[LAYOUT.cat_item == j]), np.exp(z - special.logsumexp(z, axis=0)), atol=1e-13)


@pytest.mark.parametrize("model", ["grm", "gpcm"])
def test_pytensor_and_numpy_category_probabilities_agree(model):
    import pytensor.tensor as pt

    a, b, theta = pt.dvector("a"), pt.dvector("b"), pt.dvector("theta")
    graph = category_logp(model, a, b, theta, LAYOUT).eval({a: A, b: B, theta: THETA})
    np.testing.assert_allclose(graph, category_logp(model, A, B, THETA, LAYOUT, lib=np), atol=1e-12)


@pytest.mark.parametrize("model", ["grm", "gpcm"])
def test_answered_log_probabilities_match_the_category_formulas(model):
    """answered_logp (the GPCM's compiled kernel included) against category_logp summed over
    each unit's answers: items of 2-5 categories, missing answers, slopes up to 150 and
    abilities out to +-9, so the kernel's overflow fallback runs too."""
    rng = np.random.default_rng(3)
    layout = CategoryLayout(np.array([2, 5, 3, 4, 5]))
    a = np.array([0.4, 1.0, 2.5, 8.0, 150.0])
    b = np.concatenate([np.sort(rng.normal(0, 1.5, k - 1)) for k in layout.n_categories])
    theta = np.concatenate([rng.normal(0, 2, 60), [-9.0, 9.0, 0.0]])
    rows = np.full((len(theta), layout.n_items), -1)
    for j, k in enumerate(layout.n_categories):
        answered = rng.random(len(theta)) > 0.2
        rows[answered, j] = layout.cat_start[j] + rng.integers(k, size=answered.sum())
    every = category_logp(model, a, b, theta, layout, lib=np)  # (category rows, units)
    expected = np.array([sum(every[r, i] for r in rows[i] if r >= 0) for i in range(len(theta))])
    got = answered_logp(model, a, b, theta, rows, layout)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-9)


def _ratings(seed=0, n=40, missing=0.1):
    rng = np.random.default_rng(seed)
    rows = [
        (f"r{i}", f"i{j}", int(rng.integers(k)) + 1)
        for i in range(n) for j, k in enumerate(LAYOUT.n_categories) if rng.random() >= missing
    ]
    return pd.DataFrame(rows, columns=["respondent", "item", "score"])


@pytest.mark.parametrize("model", ["grm", "gpcm"])
def test_marginal_likelihood_equals_the_numerical_integral_per_respondent(model):
    """The model's Potential at a random point against scipy's adaptive quadrature of every
    respondent's likelihood times the normal density: within 1e-6 per respondent."""
    ratings = _ratings()
    irt = build_polytomous_model(ratings, model)
    rng = np.random.default_rng(1)
    point = {k: v + rng.normal(0, 0.3, np.shape(v)) for k, v in irt.initial_point().items()}
    potential = float(irt.compile_logp(vars=irt.potentials, jacobian=False, mode=PYTHON)(point))
    a, b = irt.compile_fn(irt.replace_rvs_by_values([irt["a"], irt["b"]]), inputs=irt.value_vars, on_unused_input="ignore", mode=PYTHON)(point)
    layout, items, table = irt.polytomous["layout"], list(irt.polytomous["categories"]), irt.polytomous["table"]
    total = 0.0
    for _, answers in table.groupby("respondent"):
        rows = [layout.cat_start[items.index(i)] + c for i, c in zip(answers["item"], answers["category"])]

        def density(t, rows=rows):
            return np.exp(category_logp(model, a, b, np.array([t]), layout, lib=np)[rows, 0].sum()) * stats.norm.pdf(t)

        total += np.log(integrate.quad(density, -10, 10, epsabs=1e-15, epsrel=1e-12)[0])
    assert abs(potential - total) <= 1e-6 * table["respondent"].nunique()
    assert np.isfinite(irt.compile_dlogp(mode=PYTHON)(point)).all()


@pytest.mark.filterwarnings("ignore:The effect of Potentials:UserWarning")
def test_grm_thresholds_are_ordered_in_prior_draws_and_every_variable_has_dims():
    irt = build_polytomous_model(_ratings(), "grm")
    with irt:
        prior = pm.sample_prior_predictive(50, random_seed=2, var_names=["a", "b"])["prior"]
    b = prior["b"].values.reshape(-1, len(irt.coords["threshold"]))
    layout = irt.polytomous["layout"]
    for j in range(layout.n_items):
        assert (np.diff(b[:, layout.thr_item == j], axis=1) > 0).all()
    named = {v.name for v in irt.free_RVs + irt.deterministics} - {"d_gap"}
    assert all(irt.named_vars_to_dims.get(name) for name in named), irt.named_vars_to_dims


def test_identical_patterns_are_pooled_with_their_missingness():
    rows = [(f"r{i}", f"i{j}", i % k + 1) for i in range(5) for j, k in enumerate(LAYOUT.n_categories)]
    ratings = pd.DataFrame(rows, columns=["respondent", "item", "score"])
    copies = pd.concat([ratings.assign(respondent=ratings["respondent"] + f"_{c}") for c in range(4)])
    copies = copies[~((copies["respondent"] == "r0_0") & (copies["item"] == "i3"))]  # one missing answer
    irt = build_polytomous_model(copies, "gpcm")
    counts = irt["pattern_count"].get_value()
    assert len(counts) == 6 and sorted(counts) == [1, 3, 4, 4, 4, 4]
    assert irt["pattern_onehot"].get_value().sum(axis=1).min() == 3  # the missing answer is a zero block


def test_unused_scores_are_collapsed_and_said():
    ratings = _ratings(4, missing=0.0)
    ratings.loc[(ratings["item"] == "i2") & (ratings["score"] == 3), "score"] = 2  # nobody gives item i2 a 3
    with pytest.warns(InputWarning, match=r"'i2': \[3\]"):
        table, categories = validate_ordinal_ratings(ratings)
    assert categories["i2"] == [1.0, 2.0, 4.0, 5.0]
    assert table.loc[(table["item"] == "i2") & (table["score"] == 4), "category"].eq(2).all()


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda r: r.assign(score=r["score"] + 0.5), "whole-number"),
        (lambda r: r.assign(score=np.where(r["item"] == "i1", 2, r["score"])), "one score only"),
        (lambda r: r.rename(columns={"score": "rating"}), "score"),
    ],
)
def test_bad_ratings_raise_a_clear_error(change, message):
    with pytest.raises(BayesRatersError, match=message):
        build_polytomous_model(change(_ratings(5)), "grm")


@pytest.mark.parametrize("model", ["grm", "gpcm"])
def test_information_is_the_fisher_information_of_the_category_probabilities(model):
    from bayes_raters.irt.polytomous.model import item_information

    h = 1e-5
    p = np.exp(category_logp(model, A, B, THETA, LAYOUT, lib=np))
    slope = (np.exp(category_logp(model, A, B, THETA + h, LAYOUT, lib=np)) - np.exp(category_logp(model, A, B, THETA - h, LAYOUT, lib=np))) / (2 * h)
    numeric = np.array([(slope[LAYOUT.cat_item == j] ** 2 / p[LAYOUT.cat_item == j]).sum(axis=0) for j in range(LAYOUT.n_items)])
    np.testing.assert_allclose(item_information(model, A, B, THETA, LAYOUT), numeric, rtol=1e-6, atol=1e-9)
    binary = special.expit(A[0] * (THETA - B[0]))  # a two-category item is a 2PL item: a^2 P (1 - P)
    np.testing.assert_allclose(item_information(model, A, B, THETA, LAYOUT)[0], A[0] ** 2 * binary * (1 - binary), rtol=1e-12)


def test_unknown_model_is_refused():
    with pytest.raises(BayesRatersError, match="grm"):
        build_polytomous_model(_ratings(), "pcm")


def _simulated(model, n=150, n_items=5, k=4, seed=7):
    from bayes_raters.irt.polytomous.model import CategoryLayout

    rng = np.random.default_rng(seed)
    layout = CategoryLayout(np.full(n_items, k))
    a = rng.lognormal(0, 0.3, n_items)
    b = np.sort(rng.normal(0, 1, (n_items, k - 1)), axis=1).ravel()
    theta = rng.normal(0, 1, n)
    p = np.exp(category_logp(model, a, b, theta, layout, lib=np))
    rows = []
    for j in range(n_items):
        cats = (rng.random(n)[None, :] > np.cumsum(p[layout.cat_item == j], axis=0)).sum(axis=0)
        rows += [(f"r{i}", f"i{j}", int(c) + 1) for i, c in enumerate(cats)]
    return pd.DataFrame(rows, columns=["respondent", "item", "score"])


def test_gpcm_fit_has_tables_theta_draws_loo_replicates_and_saves_losslessly(tmp_path):
    import arviz as az

    from bayes_raters.irt.polytomous.fit import fit_polytomous

    result = fit_polytomous(_simulated("gpcm"), "gpcm", draws=2000, tune=700, chains=2, random_seed=3, progressbar=False)
    assert result.posterior["theta"].dims == ("chain", "draw", "respondent")
    assert result.posterior["theta"].sizes["respondent"] == 150
    assert result.inference.theta_draws == EXACT_REJECTION_THETA
    assert 0.5 < result.inference.theta_mh_acceptance <= 1.0
    items, thresholds, people = result.item_table(), result.threshold_table(), result.respondent_table()
    assert list(items.columns[:5]) == ["n_categories", "a_mean", "a_sd", "a_lower", "a_upper"]
    assert {"b_1", "b_2", "b_3", "r_hat", "ess_bulk", "info_at_-2", "info_at_0", "info_at_2"} <= set(items.columns)
    assert len(items) == 5 and (items["info_at_0"] > 0).all()
    ax = result.plot_category_curves("i2")
    assert [line.get_label() for line in ax.get_lines()] == ["score 1", "score 2", "score 3", "score 4"]
    info_ax = result.plot_information()
    test_info = info_ax.get_lines()[0].get_ydata()
    assert np.allclose(test_info[40], np.median(result.information([0.0]).sum(axis=1)), rtol=0.05)  # theta = 0
    assert info_ax.get_legend().get_texts()[1].get_text() == "SE of theta (right axis)"
    assert len(thresholds) == 15 and (thresholds["b_lower"] < thresholds["b_upper"]).all()
    assert people["n_items"].eq(5).all() and np.isfinite(people["theta_mean"]).all()
    assert result.idata["log_likelihood"]["ratings"].sizes["respondent"] == 150
    assert np.isfinite(az.loo(result.idata).elpd)
    replicated = result.sample_posterior_predictive(n_draws=10, random_seed=1)["posterior_predictive"]["category"]
    assert replicated.sizes["rating"] == len(result.table)
    assert 0 <= int(replicated.min()) and int(replicated.max()) <= 3
    assert abs(float(replicated.mean()) - result.table["category"].mean()) < 0.3
    loaded = type(result).load(result.save(tmp_path / "gpcm.nc"))
    pd.testing.assert_frame_equal(loaded.item_table(), items)
    pd.testing.assert_frame_equal(loaded.table.reset_index(drop=True), result.table[loaded.table.columns].reset_index(drop=True), check_dtype=False)
    assert loaded.categories == result.categories and loaded.convergence == result.convergence


def test_command_line_fits_gpcm_and_refuses_binary_only_flags(tmp_path, capsys):
    import json

    from bayes_raters.cli import main

    ratings = _simulated("gpcm").rename(columns={"respondent": "student", "score": "likert"})
    ratings["likert"] += 1  # a 2-5 scale
    path = tmp_path / "likert.csv"
    ratings.to_csv(path, index=False)
    assert main(["irt", str(path), "--model", "gpcm", "--method", "joint"]) == 2
    assert "Leave out --method" in capsys.readouterr().err
    code = main(["irt", str(path), "--model", "gpcm", "--respondent-column", "student", "--score-column", "likert",
                 "--draws", "2000", "--tune", "700", "--seed", "3", "--json", "--quiet", "--local-dependence"])
    out = capsys.readouterr()
    assert code == 0, out.err
    data = json.loads(out.out)
    assert set(data) == {"items", "thresholds", "respondents", "convergence", "inference", "pairs"}
    assert len(data["pairs"]) == 10 and {"item_a", "item_b", "excess", "ppp", "flagged"} <= set(data["pairs"][0])
    assert len(data["items"]) == 5 and len(data["thresholds"]) == 15 and len(data["respondents"]) == 150
    assert data["convergence"]["converged"] is True


def test_default_laplace_draws_match_nuts_on_the_same_data():
    """inference="auto" keeps importance-sampled Laplace draws here (Pareto k below 0.7); their
    posterior means and SDs match NUTS's on the same data (Monte Carlo error of a mean
    difference at these ESS: about 0.05 SD; the bound is 0.3 SD)."""
    from bayes_raters.irt.polytomous.fit import fit_polytomous

    ratings = _simulated("grm", n=800, seed=11)
    default = fit_polytomous(ratings, "grm", random_seed=5, progressbar=False)
    nuts = fit_polytomous(ratings, "grm", random_seed=5, progressbar=False, inference="nuts")
    assert default.inference.path == "laplace" and nuts.inference.path == "nuts"
    assert default.convergence.pareto_k <= 0.7 and default.convergence.converged
    for name in ("a", "b"):
        x, y = default.posterior[name], nuts.posterior[name]
        sd = y.std(("chain", "draw"))
        assert float((abs(x.mean(("chain", "draw")) - y.mean(("chain", "draw"))) / sd).max()) < 0.3, name
        ratio = x.std(("chain", "draw")) / sd
        assert 0.8 < float(ratio.min()) and float(ratio.max()) < 1.25, name


@pytest.mark.parametrize("model", ["grm", "gpcm"])
@pytest.mark.parametrize("missing", [False, True])
def test_numpy_proposal_density_equals_the_model_log_density(model, missing):
    """The Laplace proposals' log density (PyMC's graph without the marginal potential, plus the
    potential in NumPy: ``model.numpy_term``) is the model's log density at points around the
    start, with complete and incomplete ratings and items of different numbers of categories;
    dropping the potential's pattern counts or a category fails it."""
    from bayes_raters import laplace
    from bayes_raters.irt import simulate_ratings
    from bayes_raters.irt.polytomous.model import build_polytomous_model

    ratings, _ = simulate_ratings(160, 5, 4, random_seed=12)
    ratings.loc[ratings["item"] == ratings["item"].iloc[0], "score"] = ratings["score"].clip(upper=2)  # a 3-category item
    if missing:
        ratings = ratings.sample(frac=0.85, random_state=3)
    built = build_polytomous_model(ratings, model)
    split, _, x0, _, _ = laplace._raveled(built)
    del built.numpy_term
    whole, *_ = laplace._raveled(built)
    fast, reference = split(), whole()
    for x in x0 + 0.3 * np.random.default_rng(2).standard_normal((5, x0.size)):
        assert fast(x) == pytest.approx(float(reference(x)), rel=1e-12, abs=1e-9)
