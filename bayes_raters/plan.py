"""The earlier place of the PRMSE planner, now :mod:`bayes_raters.ctt.plan` (issue 37: every
planner lives in its family). Importing from here still works for one deprecation period and
warns (DeprecationWarning)."""

import warnings

from bayes_raters.ctt.plan import current_designs, parameter_draws, plan_double_scoring, plot_plan, simulated_errors

warnings.warn("bayes_raters.plan is now bayes_raters.ctt.plan; the old place will be removed.", DeprecationWarning, stacklevel=2)

__all__ = ["current_designs", "parameter_draws", "plan_double_scoring", "plot_plan", "simulated_errors"]
