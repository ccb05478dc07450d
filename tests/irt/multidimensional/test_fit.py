"""Multidimensional IRT (bayes_raters.irt.multidimensional.model): quadrature, anchors, input checks, and
small exploratory and confirmatory fits. The 1D-vs-2D structure check at 1,000 x 20 is slow
(tests/irt/test_validation.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

from bayes_raters.errors import InvalidInputError
from bayes_raters.irt import fit_irt, simulate_factor_answers
from bayes_raters.irt.binary.model import validate_responses
from bayes_raters.irt.multidimensional.fit import MIRT_TOLERANCE
from bayes_raters.irt.multidimensional.model import anchor_items, ball_rule, default_spacing, pattern_node_loglik, wide_correct
from bayes_raters.irt.multidimensional.result import MultidimensionalIRTResult
from bayes_raters.quadrature import marginal_loglik

FAST = {"progressbar": False}  # the defaults, 2 x (1,000 + 1,000): at 2 x 500 max R-hat sits at NUTS's floor (models/irt.md)


@pytest.mark.parametrize("k", [2, 3])
def test_ball_rule_integrates_standard_normal_moments(k):
    nodes, log_w = ball_rule(k, default_spacing(10 * k, k))
    w = np.exp(log_w)
    assert w.sum() == pytest.approx(1.0, abs=2e-6)
    assert (w[:, None] * nodes**2).sum(axis=0) == pytest.approx(np.ones(k), abs=1e-4)
    assert np.abs(w @ nodes).max() < 1e-12


def test_two_dimensional_marginal_matches_scipy():
    rng = np.random.default_rng(3)
    a, d = rng.lognormal(0.2, 0.4, (12, 2)), rng.normal(0, 1, 12)
    y = (rng.random((2, 12)) < 0.6).astype(float)
    y[0] = 1.0  # all right: the conditional sits near the edge of the ball
    def ours(spacing):
        nodes, log_w = ball_rule(2, spacing)
        table = pattern_node_loglik(y, np.ones_like(y), a @ nodes.T + d[:, None], None, complete=True, lib=np)
        return marginal_loglik(table, log_w)

    def exact(pattern):
        """The integral by Simpson's rule on a 1,801 x 1,801 grid over [-9, 9]^2: equal to
        scipy.integrate.dblquad's at relative tolerance 1e-9 to the last digit for both patterns,
        in a tenth of the time (the integrand is smooth and decays fast)."""
        z = np.linspace(-9, 9, 1801)
        z1, z2 = np.meshgrid(z, z, indexing="ij")
        loglik = stats.norm.logpdf(z1) + stats.norm.logpdf(z2)
        for j in range(len(d)):
            eta = a[j, 0] * z1 + a[j, 1] * z2 + d[j]
            loglik += pattern[j] * eta - np.logaddexp(0, eta)
        return integrate.simpson(integrate.simpson(np.exp(loglik), x=z, axis=1), x=z)

    default, fine = ours(default_spacing(12, 2)), ours(default_spacing(12, 2) / 2)
    for p in range(2):
        exact_p = exact(y[p])
        assert abs(fine[p] - np.log(exact_p)) < 1e-6  # the error is the spacing's: halving it removes it
        # so the fit's check (rule against half its spacing) measures the rule's real error
        assert abs(default[p] - fine[p]) == pytest.approx(abs(default[p] - np.log(exact_p)), rel=0.05, abs=1e-7)


def test_anchor_items_come_from_different_factors():
    answers, truth = simulate_factor_answers(600, (6, 6), 0.3, random_seed=5)
    table = validate_responses(answers)
    respondents, items = table["respondent"].unique(), table["item"].unique()
    chosen = anchor_items(wide_correct(table, respondents, items), 2)
    assert {truth["dimensions"][items[i]] for i in chosen} == {"g1", "g2"}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"dims": 4}, "dims=K must be an integer from 1 to 3"),
        ({"dims": 2, "dimensions": {}}, "either dimensions="),
        ({"dimensions": {"g1_0": "x"}}, "missing"),
        ({"dims": 2, "anchors": ["g1_0"]}, r"anchors=\.\.\. must list 2 distinct items"),
        ({"dims": 2, "method": "joint"}, "method='marginal'"),
    ],
)
def test_structure_errors_name_the_keyword(kwargs, message):
    answers, _ = simulate_factor_answers(50, (3, 3), random_seed=1)
    with pytest.raises(InvalidInputError, match=message):
        fit_irt(answers, **kwargs)


def test_multidimensional_1pl_is_refused():
    answers, _ = simulate_factor_answers(50, (3, 3), random_seed=1)
    with pytest.raises(InvalidInputError, match="'2pl' or '3pl'"):
        fit_irt(answers, "1pl", dims=2)


@pytest.fixture(scope="module")
def exploratory():
    answers, truth = simulate_factor_answers(300, (4, 4), 0.3, random_seed=11)
    return fit_irt(answers, dims=2, random_seed=4, **FAST), truth


def test_exploratory_fit_has_identified_loadings_and_respondent_log_likelihood(exploratory):
    result, truth = exploratory
    assert isinstance(result, MultidimensionalIRTResult)
    assert result.posterior["a"].dims == ("chain", "draw", "item", "dimension")
    assert result.posterior["theta"].dims == ("chain", "draw", "respondent", "dimension")
    assert result.idata["log_likelihood"]["answers"].dims == ("chain", "draw", "respondent")
    loadings = result.loadings()
    assert loadings["anchor"].sum() == 2 and loadings["fixed_zero"].sum() == 1
    anchors = loadings[loadings["anchor"]]
    assert (anchors["a_lower"] > 0).all()  # the anchors' own loadings are positive (no reflection)
    # each item's largest loading is on the dimension its factor's anchor defines
    own = {truth["dimensions"][item]: dim for (item, dim) in anchors.index}
    main = loadings["a_mean"].abs().unstack().idxmax(axis=1)
    agree = [main[item] == own[truth["dimensions"][item]] for item in main.index]
    assert np.mean(agree) >= 0.75
    assert result.inference.quadrature_error <= MIRT_TOLERANCE
    assert result.inference.theta_mh_acceptance > 0.5
    assert result.loo().pareto_k.max() < 0.7
    table = result.item_table()
    assert {"mdisc_mean", "mdiff_mean", "r_hat", "ess_bulk", "p_correct"} <= set(table.columns)
    assert table["r_hat"].notna().all()


def test_exploratory_abilities_track_the_truth(exploratory):
    result, truth = exploratory
    theta = result.respondent_table()["theta_mean"].unstack()
    # every true ability is explained by the two estimated dimensions (any rotation)
    design = np.c_[theta.to_numpy(), np.ones(len(theta))]
    for g in range(2):
        fitted = design @ np.linalg.lstsq(design, truth["theta"][:, g], rcond=None)[0]
        assert np.corrcoef(fitted, truth["theta"][:, g])[0, 1] > 0.6


def test_posterior_predictive_and_save_round_trip(exploratory, tmp_path):
    result, _ = exploratory
    tree = result.sample_posterior_predictive(n_draws=50, random_seed=1)
    assert tree["posterior_predictive"]["correct"].shape[-1] == len(result.table)
    assert repr(result).count("; converged;") == 1
    loaded = MultidimensionalIRTResult.load(result.save(tmp_path / "mirt.nc"))
    assert loaded.spec.anchors == result.spec.anchors and loaded.spec.dimensions == result.spec.dimensions
    assert loaded.inference == result.inference and loaded.inference.quadrature_error <= MIRT_TOLERANCE
    assert np.array_equal(loaded.posterior["a"].values, result.posterior["a"].values)
    assert loaded.loadings().equals(result.loadings())


def test_confirmatory_fit_estimates_the_ability_correlation():
    answers, truth = simulate_factor_answers(400, (4, 4), 0.6, random_seed=21)
    result = fit_irt(answers, dimensions=truth["dimensions"], random_seed=2, **FAST)
    corr = result.correlations()
    assert len(corr) == 1
    row = corr.iloc[0]
    assert row["corr_lower"] < 0.6 < row["corr_upper"] and row["corr_lower"] > 0.2
    loadings = result.loadings(standardized=True)
    assert loadings["fixed_zero"].sum() == 8  # each item loads on its own dimension only
    assert (loadings.loc[~loadings["fixed_zero"], "lambda_mean"].between(0.2, 1.0)).all()
    items = result.item_table()
    assert not items["flagged"].any() and (items["rest_corr"] > 0).all() and (items["reasons"] == "").all()



def test_exploratory_model_has_no_correlations_to_report(exploratory):
    with pytest.raises(InvalidInputError, match="dimensions="):
        exploratory[0].correlations()


def test_cli_confirmatory_fit_prints_loadings_and_correlations_as_json(tmp_path, capsys):
    import json

    from bayes_raters.cli import main

    answers, truth = simulate_factor_answers(200, (3, 3), 0.6, random_seed=22)
    answers.rename(columns={"respondent": "who"}).to_csv(tmp_path / "answers.csv", index=False)
    pd.DataFrame(list(truth["dimensions"].items()), columns=["item", "dimension"]).to_csv(tmp_path / "map.csv", index=False)
    args = ["irt", str(tmp_path / "answers.csv"), "--dimensions", str(tmp_path / "map.csv"), "--respondent-column", "who",
            "--json", "--seed", "2"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"items", "loadings", "correlations", "respondents", "convergence", "inference"}
    assert len(out["loadings"]) == 12 and len(out["respondents"]) == 400
    assert out["correlations"][0]["corr_lower"] < 0.6 < out["correlations"][0]["corr_upper"]
    assert out["convergence"]["converged"] is True


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--dims", "2", "--model", "1pl"], "not --model 1pl"),
        (["--dims", "2", "--local-dependence"], "without --local-dependence"),
        (["--dims", "4"], "--dims"),
        (["--dims", "2", "--anchors", "g1_0"], "--anchors"),
    ],
)
def test_cli_multidimensional_errors_name_flags(tmp_path, capsys, extra, message):
    from bayes_raters.cli import main

    simulate_factor_answers(50, (3, 3), random_seed=1)[0].to_csv(tmp_path / "answers.csv", index=False)
    assert main(["irt", str(tmp_path / "answers.csv"), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and "=" not in err.split("error:")[-1].replace("==", "")


@pytest.mark.parametrize("model, dims", [("3pl", 2), ("2pl", 3)])
def test_3pl_and_three_dimensions_build_with_a_finite_density(model, dims):
    from bayes_raters.irt.multidimensional.model import build_mirt_model

    answers, _ = simulate_factor_answers(120, (3, 3, 3), 0.3, random_seed=4)
    built = build_mirt_model(validate_responses(answers), model, dims=dims)
    point = built.initial_point()
    assert np.isfinite(built.compile_logp()(point))
    assert np.all(np.isfinite(built.compile_dlogp()(point)))
    assert ("c" in built.named_vars) == (model == "3pl")
    assert len(built.coords["dimension"]) == dims and len(built.mirt["anchors"]) == dims


def test_confirmatory_correlation_starts_at_the_identity():
    """PyMC's default starting point of LKJCorr goes through the C backend, which warned about
    BLAS at every confirmatory fit on a pip install; the model gives the identity instead."""
    from bayes_raters.irt.multidimensional.model import build_mirt_model

    answers, truth = simulate_factor_answers(60, (3, 3), 0.3, random_seed=4)
    built = build_mirt_model(validate_responses(answers), dimensions=truth["dimensions"])
    start = built.rvs_to_initial_values[built["corr_cholesky"]]
    assert start is not None and np.allclose(np.asarray(start), np.eye(2))


@pytest.mark.parametrize("model, structure, missing", [("2pl", "exploratory", False), ("3pl", "exploratory", True),
                                                       ("2pl", "confirmatory", True), ("3pl", "confirmatory", False)])
def test_numpy_proposal_density_equals_the_model_log_density(model, structure, missing):
    """The Laplace proposals' log density (PyMC's graph without the marginal potential, plus
    the potential in NumPy: bayes_raters.laplace.NumpyTerm) is the model's log density: same
    value at points around the start, complete and incomplete answers, with and without c and
    the correlation's Cholesky factor."""
    from bayes_raters import laplace
    from bayes_raters.irt.multidimensional.model import build_mirt_model

    answers, truth = simulate_factor_answers(150, (4, 4), 0.3, random_seed=8)
    if missing:
        answers = answers.sample(frac=0.85, random_state=2)
    kwargs = {"dims": 2} if structure == "exploratory" else {"dimensions": truth["dimensions"]}
    built = build_mirt_model(validate_responses(answers), model, **kwargs)
    split, _, x0, _, _ = laplace._raveled(built, built.mirt["initvals"])
    del built.numpy_term
    whole, *_ = laplace._raveled(built, built.mirt["initvals"])
    fast, reference = split(), whole()
    points = x0 + 0.3 * np.random.default_rng(1).standard_normal((5, x0.size))
    for x in points:
        assert fast(x) == pytest.approx(float(reference(x)), rel=1e-12, abs=1e-9)


@pytest.mark.parametrize("group_sizes, correlation", [((6, 8), -0.5), ((4, 4, 5), 0.6)])
def test_the_factorised_rule_equals_a_fine_ball_rule(group_sizes, correlation):
    """The confirmatory model's rule (AxisRule: a grid on the abilities, the item sums per axis,
    the correlation in the weights) gives each pattern's log marginal and the abilities'
    conditional moments of the general ball rule at a third of its spacing (to well within the
    fit's quadrature tolerance); a wrong weight
    (the correlation dropped) does not."""
    from bayes_raters.irt.multidimensional.factorised import AxisRule
    from bayes_raters.irt.multidimensional.fit import BallRule
    from bayes_raters.irt.multidimensional.model import RADIUS, build_mirt_model, default_spacing

    answers, truth = simulate_factor_answers(300, group_sizes, correlation, random_seed=3)
    built = build_mirt_model(validate_responses(answers.sample(frac=0.9, random_state=1)), dimensions=truth["dimensions"])
    correct, answered = (built[name].get_value() for name in ("pattern_correct", "pattern_answered"))
    k, n_items, item_dim = len(group_sizes), sum(group_sizes), built.mirt["item_dimension"]
    rng = np.random.default_rng(0)
    a = np.zeros((n_items, k))
    a[np.arange(n_items), item_dim] = np.exp(rng.normal(0, 0.4, n_items))
    d = rng.normal(0, 1, n_items)
    corr = np.full((k, k), correlation) + (1 - correlation) * np.eye(k)
    chol = np.linalg.cholesky(corr)
    h = default_spacing(n_items, k)
    axis = AxisRule(correct, answered, item_dim, k, h, RADIUS[k])
    log_p, mean, cov = axis.moments(a, d, None, chol)
    ref_p, ref_mean, ref_cov = BallRule(correct, answered, k, h / 3).moments(a, d, None, chol)
    error = np.abs(axis.numpy_log_marginal(a, d, None, chol) - ref_p).max()
    assert error < 1e-4  # the fit's check allows MIRT_TOLERANCE = 1e-3 (2e-5 measured at three abilities)
    assert np.abs(log_p - ref_p).max() == pytest.approx(error, rel=1e-6)
    assert np.abs(mean - ref_mean).max() < 1e-3 and np.abs(cov - ref_cov).max() < 1e-3
    assert np.abs(axis.numpy_log_marginal(a, d, None, np.eye(k)) - ref_p).max() > 1e-2
