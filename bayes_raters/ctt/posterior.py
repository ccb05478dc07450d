"""The earlier place of the true-score fit and its result, now :mod:`bayes_raters.ctt.fit`
(:func:`fit_true_score`) and :mod:`bayes_raters.ctt.result` (:class:`TrueScoreResult`): every
family has the same file roles (issue 37). Importing from here still works for one deprecation
period and warns (DeprecationWarning)."""

import warnings

from bayes_raters.ctt.fit import checked_variables, fit_true_score, fit_true_score_model, warn_if_rounding_dominates
from bayes_raters.ctt.result import TrueScoreResult

warnings.warn("bayes_raters.ctt.posterior is now bayes_raters.ctt.fit (fit_true_score) and bayes_raters.ctt.result "
              "(TrueScoreResult); the old place will be removed.", DeprecationWarning, stacklevel=2)

__all__ = ["TrueScoreResult", "checked_variables", "fit_true_score", "fit_true_score_model", "warn_if_rounding_dominates"]
