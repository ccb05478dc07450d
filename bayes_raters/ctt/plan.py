r"""Planning the next ratings from a fitted true-score result (a preposterior analysis): how wide
will each system's PRMSE interval be, and how likely will it clear a threshold, after
:math:`\Delta_d` more double-scored and :math:`\Delta_s` more single-scored responses?

Method. A refit per simulated future data set would cost a fit per design and replication, so
the width is carried over from the fit by a ratio of sampling spreads, computed on the normal
model's sufficient statistics:

1. For each of ``n_draws`` posterior draws of :math:`(\mu, \sigma_T, \sigma_e, \alpha_s, \beta_s,
   \tau_s)`, simulate an evaluation set of design :math:`D` (the responses each system scored
   now, with their rating counts, plus the new ones): true scores :math:`T_i \sim N(\mu,
   \sigma_T)`; only the sufficient statistics of the ratings are needed, the mean rating
   :math:`\bar H_i \sim N(T_i, \sigma_e^2 / c_i)` and the pooled within-response sum of squares
   :math:`\sigma_e^2 \chi^2_{\sum (c_i - 1)}`; system scores
   :math:`M_{is} = \alpha_s + \beta_s (T_i - c_0) + N(0, \tau_s)`.
2. On each set compute the closed-form PRMSE (Haberman's estimator,
   :mod:`bayes_raters.ctt.prmse`) and the in-sample PRMSE of the simulated true scores (what
   the fit's ``prmse`` draws are about); :math:`s_D` is the root mean square of their difference
   over the draws (and of the difference between two systems).
3. By the Bernstein-von Mises approximation the posterior SD at a design is proportional to
   :math:`s_D`, so the expected interval width is the fit's own interval width times
   :math:`s_D / s_{now}`; for a difference of two systems, the width of the fit's own draws of
   the difference times the ratio of the difference's spreads (simulated with common true
   scores and ratings, independent system errors). Measured (a pilot of 100 double- and 400
   single-scored responses, two systems; ``tests/ctt/test_plan.py``, 20 refits per design):
   planned / realised 0.94-1.01 at 100, 300 and 900 more double-scored responses; a joint
   fit's difference at 300 more (4 refits), planned 0.150, realised 0.139. Scaling a width
   built from the spreads alone gave 0.117: the joint fit's difference is wider than the
   estimator's sampling spread suggests (0.222 against 0.173 at the pilot), and the fit is
   right about it (exact draws of every true score gave 0.233).
4. Probability that the future interval clears a threshold: the future posterior mean varies
   around today's with variance :math:`\sigma_{now}^2 - \sigma_D^2` (law of total variance;
   :math:`\sigma = w / (2 z)`), so :math:`P(\text{lower} > t) = \Phi\big((m_{now} - z \sigma_D -
   t) / \sqrt{\sigma_{now}^2 - \sigma_D^2}\big)` (normal approximation), and for a difference
   :math:`P(\text{interval excludes } 0)` likewise.

Checked against real refits (``tests/ctt/test_plan.py``; the three-design check over 20
replications each is in ``make validate``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from bayes_raters.errors import InvalidInputError
from bayes_raters.results import check_ci_prob, seeded_rng, thinned_posterior


@dataclass(frozen=True)
class Design:
    """Rating counts per response of one system's evaluation set."""

    counts: np.ndarray  # ratings per response (>= 1)

    def plus(self, double: int, single: int) -> Design:
        """The design with ``double`` more double-scored and ``single`` more single-scored responses."""
        return Design(np.concatenate([self.counts, np.full(int(double), 2.0), np.ones(int(single))]))


def current_designs(result) -> dict:
    """Each system's evaluation set now: rating counts of the responses it scored."""
    counts = result.ratings.groupby("response").size()
    systems = result.system_scores
    return {s: Design(counts.reindex(systems.loc[systems["system"] == s, "response"]).dropna().to_numpy(float))
            for s in pd.unique(systems["system"])}


def parameter_draws(result, system, n_draws: int) -> dict[str, np.ndarray]:
    """Flat draws of mu, sigma_T, sigma_e and the system's alpha, beta, tau from its fit."""
    posterior = thinned_posterior(result.posterior, n_draws)
    out = {}
    for name in ("mu", "sigma_T", "sigma_e", "alpha", "beta", "tau"):
        values = posterior[name]
        if "system" in values.dims:
            values = values.sel(system=system)
        out[name] = values.values.ravel()
    return out


def _center(result, system) -> float:
    from bayes_raters.ctt.model import model_data

    chosen = None if result.spec.joint else [system]
    return model_data(result.ratings, result.system_scores, result.spec, chosen).center


def simulated_errors(params: dict, design: Design, center: float, rng: np.random.Generator,
                     noise_rng: np.random.Generator) -> np.ndarray:
    """Closed-form PRMSE minus in-sample PRMSE on one simulated set per draw (draws,).
    ``rng`` draws the true scores and ratings (the same stream for every system, so systems
    with the same responses share them: common random numbers for differences), ``noise_rng``
    the system's own errors."""
    c = design.counts
    n_draw, n = len(params["mu"]), len(c)
    mu, sd_t, sd_e = (params[k][:, None] for k in ("mu", "sigma_T", "sigma_e"))
    true = mu + sd_t * rng.standard_normal((n_draw, n))
    mean = true + sd_e * rng.standard_normal((n_draw, n)) / np.sqrt(c)
    dof = (c - 1).sum()
    ss_within = params["sigma_e"] ** 2 * rng.chisquare(dof, n_draw) if dof > 0 else np.zeros(n_draw)
    system = params["alpha"][:, None] + params["beta"][:, None] * (true - center) + params["tau"][:, None] * noise_rng.standard_normal((n_draw, n))
    error_variance = ss_within / dof
    c_total, c2_total = c.sum(), (c**2).sum()
    grand = (mean * c).sum(axis=1, keepdims=True) / c_total
    var_t = ((c * (mean - grand) ** 2).sum(axis=1) - (n - 1) * error_variance) / (c_total - c2_total / c_total)
    mse = ((c * (mean - system) ** 2).sum(axis=1) - n * error_variance) / c_total
    estimate = 1 - mse / var_t
    in_sample = 1 - ((system - true) ** 2).sum(axis=1) / ((true - true.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    return estimate - in_sample


def _spread(errors: np.ndarray) -> float:
    """Root mean square (robust to the rare wild closed-form estimate: 1% trimmed each side)."""
    low, high = np.quantile(errors, [0.01, 0.99])
    kept = errors[(errors >= low) & (errors <= high)]
    return float(np.sqrt(np.mean(kept**2)))


def plan_double_scoring(
    result, extra=(0, 100, 300, 1000, 3000), extra_single: int = 0, *, ci_prob: float = 0.9,
    threshold: float | None = None, pairs: list[tuple] | None = None, n_draws: int = 2000, random_seed=None,
) -> pd.DataFrame:
    """Expected PRMSE interval widths after ``extra`` more double-scored responses (each also
    scored by every system) and ``extra_single`` more single-scored ones, from a fitted
    :func:`~bayes_raters.ctt.fit_true_score` result (normal observations); module
    docstring for the method.

    Returns a tidy table, one row per (extra, system or pair): ``extra_double``,
    ``extra_single``, ``n_double`` (double-scored responses then), ``quantity`` (a system, or
    ``"A - B"``), ``current_width``, ``expected_width``, ``current_mean`` and, with a
    ``threshold``, ``p_lower_above`` (systems) or ``p_excludes_zero`` (pairs). ``pairs``:
    system pairs whose PRMSE difference to plan (default: every pair)."""
    if getattr(result, "spec", None) is None or result.spec.observation != "normal":
        raise InvalidInputError("plan from fit_true_score(..., observation='normal') (the default); "
                                "the planner simulates the normal model's sufficient statistics.")
    check_ci_prob(ci_prob)
    extra = [int(e) for e in np.atleast_1d(extra)]
    if min(extra) < 0 or extra_single < 0:
        raise InvalidInputError(f"extra and extra_single must be >= 0; got {extra} and {extra_single}.")
    rng, z = seeded_rng(random_seed), stats.norm.ppf(0.5 + ci_prob / 2)
    table = result.prmse_table(ci_prob)
    now = {s: (float(table.loc[s, "prmse_upper"] - table.loc[s, "prmse_lower"]), float(table.loc[s, "prmse_mean"])) for s in table.index}
    designs = current_designs(result)
    systems = list(designs)
    pairs = [(a, b) for i, a in enumerate(systems) for b in systems[i + 1:]] if pairs is None else list(pairs)
    unknown = sorted({s for pair in pairs for s in pair} - set(systems), key=str)
    if unknown:
        raise InvalidInputError(f"pairs name unknown systems {unknown}; the fit has {systems}.")
    params = {s: parameter_draws(result, s, n_draws) for s in systems}
    centers = {s: _center(result, s) for s in systems}
    seed = int(rng.integers(2**31))
    errors = {}  # (extra, system) -> errors on a common stream per extra, so pairs share true scores
    for e in [0, *extra]:
        for k, s in enumerate(systems):
            errors[e, s] = simulated_errors(params[s], designs[s].plus(e, extra_single if e else 0), centers[s],
                                            np.random.default_rng([seed, e]), np.random.default_rng([seed, e, k + 1]))
    ratio = {s: now[s][0] / _spread(errors[0, s]) for s in systems}  # fit's width per unit of spread
    differences = {pair: _difference_now(result, *pair, ci_prob) for pair in pairs}  # (width, mean) today
    pair_ratio = {(a, b): differences[a, b][0] / _spread(errors[0, a] - errors[0, b]) for a, b in pairs}
    n_double = {s: int((designs[s].counts > 1).sum()) for s in systems}
    rows = []
    for e in extra:
        single = extra_single if e else 0
        for s in systems:
            width = ratio[s] * _spread(errors[e, s])
            row = {"extra_double": e, "extra_single": single, "n_double": n_double[s] + e, "quantity": s,
                   "current_width": now[s][0], "expected_width": width, "current_mean": now[s][1]}
            if threshold is not None:
                row["p_lower_above"] = p_clears(now[s][1] - threshold, now[s][0] / (2 * z), width / (2 * z), z)
            rows.append(row)
        for a, b in pairs:
            diff_now, mean = differences[a, b]
            width = pair_ratio[a, b] * _spread(errors[e, a] - errors[e, b])
            row = {"extra_double": e, "extra_single": single, "n_double": n_double[a] + e,
                   "quantity": f"{a} - {b}", "current_width": diff_now, "expected_width": width, "current_mean": mean}
            if threshold is not None:
                s_now, s_d = diff_now / (2 * z), width / (2 * z)
                row["p_excludes_zero"] = p_clears(mean, s_now, s_d, z) + p_clears(-mean, s_now, s_d, z)
            rows.append(row)
    return pd.DataFrame(rows)


def _difference_now(result, a, b, ci_prob: float) -> tuple[float, float]:
    """Width of the equal-tailed interval and mean of the fit's draws of PRMSE[a] - PRMSE[b]."""
    draws = (result.posterior["prmse"].sel(system=a) - result.posterior["prmse"].sel(system=b)).values.ravel()
    low, high = np.quantile(draws, [0.5 - ci_prob / 2, 0.5 + ci_prob / 2])
    return float(high - low), float(draws.mean())


def p_clears(margin: float, sd_now: float, sd_future: float, z: float) -> float:
    """P(future mean - z sd_future > 0) with the future mean ~ N(margin, sd_now^2 - sd_future^2)."""
    spread = np.sqrt(max(sd_now**2 - sd_future**2, 1e-12))
    return float(stats.norm.cdf((margin - z * sd_future) / spread))


def plot_plan(plan: pd.DataFrame, target_width: float | None = None, ax=None):
    """Expected interval width against the number of double-scored responses, one line per
    system or pair, with ``target_width`` marked. Returns the Axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    for name, rows in plan.groupby("quantity", sort=False):
        ax.plot(rows["n_double"], rows["expected_width"], marker="o", label=name)
    if target_width is not None:
        ax.axhline(target_width, color="grey", ls="--", lw=1, label=f"target {target_width:g}")
    ax.set_xscale("log")
    ax.set_xlabel("double-scored responses")
    ax.set_ylabel("expected width of the PRMSE interval")
    ax.legend(fontsize="small")
    return ax
