"""Agreement: between a system and human scores (``scores``), and among human raters.

Among raters, from long ``(response, rater, score)`` ratings on any design: Krippendorff's
alpha (:func:`krippendorff_alpha`), Cohen's kappa (:func:`cohens_kappa`), Fleiss' kappa
(:func:`fleiss_kappa`), the six intraclass correlations (:func:`intraclass_correlation`), and
all that fit the data side by side with classical, bootstrap and posterior intervals
(:func:`agreement_table`).
"""

from bayes_raters.agreement.alpha import krippendorff_alpha
from bayes_raters.agreement.icc import intraclass_correlation
from bayes_raters.agreement.kappa import cohens_kappa, fleiss_kappa
from bayes_raters.agreement.scores import (
    degradation,
    eta_squared,  # noqa: F401  (importable here as before; documented in scores)
    kendalls_w,  # noqa: F401  (importable here as before; documented in scores)
    pearson_r,
    quadratic_weighted_kappa,
    r2_score,
    standardized_mean_difference,
)
from bayes_raters.agreement.table import agreement_table

__all__ = [
    "agreement_table",
    "cohens_kappa",
    "degradation",
    "fleiss_kappa",
    "intraclass_correlation",
    "krippendorff_alpha",
    "pearson_r",
    "quadratic_weighted_kappa",
    "r2_score",
    "standardized_mean_difference",
]
