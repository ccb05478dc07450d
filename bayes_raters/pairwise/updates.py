"""Update rules of the online pairwise and scalar elicitation methods (Sakaguchi & Van
Durme 2018, Sections 3-4), as functions of arrays of item state.

TrueSkill (Gaussian latent N(mu_i, sigma_i^2), Herbrich et al. 2006), for "i beats j"
with t = mu_i - mu_j, c^2 = 2 beta^2 + sigma_i^2 + sigma_j^2 and draw margin eps::

    mu_i    <- mu_i + sigma_i^2 / c * v(t/c, eps/c)             (Eqs. 3-4; j with a minus)
    sigma_i^2 <- sigma_i^2 * (1 - sigma_i^2 / c^2 * w(t/c, eps/c))  (Eqs. 7-8)
    win:  v = phi(t - eps) / Phi(t - eps),      w = v (v + t - eps)        (Eqs. 5, 9)
    tie:  v = [phi(-eps - t) - phi(eps - t)] / [Phi(eps - t) - Phi(-eps - t)]   (Eq. 6)
          w = v^2 + [(eps - t) phi(eps - t) + (eps + t) phi(eps + t)] / [Phi(eps - t) - Phi(-eps - t)]

as in the ``trueskill`` package, which also adds the dynamics tau^2 to each sigma^2
before a game and sets eps = Phi^{-1}((p_draw + 1) / 2) * sqrt(2) * beta.

Bounded ranking aggregation (RA): each item Beta(alpha_i, beta_i), scalar = mode
M = (alpha - 1) / (alpha + beta - 2) (Eq. 12; 1/2 for the flat Beta(1, 1)), uncertainty
= variance alpha beta / ((alpha + beta)^2 (alpha + beta + 1)) (Eq. 13). With
pi = exp(M), theta = exp(eps) (Rao-Kupper, Eqs. 20-22)::

    P(i > j) = pi_i / (pi_i + theta pi_j)
    P(i = j) = (theta^2 - 1) pi_i pi_j / ((pi_i + theta pi_j)(theta pi_i + pi_j))

and c = sqrt(2 gamma^2 + Var_i + Var_j), a win of i over j adds Var_i / c (1 - P(i > j))
to alpha_i and Var_j / c (1 - P(i > j)) to beta_j (Eqs. 14-15); a tie with
``|M_i - M_j| > eps`` adds Var/c (1 - P(i = j)) to alpha of the lower item and beta of the
higher one (Eqs. 16-17), otherwise to alpha and beta of both (Eqs. 18-19). Increments are
never negative, so alpha and beta never decrease.

EASL: a scalar judgement s in [0, 1] adds s to alpha and 1 - s to beta (Eqs. 24-25).
Match quality (Eqs. 11, 23): q = sqrt(2 g^2 / c^2) exp(-(m_i - m_j)^2 / (2 c^2)).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from scipy import special

WIN, TIE, LOSS = 1, 0, -1
OUTCOME_CODES = {"win": WIN, "tie": TIE, "loss": LOSS}


def beta_mode(alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Mode (alpha - 1) / (alpha + beta - 2) of Beta(alpha, beta) with alpha, beta >= 1
    (Eq. 12); the flat Beta(1, 1) has no mode and is given its mean, 1/2."""
    alpha, beta = np.asarray(alpha, float), np.asarray(beta, float)
    spread = alpha + beta - 2.0
    flat = spread <= 0.0
    return np.where(flat, 0.5, (alpha - 1.0) / np.where(flat, 1.0, spread))


def beta_variance(alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Variance alpha beta / ((alpha + beta)^2 (alpha + beta + 1)) (Eq. 13)."""
    alpha, beta = np.asarray(alpha, float), np.asarray(beta, float)
    total = alpha + beta
    return alpha * beta / (total**2 * (total + 1.0))


def match_quality(
    scalar_i: float, variance_i: float, scalar_j: np.ndarray, variance_j: np.ndarray, gamma: float
) -> np.ndarray:
    """Chance-to-draw match quality of item i against each j (Eqs. 11 and 23):
    sqrt(2 gamma^2 / c^2) exp(-(m_i - m_j)^2 / (2 c^2)), c^2 = 2 gamma^2 + var_i + var_j."""
    c2 = 2.0 * gamma**2 + variance_i + np.asarray(variance_j, float)
    return np.sqrt(2.0 * gamma**2 / c2) * np.exp(-((scalar_i - np.asarray(scalar_j, float)) ** 2) / (2.0 * c2))


def rao_kupper(pi_i: float, pi_j: float, theta: float) -> tuple[float, float]:
    """(P(i beats j), P(tie)) under Rao-Kupper with strengths pi and tie parameter
    theta >= 1 (Eqs. 20, 22)."""
    win = pi_i / (pi_i + theta * pi_j)
    tie = (theta**2 - 1.0) * pi_i * pi_j / ((pi_i + theta * pi_j) * (theta * pi_i + pi_j))
    return win, tie


# --- TrueSkill -----------------------------------------------------------------------


def trueskill_draw_margin(draw_probability: float, beta: float) -> float:
    """eps = Phi^{-1}((p_draw + 1) / 2) sqrt(2) beta: the draw margin of a 1-vs-1 game."""
    return float(special.ndtri((draw_probability + 1.0) / 2.0) * math.sqrt(2.0) * beta)


def _log_phi(x: float) -> float:
    return -0.5 * x * x - 0.5 * math.log(2.0 * math.pi)


def v_w_win(x: float) -> tuple[float, float]:
    """v = phi(x)/Phi(x) and w = v (v + x) at x = (t - eps)/c (Eqs. 5, 9), with
    Phi in log space (scipy's log_ndtr) so a very surprising win does not divide 0 by 0."""
    v = math.exp(_log_phi(x) - float(special.log_ndtr(x)))
    return v, v * (v + x)


def v_w_tie(t: float, eps: float) -> tuple[float, float]:
    """v and w of a tie (Eqs. 6, 10) at normalised difference t and margin eps. v is odd
    and w even in t, so both are computed at ``|t|``, where the denominator
    ``Phi(eps - |t|) - Phi(-eps - |t|)`` is a difference of small numbers, in log space."""
    a, b = eps - abs(t), -eps - abs(t)
    log_upper, log_lower = float(special.log_ndtr(a)), float(special.log_ndtr(b))
    log_denominator = log_upper + math.log1p(-math.exp(log_lower - log_upper))
    phi_a, phi_b = math.exp(_log_phi(a) - log_denominator), math.exp(_log_phi(b) - log_denominator)
    v_abs = phi_b - phi_a
    w = v_abs**2 + (a * phi_a - b * phi_b)
    return (v_abs if t >= 0 else -v_abs), w


def trueskill_sequence(
    mu: np.ndarray,
    sigma2: np.ndarray,
    first: np.ndarray,
    second: np.ndarray,
    outcome: np.ndarray,
    beta: float,
    tau: float,
    draw_margin: float,
) -> None:
    """Apply games in order, in place on ``mu`` and ``sigma2``; ``outcome`` is WIN, TIE or
    LOSS seen from ``first``. Sequential by nature: each game reads the state the last one
    left, so this is a loop."""
    for i, j, result in zip(first.tolist(), second.tolist(), outcome.tolist(), strict=True):
        if result == LOSS:
            i, j = j, i
        var_i, var_j = sigma2[i] + tau**2, sigma2[j] + tau**2
        c = math.sqrt(2.0 * beta**2 + var_i + var_j)
        t, eps = (mu[i] - mu[j]) / c, draw_margin / c
        v, w = v_w_tie(t, eps) if result == TIE else v_w_win(t - eps)
        mu[i] += var_i / c * v
        mu[j] -= var_j / c * v
        sigma2[i] = var_i * (1.0 - var_i / c**2 * w)
        sigma2[j] = var_j * (1.0 - var_j / c**2 * w)


# --- bounded ranking aggregation -----------------------------------------------------


@numba.njit(cache=True)
def _mode_var(alpha: float, beta: float) -> tuple[float, float]:
    total = alpha + beta
    mode = 0.5 if total <= 2.0 else (alpha - 1.0) / (total - 2.0)
    return mode, alpha * beta / (total * total * (total + 1.0))


@numba.njit(cache=True)
def ra_sequence(
    alpha: np.ndarray,
    beta: np.ndarray,
    first: np.ndarray,
    second: np.ndarray,
    outcome: np.ndarray,
    gamma: float,
    epsilon: float,
) -> None:
    """Apply pairwise outcomes in order, in place on ``alpha`` and ``beta`` (Eqs. 14-22).
    Compiled with numba: every update reads the state left by the previous one."""
    theta = math.exp(epsilon)
    for k in range(first.shape[0]):
        i, j, result = first[k], second[k], outcome[k]
        if result == -1:
            i, j = j, i
        mode_i, var_i = _mode_var(alpha[i], beta[i])
        mode_j, var_j = _mode_var(alpha[j], beta[j])
        c = math.sqrt(2.0 * gamma * gamma + var_i + var_j)
        pi_i, pi_j = math.exp(mode_i), math.exp(mode_j)
        if result != 0:
            surprise = 1.0 - pi_i / (pi_i + theta * pi_j)
            alpha[i] += var_i / c * surprise
            beta[j] += var_j / c * surprise
            continue
        p_tie = (theta * theta - 1.0) * pi_i * pi_j / ((pi_i + theta * pi_j) * (theta * pi_i + pi_j))
        surprise = 1.0 - p_tie
        gap = mode_i - mode_j
        if abs(gap) > epsilon:
            high, low = (i, j) if gap > 0 else (j, i)
            var_high, var_low = (var_i, var_j) if gap > 0 else (var_j, var_i)
            alpha[low] += var_low / c * surprise
            beta[high] += var_high / c * surprise
        else:
            alpha[i] += var_i / c * surprise
            beta[i] += var_i / c * surprise
            alpha[j] += var_j / c * surprise
            beta[j] += var_j / c * surprise


def easl_update(alpha: np.ndarray, beta: np.ndarray, index: np.ndarray, value: np.ndarray) -> None:
    """Eqs. 24-25 for a batch, in place: alpha += sum of s, beta += sum of (1 - s) per item.
    The update commutes, so a batch is one weighted bincount."""
    n = alpha.shape[0]
    alpha += np.bincount(index, weights=value, minlength=n)
    beta += np.bincount(index, weights=1.0 - value, minlength=n)
