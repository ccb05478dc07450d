"""The multidimensional IRT result: loadings (raw and standardized), item, correlation and
respondent tables, posterior predictive answers and LOO of a multidimensional
:func:`~bayes_raters.irt.fit_irt` (``dims=`` or ``dimensions=``; the contract of :mod:`bayes_raters.results`)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.errors import InvalidInputError
from bayes_raters.irt.multidimensional.model import MultidimensionalSpec
from bayes_raters.irt.slopes import dimension_rest_correlations, slope_reason
from bayes_raters.results import FitResult, interval_table, quiet_loo
from bayes_raters.sampling import ConvergenceReport

D_SCALE = 1.702  # logistic to normal-ogive scale, for standardized loadings


@dataclass(repr=False, kw_only=True)
class MultidimensionalIRTResult(FitResult):
    """A fitted multidimensional IRT model: ``idata`` (posterior with ``a`` (item,
    dimension), ``d``, ``c`` (3PL), ``corr`` (confirmatory), ``theta`` (respondent, dimension);
    ``log_likelihood`` per respondent), the answers ``table``, the convergence ``report``,
    ``dimensions`` (names), ``anchors`` (exploratory) or ``item_dimension`` (confirmatory)."""

    idata: xr.DataTree
    spec: MultidimensionalSpec
    table: pd.DataFrame
    report: ConvergenceReport

    summary_var_names = ("a", "d", "c", "corr_pair")
    family = "IRT (multidimensional)"

    @property
    def model(self) -> str:
        """The model's name: ``"2pl"`` or ``"3pl"``."""
        return self.spec.model

    def _size(self) -> str:
        kind = "confirmatory" if self.spec.item_dimension else "exploratory"
        return (f"{self.model.upper()} {kind}, {len(self.spec.dimensions)} dimensions, "
                f"{self.table['respondent'].nunique()} respondents x {self.table['item'].nunique()} items")

    def loadings(self, ci_prob: float = 0.9, standardized: bool = False) -> pd.DataFrame:
        """One row per (item, dimension): posterior mean, sd and ``ci_prob`` interval of the
        loading :math:`a_{jk}` (``a_mean``, ``a_sd``, ``a_lower``, ``a_upper``); ``standardized=True`` gives the factor-analytic loading
        :math:`\\lambda_{jk} = (a_{jk}/1.702) / \\sqrt{1 + \\mathbf{a}_j^\\top R\\,\\mathbf{a}_j / 1.702^2}`
        (normal-ogive scale; R the ability correlation, I when exploratory; columns ``lambda_mean``...). Anchors and
        fixed zeros are marked."""
        a = self.posterior["a"]
        if standardized:
            scaled = a / D_SCALE
            corr = self.posterior["corr"] if "corr" in self.posterior else None
            if corr is None:
                variance = (scaled**2).sum("dimension")
            else:
                other = scaled.rename(dimension="dimension_other")
                variance = (scaled * corr * other).sum(("dimension", "dimension_other"))
            a = scaled / np.sqrt(1 + variance)
        table = interval_table(a, ci_prob, ("item", "dimension")).add_prefix("lambda_" if standardized else "a_")
        anchors, dimensions = self.spec.anchors, list(self.spec.dimensions)
        table["anchor"] = [anchors is not None and item == anchors[dimensions.index(dim)]
                           for item, dim in table.index]
        table["fixed_zero"] = (a.std(("chain", "draw")) == 0).to_series().reindex(table.index).to_numpy()
        return table

    def item_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per item: intercept d, multidimensional discrimination
        :math:`\\lVert a_j \\rVert` and difficulty :math:`-d_j / \\lVert a_j \\rVert` (posterior
        mean and interval), guessing c (3PL), worst R-hat and bulk ESS of the item's
        parameters, and the proportion correct. Confirmatory fits add the item-rest correlation
        within the item's dimension (``rest_corr``, ``rest_corr_upper``, ``contradicts_slope``:
        :func:`bayes_raters.irt.slopes.dimension_rest_correlations`), ``flagged`` and ``reasons``."""
        post = self.posterior
        norm = np.sqrt((post["a"] ** 2).sum("dimension"))
        parts = {"d": post["d"], "mdisc": norm, "mdiff": -post["d"] / norm}
        if "c" in post:
            parts["c"] = post["c"]
        table = pd.concat([interval_table(v, ci_prob, ("item",)).add_prefix(f"{k}_") for k, v in parts.items()], axis=1)
        names = [v for v in ("a", "d", "c") if v in post]
        per_item = lambda stat, reduce: pd.concat(  # noqa: E731
            [getattr(stat[v], reduce)([x for x in stat[v].dims if x != "item"]).to_series() for v in names], axis=1)
        with warnings.catch_warnings():  # fixed zero loadings have no R-hat (0 / 0): NaN, skipped below
            warnings.simplefilter("ignore", RuntimeWarning)
            rhat, ess = az.rhat(post[names]), az.ess(post[names], method="bulk")
        table["r_hat"] = per_item(rhat, "max").max(axis=1)
        table["ess_bulk"] = per_item(ess, "min").min(axis=1)
        table["p_correct"] = self.table.groupby("item", sort=False)["correct"].mean().reindex(table.index)
        if self.spec.item_dimension:  # confirmatory: each item's one loading is forced positive
            table = table.join(dimension_rest_correlations(self.table, "correct", self.spec.item_dimension))
            table["flagged"] = table["contradicts_slope"].astype(bool)
            table["reasons"] = [slope_reason(row, "item-rest (within its dimension)") or "" for _, row in table.iterrows()]
        return table

    def correlations(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """Posterior of the ability correlations (confirmatory model): one row per pair of
        dimensions with ``corr_mean``, ``corr_sd``, ``corr_lower``, ``corr_upper``."""
        if "corr" not in self.posterior:
            raise InvalidInputError("the exploratory model fixes the abilities' correlation at 0 (theta ~ N(0, I)); "
                                    "fit with dimensions={item: name} to estimate correlations.")
        table = interval_table(self.posterior["corr"], ci_prob, ("dimension", "dimension_other")).add_prefix("corr_")
        names = list(self.spec.dimensions)
        keep = [names.index(i) < names.index(j) for i, j in table.index]
        return table[keep]

    def respondent_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """Posterior mean, sd and interval of every respondent's ability on every dimension
        (``theta_mean``, ``theta_sd``, ``theta_lower``, ``theta_upper``)."""
        return interval_table(self.posterior["theta"], ci_prob, ("respondent", "dimension")).add_prefix("theta_")

    def _saved_config(self) -> dict:
        return {"spec": self.spec.to_dict(), "report": self.report.to_dict()}

    @classmethod
    def _from_saved(cls, tree: xr.DataTree, config: dict) -> MultidimensionalIRTResult:
        answers = tree["constant_data"].to_dataset()
        table = pd.DataFrame({"respondent": answers["respondent"].values, "item": answers["item"].values,
                              "correct": tree["observed_data"]["correct"].values})
        return cls(idata=tree, spec=MultidimensionalSpec.from_dict(config["spec"]), table=table, report=ConvergenceReport(**config["report"]))

    def loo(self):
        """``az.loo`` over respondents (each respondent's marginal log-likelihood)."""
        return quiet_loo(self.idata)

    def _posterior_predictive(self, draws: xr.Dataset, rng: np.random.Generator) -> xr.Dataset:
        """Replicated answers from each draw's theta and item parameters."""
        person = pd.Index(draws["respondent"].values).get_indexer(self.table["respondent"])
        question = pd.Index(draws["item"].values).get_indexer(self.table["item"])
        theta = draws["theta"].transpose("chain", "draw", "respondent", "dimension").values[:, :, person]
        a = draws["a"].transpose("chain", "draw", "item", "dimension").values[:, :, question]
        eta = (theta * a).sum(-1) + draws["d"].values[:, :, question]
        p = 1 / (1 + np.exp(-eta))
        if "c" in draws:
            c = draws["c"].values[:, :, question]
            p = c + (1 - c) * p
        coords = {"chain": draws["chain"].values, "draw": draws["draw"].values}
        return xr.Dataset({"correct": (("chain", "draw", "answer"), (rng.random(p.shape) < p).astype(np.int8))}, coords=coords)
