"""Classical test theory: true scores with rater error, PRMSE, and the Loukina et al. design."""

from bayes_raters.ctt.prmse import (
    mse_true,
    prmse_table,
    prmse_true,
    true_score_variance,
    variance_of_errors,
)
from bayes_raters.ctt.simulate import (
    RATER_ERROR_SDS,
    SYSTEM_R2,
    double_scored_subset,
    ratings_to_long,
    simulate_dataset,
    system_scores_to_long,
)

__all__ = [
    "RATER_ERROR_SDS",
    "SYSTEM_R2",
    "double_scored_subset",
    "mse_true",
    "prmse_table",
    "prmse_true",
    "ratings_to_long",
    "simulate_dataset",
    "system_scores_to_long",
    "true_score_variance",
    "variance_of_errors",
]

# The PyMC model and its results are imported on first use (PEP 562), so that the closed
# form and the command line's --help and --version do not pay for importing PyMC (seconds).
_LAZY = {
    "TrueScoreSpec": "bayes_raters.ctt.model",
    "build_true_score_model": "bayes_raters.ctt.model",
    "TrueScoreResult": "bayes_raters.ctt.result",
    "fit_true_score": "bayes_raters.ctt.fit",
}
__all__ += list(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
