"""Simulated answer data for IRT: a scale with optional planted bad items and missing answers.

Good items: a ~ LogNormal(0, 0.3), b ~ N(0, 1), c = ``guessing`` (0 for 1PL/2PL data),
d = 1. Planted bad items: zero discrimination (answers unrelated to ability), negative
discrimination (a < 0), and mis-keyed items (a correct answer is scored wrong and vice
versa, i.e. the keyed item curve is flipped). Missing answers are dropped at random.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.errors import InvalidInputError
from bayes_raters.irt.model import irt_probability
from bayes_raters.results import draw_categories


def simulate_responses(
    n_respondents: int = 1000,
    n_items: int = 40,
    *,
    guessing: float = 0.0,
    n_zero: int = 0,
    n_negative: int = 0,
    n_miskeyed: int = 0,
    missing: float = 0.0,
    random_seed: int | np.random.Generator | None = None,
) -> tuple[pd.DataFrame, xr.Dataset]:
    """Return ``(responses, truth)``: long answers ``respondent, item, correct`` and an
    xarray Dataset with the true ``theta`` (respondent), ``a``, ``b``, ``c``, ``d`` and
    ``bad`` / ``kind`` (item) of every item (the bad ones are the last items)."""
    n_bad = n_zero + n_negative + n_miskeyed
    if n_bad > n_items or min(n_respondents, n_items) < 2:
        raise InvalidInputError("need >= 2 respondents, >= 2 items, and no more bad items than items.")
    if not 0 <= missing < 1 or not 0 <= guessing < 1:
        raise InvalidInputError("missing and guessing must lie in [0, 1).")
    rng = np.random.default_rng(random_seed)
    theta = rng.normal(0, 1, n_respondents)
    a = rng.lognormal(0, 0.3, n_items)
    b = rng.normal(0, 1, n_items)
    kind = np.array(["good"] * (n_items - n_bad) + ["zero"] * n_zero + ["negative"] * n_negative + ["miskeyed"] * n_miskeyed)
    a[kind == "zero"] = 0.0
    a[kind == "negative"] = -rng.uniform(0.5, 1.5, n_negative)
    c = np.full(n_items, float(guessing))
    p = irt_probability(theta[:, None], a, b, c, 1.0, lib=np)
    answers = (rng.random(p.shape) < p).astype(float)
    answers[:, kind == "miskeyed"] = 1 - answers[:, kind == "miskeyed"]
    rows, cols = np.nonzero(rng.random(answers.shape) >= missing)
    respondents = np.array([f"p{i:04d}" for i in range(n_respondents)])
    items = np.array([f"i{j:03d}" for j in range(n_items)])
    table = pd.DataFrame({"respondent": respondents[rows], "item": items[cols], "correct": answers[rows, cols]})
    truth = xr.Dataset(
        {
            "theta": ("respondent", theta),
            "a": ("item", a),
            "b": ("item", b),
            "c": ("item", c),
            "d": ("item", np.ones(n_items)),
            "bad": ("item", kind != "good"),
            "kind": ("item", kind),
        },
        coords={"respondent": respondents, "item": items},
    )
    return table, truth


def interval_coverage(seed: int, n_respondents: int = 1000, n_items: int = 40, model: str = "2pl",
                      ci_prob: float = 0.9, **fit_options) -> pd.DataFrame:
    """One data set of a coverage study: answers from :func:`simulate_responses` (``random_seed
    = seed``), a fit of ``model`` (``random_seed = seed + 1``, other ``fit_options`` passed to
    :func:`~bayes_raters.irt.fit_irt`), and per item whether the equal-tailed ``ci_prob``
    interval of ``a`` and of ``b`` covers the truth (``a_covered``, ``b_covered``) or lies above it
    (``a_below``: truth below the interval), with the sample's own ``theta_mean``/``theta_sd``
    and whether the fit ``converged``. Module-level, so a process pool can run many seeds."""
    from bayes_raters.irt.fit import fit_irt

    table, truth = simulate_responses(n_respondents, n_items, random_seed=seed)
    result = fit_irt(table, model, random_seed=seed + 1, **fit_options)
    tail = (1 - ci_prob) / 2
    out = pd.DataFrame(index=pd.Index(result.posterior["item"].values, name="item"))
    for name in ("a", "b"):
        draws = result.posterior[name].stack(sample=("chain", "draw")).transpose("item", "sample").values
        lower, upper = np.quantile(draws, [tail, 1 - tail], axis=1)
        true = truth[name].sel(item=out.index).values
        out[f"{name}_covered"] = (lower < true) & (true < upper)
        out[f"{name}_below"] = true <= lower
    theta = truth["theta"].values
    return out.assign(seed=seed, theta_mean=theta.mean(), theta_sd=theta.std(), converged=result.report.converged)


def simulate_ratings(n_respondents: int = 1000, n_items: int = 20, n_categories: int = 5, model: str = "grm", *,
                     random_seed=None, threshold_sd: float | None = None) -> tuple[pd.DataFrame, dict]:
    """Ordinal ratings ``respondent, item, score`` (scores 1..``n_categories``) from the GRM or
    GPCM (:func:`~bayes_raters.irt.polytomous.category_logp`) with theta ~ N(0, 1), a ~
    LogNormal(0, 0.3) and thresholds an item location N(0, 1) plus centred cumulative
    LogNormal(0, 0.3) gaps (ordered, so valid for both models). Returns ``(ratings, truth)`` with
    truth ``{"a": (items,), "b": (items * (n_categories - 1),), "theta": (respondents,)}``.
    ``threshold_sd``: instead, thresholds sorted N(0, threshold_sd) draws (adjacent ones can be
    very close) and a ~ U(0.5, 2.5), a design no prior of the package generates."""
    from bayes_raters.irt.polytomous import CategoryLayout, category_logp

    rng = np.random.default_rng(random_seed)
    layout = CategoryLayout(np.full(n_items, n_categories))
    if threshold_sd is not None:
        a = rng.uniform(0.5, 2.5, n_items)
        b = np.sort(rng.normal(0, threshold_sd, (n_items, n_categories - 1)), axis=1).ravel()
    else:
        a = rng.lognormal(0, 0.3, n_items)
        gaps = np.cumsum(rng.lognormal(0, 0.3, (n_items, n_categories - 2)), axis=1)
        cumulative = np.concatenate([np.zeros((n_items, 1)), gaps], axis=1)
        b = (rng.normal(0, 1, n_items)[:, None] + cumulative - cumulative.mean(axis=1, keepdims=True)).ravel()
    theta = rng.normal(0, 1, n_respondents)
    p = np.exp(category_logp(model, a, b, theta, layout, lib=np))
    rows = []
    for j in range(n_items):
        categories = draw_categories(p[layout.cat_item == j].T, rng)
        rows += [(i, f"q{j:02d}", int(c) + 1) for i, c in enumerate(categories)]
    return pd.DataFrame(rows, columns=["respondent", "item", "score"]), {"a": a, "b": b, "theta": theta}


def polytomous_recovery(seed: int, model: str = "grm", ci_prob: float = 0.9, simulation: dict | None = None,
                        **fit_options) -> dict:
    """One data set of a GRM/GPCM recovery study (:func:`simulate_ratings` at its defaults with
    ``random_seed = seed``, fitted with ``random_seed = seed``): corr of the posterior means of
    a and of the thresholds with the truth, how many of their ``ci_prob`` intervals cover it,
    and the max R-hat. ``collapsed`` is True (and the threshold figures NaN) when a score went
    unused and its threshold was collapsed. ``simulation``: other arguments of
    :func:`simulate_ratings` (size, ``threshold_sd``). Module-level, so a process pool can run many seeds."""
    from bayes_raters.irt.polytomous_fit import fit_polytomous

    ratings, truth = simulate_ratings(model=model, random_seed=seed, **(simulation or {}))
    result = fit_polytomous(ratings, model, random_seed=seed, **fit_options)
    items, thresholds = result.item_table(ci_prob), result.threshold_table(ci_prob)
    a, b = truth["a"], truth["b"]
    out = {"seed": seed, "model": model, "corr_a": float(np.corrcoef(items["a_mean"], a)[0, 1]),
           "a_covered": int(((items["a_lower"] < a) & (a < items["a_upper"])).sum()), "n_a": len(a),
           "max_r_hat": float(result.convergence.max_r_hat), "collapsed": len(thresholds) != len(b)}
    if out["collapsed"]:
        return {**out, "corr_b": float("nan"), "b_covered": 0, "n_b": 0}
    covered = (thresholds["b_lower"] < b) & (b < thresholds["b_upper"])
    return {**out, "corr_b": float(np.corrcoef(thresholds["b_mean"], b)[0, 1]), "b_covered": int(covered.sum()), "n_b": len(b)}


def simulate_factor_answers(n_respondents: int = 1000, group_sizes=(10, 10), correlation: float = 0.3, *,
                            random_seed=None) -> tuple[pd.DataFrame, dict]:
    r"""Binary answers with a simple structure, for checking dimensionality as Lalor et al.
    (2016) did: item group g loads on ability g only, :math:`a_j \sim \text{LogNormal}(0.2, 0.3)`,
    :math:`d_j \sim N(0, 1)`, abilities :math:`N(0, R)` with correlation ``correlation`` between
    every pair of groups; ``group_sizes=(20,)`` gives one factor. Items are named
    ``g{group}_{k}``. Returns ``(answers, truth)`` with ``truth`` holding ``a`` (items, groups),
    ``d``, ``theta`` and the item -> group map ``dimensions``."""
    rng = np.random.default_rng(random_seed)
    groups = len(group_sizes)
    corr = np.full((groups, groups), correlation) + (1 - correlation) * np.eye(groups)
    theta = rng.multivariate_normal(np.zeros(groups), corr, n_respondents)
    group_of = np.repeat(np.arange(groups), group_sizes)
    n_items = len(group_of)
    a = np.zeros((n_items, groups))
    a[np.arange(n_items), group_of] = rng.lognormal(0.2, 0.3, n_items)
    d = rng.normal(0.0, 1.0, n_items)
    items = [f"g{g + 1}_{k}" for g, size in enumerate(group_sizes) for k in range(size)]
    correct = rng.random((n_respondents, n_items)) < 1 / (1 + np.exp(-(theta @ a.T + d)))
    answers = pd.DataFrame({"respondent": np.repeat(np.arange(n_respondents), n_items), "item": np.tile(items, n_respondents),
                            "correct": correct.ravel().astype(int)})
    truth = {"a": a, "d": d, "theta": theta, "dimensions": {item: f"g{g + 1}" for item, g in zip(items, group_of)}}
    return answers, truth


def dimensionality_check(seed: int, group_sizes=(10, 10), correlation: float = 0.3, n_respondents: int = 1000, *,
                         fit_seed: int = 1, with_unidimensional: bool = True, **fit_options) -> dict:
    """Lalor et al.'s structure check on simulated answers (:func:`simulate_factor_answers`):
    fit the unidimensional 2PL and the exploratory two-dimensional 2PL, compare them by LOO
    over respondents. Returns ``elpd_difference`` (2D minus 1D) and its standard error
    ``se`` (``az.compare``'s dse), the 2D posterior-mean loadings, anchors, convergence and
    the fits' wall times (s)."""
    import time

    from bayes_raters.irt import compare_irt_models, fit_irt

    answers, truth = simulate_factor_answers(n_respondents, group_sizes, correlation, random_seed=seed)
    out = {"seed": seed, "groups": tuple(group_sizes), "correlation": correlation}
    start = time.perf_counter()
    two = fit_irt(answers, "2pl", dims=2, random_seed=fit_seed, **fit_options)
    out.update(seconds_2d=time.perf_counter() - start, loadings=two.loadings()["a_mean"], anchors=two.anchors,
               converged_2d=two.report.converged, max_r_hat_2d=two.report.max_r_hat, truth=truth)
    if with_unidimensional:
        start = time.perf_counter()
        one = fit_irt(answers, "2pl", random_seed=fit_seed, progressbar=fit_options.get("progressbar"))
        out.update(seconds_1d=time.perf_counter() - start, converged_1d=one.report.converged)
        table = compare_irt_models({"1d": one, "2d": two}, round_to="none")
        out["elpd_difference"] = float(table.loc["2d", "elpd"] - table.loc["1d", "elpd"])
        out["se"] = float(table["dse"].max())
    return out
