r"""Importance-sampled Laplace draws of the arena posterior (:mod:`bayes_raters.pairwise.arena.posterior`).

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
:math:`x \mid \rho \sim N(\hat x(\rho_g) + \hat x'(\rho_g)(\rho - \rho_g), H(\rho_g)^{-1})` from the
nearest of five grid points :math:`\rho_g` (as INLA integrates over a grid of hyperparameters),
with the slope :math:`\hat x'` from neighbouring grid points. The proposal of :math:`\rho` is
1.5 times wider than the Laplace marginal, as a defensive importance proposal.

Either way each chain draws ``PROPOSALS_PER_DRAW`` x ``draws`` proposals, the exact log posterior
weighs them, Pareto smoothing checks the weights (:math:`\hat k` against
:func:`bayes_raters.laplace.k_threshold`), and systematic resampling keeps ``draws`` per chain; the
effective size is counted as in :mod:`bayes_raters.laplace`. When the weights pass but R-hat or
ESS of the resampled draws does not (Monte Carlo noise: 2 x 1,000 resampled draws of 160 parameters
gave max R-hat 1.0101 once in the tests), :func:`~bayes_raters.pairwise.fit_arena` adds twice as
many fresh proposals and resamples from all of them, as :func:`bayes_raters.laplace.sample_laplace`
does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg

from bayes_raters.errors import ConvergenceError
from bayes_raters.laplace import resampled_batches
from bayes_raters.pairwise.arena.model import ArenaData
from bayes_raters.pairwise.arena.posterior import Layout, log_posterior, log_posterior_many

NEWTON_MAX_STEPS = 50
NEWTON_TOLERANCE = 1e-7
RHO_STEP = 0.02
RHO_MAX_STEPS = 20
#: The proposal of rho is this much wider than the Laplace marginal (a defensive proposal: the
#: marginal of log tau is right-skewed with few categories, and the unwidened proposal's upper
#: quantiles of tau fell short of NUTS's: ``models/leaderboards.md``).
RHO_WIDEN = 1.5
#: Offsets (in proposal SDs of rho) of the points whose conditional Gaussians propose the other
#: parameters: with few categories the deviations' spread given tau changes with tau (the same
#: data: one Gaussian at the centre understated tau's upper quantiles, ``models/leaderboards.md``).
RHO_GRID = (-2.0, -1.0, 0.0, 1.0, 2.0)
#: Proposals per kept draw (1: with millions of votes the weights are nearly even,
#: ``models/leaderboards.md``, and every proposal costs a pass over the votes).
PROPOSALS_PER_DRAW = 1


@dataclass(frozen=True)
class Approximation:
    """The Gaussian proposal: ``mean`` (all parameters) and ``chol`` (Cholesky factor of the
    negative Hessian over ``free``, every parameter but rho) at the centre; for categories, rho's
    position, proposal SD, and the ``grid`` of (rho, mean, chol, slope of the mean in rho) that
    the conditional proposal of the other parameters comes from."""

    mean: np.ndarray
    chol: np.ndarray
    free: np.ndarray
    rho: int | None = None
    rho_sd: float = 0.0
    grid: tuple = ()
    newton_steps: int = 0


def newton(x: np.ndarray, free: np.ndarray, data: ArenaData, layout: Layout, rating_sd: float):
    """Maximise the log posterior over ``x[free]`` (the rest held): returns ``(x, value, chol,
    steps)`` with ``chol`` the Cholesky factor of the negative Hessian over ``free`` at the end."""
    value, grad, neg_hess = log_posterior(x, data, layout, rating_sd)
    steps = 0
    for steps in range(1, NEWTON_MAX_STEPS + 1):  # noqa: B007 (the count is returned)
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
    return x, value, chol, steps


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
            sd = RHO_WIDEN / float(np.sqrt(-second))
            grid = _grid(x, sd, free, data, layout, rating_sd)
            total += sum(g[4] for g in grid)
            centre = grid[len(grid) // 2]
            return Approximation(centre[1], centre[2], free, layout.rho, sd, tuple(g[:4] for g in grid), total)
        rho += float(np.clip(step, -1.0, 1.0))
    raise ConvergenceError(f"the category spread's marginal posterior did not settle in {RHO_MAX_STEPS} steps.")


def _grid(x: np.ndarray, sd: float, free, data, layout, rating_sd) -> list:
    """(rho, x-hat, chol, slope, Newton steps) at the rho offsets :data:`RHO_GRID` x ``sd``; the slope
    of x-hat in rho from the neighbouring points."""
    rho = x[layout.rho]
    points = []
    for offset in RHO_GRID:
        start = x.copy()
        start[layout.rho] = rho + offset * sd
        fitted, _, chol, steps = newton(start, free, data, layout, rating_sd)
        points.append([fitted[layout.rho], fitted, chol, None, steps])
    for g, point in enumerate(points):
        left, right = points[max(g - 1, 0)], points[min(g + 1, len(points) - 1)]
        point[3] = (right[1][free] - left[1][free]) / (right[0] - left[0])
    return points


def propose(approx: Approximation, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` proposals and their log densities (up to one constant). With categories: rho from
    a normal around the centre with SD ``rho_sd``, then the rest from the Gaussian of the nearest grid point, its mean
    moved along the slope to that rho."""
    z = rng.standard_normal((n, approx.free.size))
    log_q = -0.5 * np.sum(z**2, axis=1)
    if approx.rho is None:
        xs = np.tile(approx.mean, (n, 1))
        xs[:, approx.free] += linalg.solve_triangular(approx.chol, z.T, lower=True, trans="T").T
        return xs, log_q
    centre = approx.mean[approx.rho]
    z0 = rng.standard_normal(n)
    rho = centre + approx.rho_sd * z0
    log_q -= 0.5 * z0**2
    rhos = np.array([g[0] for g in approx.grid])
    nearest = np.argmin(np.abs(rho[:, None] - rhos[None, :]), axis=1)
    xs = np.empty((n, approx.mean.size))
    for g, (rho_g, mean_g, chol_g, slope_g) in enumerate(approx.grid):
        rows = np.nonzero(nearest == g)[0]
        if not rows.size:
            continue
        xs[rows] = mean_g
        xs[np.ix_(rows, approx.free)] += (linalg.solve_triangular(chol_g, z[rows].T, lower=True, trans="T").T
                                          + np.outer(rho[rows] - rho_g, slope_g))
        log_q[rows] += np.sum(np.log(np.diag(chol_g)))
    xs[:, approx.rho] = rho
    return xs, log_q


def importance_draws(approx: Approximation, data: ArenaData, layout: Layout, rating_sd: float, *, draws: int, chains: int,
                     rng: np.random.Generator, proposals_per_draw: int = PROPOSALS_PER_DRAW, previous=None, progress=None):
    """Resampled draws (chains, draws, d), the check (module docstring) and each chain's proposals
    with their log ratios; ``previous`` (an earlier call's proposals) are pooled with the new ones."""
    rngs = rng.spawn(chains)
    batches = []
    for c in range(chains):
        xs, log_q = propose(approx, proposals_per_draw * draws, rngs[c])
        log_p = log_posterior_many(xs, data, layout, rating_sd)
        log_r = np.where(np.isfinite(log_p), log_p - log_q, -np.inf)
        if previous is not None:
            xs, log_r = np.concatenate([previous[c][0], xs]), np.concatenate([previous[c][1], log_r])
        batches.append((xs, log_r))
        if progress is not None:
            progress(f"weighed {proposals_per_draw * draws:,} proposals of chain {c + 1} of {chains}")
    kept, check = resampled_batches(batches, draws, rngs)
    return kept, check, batches
