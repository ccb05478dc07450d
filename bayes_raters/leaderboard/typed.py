r"""The items of a mixed leaderboard that are not 0/1 2PL items (:mod:`bayes_raters.leaderboard.responses`: the
3PL, the graded model, bounded scores) in the blocked sampler (:mod:`bayes_raters.leaderboard.sampler`): their sums for the
abilities' update and their own item update.

Each type's items move as the 2PL's do, by one Metropolis-Hastings move per item from a Newton proposal
:math:`N(x + hG^{-1}g,\ h(2 - h)G^{-1})` (:data:`~bayes_raters.leaderboard.items.ITEM_STEPS`), in the coordinates
:math:`x = (\log a_j, d_j, e_j)` with the intercept :math:`d_j = -a_j b_j` (so :math:`\eta = a_j\theta_s + d_j`, a
regression the likelihood sees as nearly Gaussian, as for the 2PL), the target the likelihood times the item
population's priors on :math:`\log a_j` and :math:`b_j` (the 2PL items' population: one scale for every type)
and the type's prior on :math:`e_j`, with the Jacobian :math:`-\log a_j` of :math:`b = -d/a`. The metric
:math:`G` is the Fisher information, :math:`\sum_s \sum_k \nabla p_k \nabla p_k^\top / p_k` over the item's
answers, plus the priors' Gauss-Newton terms; the blocks are (2 + m) x (2 + m) (2 x 2 where the type's e is
shared, :func:`update_shared_extra` moves it), solved with NumPy's batched linear algebra. The sums over the
answers are :mod:`bayes_raters.leaderboard.typed_kernel`'s (:mod:`bayes_raters.leaderboard.bounded_kernel`'s for bounded
scores).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import special

from bayes_raters.leaderboard.bounded_kernel import bounded_item_sums, bounded_system_sums
from bayes_raters.leaderboard.items import ITEM_STEPS
from bayes_raters.leaderboard.proposals import IndependenceProposal, independence_log_q_back, mh_accept, mix_independence
from bayes_raters.leaderboard.responses import ResponseType, cutpoints
from bayes_raters.leaderboard.state import State, TypedState, start_state
from bayes_raters.leaderboard.typed_kernel import graded_item_sums, graded_system_sums, three_pl_item_sums, three_pl_system_sums


@dataclass(frozen=True)
class TypedAnswers:
    """One type's answers: ``answers_t`` (items x systems, int8 category, -1 not answered), the items'
    ``positions`` in the fit's item order and the :class:`~bayes_raters.leaderboard.responses.ResponseType`; for
    bounded answers ``logs_t`` (2, items, systems), log v and log(1 - v) of the values between 0 and 1."""

    kind: ResponseType
    answers_t: np.ndarray
    positions: np.ndarray
    logs_t: np.ndarray | None = None


def item_sums(block: TypedAnswers, theta, x, full: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per item at coordinates ``x`` (items, 2 + m; a shared ``e`` repeated on every row): log-likelihood, score
    and Fisher information (items, k, k) (:mod:`bayes_raters.leaderboard.typed_kernel`); ``full`` False: the
    (log a, d) entries only, where the type's ``e`` is shared and the item update leaves it alone."""
    if block.kind.name == "3pl":
        return three_pl_item_sums(block.answers_t, theta, x[:, 0], x[:, 1], x[:, 2])
    if block.kind.name == "bounded":
        kappa, jac = cutpoints(x[:1, 2:3])
        return bounded_item_sums(block.answers_t, block.logs_t, theta, x[:, 0], x[:, 1], kappa[0], jac[0], x[0, 3], full)
    kappa, jac = cutpoints(x[:1, 2:])
    return graded_item_sums(block.answers_t, theta, x[:, 0], x[:, 1], kappa[0], jac[0], full)


def system_sums(block: TypedAnswers, state: TypedState, theta) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per system: the type's log-likelihood, its derivative in theta and the Fisher information."""
    d = -np.exp(state.log_a) * state.b
    if block.kind.name == "3pl":
        return three_pl_system_sums(block.answers_t, theta, state.log_a, d, state.extra[:, 0])
    if block.kind.name == "bounded":
        kappa = cutpoints(state.extra[:1, :1])[0][0]
        return bounded_system_sums(block.answers_t, block.logs_t, theta, state.log_a, d, kappa, state.extra[0, 1])
    return graded_system_sums(block.answers_t, theta, state.log_a, d, cutpoints(state.extra[:1])[0][0])


def slope_sums(block: TypedAnswers, values: TypedState, theta, log_a) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Per item at slopes ``log_a`` with ``b`` and ``e`` as in ``values``: the log-likelihood, its derivative in
    log a at fixed b and the information there (for the interweaving step of
    :func:`~bayes_raters.leaderboard.sampler.interweave_log_a_sigma`): with :math:`d = -ab`, the derivative at
    fixed b is :math:`\partial_\alpha + d\,\partial_d` in the (log a, d) coordinates."""
    d = -np.exp(log_a) * values.b
    x = np.column_stack([log_a, d, np.broadcast_to(values.extra, (len(d), block.kind.n_extra))])
    ll, score, info = item_sums(block, theta, x, full=False)
    return ll, score[:, 0] + d * score[:, 1], info[:, 0, 0] + 2 * d * info[:, 0, 1] + d * d * info[:, 1, 1]


def coordinates(state: TypedState, kind: ResponseType) -> np.ndarray:
    """The coordinates an item update moves: (log a, d = -a b), and e when each item has its own."""
    moving = [state.log_a, -np.exp(state.log_a) * state.b]
    return np.column_stack(moving if kind.shared else moving + [state.extra])


def _full(x: np.ndarray, extra: np.ndarray, kind: ResponseType) -> np.ndarray:
    """(log a, d, e) per item from the moving coordinates ``x`` and the shared ``extra`` (1, m)."""
    return np.column_stack([x, np.broadcast_to(extra, (len(x), kind.n_extra))]) if kind.shared else x


def log_prior(x: np.ndarray, kind: ResponseType, state: State) -> np.ndarray:
    """Per item at moving coordinates ``x``: the population's log N(log a) and log N(b) and, when each item
    has its own, the type's log N(e), without constants."""
    log_a, b = x[:, 0], -x[:, 1] * np.exp(-x[:, 0])
    out = -((b - state.b_mean) ** 2) / (2 * state.b_sigma**2) - (log_a - state.log_a_mean) ** 2 / (2 * state.log_a_sigma**2)
    return out if kind.shared else out + _extra_prior(x[:, 2:], kind)


def _extra_prior(extra: np.ndarray, kind: ResponseType) -> np.ndarray:
    """log N(e; prior mean, prior SD) per row of ``extra`` (rows, m), without constants."""
    return -(((extra - kind.prior_mean) / kind.prior_sd) ** 2).sum(-1) / 2


def typed_log_prior(values: TypedState, kind: ResponseType, state: State) -> float:
    """The log prior density of one type's items (constants dropped) in (log a, b, e), for the ``lp`` statistic."""
    x = coordinates(values, kind)
    out = log_prior(x, kind, state).sum() - len(values.b) * np.log(state.b_sigma * state.log_a_sigma)
    return float(out) + (float(_extra_prior(values.extra, kind).sum()) if kind.shared else 0.0)


def _newton(block: TypedAnswers, theta, x, extra, state: State):
    """At moving coordinates ``x`` (the shared ``extra`` fixed): log target (Jacobian included), each item's
    log-likelihood, Newton point and the metric's Cholesky factor."""
    kind = block.kind
    k = x.shape[1]
    ll, score, info = item_sums(block, theta, _full(x, extra, kind), full=not kind.shared)
    log_a, d = x[:, 0], x[:, 1]
    a = np.exp(log_a)
    b = -d / a
    z, inv_var = (b - state.b_mean) / state.b_sigma**2, 1 / state.b_sigma**2
    grad, metric = score[:, :k].copy(), info[:, :k, :k].copy()
    grad[:, 0] += z * b - (log_a - state.log_a_mean) / state.log_a_sigma**2 - 1.0
    grad[:, 1] += z / a
    if not kind.shared:  # the type's own e per item
        grad[:, 2:] -= (x[:, 2:] - kind.prior_mean) / kind.prior_sd**2
        metric[:, 2:, 2:] += np.eye(k - 2) / kind.prior_sd**2
    metric[:, 0, 0] += 1 / state.log_a_sigma**2 + b * b * inv_var
    metric[:, 0, 1] += b / a * inv_var
    metric[:, 1, 0] += b / a * inv_var
    metric[:, 1, 1] += inv_var / a**2
    target, chol, grad = _finite(ll + log_prior(x, kind, state) - log_a, metric, grad)
    return target, ll, x + _chol_solve(chol, grad), chol


#: Smallest ratio of a Cholesky factor's diagonal entries that the Newton proposal uses (a worse conditioned
#: metric, from an item far in a tail, takes a unit metric).
MIN_CONDITION = 1e-7


def _finite(target, metric, grad):
    """Guards of the Newton proposal, deterministic in the point (so the Hastings ratio stays exact): a point
    whose target is not finite (a proposal far in a tail, where a probability underflows to 0) gets -inf and is
    refused; where the metric or the gradient is not finite, or the metric has no well-conditioned Cholesky
    factor, the proposal uses a unit metric and a zero gradient (a plain Gaussian step). Returns the target,
    the Cholesky factor and the gradient."""
    target = np.where(np.isfinite(target), target, -np.inf)
    eye = np.eye(metric.shape[-1])
    bad = ~(np.isfinite(metric).all((-2, -1)) & np.isfinite(grad).all(-1))
    metric = np.where(bad[..., None, None], eye, metric)
    chol = _cholesky_or_nan(metric)
    diagonal = np.diagonal(chol, axis1=-2, axis2=-1)
    bad = bad | ~(np.isfinite(chol).all((-2, -1)) & (diagonal.min(-1) > MIN_CONDITION * diagonal.max(-1)))
    if bad.any():
        chol = np.where(bad[..., None, None], eye, chol)
        grad = np.where(bad[..., None], 0.0, grad)
    return target, chol, grad


def _cholesky_or_nan(metric: np.ndarray) -> np.ndarray:
    """Cholesky factors of a stack, NaN where a matrix has none."""
    try:
        return np.linalg.cholesky(metric)
    except np.linalg.LinAlgError:
        flat = metric.reshape((-1,) + metric.shape[-2:])
        return np.stack([_one_cholesky(m) for m in flat]).reshape(metric.shape)


def _one_cholesky(m: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.cholesky(m)
    except np.linalg.LinAlgError:
        return np.full_like(m, np.nan)


def _chol_solve(chol: np.ndarray, v: np.ndarray) -> np.ndarray:
    """G^{-1} v per row with G = L L^T."""
    return np.linalg.solve(np.swapaxes(chol, -1, -2), np.linalg.solve(chol, v[..., None]))[..., 0]


def _log_q(x, mean, chol, var_scale) -> np.ndarray:
    """log N(x; mean, var_scale G^{-1}) up to a constant, G = L L^T."""
    lt_delta = np.einsum("nji,nj->ni", chol, x - mean)
    log_det = 2 * np.log(np.diagonal(chol, axis1=1, axis2=2)).sum(1)
    return 0.5 * (log_det - x.shape[1] * np.log(var_scale) - (lt_delta**2).sum(1) / var_scale)


def update_typed_items(block: TypedAnswers, typed: TypedState, state: State, rng, independent: IndependenceProposal | None = None) -> None:
    """Every item of the type by one Metropolis-Hastings move (module docstring), after warmup half of them
    from their independence proposals (``independent``, fitted to the chain's warmup draws, as for the 2PL
    items: the Newton proposal alone left the graded items' cutpoints at a bulk ESS of 27-280 in 1,000
    draws, ``models/leaderboards.md``); stores the accepted values and each item's log-likelihood in ``typed``."""
    x = coordinates(typed, block.kind)
    n_items, k = x.shape
    h = rng.choice(ITEM_STEPS, size=n_items)
    var_scale = h * (2 - h)
    target, ll, newton, chol = _newton(block, state.theta, x, typed.extra, state)
    mean = x + h[:, None] * (newton - x)
    z = rng.standard_normal((n_items, k))
    proposal = mean + np.sqrt(var_scale)[:, None] * np.linalg.solve(np.swapaxes(chol, 1, 2), z[..., None])[..., 0]
    use_ind, proposal = mix_independence(independent, proposal, rng)
    target_p, ll_p, newton_p, chol_p = _newton(block, state.theta, proposal, typed.extra, state)
    mean_p = proposal + h[:, None] * (newton_p - proposal)
    log_q_back = _log_q(x, mean_p, chol_p, var_scale) - _log_q(proposal, mean, chol, var_scale)
    log_ratio = target_p - target + independence_log_q_back(independent, use_ind, x, proposal, log_q_back)
    take = mh_accept(rng, log_ratio)
    new = np.where(take[:, None], proposal, x)
    typed.log_a, typed.b = new[:, 0], -new[:, 1] * np.exp(-new[:, 0])
    if not block.kind.shared:
        typed.extra = new[:, 2:]
    typed.loglik = np.where(take, ll_p, ll)
    typed.accepted = float(take.mean())


def _shared_newton(block: TypedAnswers, typed: TypedState, theta, e: np.ndarray):
    """Log target, items' log-likelihoods, Newton point and metric's Cholesky factor of the shared ``e`` (m,)."""
    kind = block.kind
    x = np.column_stack([typed.log_a, -np.exp(typed.log_a) * typed.b, np.broadcast_to(e, (len(typed.b), kind.n_extra))])
    ll, score, info = item_sums(block, theta, x)
    grad = score[:, 2:].sum(0) - (e - kind.prior_mean) / kind.prior_sd**2
    metric = info[:, 2:, 2:].sum(0) + np.eye(kind.n_extra) / kind.prior_sd**2
    target, chol, grad = _finite(np.asarray(ll.sum() + _extra_prior(e, kind)), metric, grad)
    return float(target), ll, e + _chol_solve(chol, grad), chol


#: Variance scale (times the inverse Fisher information) of the shared parameters' random-walk move.
SHARED_WALK = 1.0


def update_shared_extra(block: TypedAnswers, typed: TypedState, state: State, rng) -> None:
    """The shared extra parameters (the graded scale's log spacings, the bounded scores' log spacing and log
    precision) by two Metropolis-Hastings moves, their gradient and Fisher information summed over the type's
    items: one from the Newton proposal, then a random walk :math:`N(e, s G^{-1})` (:data:`SHARED_WALK`). The
    walk is there for a start far from the mode: there the log-likelihood in the bounded scores' log precision
    curves three times less than its Fisher information says (measured at 120 systems x 40 bounded items), the
    Newton point falls short, the way back is improbable and the Newton move alone refused every proposal for
    thousands of sweeps. A no-op for a type whose items each have their own."""
    if not block.kind.shared or block.kind.n_extra == 0:
        return
    h = float(rng.choice(ITEM_STEPS))
    here = _shared_newton(block, typed, state.theta, typed.extra[0])
    for step, var_scale in ((h, h * (2 - h)), (0.0, SHARED_WALK)):
        here = _shared_move(block, typed, state, rng, step, var_scale, here)


def _shared_move(block: TypedAnswers, typed: TypedState, state: State, rng, step: float, var_scale: float, here: tuple) -> tuple:
    """One Metropolis-Hastings move of the shared ``e`` from :math:`N(e + h(e_N - e), v G^{-1})`, the Newton point
    :math:`e_N` and the metric :math:`G` at the current point (``step`` h, ``var_scale`` v); ``here`` is
    :func:`_shared_newton` at the current point, and the same at the point the move ends on is returned (the next
    move starts from it: nothing else changes between the two moves)."""
    e = typed.extra[0]
    target, ll, newton, chol = here
    mean = e + step * (newton - e)
    proposal = mean + np.sqrt(var_scale) * np.linalg.solve(chol.T, rng.standard_normal(len(e)))
    target_p, ll_p, newton_p, chol_p = _shared_newton(block, typed, state.theta, proposal)
    mean_p = proposal + step * (newton_p - proposal)
    one = lambda v: v[None]  # noqa: E731
    log_q_back = _log_q(one(e), one(mean_p), one(chol_p), var_scale) - _log_q(one(proposal), one(mean), one(chol), var_scale)
    if mh_accept(rng, target_p - target + log_q_back[0]):
        typed.extra, typed.loglik = proposal[None], ll_p
        return target_p, ll_p, newton_p, chol_p
    return here


def start_typed(block: TypedAnswers, b: np.ndarray, log_a: float) -> TypedState:
    """Starting values: the given difficulties and common log slope; ``e`` at the type's prior mean, or for
    bounded scores from their moments (:func:`bounded_start`)."""
    extra = bounded_start(block) if block.kind.name == "bounded" else block.kind.start_extra(len(b))
    return TypedState(np.full(len(b), log_a), b.copy(), extra)


def upper_half(block: TypedAnswers) -> np.ndarray:
    """Items x systems: 1 where an answer lies in the upper half of its scale (a category at or above the middle;
    a bounded score at or above 0.5), 0 below, -1 not answered."""
    if block.kind.name == "bounded":
        high = (block.answers_t == 2) | ((block.answers_t == 1) & (block.logs_t[0] >= np.log(0.5)))
    else:
        high = 2 * block.answers_t >= block.kind.n_categories - 1
    return np.where(block.answers_t < 0, -1, high).astype(np.int8)


def bounded_start(block: TypedAnswers) -> np.ndarray:
    r"""(1, 2) starting (u, log phi) of bounded scores: the share q of exact zeros and ones read as
    :math:`2\sigma(-e^u / 2)` (the share at :math:`\eta = 0`), and the precision from the values between by the
    moments of the beta, :math:`\phi = \overline{m(1 - m)} / \overline{r^2} - 1` with each item's mean m and the
    residuals r of the values from an item-plus-system fit (the systems' spread is not noise); both clipped to
    sensible ranges."""
    answered, between = block.answers_t >= 0, block.answers_t == 1
    q = np.clip((answered & ~between).sum() / max(answered.sum(), 1), 0.01, 0.9)
    u = np.log(-2 * special.logit(q / 2))
    value = np.where(between, np.exp(block.logs_t[0]), np.nan)
    counts = between.sum(1)
    rows = counts >= 2
    if not rows.any():
        return np.array([[u, block.kind.prior_mean[1]]])
    value = value[rows]
    mean = np.nanmean(value, 1)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a system with no value between: its mean is NaN
        residual = value - mean[:, None] - np.nan_to_num(np.nanmean(value - mean[:, None], 0))[None]
    phi = np.clip(np.mean(mean * (1 - mean)) / max(float(np.nanmean(residual**2)), 1e-12) - 1, 1.0, 1e3)
    return np.array([[u, np.log(phi)]])


def start_mixed(answers: np.ndarray, typed: tuple, rng) -> State:
    """:func:`~bayes_raters.leaderboard.state.start_state` for a mixed leaderboard: the start reads each typed
    answer as right when it lies in the upper half of its scale (:func:`upper_half`); the typed items take their share of
    the difficulties and the common starting slope (:func:`start_typed`)."""
    halves = [upper_half(block).T for block in typed]
    state = start_state(np.concatenate([answers] + halves, axis=1).astype(np.int8), rng)
    n_binary, log_a, b = answers.shape[1], state.log_a, state.b
    state.log_a, state.b = log_a[:n_binary], b[:n_binary]
    bounds = np.cumsum([n_binary] + [len(block.positions) for block in typed])
    state.typed = [start_typed(block, b[lo:hi], float(log_a[0])) for block, lo, hi in zip(typed, bounds[:-1], bounds[1:])]
    if not n_binary:
        state.item_loglik, state.accepted["items"] = np.zeros(0), float("nan")
    return state
