"""Slow IRT recovery checks at the issue's sizes (``make validate``)."""

from __future__ import annotations

import functools
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd
import pytest

from bayes_raters.irt import fit_irt, simulate_responses
from validation.recovery import interval_coverage, polytomous_recovery

pytestmark = pytest.mark.slow


def _fit_2pl(seed: int):
    """Four chains: with ~1,040 parameters the max R-hat of two chains lands near 1.01 by
    chance alone (Vehtari et al. 2021 recommend at least four)."""
    table, truth = simulate_responses(1000, 40, random_seed=seed)
    result = fit_irt(table, "2pl", random_seed=seed + 1, draws=1000, chains=4, cores=2)
    return truth, result.item_table(), result.respondent_table()


def test_2pl_recovery_1000_by_40():
    truth, items, people = _fit_2pl(11)
    a_corr = np.corrcoef(items["a_mean"], truth["a"].sel(item=items.index))[0, 1]
    b_corr = np.corrcoef(items["b_mean"], truth["b"].sel(item=items.index))[0, 1]
    theta_corr = np.corrcoef(people["theta_mean"], truth["theta"].sel(respondent=people.index))[0, 1]
    print(f"\n2PL 1000x40: corr a {a_corr:.3f}, b {b_corr:.3f}, theta {theta_corr:.3f}")
    assert a_corr >= 0.9 and b_corr >= 0.95 and theta_corr >= 0.9


#: Sixteen data sets: within one, the items share the sample's own scale and location error
#: (SD and mean of its simulated abilities), so one set's coverage varies by 0.05 (a) to 0.07 (b)
#: around the average, and four sets (160 items) left the pooled share 0.03 wide either way.
COVERAGE_SEEDS = tuple(range(121, 441, 20))


def test_2pl_a_and_b_interval_coverage_over_data_sets():
    """90% intervals of b and of a should each cover the truth for 85-95% of items pooled over
    data sets (1,000 x 40, 2 x (1,000 + 1,000) per fit, all cores in a process pool). Measured
    (2026-11-25): a 0.8875, b 0.8875 over these 16 sets (per-set SD 0.05 / 0.07, so the
    pooled share has SD ~0.013 / 0.018); six earlier sets with four chains gave 0.850 / 0.867."""
    fit = functools.partial(interval_coverage, chains=2, draws=1000, tune=1000, cores=1, progressbar=False)
    with ProcessPoolExecutor(os.cpu_count(), mp_context=multiprocessing.get_context("forkserver")) as pool:
        items = pd.concat(pool.map(fit, COVERAGE_SEEDS))
    coverage = {name: float(items[f"{name}_covered"].mean()) for name in ("a", "b")}
    per_set = items.groupby("seed")[["a_covered", "b_covered"]].mean().round(3)
    print(f"\n2PL 1000x40, {len(COVERAGE_SEEDS)} data sets: 90% interval coverage of a {coverage['a']:.3f}, "
          f"b {coverage['b']:.3f}\n{per_set.to_string()}")
    assert all(0.85 <= value <= 0.95 for value in coverage.values()), coverage


def test_3pl_recovers_guessing_of_four_option_items():
    table, truth = simulate_responses(1000, 30, guessing=0.25, random_seed=21)
    result = fit_irt(table, "3pl", n_options=4, random_seed=22, draws=1500, target_accept=0.95)
    c_mean = result.item_table()["c_mean"].mean()
    print(f"\n3PL 1000x30, c = 0.25: mean posterior c {c_mean:.3f}")
    assert abs(c_mean - 0.25) <= 0.05


def test_no_sign_flip_across_seeds():
    correlations = []
    for seed in range(5):
        table, truth = simulate_responses(300, 15, random_seed=100 + seed)
        # four chains, as in _fit_2pl: with two, max R-hat over ~80 variables reached 1.011 by chance
        items = fit_irt(table, "2pl", random_seed=seed, draws=1000, chains=4, cores=2).item_table()
        correlations.append(np.corrcoef(items["a_mean"], truth["a"].sel(item=items.index))[0, 1])
    print(f"\ncorr(a, true a) over 5 seeds: {np.round(correlations, 3)}")
    assert all(c > 0 for c in correlations)


#: Six data sets per model (seed 43 is left out: one of its GPCM items has an unused score, whose
#: threshold is collapsed, so thresholds cannot be matched one to one with the truth).
RECOVERY_SEEDS = (42, 44, 45, 46, 47, 48)


def test_grm_and_gpcm_recover_1000_by_20_with_5_categories():
    """The issue's check at 1,000 x 20 x 5 categories, over six data sets per model (one set of
    20 items gives a noisy corr(a): GPCM seed 42 alone 0.926, the next six 0.957-0.984):
    median corr(a) >= 0.95, every corr(thresholds) >= 0.98, and 90% intervals of a and the
    thresholds (100 per set) covering the truth for 85-95% pooled per model."""
    runs = [(model, seed) for model in ("grm", "gpcm") for seed in RECOVERY_SEEDS]
    fit = functools.partial(polytomous_recovery, chains=2, cores=1, progressbar=False)
    with ProcessPoolExecutor(os.cpu_count(), mp_context=multiprocessing.get_context("forkserver")) as pool:
        table = pd.DataFrame(list(pool.map(fit, [seed for _, seed in runs], [model for model, _ in runs])))
    print("\n" + table.round(3).to_string())
    assert not table["collapsed"].any()
    for model, rows in table.groupby("model"):
        coverage = (rows["a_covered"].sum() + rows["b_covered"].sum()) / (rows["n_a"].sum() + rows["n_b"].sum())
        print(f"{model.upper()} 1000x20x5, {len(rows)} sets: median corr(a) {rows['corr_a'].median():.3f}, "
              f"min corr(b) {rows['corr_b'].min():.3f}, coverage {coverage:.3f}")
        assert rows["corr_a"].median() >= 0.95 and rows["corr_b"].min() >= 0.98, model
        assert 0.85 <= coverage <= 0.95, (model, coverage)


#: Seeds of the close-threshold design at 500 x 10 (a set with an unused score is left out: its
#: collapsed threshold cannot be matched to the truth). Sixteen: within a set the items share the
#: sample's location and scale error, so one set's coverage of the thresholds ranged 21/40 to 40/40
#: over seeds 0-7, and eight sets left the pooled share of a at 86/90 = 0.956, outside 0.85-0.95
#: by one interval (2026-11-26, second session). With sixteen (third session, 8 min on 2 cores):
#: 12 sets + one 1,000 x 20 set kept (5 had an unused score), a 126/140 = 0.900, thresholds
#: 493/560 = 0.880, mean corr(a) 0.972.
CLOSE_SEEDS = tuple(range(16))


@pytest.mark.slow
def test_grm_recovers_close_thresholds():
    """Issue 36: thresholds NOT from the model's prior, sorted N(0, 1.2) draws (adjacent gaps down
    to 0.01), a ~ U(0.5, 2.5), 500 x 10 x 5 and 1,000 x 20 x 5: pooled 90% coverage of a and of
    the thresholds each 0.85-0.95, mean corr(a) >= 0.95. The old LogNormal(0, 0.5) gaps between
    thresholds: 4 of 10 items' intervals of a missed, all from below, corr(a) 0.865."""
    designs = [{"n_respondents": 500, "n_items": 10, "threshold_sd": 1.2}] * len(CLOSE_SEEDS)
    designs += [{"n_respondents": 1000, "n_items": 20, "threshold_sd": 1.2}] * 2
    seeds = list(CLOSE_SEEDS) + [2, 3]
    with ProcessPoolExecutor(os.cpu_count(), mp_context=multiprocessing.get_context("forkserver")) as pool:
        table = pd.DataFrame(list(pool.map(_close_fit, seeds, designs)))
    print("\n" + table.round(3).to_string())
    table = table[~table["collapsed"]]
    assert len(table) >= 5
    assert 0.85 <= table["a_covered"].sum() / table["n_a"].sum() <= 0.95
    assert 0.85 <= table["b_covered"].sum() / table["n_b"].sum() <= 0.95
    assert table["corr_a"].mean() >= 0.95


def _close_fit(seed, design):
    return polytomous_recovery(seed, "grm", simulation=design, chains=2, cores=1, progressbar=False)


def _structure(task):
    """One fit of Lalor et al.'s structure check in a fresh process (numpyro: JAX stays out
    of the pytest process, which forks later)."""
    from validation.recovery import dimensionality_check

    seed, groups, fit_seed, with_1d = task
    return dimensionality_check(seed, groups, 0.3, 1000, fit_seed=fit_seed, with_unidimensional=with_1d,
                                nuts_sampler="numpyro", progressbar=False)


def test_two_factor_answers_prefer_two_dimensions_and_one_factor_does_not():
    """Lalor et al. (2016) check their scales' structure before building them. Two groups of 10
    items on abilities correlated 0.3: the exploratory 2D model beats the 1D one by more than
    4 standard errors of the ELPD difference (LOO over respondents); 20 items on one ability:
    the 2D model does not beat the 1D one. The two-factor answers are fitted twice (fit seeds
    1 and 2): the identified rotation makes the two fits' loadings agree. On one-factor answers
    the 2D model's second dimension is empty, so its fit need not converge (measured: it did
    not, in two runs): only its ELPD is read there, as a user would read the comparison."""
    tasks = [(31, (10, 10), 1, True), (31, (10, 10), 2, False), (32, (20,), 1, True)]
    with ProcessPoolExecutor(os.cpu_count(), mp_context=multiprocessing.get_context("forkserver")) as pool:
        two, again, one = pool.map(_structure, tasks)
    print(f"\ntwo factors: 2D - 1D ELPD {two['elpd_difference']:.1f} (se {two['se']:.1f}); "
          f"one factor: {one['elpd_difference']:.1f} (se {one['se']:.1f}); 2D fits {two['seconds_2d']:.0f} / "
          f"{one['seconds_2d']:.0f} s, 1D {two['seconds_1d']:.0f} s; max |loading difference| between fit seeds "
          f"{(two['loadings'] - again['loadings']).abs().max():.3f}; max R-hat of the 2D fits {two['max_r_hat_2d']:.3f} / "
          f"{again['max_r_hat_2d']:.3f} / one factor {one['max_r_hat_2d']:.3f}")
    assert two["converged_2d"] and again["converged_2d"] and two["converged_1d"] and one["converged_1d"]
    assert two["elpd_difference"] > 4 * two["se"]
    assert one["elpd_difference"] < 2 * one["se"]  # not better by a margin its standard error supports
    assert two["anchors"] == again["anchors"]
    assert (two["loadings"] - again["loadings"]).abs().max() < 0.1
    # the planted structure: each group's items load mainly on one estimated dimension
    main = two["loadings"].abs().unstack().idxmax(axis=1)
    groups = pd.Series({item: group for item, group in two["truth"]["dimensions"].items()})
    assert (pd.crosstab(groups, main).max(axis=1) >= 9).all()


#: Sixteen essay-scoring data sets (600 responses, 10 raters, 3 prompts, 2 ratings each, rater r0 erratic).
FACETS_SEEDS = tuple(range(501, 517))


def test_many_facet_severity_coverage_and_erratic_rater_flag():
    """The issue's check for the many-facet model: 90% intervals of the planted severities
    cover the truth for 85-95% of raters pooled over 16 data sets (160 raters; the pooled share
    has SD 0.024 at 0.9), the planted erratic rater (a = 0.25) is flagged in at least 14 of 16
    sets, other raters are flagged in at most 5% of cases (8 of 144), and the engine's 90% PRMSE
    interval holds its PRMSE against the planted true scores in at least 12 of 16 sets."""
    from validation.recovery import facets_recovery

    fit = functools.partial(facets_recovery, progressbar=False)
    with ProcessPoolExecutor(os.cpu_count(), mp_context=multiprocessing.get_context("forkserver")) as pool:
        table = pd.DataFrame(list(pool.map(fit, FACETS_SEEDS)))
    coverage = table["severity_hits"].sum() / table["severity_total"].sum()
    print("\n" + table.round(3).to_string())
    print(f"many-facet 600 responses x 10 raters, {len(table)} sets: severity 90% coverage {coverage:.3f}, "
          f"erratic rater flagged {int(table['erratic_flagged'].sum())}/{len(table)}, "
          f"others flagged {int(table['others_flagged'].sum())}/{9 * len(table)}, converged {int(table['converged'].sum())}, "
          f"engine PRMSE inside its 90% interval {int(table['prmse_hit'].sum())}/{len(table)}")
    assert 0.85 <= coverage <= 0.95, coverage
    assert table["erratic_flagged"].sum() >= 14
    assert table["others_flagged"].sum() <= 8
    assert table["prmse_hit"].sum() >= 12  # binomial(16, 0.9): >= 12 with probability 0.98
