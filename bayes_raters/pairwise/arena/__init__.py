"""Arena-scale pairwise votes: the Rao-Kupper model with ties, style covariates and categories
(:mod:`~bayes_raters.pairwise.arena.model`), its log posterior with exact derivatives
(:mod:`~bayes_raters.pairwise.arena.posterior`), importance-sampled Laplace draws
(:mod:`~bayes_raters.pairwise.arena.laplace`), :func:`fit_arena` and :class:`ArenaResult`."""

from bayes_raters.pairwise.arena.fit import fit_arena
from bayes_raters.pairwise.arena.model import ArenaSpec, build_arena_model, prepare_votes
from bayes_raters.pairwise.arena.result import ArenaResult
from bayes_raters.pairwise.arena.simulate import simulate_arena

__all__ = ["ArenaResult", "ArenaSpec", "build_arena_model", "fit_arena", "prepare_votes", "simulate_arena"]
