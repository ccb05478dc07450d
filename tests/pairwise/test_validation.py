"""Slow checks of the Bayesian beta-latent model at the issue's sizes (``make validate``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bayes_raters.pairwise import fit_pairwise, latent_values, neighbour_pairs, simulate_judgements

pytestmark = pytest.mark.slow
FIT = {"draws": 1000, "tune": 1000, "chains": 4, "cores": 2, "nuts_sampler": "pymc"}


def test_recovery_100_items_2000_outcomes_with_ties():
    truth = latent_values(100, "uniform", random_seed=1)
    sim = simulate_judgements(truth, n_comparisons=2000, lam=8.0, epsilon=0.5, random_seed=2)
    result = fit_pairwise(sim["comparisons"], random_seed=3, **FIT)
    table = result.item_table(ci_prob=0.9)
    true = truth.reindex(table.index)
    rho = stats.spearmanr(table["s_mean"], true).statistic
    coverage = float(((table["s_lower"] < true) & (true < table["s_upper"])).mean())
    parameters = result.summary(var_names=result.scalar_parameters, ci_prob=0.9)
    print(f"\n100 items x 2000 outcomes ({(sim['comparisons']['outcome'] == 'tie').mean():.1%} ties): Spearman {rho:.3f}, "
          f"90% coverage {coverage:.2f}\n{parameters}")
    assert rho >= 0.9
    assert 0.85 <= coverage <= 0.95
    for name, value in (("lambda", 8.0), ("epsilon", 0.5)):
        assert parameters.loc[name, "eti90_lb"] < value < parameters.loc[name, "eti90_ub"]


def _accuracy(result, truth) -> dict[str, float]:
    table = result.item_table()
    true = truth.reindex(table.index)
    return {
        "RMSE": float(np.sqrt(((table["s_mean"] - true) ** 2).mean())),
        "Spearman": stats.spearmanr(table["s_mean"], true).statistic,
        "Pearson": stats.pearsonr(table["s_mean"], true).statistic,
    }


def _same_budget_accuracy(truth, *, lam, phi, sigma_bias, n_annotators, budget=600, seeds=(1, 2, 3), fit=FIT, staged=False):
    """Mean RMSE, Spearman and Pearson of the posterior means against the truth for
    ``budget`` judgements spent on random outcomes, on sliders, or half and half (random
    pairs); with ``staged`` also the two-stage mix: half the budget on sliders, then outcomes
    for :func:`neighbour_pairs` of the items' slider means (half neighbours, half random)."""
    common = dict(lam=lam, phi=phi, sigma_bias=sigma_bias, n_annotators=n_annotators)
    scores = {}
    for seed in seeds:
        pairwise = simulate_judgements(truth, n_comparisons=budget, **common, random_seed=seed)
        sliders = simulate_judgements(truth, n_scalars=budget, **common, random_seed=seed + 100)
        mixed = simulate_judgements(truth, n_comparisons=budget // 2, n_scalars=budget // 2, **common, random_seed=seed + 200)
        designs = {"pairwise": (pairwise["comparisons"], None), "sliders": (None, sliders["scalars"]),
                   "mixed": (mixed["comparisons"], mixed["scalars"])}
        if staged:
            first = simulate_judgements(truth, n_scalars=budget // 2, **common, random_seed=seed + 300)["scalars"]
            # an item no slider has reached yet sits at the prior mean
            means = first.groupby("item")["value"].mean().reindex(truth.index).fillna(0.5)
            pairs = neighbour_pairs(means, budget // 2, random_seed=seed)
            second = simulate_judgements(truth, pairs=pairs, **common, random_seed=seed + 400)["comparisons"]
            designs["staged"] = (second, first)
        for name, (comparisons, scalars) in designs.items():
            result = fit_pairwise(comparisons, scalars, random_seed=seed, **fit)
            scores.setdefault(name, []).append(_accuracy(result, truth))
            report = result.convergence
            print(f"data set {seed}, {name}: {scores[name][-1]}, R-hat {report.max_r_hat:.3f}, "
                  f"ESS {report.min_ess_bulk:.0f}, divergences {report.divergences}", flush=True)
    return pd.DataFrame({name: pd.DataFrame(rows).mean() for name, rows in scores.items()}).T


def test_mixed_data_beats_either_source_when_sliders_carry_annotator_offsets():
    """600 judgements on 60 items from 6 annotators whose sliders are shifted by their own
    offset (logit-scale bias, SD 0.5; outcomes are immune to it), lambda 20, phi 5, five
    data sets, 4 chains x 2,000, target_accept 0.99.

    The two-stage mix (300 sliders, then 300 outcomes: 150 between neighbours in slider
    mean, 150 random) beats 600 of either source in RMSE, Spearman and Pearson. The sources
    are complementary: sliders place items coarsely, which lets the outcomes go to close
    pairs, where one outcome carries about four times the information of a random pair's
    (lambda^2 p (1 - p): 79 at distance 0.05, 19 averaged over random pairs of uniform items).
    The half-and-half mix with random pairs does not: it lands between the two sources
    (over the first three data sets it had the best RMSE, over five it does not), because
    most random pairs are far apart and their outcome is known in advance.
    Measured (2026-11-22), mean of five data sets, RMSE / Spearman / Pearson:
    pairwise 0.0570 / 0.9825 / 0.9856, sliders 0.0706 / 0.9815 / 0.9810,
    random mix 0.0630 / 0.9797 / 0.9823, staged mix 0.0493 / 0.9890 / 0.9895."""
    truth = latent_values(60, "uniform", random_seed=11)
    # 0.99 for every design, the pairwise-only fits too (fit_pairwise's default is 0.95
    # only when it estimates slider biases; 0.9 left 4 divergent transitions in one of six
    # slider fits; 0.95 left 1 of 8,000 in one of the 20 fits here, data set 3's random mix,
    # 2026-11-28, the bias funnel; 0.99 gives the step size margin against such stray divergences:
    # at 0.99 the random mixes of data sets 3, 4 and 5 had 0 divergences, R-hat <= 1.003, bulk ESS
    # >= 2,328, sixteenth session; the whole test at 0.99 was not run to its end: each of its 20 fits
    # took 5-9 min on the 2 cores beside other work, over an hour in all).
    # 2,000 draws per chain: with 1,000 one of the 20 fits ended at bulk ESS 312 < 400 once
    # the draws changed with strict floating point (2026-11-23): margin, not a lucky seed.
    careful = {**FIT, "draws": 2000, "target_accept": 0.99}
    scores = _same_budget_accuracy(truth, lam=20.0, phi=5.0, sigma_bias=0.5, n_annotators=6, seeds=(1, 2, 3, 4, 5), fit=careful, staged=True)
    print(f"\nannotator offsets, five data sets:\n{scores.round(4)}")
    single = scores.loc[["pairwise", "sliders"]]
    assert scores.loc["staged", "RMSE"] < single["RMSE"].min()
    assert scores.loc["staged", "Spearman"] > single["Spearman"].max()
    assert scores.loc["staged", "Pearson"] > single["Pearson"].max()
    assert single["RMSE"].min() < scores.loc["mixed", "RMSE"] < single["RMSE"].max()
    assert (scores.loc["staged"].drop("RMSE") > scores.loc["mixed"].drop("RMSE")).all()
    assert scores.loc["staged", "RMSE"] < scores.loc["mixed", "RMSE"]


def test_mixed_data_sits_between_when_one_source_dominates():
    """The same budget without slider offsets, one annotator, lambda 8: one slider value
    (phi 5) carries more about s_i than one outcome (which informs s_i only relative to s_j),
    so the information of a half-and-half mix, the average of the two, cannot beat the
    sliders alone. Measured: RMSE pairwise 0.068, sliders 0.051, mixed 0.053. Checked: mixed
    clearly better than the weaker source and within 10% of the better one."""
    truth = latent_values(60, "uniform", random_seed=11)
    scores = _same_budget_accuracy(truth, lam=8.0, phi=5.0, sigma_bias=0.0, n_annotators=1)
    print(f"\nno offsets:\n{scores.round(4)}")
    rmse = scores["RMSE"]
    assert rmse["mixed"] < min(rmse["sliders"], rmse["pairwise"]) * 1.1
    assert rmse["mixed"] < max(rmse["sliders"], rmse["pairwise"]) * 0.9
