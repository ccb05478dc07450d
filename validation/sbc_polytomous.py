"""SBC configurations of the polytomous IRT models (GRM, GPCM; :mod:`bayes_raters.sbc`).

Parameters are drawn from the priors of :func:`bayes_raters.irt.polytomous.item_thresholds`
(slope-intercept form): :math:`\\log a_j \\sim N(0, 0.5)`; GRM: item location
:math:`c_j \\sim N(0, 3)`, gaps :math:`g_{jk} \\sim N^+(2)` between adjacent intercepts, the
intercepts :math:`d_{jk}` being :math:`c_j` plus the centred cumulative gaps; GPCM:
:math:`d_{jk} \\sim N(0, 3)`; thresholds :math:`b = d / a`; :math:`\\theta_i \\sim N(0, 1)`.
Answers then come from :func:`~bayes_raters.irt.polytomous.category_logp`.

A data set in which some item's category went unused is drawn again (parameters and all):
the fit would collapse that category into a smaller model. Rejecting on the data alone
leaves :math:`p(\\text{parameters} \\mid y)` unchanged for every kept :math:`y`, so the ranks
stay uniform for a calibrated fit (as for the ordinal true-score configuration).
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from bayes_raters.sbc import Configuration

#: respondents, items, categories per item
POLYTOMOUS_SIZE = (300, 5, 4)
TRACKED_ITEMS = 2
TRACKED_RESPONDENTS = 2


def item_parameters(rng: np.random.Generator, model: str, n_items: int, n_categories: int):
    """``(a, d)``: slopes (items,) and intercepts (items * (n_categories - 1),) from the priors."""
    from bayes_raters.irt.polytomous.model import GAP_SD, INTERCEPT_SD

    a = np.exp(rng.normal(0.0, 0.5, n_items))
    if model == "gpcm":
        return a, rng.normal(0.0, INTERCEPT_SD, n_items * (n_categories - 1))
    location = rng.normal(0.0, INTERCEPT_SD, n_items)
    gaps = np.abs(rng.normal(0.0, GAP_SD, (n_items, n_categories - 2)))
    cumulative = np.concatenate([np.zeros((n_items, 1)), np.cumsum(gaps, axis=1)], axis=1)
    return a, (location[:, None] + cumulative - cumulative.mean(axis=1, keepdims=True)).ravel()


def simulate_polytomous(rng: np.random.Generator, model: str = "grm"):
    """``(truth, ratings)``: the module's generative story, redrawn until every item uses all
    its categories. Truth: ``a[j]`` and the thresholds ``b[j:k]`` of the first items, and the
    first respondents' ``theta[i]``."""
    from bayes_raters.irt.polytomous.model import CategoryLayout, category_logp
    from bayes_raters.results import draw_categories

    n, n_items, n_categories = POLYTOMOUS_SIZE
    layout = CategoryLayout(np.full(n_items, n_categories))
    while True:
        a, d = item_parameters(rng, model, n_items, n_categories)
        b = d / a[layout.thr_item]
        theta = rng.normal(0.0, 1.0, n)
        p = np.exp(category_logp(model, a, b, theta, layout, lib=np))
        chosen = np.stack([draw_categories(p[layout.cat_item == j].T, rng) for j in range(n_items)], axis=1)
        if all(len(np.unique(chosen[:, j])) == n_categories for j in range(n_items)):
            break
    truth = {f"a[{j}]": a[j] for j in range(TRACKED_ITEMS)}
    truth |= {f"b[{j}:{k}]": b[j * (n_categories - 1) + k - 1] for j in range(TRACKED_ITEMS) for k in range(1, n_categories)}
    truth |= {f"theta[{i}]": theta[i] for i in range(TRACKED_RESPONDENTS)}
    ratings = pd.DataFrame({
        "respondent": np.repeat(np.arange(n), n_items),
        "item": np.tile([f"q{j}" for j in range(n_items)], n),
        "score": chosen.ravel() + 1,
    })
    return truth, ratings


def fit_polytomous_config(ratings: pd.DataFrame, seed: int, model: str = "grm", settings: dict | None = None):
    """``fit_polytomous`` at its defaults; draws of the quantities of :func:`simulate_polytomous`."""
    from bayes_raters.irt import fit_polytomous

    result = fit_polytomous(ratings, model, random_seed=seed, **(settings or {}))
    posterior = result.posterior
    draws = {f"a[{j}]": posterior["a"].sel(item=f"q{j}").values for j in range(TRACKED_ITEMS)}
    n_categories = POLYTOMOUS_SIZE[2]
    for j in range(TRACKED_ITEMS):
        for k in range(1, n_categories):
            draws[f"b[{j}:{k}]"] = posterior["b"].sel(threshold=f"q{j}:{k}").values
    for i in range(TRACKED_RESPONDENTS):
        draws[f"theta[{i}]"] = posterior["theta"].sel(respondent=i).values
    return draws, result.report


POLYTOMOUS_CONFIGURATIONS = {
    f"irt_{model}": Configuration(
        f"irt_{model}", functools.partial(simulate_polytomous, model=model), functools.partial(fit_polytomous_config, model=model)
    )
    for model in ("grm", "gpcm")
}
