"""Leaderboard-scale evaluation: IRT over the answers of many systems to many benchmark items.

:func:`fit_leaderboard` samples the hierarchical 1PL/2PL (:mod:`bayes_raters.leaderboard.model`) with a blocked
Metropolis-within-Gibbs sampler (:mod:`bayes_raters.leaderboard.sampler`) that scales to hundreds of systems and tens of
thousands of items; :class:`LeaderboardResult` gives the item table (difficulty,
discrimination, items that rank systems backwards or not at all) and the system table (ability,
rank interval, P(rank 1)); ``result.audit_table()`` (:mod:`bayes_raters.leaderboard.audit`) gives each
item's probability of being mis-keyed or answered at random, and its saturation.
:func:`build_leaderboard_model` is the same model in PyMC. A suite that mixes 0/1 items with multiple-choice items
where weak systems guess (3PL), graded items (a GRM) and bounded scores in [0, 1] (ordered beta) ranks the systems on one ability
(``fit_leaderboard(..., item_types=...)``, :mod:`bayes_raters.leaderboard.responses`; :func:`build_mixed_model` in PyMC).
A fitted leaderboard is an item bank: :func:`select_items` picks a small benchmark that reproduces
the full scores (:func:`estimate_scores`, :func:`compare_item_selections`), and
:class:`AdaptiveTest` / :func:`run_adaptive_test` test a new system item by item until its ability
or rank is settled. Arena votes between models are pairwise comparisons:
:func:`bayes_raters.pairwise.fit_arena`.
"""

from bayes_raters.leaderboard.ability import ItemBank
from bayes_raters.leaderboard.adaptive import AdaptiveTest, run_adaptive_test
from bayes_raters.leaderboard.fit import fit_leaderboard
from bayes_raters.leaderboard.mixed import build_mixed_model
from bayes_raters.leaderboard.model import LEADERBOARD_MODELS, LeaderboardSpec, answer_matrix, build_leaderboard_model
from bayes_raters.leaderboard.result import LeaderboardResult
from bayes_raters.leaderboard.selection import compare_item_selections, estimate_scores, select_items
from bayes_raters.leaderboard.simulate import plant_item_errors, simulate_leaderboard, simulate_mixed_leaderboard

__all__ = ["LEADERBOARD_MODELS", "AdaptiveTest",
           "ItemBank", "LeaderboardResult", "LeaderboardSpec", "answer_matrix", "build_leaderboard_model", "build_mixed_model",
           "compare_item_selections", "estimate_scores", "fit_leaderboard", "plant_item_errors", "run_adaptive_test", "select_items",
           "simulate_leaderboard", "simulate_mixed_leaderboard"]
