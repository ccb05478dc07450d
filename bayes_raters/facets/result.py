r"""The many-facet rater result: rater, prompt and response tables, PRMSE per system, posterior
predictive ratings and LOO of a fitted :func:`~bayes_raters.facets.fit_facets` (the contract of
:mod:`bayes_raters.results`).

Flags in :meth:`FacetsResult.rater_table`: ``erratic`` when the posterior mean infit or outfit
mean square exceeds 1.5 (FACETS' upper limit of productive fit) or, with ``consistency=True``,
when :math:`P(a_r / e^{\mu_a} < 0.6) > 0.9` (the rater's consistency relative to the typical
rater, column ``p_inconsistent``); ``too predictable`` when the mean infit is below 0.5. The
consistency rule matters most: with ``a_r`` free the model absorbs an erratic rater's noise, so
its mean squares stay near 1 (1.10 for a planted a = 0.25 among raters near 1.2). The 0.6 and
0.9 were set on one simulation (600 responses, 10 raters, seed 1: planted erratic rater's
probability 0.98, the least consistent ordinary rater 0.30); ``make validate`` counts how often
the planted rater and any other rater are flagged over fresh replications. ``severe`` / ``lenient`` (column ``severity_direction``, a description) when the
``ci_prob`` interval of the severity excludes 0: a description, since the model adjusts for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.errors import InvalidInputError
from bayes_raters.facets.draws import (
    draw_parameters,
    fit_statistics,
    parameter_arrays,
    rating_logits,
)
from bayes_raters.facets.model import FacetsSpec, facet_layout
from bayes_raters.irt.slopes import rater_rest_correlations, slope_reason
from bayes_raters.persistence import plain_value
from bayes_raters.results import FitResult, draw_categories, interval_table, thinned_posterior
from bayes_raters.sampling import ConvergenceReport

ERRATIC_MEAN_SQUARE = 1.5
PREDICTABLE_MEAN_SQUARE = 0.5
ERRATIC_CONSISTENCY = 0.6
ERRATIC_PROBABILITY = 0.9
FIT_DRAWS = 200  # posterior draws behind the fit statistics


@dataclass(repr=False, kw_only=True)
class FacetsResult(FitResult):
    """A fitted many-facet model: ``idata`` (posterior: ``severity``, ``a`` (consistency) per
    rater, ``difficulty`` per prompt, ``thresholds``, ``theta`` and ``true_score`` per response,
    ``prmse`` per system when systems were given; sample_stats; log_likelihood per response;
    observed_data ``category`` per rating; constant_data ids per rating), the validated
    ``table``, the ``scores`` in category order, the ``systems`` table (or None), whether rater
    ``consistency`` was estimated, and the convergence ``report``."""

    idata: xr.DataTree
    spec: FacetsSpec
    table: pd.DataFrame
    scores: list
    systems: pd.DataFrame | None
    report: ConvergenceReport

    summary_var_names = ("severity", "a", "difficulty", "thresholds", "sigma_severity", "sigma_difficulty",
                         "mu_log_a", "sigma_log_a", "prmse")
    family = "many-facet rater model"

    @property
    def model(self) -> str:
        """The model's name: ``"many_facet"`` (a consistency per rater) or ``"many_facet_rasch"``
        (``consistency=False``: one discrimination for all raters)."""
        return "many_facet" if self.spec.consistency else "many_facet_rasch"

    @property
    def layout(self):
        """The ratings' design (responses, prompts, raters, categories) as index arrays."""
        return facet_layout(self.table, self.scores)

    def _size(self) -> str:
        return (f"{self.table['response'].nunique()} responses, {self.table['rater'].nunique()} raters, "
                f"{self.table['prompt'].nunique()} prompts, {len(self.table)} ratings")

    def rater_table(self, ci_prob: float = 0.9, n_draws: int = FIT_DRAWS) -> pd.DataFrame:
        """One row per rater: number of ratings, mean score, severity and consistency ``a``
        (mean, ``ci_prob`` interval), ``p_inconsistent`` (module docstring), infit and
        outfit mean squares (posterior mean and interval, from about ``n_draws`` draws), worst
        R-hat and bulk ESS of its parameters, ``severity_direction`` (``severe`` / ``lenient`` / empty:
        a description, not a flag), the rater-rest correlation (``rest_corr``, ``rest_corr_upper``,
        ``contradicts_slope``: :func:`bayes_raters.irt.slopes.rater_rest_correlations`), and the flags
        as every result's tables give them: ``flagged`` and its ``reasons`` (``erratic``, ``too
        predictable``, a contradicted slope; module docstring)."""
        severity = interval_table(self.posterior["severity"], ci_prob, ("rater",))
        a = interval_table(self.posterior["a"], ci_prob, ("rater",))
        frame = pd.DataFrame(index=severity.index)
        frame["n_ratings"] = self.table.groupby("rater", sort=False).size()
        frame["mean_score"] = self.table.groupby("rater", sort=False)["score"].mean()
        frame = frame.join(severity.add_prefix("severity_")).join(a[["mean", "lower", "upper"]].add_prefix("a_"))
        relative = self.posterior["a"] / np.exp(self.posterior["mu_log_a"])
        frame["p_inconsistent"] = (relative < ERRATIC_CONSISTENCY).mean(("chain", "draw")).values
        thin = thinned_posterior(self.posterior, n_draws).stack(sample=("chain", "draw"))
        infit, outfit = fit_statistics(thin, self.layout)
        tail = (1 - ci_prob) / 2
        for name, values in (("infit", infit), ("outfit", outfit)):
            frame[f"{name}_mean"] = values.mean(axis=0)
            frame[f"{name}_lower"], frame[f"{name}_upper"] = np.quantile(values, [tail, 1 - tail], axis=0)
        names = [n for n in ("severity", "a") if n in self.posterior and self.posterior[n].std() > 0]
        checks = az.rhat(self.posterior[names]).to_dataframe().max(axis=1)
        ess = az.ess(self.posterior[names], method="bulk").to_dataframe().min(axis=1)
        frame["r_hat"], frame["ess_bulk"] = checks.reindex(frame.index).values, ess.reindex(frame.index).values
        erratic = (frame["infit_mean"] > ERRATIC_MEAN_SQUARE) | (frame["outfit_mean"] > ERRATIC_MEAN_SQUARE)
        if self.spec.consistency:
            erratic |= frame["p_inconsistent"] > ERRATIC_PROBABILITY
        fit = np.where(erratic, "erratic", np.where(frame["infit_mean"] < PREDICTABLE_MEAN_SQUARE, "too predictable", ""))
        frame["severity_direction"] = np.where(frame["severity_lower"] > 0, "severe", np.where(frame["severity_upper"] < 0, "lenient", ""))
        frame = frame.join(rater_rest_correlations(self.table))
        reasons = [[r for r in (flag, slope_reason(row, "rater-rest")) if r] for flag, (_, row) in zip(fit, frame.iterrows())]
        frame["flagged"] = [bool(r) for r in reasons]
        frame["reasons"] = ["; ".join(r) for r in reasons]
        return frame

    def prompt_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per prompt: responses, ratings, mean score, difficulty (mean, SD, interval)."""
        frame = interval_table(self.posterior["difficulty"], ci_prob, ("prompt",)).add_prefix("difficulty_")
        grouped = self.table.groupby("prompt", sort=False)
        frame.insert(0, "mean_score", grouped["score"].mean())
        frame.insert(0, "n_ratings", grouped.size())
        frame.insert(0, "n_responses", grouped["response"].nunique())
        return frame

    def threshold_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per threshold of the shared rating scale (between two adjacent scores):
        ``thresholds_mean``, ``thresholds_sd``, ``thresholds_lower``, ``thresholds_upper``."""
        return interval_table(self.posterior["thresholds"], ci_prob, ("threshold",)).add_prefix("thresholds_")

    def response_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per response: ability theta and true score (mean, SD, interval) and its
        number of ratings."""
        theta = interval_table(self.posterior["theta"], ci_prob, ("response",)).add_prefix("theta_")
        true = interval_table(self.posterior["true_score"], ci_prob, ("response",)).add_prefix("true_score_")
        frame = theta.join(true)
        frame["n_ratings"] = self.table.groupby("response", sort=False).size()
        return frame

    def prmse_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """PRMSE of every system against the true score from the draws: ``prmse_mean``,
        ``prmse_sd``, ``prmse_lower``, ``prmse_upper`` (equal-tailed ``ci_prob`` interval)."""
        if "prmse" not in self.posterior:
            raise InvalidInputError("PRMSE needs system scores: fit_facets(ratings, system_scores=...).")
        return interval_table(self.posterior["prmse"], ci_prob, ("system",)).add_prefix("prmse_")

    def compare_with_true_score(self, true_score_result, system=None) -> pd.DataFrame:
        """``az.compare`` (LOO over responses) of this fit and an ordinal true-score fit
        (:func:`bayes_raters.ctt.fit_true_score` with ``observation="ordinal"``) of the
        same ratings and system scores. ``system`` picks the fit of a result with separate
        fits (default: its only one)."""
        if getattr(true_score_result, "spec", None) is None or true_score_result.spec.observation != "ordinal":
            raise InvalidInputError("compare with a fit_true_score(..., observation='ordinal') result.")
        if self.systems is None:
            raise InvalidInputError(
                "the true-score model's likelihood holds the system scores too: refit with "
                "fit_facets(ratings, system_scores) so that both fits describe the same data."
            )
        true_score_result.compute_log_likelihood()
        other = true_score_result.fit_tree(system)
        mine = self.idata["log_likelihood"]["response"].values
        theirs = other["log_likelihood"]["response"].values
        if set(map(str, mine)) != set(map(str, theirs)):
            raise InvalidInputError(
                f"the two fits cover different responses ({len(mine)} and {len(theirs)}): give both the same ratings and "
                "the same system's scores for every response."
            )
        trees = {"many-facet": self.idata, "true score (ordinal)": other}
        return az.compare(trees)

    def _saved_config(self) -> dict:
        systems = None if self.systems is None else {c: [plain_value(v) for v in self.systems[c]] for c in self.systems}
        return {"spec": self.spec.to_dict(), "scores": self.scores, "systems": systems, "report": self.report.to_dict()}

    @classmethod
    def _from_saved(cls, tree: xr.DataTree, config: dict) -> FacetsResult:
        ids = tree["constant_data"].to_dataset()
        table = pd.DataFrame({c: ids[c].values for c in ("response", "prompt", "rater")})
        table["category"] = tree["observed_data"]["category"].values
        table["score"] = np.asarray(config["scores"])[table["category"]]
        systems = None if config["systems"] is None else pd.DataFrame(config["systems"])
        return cls(idata=tree, spec=FacetsSpec.from_dict(config["spec"]), table=table, scores=config["scores"], systems=systems,
                   report=ConvergenceReport(**config["report"]))

    def _posterior_predictive(self, draws: xr.Dataset, rng: np.random.Generator) -> xr.Dataset:
        """Replicated categories: each rating drawn from its category probabilities at the
        draw's parameters and the response's ability."""
        stacked, layout = draws.stack(sample=("chain", "draw")), self.layout
        out = np.empty((stacked.sizes["sample"], len(self.table)), dtype=np.int16)
        params = parameter_arrays(stacked)
        for s in range(stacked.sizes["sample"]):
            out[s] = draw_categories(np.exp(rating_logits(*draw_parameters(params, s), params["theta"][s], layout)), rng)
        shape = (draws.sizes["chain"], draws.sizes["draw"], len(self.table))
        coords = {"chain": draws["chain"].values, "draw": draws["draw"].values}
        return xr.Dataset({"category": (("chain", "draw", "rating"), out.reshape(shape))}, coords=coords)

