r"""The ordinal true-score model with T integrated out (integer ratings).

Model. :math:`T_i \sim N(\mu, \sigma_T)`; system scores are Gaussian measurements of
:math:`T_i` (:math:`M_{is} \sim N(\alpha_s + \beta_s (T_i - c_0), \tau_s)`); a rating by rater
:math:`r` is the category of the latent :math:`U = T_i + \delta_r + e`,
:math:`e \sim N(0, \sigma_r)`, between cutpoints :math:`c_{k-1} < U \le c_k` (ordered probit;
:math:`c_{-1} = -\infty`, :math:`c_K = \infty`).

Likelihood of a response, :math:`p(M_i)\,p(H_i \mid M_i)`, with no latent left for NUTS:

- :math:`p(M_i)` and :math:`T_i \mid M_i \sim N(m_i, v_i)`, :math:`v_i = 1/P_i`, are Gaussian
  (the normal model's algebra).
- **One rating**: :math:`U \mid M_i \sim N(m_i + \delta, v_i + \sigma_r^2)`, so
  :math:`p(H = k \mid M_i) = \Phi(b) - \Phi(a)` with :math:`a, b` the category's cutpoints
  standardised on that normal. :math:`T_i \mid M_i, H` is a bivariate normal given a truncated
  coordinate: with :math:`V = v_i + \sigma_r^2`, :math:`\lambda = (\varphi(a) - \varphi(b))/Z`,
  :math:`E[T] = m_i + v_i\lambda/\sqrt V` and
  :math:`Var[T] = v_i - (v_i^2/V)(\lambda^2 - (a\varphi(a) - b\varphi(b))/Z)`.
- **Two ratings**: :math:`(U_1, U_2) \mid M_i` is bivariate normal with correlation
  :math:`\rho = v_i/\sqrt{(v_i + \sigma_1^2)(v_i + \sigma_2^2)}`, so :math:`p(H_1, H_2 \mid M_i)` is
  a rectangle probability, exact to about 1e-8 in log (:mod:`bayes_raters.bivariate`).
  The moments of T follow from Tweedie's formula (T's prior given M is
  :math:`N(m_i, v_i)` and the ratings do not depend on :math:`m_i` otherwise):
  :math:`E[T \mid M, H] = m_i + v_i\,\partial_m \log p(H \mid M)` and
  :math:`Var[T \mid M, H] = v_i + v_i^2\,\partial^2_m \log p(H \mid M)`, both in closed form
  (:func:`bayes_raters.bivariate.shift_derivatives`).
- **Three or more ratings** (rare in scoring data): adaptive quadrature over
  :math:`z`, :math:`T = m_i + z\sqrt{v_i}`, with :data:`N_NODES` trapezoid nodes centred and
  scaled per unit at the combined one-rating conditionals (natural parameters added, the prior
  counted once), held constant in the gradient.

Responses are pooled into units (:mod:`bayes_raters.ctt.ordinal_units`); with one system, rating
patterns with many units become Chebyshev pseudo-units on a grid of system scores
(:func:`~bayes_raters.ctt.ordinal_units.on_grid`), which every function here handles as
ordinary units with (possibly negative) counts. PRMSE per draw is formed as in the normal
model: :math:`\sum_i [(M_{is} - E T_i)^2 + Var\,T_i]` over
:math:`\sum_i (E T_i - \bar E)^2 + (1 - 1/N)\sum_i Var\,T_i`, with the finite-sample spread of
both sums added after sampling (:mod:`bayes_raters.ctt.finite_sample`; normal fourth moments
for :math:`T_i - E T_i`, close for these near-normal conditionals: checked against exact
draws of T in ``tests/ctt/test_model.py``). Draws of :math:`T_i` are made on
demand from the exact conditional (:func:`draw_true_scores`): for one rating, draw U from
its truncated normal and T given U; otherwise :func:`bayes_raters.quadrature.draw_conditional`
on a per-unit grid with Metropolis-Hastings correction by the exact likelihood.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy.stats import truncnorm

from bayes_raters.bivariate import FAR, log_diff_ndtr, log_diff_ndtr_erfc, log_diff_ndtr_np, log_rectangle_probability, shift_derivatives
from bayes_raters.ctt.finite_sample import spread_terms
from bayes_raters.errors import InvalidInputError
from bayes_raters.quadrature import adaptive_rule, draw_conditional, logsumexp_np, trapezoid_rule

#: Trapezoid nodes (on +-HALF_WIDTH scaled SDs) for units with three or more ratings.
N_NODES = 41
HALF_WIDTH = 8.0
DRAW_RULE = trapezoid_rule(161, 8.0)  # grid of the conditional draws (then MH-corrected)
LOG_ROOT_2PI = 0.5 * np.log(2 * np.pi)


def cutpoints(spec):
    """Fixed at k + 1/2, or estimated (outer two fixed to anchor location and scale, inner
    ones a Dirichlet split of the span between them)."""
    low, high = spec.score_range
    fixed = np.arange(low, high) + 0.5  # K - 1 cutpoints between K integer scores
    if spec.cutpoints == "fixed":
        return pt.as_tensor(fixed)
    if fixed.size < 3:
        raise InvalidInputError("estimated cutpoints need a scale with at least 4 score points.")
    model = pm.modelcontext(None)
    model.add_coord("cutpoint", [f"{k:g}|{k + 1:g}" for k in np.arange(low, high)])
    model.add_coord("cutpoint_gap", np.arange(fixed.size - 1))
    gaps = pm.Dirichlet("cutpoint_gaps", a=np.full(fixed.size - 1, 10.0), dims="cutpoint_gap")
    inner = fixed[0] + (fixed[-1] - fixed[0]) * pt.cumsum(gaps)[:-1]
    return pm.Deterministic("cutpoints", pt.concatenate([fixed[:1], inner, fixed[-1:]]), dims="cutpoint")


def padded_cutpoints(cut, lib=pt):
    """Cutpoints with the outer +-infinity as finite stand-ins: category k spans
    ``padded[k], padded[k + 1]``."""
    if lib is np:
        return np.concatenate([[-FAR], cut, [FAR]])
    return pt.concatenate([pt.as_tensor([-FAR]), cut, pt.as_tensor([FAR])])


def log_interval_probability(mean, sd, lower, upper, lib=pt, exact_tails: bool = True):
    """:math:`\\log[\\Phi((u - m)/s) - \\Phi((l - m)/s)]`, stable in both tails (PyTensor with
    ``exact_tails=False``: :func:`~bayes_raters.bivariate.log_diff_ndtr_erfc`, for quadrature nodes)."""
    if lib is pt:
        log_diff = log_diff_ndtr if exact_tails else log_diff_ndtr_erfc
        return log_diff((lower - mean) / sd, (upper - mean) / sd)
    return log_diff_ndtr_np((lower - mean) / sd, (upper - mean) / sd)


def one_rating_moments(mean, var, lower, upper, error_var, lib=pt):
    """T ~ N(mean, var) rated once, U = T + e in (lower, upper], e ~ N(0, error_var) (offsets
    already in ``lower``/``upper``): returns log P(rating), E[T | rating], Var[T | rating]."""
    total = var + error_var
    root = lib.sqrt(total)
    a, b = (lower - mean) / root, (upper - mean) / root
    log_z = log_interval_probability(mean, root, lower, upper, lib)
    pdf_a = lib.exp(-0.5 * a**2 - LOG_ROOT_2PI - log_z)  # phi(a) / Z
    pdf_b = lib.exp(-0.5 * b**2 - LOG_ROOT_2PI - log_z)
    lam = pdf_a - pdf_b
    truncated_var = 1 + a * pdf_a - b * pdf_b - lam**2  # Var of the standardised U, in (0, 1]
    shrink = var / total
    post_mean = mean + shrink * root * lam
    post_var = var - shrink * var * (1 - lib.clip(truncated_var, 0.0, 1.0))
    return log_z, post_mean, post_var


@dataclass
class OrdinalParameters:
    """One draw (NumPy) or the model's tensors (PyTensor). ``alpha``, ``beta``, ``tau`` per
    system; ``offset`` per rater or None; ``error_sd`` scalar or per rater; ``cut`` padded."""

    mu: object
    sigma_t: object
    alpha: object
    beta: object
    tau: object
    offset: object
    error_sd: object
    cut: object
    center: float

    def bounds(self, rater, category):
        """Category bounds of a rating with the rater's offset moved to the cutpoints."""
        shift = 0.0 if self.offset is None else self.offset[rater]
        return self.cut[category] - shift, self.cut[category + 1] - shift

    def error_var(self, rater):
        """The error variance of ``rater`` (indices): per rater, or the common one broadcast."""
        sd = self.error_sd
        return sd[rater] ** 2 if getattr(sd, "ndim", 0) else sd**2 + 0.0 * rater


def _segment_sum(values, index, size, lib):
    if lib is np:
        return np.bincount(index, weights=values, minlength=size)
    return pt.zeros(size)[index].inc(values)


def system_conditional(units, p: OrdinalParameters, lib=pt):
    """Per unit: log p(M_u) (T integrated out), and the mean m_u and precision P_u of T_u given
    its system scores alone. With one system row per unit in unit order (the separate
    model) the segment sums are the rows themselves."""
    n = units.n_units
    s = units.system_index
    b, v = p.beta[s], p.tau[s] ** 2
    x = units.system_score - p.alpha[s] + p.beta[s] * p.center
    if units.one_row_each:
        def per_unit(values):
            return values
    else:
        def per_unit(values):
            return _segment_sum(values, units.system_unit, n, lib)
    precision = 1 / p.sigma_t**2 + per_unit(b**2 / v)
    mean = (p.mu / p.sigma_t**2 + per_unit(b * x / v)) / precision
    at_unit = mean if units.one_row_each else mean[units.system_unit]
    log_measure = -0.5 * (2 * LOG_ROOT_2PI + lib.log(v)) - 0.5 * (x - b * at_unit) ** 2 / v
    log_prior = -LOG_ROOT_2PI - lib.log(p.sigma_t) - 0.5 * (mean - p.mu) ** 2 / p.sigma_t**2
    log_at_mode = 0.5 * lib.log(precision) - LOG_ROOT_2PI
    return per_unit(log_measure) + log_prior - log_at_mode, mean, precision


def _pair_rectangle(mean, var, rater, category, p: OrdinalParameters, lib):
    """Standardised bounds (l1, u1, l2, u2), correlation and the SDs of (U_1, U_2) given M."""
    lower, upper = p.bounds(rater, category)
    total = lib.sqrt(var[:, None] + p.error_var(rater))
    lo, hi = (lower - mean[:, None]) / total, (upper - mean[:, None]) / total
    rho = var / (total[:, 0] * total[:, 1])
    return (lo[:, 0], hi[:, 0], lo[:, 1], hi[:, 1], rho), total


def pair_loglik(mean, var, rater, category, p: OrdinalParameters, lib=pt):
    """log p(H_1, H_2 | M) of two-rating units: T ~ N(mean, var); (units, 2) rater/category."""
    rectangle, _ = _pair_rectangle(mean, var, rater, category, p, lib)
    return log_rectangle_probability(*rectangle, lib)


def pair_terms(mean, var, rater, category, p: OrdinalParameters):
    """log p(H_1, H_2 | M), E[T | M, H] and Var[T | M, H] of two-rating units (PyTensor): the
    moments by Tweedie's formula, with the derivatives in m of
    :func:`bayes_raters.bivariate.shift_derivatives` (each standardised bound moves at -1/SD)."""
    rectangle, total = _pair_rectangle(mean, var, rater, category, p, pt)
    log_p = log_rectangle_probability(*rectangle)
    slope, curvature = shift_derivatives(*rectangle, -1 / total[:, 0], -1 / total[:, 1], log_p)
    return log_p, mean + var * slope, pt.maximum(var + var**2 * curvature, 0.0)


def slot_loglik(latent, rater, category, used, p: OrdinalParameters, lib=pt, exact_tails: bool = True):
    """Sum over a unit's rating slots of log p(H | T) at latent values ``latent`` (units, Q)
    (``exact_tails``: see :func:`log_interval_probability`)."""
    lower, upper = p.bounds(rater, category)
    sd = lib.sqrt(p.error_var(rater))
    per_slot = log_interval_probability(latent[:, None, :], sd[..., None], lower[..., None], upper[..., None], lib, exact_tails)
    return (per_slot * used[..., None]).sum(axis=1)


def grid_centre(mean, var, rater, category, used, p: OrdinalParameters, lib=pt):
    """Centre and scale (z scale, T = mean + z sqrt(var)) of a unit's conditional from its
    ratings' one-rating conditionals combined (natural parameters added, prior once)."""
    m, v = mean[:, None], var[:, None]
    lower, upper = p.bounds(rater, category)
    _, post_mean, post_var = one_rating_moments(m, v, lower, upper, p.error_var(rater), lib)
    post_var = lib.maximum(post_var, 1e-12 * v)
    tight = lib.sum(used * (1 / post_var - 1 / v), axis=1) + 1 / var
    shift = lib.sum(used * (post_mean / post_var - m / v), axis=1) + mean / var
    return (shift / tight - mean) / lib.sqrt(var), lib.sqrt(1 / (tight * var))


def quadrature_terms(mean, var, rater, category, used, p: OrdinalParameters, lib=pt, rule=None, exact_tails: bool = True):
    """log p(H | T ~ N(mean, var)), E[T | H] and Var[T | H] per unit by adaptive quadrature
    (``rule`` centred and scaled at :func:`grid_centre`; None: :data:`N_NODES` trapezoid nodes):
    any number of ratings, (units, slots) ``rater``, ``category`` and ``used``; NumPy or PyTensor
    (``exact_tails``: see :func:`log_interval_probability`)."""
    centre, scale = grid_centre(mean, var, rater, category, used, p, lib)
    nodes, log_w = adaptive_rule(centre, scale, trapezoid_rule(N_NODES, HALF_WIDTH) if rule is None else rule)
    latent = mean[:, None] + nodes * lib.sqrt(var)[:, None]
    node_ll = slot_loglik(latent, rater, category, used, p, lib, exact_tails) + log_w
    log_lik = pt.logsumexp(node_ll, axis=-1) if lib is pt else logsumexp_np(node_ll, axis=-1)
    weights = lib.exp(node_ll - log_lik[:, None])
    t_mean = (weights * latent).sum(axis=-1)
    return log_lik, t_mean, lib.maximum((weights * latent**2).sum(axis=-1) - t_mean**2, 0.0)


def _unit_pieces(units, p: OrdinalParameters):
    """Per unit (PyTensor, not count-weighted): log p(M_u) and, per block of units (one, two,
    three or more ratings), log p(H_u | M_u), E[T] and Var[T]."""
    log_system, mean, precision = system_conditional(units, p)
    var = 1 / precision
    one, two, more = units.blocks()
    lower, upper = p.bounds(units.single_rater[:, 0], units.single_category[:, 0])
    blocks = [
        one_rating_moments(mean[one], var[one], lower, upper, p.error_var(units.single_rater[:, 0])),
        pair_terms(mean[two], var[two], units.pair_rater, units.pair_category, p),
    ]
    if units.multi.size:
        blocks.append(quadrature_terms(mean[more], var[more], units.multi_rater, units.multi_category, units.multi_used, p))
    return log_system, blocks


def unit_terms(units, p: OrdinalParameters):
    """The count-weighted log-likelihood of all units (T integrated out; PyTensor), and the
    conditional mean and variance of T per unit given its data (for PRMSE)."""
    log_system, blocks = _unit_pieces(units, p)
    count = units.count
    total = pt.sum(count * log_system)
    for block, (log_ratings, _, _) in zip(units.blocks(), blocks):
        total = total + pt.sum(count[block] * log_ratings)
    return total, pt.concatenate([b[1] for b in blocks]), pt.concatenate([b[2] for b in blocks])


def unit_logliks(units, p: OrdinalParameters):
    """log p(ratings, system scores) of each unit, T integrated out (PyTensor; the terms that
    :func:`unit_terms` weights by the counts): the pointwise log-likelihood of a response is
    that of its unit."""
    log_system, blocks = _unit_pieces(units, p)
    return log_system + pt.concatenate([b[0] for b in blocks])


def prmse_parts(units, t_mean, t_var, n_systems: int, static):
    """Rao-Blackwellised MSE per system and true-score variance over the responses, and the
    moments of their finite-sample spread (:mod:`bayes_raters.ctt.finite_sample`; ``units`` may
    hold model data; ``static``: the NumPy units, for the fixed totals)."""
    c = units.count
    total = float(static.count.sum())
    grand = pt.sum(c * t_mean) / total
    centred = t_mean - grand
    var_t = (pt.sum(c * centred**2) + (1 - 1 / total) * pt.sum(c * t_var)) / total
    u, s = static.system_unit, static.system_index
    residual = units.system_score - t_mean[u]
    squared = c[u] * (residual**2 + t_var[u])
    per_system = np.bincount(s, weights=static.count[u], minlength=n_systems)
    var_a, _, cov = spread_terms(residual, centred[u], t_var[u], pt)
    var_b = spread_terms(0.0, centred, t_var, pt)[1]
    moments = (
        _segment_sum(c[u] * var_a, s, n_systems, pt) / per_system**2,
        pt.sum(c * var_b) / total**2,
        _segment_sum(c[u] * cov, s, n_systems, pt) / (per_system * total),
    )
    return _segment_sum(squared, s, n_systems, pt) / per_system, var_t, moments


def mean_error_variance(units, p: OrdinalParameters):
    """Rating-weighted mean of the raters' error variances (the common one without rater SDs)."""
    rater, weight = units.rating_weights()
    return pt.sum(weight * p.error_var(rater)) / weight.sum()


def draw_true_scores(units, p: OrdinalParameters, rng: np.random.Generator) -> np.ndarray:
    """One draw of T for every response (in response order) from its exact conditional given
    the data and one posterior draw ``p`` (NumPy values)."""
    _, mean, precision = system_conditional(units, p, np)
    var = 1 / precision
    unit = units.response_unit
    out = np.empty(len(unit))
    kind = np.zeros(units.n_units, int)
    kind[units.pair], kind[units.multi] = 1, 2
    single = np.flatnonzero(kind[unit] == 0)
    if single.size:
        position = np.searchsorted(units.single, unit[single])
        rater, category = units.single_rater[position, 0], units.single_category[position, 0]
        m, v, e = mean[unit[single]], var[unit[single]], p.error_var(rater)
        lower, upper = p.bounds(rater, category)
        sd = np.sqrt(v + e)
        latent = truncnorm.rvs((lower - m) / sd, (upper - m) / sd, loc=m, scale=sd, random_state=rng)
        out[single] = m + v / (v + e) * (latent - m) + np.sqrt(v * e / (v + e)) * rng.standard_normal(single.size)
    rest = np.flatnonzero(kind[unit] > 0)
    if rest.size:
        out[rest] = _draw_by_grid(units, p, mean, var, unit[rest], rng)
    return out


def _draw_by_grid(units, p: OrdinalParameters, mean, var, unit, rng) -> np.ndarray:
    """Units with two or more ratings: grid + MH draws (see the module docstring)."""
    groups = np.concatenate([units.pair, units.multi])
    width = max(2, units.multi_used.shape[1])
    rater = np.zeros((groups.size, width), "int64")
    category = np.zeros_like(rater)
    used = np.zeros((groups.size, width))
    rater[: units.pair.size, :2], category[: units.pair.size, :2], used[: units.pair.size, :2] = (
        units.pair_rater, units.pair_category, 1.0,
    )
    tail = slice(units.pair.size, None)
    shape = units.multi_used.shape
    rater[tail, : shape[1]], category[tail, : shape[1]], used[tail, : shape[1]] = (
        units.multi_rater, units.multi_category, units.multi_used,
    )
    m, v = mean[groups], var[groups]
    centre, scale = grid_centre(m, v, rater, category, used, p, np)

    def kernel(x, index):  # log-likelihood + log prior of z, minus the standard normal of x
        z = centre[index, None] + scale[index, None] * x
        latent = m[index, None] + z * np.sqrt(v[index, None])
        ll = slot_loglik(latent, rater[index], category[index], used[index], p, np)
        return ll - 0.5 * z**2 + 0.5 * x**2

    index = np.searchsorted(np.sort(groups), unit)
    order = np.argsort(groups)
    index = order[index]
    node_ll = kernel(DRAW_RULE.nodes[None, :], np.arange(groups.size))
    x, _ = draw_conditional(
        node_ll, lambda points: kernel(points[:, None], index)[:, 0], DRAW_RULE, rng, unit_index=index
    )
    return m[index] + (centre[index] + scale[index] * x) * np.sqrt(v[index])
