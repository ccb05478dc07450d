"""The many-facet model on a real design with two raters: vcd's MSPatients (two neurologists, 218
patients, one 4-category scale; tests/data/README.md). Issue 64 asks for no divergences with the
defaults. With two raters the default fits one consistency for both (``resolve_consistency``):
their data say little about how two consistencies differ, and a consistency each diverged under both
parametrisations (centred 23-39, non-centred 1-10 divergences in 2,000 draws; models/irt_facets.md)."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from bayes_raters.errors import ConvergenceWarning
from bayes_raters.facets import fit_facets
from bayes_raters.facets.fit import resolve_consistency


def _ratings(shared_data):
    return pd.read_csv(shared_data / "facets" / "mspatients.csv")[["response", "prompt", "rater", "score"]]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_two_neurologists_converge_without_divergences(shared_data, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        result = fit_facets(_ratings(shared_data), random_seed=seed, progressbar=False)
    assert result.spec.consistency is False
    assert result.convergence.divergences == 0 and result.convergence.converged
    a = result.rater_table()["a_mean"]
    assert a.iloc[0] == pytest.approx(a.iloc[1])  # one consistency for both


def test_the_default_consistency_follows_the_number_of_raters():
    assert resolve_consistency(None, 2) is False
    assert resolve_consistency(None, 3) is True
    assert resolve_consistency(True, 2) is True and resolve_consistency(False, 5) is False
