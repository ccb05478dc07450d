r"""A blocked Metropolis-within-Gibbs sampler for the leaderboard 1PL/2PL (:mod:`bayes_raters.leaderboard.model` states it).

At leaderboard shape every system answers thousands of items and every item is answered by
hundreds of systems, so each block's conditional is nearly Gaussian and tiny: given the items,
the abilities :math:`\theta_s` are independent, each a one-dimensional posterior; given the
abilities, the items :math:`(\log a_j, b_j)` are independent two-dimensional posteriors. One
sweep updates

1. every :math:`\theta_s` at once by a **Newton proposal** (simplified manifold MALA with a full
   step): from the current :math:`x`, with gradient :math:`g(x)` of the log conditional and the
   Fisher information plus prior precision :math:`G(x)`, propose
   :math:`x^* \sim N(x + G^{-1}g,\ G^{-1})` and accept with the Metropolis-Hastings ratio
   :math:`\pi(x^*)\,q(x \mid x^*) / \pi(x)\,q(x^* \mid x)` (exact; for a Gaussian conditional
   the proposal is the conditional itself and is always accepted); twice where systems
   outnumber items (:func:`theta_updates`);
2. every item's :math:`(\log a_j, b_j)` (1PL: :math:`b_j`, then the common :math:`\log a`) the same way
   (:mod:`bayes_raters.leaderboard.items`; during warmup, items far from their conditional mode climb to it);
3. two **group moves** that leave the likelihood unchanged (Liu and Sabatti's generalised Gibbs):
   a shift :math:`\theta + c,\ b + c,\ \mu_b + c` with :math:`c` drawn exactly from its Gaussian
   conditional, and a scale :math:`\theta s,\ b s,\ \mu_b s,\ \sigma_b s,\ \log a - \log s,\
   \mu_{\log a} - \log s` with :math:`s^2` proposed from its Gamma conditional without the
   :math:`\mu_{\log a}` prior and corrected by Metropolis-Hastings. They cost
   :math:`O(S + J)` and move the ridge along which the abilities and items trade location and
   unit, which blocks 1-2 alone cross only in small steps;
4. the hyperparameters exactly: :math:`\mu` Gaussian, :math:`\sigma^2` generalised inverse
   Gaussian (the half-normal prior on :math:`\sigma` times the items' normal likelihood).

Each step leaves the posterior invariant, so the sweep does. Why not NUTS: at leaderboard size
the joint model's NUTS took minutes and did not converge; the measured speed and accuracy of both
are in ``models/leaderboards.md`` (``benchmarks/bench_leaderboard.py`` measures them).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from bayes_raters.leaderboard.items import item_coordinates, log_item_prior, update_items
from bayes_raters.leaderboard.kernel import MatrixPasses
from bayes_raters.leaderboard.proposals import IndependenceProposal, independence_log_q_back, mh_accept, mix_independence
from bayes_raters.leaderboard.state import State, start_state
from bayes_raters.leaderboard.typed import (
    coordinates,
    slope_sums,
    start_mixed,
    system_sums,
    typed_log_prior,
    update_shared_extra,
    update_typed_items,
)

#: Prior scales, as in :mod:`bayes_raters.irt.binary.model`: mu_b ~ N(0, 1), sigma_b ~ N+(1.5),
#: mu_log_a ~ N(0, 0.5), sigma_log_a ~ N+(0.5); 1PL: log a ~ N(0, 0.5).
B_MEAN_SD, B_SIGMA_SCALE, LOG_A_MEAN_SD, LOG_A_SIGMA_SCALE = 1.0, 1.5, 0.5, 0.5


def abilities_terms(passes: MatrixPasses, theta, state: State, typed: tuple = ()) -> tuple:
    """Per system: log-likelihood, derivative in theta and Fisher information of every answer, the 0/1
    items' (``passes.abilities``, :class:`~bayes_raters.leaderboard.kernel.MatrixPasses` or a sharded
    :class:`~bayes_raters.leaderboard.sharded.DaskPasses`) plus each response type's
    (:func:`~bayes_raters.leaderboard.typed.system_sums`, mixed leaderboards)."""
    ll, g, info = passes.abilities(theta, np.exp(state.log_a), state.b)
    for block, values in zip(typed, state.typed):
        more = system_sums(block, values, theta)
        ll, g, info = ll + more[0], g + more[1], info + more[2]
    return ll, g, info


def update_theta(passes: MatrixPasses, state: State, rng, independent: IndependenceProposal | None = None, passed: tuple | None = None,
                 typed: tuple = ()) -> tuple:
    r"""Step 1: every ability by one Metropolis-Hastings move against its conditional (prior
    N(0, 1)), the kernel drawn per system and sweep: the Newton proposal
    :math:`N(x + G^{-1}g,\ G^{-1})` or, after warmup and with probability
    :data:`~bayes_raters.leaderboard.proposals.INDEPENDENT_SHARE`, the system's own independence proposal (``independent``, a
    :class:`~bayes_raters.leaderboard.proposals.IndependenceProposal` fitted to its warmup draws). The Newton proposal alone mixed
    slowly for the top systems of a leaderboard with many systems and few items: a system with
    240 of 249 answers right has a right-skewed conditional with little information in its upper
    tail, where the reverse of a Newton move is improbable (bulk ESS 66-177 of 600 draws for the
    eight best of 5,000 systems at 5,000 x 249; 430 or more for every system with the mixture).
    The items' short Newton step (:data:`~bayes_raters.leaderboard.items.ITEM_STEPS`) is not used here: it lowered the
    abilities' median bulk ESS from 1,079 to 775 of 1,400 draws at 4,278 x 102
    (``models/leaderboards.md``). ``passed``: the abilities pass's ``(ll, g, info)`` at the current
    abilities and items when already known (the previous update's, :func:`theta_updates`); returns
    the pass at the accepted abilities; ``typed``: the other response types' answers (mixed leaderboards)."""
    theta = state.theta
    n_systems = len(theta)
    ll, g, info = abilities_terms(passes, theta, state, typed) if passed is None else passed
    prec = info + 1.0
    mean = theta + (g - theta) / prec
    proposal = mean + rng.standard_normal(n_systems) / np.sqrt(prec)
    use_ind, proposal = mix_independence(independent, proposal[:, None], rng)
    proposal = proposal[:, 0]
    ll_p, g_p, info_p = abilities_terms(passes, proposal, state, typed)
    prec_p = info_p + 1.0
    mean_p = proposal + (g_p - proposal) / prec_p
    log_ratio = (ll_p - proposal**2 / 2) - (ll - theta**2 / 2)
    log_q_back = 0.5 * (np.log(prec_p) - prec_p * (theta - mean_p) ** 2) - 0.5 * (np.log(prec) - prec * (proposal - mean) ** 2)
    log_q_back = independence_log_q_back(independent, use_ind, theta[:, None], proposal[:, None], log_q_back)
    take = mh_accept(rng, log_ratio + log_q_back)
    state.theta = np.where(take, proposal, theta)
    state.accepted["theta"] = float(take.mean())
    return tuple(np.where(take, new, now) for now, new in ((ll, ll_p), (g, g_p), (info, info_p)))


def item_updates(n_systems: int, n_items: int) -> int:
    r"""Item updates per sweep (the items are the slow block): three where items outnumber systems, two
    otherwise. With few systems the steep items' slopes mix slowest, and over ten thousand of them the largest
    R-hat decides when the draws may stop: at 200 x 10,000 a third update (one pass over the answers more)
    raised the slopes' smallest bulk ESS from 543-631 to 756-949 of 2,000 draws and brought the largest R-hat
    after 1,000 draws from 1.0111-1.0173 to 1.0081-1.0099 on seeds 1-3 (``models/leaderboards.md``)."""
    return 3 if n_items > n_systems else 2


def theta_updates(n_systems: int, n_items: int) -> int:
    r"""Ability updates per sweep: two where systems outnumber items, one otherwise. With thousands
    of systems the abilities are most of the checked parameters, and the largest of their R-hats
    decides when the draws may stop; a second update costs one pass over the answers (it starts
    from the first one's accepted pass) and raised the abilities' median bulk ESS from 0.75 to 0.93
    per draw at 4,278 x 102 (``models/leaderboards.md``). Where items outnumber systems the items'
    R-hats decide and the pass is saved."""
    return 2 if n_systems > n_items else 1


def interweaves(n_systems: int, n_items: int) -> bool:
    r"""Whether the 2PL sweep ends with :func:`interweave_log_a_sigma`: where items outnumber
    systems. Each slope then rests on few answers and the centred draw of
    :math:`\sigma_{\log a}` mixes slowly (bulk ESS 140 without the step, 275 with it, per 1,000
    draws at 100 x 2,000); with thousands of systems every slope is pinned by its answers and the
    centred draw alone mixes (bulk ESS 1,758 without the step, 1,661 with it, of 2,000 draws at
    4,278 x 102), so the step's pass over the answers is saved (``models/leaderboards.md``)."""
    return n_items > n_systems


def update_common_slope(passes: MatrixPasses, state: State, rng, parts) -> None:
    """1PL: the common log a (prior N(0, 0.5)) by one Newton proposal, from the items' sums."""
    g, info = parts
    x = state.log_a[0]
    grad = g[:, 0].sum() - x / LOG_A_MEAN_SD**2
    prec = info[:, 0].sum() + 1 / LOG_A_MEAN_SD**2
    mean = x + grad / prec
    proposal = mean + rng.standard_normal() / np.sqrt(prec)
    ll_p, g_p, info_p = passes.items(state.theta, np.full(len(state.b), np.exp(proposal)), state.b)
    prec_p = info_p[:, 0].sum() + 1 / LOG_A_MEAN_SD**2
    mean_p = proposal + (g_p[:, 0].sum() - proposal / LOG_A_MEAN_SD**2) / prec_p
    log_ratio = (ll_p.sum() - proposal**2 / (2 * LOG_A_MEAN_SD**2)) - (state.item_loglik.sum() - x**2 / (2 * LOG_A_MEAN_SD**2))
    log_ratio += 0.5 * (np.log(prec_p) - prec_p * (x - mean_p) ** 2) - 0.5 * (np.log(prec) - prec * (proposal - mean) ** 2)
    take = bool(mh_accept(rng, log_ratio))
    if take:
        state.log_a, state.item_loglik = np.full(len(state.b), proposal), ll_p
    state.accepted["slope"] = float(take)


def shift_move(state: State, rng) -> None:
    """Step 3a: theta + c, b + c, mu_b + c; c's conditional is N(-(sum theta + mu_b / 1) / (S + 1), 1 / (S + 1))
    (the likelihood and the items' prior do not change)."""
    prec = len(state.theta) + 1 / B_MEAN_SD**2
    c = rng.normal(-(state.theta.sum() + state.b_mean / B_MEAN_SD**2) / prec, 1 / np.sqrt(prec))
    state.theta, state.b, state.b_mean = state.theta + c, state.b + c, state.b_mean + c
    for values in state.typed:
        values.b = values.b + c


def scale_move(state: State, rng, two_pl: bool) -> None:
    r"""Step 3b: theta s, b s, mu_b s, sigma_b s, log a - log s and (2PL) mu_log_a - log s. In
    :math:`u = \log s` the density is :math:`(S + 2)u - e^{2u}K/2 - (m - u)^2 / (2 \cdot 0.5^2)`,
    :math:`K = \sum\theta^2 + \mu_b^2 + \sigma_b^2 / 1.5^2`, :math:`m` = mu_log_a (2PL) or the
    common log a (1PL); :math:`s^2 \sim \mathrm{Gamma}((S + 2)/2, K/2)` is proposed and the last
    term accepts."""
    big_k = state.theta @ state.theta + state.b_mean**2 / B_MEAN_SD**2 + state.b_sigma**2 / B_SIGMA_SCALE**2
    s2 = rng.gamma((len(state.theta) + 2) / 2, 2 / big_k)
    u = 0.5 * np.log(s2)
    m = state.log_a_mean if two_pl else state.log_a[0]
    log_ratio = -((m - u) ** 2 - m**2) / (2 * LOG_A_MEAN_SD**2)
    take = bool(mh_accept(rng, log_ratio))
    state.accepted["scale"] = float(take)
    if not take:
        return
    s = np.exp(u)
    state.theta, state.b, state.b_mean, state.b_sigma = state.theta * s, state.b * s, state.b_mean * s, state.b_sigma * s
    state.log_a = state.log_a - u
    state.log_a_mean -= u
    for values in state.typed:
        values.b, values.log_a = values.b * s, values.log_a - u


def _normal_mean(values, sigma, prior_sd, rng) -> float:
    """mu | values ~ N(mu, sigma), mu ~ N(0, prior_sd): the conjugate normal draw."""
    prec = len(values) / sigma**2 + 1 / prior_sd**2
    return float(rng.normal(values.sum() / sigma**2 / prec, 1 / np.sqrt(prec)))


def _half_normal_sigma(deviations, scale, rng) -> float:
    r"""sigma | deviations ~ N(0, sigma), sigma ~ N+(scale), an exact draw: :math:`\sigma^2` is
    generalised inverse Gaussian with :math:`\lambda = (1 - n)/2`, :math:`\chi = \sum d^2`,
    :math:`\psi = 1/\text{scale}^2`. Drawn by rejection: propose :math:`\sigma^2 \sim
    \text{InvGamma}((n - 1)/2, \chi/2)` (the likelihood's own shape in :math:`\sigma`) and accept
    with probability :math:`\exp(-\sigma^2 / (2\,\text{scale}^2)) \le 1`, the prior's kernel;
    accepted draws follow the product exactly, far faster than ``scipy.stats.geninvgauss.rvs``
    (``models/leaderboards.md``), which remains the fallback after 200 rejections."""
    chi, n = float(deviations @ deviations), len(deviations)
    for _ in range(200):
        var = (chi / 2) / rng.gamma((n - 1) / 2)
        if rng.random() < np.exp(-var / (2 * scale**2)):
            return float(np.sqrt(var))
    psi = 1 / scale**2
    var = np.sqrt(chi / psi) * stats.geninvgauss.rvs((1 - n) / 2, np.sqrt(chi * psi), random_state=rng)
    return float(np.sqrt(var))


def update_hyperparameters(state: State, rng, two_pl: bool) -> None:
    """Step 4: mu_b, sigma_b and (2PL) mu_log_a, sigma_log_a, each from its exact conditional (over
    every item, of every response type)."""
    b, log_a = all_items(state, "b"), all_items(state, "log_a")
    state.b_mean = _normal_mean(b, state.b_sigma, B_MEAN_SD, rng)
    state.b_sigma = _half_normal_sigma(b - state.b_mean, B_SIGMA_SCALE, rng)
    if two_pl:
        state.log_a_mean = _normal_mean(log_a, state.log_a_sigma, LOG_A_MEAN_SD, rng)
        state.log_a_sigma = _half_normal_sigma(log_a - state.log_a_mean, LOG_A_SIGMA_SCALE, rng)


def all_items(state: State, name: str) -> np.ndarray:
    """``b`` or ``log_a`` of the 0/1 items followed by each response type's items."""
    values = getattr(state, name)
    return np.concatenate([values] + [getattr(t, name) for t in state.typed]) if state.typed else values


def interweave_log_a_sigma(passes: MatrixPasses, state: State, rng, parts, typed: tuple = ()) -> None:
    r"""Step 5 (2PL): :math:`\sigma_{\log a}` once more, in the non-centred coordinates
    (ancillarity-sufficiency interweaving, Yu and Meng 2011): the standardised slopes
    :math:`\epsilon_j = (\log a_j - \mu_{\log a}) / \sigma_{\log a}` (and the :math:`b_j`) stay
    fixed while :math:`u = \log\sigma_{\log a}` moves every slope at once, by one Newton proposal on
    :math:`\ell(\mu + e^u\epsilon) - e^{2u}/(2 \cdot 0.5^2) + u`, whose gradient and information
    come from the items' sums (:func:`update_items` hands over the accepted items' ``parts``; the
    group moves leave them unchanged; the other response types' items of a mixed leaderboard,
    ``typed``, move too, their sums from :func:`~bayes_raters.leaderboard.typed.slope_sums`). The
    centred draw alone mixed slowly where the data say little about each slope: bulk ESS of
    :math:`\sigma_{\log a}` 100-140 in 1,000 draws on 100 x 2,000, and the strongly shrunk steep
    items with it. A mixed leaderboard skips the step in the first half of the warmup: while the typed
    items still climb from their start, shrinking every slope at once raised their likelihood and
    :math:`\sigma_{\log a}` fell to 0.002 within 40 sweeps (150 systems x 190 items with bounded scores)."""
    scale2 = LOG_A_SIGMA_SCALE**2
    n_binary = len(state.b)
    g, info = parts if parts is not None else (np.zeros((0, 2)), np.zeros((0, 3)))
    now = [slope_sums(block, values, state.theta, values.log_a) for block, values in zip(typed, state.typed)]
    deviation = all_items(state, "log_a") - state.log_a_mean
    eps = deviation / state.log_a_sigma
    u = np.log(state.log_a_sigma)

    def newton(u_now, dev, grad_items, info_items):
        sigma2 = np.exp(2 * u_now)
        grad = dev @ grad_items - sigma2 / scale2 + 1.0
        prec = (dev * dev) @ info_items + 2 * sigma2 / scale2
        return u_now + grad / prec, prec

    joined = lambda first, sums, k: np.concatenate([first] + [part[k] for part in sums]) if sums else first  # noqa: E731
    mean, prec = newton(u, deviation, joined(g[:, 0], now, 1), joined(info[:, 0], now, 2))
    proposal = mean + rng.standard_normal() / np.sqrt(prec)
    new_dev = np.exp(proposal) * eps
    new_log_a = state.log_a_mean + new_dev
    ll_p, g_p, info_p = passes.items(state.theta, np.exp(new_log_a[:n_binary]), state.b)
    bounds = np.cumsum([n_binary] + [len(values.b) for values in state.typed])
    moved = [slope_sums(block, values, state.theta, new_log_a[lo:hi]) for block, values, lo, hi in zip(typed, state.typed, bounds[:-1], bounds[1:])]
    mean_p, prec_p = newton(proposal, new_dev, joined(g_p[:, 0], moved, 1), joined(info_p[:, 0], moved, 2))
    log_target = lambda ll, uu: ll.sum() - np.exp(2 * uu) / (2 * scale2) + uu  # noqa: E731
    log_ratio = log_target(joined(ll_p, moved, 0), proposal) - log_target(joined(state.item_loglik, now, 0), u)
    log_ratio += 0.5 * (np.log(prec_p) - prec_p * (u - mean_p) ** 2) - 0.5 * (np.log(prec) - prec * (proposal - mean) ** 2)
    take = bool(mh_accept(rng, log_ratio))
    state.accepted["interweave"] = float(take)
    if take:
        state.log_a_sigma, state.log_a, state.item_loglik = float(np.exp(proposal)), new_log_a[:n_binary], ll_p
        for values, part, lo, hi in zip(state.typed, moved, bounds[:-1], bounds[1:]):
            values.log_a, values.loglik = new_log_a[lo:hi], part[0]


def sweep(passes: MatrixPasses, state: State, rng, two_pl: bool, independent: tuple | None = None, warming: bool = False,
          typed: tuple = ()) -> None:
    """One sweep of steps 1-4 (module docstring); ``warming``: a warmup sweep, where items far from
    their conditional mode climb to it (:func:`~bayes_raters.leaderboard.items.climb_far_items`). A
    proposal far in a tail can overflow ``exp`` (a slope of e^800); its target is then not finite
    and the move is rejected, which is the right outcome, so numpy's overflow and invalid-value
    warnings are silenced here. ``typed``: the answers of the other response types
    (:class:`~bayes_raters.leaderboard.typed.TypedAnswers`, mixed leaderboards), whose items move after the 0/1 items."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        _sweep(passes, state, rng, two_pl, independent, warming, typed)


def _sweep(passes: MatrixPasses, state: State, rng, two_pl: bool, independent: tuple | None, warming: bool, typed: tuple) -> None:
    """``independent``: the (abilities, items) independence proposals, or None during warmup."""
    independent_theta, independent, independent_typed = (None, None, ()) if independent is None else independent
    independent_typed = independent_typed or (None,) * len(typed)
    passed = None
    shape = (passes.shape[0], passes.shape[1] + sum(len(block.positions) for block in typed))
    for _ in range(theta_updates(*shape)):  # the items do not change between them: each starts from the last one's pass
        passed = update_theta(passes, state, rng, independent_theta, passed, typed)
    if warming and state.climb is None:
        state.climb = np.ones(len(state.b))
    parts = None
    for _ in range(item_updates(*shape)):  # nothing changes between them but the items: each starts from the last one's pass
        if len(state.b):
            parts = update_items(passes, state, rng, two_pl, independent, parts, state.climb if warming else None)
    for block, values, proposal in zip(typed, state.typed, independent_typed):
        for _ in range(block.kind.updates):
            update_typed_items(block, values, state, rng, proposal)
    for block, values in zip(typed, state.typed):
        update_shared_extra(block, values, state, rng)
    if not two_pl:
        update_common_slope(passes, state, rng, parts)
    shift_move(state, rng)
    scale_move(state, rng, two_pl)
    update_hyperparameters(state, rng, two_pl)
    if two_pl and interweaves(*shape) and not (warming and typed):  # mixed: not while typed items climb (interweave's docstring)
        interweave_log_a_sigma(passes, state, rng, parts, typed)


def log_prior(state: State, two_pl: bool, typed: tuple = ()) -> float:
    """The log prior density of the state (constants dropped), for the ``lp`` sample statistic."""
    out = -0.5 * state.theta @ state.theta - 0.5 * state.b_mean**2 / B_MEAN_SD**2 - 0.5 * state.b_sigma**2 / B_SIGMA_SCALE**2
    out += -len(state.b) * np.log(state.b_sigma) + float(log_item_prior(state.log_a, state.b, state, False).sum())
    if two_pl:
        out += -0.5 * state.log_a_mean**2 / LOG_A_MEAN_SD**2 - 0.5 * state.log_a_sigma**2 / LOG_A_SIGMA_SCALE**2
        out += -len(state.b) * np.log(state.log_a_sigma) - float(((state.log_a - state.log_a_mean) ** 2).sum()) / (2 * state.log_a_sigma**2)
    else:
        out += -0.5 * state.log_a[0] ** 2 / LOG_A_MEAN_SD**2
    return float(out) + sum(typed_log_prior(values, block.kind, state) for values, block in zip(state.typed, typed))


class Chain:
    """One chain of the sampler: :meth:`warm_up` (the second half of the warmup sweeps fits the
    independence proposals, :class:`~bayes_raters.leaderboard.proposals.IndependenceProposal`), then :meth:`sample` as often as
    wanted, each call continuing where the last stopped. ``typed``: the answers of the other response
    types (:class:`~bayes_raters.leaderboard.typed.TypedAnswers`; a mixed leaderboard, 2PL only)."""

    SCALARS_2PL = ("b_mean", "b_sigma", "log_a_mean", "log_a_sigma")
    SCALARS_1PL = ("b_mean", "b_sigma", "a_common")
    STATS = ("accept_theta", "accept_items", "accept_scale", "lp")

    def __init__(self, passes: MatrixPasses, two_pl: bool, rng: np.random.Generator, typed: tuple = ()):
        self.passes, self.two_pl, self.rng, self.typed = passes, two_pl, rng, tuple(typed)
        self.state = start_state(passes.answers, rng) if not typed else start_mixed(passes.answers, self.typed, rng)
        self.independent: tuple | None = None

    def warm_up(self, tune: int, progress=None) -> None:
        """``tune`` sweeps that are not kept; in the first half, items far from their conditional
        mode climb to it (:func:`~bayes_raters.leaderboard.items.climb_far_items`), in the second the
        chain samples as after warmup and its draws fit the independence proposals (a climbing
        item's deterministic moves are not draws of its conditional and would narrow its
        proposal); ``progress(done)`` after each."""
        warm, warm_theta, warm_typed = [], [], []
        for it in range(tune):
            sweep(self.passes, self.state, self.rng, self.two_pl, warming=it < tune // 2, typed=self.typed)
            if it >= tune // 2:
                warm.append(item_coordinates(self.state, self.two_pl))
                warm_theta.append(self.state.theta[:, None].copy())
                warm_typed.append([coordinates(values, block.kind) for values, block in zip(self.state.typed, self.typed)])
            if progress is not None:
                progress(it + 1)
        if len(warm) > 2:
            typed = tuple(IndependenceProposal(np.array([sweep_typed[i] for sweep_typed in warm_typed])) for i in range(len(self.typed)))
            self.independent = (IndependenceProposal(np.array(warm_theta)), IndependenceProposal(np.array(warm)), typed)

    def sample(self, draws: int, progress=None) -> dict:
        """``draws`` recorded sweeps: arrays with a leading draw axis, ``theta``, ``a``, ``b``,
        ``item_loglik``, the hyperparameters and the statistics in :attr:`STATS`; for each response type
        ``i`` of a mixed leaderboard ``typed{i}_a``, ``_b``, ``_extra``, ``_loglik`` and ``accept_typed{i}``."""
        state = self.state
        n_systems, n_items = self.passes.shape
        out = {"theta": np.empty((draws, n_systems)), "a": np.empty((draws, n_items)), "b": np.empty((draws, n_items)),
               "item_loglik": np.empty((draws, n_items))}
        scalars = self.SCALARS_2PL if self.two_pl else self.SCALARS_1PL
        out |= {name: np.empty(draws) for name in scalars + self.STATS}
        for i, block in enumerate(self.typed):
            n = len(block.positions)
            out |= {f"typed{i}_a": np.empty((draws, n)), f"typed{i}_b": np.empty((draws, n)), f"typed{i}_loglik": np.empty((draws, n)),
                    f"typed{i}_extra": np.empty((draws,) + block.kind.start_extra(n).shape), f"accept_typed{i}": np.empty(draws)}
        for d in range(draws):
            sweep(self.passes, state, self.rng, self.two_pl, self.independent, typed=self.typed)
            out["theta"][d], out["a"][d], out["b"][d] = state.theta, np.exp(state.log_a), state.b
            out["item_loglik"][d] = state.item_loglik
            values = {"b_mean": state.b_mean, "b_sigma": state.b_sigma, "log_a_mean": state.log_a_mean,
                      "log_a_sigma": state.log_a_sigma, "a_common": float(np.exp(state.log_a[0])) if len(state.log_a) else float("nan"),
                      "accept_theta": state.accepted["theta"], "accept_items": state.accepted["items"],
                      "accept_scale": state.accepted["scale"],
                      "lp": float(state.item_loglik.sum()) + log_prior(state, self.two_pl, self.typed)}
            for name in scalars + self.STATS:
                out[name][d] = values[name]
            for i, values in enumerate(state.typed):
                out[f"typed{i}_a"][d], out[f"typed{i}_b"][d], out[f"typed{i}_extra"][d] = np.exp(values.log_a), values.b, values.extra
                out[f"typed{i}_loglik"][d], out[f"accept_typed{i}"][d] = values.loglik, values.accepted
                out["lp"][d] += float(values.loglik.sum())
            if progress is not None:
                progress(d + 1)
        return out
