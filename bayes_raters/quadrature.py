r"""Integrating a per-unit latent out: marginal log-likelihoods by quadrature, and exact
conditional draws of the latent afterwards. One engine for every family (IRT abilities,
ordinal true scores).

Setting. Unit :math:`i` (a respondent, a rated response) has a scalar latent
:math:`u_i = \mu + \sigma z_i` with :math:`z_i \sim N(0, 1)` (:math:`\mu, \sigma` may be model
parameters) and observations :math:`y_i` with log-likelihood :math:`\ell_i(z)`. NUTS is given
the marginal

.. math::

    \log p(y_i) = \log \int e^{\ell_i(z)} \varphi(z)\,dz
    \approx \operatorname{logsumexp}_q\big(\ell_i(z_q) + \log w_q\big),

a PyTensor expression of the model parameters (so gradients flow), and the latents are drawn
after sampling from their conditional :math:`p(z_i \mid y_i, \text{parameters})` for every
posterior draw (:func:`draw_conditional`), so posterior draws of the latent exist as before.

Rules (:class:`QuadratureRule`, weights include :math:`\varphi`):

- :func:`trapezoid_rule` (the default): equally spaced nodes :math:`z_q` on :math:`[-L, L]`
  with :math:`w_q = h\,\varphi(z_q)`. For an analytic integrand the trapezoid rule converges
  geometrically; for a conditional of standard deviation :math:`s` its relative error is about
  :math:`2 e^{-2\pi^2 s^2 / h^2}`, plus the mass outside :math:`[-L, L]` (below
  :math:`\Phi(-8) \approx 6\cdot 10^{-16}` of the prior; a unit whose likelihood pushes it to
  the edge, such as an all-correct pattern, keeps a relative tail error near
  :math:`\bar\Phi(L) / \bar\Phi(\hat z)`). So :math:`h` must be below about :math:`1.2 s`:
  the sharpest unit sets the node count (:func:`rule_for`). Measured on 100-item 2PL patterns
  with :math:`a \sim \text{LogNormal}(0, 0.5)` (true ability -4 to 4, all right, all wrong;
  ``tests/test_quadrature.py``): 81 nodes on [-8, 8] give at most :math:`3 \cdot 10^{-8}` per
  unit against scipy's adaptive quadrature; fixed Gauss-Hermite needs more than 121 nodes for
  :math:`10^{-4}`, because its nodes spread over :math:`\pm\sqrt{2Q}` with coarse spacing in
  the middle where a sharp conditional lives.
- :func:`gauss_hermite_rule`: probabilists' Gauss-Hermite, exact for polynomials of degree
  :math:`2Q - 1` times :math:`\varphi`; good for flat likelihoods (few observations per unit).
- :func:`adaptive_gauss_hermite`: Gauss-Hermite nodes centred and scaled per unit at
  :math:`m_i, s_i` (the conditional mean and SD, or mode and curvature):
  :math:`z_{ik} = m_i + s_i x_k`, :math:`\log w_{ik} = \log w_k + \log s_i + x_k^2/2 - z_{ik}^2/2`.
  The change of variable is exact for any :math:`m_i, s_i`; only the accuracy depends on them,
  so they are held constant in the gradient. Few nodes suffice for any sharpness, but every
  unit has its own nodes, so a gradient costs units x observations x nodes element-wise,
  where shared nodes let the families use matrix products (units x observations x nodes as
  BLAS work, or units x nodes for the 1PL/2PL), and complete patterns can go through the
  weighted-score grid of :func:`bayes_raters.irt.binary.marginal.score_grid_loglik`
  (``models/implementation.md``; ``benchmarks/bench_irt.py --gradient-only``).

Conditional draws (:func:`draw_conditional`): the log conditional is known on the rule's
nodes; its piecewise-linear interpolant defines a piecewise-exponential density that is
sampled exactly (choose a cell by its mass, then invert the cell's CDF). That density is off
the true conditional by at most :math:`h^2 / (8 s^2)` in log density, so each draw is then
corrected by ``mh_steps`` independence Metropolis-Hastings steps that propose from the
interpolant and accept with the exact likelihood ratio: the target is then the exact
conditional, and the distance to it shrinks geometrically with the steps (acceptance rates
are reported; above 0.95 in our tests).

Log-concave conditionals (:func:`draw_log_concave`; the GRM's and GPCM's, whose category
probabilities are log-concave in the ability, times the normal prior): the chords lie below
the log density and the tangents at the nodes above it, so the interpolant times a
per-cell factor bounds the density and rejection sampling gives exact draws (on the rule's
range), most of them accepted by the squeeze without evaluating the likelihood at all
(:func:`bayes_raters.interpolant.concave_envelope`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import disconnected_grad

from bayes_raters.interpolant import concave_envelope, envelope_propose, interpolant_draws

#: Default half-width and spacing of the trapezoid rule (standard-normal scale).
HALF_WIDTH = 8.0
SPACING = 0.2
MAX_SPACING = 0.3
LOG_ROOT_2PI = 0.5 * np.log(2 * np.pi)


def fast_softplus(x: np.ndarray) -> np.ndarray:
    r""":math:`\log(1 + e^x)` in place of ``x`` as :math:`\max(x, 0) + \log(1 + e^{-|x|})`
    (the same to 1e-15 as ``np.logaddexp(0, x)`` and faster: ``models/implementation.md``; the
    theta draws of the marginal IRT fits spend most of their time here)."""
    positive = np.maximum(x, 0.0)
    np.abs(x, out=x)
    np.negative(x, out=x)
    np.exp(x, out=x)
    np.log1p(x, out=x)
    x += positive
    return x


def logsumexp_np(x: np.ndarray, axis: int = -1, keepdims: bool = False) -> np.ndarray:
    """NumPy log-sum-exp (scipy.special.logsumexp's checks cost more than the sum on small arrays)."""
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    out = np.log(np.sum(np.exp(x - top), axis=axis, keepdims=True)) + top
    return out if keepdims else np.squeeze(out, axis=axis)


def _log_phi(z):
    """Standard normal log density (inline: scipy.stats' per-call overhead dominated the draws)."""
    return -0.5 * z * z - LOG_ROOT_2PI


@dataclass(frozen=True)
class QuadratureRule:
    """Nodes :math:`z_q` and log-weights with :math:`\\sum_q w_q f(z_q) \\approx E f(Z)`, Z ~ N(0, 1)."""

    nodes: np.ndarray
    log_weights: np.ndarray
    kind: str

    def __len__(self) -> int:
        return len(self.nodes)


def trapezoid_rule(n_nodes: int = 81, half_width: float = HALF_WIDTH) -> QuadratureRule:
    """Equally spaced nodes on ``[-half_width, half_width]``, weights :math:`h\\,\\varphi(z_q)`."""
    if n_nodes < 3:
        raise ValueError("a trapezoid rule needs at least 3 nodes.")
    nodes = np.linspace(-half_width, half_width, n_nodes)
    return QuadratureRule(nodes, _log_phi(nodes) + np.log(nodes[1] - nodes[0]), "trapezoid")


def gauss_hermite_rule(n_nodes: int) -> QuadratureRule:
    """Probabilists' Gauss-Hermite nodes (``numpy.polynomial.hermite_e``), weights / sqrt(2 pi)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(n_nodes)
    return QuadratureRule(nodes, np.log(weights) - 0.5 * np.log(2 * np.pi), "gauss-hermite")


def rule_for(max_observations: int, spacing: float = SPACING, half_width: float = HALF_WIDTH) -> QuadratureRule:
    """Trapezoid rule fine enough for units with up to ``max_observations`` observations.

    The conditional SD of a unit shrinks like :math:`1/\\sqrt{n}`; ``spacing`` (0.2) is what
    100 observations need (see the module docstring), so the spacing is
    :math:`0.2\\sqrt{100 / n}`, at most 0.3 (55 nodes up to 44 observations, 81 at 100). The cap
    comes from the logistic's poles at :math:`b \\pm i\\pi/a`: the trapezoid error also behaves
    like :math:`e^{-2\\pi^2/(a h)}`, so steep items need small steps even when units are few
    (with 0.5, a 2PL with 8 items missed 1e-6 per respondent: 3.6e-6). Beyond 100 observations
    an all-right (all-top) unit sits further out in the prior's tail, so the half-width grows
    by :math:`0.5 \\log_2(n / 100)` (9 at 400 observations).
    """
    n = max(int(max_observations), 1)
    h = min(MAX_SPACING, spacing * np.sqrt(100.0 / n))
    half_width = half_width + 0.5 * max(0.0, np.log2(n / 100.0))
    n_nodes = int(np.ceil(2 * half_width / h)) + 1
    return trapezoid_rule(n_nodes + (n_nodes + 1) % 2, half_width)  # odd: a node at 0


def marginal_loglik(node_loglik, log_weights):
    """:math:`\\operatorname{logsumexp}_q(\\ell_{iq} + \\log w_q)` over the last axis.

    ``node_loglik`` is a PyTensor (units, nodes) matrix (or a NumPy array: then NumPy is used);
    ``log_weights`` has shape (nodes,) or (units, nodes) (adaptive rules).
    """
    if isinstance(node_loglik, np.ndarray):
        return logsumexp_np(node_loglik + log_weights, axis=-1)
    return pt.logsumexp(node_loglik + pt.as_tensor(log_weights), axis=-1)


def adaptive_rule(center, scale, rule: QuadratureRule):
    r"""Per-unit nodes and log-weights: ``rule`` (on the standard-normal scale) moved to centre
    :math:`m_i` and scale :math:`s_i`, :math:`z_{ik} = m_i + s_i x_k`,
    :math:`\log w_{ik} = \log w_k + \log s_i + x_k^2/2 - z_{ik}^2/2`.

    ``center``, ``scale``: (units,) NumPy arrays or PyTensor vectors (held constant in the
    gradient: the change of variable is exact in value for any of them). Returns
    ``(nodes, log_weights)``, both (units, nodes), on the standard-normal scale of the latent.
    """
    x, log_w = rule.nodes, rule.log_weights
    lib = np
    if not isinstance(center, np.ndarray):
        center, scale, lib = disconnected_grad(center), disconnected_grad(scale), pt
    nodes = center[:, None] + scale[:, None] * x
    return nodes, log_w + lib.log(scale)[:, None] + 0.5 * x**2 - 0.5 * nodes**2


def adaptive_gauss_hermite(center, scale, n_nodes: int = 7):
    """:func:`adaptive_rule` with an ``n_nodes`` Gauss-Hermite rule."""
    return adaptive_rule(center, scale, gauss_hermite_rule(n_nodes))


def conditional_moments(node_loglik: np.ndarray, rule: QuadratureRule) -> tuple[np.ndarray, np.ndarray]:
    """Mean and SD of each unit's conditional of z from its log-likelihood on the rule's nodes."""
    log_post = node_loglik + rule.log_weights
    weights = np.exp(log_post - logsumexp_np(log_post, axis=-1, keepdims=True))
    mean = weights @ rule.nodes
    return mean, np.sqrt(np.maximum(weights @ rule.nodes**2 - mean**2, 0.0))


def draw_conditional(
    node_loglik: np.ndarray,
    point_loglik: Callable[[np.ndarray], np.ndarray],
    rule: QuadratureRule,
    rng: np.random.Generator,
    *,
    unit_index: np.ndarray | None = None,
    mh_steps: int = 2,
) -> tuple[np.ndarray, float]:
    """One draw of z per unit from its exact conditional, for one posterior draw.

    ``node_loglik``: (groups, nodes) log-likelihood of each group of identical units on the
    rule's (sorted) nodes. ``unit_index`` maps units to groups (default: one unit per group);
    units of a group get independent draws. ``point_loglik(z)`` returns the exact
    log-likelihood of every unit at its own ``z`` (units,). Returns ``(z, acceptance rate)``.
    The proposals of an independence sampler do not depend on the current state, so the first
    draw and all ``mh_steps`` proposals come from one compiled pass
    (:func:`bayes_raters.interpolant.interpolant_draws`).
    """
    index = np.arange(len(node_loglik)) if unit_index is None else np.asarray(unit_index)
    log_post = np.ascontiguousarray(node_loglik + _log_phi(rule.nodes), dtype=float)
    points, log_q = interpolant_draws(log_post, rule.nodes, index, mh_steps + 1, rng)
    z = points[0]
    if mh_steps == 0:
        return z, 1.0

    def log_ratio_at(step):  # exact log conditional over the interpolant's log density
        return point_loglik(points[step]) + _log_phi(points[step]) - log_q[step]

    log_ratio = log_ratio_at(0)
    accepted = 0
    for step in range(1, mh_steps + 1):
        proposed = log_ratio_at(step)
        accept = np.log(rng.random(len(z))) < proposed - log_ratio
        z = np.where(accept, points[step], z)
        log_ratio = np.where(accept, proposed, log_ratio)
        accepted += int(accept.sum())
    return z, accepted / (mh_steps * len(z))


#: Rounds of :func:`draw_log_concave` before the units still unaccepted fall back to
#: :func:`draw_conditional` (a conditional far sharper than the rule's spacing).
MAX_ROUNDS = 50
#: Proposals per unit still unaccepted in each round of :func:`draw_log_concave` after the first.
COPIES = 4


#: Sums of exponentials kept unscaled between these bounds (:func:`exp_and_log_total`); their
#: terms are then normal doubles, with full relative precision.
UNSCALED_RANGE = (1e-280, 1e280)


def exp_and_log_total(log_post: np.ndarray, weights: np.ndarray, out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    r""":math:`e^{\ell_{gq} - m_g}` and :math:`\log \sum_q w_q e^{\ell_{gq}}` per group ``g``,
    with :math:`m_g = 0` wherever the sum stays within :data:`UNSCALED_RANGE` (a likelihood of
    discrete data is at most 1, so almost always), else the group's largest :math:`\ell_{gq}`:
    the log-sum-exp without its maximum and subtraction passes over the (groups, nodes) array.
    ``out``: an array of ``log_post``'s shape to hold the exponentials."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        scaled = np.exp(log_post, out=out)
        total = scaled @ weights
    top = np.zeros(len(log_post))
    far = np.flatnonzero(~((total > UNSCALED_RANGE[0]) & (total < UNSCALED_RANGE[1])))
    if far.size:
        top[far] = log_post[far].max(axis=1)
        scaled[far] = np.exp(log_post[far] - top[far, None])
        total[far] = scaled[far] @ weights
    return scaled, top + np.log(total)


class ConcaveScratch:
    """The (groups, nodes) arrays :func:`draw_log_concave` fills on every call, allocated once
    for repeated calls of one shape (one per thread): ``loglik`` and ``gradient`` for the caller
    to fill (``BlockedOnehot.product(..., out=scratch.loglik)``) and pass in, the rest internal.
    The inputs are not modified, and the draws are the same with or without it.

    Why: a posterior's ability draws call it once per draw with arrays of the same shape, and
    fresh (groups, nodes) arrays each time cost page faults on first touch
    (``models/irt_polytomous.md`` has the measurement)."""

    def __init__(self, groups: int, nodes: int):
        self.loglik, self.gradient, self.log_post, self.slope, self.scaled = (np.empty((groups, nodes)) for _ in range(5))
        self.cumulative, self.multiplier = np.empty((groups, nodes - 1)), np.empty((groups, nodes - 1))

    def fits(self, shape: tuple) -> bool:
        """Whether the scratch serves a (groups, nodes) ``shape``."""
        return self.loglik.shape == tuple(shape)


def draw_log_concave(
    node_loglik: np.ndarray,
    node_gradient: np.ndarray,
    point_loglik: Callable[[np.ndarray, np.ndarray], np.ndarray],
    rule: QuadratureRule,
    rng: np.random.Generator,
    *,
    unit_index: np.ndarray | None = None,
    mh_steps: int = 2,
    scratch: ConcaveScratch | None = None,
    unit_draws: Callable | None = None,
) -> tuple[np.ndarray, float, np.ndarray]:
    r"""One exact draw of z per unit from a log-concave conditional, by rejection from the
    envelope of :func:`bayes_raters.interpolant.concave_envelope`; for one posterior draw.

    ``node_loglik`` and ``unit_index`` as in :func:`draw_conditional` (the log-likelihood must be
    concave in z, so that the draws are exact; the rule's nodes sorted), ``node_gradient`` its
    derivative in z at the nodes. ``point_loglik(z,
    units)`` returns the exact log-likelihood of the units ``units`` at their points ``z``: it is
    called only for proposals the squeeze did not accept. Returns ``(z, acceptance, log_marginal)``:
    the draws (units,), the fraction of proposals accepted (the MH acceptance rate when every
    unit fell back), and each group's
    :func:`marginal_loglik` (the interpolant's exponentials give it at no extra cost). Units
    still unaccepted after :data:`MAX_ROUNDS` rounds are drawn by :func:`draw_conditional`
    with ``mh_steps``. ``scratch``: a :class:`ConcaveScratch` of this shape to reuse (its
    ``loglik`` and ``gradient`` may be the inputs). ``unit_draws(log_post, nodes, envelope,
    index, rng) -> (z, done, proposed)``: a compiled first round that tries several proposals per
    unit with the same envelope and exact likelihood (the GRM's,
    :func:`bayes_raters.irt.polytomous.answered.grm_unit_draws`); the units it left undone go
    through the rounds."""
    index = np.arange(len(node_loglik)) if unit_index is None else np.asarray(unit_index)
    nodes = rule.nodes
    if scratch is None or not scratch.fits(np.shape(node_loglik)):
        scratch = ConcaveScratch(*np.shape(node_loglik))
    log_post = np.add(node_loglik, _log_phi(nodes), out=scratch.log_post)
    scaled, log_marginal = exp_and_log_total(log_post, np.exp(rule.log_weights - _log_phi(nodes)), out=scratch.scaled)
    slope = np.subtract(node_gradient, nodes, out=scratch.slope)
    envelope = concave_envelope(log_post, slope, scaled, nodes, out=(scratch.cumulative, scratch.multiplier))
    z, pending, proposed, start_round = np.empty(len(index)), np.arange(len(index)), 0, 0
    if unit_draws is not None:
        z, done, proposed = unit_draws(log_post, nodes, envelope, index, rng)
        pending, start_round = np.flatnonzero(~done), 1
    for round_ in range(start_round, MAX_ROUNDS):
        if pending.size == 0:
            break
        copies = 1 if round_ == 0 else COPIES  # after the first round, several proposals per unit: fewer rounds
        units = np.repeat(pending, copies)
        points, bar, accept = envelope_propose(log_post, nodes, envelope, index[units], rng)
        check = np.flatnonzero(~accept)
        if check.size:
            exact = point_loglik(points[check], units[check]) + _log_phi(points[check])
            accept[check] = exact >= bar[check]
        accept = accept.reshape(-1, copies)
        done = accept.any(axis=1)
        first = np.argmax(accept, axis=1)  # the first accepted proposal of each unit: a sequential rejection's draw
        proposed += int(np.where(done, first + 1, copies).sum())
        z[pending[done]] = points.reshape(-1, copies)[done, first[done]]
        pending = pending[~done]
    rate = (len(index) - pending.size) / proposed if proposed else 1.0
    if pending.size:
        z[pending], mh_rate = draw_conditional(node_loglik, lambda x: point_loglik(x, pending), rule, rng, unit_index=index[pending],
                                               mh_steps=mh_steps)
        rate = rate if proposed else mh_rate
    return z, rate, log_marginal
