"""Leaderboard-scale evaluation: IRT over the answers of many systems to many benchmark items.

:func:`fit_leaderboard` samples the hierarchical 1PL/2PL (:mod:`bayes_raters.leaderboard.model`) with a blocked
Metropolis-within-Gibbs sampler (:mod:`bayes_raters.leaderboard.sampler`) that scales to hundreds of systems and tens of
thousands of items; :class:`LeaderboardResult` gives the item table (difficulty,
discrimination, items that rank systems backwards or not at all) and the system table (ability,
rank interval, P(rank 1)). :func:`build_leaderboard_model` is the same model in PyMC.
"""

from bayes_raters.leaderboard.fit import fit_leaderboard
from bayes_raters.leaderboard.model import LEADERBOARD_MODELS, answer_matrix, build_leaderboard_model
from bayes_raters.leaderboard.result import LeaderboardResult
from bayes_raters.leaderboard.simulate import simulate_leaderboard

__all__ = ["LEADERBOARD_MODELS", "LeaderboardResult", "answer_matrix", "build_leaderboard_model", "fit_leaderboard",
           "simulate_leaderboard"]
