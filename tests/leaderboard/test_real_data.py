"""py-irt's own test fixture (8 sentiment classifiers x 1,100 SST-3 sentences, right or wrong;
``tests/data/leaderboards/``, provenance in ``tests/data/README.md``): a real leaderboard with a peer's fit."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd

from bayes_raters.errors import SmallSampleWarning
from bayes_raters.leaderboard import fit_leaderboard

DATA = Path(__file__).resolve().parents[1] / "data" / "leaderboards"


def test_the_1pl_ranks_pyirts_fixture_as_pyirts_2pl_does():
    """The 1PL converges on the fixture with its defaults; its abilities rank the eight systems as py-irt's
    2PL (SVI, defaults) does, up to the two systems tied at 40.4% right (Spearman >= 0.9; measured 0.952),
    and its difficulties follow each item's share right (Spearman <= -0.95; measured -0.987). py-irt's own item
    difficulties on this fixture stay near their starting values (SD 0.05) and are not compared."""
    answers = pd.read_csv(DATA / "pyirt_minitest.csv")
    pyirt = pd.read_csv(DATA / "pyirt_minitest_pyirt_systems.csv", index_col="respondent")["theta"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallSampleWarning)  # items all right or all wrong: bounded by the prior, flagged
        result = fit_leaderboard(answers, "1pl", random_seed=1, progressbar=False)
    assert result.convergence.converged, result.convergence
    theta = result.system_table()["theta_mean"]
    assert theta.corr(pyirt.reindex(theta.index), method="spearman") >= 0.9
    assert theta.idxmax() == pyirt.idxmax() == "roberta-r3-target"
    difficulty = result.item_table()["b_mean"]
    share = answers.groupby("item")["correct"].mean().reindex(difficulty.index)
    assert difficulty.corr(share, method="spearman") <= -0.95
