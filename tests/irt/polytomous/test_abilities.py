"""The polytomous fits' ability draws: the category derivatives behind the rejection envelope,
and draws that follow each respondent's exact conditional given the item parameters."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import integrate, stats

from bayes_raters.irt.polytomous.fit import conditional_thetas
from bayes_raters.irt.polytomous.model import CategoryLayout, build_polytomous_model, category_dlogp, category_logp


@pytest.mark.parametrize("model", ["grm", "gpcm"])
def test_category_derivatives_match_central_differences(model):
    """category_dlogp against central differences of category_logp: items of 2-5 categories,
    slopes up to 15, abilities out to +-5."""
    rng = np.random.default_rng(3)
    layout = CategoryLayout(np.array([2, 5, 3, 4, 5]))
    a = np.array([0.4, 1.0, 2.5, 8.0, 15.0])
    b = np.concatenate([np.sort(rng.normal(0, 1.5, k - 1)) for k in layout.n_categories])
    theta, step = np.linspace(-5, 5, 41), 1e-6
    numeric = (category_logp(model, a, b, theta + step, layout, lib=np) - category_logp(model, a, b, theta - step, layout, lib=np)) / (2 * step)
    np.testing.assert_allclose(category_dlogp(model, a, b, theta, layout), numeric, atol=1e-6)


def _ratings() -> pd.DataFrame:
    """Four 4-category items: a middling pattern, an all-top pattern, one with two answers
    missing, and a respondent per score so that every category is used."""
    patterns = {"mid": [1, 2, 3, 2], "top": [4, 4, 4, 4], "gaps": [1, None, 4, None], **{f"all{k}": [k] * 4 for k in (1, 2, 3)}}
    rows = [(who, f"i{j}", score) for who, scores in patterns.items() for j, score in enumerate(scores) if score is not None]
    return pd.DataFrame(rows, columns=["respondent", "item", "score"])


@pytest.mark.parametrize("model", ["grm", "gpcm"])
def test_theta_draws_follow_the_exact_conditional(model):
    """One fixed parameter draw repeated 3,000 times: each respondent's theta draws pass a KS
    test against the CDF of likelihood x N(0, 1) (trapezoid on 40,001 points), steep items
    included."""
    irt = build_polytomous_model(_ratings(), model)
    layout, items = irt.polytomous["layout"], list(irt.coords["item"])
    a = np.array([0.8, 1.5, 3.0, 5.0])
    b = np.array([-1.0, 0.0, 1.0, -0.5, 0.2, 0.9, -1.5, -0.3, 0.4, 0.0, 0.5, 1.0])
    draws = 3000
    posterior = xr.Dataset({
        "a": (("chain", "draw", "item"), np.broadcast_to(a, (1, draws, 4)).copy()),
        "b": (("chain", "draw", "threshold"), np.broadcast_to(b, (1, draws, 12)).copy()),
    }, coords={"chain": [0], "draw": np.arange(draws), "item": items})
    theta, _, acceptance = conditional_thetas(posterior, irt, model, random_seed=np.random.default_rng(5), cores=1)
    table = irt.polytomous["table"]
    for who, answers in table.groupby("respondent"):
        rows = [layout.cat_start[items.index(i)] + c for i, c in zip(answers["item"], answers["category"])]
        grid = np.linspace(-10, 10, 40001)
        log_density = category_logp(model, a, b, grid, layout, lib=np)[rows].sum(axis=0) + stats.norm.logpdf(grid)
        cdf = integrate.cumulative_trapezoid(np.exp(log_density - log_density.max()), grid, initial=0.0)
        cdf /= cdf[-1]
        sample = theta.sel(respondent=who).values.ravel()
        assert stats.ks_1samp(sample, lambda t: np.interp(t, grid, cdf)).pvalue > 0.01, who
    assert 0.5 < acceptance <= 1.0
