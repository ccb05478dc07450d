"""bayes_raters: Bayesian models of human ratings, every score a true value plus rater error.

The families, one package each: true scores and PRMSE (:mod:`bayes_raters.ctt`), pairwise,
slider and strength judgements, online elicitation and arena votes (:mod:`bayes_raters.pairwise`),
item response theory: binary, ordinal and multidimensional (:mod:`bayes_raters.irt`), the
many-facet rater model (:mod:`bayes_raters.facets`), IRT at leaderboard size
(:mod:`bayes_raters.leaderboard`) and inter-rater agreement (:mod:`bayes_raters.agreement`). This
top level re-exports the foundation: errors and warnings, the long-format data layer, agreement
metrics and the closed-form PRMSE estimators.
"""

from importlib.metadata import PackageNotFoundError, version

from bayes_raters.errors import (
    BayesRatersError,
    BayesRatersWarning,
    BoundWarning,
    ConvergenceError,
    ConvergenceWarning,
    InputWarning,
    InsufficientDataError,
    InvalidInputError,
    PersistenceError,
    QuadratureWarning,
    RoundingWarning,
    SlopeWarning,
    SmallSampleWarning,
)

try:
    __version__ = version("bayes_raters")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0+unknown"

#: Re-exported name -> the module that defines it, imported on first use (PEP 562), so that
#: ``import bayes_raters.errors`` or ``bayes-raters --help`` does not load pandas and SciPy.
_LAZY = {
    **dict.fromkeys(
        ["degradation", "pearson_r", "quadratic_weighted_kappa", "r2_score", "standardized_mean_difference"],
        "bayes_raters.agreement",
    ),
    **dict.fromkeys(
        ["double_scored_subset", "mse_true", "prmse_table", "prmse_true", "simulate_dataset",
         "true_score_variance", "variance_of_errors"],
        "bayes_raters.ctt",
    ),
    **dict.fromkeys(
        ["long_to_wide", "validate_ratings", "validate_system_scores", "wide_systems_to_long", "wide_to_long"],
        "bayes_raters.data",
    ),
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'bayes_raters' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "BayesRatersError",
    "BayesRatersWarning",
    "BoundWarning",
    "ConvergenceError",
    "ConvergenceWarning",
    "InputWarning",
    "InsufficientDataError",
    "InvalidInputError",
    "PersistenceError",
    "QuadratureWarning",
    "RoundingWarning",
    "SlopeWarning",
    "SmallSampleWarning",
    "__version__",
    "degradation",
    "double_scored_subset",
    "long_to_wide",
    "mse_true",
    "pearson_r",
    "prmse_table",
    "prmse_true",
    "quadratic_weighted_kappa",
    "r2_score",
    "simulate_dataset",
    "standardized_mean_difference",
    "true_score_variance",
    "validate_ratings",
    "validate_system_scores",
    "variance_of_errors",
    "wide_systems_to_long",
    "wide_to_long",
]
