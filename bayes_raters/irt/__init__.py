"""Item response theory: 1PL/2PL/3PL/4PL in PyMC, item diagnostics, scoring, scale building;
graded response and generalized partial credit models for ordinal items; multidimensional
(compensatory) 2PL/3PL; the many-facet rater model (rater severity and consistency, prompt
difficulty) for ratings of responses to prompts."""

from bayes_raters.irt.facets import build_facets_model
from bayes_raters.irt.facets_fit import FacetsResult, fit_facets
from bayes_raters.irt.facets_simulate import simulate_facet_ratings
from bayes_raters.irt.diagnostics import empirical_reliability, information_curves, item_information
from bayes_raters.irt.fit import IRTResult, fit_irt
from bayes_raters.irt.scale import build_scale, compare_irt_models
from bayes_raters.irt.model import IRT_MODELS, build_irt_model, validate_responses
from bayes_raters.irt.multidim import build_mirt_model
from bayes_raters.irt.multidim_fit import MultidimensionalIRTResult
from bayes_raters.irt.polytomous import POLYTOMOUS_MODELS, build_polytomous_model
from bayes_raters.irt.polytomous_fit import PolytomousResult, fit_polytomous
from bayes_raters.irt.short_form import short_form
from bayes_raters.irt.simulate import simulate_responses

__all__ = [
    "FacetsResult",
    "IRT_MODELS",
    "IRTResult",
    "MultidimensionalIRTResult",
    "POLYTOMOUS_MODELS",
    "PolytomousResult",
    "build_facets_model",
    "build_irt_model",
    "build_mirt_model",
    "build_polytomous_model",
    "build_scale",
    "compare_irt_models",
    "empirical_reliability",
    "fit_facets",
    "fit_irt",
    "fit_polytomous",
    "information_curves",
    "item_information",
    "short_form",
    "simulate_facet_ratings",
    "simulate_responses",
    "validate_responses",
]
