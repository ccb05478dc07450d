r"""PyMC true-score models with rater error, and PRMSE as a posterior quantity.

Generative story (base model, the CTT assumptions behind Haberman's estimators)::

    T_i     ~ Normal(mu, sigma_T)                         true score of response i
    H_ij    = T_i + delta_r + e_ij,  e_ij ~ Normal(0, sigma_r)   rating by rater r = r(i, j)
    M_is    ~ Normal(alpha_s + beta_s (T_i - c0), tau_s)   score of system s (a calibrated
                                                           measurement of T; c0 a constant)

Base: ``delta_r = 0`` and ``sigma_r = sigma_e`` (raters exchangeable). Options:
``rater_effects=True`` gives a zero-sum hierarchical offset per rater (severity /
leniency, ``delta ~ ZeroSumNormal(sigma_delta)``, so T is the score of an average rater);
``rater_error="rater"`` gives each rater its own error SD,
``log sigma_r = log sigma_e + omega * eta_r``; ``observation="ordinal"`` replaces the
normal rating by the rounding-and-clipping process of integer scales (ordered probit,
cutpoints at k + 1/2 or estimated).

**T integrated out.** Under normal observations every measurement of T_i is linear and
Gaussian, so T_i given the data and the parameters is normal with precision
``P_i = 1/sigma_T^2 + sum_k b_k^2 / v_k`` and mean ``m_i = (mu/sigma_T^2 + sum_k b_k x_k / v_k) / P_i``
(measurement k: value x_k, loading b_k, variance v_k). The marginal likelihood of a
response is ``prod_k N(x_k | b_k m_i, v_k) N(m_i | mu, sigma_T) / N(m_i | m_i, 1/P_i)``.
Without rater options the data enter only through per-response counts c_i, mean
ratings, system scores and the pooled within-response sum of squares; responses with
the same c_i are pooled into a bivariate normal with sufficient statistics, so a
gradient costs the same for 1,000 or 1,000,000 responses.

**PRMSE.** Per posterior draw, the finite-sample PRMSE of these responses,
``1 - sum_i (M_is - T_i)^2 / sum_i (T_i - Tbar)^2``. The model computes the numerator's and
denominator's exact conditional expectations given the draw (``E[(M - T)^2] = (M - m_i)^2 +
1/P_i`` and ``E[sum (T - Tbar)^2] = sum (m_i - mbar)^2 + (1 - 1/N) sum 1/P_i``) and the moments of
their spread; after sampling each draw gets that spread back (:mod:`bayes_raters.ctt.finite_sample`:
a bivariate normal, since both are sums of N independent terms), because the ratio of
expectations alone keeps the mean but gives intervals about 1.2-1.3 times too narrow. The
finite-sample version is what the closed form estimates and what a simulation can check
against its true scores. ``prmse_population`` is the
super-population value ``1 - E[(M - T)^2] / sigma_T^2`` implied by the calibration
parameters. Under ``observation="ordinal"`` T_i is integrated out too (closed form for one
rating, a bivariate-normal rectangle for two, quadrature beyond; :mod:`bayes_raters.ctt.ordinal`)
and PRMSE is formed the same way from T's exact conditional moments.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt

from bayes_raters.ctt import finite_sample, ordinal
from bayes_raters.ctt.ordinal_units import on_grid, ordinal_units
from bayes_raters.data import require_varying_ratings, validate_ratings, validate_system_scores
from bayes_raters.errors import InsufficientDataError, InvalidInputError, SmallSampleWarning
from bayes_raters.fit_spec import FitSpec

LOG_2PI = float(np.log(2 * np.pi))
RATER_ERRORS = ("common", "rater")
OBSERVATIONS = ("normal", "ordinal")
CUTPOINTS = ("fixed", "estimated")
RATER_OFFSETS = ("centred", "non_centred")


@dataclass(frozen=True)
class TrueScoreSpec(FitSpec):
    """Options of the true-score model (see the module docstring).

    Attributes
    ----------
    rater_effects
        Hierarchical zero-sum offset (severity) per rater.
    rater_error
        ``"common"`` error SD, or ``"rater"`` for one SD per rater (hierarchical).
    observation
        ``"normal"`` (T integrated out) or ``"ordinal"`` (integer scores on ``score_range``,
        rating = round(T + delta_r + e) clipped to the scale).
    cutpoints
        Ordinal only; ``"fixed"`` at k + 1/2, or ``"estimated"`` (outer two fixed at their
        rounding values to anchor location and scale, inner ones free).
    joint
        All systems in one model (default: one model per system, as the closed form).
    score_range
        Declared scale; scales the priors and is required for ordinal.
    error_variance
        Known rater error variance; fixes sigma_e = sqrt(error_variance).
    rater_offsets
        With rater effects: ``"centred"`` offsets ``ZeroSumNormal(sigma_rater_offset)``, or
        ``"non_centred"`` ``sigma_rater_offset * ZeroSumNormal(1)`` (``rater_offset_z``), which
        NUTS samples without divergences when the offsets' spread is near 0 (few raters).
    """

    rater_effects: bool = False
    rater_error: str = "common"
    observation: str = "normal"
    cutpoints: str = "fixed"
    joint: bool = False
    score_range: tuple[float, float] | None = None
    error_variance: float | None = None
    rater_offsets: str = "centred"

    def __post_init__(self) -> None:
        for name, allowed in (("rater_error", RATER_ERRORS), ("observation", OBSERVATIONS), ("cutpoints", CUTPOINTS),
                              ("rater_offsets", RATER_OFFSETS)):
            if getattr(self, name) not in allowed:
                raise InvalidInputError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}.")
        if self.observation == "ordinal" and self.score_range is None:
            raise InvalidInputError("observation='ordinal' needs the declared score_range=(low, high).")
        if self.error_variance is not None and not (np.isfinite(self.error_variance) and self.error_variance > 0):
            raise InvalidInputError(f"error_variance must be a positive number, got {self.error_variance!r}.")
        if self.error_variance is not None and self.rater_error == "rater":
            raise InvalidInputError("a known error_variance cannot be combined with rater_error='rater'.")

    @property
    def sufficient(self) -> bool:
        """True when the pooled sufficient-statistic likelihood applies."""
        return (
            self.observation == "normal"
            and not self.rater_effects
            and self.rater_error == "common"
            and not self.joint
        )



@dataclass
class TrueScoreData:
    """Validated inputs of one model: ratings and the system scores it uses."""

    ratings: pd.DataFrame
    systems: pd.DataFrame
    responses: np.ndarray  # response ids, the model's `response` coordinate
    raters: np.ndarray
    system_ids: np.ndarray
    center: float
    width: float
    rating_response: np.ndarray = field(init=False)
    rating_rater: np.ndarray = field(init=False)
    system_response: np.ndarray = field(init=False)
    system_index: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        position = pd.Index(self.responses)
        self.rating_response = position.get_indexer(self.ratings["response"])
        self.rating_rater = pd.Index(self.raters).get_indexer(self.ratings["rater"])
        self.system_response = position.get_indexer(self.systems["response"])
        self.system_index = pd.Index(self.system_ids).get_indexer(self.systems["system"])


def validate_true_score_inputs(
    ratings: pd.DataFrame,
    system_scores: pd.DataFrame | None,
    spec: TrueScoreSpec,
    *,
    response: str = "response",
    rater: str = "rater",
    system: str = "system",
    score: str = "score",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Validate both tables once and apply the model's data requirements.

    Raises for constant human scores, no double-scored response without a known
    error variance, non-integer or off-scale scores under the ordinal option, and
    systems that give every response the same score.
    """
    rated = validate_ratings(ratings, response=response, rater=rater, score=score, score_range=spec.score_range)
    require_varying_ratings(rated)
    counts = rated.groupby("response").size()
    if spec.error_variance is None and not (counts > 1).any():
        raise InsufficientDataError(
            "No response has two or more ratings, so the rater error variance is not identified. "
            "Double-score some responses (ideally 1,000 or more) or pass a known error_variance."
        )
    if spec.observation == "ordinal":
        scores = rated["score"].to_numpy()
        if not np.all(scores == np.round(scores)):
            raise InvalidInputError("observation='ordinal' needs integer ratings; some ratings have decimals.")
    if system_scores is None:
        return rated, pd.DataFrame({"response": [], "system": [], "score": []})
    systems = validate_system_scores(system_scores, ratings=rated, response=response, system=system, score=score)
    spread = systems.groupby("system", sort=False)["score"].agg(np.ptp)
    constant = spread.index[spread == 0].tolist()
    if constant:
        raise InvalidInputError(
            f"system(s) {constant} give every response the same score: PRMSE of a constant "
            "is <= 0 by definition and its calibration to the true score is not identified. "
            "Drop these systems."
        )
    if spec.rater_effects or spec.rater_error == "rater":
        per_rater = rated.groupby("rater").size()
        lonely = per_rater.index[per_rater < 2].tolist()
        if lonely:
            warnings.warn(
                f"rater(s) {lonely[:10]} have a single rating: their offset / error SD is informed "
                "by the hierarchical prior alone.",
                SmallSampleWarning,
                stacklevel=3,
            )
    return rated, systems


def model_data(
    ratings: pd.DataFrame, systems: pd.DataFrame, spec: TrueScoreSpec, system_ids: list | None
) -> TrueScoreData:
    """Restrict validated tables to the systems of one model. A separate (one-system)
    model uses only the responses that system scored, as the closed form does."""
    all_systems = pd.unique(systems["system"])
    chosen = list(all_systems) if system_ids is None else list(system_ids)
    unknown = sorted(set(chosen) - set(all_systems), key=str)
    if unknown:
        raise InvalidInputError(f"unknown system(s) {unknown}; the system scores have {list(all_systems)}.")
    if not spec.joint and len(chosen) > 1:
        raise InvalidInputError(
            f"the separate (default) model holds one system; got {len(chosen)}. Build one model per "
            "system (systems=[name]) or pass joint=True."
        )
    used = systems[systems["system"].isin(chosen)]
    if not spec.joint and chosen:
        ratings = ratings[ratings["response"].isin(used["response"])]
    if spec.score_range is not None:
        low, high = spec.score_range
        center, width = (low + high) / 2, high - low
    else:
        center = float(ratings["score"].mean())
        width = float(np.ptp(ratings["score"]))
    return TrueScoreData(
        ratings=ratings.reset_index(drop=True),
        systems=used.reset_index(drop=True),
        responses=pd.unique(ratings["response"]),
        raters=pd.unique(ratings["rater"]),
        system_ids=np.asarray(chosen, dtype=object),
        center=center,
        width=width,
    )


# ---- priors ----------------------------------------------------------------------------


def _true_score_priors(data: TrueScoreData, spec: TrueScoreSpec):
    """mu, sigma_T, sigma_e (scalar or per rater), rater offsets (or 0): weakly informative
    priors scaled to the width W of the score range (a bounded score has SD <= W/2)."""
    width = data.width
    mu = pm.Normal("mu", data.center, width / 2)
    sigma_t = pm.HalfNormal("sigma_T", width / 4)
    if spec.error_variance is not None:
        sigma_e = pm.Deterministic("sigma_e", pt.as_tensor(np.sqrt(spec.error_variance)))
    else:
        sigma_e = pm.HalfNormal("sigma_e", width / 4)
    if spec.rater_error == "rater":
        omega = pm.HalfNormal("sigma_log_rater_sd", 0.5)
        eta = pm.Normal("rater_sd_z", 0, 1, dims="rater")
        sigma_rater = pm.Deterministic("sigma_rater", sigma_e * pt.exp(omega * eta), dims="rater")
    else:
        sigma_rater = None
    if spec.rater_effects:
        spread = pm.HalfNormal("sigma_rater_offset", width / 8)
        if spec.rater_offsets == "non_centred":
            offset = pm.Deterministic("rater_offset", spread * pm.ZeroSumNormal("rater_offset_z", sigma=1.0, dims="rater"), dims="rater")
        else:
            offset = pm.ZeroSumNormal("rater_offset", sigma=spread, dims="rater")
    else:
        offset = None
    return mu, sigma_t, sigma_e, sigma_rater, offset


def _system_priors(data: TrueScoreData):
    """Calibration of each system to T: M ~ Normal(alpha + beta (T - c0), tau)."""
    width = data.width
    alpha = pm.Normal("alpha", data.center, width / 2, dims="system")
    beta = pm.Normal("beta", 1.0, 1.0, dims="system")
    tau = pm.Gamma("tau", alpha=2.0, beta=2.0 / (width / 8), dims="system")  # boundary-avoiding
    return alpha, beta, tau


def _prmse_population(mu, sigma_t, alpha, beta, tau, c0):
    """1 - E[(M - T)^2] / sigma_T^2 with M - T = alpha - beta c0 + (beta - 1) T + u."""
    bias = alpha - beta * c0 + (beta - 1) * mu
    mse = bias**2 + (beta - 1) ** 2 * sigma_t**2 + tau**2
    pm.Deterministic("prmse_population", 1 - mse / sigma_t**2, dims="system")


# ---- normal observations, pooled sufficient statistics ---------------------------------


def _group_statistics(data: TrueScoreData) -> dict[str, np.ndarray]:
    """Per count-group g (responses with c ratings): size, mean of (Hbar, M), centred
    scatter of (Hbar, M); plus the pooled within-response SS and its dof."""
    by_response = data.ratings.groupby("response", sort=False)["score"].agg(["count", "mean", "var"])
    by_response = by_response.reindex(data.responses)
    within = float((by_response["var"].fillna(0.0) * (by_response["count"] - 1)).sum())
    dof = float((by_response["count"] - 1).sum())
    frame = pd.DataFrame({"c": by_response["count"].to_numpy(), "h": by_response["mean"].to_numpy()})
    has_system = len(data.system_ids) == 1
    frame["m"] = (
        data.systems.set_index("response")["score"].reindex(data.responses).to_numpy() if has_system else 0.0
    )
    groups = frame.groupby("c", sort=True)
    n = groups.size().to_numpy(float)
    means = groups[["h", "m"]].mean()
    centred = frame[["h", "m"]] - means.loc[frame["c"]].to_numpy()
    products = pd.DataFrame(
        {
            "hh": centred["h"] ** 2,
            "hm": centred["h"] * centred["m"],
            "mm": centred["m"] ** 2,
            "c": frame["c"],
        }
    ).groupby("c", sort=True).sum()
    return {
        "c": means.index.to_numpy(float),
        "n": n,
        "h": means["h"].to_numpy(),
        "m": means["m"].to_numpy(),
        "shh": products["hh"].to_numpy(),
        "shm": products["hm"].to_numpy(),
        "smm": products["mm"].to_numpy(),
        "within": within,
        "dof": dof,
        "per_response_c": frame["c"].to_numpy(float),
        "per_response_h": frame["h"].to_numpy(),
        "per_response_m": frame["m"].to_numpy(),
    }


def _sufficient_likelihood(data: TrueScoreData, mu, sigma_t, sigma_e, calibration) -> None:
    """Exact marginal likelihood of the base model from pooled statistics (T integrated out).

    Within responses: sum_ij (H_ij - Hbar_i)^2 / sigma_e^2 ~ chi2(sum (c_i - 1)). Between:
    (Hbar_i, M_i) ~ N2((mu, alpha + beta (mu - c0)), [[s_T^2 + s_e^2/c_i, beta s_T^2],
    [beta s_T^2, beta^2 s_T^2 + tau^2]]), pooled over responses with the same c_i.
    """
    stats = _group_statistics(data)
    c = pm.Data("group_ratings", stats["c"], dims="count_group")
    n = pm.Data("group_size", stats["n"], dims="count_group")
    h = pm.Data("group_mean_rating", stats["h"], dims="count_group")
    shh = pm.Data("group_scatter_rating", stats["shh"], dims="count_group")
    within = pm.Data("within_sum_of_squares", stats["within"])
    dof = pm.Data("within_dof", stats["dof"])
    ve = sigma_e**2
    pm.Potential("within_response", -0.5 * dof * (LOG_2PI + pt.log(ve)) - 0.5 * within / ve)
    v11 = sigma_t**2 + ve / c
    d1 = h - mu
    s11 = shh + n * d1**2
    c_each = pm.Data("ratings_per_response", stats["per_response_c"], dims="response")
    h_each = pm.Data("mean_rating", stats["per_response_h"], dims="response")
    if calibration is None:
        pm.Potential("between_response", pt.sum(-0.5 * n * (LOG_2PI + pt.log(v11)) - 0.5 * s11 / v11))
        precision = 1 / sigma_t**2 + c_each / ve
        _true_score_conditional(mu / sigma_t**2 + c_each * h_each / ve, precision)
        return
    alpha, beta, tau = (p[0] for p in calibration)
    m = pm.Data("group_mean_system", stats["m"], dims="count_group")
    shm = pm.Data("group_scatter_cross", stats["shm"], dims="count_group")
    smm = pm.Data("group_scatter_system", stats["smm"], dims="count_group")
    m_each = pm.Data("system_score", stats["per_response_m"], dims="response")
    c0 = data.center
    v12 = beta * sigma_t**2
    v22 = beta**2 * sigma_t**2 + tau**2
    det = v11 * v22 - v12**2
    d2 = m - (alpha + beta * (mu - c0))
    s12 = shm + n * d1 * d2
    s22 = smm + n * d2**2
    quad = (v22 * s11 - 2 * v12 * s12 + v11 * s22) / det
    pm.Potential("between_response", pt.sum(-n * LOG_2PI - 0.5 * n * pt.log(det) - 0.5 * quad))

    # T_i | data: linear in (Hbar_i, M_i) with coefficients that depend on c_i only.
    offset = alpha - beta * c0
    precision = 1 / sigma_t**2 + c / ve + beta**2 / tau**2
    k0 = (mu / sigma_t**2 - beta * offset / tau**2) / precision
    k1 = (c / ve) / precision
    k2 = (beta / tau**2) / precision
    total = pt.sum(n)
    residual_mean = -k0 - k1 * h + (1 - k2) * m  # mean of M - m_i within the group
    residual_ss = n * residual_mean**2 + k1**2 * shh - 2 * k1 * (1 - k2) * shm + (1 - k2) ** 2 * smm
    mse = (pt.sum(residual_ss) + pt.sum(n / precision)) / total
    group_mean = k0 + k1 * h + k2 * m
    grand = pt.sum(n * group_mean) / total
    spread_ss = n * (group_mean - grand) ** 2 + k1**2 * shh + 2 * k1 * k2 * shm + k2**2 * smm
    var_t = (pt.sum(spread_ss) + (1 - 1 / total) * pt.sum(n / precision)) / total
    _prmse_deterministics(mse[None], var_t, ve)
    cross = n * residual_mean * (group_mean - grand) - k1**2 * shh + k1 * (1 - 2 * k2) * shm + k2 * (1 - k2) * smm
    v = 1 / precision  # the same for every response of a group
    finite_sample.store_moments(
        (pt.sum(4 * v * residual_ss + 2 * n * v**2) / total**2)[None],
        pt.sum(4 * v * spread_ss + 2 * n * v**2) / total**2,
        (pt.sum(-4 * v * cross + 2 * n * v**2) / total**2)[None],
    )
    precision_each = 1 / sigma_t**2 + c_each / ve + beta**2 / tau**2
    numerator = mu / sigma_t**2 + c_each * h_each / ve + beta * (m_each - offset) / tau**2
    _true_score_conditional(numerator, precision_each)


def _prmse_deterministics(mse, var_t, error_variance) -> None:
    pm.Deterministic("error_variance", error_variance)
    pm.Deterministic("true_score_variance", var_t)
    pm.Deterministic("mse_true", mse, dims="system")
    pm.Deterministic("prmse", 1 - mse / var_t, dims="system")


def _true_score_conditional(numerator, precision) -> None:
    """Per-response conditional mean and SD of T given data and parameters (not stored
    while sampling; computed on demand for true-score draws)."""
    pm.Deterministic("true_score_mean", numerator / precision, dims="response")
    pm.Deterministic("true_score_sd", 1 / pt.sqrt(precision), dims="response")


# ---- normal observations, one measurement per row (rater options, joint systems) -------


def _segment_sum(values, index, size):
    return pt.zeros(size)[index].inc(values)


def _system_channels(data: TrueScoreData, calibration):
    """System scores as measurements of T: x = M - alpha_s + beta_s c0, loading beta_s,
    variance tau_s^2; returns (x, loading, variance, response index)."""
    alpha, beta, tau = calibration
    s_resp = pm.Data("score_response", data.system_response, dims="system_row")
    s_system = pm.Data("score_system", data.system_index, dims="system_row")
    s_score = pm.Data("score_value", data.systems["score"].to_numpy(float), dims="system_row")
    return s_score - alpha[s_system] + beta[s_system] * data.center, beta[s_system], tau[s_system] ** 2, s_resp


def _integrate_gaussian_measurements(x, b, v, idx, n_resp, mu, sigma_t):
    """For T_i ~ N(mu, sigma_T) measured by x_k ~ N(b_k T_{idx_k}, v_k): the log marginal
    likelihood of all x (T integrated out), and the conditional precision and mean of T_i."""
    precision = 1 / sigma_t**2 + _segment_sum(b**2 / v, idx, n_resp)
    numerator = mu / sigma_t**2 + _segment_sum(b * x / v, idx, n_resp)
    mean = numerator / precision
    log_measure = -0.5 * (LOG_2PI + pt.log(v)) - 0.5 * (x - b * mean[idx]) ** 2 / v
    log_prior = -0.5 * (LOG_2PI + 2 * pt.log(sigma_t)) - 0.5 * (mean - mu) ** 2 / sigma_t**2
    log_posterior_at_mean = 0.5 * (pt.log(precision) - LOG_2PI)
    return pt.sum(log_measure) + pt.sum(log_prior) - pt.sum(log_posterior_at_mean), precision, mean


def _finite_sample_prmse(data: TrueScoreData, true_mean, true_var, error_variance) -> None:
    """PRMSE of each system over its responses from E[T_i] and Var(T_i) per response
    (true_var = 0 when T is sampled explicitly)."""
    n = float(len(data.responses))
    centred = true_mean - pt.mean(true_mean)
    var_t = (pt.sum(centred**2) + (1 - 1 / n) * pt.sum(true_var)) / n
    rows, system = data.system_response, data.system_index
    residual = data.systems["score"].to_numpy(float) - true_mean[rows]
    squared = residual**2 + true_var[rows]
    n_systems = len(data.system_ids)
    per_system = np.bincount(system, minlength=n_systems).astype(float)
    _prmse_deterministics(_segment_sum(squared, system, n_systems) / per_system, var_t, error_variance)
    var_a, _, cov = finite_sample.spread_terms(residual, centred[rows], true_var[rows], pt)
    var_b = finite_sample.spread_terms(0.0, centred, true_var, pt)[1]
    finite_sample.store_moments(
        _segment_sum(var_a, system, n_systems) / per_system**2,
        pt.sum(var_b) / n**2,
        _segment_sum(cov, system, n_systems) / (per_system * n),
    )


def _rating_rows(data: TrueScoreData):
    r_resp = pm.Data("rating_response", data.rating_response, dims="rating")
    r_rater = pm.Data("rating_rater", data.rating_rater, dims="rating")
    return r_resp, r_rater


def _channel_likelihood(data: TrueScoreData, mu, sigma_t, sigma_e, sigma_rater, offset, calibration) -> None:
    """Marginal likelihood with T integrated out, one Gaussian measurement per row:
    ratings (x = H - delta_r, loading 1, variance sigma_r^2) and system scores."""
    n_resp = len(data.responses)
    r_resp, r_rater = _rating_rows(data)
    r_score = pm.Data("rating_score", data.ratings["score"].to_numpy(float), dims="rating")
    x = [r_score - (offset[r_rater] if offset is not None else 0.0)]
    v_rating = (sigma_rater[r_rater] ** 2) if sigma_rater is not None else pt.ones_like(r_score) * sigma_e**2
    v, b, idx = [v_rating], [pt.ones_like(r_score)], [r_resp]
    if calibration is not None:
        for parts, part in zip((x, b, v, idx), _system_channels(data, calibration)):
            parts.append(part)
    log_marginal, precision, mean = _integrate_gaussian_measurements(
        *(pt.concatenate(parts) for parts in (x, b, v, idx)), n_resp, mu, sigma_t
    )
    pm.Potential("marginal_likelihood", log_marginal)
    _true_score_conditional(mean * precision, precision)
    if calibration is not None:
        _finite_sample_prmse(data, mean, 1 / precision, pt.mean(v_rating))


# ---- ordinal observations (bayes_raters.ctt.ordinal) --------------------------------------


def _ordinal_likelihood(data: TrueScoreData, spec: TrueScoreSpec, mu, sigma_t, sigma_e, sigma_rater, offset, calibration):
    """T integrated out (closed form for one rating, a bivariate-normal rectangle for two,
    quadrature for more; see :mod:`bayes_raters.ctt.ordinal`), responses pooled into units;
    PRMSE from T's conditional moments (with its finite-sample spread)."""
    units = on_grid(ordinal_units(data, spec.score_range[0], spec.rater_effects or spec.rater_error == "rater"))
    model = pm.modelcontext(None)
    model.add_coords({"unit": np.arange(units.n_units), "unit_system_row": np.arange(len(units.system_unit))})
    values = replace(
        units,
        count=pm.Data("unit_count", units.count, dims="unit"),
        system_score=pm.Data("unit_system_score", units.system_score, dims="unit_system_row"),
    )
    empty = pt.zeros(0)
    alpha, beta, tau = calibration if calibration is not None else (empty, empty, empty)
    params = ordinal.OrdinalParameters(
        mu, sigma_t, alpha, beta, tau, offset, sigma_rater if sigma_rater is not None else sigma_e,
        ordinal.padded_cutpoints(ordinal.cutpoints(spec)), data.center,
    )
    log_lik, t_mean, t_var = ordinal.unit_terms(values, params)
    pm.Potential("marginal_likelihood", log_lik)
    if calibration is not None:
        mse, var_t, moments = ordinal.prmse_parts(values, t_mean, t_var, len(data.system_ids), static=units)
        _prmse_deterministics(mse, var_t, ordinal.mean_error_variance(units, params))
        finite_sample.store_moments(*moments)


# ---- builder ----------------------------------------------------------------------------


def build_from_data(data: TrueScoreData, spec: TrueScoreSpec) -> pm.Model:
    """Build the PyMC model for prepared data (see :func:`build_true_score_model`)."""
    coords = {
        "response": data.responses,
        "rater": data.raters,
        "system": data.system_ids,
        "rating": np.arange(len(data.ratings)),
        "system_row": np.arange(len(data.systems)),
    }
    has_systems = len(data.system_ids) > 0
    with pm.Model(coords=coords) as model:
        mu, sigma_t, sigma_e, sigma_rater, offset = _true_score_priors(data, spec)
        calibration = _system_priors(data) if has_systems else None
        if calibration is not None:
            _prmse_population(mu, sigma_t, *calibration, data.center)
        if spec.observation == "ordinal":
            _ordinal_likelihood(data, spec, mu, sigma_t, sigma_e, sigma_rater, offset, calibration)
        elif spec.sufficient:
            _sufficient_likelihood(data, mu, sigma_t, sigma_e, calibration)
        else:
            _channel_likelihood(data, mu, sigma_t, sigma_e, sigma_rater, offset, calibration)
    return model


def build_true_score_model(
    ratings: pd.DataFrame,
    system_scores: pd.DataFrame | None = None,
    *,
    systems: list | None = None,
    rater_effects: bool = False,
    rater_error: str = "common",
    observation: str = "normal",
    cutpoints: str = "fixed",
    joint: bool = False,
    score_range: tuple[float, float] | None = None,
    error_variance: float | None = None,
    response: str = "response",
    rater: str = "rater",
    system: str = "system",
    score: str = "score",
) -> pm.Model:
    """Build (without sampling) the true-score model of the module docstring.

    ``ratings`` and ``system_scores`` are long tables as in :func:`prmse_table`.
    ``systems`` picks the system(s) to include: one for the default separate model,
    any number with ``joint=True`` (default: all). Every variable has named dims
    (``response``, ``rater``, ``system``, ``rating``, ``system_row``); observed inputs
    are ``pm.Data``. Use ``pm.model_to_graphviz`` on the result to draw it.

    Parameters
    ----------
    ratings : pandas.DataFrame
        Long human ratings, one row per (response, rater).
    system_scores : pandas.DataFrame, optional
        Long system scores; without them the model holds the true scores and raters only.
    systems : list, optional
        The systems of the model (see above).
    rater_effects : bool
        Add each rater's additive bias.
    rater_error : {"common", "rater"}
        One error SD for every rater, or one per rater (hierarchical).
    observation : {"normal", "ordinal"}
        Ratings as normal around the true score, or as ordered categories.
    cutpoints : {"fixed", "estimated"}
        The ordinal observation's cutpoints: at the midpoints between scores, or estimated.
    joint : bool
        All chosen systems in one model.
    score_range : tuple of float, optional
        The scale's lowest and highest score.
    error_variance : float, optional
        Fix the rater error variance instead of estimating it.
    response, rater, system, score : str
        Column names in the two tables.

    Returns
    -------
    pymc.Model
        The model, not yet sampled.

    Examples
    --------
    >>> from bayes_raters.ctt import build_true_score_model, double_scored_subset, simulate_dataset
    >>> from bayes_raters.ctt import system_scores_to_long
    >>> dataset = simulate_dataset(200, raters_per_category=1, systems_per_category=1, random_seed=3)
    >>> ratings = double_scored_subset(dataset, ("h_1", "h_2"), 50, random_seed=3)
    >>> model = build_true_score_model(ratings, system_scores_to_long(dataset, ["sys_3"]))
    >>> sorted(model.named_vars_to_dims["alpha"])
    ['system']
    """
    spec = TrueScoreSpec(rater_effects, rater_error, observation, cutpoints, joint, score_range, error_variance)
    rated, scored = validate_true_score_inputs(
        ratings, system_scores, spec, response=response, rater=rater, system=system, score=score
    )
    if systems is None and not joint and scored["system"].nunique() > 1:
        raise InvalidInputError(
            f"the separate model holds one system; pick one with systems=[...] from "
            f"{list(pd.unique(scored['system']))}, or pass joint=True."
        )
    return build_from_data(model_data(rated, scored, spec, systems), spec)
