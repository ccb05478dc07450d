"""Leaderboards with many systems and few items (the Open LLM Leaderboard's shape, issue 64 point 3):
the defaults converge within 1,000-1,300 draws per chain and recover the abilities. Before the
abilities' independence proposals the GSM8K-shaped leaderboard needed the default's 2,800 draws
(the best systems, with nearly every answer right, mixed slowly: bulk ESS 66-177 of 600 draws);
the timings beside girth are in ``benchmarks/bench_leaderboard_many_systems.py``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from bayes_raters.errors import ConvergenceWarning
from bayes_raters.leaderboard import fit_leaderboard, simulate_leaderboard


@pytest.mark.slow  # 60-90 s: 2 chains x 1,200 sweeps over 1.26 million answers
@pytest.mark.parametrize(("shape", "guessing", "least_corr"), [((5041, 249), 0.0, 0.98), ((4278, 102), 0.25, 0.94)],
                         ids=["gsm8k-shape", "mmlu-shape-guessing"])
def test_many_systems_few_items_converge_with_the_defaults(shape, guessing, least_corr):
    answers, truth = simulate_leaderboard(*shape, missing=0.0, guessing=guessing, random_seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        result = fit_leaderboard(answers, random_seed=1, progressbar=False)
    report = result.convergence
    assert report.converged and report.draws <= 1300, (report.max_r_hat, report.min_ess_bulk, report.draws)
    theta = result.system_table()["theta_mean"].reindex(truth["theta"].index)
    assert np.corrcoef(theta, truth["theta"])[0, 1] >= least_corr
