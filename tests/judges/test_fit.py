"""fit_judges on simulated designs not drawn from its priors: the result contract, the tables,
and the human-independence check."""

from __future__ import annotations

import re
import warnings

import arviz as az
import numpy as np
import pytest

from bayes_raters.errors import BoundWarning, InputWarning
from bayes_raters.judges import JudgesResult, fit_judges, simulate_judges
from bayes_raters.judges.draws import parameter_draws
from bayes_raters.judges.marginal import response_loglik
from bayes_raters.judges.model import MAX_SHARED_SHARE, observation_rows, row_terms, system_weights


@pytest.fixture(scope="module")
def sim():
    return simulate_judges(n_systems=3, n_responses=80, judge_quality=(0.8, 0.5, 0.3), human_share=0.25, random_seed=11)


#: The fixture fit's seed. Seeds 1-7 and 11 on this design (block likelihood): 0 divergences in 7
#: of 8 fits, R-hat <= 1.0098, ESS >= 530; seed 11 had 1 divergence (``models/judges.md``).
FIT_SEED = 1


@pytest.fixture(scope="module")
def result(sim):
    with warnings.catch_warnings():
        warnings.simplefilter("error", BoundWarning)
        return fit_judges(sim["human_ratings"], sim["judge_scores"], sim["systems"], random_seed=FIT_SEED, progressbar=False)


def test_converges_and_recovers_the_systems(result, sim):
    report = result.convergence
    assert report.converged and report.divergences == 0 and report.max_r_hat < 1.01
    table = result.system_table(ci_prob=0.99)
    truth = sim["truth"]["system_mean"].reindex(table.index)
    assert ((table["lower"] < truth) & (truth < table["upper"])).all()
    assert list(table.sort_values("mean").index) == ["system0", "system1", "system2"]
    assert table["p_best"].sum() == pytest.approx(1.0)
    assert table.loc["system2", "rank_lower"] == 1


def test_differences_and_judges(result):
    differences = result.difference_table()
    assert differences.loc[("system0", "system2"), "p_a_better"] < 0.05
    judges = result.judge_table()
    assert judges["prmse_mean"].is_monotonic_decreasing  # quality 0.8 > 0.5 > 0.3 with the true score
    assert judges.loc["judge0", "slope_lower"] > 0.3
    assert judges.loc["judge0", "worth_mean"] > judges.loc["judge2", "worth_mean"]
    assert result.spec.shared_error  # on by default with three judges: the share of each judge's error it shares
    assert ((judges["shared_share_lower"] >= 0) & (judges["shared_share_upper"] <= MAX_SHARED_SHARE)).all()
    assert not judges["own_error_near_zero"].any()  # no Heywood case (the fixture's fit also refuses its BoundWarning)
    assert not judges["shared_share_at_cap"].any()


def test_baselines_beside_the_model(result):
    table = result.baseline_table()
    assert set(table.index.get_level_values("method")) == {"humans", "judges_naive", "ppi", "ppi++", "bayes_raters"}
    assert (table["width"] > 0).all()


def test_result_contract(result, tmp_path):
    assert "system_mean" in az.summary(result.idata, var_names=["system_mean"]).index[0]
    assert result.loo().elpd is not None
    pointwise = result.compute_log_likelihood()["log_likelihood"]["responses"].values[0, 0]  # chain 0, draw 0: the block form
    p = next(parameter_draws(result.posterior, result.spec.shared_error, system_weights(result.data)))
    values, response, system, rater, judge = observation_rows(result.data)
    mean, load_true, load_shared, variance = row_terms(p, system, rater, judge)
    rows = response_loglik(values - mean, load_true, load_shared, variance, response, len(result.data.responses))
    np.testing.assert_allclose(pointwise, rows, rtol=1e-12)
    tree = result.sample_posterior_predictive(n_draws=40, random_seed=1)
    assert tree["posterior_predictive"]["human"].shape[-1] == len(result.data.humans)
    loaded = JudgesResult.load(result.save(tmp_path / "judges.nc"))
    np.testing.assert_allclose(loaded.system_table()["mean"], result.system_table()["mean"])
    assert loaded.spec == result.spec and "judges model" in repr(loaded)


def test_same_seed_same_draws(result, sim):
    """The fixture's fit again with its seed: the same draws (one new compile, not two)."""
    again = fit_judges(sim["human_ratings"], sim["judge_scores"], sim["systems"], random_seed=FIT_SEED, progressbar=False)
    np.testing.assert_array_equal(result.posterior["system_mean"].values, again.posterior["system_mean"].values)


@pytest.mark.filterwarnings("ignore::bayes_raters.errors.ConvergenceWarning")  # the flag is the point, not the draws
def test_ratings_that_disagree_within_responses_are_flagged():
    """Two ratings per response pushed apart (one up, one down by 1.5 SD): the within-response
    correlation is negative, which independent rater errors cannot give."""
    sim = simulate_judges(n_systems=2, n_responses=80, judge_quality=(0.8, 0.6, 0.5), human_share=0.5, human_correlation=0.6, random_seed=21)
    humans = sim["human_ratings"].copy()
    humans["score"] += np.where(humans.groupby("response").cumcount() == 0, 1.5, -1.5)
    with pytest.warns(BoundWarning, match="agree less than independent rater errors allow"):
        flagged = fit_judges(humans, sim["judge_scores"], sim["systems"], draws=200, tune=300, random_seed=21, progressbar=False)
    check = flagged.human_check()
    assert check.loc["all", "flagged"] and check.loc["all", "observed"] < 0


@pytest.mark.filterwarnings("ignore::bayes_raters.errors.ConvergenceWarning")  # the flags are the point, not the draws
def test_a_judge_that_overrules_the_humans_is_flagged(caplog):
    """A judge whose scores are constant within one system (a reference-based metric scoring the
    reference): the data layer names it, and the fit, whose true-score spread the judge pulls
    down, finds the human ratings agreeing more than its replicates allow; the judge's own noise
    comes out near zero (it defines the true score), which is named too."""
    sim = simulate_judges(n_systems=3, n_responses=80, judge_quality=(0.8,), human_share=0.4, human_correlation=0.6, random_seed=22)
    scores = sim["judge_scores"].copy()
    first = scores["response"].isin(sim["systems"].loc[sim["systems"]["system"] == "system0", "response"])
    scores.loc[first, "score"] = 99.0 + 0.01 * np.random.default_rng(0).standard_normal(first.sum())
    with pytest.warns(InputWarning, match="judge0 on system0"), pytest.warns(BoundWarning) as record, caplog.at_level("ERROR", logger="pytensor"):
        result = fit_judges(sim["human_ratings"], scores, sim["systems"], draws=200, tune=300, random_seed=22, progressbar=False)
    assert not caplog.records, "a PyTensor rewrite failed (one judge: numba_mode_excluding)"  # no traceback printed to the user
    messages = [str(w.message) for w in record if issubclass(w.category, BoundWarning)]
    assert any("agree more than" in m for m in messages) and any("Heywood" in m and "judge0" in m for m in messages)
    assert result.judge_table().loc["judge0", "own_error_near_zero"]
    check = result.human_check()
    assert check.loc["all", "direction"] == "more" and check.loc["system0", "flagged"]


def test_judges_that_share_nearly_all_their_error_are_named():
    """Three judges whose errors are 97% one common error: the model keeps a tenth of each judge's
    error its own, so the shared shares pile against that cap (judge1, judge2 at 0.88; judge0,
    the best judge, near 0.8, where its own noise is also pushed toward zero), and the fit names
    each."""
    sim = simulate_judges(n_systems=3, n_responses=150, judge_quality=(0.7, 0.6, 0.5), shared_error=0.97, human_share=0.3, random_seed=5)
    with pytest.warns(BoundWarning) as record:
        result = fit_judges(sim["human_ratings"], sim["judge_scores"], sim["systems"], random_seed=5, progressbar=False)
    messages = [str(w.message) for w in record]
    assert any(re.search(r"shared share of the error variance of (judge0, )?judge1, judge2 piles", m) for m in messages)
    table = result.judge_table()
    assert result.convergence.converged and table.loc[["judge1", "judge2"], "shared_share_at_cap"].all()
    assert table.loc["judge0", ["own_error_near_zero", "shared_share_at_cap"]].any()


@pytest.mark.filterwarnings("ignore::bayes_raters.errors.ConvergenceWarning")  # 200 draws: the check's shape is tested
def test_one_rating_per_response_gives_no_independence_rows():
    sim = simulate_judges(n_systems=2, n_responses=40, judge_quality=(0.8,), ratings_per_response=1, human_share=0.3, random_seed=4)
    result = fit_judges(sim["human_ratings"], sim["judge_scores"], sim["systems"], draws=200, tune=300, random_seed=4, progressbar=False)
    check = result.human_check()
    assert check.empty and "flagged" in check.columns
