r"""The item block of the leaderboard's blocked sampler (:mod:`bayes_raters.leaderboard.sampler`, step 2):
every item's :math:`(\log a_j, b_j)` (1PL: :math:`b_j`) moved at once, given the abilities, by one
Metropolis-Hastings move per item, and during the first half of warmup a climb that brings items far from their
conditional mode to it (:func:`climb_far_items`).
"""

from __future__ import annotations

import numpy as np

from bayes_raters.leaderboard.kernel import MatrixPasses
from bayes_raters.leaderboard.proposals import (
    IndependenceProposal,
    cholesky,
    gauss_draw,
    gauss_log_q,
    independence_log_q_back,
    log_det,
    lower_solve,
    metric_norm2,
    mh_accept,
    mix_independence,
    upper_solve,
)
from bayes_raters.leaderboard.state import State


def log_item_prior(log_a, b, state: State, two_pl: bool) -> np.ndarray:
    """log N(b; mu_b, sigma_b) (and, 2PL, log N(log a; mu_log_a, sigma_log_a)) per item, without the normalising terms."""
    out = -((b - state.b_mean) ** 2) / (2 * state.b_sigma**2)
    if two_pl:
        out = out - (log_a - state.log_a_mean) ** 2 / (2 * state.log_a_sigma**2)
    return out


def item_coordinates(state: State, two_pl: bool) -> np.ndarray:
    """The items' sampling coordinates, shape (items, k): 2PL (log a, d = -a b), 1PL (b)."""
    if two_pl:
        return np.stack([state.log_a, -np.exp(state.log_a) * state.b], axis=1)
    return state.b[:, None].copy()


def _from_coordinates(x: np.ndarray, state: State, two_pl: bool) -> tuple[np.ndarray, np.ndarray]:
    if two_pl:
        return x[:, 0], -x[:, 1] * np.exp(-x[:, 0])
    return state.log_a, x[:, 0]


def _item_newton(passes: MatrixPasses, theta, x, state: State, two_pl: bool, passed: tuple | None = None):
    r"""Log target, Newton point and metric G (items, k, k) of every item's conditional at ``x``.
    The 2PL works in the slope-intercept coordinates :math:`(\alpha, d) = (\log a, -ab)`, where
    the likelihood is a logistic regression on :math:`(a\theta, 1)` and nearly Gaussian even for
    weak items (in :math:`(\log a, b)` a weak item's :math:`b` spreads as :math:`1/a`, a banana the
    Newton proposal cannot follow: items there kept a bulk ESS of 2-6 in 300 sweeps on 100 x 2,000).
    Target: :math:`\ell + \log N(\alpha; \mu_{\log a}, \sigma_{\log a}) + \log N(-d/a; \mu_b,
    \sigma_b) - \alpha` (the last term the Jacobian of :math:`b = -d/a`); metric: the Fisher
    information plus the prior's Gauss-Newton term. Returns the accepted-state parts too.
    ``passed``: the item pass's ``(ll, g, info)`` at these items and abilities when already known
    (the previous item update's accepted values), which saves one pass over the answers."""
    log_a, b = _from_coordinates(x, state, two_pl)
    a = np.exp(log_a)
    ll, g, info = passes.items(theta, a, b) if passed is None else passed
    target = ll + log_item_prior(log_a, b, state, two_pl)
    z = (b - state.b_mean) / state.b_sigma**2
    inv_var = 1.0 / state.b_sigma**2
    if not two_pl:
        grad = (g[:, 1] - z)[:, None]
        metric = (info[:, 2] + inv_var)[:, None, None]
    else:
        d = x[:, 1]
        sum_r, sum_w, sum_weta = -g[:, 1] / a, info[:, 2] / a**2, -info[:, 1] / a
        g_alpha = g[:, 0] - d * sum_r + z * b - (log_a - state.log_a_mean) / state.log_a_sigma**2 - 1.0
        grad = np.stack([g_alpha, sum_r + z / a], axis=1)
        gaa = info[:, 0] - 2 * d * sum_weta + d * d * sum_w + 1.0 / state.log_a_sigma**2 + b * b * inv_var
        gad = sum_weta - d * sum_w + b / a * inv_var
        metric = np.stack([np.stack([gaa, gad], 1), np.stack([gad, sum_w + inv_var / a**2], 1)], 1)
        target = target - log_a
    chol = cholesky(metric)
    newton = x + upper_solve(chol, lower_solve(chol, grad))
    return target, (g, info, ll), newton, chol


#: Step fractions of the Newton item proposals, one drawn per item and sweep with equal chance.
ITEM_STEPS = (1.0, 0.3)


#: Squared length of an item's Newton step in its metric, :math:`(x_N - x)^\top G (x_N - x)`, beyond which the
#: warmup climbs (:func:`climb_far_items`). At a draw of a Gaussian conditional it is a chi-square with one or two
#: degrees of freedom (above 25 with probability 4e-6); an item 40 of its posterior sds from the mode has about 1,600.
FAR_STEP = 25.0
#: Smallest step fraction of the climb.
MIN_CLIMB = 1.0 / 64


def adapted_steps(steps: np.ndarray, improved: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """Damped-Newton step fractions after a try: doubled where the step raised the target, halved
    where it did not, kept within [``floor``, 1] (the climb and :func:`item_modes` share the rule)."""
    return np.clip(np.where(improved, 2 * steps, steps / 2), floor, 1.0)


def climb_far_items(x, newton, metric, climb: np.ndarray, proposal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Warmup only: the items whose Newton step is longer than :data:`FAR_STEP` in their metric
    propose the deterministic point :math:`x + c_j (x_N - x)` instead of a draw, with :math:`c_j`
    the item's step fraction ``climb`` (1 at the start, doubled after an accepted climb, halved after
    a refused one, down to :data:`MIN_CLIMB`); :func:`update_items` accepts a climb when it raises the
    target. Far in the tail of a conditional made peaked by thousands of answers, the Newton
    proposal's reverse move is so improbable that Metropolis-Hastings refuses every move: from a
    start 40 posterior sds from the mode, items kept their starting slope through all 200 warmup
    sweeps and 2,800 draws (one chain of two at 5,000 x 1,000, R-hat 1.92; ``models/leaderboards.md``).
    Climbing breaks detailed balance, which warmup need not keep; items near their mode (the rest)
    move as in sampling. Returns the far items and the proposal."""
    far = metric_norm2(metric, newton - x) > FAR_STEP
    if far.any():
        proposal = np.where(far[:, None], x + climb[:, None] * (newton - x), proposal)
    return far, proposal


def update_items(passes: MatrixPasses, state: State, rng, two_pl: bool, independent: IndependenceProposal | None = None,
                 passed: tuple | None = None, climb: np.ndarray | None = None) -> tuple:
    r"""Step 2: every item by one Metropolis-Hastings move from a mixture of kernels, the kernel
    drawn per item and sweep independently of the state (each kernel leaves the conditional
    invariant, so the mixture does):

    * Newton: :math:`x^* \sim N(x + hG^{-1}g,\ h(2 - h)G^{-1})` (:func:`_item_newton`),
      :math:`h` from :data:`ITEM_STEPS`; exact for a Gaussian conditional with any :math:`h`.
      The full step alone left items stuck for 200 sweeps at points where its reverse move was
      improbable (bulk ESS 3-6 of 300 sweeps on 100 x 2,000); the short step walks out of them;
    * after warmup, with probability 1/2, the independence proposal ``independent``
      (:class:`~bayes_raters.leaderboard.proposals.IndependenceProposal`) instead;
    * in the first half of warmup (``climb``: the items' step fractions, updated in place), the climb of
      :func:`climb_far_items` for items far from their conditional mode.

    Returns the accepted items' (gradient, information) for the 1PL's common-slope step and the
    next item update (``passed``: the pass at the current items, when the abilities and items are
    those it was computed at), and stores each item's log-likelihood at the accepted values."""
    theta, n_items = state.theta, len(state.b)
    x = item_coordinates(state, two_pl)
    h = rng.choice(ITEM_STEPS, size=n_items)
    var_scale = h * (2 - h)
    known = None if passed is None else (state.item_loglik,) + tuple(passed)
    target, parts, newton, metric = _item_newton(passes, theta, x, state, two_pl, known)
    mean = x + h[:, None] * (newton - x)
    proposal = gauss_draw(mean, metric, var_scale, rng)
    use_ind, proposal = mix_independence(independent, proposal, rng)
    far = np.zeros(n_items, bool)
    if climb is not None:
        far, proposal = climb_far_items(x, newton, metric, climb, proposal)
    target_p, parts_p, newton_p, metric_p = _item_newton(passes, theta, proposal, state, two_pl)
    mean_p = proposal + h[:, None] * (newton_p - proposal)
    log_q_back = gauss_log_q(x, mean_p, metric_p, var_scale) - gauss_log_q(proposal, mean, metric, var_scale)
    log_q_back = independence_log_q_back(independent, use_ind, x, proposal, log_q_back)
    take = np.where(far, target_p > target, mh_accept(rng, target_p - target + log_q_back))
    if climb is not None:
        climb[far] = adapted_steps(climb[far], take[far], MIN_CLIMB)
    state.log_a, state.b = _from_coordinates(np.where(take[:, None], proposal, x), state, two_pl)
    state.item_loglik = np.where(take, parts_p[2], parts[2])
    state.accepted["items"] = float(take.mean())
    pick = lambda now, new: np.where(take.reshape((-1,) + (1,) * (now.ndim - 1)), new, now)  # noqa: E731
    return tuple(pick(now, new) for now, new in zip(parts[:2], parts_p[:2]))


def item_modes(passes: MatrixPasses, theta, state: State, two_pl: bool, start: np.ndarray, iterations: int = 60) -> tuple:
    r"""Each item's conditional mode given the abilities ``theta`` and the item population in
    ``state``, by damped Newton steps from ``start`` (items, k) in the sampler's coordinates (a step
    that lowers an item's target is halved for that item until it raises it). Returns the mode, the
    log target there and the Cholesky factor of the metric :math:`G` (Fisher information plus the
    prior's term): the pieces of the Laplace approximation (:func:`laplace_log_evidence`)."""
    x = start.copy()
    target, _, newton, chol = _item_newton(passes, theta, x, state, two_pl)
    step = np.ones(len(x))
    for _ in range(iterations):
        if metric_norm2(chol, newton - x).max() < 1e-10:
            break
        proposal = x + step[:, None] * (newton - x)
        target_p, _, newton_p, chol_p = _item_newton(passes, theta, proposal, state, two_pl)
        better = target_p >= target
        step = adapted_steps(step, better)
        x = np.where(better[:, None], proposal, x)
        target = np.where(better, target_p, target)
        newton = np.where(better[:, None], newton_p, newton)
        chol = np.where(better[:, None, None], chol_p, chol)
    return x, target, chol


def laplace_log_evidence(target: np.ndarray, chol: np.ndarray, state: State, two_pl: bool) -> np.ndarray:
    r"""Each item's log marginal likelihood :math:`\log \int p(y_j \mid x)\,p(x)\,dx` by Laplace's
    approximation at the mode :math:`\hat x` (:func:`item_modes`): :math:`t(\hat x) + \tfrac{k}{2}\log 2\pi
    - \tfrac12 \log|G|` with :math:`t` the log target and the prior's normalising constants added
    (:math:`t` drops them)."""
    k = chol.shape[1]
    norm = -0.5 * np.log(2 * np.pi * state.b_sigma**2)
    if two_pl:
        norm = norm - 0.5 * np.log(2 * np.pi * state.log_a_sigma**2)
    return target + norm + 0.5 * k * np.log(2 * np.pi) - 0.5 * log_det(chol)
