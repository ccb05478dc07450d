"""The state of one chain of the leaderboard's blocked sampler (:mod:`bayes_raters.leaderboard.sampler`) and its
dispersed start."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class State:
    """One chain's current values (``log_a`` has one entry per item; the 1PL keeps them equal)."""

    theta: np.ndarray
    log_a: np.ndarray
    b: np.ndarray
    b_mean: float
    b_sigma: float
    log_a_mean: float
    log_a_sigma: float
    item_loglik: np.ndarray = field(default=None)
    #: The items' warmup step fractions (:func:`~bayes_raters.leaderboard.items.climb_far_items`).
    climb: np.ndarray = field(default=None)
    accepted: dict = field(default_factory=dict)
    #: One :class:`TypedState` per response type beside the 2PL items (mixed leaderboards).
    typed: list = field(default_factory=list)


def start_state(answers: np.ndarray, rng: np.random.Generator) -> State:
    """Dispersed starting values from the data: standardised logits of each system's share
    correct (jittered by 0.3), item difficulties from each item's share, slopes near 1."""
    observed = answers >= 0
    share = lambda correct, n: (correct + 0.5) / (n + 1.0)  # noqa: E731
    sys_share = share((answers == 1).sum(1), observed.sum(1))
    theta = np.log(sys_share / (1 - sys_share))
    theta = (theta - theta.mean()) / max(theta.std(), 1e-6) + rng.normal(0, 0.3, len(theta))
    item_share = share((answers == 1).sum(0), observed.sum(0))
    b = -np.log(item_share / (1 - item_share)) + rng.normal(0, 0.3, len(item_share))
    log_a = np.full(answers.shape[1], rng.normal(0, 0.2))
    return State(theta, log_a, b, float(b.mean()), float(b.std()) + 0.1, float(log_a[0]), 0.3)


@dataclass
class TypedState:
    """The current values of one response type's items (:mod:`bayes_raters.leaderboard.typed`): slopes,
    difficulties, the type's extra parameters (items, m), each item's log-likelihood and the last acceptance rate."""

    log_a: np.ndarray
    b: np.ndarray
    extra: np.ndarray
    loglik: np.ndarray = field(default=None)
    accepted: float = 0.0
