"""One tidy table of every agreement coefficient that fits the ratings, with three intervals."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import stats

from bayes_raters.agreement.bootstrap import (
    bootstrap_coefficients,
    bootstrap_intervals,
    coefficients,
    rater_variance,
    two_rater_table,
)
from bayes_raters.agreement.bound import below_bound, bound_message, warn_below_bound
from bayes_raters.agreement.icc import icc_table
from bayes_raters.agreement.kappa import agreement_weights, kappa_from_table
from bayes_raters.agreement.layout import Ratings, agreement_ratings
from bayes_raters.errors import ConvergenceWarning, InvalidInputError

COLUMNS = [
    "estimate", "classical_lower", "classical_upper", "bootstrap_sd", "bootstrap_lower", "bootstrap_upper",
    "posterior_mean", "posterior_lower", "posterior_upper", "below_bound", "n_units", "n_ratings",
]


#: How the bootstrap interval is made (``attrs["bootstrap_unit"]``; :mod:`bayes_raters.agreement.bootstrap`).
BOOTSTRAP_UNIT = ("response (with all its ratings), widened by the raters' share of the variance (rater and rating "
                  "jackknives) where raters are random: alpha, Fleiss' kappa, ICC1, ICC2, ICC1k, ICC2k")


def _classical(data: Ratings, names: pd.Index, icc: pd.DataFrame | None, ci_prob: float) -> pd.DataFrame:
    """Classical intervals where one exists: ICCs on a complete design (from ``icc``, the
    :func:`~bayes_raters.agreement.icc.icc_table`), Cohen's kappa (normal, ASE)."""
    out = pd.DataFrame(np.nan, index=names, columns=["classical_lower", "classical_upper"])
    if icc is not None and data.complete:
        out.loc[icc.index] = icc[["lower", "upper"]].to_numpy()
    cells = two_rater_table(data)
    z = stats.norm.ppf(1 - (1 - ci_prob) / 2)
    for name in (n for n in names if n.startswith("cohens_kappa_")):
        weights = name.removeprefix("cohens_kappa_")
        kappa, se = kappa_from_table(cells, agreement_weights(len(data.categories), None if weights == "unweighted" else weights))
        out.loc[name] = [kappa - z * se, kappa + z * se]
    return out


def _warn_unconverged(reports: dict) -> None:
    for name, report in reports.items():
        if not report.converged:
            warnings.warn(
                f"the {name} true-score fit behind the posterior ICCs did not converge ({'; '.join(report.problems)}): "
                "its interval is not reliable. Pass draws=3000 (or more), or posterior=False for the bootstrap alone.",
                ConvergenceWarning, stacklevel=3,
            )


def agreement_table(
    ratings: pd.DataFrame,
    *,
    level: str = "interval",
    categories=None,
    ci_prob: float = 0.9,
    n_boot: int = 1000,
    posterior: bool = True,
    observation: str = "normal",
    draws: int = 1000,
    chains: int = 2,
    random_seed=None,
    progressbar: bool | None = None,
    response: str = "response",
    rater: str = "rater",
    score: str = "score",
) -> pd.DataFrame:
    """Every agreement coefficient that fits the ratings, with classical, bootstrap and posterior intervals.

    The coefficients are those of :func:`bayes_raters.agreement.bootstrap.coefficients`:
    Krippendorff's alpha at ``level``; Fleiss' kappa (nominal, ordinal); Cohen's kappa when
    exactly two raters rated the units (unweighted at the nominal level, linear and quadratic
    at the ordinal level); the six ICCs at the ordinal, interval and ratio levels. Intervals:
    ``classical_*`` where a closed form exists (ICCs on a complete design, F-based; Cohen's
    kappa, estimate +- z ASE); ``bootstrap_*`` for every coefficient (percentile, ``n_boot``
    resamples of the units, each with all its ratings, widened by the raters' share of the
    variance where raters are random: :mod:`bayes_raters.agreement.bootstrap`); ``posterior_*`` for the ICCs, from the
    true-score model (:mod:`bayes_raters.agreement.posterior`; ``inference="auto"``: importance-
    sampled Laplace draws where their checks pass, NUTS otherwise). A posterior fit that did not
    converge raises a :class:`ConvergenceWarning`; ``attrs["converged"]`` says so too. Where the
    data rule out a non-negative ICC (a negative within-response correlation, which the true-score
    model cannot represent: its posterior sits at the bound 0), ``below_bound`` is True on those
    rows, a :class:`~bayes_raters.errors.BoundWarning` says what that means and
    ``attrs["below_bound"]`` holds its text (:mod:`bayes_raters.agreement.bound`).

    Parameters
    ----------
    ratings : pandas.DataFrame
        Long ratings, one row per (response, rater).
    level : {"nominal", "ordinal", "interval", "ratio"}
        Level of measurement of the scores.
    categories : sequence, optional
        Every score of the scale, in order (weighted kappa and the ordinal alpha count positions on it).
    ci_prob : float
        Probability of every interval.
    n_boot : int
        Bootstrap resamples of the units.
    posterior : bool
        Fit the true-score model for the ICCs' posterior columns (two fits, seconds each).
    observation : {"normal", "ordinal"}
        The true-score model's observation model; ``"ordinal"`` gives ICCs of the latent scale.
    draws, chains : int
        Posterior draws per chain and chains of each fit.
    random_seed : int, numpy.random.Generator or None
        Seed of the bootstrap and the posterior draws (the same seed gives the same table).
    progressbar : bool, optional
        None shows the sampler's progress bar in a terminal or notebook only.
    response, rater, score : str
        Column names in ``ratings``.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``coefficient``, columns ``estimate, classical_lower, classical_upper,
        bootstrap_sd, bootstrap_lower, bootstrap_upper, posterior_mean, posterior_lower,
        posterior_upper, below_bound, n_units, n_ratings`` (NaN where an interval does not apply); ``attrs``:
        ``level, ci_prob, n_boot, k, complete, n_single, bootstrap_unit, converged, below_bound`` and the
        fits' ``convergence`` (one dict per fit).

    Examples
    --------
    >>> from bayes_raters.agreement import agreement_table
    >>> from bayes_raters.agreement.simulate import simulate_agreement
    >>> ratings = simulate_agreement(150, 8, random_seed=3)
    >>> table = agreement_table(ratings, level="ordinal", random_seed=1, progressbar=False)
    >>> table.loc["ICC2", ["estimate", "bootstrap_lower", "posterior_lower"]].notna().all()
    np.True_
    """
    if observation not in ("normal", "ordinal"):
        raise InvalidInputError(f"observation={observation!r}; use 'normal' or 'ordinal'.")
    data = agreement_ratings(ratings, level, categories=categories, response=response, rater=rater, score=score)
    seeds = np.random.default_rng(random_seed).integers(2**31, size=3)
    estimate = coefficients(data)
    icc = icc_table(data, ci_prob) if "ICC1" in estimate.index else None
    table = pd.DataFrame({"estimate": estimate}).join(_classical(data, estimate.index, icc, ci_prob))
    resamples = bootstrap_coefficients(data, n_boot, int(seeds[0]))
    table = table.join(bootstrap_intervals(resamples, ci_prob, estimate, rater_variance(data, estimate.index, int(seeds[2]))))
    reports = {}
    if posterior and icc is not None:
        from bayes_raters.agreement.posterior import posterior_icc

        span = (float(data.categories.min()), float(data.categories.max())) if observation == "ordinal" else None
        post, _, reports = posterior_icc(
            data.long, icc.attrs["k"], observation=observation, score_range=span, ci_prob=ci_prob, draws=draws,
            chains=chains, random_seed=int(seeds[1]), progressbar=progressbar,
        )
        table = table.join(post)
        _warn_unconverged(reports)
    table = table.reindex(columns=COLUMNS)
    table["below_bound"] = below_bound(table)
    warn_below_bound(table)
    table["n_units"] = len(data.units)
    table["n_ratings"] = int(data.per_unit.sum())
    table.index.name = "coefficient"
    table.attrs.update({
        "level": level, "ci_prob": ci_prob, "n_boot": n_boot, "k": icc.attrs["k"] if icc is not None else np.nan,
        "complete": data.complete, "n_single": data.n_single, "bootstrap_unit": BOOTSTRAP_UNIT,
        "converged": all(r.converged for r in reports.values()), "below_bound": bound_message(table),
        "convergence": {name: {**r.to_dict(), "converged": r.converged} for name, r in reports.items()},
    })
    return table
