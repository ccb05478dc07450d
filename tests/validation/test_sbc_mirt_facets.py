"""The SBC simulators of the two-dimensional and many-facet configurations draw from the
priors of the models they are fitted with (an SBC is only as good as its simulator), keep only
data sets the fits accept, and repeat exactly for a seed. (The 200-simulation runs themselves
are in ``tests/test_sbc.py``, slow.)"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from scipy import stats

from bayes_raters.facets.model import build_facets_model
from validation.sbc_mirt_facets import (
    FACETS_SIZE,
    MIRT_SIZE,
    facets_parameters,
    mirt_loadings,
    simulate_facets,
    simulate_mirt,
)


def test_facets_simulator_follows_the_model_priors():
    """4,000 draws of each side: two-sample KS on the scales, a log consistency, a severity, a
    difficulty and a threshold against ``pm.draw`` of the model's own prior."""
    rng = np.random.default_rng(0)
    ours = [facets_parameters(rng) for _ in range(4000)]
    _, ratings = simulate_facets(np.random.default_rng(1))
    model = build_facets_model(ratings)
    names = ["mu_log_a", "sigma_log_a", "sigma_severity", "sigma_difficulty", "log_a", "severity", "difficulty", "thresholds"]
    prior = pm.draw([model[n] for n in names], draws=4000, random_seed=2)
    for name, theirs in zip(names, prior):
        mine = np.array([np.ravel(p[name])[0] for p in ours])
        assert stats.ks_2samp(mine, np.asarray(theirs).reshape(4000, -1)[:, 0]).pvalue > 0.001, name


def test_mirt_loadings_follow_the_exploratory_priors():
    rng = np.random.default_rng(3)
    a = np.stack([mirt_loadings(rng, 8) for _ in range(4000)])
    assert np.all(a[:, 0, 1] == 0) and np.all(a[:, 0, 0] > 0) and np.all(a[:, 1, 1] > 0)
    assert stats.kstest(np.log(a[:, 0, 0]), stats.norm(0, 0.5).cdf).pvalue > 0.001
    assert stats.kstest(a[:, 1, 0], stats.norm(0, 1).cdf).pvalue > 0.001
    assert stats.kstest(a[:, 5, 1], stats.norm(0, 1).cdf).pvalue > 0.001


@pytest.mark.parametrize("simulate", [simulate_mirt, simulate_facets])
def test_simulators_repeat_and_keep_only_data_the_fit_accepts(simulate):
    first, data = simulate(np.random.default_rng(4))
    again, same = simulate(np.random.default_rng(4))
    assert first == again and data.equals(same)
    if simulate is simulate_mirt:
        wide = data.pivot(index="respondent", columns="item", values="correct")
        assert wide.shape == (MIRT_SIZE[0], MIRT_SIZE[1]) and (wide.std() > 0).all()
    else:
        assert data["score"].nunique() == FACETS_SIZE[3] and len(data) == FACETS_SIZE[0] * 3
        assert data.groupby("response")["rater"].nunique().eq(3).all()
