"""The many-facet rater model: ratings of responses to prompts by raters who differ in severity
and consistency, prompts that differ in difficulty, abilities integrated out on a quadrature
rule; PRMSE of system scores against the latent true score.

Files by role: ``model`` (the PyMC model and its layout), ``kernel`` (the marginal likelihood and
its gradient as one compiled Op), ``fit`` (:func:`fit_facets`), ``result`` (:class:`FacetsResult`),
``draws`` (posterior draws of abilities, true scores and fit statistics), ``adaptive`` (the
per-response adaptive quadrature rule), ``simulate`` (essay designs and recovery). Card:
``models/irt_facets.md``.
"""

from bayes_raters.facets.fit import fit_facets
from bayes_raters.facets.model import FacetsSpec, build_facets_model
from bayes_raters.facets.result import FacetsResult
from bayes_raters.facets.simulate import simulate_facet_ratings

__all__ = ["FacetsResult", "FacetsSpec", "build_facets_model", "fit_facets", "simulate_facet_ratings"]
