"""LLM judges and automatic metrics calibrated against noisy human raters: each evaluated
system's mean true score, differences and ranks with intervals, each judge's calibration, bias
by system and worth in human ratings, beside the baselines users run today (humans alone, the
judge alone, PPI, PPI++).

Files by role: ``data`` (the three input tables, validated), ``model`` (the PyMC model, true
scores integrated out; its algebra in ``marginal`` and ``groups``, the biases and rater
effects integrated out in ``biases``, ordinal human ratings in ``ordinal``), ``fit`` (:func:`fit_judges`), ``result`` (:class:`JudgesResult`),
``checks`` (replicates and the human ratings' independence), ``baselines`` (PPI and the others),
``simulate`` (designs not drawn from the priors), ``plan`` (how many human ratings to buy, and
of which responses). Card: ``models/judges.md``.
"""

from bayes_raters.judges.baselines import baseline_table, ppi_mean
from bayes_raters.judges.data import JudgesData, judges_data
from bayes_raters.judges.fit import fit_judges
from bayes_raters.judges.model import JudgesSpec, build_judges_model
from bayes_raters.judges.plan import next_responses, plan_human_ratings
from bayes_raters.judges.result import JudgesResult
from bayes_raters.judges.simulate import simulate_judges

__all__ = ["JudgesData", "JudgesResult", "JudgesSpec", "baseline_table", "build_judges_model", "fit_judges", "judges_data", "next_responses",
           "plan_human_ratings", "ppi_mean", "simulate_judges"]
