r"""Importance-sampled Laplace draws of the arena posterior (:mod:`bayes_raters.leaderboard.arena_posterior`).

Without categories the posterior of :math:`x = (\theta, \beta, \kappa)` has a mode: Newton's method
finds it (exact Hessian, step halving), and the proposal is :math:`N(\hat x, H^{-1})`.

With categories the deviations are centred, :math:`u_{cm} \sim N(0, \tau^2)`, right where every
category has thousands of votes, but then the joint density has no mode (it grows without bound as
:math:`\tau \to 0` with :math:`u = 0`). So :math:`\rho = \log\tau` is handled as the integrated
nested Laplace approximation does (Rue, Martino & Chopin 2009): for fixed :math:`\rho`, Newton gives
:math:`\hat x(\rho)` and :math:`H(\rho)`, and
:math:`\log p(\rho \mid y) \approx \log p(\hat x(\rho), \rho \mid y) - \tfrac12 \log\det H(\rho)`
(+ const). Its maximum :math:`\hat\rho` and curvature (Newton on central differences of step
:data:`RHO_STEP`) give :math:`\rho \sim N(\hat\rho, s^2)`; then
:math:`x \mid \rho \sim N(\hat x(\hat\rho) + \hat x'(\hat\rho)(\rho - \hat\rho), H(\hat\rho)^{-1})`,
with the slope :math:`\hat x'` from the same differences. That joint Gaussian is the proposal.

Either way each chain draws ``PROPOSALS_PER_DRAW`` x ``draws`` proposals, the exact log posterior
weighs them, Pareto smoothing checks the weights (:math:`\hat k` against
:func:`bayes_raters.laplace.k_threshold`), and systematic resampling keeps ``draws`` per chain; the
effective size is counted as in :mod:`bayes_raters.laplace`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg

from bayes_raters.errors import ConvergenceError
from bayes_raters.laplace import LaplaceCheck, _resample, _smoothed, k_threshold, kish_ess
from bayes_raters.leaderboard.arena_model import ArenaData
from bayes_raters.leaderboard.arena_posterior import Layout, log_posterior, log_posterior_many

NEWTON_MAX_STEPS = 50
NEWTON_TOLERANCE = 1e-7
RHO_STEP = 0.02
RHO_MAX_STEPS = 20
#: Proposals per kept draw (1: with millions of votes the weights are nearly even, measured
#: Kish ESS 0.9+ of the proposals, and every proposal costs a pass over the votes).
PROPOSALS_PER_DRAW = 1


@dataclass(frozen=True)
class Approximation:
    """The Gaussian proposal: ``mean`` (all parameters), ``chol`` (Cholesky factor of the negative
    Hessian over ``free``, every parameter but rho), and for categories rho's mean and SD and the
    slope of the free parameters' mean in rho."""

    mean: np.ndarray
    chol: np.ndarray
    free: np.ndarray
    rho: int | None = None
    rho_sd: float = 0.0
    slope: np.ndarray | None = None
    newton_steps: int = 0


def newton(x: np.ndarray, free: np.ndarray, data: ArenaData, layout: Layout, rating_sd: float):
    """Maximise the log posterior over ``x[free]`` (the rest held): returns ``(x, value, chol,
    steps)`` with ``chol`` the Cholesky factor of the negative Hessian over ``free`` at the end."""
    value, grad, neg_hess = log_posterior(x, data, layout, rating_sd)
    for step in range(1, NEWTON_MAX_STEPS + 1):
        g, h = grad[free], neg_hess[np.ix_(free, free)]
        try:
            direction = linalg.cho_solve((linalg.cholesky(h, lower=True), True), g)
        except linalg.LinAlgError:  # a gradient step where the curvature is not positive
            direction = g / max(1.0, np.max(np.abs(g)))
        scale = 1.0
        while True:
            trial = x.copy()
            trial[free] += scale * direction
            new = log_posterior(trial, data, layout, rating_sd)
            if (np.isfinite(new[0]) and new[0] >= value - 1e-12 * abs(value)) or scale < 1e-6:
                break
            scale /= 2
        x, (value, grad, neg_hess) = trial, new
        if np.max(np.abs(scale * direction)) < NEWTON_TOLERANCE:
            break
    try:
        chol = linalg.cholesky(neg_hess[np.ix_(free, free)], lower=True)
    except linalg.LinAlgError as error:
        raise ConvergenceError("the arena posterior has no proper mode (the negative Hessian is not positive definite).") from error
    if np.max(np.abs(grad[free])) > 1e-4 * max(1.0, data.weight.sum()):
        raise ConvergenceError(f"Newton's method did not reach the arena posterior's mode in {NEWTON_MAX_STEPS} steps.")
    return x, value, chol, step


def _log_marginal(rho: float, x: np.ndarray, free, data, layout, rating_sd):
    """Laplace's log p(rho | y) + const at ``rho``, warm-started at ``x``; returns it with x-hat and the factor."""
    x = x.copy()
    x[layout.rho] = rho
    x, value, chol, steps = newton(x, free, data, layout, rating_sd)
    return value - np.sum(np.log(np.diag(chol))), x, chol, steps


def approximate(data: ArenaData, layout: Layout, rating_sd: float) -> Approximation:
    """The proposal of the module docstring."""
    everything = np.arange(layout.size)
    if layout.rho is None:
        x, _, chol, steps = newton(layout.start(), everything, data, layout, rating_sd)
        return Approximation(x, chol, everything, newton_steps=steps)
    free = everything[everything != layout.rho]
    x, rho, total = layout.start(), float(layout.start()[layout.rho]), 0
    for _ in range(RHO_MAX_STEPS):
        points = [_log_marginal(rho + d, x, free, data, layout, rating_sd) for d in (-RHO_STEP, 0.0, RHO_STEP)]
        total += sum(p[3] for p in points)
        low, mid, high = (p[0] for p in points)
        first, second = (high - low) / (2 * RHO_STEP), (high - 2 * mid + low) / RHO_STEP**2
        step = -first / second if second < 0 else np.sign(first) * 1.0
        x = points[1][1]
        if abs(step) < 1e-3:
            slope = (points[2][1][free] - points[0][1][free]) / (2 * RHO_STEP)
            return Approximation(x, points[1][2], free, layout.rho, float(1 / np.sqrt(-second)), slope, total)
        rho += float(np.clip(step, -1.0, 1.0))
    raise ConvergenceError(f"the category spread's marginal posterior did not settle in {RHO_MAX_STEPS} steps.")


def propose(approx: Approximation, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` proposals and their log densities (up to one constant)."""
    z = rng.standard_normal((n, approx.free.size))
    xs = np.tile(approx.mean, (n, 1))
    xs[:, approx.free] += linalg.solve_triangular(approx.chol, z.T, lower=True, trans="T").T
    log_q = -0.5 * np.sum(z**2, axis=1)
    if approx.rho is not None:
        z0 = rng.standard_normal(n)
        xs[:, approx.rho] += approx.rho_sd * z0
        xs[:, approx.free] += np.outer(approx.rho_sd * z0, approx.slope)
        log_q -= 0.5 * z0**2
    return xs, log_q


def importance_draws(approx: Approximation, data: ArenaData, layout: Layout, rating_sd: float, *, draws: int, chains: int,
                     rng: np.random.Generator, progress=None) -> tuple[np.ndarray, LaplaceCheck]:
    """Resampled draws (chains, draws, d) and the check (module docstring)."""
    rngs = rng.spawn(chains)
    batches = []
    for c in range(chains):
        xs, log_q = propose(approx, PROPOSALS_PER_DRAW * draws, rngs[c])
        log_p = log_posterior_many(xs, data, layout, rating_sd)
        batches.append((xs, np.where(np.isfinite(log_p), log_p - log_q, -np.inf)))
        if progress is not None:
            progress(f"weighed the proposals of chain {c + 1} of {chains}")
    log_r = np.concatenate([b[1] for b in batches])
    smoothed, k = _smoothed(log_r)
    threshold = k_threshold(log_r.size)
    kept, ess, start = [], 0.0, 0
    for c, (xs, _) in enumerate(batches):
        w = np.exp(smoothed[start:start + len(xs)] - np.max(smoothed[start:start + len(xs)]))
        start += len(xs)
        w /= w.sum()
        ess += 1.0 / (1.0 / kish_ess(w) + 1.0 / draws)
        kept.append(xs[_resample(w, draws, rngs[c])])
    reason = "" if k <= threshold else f"Pareto k {k:.2f} > {threshold:.2f}: the posterior is too far from its Laplace approximation"
    return np.stack(kept), LaplaceCheck(float(k), threshold, ess, reason)
