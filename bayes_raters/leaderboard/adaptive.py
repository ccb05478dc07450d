"""Adaptive testing of a new system against a fitted item bank: which item next, and when to stop.

After each answer the new system's ability posterior (:mod:`bayes_raters.leaderboard.ability`:
the model's N(0, 1) prior and the bank's item draws, on a grid) is updated; the next item is the
unanswered one with the largest posterior-weighted Fisher information (``selection="information"``)
or one drawn at random (``"random"``, the baseline); the test stops when the ability's
``ci_prob`` interval is narrower than ``width``, or the rank interval among the bank's systems is
narrower than ``rank_width`` ranks, or after ``max_items``. The stopping rule does not bias the
posterior (it depends on the answers only through the posterior itself), so the interval at the
stop keeps its meaning: ``tests/leaderboard/test_adaptive.py`` checks that it covers the ability
estimated from the whole bank at the nominal rate on held-out simulated systems.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from bayes_raters.errors import InsufficientDataError, InvalidInputError
from bayes_raters.leaderboard.ability import MAX_DRAWS, AbilityPosterior, item_bank
from bayes_raters.results import check_ci_prob, seeded_rng

SELECTIONS = ("information", "random")


class AdaptiveTest:
    """One new system's adaptive test against a fitted bank (module docstring).

    Parameters
    ----------
    result : LeaderboardResult or ItemBank
        The fitted bank.
    selection : {"information", "random"}
        How :meth:`next_item` chooses.
    ci_prob : float
        Probability of the ability and rank intervals.
    max_draws : int
        Item draws kept from the bank.
    random_seed : int, numpy.random.Generator or None
        Seeds random selection and the rank draws.

    Examples
    --------
    >>> from bayes_raters.leaderboard import AdaptiveTest, fit_leaderboard, simulate_leaderboard
    >>> answers, _ = simulate_leaderboard(60, 400, random_seed=3)
    >>> test = AdaptiveTest(fit_leaderboard(answers, random_seed=3, progressbar=False))
    >>> item = test.next_item()
    >>> test.record(item, 1)
    >>> test.ability()["n_items"]
    1.0
    """

    def __init__(self, result, *, selection: str = "information", ci_prob: float = 0.9, max_draws: int = MAX_DRAWS,
                 random_seed=None):
        if selection not in SELECTIONS:
            raise InvalidInputError(f"selection={selection!r} is not known; use selection='information' or selection='random'.")
        check_ci_prob(ci_prob)
        self.bank = item_bank(result, max_draws)
        self.posterior = AbilityPosterior(self.bank)
        self.selection, self.ci_prob = selection, ci_prob
        self.rng = seeded_rng(random_seed)
        self._rows: list[dict] = []

    def next_item(self, among=None) -> str:
        """The id of the next item to give: unanswered, within ``among`` (ids the system can
        answer) when given."""
        candidates = np.ones(len(self.bank.items), bool)
        if among is not None:
            allowed = np.zeros_like(candidates)
            allowed[self.bank.positions(list(among))] = True
            candidates &= allowed
        candidates[self.posterior.answered] = False
        positions = np.flatnonzero(candidates)
        if positions.size == 0:
            raise InsufficientDataError("no item is left to give: every allowed item of the bank has been answered.")
        if self.selection == "random":
            return str(self.bank.items[self.rng.choice(positions)])
        return str(self.bank.items[positions[np.argmax(self.posterior.expected_information(positions))]])

    def record(self, item, correct) -> None:
        """Record the system's answer (1 right, 0 wrong) to ``item``."""
        position = int(self.bank.positions([item])[0])
        if position in self.posterior.answered:
            raise InvalidInputError(f"item {item!r} has been answered already; each bank item is given once.")
        self.posterior.add(position, correct)
        self._rows.append({"item": item, "correct": int(correct), **self.ability().to_dict()})

    def ability(self) -> pd.Series:
        """``theta_mean``, ``theta_sd``, ``theta_lower``, ``theta_upper`` and ``n_items`` now."""
        return self.posterior.summary(self.ci_prob)

    def rank(self) -> pd.Series:
        """``rank_mean``, ``rank_lower``, ``rank_upper`` among the bank's systems now (1 = best)."""
        return self.posterior.rank(self.ci_prob, random_seed=self.rng)

    def stop_reason(self, *, width: float | None = None, rank_width: float | None = None,
                    max_items: int | None = None) -> str | None:
        """Why the test should stop now (``"width"``, ``"rank"``, ``"max_items"``), or None."""
        if width is None and rank_width is None and max_items is None:
            raise InvalidInputError("give a stopping rule: width=..., rank_width=... or max_items=...")
        now = self.ability()
        if width is not None and now["theta_upper"] - now["theta_lower"] <= width:
            return "width"
        if rank_width is not None and self.posterior.answered:
            rank = self.rank()
            if rank["rank_upper"] - rank["rank_lower"] <= rank_width:
                return "rank"
        if max_items is not None and now["n_items"] >= max_items:
            return "max_items"
        return None

    def history(self) -> pd.DataFrame:
        """One row per answer: ``item``, ``correct`` and the ability after it."""
        columns = ["item", "correct", "theta_mean", "theta_sd", "theta_lower", "theta_upper", "n_items"]
        table = pd.DataFrame(self._rows, columns=columns)
        table["n_items"] = table["n_items"].astype(int)
        return table


def run_adaptive_test(result, answers, *, width: float | None = 0.5, rank_width: float | None = None,
                      max_items: int | None = None, selection: str = "information", ci_prob: float = 0.9,
                      max_draws: int = MAX_DRAWS, random_seed=None) -> pd.DataFrame:
    """Run an adaptive test for one system whose answers are known (a held-out system, or a
    simulation): items are given by ``selection`` among those in ``answers`` until a stopping rule
    holds (:meth:`AdaptiveTest.stop_reason`) or no item is left.

    Parameters
    ----------
    result : LeaderboardResult or ItemBank
        The fitted bank.
    answers : pandas.Series or mapping
        The system's answers (1/0) by item id; missing values are items it cannot answer.
    width, rank_width, max_items :
        Stopping rules: ability interval narrower than ``width``; rank interval narrower than
        ``rank_width`` ranks; ``max_items`` answers. At least one.
    selection, ci_prob, max_draws, random_seed :
        As in :class:`AdaptiveTest`.

    Returns
    -------
    pandas.DataFrame
        :meth:`AdaptiveTest.history`; ``attrs["stopped_by"]`` is ``"width"``, ``"rank"``,
        ``"max_items"`` or ``"bank exhausted"``.

    Examples
    --------
    >>> from bayes_raters.leaderboard import fit_leaderboard, run_adaptive_test, simulate_leaderboard
    >>> answers, _ = simulate_leaderboard(60, 400, random_seed=3)
    >>> held_out = answers["respondent"] == "sys0059"
    >>> bank = fit_leaderboard(answers[~held_out], random_seed=3, progressbar=False)
    >>> history = run_adaptive_test(bank, answers[held_out].set_index("item")["correct"], width=1.0)
    >>> history.attrs["stopped_by"], len(history) < 100
    ('width', True)
    """
    answers = pd.Series(answers if not isinstance(answers, Mapping) else dict(answers)).dropna()
    if answers.empty:
        raise InsufficientDataError("the system has no answers to give; pass its answers by item id.")
    test = AdaptiveTest(result, selection=selection, ci_prob=ci_prob, max_draws=max_draws, random_seed=random_seed)
    available = list(answers.index)
    stopped_by = test.stop_reason(width=width, rank_width=rank_width, max_items=max_items)
    while stopped_by is None:
        if len(test.posterior.answered) == len(available):
            stopped_by = "bank exhausted"
            break
        item = test.next_item(among=available)
        test.record(item, int(answers[item]))
        stopped_by = test.stop_reason(width=width, rank_width=rank_width, max_items=max_items)
    history = test.history()
    history.attrs["stopped_by"] = stopped_by
    return history
