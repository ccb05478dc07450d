"""Item response theory, one sub-package per family, each with the same file roles (``model``:
the PyMC model; ``fit``: ``fit_*``; ``result``: the result class; ``simulate``): ``binary`` (1PL/2PL/3PL/4PL
for right/wrong answers; ``marginal`` integrates the abilities out), ``polytomous`` (graded
response and generalized partial credit models for ordinal items; ``kernel`` their compiled
category probabilities), ``multidimensional`` (compensatory 2PL/3PL). Shared by the families:
item diagnostics and information (``diagnostics``, ``plots``), local dependence (Yen's Q3),
slopes that the data contradict (``slopes``), scale building and model comparison (``scale``),
short forms (``short_form``). The many-facet rater model is its own family, :mod:`bayes_raters.facets`."""

from bayes_raters.irt.binary.fit import fit_irt
from bayes_raters.irt.binary.model import IRT_MODELS, IRTSpec, build_irt_model, validate_responses
from bayes_raters.irt.binary.result import IRTResult
from bayes_raters.irt.binary.simulate import simulate_responses
from bayes_raters.irt.diagnostics import empirical_reliability, information_curves, item_information
from bayes_raters.irt.multidimensional.model import MultidimensionalSpec, build_mirt_model
from bayes_raters.irt.multidimensional.result import MultidimensionalIRTResult
from bayes_raters.irt.multidimensional.simulate import simulate_factor_answers
from bayes_raters.irt.polytomous.fit import fit_polytomous
from bayes_raters.irt.polytomous.model import POLYTOMOUS_MODELS, PolytomousSpec, build_polytomous_model
from bayes_raters.irt.polytomous.result import PolytomousResult
from bayes_raters.irt.polytomous.simulate import simulate_ratings
from bayes_raters.irt.scale import build_scale, compare_irt_models
from bayes_raters.irt.short_form import short_form

__all__ = [
    "IRT_MODELS",
    "IRTResult",
    "IRTSpec",
    "MultidimensionalIRTResult",
    "MultidimensionalSpec",
    "POLYTOMOUS_MODELS",
    "PolytomousResult",
    "PolytomousSpec",
    "build_irt_model",
    "build_mirt_model",
    "build_polytomous_model",
    "build_scale",
    "compare_irt_models",
    "empirical_reliability",
    "fit_irt",
    "fit_polytomous",
    "information_curves",
    "item_information",
    "short_form",
    "simulate_factor_answers",
    "simulate_ratings",
    "simulate_responses",
    "validate_responses",
]
