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

from bayes_raters.ctt.model import TrueScoreSpec, build_true_score_model  # noqa: E402
from bayes_raters.ctt.posterior import TrueScoreResult, fit_true_score_model  # noqa: E402

__all__ += ["TrueScoreResult", "TrueScoreSpec", "build_true_score_model", "fit_true_score_model"]
