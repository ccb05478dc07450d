r"""Replicated data and the check of the human ratings' independence.

The model lets two human ratings of one response share only its true score, so within a system
they correlate positively: :math:`\sigma_s^2 / (\sigma_s^2 + \sigma_H^2)` after the rater
effects. Where the ratings of a response agree less than any replicate does (HANNA's crowd
ratings correlate negatively within every generated-story source), the raters' errors are not
independent, or the ratings were not made of one true score (slots filled by different workers
who split the scale, a rater reacting to the others): the intervals then rest on a model the
data contradict, and the result says so (:func:`human_independence`; ``fit_judges`` warns).
Where they agree more than any replicate does, the fit has put less of the ratings' spread in the
true scores than the humans show: a judge's calibration (one slope and noise for every system)
has overruled the humans, as a reference-based metric scoring the reference itself does
(WMT23's chrF on ``refA``, ``models/judges.md``); that is flagged too.

A judge whose own noise comes out near zero (a Heywood case, as in factor analysis) is the
other sign: the fit lets that judge define the true score, and its slope, PRMSE and worth in
human ratings stop measuring the judge (:func:`near_zero_own_error`; ``fit_judges`` warns).

The statistic, per system and over all: the human ratings' within-response correlation
:math:`\sum_r \sum_{h<h'} e_{rh} e_{rh'} / (\#\text{pairs} \cdot \overline{e^2})`, :math:`e` a
rating minus its system's mean rating; its posterior predictive p-value is the share of
replicates at or below the observed value.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.errors import BoundWarning
from bayes_raters.judges import ordinal
from bayes_raters.judges.model import observation_rows, parameter_draws, row_terms, system_weights
from bayes_raters.results import thinned_posterior

#: Posterior median share of a judge's modelled score variance that is its own noise
#: (``judge_own_share``) below which the judge is flagged: a reliability above 0.99 against the
#: true score, which no judge of noisy human ratings has shown here (``models/judges.md``).
OWN_SHARE_MIN = 0.01

#: Posterior predictive p-value below which the ratings agree less than the model allows (and
#: above one minus which they agree more).
INDEPENDENCE_P = 0.025


def replicate(result, draws: xr.Dataset, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Replicated human ratings (draws, ratings) and judge scores (draws, scores) on the users'
    scales, one replicate per posterior draw in ``draws`` (chain-major), for the same design;
    ordinal ratings as the categories of the replicated latent ratings."""
    data = result.data
    values, response, system, rater, judge = observation_rows(data)
    n_human, n = len(data.humans), len(data.responses)
    out = []
    for p in parameter_draws(draws, result.spec.shared_error, system_weights(data)):
        mean, load_true, load_shared, variance = row_terms(p, system, rater, judge)
        t, f = rng.standard_normal(n), rng.standard_normal(n)
        out.append(mean + load_true * t[response] + load_shared * f[response] + np.sqrt(variance) * rng.standard_normal(len(values)))
    out = np.asarray(out)
    spec = result.spec
    human = ordinal.categories(out[:, :n_human], data, spec.score_range) if spec.ordinal else data.center + data.scale * out[:, :n_human]
    j = data.judge_index
    judges = data.judge_center[j] + data.judge_scale[j] * out[:, n_human:]
    return human, judges


def within_response_correlation(scores: np.ndarray, response: np.ndarray, system: np.ndarray) -> np.ndarray:
    """The statistic of the module docstring for each row of ``scores`` (replicates x ratings)."""
    scores = np.atleast_2d(scores)
    out = np.empty(len(scores))
    for k, y in enumerate(scores):
        means = np.bincount(system, weights=y) / np.maximum(np.bincount(system), 1)
        e = y - means[system]
        totals, squares = np.bincount(response, weights=e), np.bincount(response, weights=e**2)
        counts = np.bincount(response)
        pairs = (counts * (counts - 1) / 2).sum()
        out[k] = ((totals**2 - squares) / 2).sum() / pairs / np.mean(e**2) if pairs and np.mean(e**2) > 0 else np.nan
    return out


def human_independence(result, n_draws: int = 200, random_seed=0) -> pd.DataFrame:
    """One row per system and one ``all``: ``n_pairs`` (pairs of ratings of one response),
    the ``observed`` within-response correlation, the replicates' mean and 90% interval
    (``replicated_mean``, ``replicated_lower``, ``replicated_upper``), ``p_value``, ``flagged``
    and ``direction``: ``"less"`` (p below :data:`INDEPENDENCE_P`: the ratings agree less than
    the model allows) or ``"more"`` (p above one minus it: more than it allows), else empty.
    Systems with no response rated twice have no row (the check needs pairs of ratings)."""
    data = result.data
    draws = thinned_posterior(result.posterior, n_draws)
    replicated, _ = replicate(result, draws, np.random.default_rng(random_seed))
    observed = data.humans["score"].to_numpy()
    response = data.human_response
    system = data.response_system[response]
    rows = []
    groups = [("all", np.ones(len(observed), bool))] + [(name, system == s) for s, name in enumerate(data.system_names)]
    for name, mask in groups:
        _, local = np.unique(response[mask], return_inverse=True)
        counts = np.bincount(local)
        n_pairs = int((counts * (counts - 1) // 2).sum())
        if n_pairs == 0:
            continue
        obs = within_response_correlation(observed[mask], local, system[mask])[0]
        rep = within_response_correlation(replicated[:, mask], local, system[mask])
        rows.append({"system": name, "n_pairs": n_pairs, "observed": obs, "replicated_mean": np.nanmean(rep),
                     "replicated_lower": np.nanquantile(rep, 0.05), "replicated_upper": np.nanquantile(rep, 0.95),
                     "p_value": float(np.mean(rep <= obs))})
    columns = ["system", "n_pairs", "observed", "replicated_mean", "replicated_lower", "replicated_upper", "p_value"]
    frame = pd.DataFrame(rows, columns=columns).set_index("system")  # no rows where no response has two ratings
    less, more = frame["p_value"] < INDEPENDENCE_P, frame["p_value"] > 1 - INDEPENDENCE_P
    frame["flagged"] = less | more
    frame["direction"] = np.where(less, "less", np.where(more, "more", ""))
    return frame


def _listed(rows: pd.DataFrame) -> str:
    return ", ".join(f"{name} ({row.observed:+.2f}, replicates {row.replicated_lower:+.2f} to {row.replicated_upper:+.2f})" for name, row in rows.iterrows())


def warn_dependent_humans(table: pd.DataFrame) -> None:
    """A :class:`~bayes_raters.errors.BoundWarning` naming the systems whose human ratings agree
    less, or more, than the model allows (:func:`human_independence`)."""
    less, more = table[table["direction"] == "less"], table[table["direction"] == "more"]
    if not less.empty:
        warnings.warn(
            "judges model: the human ratings of a response agree less than independent rater errors allow "
            f"(within-response correlation, observed vs the model's replicates): {_listed(less)}. The model's intervals assume "
            "each rating is the true score plus independent error; here they are too narrow for what the humans measured. "
            "See result.human_check() and models/judges.md.", BoundWarning, stacklevel=3)
    if not more.empty:
        warnings.warn(
            "judges model: the human ratings of a response agree more than the fitted true-score spread allows "
            f"(within-response correlation, observed vs the model's replicates): {_listed(more)}. A judge's calibration (one "
            "slope and noise for every system) has overruled the humans; look for a judge whose scores hardly vary within a "
            "system (result.judge_table(), result.bias_table()). See result.human_check() and models/judges.md.",
            BoundWarning, stacklevel=3)


def near_zero_own_error(posterior: xr.Dataset) -> pd.Series:
    """Per judge, whether the posterior median of ``judge_own_share`` (the share of its modelled
    score variance that is its own noise, :func:`~bayes_raters.judges.model.on_the_rating_scales`)
    is below :data:`OWN_SHARE_MIN`: the fit has the judge measure the true score without error."""
    median = posterior["judge_own_share"].median(("chain", "draw")).to_series()
    return (median < OWN_SHARE_MIN).rename("own_error_near_zero")


def warn_near_zero_own_error(flags: pd.Series, shared_error: bool) -> None:
    """A :class:`~bayes_raters.errors.BoundWarning` naming the judges of :func:`near_zero_own_error`."""
    if not flags.any():
        return
    names = ", ".join(map(str, flags.index[flags]))
    compare = ("compare the fit without the judges' shared error factor (shared_error=False; on the command line "
               "--no-shared-error)" if shared_error else "check the judge against the human ratings directly")
    warnings.warn(
        f"judges model: the own noise of {names} comes out near zero (under {OWN_SHARE_MIN:.0%} of its score variance): the fit "
        "lets this judge define the true score, so its slope, PRMSE and worth in human ratings do not measure it, and the "
        "systems' intervals lean on it alone (a Heywood case). It arises where the human ratings contradict the model "
        f"(result.human_check()) or the judges' errors are not one shared factor; {compare}. See models/judges.md.",
        BoundWarning, stacklevel=3)
