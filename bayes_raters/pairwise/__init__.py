"""Bounded latent values of items from pairwise and scalar judgements.

Online methods (Sakaguchi & Van Durme 2018): :class:`TrueSkill`, :class:`BoundedRA`
(bounded ranking aggregation), :class:`EASL` and :class:`DirectAssessment`, with HIT
selection by match quality; HIT conversion helpers; simulated annotators and the paper's
efficiency experiment (:mod:`bayes_raters.pairwise.simulate`); the Bayesian beta-latent
model (:func:`fit_pairwise`), second-stage pair designs (:func:`neighbour_pairs`) and the
planner of further comparisons (:func:`plan_pairwise`, :func:`top_k_probability`,
:func:`comparisons_to_stop`, :func:`plot_pairwise_plan`). Arena votes between models, at millions
of votes with style covariates and categories (:mod:`bayes_raters.pairwise.arena`: :func:`fit_arena`,
:class:`ArenaResult`), share the Rao-Kupper likelihood (:mod:`bayes_raters.pairwise.likelihood`) and
the connectivity check of the comparison graph (:func:`~bayes_raters.pairwise.model.comparison_components`).
"""

from bayes_raters.pairwise.arena import ArenaResult, ArenaSpec, build_arena_model, fit_arena, simulate_arena
from bayes_raters.pairwise.design import neighbour_pairs
from bayes_raters.pairwise.fit import fit_pairwise
from bayes_raters.pairwise.hits import hits_to_pairs, hits_to_scalars
from bayes_raters.pairwise.model import PairwiseSpec
from bayes_raters.pairwise.online import EASL, BoundedRA, DirectAssessment, OnlineMethod, TrueSkill
from bayes_raters.pairwise.plan import comparisons_to_stop, plan_pairwise, plot_pairwise_plan, top_k_probability
from bayes_raters.pairwise.result import PairwiseResult
from bayes_raters.pairwise.simulate import (
    ElicitationExperiment,
    SimulatedAnnotator,
    latent_values,
    outcome_probabilities,
    run_elicitation_experiment,
    simulate_judgements,
)

__all__ = [
    "ArenaResult",
    "ArenaSpec",
    "EASL",
    "BoundedRA",
    "DirectAssessment",
    "ElicitationExperiment",
    "OnlineMethod",
    "PairwiseResult",
    "PairwiseSpec",
    "SimulatedAnnotator",
    "TrueSkill",
    "build_arena_model",
    "comparisons_to_stop",
    "fit_arena",
    "fit_pairwise",
    "hits_to_pairs",
    "hits_to_scalars",
    "latent_values",
    "neighbour_pairs",
    "outcome_probabilities",
    "plan_pairwise",
    "plot_pairwise_plan",
    "run_elicitation_experiment",
    "simulate_arena",
    "simulate_judgements",
    "top_k_probability",
]
