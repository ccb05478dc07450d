"""fit_leaderboard and its result: recovery on a leaderboard the priors did not generate, the
item and system tables, the flags, and clear errors for bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_raters.errors import ConvergenceWarning, InvalidInputError, SmallSampleWarning
from bayes_raters.leaderboard import LeaderboardResult, fit_leaderboard, simulate_leaderboard


@pytest.fixture(scope="module")
def planted():
    """60 systems x 400 items (skewed abilities, two difficulty clusters, 3% flat items), one
    item reversed (its answers flipped: a miskeyed item) and one that every system got right."""
    answers, truth = simulate_leaderboard(60, 400, random_seed=7)
    reversed_item, easy_item = "item00003", "item00005"
    answers.loc[answers["item"] == reversed_item, "correct"] = 1 - answers.loc[answers["item"] == reversed_item, "correct"]
    answers.loc[answers["item"] == easy_item, "correct"] = 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallSampleWarning)  # the planted all-correct item
        result = fit_leaderboard(answers, random_seed=3, progressbar=False)
    return answers, truth, result, reversed_item, easy_item


def test_the_fit_recovers_difficulties_abilities_and_converges(planted):
    answers, truth, result, reversed_item, easy_item = planted
    assert isinstance(result, LeaderboardResult) and result.convergence.converged, result.convergence
    items = result.item_table()
    keep = (truth["a"] > 0.2) & ~truth["a"].index.isin([reversed_item, easy_item])
    b = items["b_mean"].reindex(truth["b"].index)
    assert np.corrcoef(b[keep], truth["b"][keep])[0, 1] > 0.9
    systems = result.system_table()
    theta = systems["theta_mean"].reindex(truth["theta"].index)
    # 400 answers leave each ability a posterior SD near 0.12 against a spread of 1, which caps the
    # correlation of posterior means with the truth near sqrt(1 - 0.12^2) = 0.993 (0.990 and 0.995 seen)
    assert np.corrcoef(theta, truth["theta"])[0, 1] > 0.98
    # the truth on the scale the model fixes (the systems' abilities with mean 0 and SD 1)
    scale = truth["theta"].std(ddof=0)
    standard_b = (truth["b"] - truth["theta"].mean()) / scale
    covered = ((items["b_lower"].reindex(standard_b.index) <= standard_b) & (standard_b <= items["b_upper"].reindex(standard_b.index)))
    assert 0.8 < covered[keep].mean() <= 1.0


def test_the_system_table_ranks_systems_and_p_rank_1_sums_to_one(planted):
    _, truth, result, _, _ = planted
    systems = result.system_table(ci_prob=0.8)
    assert list(systems.index) == list(systems.sort_values("theta_mean", ascending=False).index)
    assert systems["p_rank_1"].sum() == pytest.approx(1.0) and (systems["p_rank_1"] >= 0).all()
    # ranks are whole numbers: a 10% quantile may pass the mean of a skewed rank distribution by less than 1
    assert ((1 <= systems["rank_lower"]) & (systems["rank_lower"] < systems["rank_mean"] + 1) & (systems["rank_mean"] < systems["rank_upper"] + 1)
            & (systems["rank_upper"] <= len(systems))).all()
    assert systems.index[0] == truth["theta"].idxmax()  # the skewed abilities leave a clear leader here
    assert (systems["n_answers"] > 300).all() and systems["share_correct"].between(0, 1).all()


def test_the_item_table_flags_reversed_flat_and_all_correct_items(planted):
    _, truth, result, reversed_item, easy_item = planted
    items = result.item_table()
    assert {f"{p}_{s}" for p in "ab" for s in ("mean", "sd", "lower", "upper")} <= set(items.columns)
    assert items.loc[reversed_item, "flag"] == "backwards" and items.loc[easy_item, "flag"] == "all correct"
    flat = truth["a"][truth["a"] < 0.1].index
    ordinary = truth["a"][truth["a"] > 0.8].index
    # 60 systems give weak evidence on a flat item (measured: 1 in 6 flagged; the card has the rates at 200
    # systems); the flags must still point at flat items, not at ordinary ones
    assert (items.loc[flat, "flag"] == "flat").sum() >= 1 and (items.loc[ordinary, "flag"] == "").mean() > 0.98
    assert (items["r_hat"] < 1.05).all() and (items["ess_bulk"] > 100).all()


def test_the_1pl_has_one_slope_for_every_item():
    answers, _ = simulate_leaderboard(20, 60, flat_share=0.0, random_seed=4)
    answers = answers[answers.groupby("item")["correct"].transform("std") > 0]
    result = fit_leaderboard(answers, "1pl", random_seed=1, progressbar=False)
    assert result.model == "1pl" and "a" not in result.posterior and "a_common" in result.posterior
    items = result.item_table()
    assert items["a_mean"].nunique() == 1 and items["a_mean"].iloc[0] == pytest.approx(float(result.posterior["a_common"].mean()))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"model": "3pl"}, "model='2pl'.*fit_irt"), ({"draws": 0}, "draws must be"), ({"chains": 1.5}, "chains must be"),
     ({"cores": 0}, "cores must be"), ({"item": "question"}, "question")],
)
def test_bad_input_gets_a_clear_error(kwargs, message):
    answers, _ = simulate_leaderboard(5, 8, random_seed=1)
    with pytest.raises(InvalidInputError, match=message):
        fit_leaderboard(answers, progressbar=False, **kwargs)


def test_answers_that_are_neither_right_or_wrong_grades_nor_bounded_scores_are_refused():
    answers = pd.DataFrame({"respondent": ["s1", "s1", "s2", "s2"], "item": ["i1", "i2", "i1", "i2"], "correct": [1, 0, 1.5, 1]})
    with pytest.raises(InvalidInputError, match=r"neither 0/1, whole grades nor scores in \[0, 1\].*rescale a metric to \[0, 1\]"):
        fit_leaderboard(answers, progressbar=False)
    two_grades = answers.assign(correct=[1, 0, 2, 1])
    with pytest.raises(InvalidInputError, match="graded items need three grades or more"):
        fit_leaderboard(two_grades, progressbar=False)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [11, 12, 13])
def test_intervals_cover_the_truth_on_the_models_scale(seed):
    """Calibration on leaderboards the priors did not generate (80 systems x 800 items, skewed
    abilities, clustered difficulties, flat items): 90% intervals of b cover the truth (put on the
    model's scale: abilities standardised over the systems) 84-96% of the time, and 90% rank
    intervals cover the true ranks at least 80% of the time; the fit converges by its own rule."""
    answers, truth = simulate_leaderboard(80, 800, random_seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallSampleWarning)
        result = fit_leaderboard(answers, random_seed=seed, progressbar=False)
    assert result.convergence.converged, result.convergence
    items, systems = result.item_table(), result.system_table()
    theta = truth["theta"]
    b = ((truth["b"] - theta.mean()) / theta.std(ddof=0)).reindex(items.index)
    assert 0.84 <= ((items["b_lower"] <= b) & (b <= items["b_upper"])).mean() <= 0.96
    rank = theta.rank(ascending=False).reindex(systems.index)
    assert ((systems["rank_lower"] <= rank) & (rank <= systems["rank_upper"])).mean() >= 0.8


def test_the_first_check_waits_for_1000_draws_when_thousands_of_item_parameters_are_checked(monkeypatch):
    """draws=None: the first convergence check comes at 1,000 draws per chain from MANY_PARAMETERS
    checked parameters (systems + 2 x items) where items outnumber systems, at 700 otherwise (there
    the abilities are updated twice a sweep); the record's rule says which. 20 x 30 (80 parameters)
    with the threshold at 80 and at its default (2,000), and 30 x 20 (70) with the threshold at 70;
    at most 1,000 draws."""
    import bayes_raters.leaderboard.fit as leaderboard_fit

    monkeypatch.setattr(leaderboard_fit, "AUTO_MAX_DRAWS", 1000)
    rules = []
    for shape, threshold in (((20, 30), 80), ((20, 30), leaderboard_fit.MANY_PARAMETERS), ((30, 20), 70)):
        answers, _ = simulate_leaderboard(*shape, random_seed=2)
        monkeypatch.setattr(leaderboard_fit, "MANY_PARAMETERS", threshold)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = fit_leaderboard(answers, random_seed=2, progressbar=False, tune=50)
        rules.append((result.inference.draws_rule, result.idata["posterior"].sizes["draw"]))
    assert rules[0][0].startswith("1000 draws per chain") and rules[0][1] == 1000
    for rule, draws in rules[1:]:
        assert rule.startswith("700 draws per chain") and draws in (700, 1000)


def test_a_few_draws_fail_the_check_instead_of_crashing():
    """draws=5 per chain leaves split halves of 2 draws, too few for Geyer's ESS: the report says
    not converged (ESS not estimable) and the fit warns; it once raised an argmax error."""
    answers, _ = simulate_leaderboard(30, 20, random_seed=2)
    with pytest.warns(ConvergenceWarning, match="ESS nan"):
        result = fit_leaderboard(answers, random_seed=2, progressbar=False, tune=20, draws=5)
    assert not result.convergence.converged and np.isnan(result.convergence.min_ess_bulk)


def test_chains_in_processes_give_the_draws_of_chains_in_turn(monkeypatch):
    """Two chains forked side by side (``cores=2``), continued over several blocks of draws (the automatic
    rule with tiny blocks), give exactly the draws of the same chains run one after another (``cores=1``)."""
    import bayes_raters.leaderboard.fit as leaderboard_fit
    from bayes_raters.leaderboard import workers

    answers, _ = simulate_leaderboard(40, 30, random_seed=5)
    for name, value in (("AUTO_DRAWS", 30), ("AUTO_EXTEND", 20), ("AUTO_MAX_DRAWS", 70)):
        monkeypatch.setattr(leaderboard_fit, name, value)
    assert workers.chain_workers(2, cores=1) == 1
    posteriors = []
    for cores in (2, 1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = fit_leaderboard(answers, random_seed=5, progressbar=False, tune=20, cores=cores)
        posteriors.append(result.idata["posterior"].to_dataset())
    assert posteriors[0].sizes["draw"] == 70  # three blocks: 30, 20, 20
    for name in ("theta", "a", "b", "log_a_sigma"):
        np.testing.assert_array_equal(posteriors[0][name].values, posteriors[1][name].values)
