"""The true-score result of :func:`~bayes_raters.ctt.fit_true_score` (the contract of
:mod:`bayes_raters.results`): PRMSE and its parts per system beside the closed form, true-score
draws and tables, one fit's groups (:meth:`TrueScoreResult.fit_tree`), LOO."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr

from bayes_raters.ctt import protocol
from bayes_raters.ctt.model import (
    TrueScoreSpec,
    build_from_data,
    model_data,
)
from bayes_raters.errors import InvalidInputError
from bayes_raters.persistence import dataset_to_frame
from bayes_raters.results import FitResult, interval_table, worst_report
from bayes_raters.sampling import ConvergenceReport

#: The columns of a posterior interval that take the quantity as prefix (``prmse_mean`` ...).
INTERVAL_COLUMNS = ("mean", "sd", "lower", "upper")

QUANTITIES = {  # posterior variable -> closed-form column
    "prmse": "prmse",
    "mse_true": "mse_true",
    "true_score_variance": "true_score_variance",
    "error_variance": "error_variance",
}


@dataclass(repr=False, kw_only=True)
class TrueScoreResult(protocol.TrueScoreGroups, FitResult):
    """A fitted true-score model (the result protocol of :mod:`bayes_raters.results`).

    ``idata``: DataTree with ``posterior`` (dims chain, draw, system, ...), ``sample_stats``,
    ``observed_data`` / ``constant_data`` (:mod:`bayes_raters.ctt.protocol`), ``log_likelihood``
    (per response, normal observations; after :meth:`compute_log_likelihood`), ``closed_form``
    (Haberman estimates per system), and the validated input tables (``ratings``,
    ``system_scores``). ``reports``: convergence per fit (per system, or one ``"joint"``
    entry); :attr:`convergence` is their worst case.
    By default every system has its own fit, and ``system`` is then a dimension of every
    group: :meth:`fit_tree` gives one fit's groups without it (``az.plot_energy`` and
    ``az.loo`` read one fit at a time).
    """

    idata: xr.DataTree
    spec: TrueScoreSpec
    reports: dict

    summary_var_names = (
        "prmse", "prmse_population", "mse_true", "true_score_variance", "error_variance", "mu", "sigma_T", "sigma_e",
        "sigma_rater", "sigma_rater_offset", "rater_offset", "alpha", "beta", "tau", "cutpoints",
    )
    family = "true-score model"

    @property
    def model(self) -> str:
        """The model's name: its observation model, ``"normal"`` or ``"ordinal"``."""
        return self.spec.observation

    @property
    def convergence(self) -> ConvergenceReport:
        """The worst case over every fit (per-fit figures: :meth:`convergence_table`)."""
        return worst_report(self.reports.values())

    def _size(self) -> str:
        rated = self.idata["constant_data"]["rating_response"] if "constant_data" in self.idata.children else None
        responses = "" if rated is None else f"{len(np.unique(rated.values))} responses, "
        fits = "one joint fit" if self.spec.joint else f"{len(self.reports)} system fit(s)"
        return f"{self.spec.observation} observations, {responses}{fits}"

    @functools.cached_property
    def closed_form(self) -> pd.DataFrame:
        """Haberman's closed-form estimates per system (cached)."""
        return self.idata["closed_form"].to_dataset().to_dataframe()

    @property
    def ratings(self) -> pd.DataFrame:
        """The validated human ratings the model was fitted to (long, canonical columns)."""
        return dataset_to_frame(self.idata["ratings"].to_dataset())

    @property
    def system_scores(self) -> pd.DataFrame:
        """The validated system scores the model was fitted to (long, canonical columns)."""
        return dataset_to_frame(self.idata["system_scores"].to_dataset())

    def convergence_table(self) -> pd.DataFrame:
        """One row per fit: max R-hat, min bulk/tail ESS, divergences, converged."""
        rows = {name: {**report.to_dict(), "converged": report.converged} for name, report in self.reports.items()}
        return pd.DataFrame.from_dict(rows, orient="index")

    def _interval_table(self, name: str, ci_prob: float) -> pd.DataFrame:
        """``mean, sd, lower, upper, r_hat, ess_bulk`` of posterior variable ``name`` per system."""
        draws = self.posterior[[name]]
        table = interval_table(draws[name], ci_prob, ("system",))
        table["r_hat"] = az.rhat(draws)[name].to_series()
        table["ess_bulk"] = az.ess(draws, method="bulk")[name].to_series()
        table.index.name = "system"
        return table

    def prmse_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """Posterior PRMSE per system: ``prmse_mean, prmse_sd, prmse_lower, prmse_upper``
        (equal-tailed ``ci_prob`` interval; the ``<param>_mean`` pattern of every table),
        ``closed_form`` (Haberman), ``closed_form_in_interval``, ``r_hat``, ``ess_bulk`` of PRMSE
        and ``converged`` (all checks of that fit)."""
        table = self._interval_table("prmse", ci_prob).rename(columns=lambda c: f"prmse_{c}" if c in INTERVAL_COLUMNS else c)
        closed = self.closed_form["prmse"].reindex(table.index)
        table.insert(4, "closed_form", closed)
        table.insert(5, "closed_form_in_interval", (closed >= table["prmse_lower"]) & (closed <= table["prmse_upper"]))
        table["converged"] = [self._report_for(s).converged for s in table.index]
        return table

    def summary_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """Posterior of PRMSE, MSE against the true score, true-score variance and error
        variance per system, with the closed-form estimate of each beside it. A long table (one
        row per system and quantity, the quantity in the index), so its columns are ``mean``,
        ``sd``, ``lower``, ``upper`` as in ``az.summary``, not ``<param>_mean``."""
        parts = []
        for name, column in QUANTITIES.items():
            table = self._interval_table(name, ci_prob)
            table["closed_form"] = self.closed_form[column].reindex(table.index)
            parts.append(table.assign(quantity=name).set_index("quantity", append=True))
        return pd.concat(parts).sort_index(level="system", sort_remaining=False)

    def _report_for(self, system) -> ConvergenceReport:
        return self.reports.get("joint") or self.reports[str(system)]

    def plot_prmse(self, ci_prob: float = 0.9, ax=None):
        """Per system: posterior mean, 50% and ``ci_prob`` intervals of PRMSE, with the
        closed-form value marked. Returns the matplotlib Axes."""
        import matplotlib.pyplot as plt

        inner = self._interval_table("prmse", 0.5)
        outer = self.prmse_table(ci_prob)
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 0.5 + 0.45 * len(outer)))
        y = np.arange(len(outer))[::-1]
        ax.hlines(y, outer["prmse_lower"], outer["prmse_upper"], color="tab:blue", lw=1.5, label=f"{ci_prob:.0%} interval")
        ax.hlines(y, inner["lower"], inner["upper"], color="tab:blue", lw=4, label="50% interval")
        ax.plot(outer["prmse_mean"], y, "o", color="white", mec="tab:blue", label="posterior mean")
        ax.plot(outer["closed_form"], y, "x", color="tab:red", ms=8, mew=2, label="closed form")
        ax.set_yticks(y, [str(s) for s in outer.index])
        ax.set_xlabel("PRMSE")
        ax.legend(loc="best", fontsize="small")
        return ax

    def response_table(self, system=None, ci_prob: float = 0.9, n_draws: int = 1000, random_seed=None) -> pd.DataFrame:
        """Each response's true score: ``true_score_mean``, ``_sd``, ``_lower``, ``_upper`` (the
        ``<param>_mean`` pattern and ``ci_prob`` interval of every family's unit table), from
        ``n_draws`` draws of :meth:`true_score_draws` (``system``: whose fit, as there)."""
        draws = self.true_score_draws(system, n_draws=n_draws, random_seed=random_seed).transpose("sample", "response")
        values = xr.DataArray(draws.values[None], dims=("chain", "draw", "response"), coords={"response": draws["response"].values})
        return interval_table(values, ci_prob, ("response",)).add_prefix("true_score_")

    def true_score_draws(self, system=None, n_draws: int = 100, random_seed=None) -> xr.DataArray:
        """Draws of T_i from their exact conditional given the data and a posterior draw
        (normal models), or the sampled T_i (ordinal). Dims ``(sample, response)``.
        In the separate model T is conditioned on one system's scores: name it."""
        systems = list(self.posterior["system"].values)
        if self.spec.joint:
            system = None
        elif system is None and len(systems) == 1:
            system = systems[0]
        elif system not in systems:
            raise InvalidInputError(f"pick the system whose model to use: system= one of {systems}.")
        data = model_data(self.ratings, self.system_scores, self.spec, None if system is None else [system])
        model = build_from_data(data, self.spec)
        names = [v.name for v in model.free_RVs + model.deterministics if v.name in self.posterior]
        draws = protocol.draws_for_model(self.posterior, model, names, system)
        rng = np.random.default_rng(random_seed)
        stacked = draws.stack(sample=("chain", "draw"))
        keep = np.sort(rng.choice(stacked.sizes["sample"], size=min(n_draws, stacked.sizes["sample"]), replace=False))
        if self.spec.observation == "ordinal":
            return protocol.ordinal_true_scores(data, self.spec, stacked.isel(sample=keep), rng)
        conditional = pm.compute_deterministics(
            draws, var_names=["true_score_mean", "true_score_sd"], model=model, progressbar=False
        ).stack(sample=("chain", "draw")).isel(sample=keep)
        noise = rng.standard_normal(conditional["true_score_mean"].shape)
        result = conditional["true_score_mean"] + conditional["true_score_sd"] * noise
        return result.transpose("sample", "response").rename("true_score")

    def _saved_config(self) -> dict:
        return {"spec": self.spec.to_dict(), "reports": {k: r.to_dict() for k, r in self.reports.items()}}

    @classmethod
    def _from_saved(cls, tree: xr.DataTree, config: dict) -> TrueScoreResult:
        reports = {k: ConvergenceReport(**v) for k, v in config["reports"].items()}
        return cls(idata=tree, spec=TrueScoreSpec.from_dict(config["spec"]), reports=reports)

