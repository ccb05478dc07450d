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


@pytest.mark.parametrize("model", ["grm", "gpcm"])
def test_category_tables_equal_one_draw_at_a_time(model):
    """category_tables (the GRM's in batches of TABLE_BATCH draws, with a partial last batch)
    give every draw's category_logp and category_dlogp as one call per draw does."""
    from bayes_raters.irt.polytomous.fit import TABLE_BATCH, category_tables

    rng = np.random.default_rng(5)
    layout = CategoryLayout(np.array([2, 5, 3, 4]))
    draws = TABLE_BATCH + 7
    a = rng.lognormal(0.0, 0.5, (draws, layout.n_items))
    b = np.stack([np.concatenate([np.sort(rng.normal(0, 1.5, k - 1)) for k in layout.n_categories]) for _ in range(draws)])
    nodes = np.linspace(-6, 6, 31)
    tables = list(category_tables(model, a, b, nodes, layout))
    assert len(tables) == draws
    for s, (logp, dlogp) in enumerate(tables):
        np.testing.assert_allclose(logp, category_logp(model, a[s], b[s], nodes, layout, lib=np), rtol=0, atol=1e-12)
        np.testing.assert_allclose(dlogp, category_dlogp(model, a[s], b[s], nodes, layout), rtol=0, atol=1e-12)


def test_compiled_grm_unit_loglik_equals_the_numpy_one():
    """kernel.grm_unit_logp (the compiled rejection step's likelihood) against answered_logp_fn
    for every respondent of _ratings (missing answers included), at abilities from -8 to 8."""
    from bayes_raters.irt.polytomous.answered import _grm_rows, answer_plan, answered_logp_fn
    from bayes_raters.irt.polytomous.fit import answer_row_index
    from bayes_raters.irt.polytomous.kernel import grm_unit_logp

    irt = build_polytomous_model(_ratings(), "grm")
    layout = irt.polytomous["layout"]
    onehot, index = irt["pattern_onehot"].get_value(), irt["respondent_pattern"].get_value()
    rows = answer_row_index(onehot, layout)[index]
    plan = answer_plan(rows, layout)
    a, b = np.array([0.8, 1.5, 3.0, 5.0]), np.array([-1.0, 0.0, 1.0, -0.5, 0.2, 0.9, -1.5, -0.3, 0.4, 0.0, 0.5, 1.0])
    numpy_logp = answered_logp_fn("grm", a, b, rows, layout, plan)
    parts = _grm_rows(a, b, layout)
    for theta in np.linspace(-8, 8, 17):
        expected = numpy_logp(np.full(len(rows), theta))
        compiled = [grm_unit_logp(theta, plan["cells"][i], *parts) for i in range(len(rows))]
        np.testing.assert_allclose(compiled, expected, rtol=1e-12, atol=1e-12)
