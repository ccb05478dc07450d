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
The model keeps a tenth of each judge's error variance its own
(:data:`~bayes_raters.judges.model.MAX_SHARED_SHARE`); a judge whose shared share piles against
that end is named as well (:func:`shared_share_at_cap`).

The statistic, per system and over all: the human ratings' within-response correlation
:math:`\sum_r \sum_{h<h'} e_{rh} e_{rh'} / (\#\text{pairs} \cdot \overline{e^2})`, :math:`e` a
rating minus its system's mean rating; its posterior predictive p-value is the share of
replicates at or below the observed value. The rows (every system and the pooled one) are tested
as one family: a row is flagged where its p-value falls below :data:`INDEPENDENCE_P` divided by
the number of rows, or above one minus that (Bonferroni), so that ratings the model fits get a
flag in about :data:`INDEPENDENCE_P` of fits per direction, however many systems there are
(``models/judges.md`` counts the flags on simulated designs).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import scipy.sparse
import xarray as xr

from bayes_raters.errors import BoundWarning
from bayes_raters.judges import ordinal
from bayes_raters.judges.draws import parameter_draws
from bayes_raters.judges.model import observation_rows, row_terms, system_weights
from bayes_raters.results import thinned_posterior

#: Posterior median share of a judge's modelled score variance that is its own noise
#: (``judge_own_share``) below which the judge is flagged: a reliability above 0.99 against the
#: true score, which no judge of noisy human ratings has shown here (``models/judges.md``).
OWN_SHARE_MIN = 0.01

#: Posterior median of a judge's ``shared_share`` above which the cap
#: (:data:`~bayes_raters.judges.model.MAX_SHARED_SHARE`, 0.9) is taken to bind: the data would
#: share more of the judge's error than the model allows.
SHARE_AT_CAP = 0.8

#: Family-wise posterior predictive p-value per direction: a row is flagged below this divided
#: by the number of rows (the ratings agree less than the model allows) or above one minus that
#: (they agree more).
INDEPENDENCE_P = 0.025

#: Replicates for the check: enough for p-values below :data:`INDEPENDENCE_P` over a dozen rows.
CHECK_DRAWS = 1000


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


def replicate_humans(result, draws: xr.Dataset, rng: np.random.Generator) -> np.ndarray:
    """Replicated human ratings (draws, ratings) on the users' scale, as :func:`replicate` gives
    them (a rating does not load on the judges' shared factor), all draws of ``draws``
    (chain-major) at once."""
    data = result.data
    stacked = draws.stack(sample=("chain", "draw")).transpose("sample", ...)
    response, rater = data.human_response, data.human_rater
    system = data.response_system[response]
    mu, sd = stacked["mu"].values, stacked["sigma_true"].values
    t = rng.standard_normal((len(mu), len(data.responses)))[:, response]
    latent = (mu[:, system] + stacked["rater_effect"].values[:, rater] + sd[:, system] * t
              + stacked["sigma_human"].values[:, None] * rng.standard_normal((len(mu), len(response))))
    if result.spec.ordinal:
        return ordinal.categories(latent, data, result.spec.score_range)
    return data.center + data.scale * latent


def within_response_correlation(scores: np.ndarray, response: np.ndarray, system: np.ndarray) -> np.ndarray:
    """The statistic of the module docstring for each row of ``scores`` (replicates x ratings),
    all rows at once (sums by system and by response as sparse one-hot products)."""
    scores = np.atleast_2d(scores)
    n = scores.shape[1]
    by_system = scipy.sparse.csr_array((np.ones(n), (np.arange(n), system)))
    by_response = scipy.sparse.csr_array((np.ones(n), (np.arange(n), response)))
    means = (by_system.T @ scores.T).T / np.maximum(by_system.sum(axis=0), 1)
    e = scores - means[:, system]
    totals = (by_response.T @ e.T).T
    counts = np.bincount(response)
    pairs = (counts * (counts - 1) / 2).sum()
    square = np.mean(e**2, axis=1)
    cross = ((totals**2).sum(axis=1) - (e**2).sum(axis=1)) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((pairs > 0) & (square > 0), cross / max(pairs, 1) / square, np.nan)


def human_independence(result, n_draws: int = CHECK_DRAWS, random_seed=0) -> pd.DataFrame:
    """One row per system and one ``all``: ``n_pairs`` (pairs of ratings of one response),
    the ``observed`` within-response correlation, the replicates' mean and 90% interval
    (``replicated_mean``, ``replicated_lower``, ``replicated_upper``), ``p_value``, ``flagged``
    and ``direction``: ``"less"`` (p below :data:`INDEPENDENCE_P` over the number of rows: the
    ratings agree less than the model allows) or ``"more"`` (p above one minus that: more than it
    allows), else empty. Systems with no response rated twice have no row (the check needs pairs
    of ratings)."""
    data = result.data
    draws = thinned_posterior(result.posterior, n_draws)
    replicated = replicate_humans(result, draws, np.random.default_rng(random_seed))
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
    level = INDEPENDENCE_P / max(len(frame), 1)
    less, more = frame["p_value"] < level, frame["p_value"] > 1 - level
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
    score variance that is its own noise, :func:`~bayes_raters.judges.draws.on_the_rating_scales`)
    is below :data:`OWN_SHARE_MIN`: the fit has the judge measure the true score without error."""
    median = posterior["judge_own_share"].median(("chain", "draw")).to_series()
    return (median < OWN_SHARE_MIN).rename("own_error_near_zero")


def shared_share_at_cap(posterior: xr.Dataset) -> pd.Series:
    """Per judge, whether the posterior median of ``shared_share`` is above :data:`SHARE_AT_CAP`
    (all False without the shared error factor): the judges' errors agree more than one factor
    with each judge's own noise at a tenth of its error allows (judges that copy one another, or
    a factor that is one judge's own error)."""
    if "shared_share" not in posterior:
        return pd.Series(False, index=pd.Index(posterior["judge"].values, name="judge"), name="shared_share_at_cap")
    median = posterior["shared_share"].median(("chain", "draw")).to_series()
    return (median > SHARE_AT_CAP).rename("shared_share_at_cap")


def warn_shared_share_at_cap(flags: pd.Series) -> None:
    """A :class:`~bayes_raters.errors.BoundWarning` naming the judges of :func:`shared_share_at_cap`."""
    if not flags.any():
        return
    names = ", ".join(map(str, flags.index[flags]))
    warnings.warn(
        f"judges model: the shared share of the error variance of {names} piles against its upper end (the model keeps a tenth of "
        "each judge's error its own, so that no judge's own noise reaches zero): these judges' errors agree more than the "
        "model allows (judges copying one another, or one judge's own error taken for the shared factor), and their "
        "slopes and worth lean on that limit. Compare the fit without the shared factor (shared_error=False; on the "
        "command line --no-shared-error). See models/judges.md.", BoundWarning, stacklevel=3)


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
