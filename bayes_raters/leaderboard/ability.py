r"""The ability of a new system given its answers to some items of a fitted item bank.

A fitted leaderboard (:class:`~bayes_raters.leaderboard.LeaderboardResult`) is an item bank: draws
of every item's slope and difficulty. A new system :math:`s` answers a set :math:`K` of its items;
with the model's prior :math:`\theta_s \sim N(0, 1)` and the bank's item posterior,

.. math::

    p(\theta_s \mid y_K) \propto N(\theta_s; 0, 1) \prod_{j \in K} \bar p_j(\theta_s)^{y_j}
    \big(1 - \bar p_j(\theta_s)\big)^{1 - y_j}, \qquad
    \bar p_j(\theta) = \frac{1}{D} \sum_{d=1}^{D} \operatorname{logit}^{-1}\big(a_j^{(d)}(\theta - b_j^{(d)})\big),

each item's chance of a right answer averaged over :math:`D` posterior draws of that item (so the
bank's uncertainty about an item widens the new system's interval; the new answers do not update
the items, whose posterior rests on the bank's hundreds of systems). The items enter as
independent, each through its own marginal posterior, not through the joint draws: averaging the
product over joint draws is an importance-sampling estimate whose weights collapse onto a few
draws as answers accumulate (``models/leaderboards.md``), while what the joint draws add, a shift of every difficulty together, is shared with the
bank's own systems and cancels from the ability's place among them. The posterior is held on a
fixed grid of :data:`GRID_SIZE` points over :data:`GRID_RANGE` (the abilities' scale is the bank
systems', mean about 0 and SD about 1), updated one answer at a time in log space. A grid, not
MCMC, because the posterior is one-dimensional and adaptive testing updates it after every
answer: an item's curve costs :math:`D \times` :data:`GRID_SIZE` sigmoids once (the bank keeps
it), an update :data:`GRID_SIZE` additions, and
the grid gives the posterior to the grid's resolution, not a sample of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd
from scipy import special, stats

from bayes_raters.errors import InvalidInputError
from bayes_raters.results import check_ci_prob, seeded_rng

#: The ability grid: :data:`GRID_SIZE` points over :data:`GRID_RANGE`, step 0.02 (a Riemann sum over
#: a smooth posterior is accurate far below its other errors once the step is under half its SD;
#: a system with 600 answers to a simulated bank has SD about 0.11).
GRID_RANGE = (-6.0, 6.0)
GRID_SIZE = 601
#: Item draws kept from the bank (evenly thinned over chains and draws): the Monte Carlo error of
#: an item's averaged chance is below its posterior SD / 14.
MAX_DRAWS = 200
#: Draws of a new system's rank (each pairs an ability draw with a bank draw).
RANK_DRAWS = 4000


@dataclass(frozen=True)
class ItemBank:
    """The items of a fitted leaderboard as arrays: ``a``/``b`` draws (draws x items), their
    posterior means, the bank systems' ability draws (draws x systems, for ranks) and the ids."""

    items: pd.Index
    a: np.ndarray
    b: np.ndarray
    systems: pd.Index
    theta: np.ndarray
    _curves: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_result(cls, result, max_draws: int = MAX_DRAWS) -> ItemBank:
        """The bank of a :class:`~bayes_raters.leaderboard.LeaderboardResult`, thinned evenly to
        at most ``max_draws`` draws (chains pooled)."""
        if int(max_draws) < 1:
            raise InvalidInputError(f"max_draws must be a positive integer, got {max_draws}.")
        post = result.posterior.stack(sample=("chain", "draw"))
        keep = np.unique(np.linspace(0, post.sizes["sample"] - 1, min(int(max_draws), post.sizes["sample"])).round().astype(int))
        post = post.isel(sample=keep)
        a = result._slopes(post).transpose("sample", "item").values.astype(float)
        b = post["b"].transpose("sample", "item").values.astype(float)
        theta = post["theta"].transpose("sample", "system").values.astype(float)
        return cls(pd.Index(post["item"].values, name="item"), a, b, pd.Index(post["system"].values, name="system"), theta)

    @cached_property
    def a_mean(self) -> np.ndarray:
        """Posterior mean slope per item."""
        return self.a.mean(0)

    @cached_property
    def b_mean(self) -> np.ndarray:
        """Posterior mean difficulty per item."""
        return self.b.mean(0)

    def at_means(self) -> ItemBank:
        """The same bank with one draw: every item at its posterior mean (a plug-in bank: the
        full-bank ability of a system with thousands of answers, where the items' uncertainty
        no longer matters and the D-draw average would cost D times as much)."""
        return ItemBank(self.items, self.a_mean[None, :], self.b_mean[None, :], self.systems, self.theta)

    def chance(self, position: int) -> np.ndarray:
        r"""Item ``position``'s draw-averaged chance of a right answer on the ability grid,
        :math:`\bar p_j(\theta_g)` and :math:`1 - \bar p_j(\theta_g)` (computed once per item and
        kept: an adaptive test and a score estimate ask for the same items again)."""
        if position not in self._curves:
            z = self.a[:, position, None] * (grid()[None, :] - self.b[:, position, None])
            e = np.exp(-np.clip(z, -500.0, 500.0))  # one exp for both chances (half of two expit calls)
            right = 1.0 / (1.0 + e)
            self._curves[position] = (right.mean(0), (e * right).mean(0))
        return self._curves[position]

    def positions(self, items) -> np.ndarray:
        """Column positions of item ids; an id the bank lacks is an error that names it."""
        where = self.items.get_indexer(pd.Index(items))
        if (where < 0).any():
            unknown = list(pd.Index(items)[where < 0][:5])
            raise InvalidInputError(f"items {unknown} are not in the fitted bank; pass ids from result.item_table().index.")
        return where


def item_bank(result, max_draws: int = MAX_DRAWS) -> ItemBank:
    """An :class:`~bayes_raters.leaderboard.ability.ItemBank` from a fitted leaderboard (or the bank itself)."""
    if isinstance(result, ItemBank):
        return result
    if not hasattr(result, "posterior") or "b" not in result.posterior:
        raise InvalidInputError("pass a fitted leaderboard (the result of fit_leaderboard) or an ItemBank.")
    if getattr(result, "mixed", False):
        raise InvalidInputError("an item bank holds 0/1 items under the 2PL; this fit is a mixed leaderboard (item_types): "
                                "fit the 0/1 items alone (fit_leaderboard on their answers) to build one.")
    return ItemBank.from_result(result, max_draws)


def grid() -> np.ndarray:
    """The ability grid."""
    return np.linspace(*GRID_RANGE, GRID_SIZE)


class AbilityPosterior:
    """The grid posterior of one new system's ability, updated answer by answer (module
    docstring). ``add`` records an answer; ``weights`` are the normalised grid probabilities."""

    def __init__(self, bank: ItemBank):
        self.bank = bank
        self.theta = grid()
        self.log_prior = stats.norm.logpdf(self.theta)
        self.loglik = np.zeros(self.theta.size)
        self._weights = None
        self.answered: list[int] = []
        self.correct: list[int] = []

    def add(self, position: int, correct) -> None:
        """Record the answer (1 right, 0 wrong) to the item at column ``position`` of the bank."""
        if correct not in (0, 1, True, False):
            raise InvalidInputError(f"an answer is 1 (right) or 0 (wrong), got {correct!r}.")
        right, wrong = self.bank.chance(position)
        self.loglik += np.log(right if int(correct) else wrong)
        self.answered.append(int(position))
        self.correct.append(int(correct))
        self._weights = None

    def weights(self) -> np.ndarray:
        """Posterior probabilities of the grid points (they sum to 1)."""
        if self._weights is None:
            log_post = self.log_prior + self.loglik
            w = np.exp(log_post - log_post.max())  # not scipy's logsumexp: its overhead per call dominates here (models/leaderboards.md)
            self._weights = w / w.sum()
        return self._weights

    def summary(self, ci_prob: float = 0.9) -> pd.Series:
        """``theta_mean``, ``theta_sd``, ``theta_lower``/``theta_upper`` (equal-tailed ``ci_prob``
        interval, interpolated on the grid's cumulative probabilities) and ``n_items``."""
        check_ci_prob(ci_prob)
        w = self.weights()
        mean = float(w @ self.theta)
        sd = float(np.sqrt(max(w @ (self.theta - mean) ** 2, 0.0)))
        lower, upper = self.quantiles(w, [(1 - ci_prob) / 2, (1 + ci_prob) / 2])
        return pd.Series({"theta_mean": mean, "theta_sd": sd, "theta_lower": lower, "theta_upper": upper,
                          "n_items": len(self.answered)})

    def quantiles(self, w: np.ndarray, probs) -> np.ndarray:
        """Quantiles of the grid posterior (cumulative probabilities at cell midpoints)."""
        cdf = np.cumsum(w) - w / 2
        return np.interp(probs, cdf, self.theta)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` ability draws: grid points by their probabilities, jittered within a cell."""
        step = self.theta[1] - self.theta[0]
        return rng.choice(self.theta, size=n, p=self.weights()) + rng.uniform(-step / 2, step / 2, n)

    def expected_information(self, candidates: np.ndarray) -> np.ndarray:
        r"""Posterior-weighted Fisher information of each candidate item (column positions),
        :math:`\sum_g w_g\, \bar a_j^2 p_j(\theta_g)(1 - p_j(\theta_g))` at the items' posterior
        means, over the grid points that hold the posterior (weight above 1e-8 of the largest;
        van der Linden's maximum posterior-weighted information rule)."""
        w = self.weights()
        held = w > 1e-8 * w.max()
        a, b = self.bank.a_mean[candidates], self.bank.b_mean[candidates]
        p = special.expit(a[:, None] * (self.theta[held][None, :] - b[:, None]))
        return a**2 * ((p * (1 - p)) @ w[held])

    def rank(self, ci_prob: float = 0.9, n: int | None = None, random_seed=None) -> pd.Series:
        """The new system's rank among the bank's systems (1 = best): ``rank_mean``,
        ``rank_lower``/``rank_upper`` (equal-tailed ``ci_prob``), from ability draws paired with
        the bank's ability draws (one bank draw per sample, so the bank's uncertainty counts)."""
        check_ci_prob(ci_prob)
        rng = seeded_rng(random_seed)
        bank_theta = self.bank.theta
        picks = rng.integers(0, bank_theta.shape[0], n or RANK_DRAWS)
        new = self.sample(picks.size, rng)
        ranks = 1 + (bank_theta[picks] > new[:, None]).sum(1)
        tail = (1 - ci_prob) / 2
        return pd.Series({"rank_mean": ranks.mean(), "rank_lower": np.quantile(ranks, tail, method="lower"),
                          "rank_upper": np.quantile(ranks, 1 - tail, method="higher")})


def ability_from_answers(bank: ItemBank, answers: pd.Series, ci_prob: float = 0.9) -> AbilityPosterior:
    """The :class:`AbilityPosterior` of one system given ``answers`` (a Series of 0/1 indexed by
    item id; missing values are skipped)."""
    answers = answers.dropna()
    posterior = AbilityPosterior(bank)
    for position, correct in zip(bank.positions(answers.index), answers.to_numpy(), strict=True):
        posterior.add(position, int(correct))
    return posterior
