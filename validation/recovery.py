"""Recovery and coverage studies of the IRT and many-facet models: one simulated data set and
one fit per call (``seed``), module-level so that any ``concurrent.futures`` executor (a
process pool, a Dask cluster's executor) can run many seeds; ``tests/irt/test_validation.py``
(``make validate``) runs them and asserts the rates. Moved out of the library's ``simulate``
modules (issue 37): a simulator no longer imports its family's fit."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from bayes_raters.facets.fit import fit_facets
from bayes_raters.facets.simulate import simulate_facet_ratings
from bayes_raters.irt.binary.fit import fit_irt
from bayes_raters.irt.binary.simulate import simulate_responses
from bayes_raters.irt.multidimensional.simulate import simulate_factor_answers
from bayes_raters.irt.polytomous.fit import fit_polytomous
from bayes_raters.irt.polytomous.simulate import simulate_ratings
from bayes_raters.irt.scale import compare_irt_models


def interval_coverage(seed: int, n_respondents: int = 1000, n_items: int = 40, model: str = "2pl",
                      ci_prob: float = 0.9, **fit_options) -> pd.DataFrame:
    """One data set of a coverage study: answers from :func:`~bayes_raters.irt.binary.simulate.simulate_responses` (``random_seed
    = seed``), a fit of ``model`` (``random_seed = seed + 1``, other ``fit_options`` passed to
    :func:`~bayes_raters.irt.fit_irt`), and per item whether the equal-tailed ``ci_prob``
    interval of ``a`` and of ``b`` covers the truth (``a_covered``, ``b_covered``) or lies above it
    (``a_below``: truth below the interval), with the sample's own ``theta_mean``/``theta_sd``
    and whether the fit ``converged``. Module-level, so a process pool can run many seeds."""
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


def polytomous_recovery(seed: int, model: str = "grm", ci_prob: float = 0.9, simulation: dict | None = None,
                        **fit_options) -> dict:
    """One data set of a GRM/GPCM recovery study (:func:`~bayes_raters.irt.polytomous.simulate.simulate_ratings` at its defaults with
    ``random_seed = seed``, fitted with ``random_seed = seed``): corr of the posterior means of
    a and of the thresholds with the truth, how many of their ``ci_prob`` intervals cover it,
    and the max R-hat. ``collapsed`` is True (and the threshold figures NaN) when a score went
    unused and its threshold was collapsed. ``simulation``: other arguments of
    :func:`~bayes_raters.irt.polytomous.simulate.simulate_ratings` (size, ``threshold_sd``). Module-level, so a process pool can run many seeds."""
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


def dimensionality_check(seed: int, group_sizes=(10, 10), correlation: float = 0.3, n_respondents: int = 1000, *,
                         fit_seed: int = 1, with_unidimensional: bool = True, **fit_options) -> dict:
    """Lalor et al.'s structure check on simulated answers (:func:`~bayes_raters.irt.multidimensional.simulate.simulate_factor_answers`):
    fit the unidimensional 2PL and the exploratory two-dimensional 2PL, compare them by LOO
    over respondents. Returns ``elpd_difference`` (2D minus 1D) and its standard error
    ``se`` (``az.compare``'s dse), the 2D posterior-mean loadings, anchors, convergence and
    the fits' wall times (s)."""
    answers, truth = simulate_factor_answers(n_respondents, group_sizes, correlation, random_seed=seed)
    out = {"seed": seed, "groups": tuple(group_sizes), "correlation": correlation}
    start = time.perf_counter()
    two = fit_irt(answers, "2pl", dims=2, random_seed=fit_seed, **fit_options)
    out.update(seconds_2d=time.perf_counter() - start, loadings=two.loadings()["a_mean"], anchors=two.spec.anchors,
               converged_2d=two.report.converged, max_r_hat_2d=two.report.max_r_hat, truth=truth)
    if with_unidimensional:
        start = time.perf_counter()
        one = fit_irt(answers, "2pl", random_seed=fit_seed, progressbar=fit_options.get("progressbar"))
        out.update(seconds_1d=time.perf_counter() - start, converged_1d=one.report.converged)
        table = compare_irt_models({"1d": one, "2d": two}, round_to="none")
        out["elpd_difference"] = float(table.loc["2d", "elpd"] - table.loc["1d", "elpd"])
        out["se"] = float(table["dse"].max())
    return out


def facets_recovery(seed: int, ci_prob: float = 0.9, **fit_options) -> dict:
    """One replication of the recovery check: simulate (600 responses, 10 raters, rater r0
    erratic), fit, and return the severities' interval hits (planted inside the ``ci_prob``
    interval, per rater), whether the erratic rater and only it was flagged, whether the engine's
    PRMSE interval holds its PRMSE against the planted true scores, and convergence."""
    ratings, systems, truth = simulate_facet_ratings(erratic=(0,), random_seed=seed)
    result = fit_facets(ratings, systems, random_seed=seed, **fit_options)
    table = result.rater_table(ci_prob).reindex([f"r{r}" for r in range(len(truth["severity"]))])
    hits = (table["severity_lower"] <= truth["severity"]) & (truth["severity"] <= table["severity_upper"])
    flagged = set(table.index[table["reasons"].str.contains("erratic")])
    prmse = result.prmse_table(ci_prob).loc["engine"]
    t, m = truth["true_score"], systems["score"].to_numpy()
    planted = 1 - ((m - t) ** 2).sum() / ((t - t.mean()) ** 2).sum()
    return {"seed": seed, "severity_hits": int(hits.sum()), "severity_total": len(hits),
            "prmse_hit": bool(prmse["prmse_lower"] <= planted <= prmse["prmse_upper"]), "prmse_mean": float(prmse["prmse_mean"]),
            "prmse_planted": float(planted),
            "erratic_flagged": "r0" in flagged, "others_flagged": len(flagged - {"r0"}),
            "converged": result.convergence.converged, "max_r_hat": result.convergence.max_r_hat}
