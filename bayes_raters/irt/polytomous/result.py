"""The polytomous result (GRM, GPCM): item and respondent tables, category probabilities, test
information, posterior predictive ratings and LOO of a fitted :func:`~bayes_raters.irt.fit_polytomous`
(the contract of :mod:`bayes_raters.results`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.errors import InvalidInputError
from bayes_raters.irt.local_dependence import local_dependence
from bayes_raters.irt.plots import plot_test_information
from bayes_raters.irt.polytomous.model import (
    CategoryLayout,
    PolytomousSpec,
    category_logp,
    item_information,
)
from bayes_raters.irt.slopes import rest_correlations, slope_reason
from bayes_raters.persistence import plain_value
from bayes_raters.results import FitResult, interval_table, thinned_posterior
from bayes_raters.sampling import ConvergenceReport


@dataclass(repr=False, kw_only=True)
class PolytomousResult(FitResult):
    """A fitted GRM or GPCM: ``idata`` (posterior with ``a``, ``b`` per threshold and ``theta``
    per respondent; sample_stats; log_likelihood per respondent; observed_data ``category`` and
    constant_data ``respondent``/``item`` per rating), the validated ``table`` (with the original
    ``score`` and its ``category``), ``categories`` ({item: scores in category order}) and the
    convergence ``report``."""

    idata: xr.DataTree
    spec: PolytomousSpec
    table: pd.DataFrame
    categories: dict
    report: ConvergenceReport

    summary_var_names = ("a", "b", "d")
    family = "polytomous IRT"

    @property
    def layout(self) -> CategoryLayout:
        """The items' category counts as a :class:`CategoryLayout`."""
        return CategoryLayout(np.array([len(v) for v in self.categories.values()]))

    @property
    def model(self) -> str:
        """The model's name: ``"grm"`` or ``"gpcm"``."""
        return self.spec.model

    def _size(self) -> str:
        return (f"{self.model.upper()}, {self.table['respondent'].nunique()} respondents x "
                f"{len(self.categories)} items, up to {max(len(v) for v in self.categories.values())} categories")

    def _saved_config(self) -> dict:
        return {"spec": self.spec.to_dict(), "categories": [[plain_value(i), v] for i, v in self.categories.items()],
                "report": self.report.to_dict()}

    @classmethod
    def _from_saved(cls, tree: xr.DataTree, config: dict) -> PolytomousResult:
        categories = {item: [float(v) for v in scores] for item, scores in config["categories"]}
        ratings = tree["constant_data"].to_dataset()
        category = tree["observed_data"]["category"].values
        table = pd.DataFrame({"respondent": ratings["respondent"].values, "item": ratings["item"].values})
        table["score"] = [categories[i][int(c)] for i, c in zip(table["item"], category)]
        table["category"] = category
        return cls(idata=tree, spec=PolytomousSpec.from_dict(config["spec"]), table=table, categories=categories,
                   report=ConvergenceReport(**config["report"]))

    def item_table(self, ci_prob: float = 0.9, theta_points=(-2.0, 0.0, 2.0)) -> pd.DataFrame:
        """One row per item: number of categories, posterior mean, SD and equal-tailed
        ``ci_prob`` interval of ``a``, the posterior mean of each threshold (``b_1`` ..), worst
        R-hat and bulk ESS of its parameters, the mean observed category, the posterior mean
        item information at ``theta_points`` (``info_at_0``, ...), the item-rest correlation
        (``rest_corr``, ``rest_corr_upper``, ``contradicts_slope``: :mod:`bayes_raters.irt.slopes`),
        ``flagged`` and ``reasons``."""
        frame = interval_table(self.posterior["a"], ci_prob, ("item",)).add_prefix("a_")
        frame.insert(0, "n_categories", [len(self.categories[item]) for item in frame.index])
        thresholds = self.threshold_table(ci_prob)
        wide = thresholds.pivot(index="item", columns="step", values="b_mean").add_prefix("b_")
        frame = frame.join(wide.rename(columns=str))
        checks = self.summary(["a", "b"], ci_prob=ci_prob)[["r_hat", "ess_bulk"]]
        item_of = {f"a[{i}]": i for i in self.categories} | {
            f"b[{t}]": t.rsplit(":", 1)[0] for t in self.posterior["threshold"].values
        }
        per_item = checks.groupby(checks.index.map(item_of)).agg(r_hat=("r_hat", "max"), ess_bulk=("ess_bulk", "min"))
        frame = frame.join(per_item)
        frame["mean_category"] = self.table.groupby("item", sort=False)["category"].mean()
        information = self.information(theta_points).mean(axis=0)  # (items, points)
        for column, point in enumerate(theta_points):
            frame[f"info_at_{point:g}"] = information[:, column]
        frame = frame.join(rest_correlations(self.table, "category"))
        frame["flagged"] = frame["contradicts_slope"]
        frame["reasons"] = [slope_reason(row) or "" for _, row in frame.iterrows()]
        return frame

    def information(self, theta, n_draws: int = 200) -> np.ndarray:
        """Item information (:func:`bayes_raters.irt.polytomous.item_information`) at ``theta``
        for about ``n_draws`` posterior draws: (draws, items, len(theta))."""
        draws = thinned_posterior(self.posterior, n_draws).stack(sample=("chain", "draw"))
        a = draws["a"].transpose("sample", "item").values
        b = draws["b"].transpose("sample", "threshold").values
        theta = np.atleast_1d(np.asarray(theta, float))
        return np.stack([item_information(self.model, a[s], b[s], theta, self.layout) for s in range(len(a))])

    def plot_information(self, ax=None, ci_prob: float = 0.9, n_draws: int = 200):
        """Test information (the sum of :meth:`information` over items) and SE(theta) across
        theta in [-4, 4], posterior median and ``ci_prob`` band (:func:`bayes_raters.irt.plots.plot_test_information`)."""
        grid = np.linspace(-4, 4, 81)
        return plot_test_information(grid, self.information(grid, n_draws).sum(axis=1), ax, ci_prob)

    def plot_category_curves(self, item=None, ax=None, ci_prob: float = 0.9, n_draws: int = 200):
        """P(X = k | theta) of every category of ``item`` (default: the first), posterior
        median and ``ci_prob`` band, each curve labelled with its score. Returns the Axes."""
        import matplotlib.pyplot as plt

        items = list(self.categories)
        item = items[0] if item is None else item
        if item not in self.categories:
            raise InvalidInputError(f"item {item!r} is not in the fit; items are e.g. {items[:5]}.")
        grid = np.linspace(-4, 4, 81)
        draws = thinned_posterior(self.posterior, n_draws).stack(sample=("chain", "draw"))
        a, b = draws["a"].transpose("sample", "item").values, draws["b"].transpose("sample", "threshold").values
        rows = self.layout.cat_item == items.index(item)
        curves = np.exp(np.stack([category_logp(self.model, a[s], b[s], grid, self.layout, lib=np)[rows] for s in range(len(a))]))
        low, mid, high = np.quantile(curves, [(1 - ci_prob) / 2, 0.5, (1 + ci_prob) / 2], axis=0)
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 4))
        for k, score in enumerate(self.categories[item]):
            (line,) = ax.plot(grid, mid[k], label=f"score {score:g}")
            ax.fill_between(grid, low[k], high[k], color=line.get_color(), alpha=0.2)
        ax.set_xlabel("ability theta")
        ax.set_ylabel(f"P(score), median and {ci_prob:.0%} band")
        ax.set_title(f"{item} ({self.model.upper()})")
        ax.legend(fontsize="small")
        return ax

    def local_dependence(self, **kwargs) -> pd.DataFrame:
        """Yen's Q3 of every item pair (residuals from expected category indices) with its
        posterior predictive check and flags (:func:`bayes_raters.irt.local_dependence.local_dependence`)."""
        return local_dependence(self, **kwargs)

    def threshold_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per threshold: item, step k (between categories k - 1 and k), posterior mean,
        SD and equal-tailed ``ci_prob`` interval (``b_mean``, ``b_sd``, ``b_lower``, ``b_upper``)."""
        frame = interval_table(self.posterior["b"], ci_prob, ("threshold",)).add_prefix("b_")
        frame.insert(0, "item", [list(self.categories)[j] for j in self.layout.thr_item])
        frame.insert(1, "step", self.layout.thr_step)
        return frame

    def respondent_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per respondent: posterior mean, SD and ``ci_prob`` interval of theta, and
        the number of items rated."""
        frame = interval_table(self.posterior["theta"], ci_prob, ("respondent",)).add_prefix("theta_")
        frame["n_items"] = self.table.groupby("respondent", sort=False).size()
        return frame

    def _posterior_predictive(self, draws: xr.Dataset, rng: np.random.Generator) -> xr.Dataset:
        """Replicated categories: each rating drawn from P(X_j = k | theta_i) of its draw."""
        layout, items = self.layout, list(self.categories)
        person = pd.Index(draws["respondent"].values).get_indexer(self.table["respondent"])
        item = pd.Index(items).get_indexer(self.table["item"])
        out = np.empty((draws.sizes["chain"], draws.sizes["draw"], len(self.table)), dtype=np.int16)
        for c in range(draws.sizes["chain"]):
            for d in range(draws.sizes["draw"]):
                one = draws.isel(chain=c, draw=d)
                log_p = category_logp(self.model, one["a"].values, one["b"].values, one["theta"].values, layout, lib=np)
                probs = np.exp(log_p[:, person])  # (category rows, ratings)
                start = layout.cat_start[item]
                cumulative = np.zeros(len(self.table))
                u = rng.random(len(self.table))
                chosen = np.zeros(len(self.table), dtype=np.int16)
                for k in range(int(layout.n_categories.max()) - 1):
                    valid = k < layout.n_categories[item] - 1
                    cumulative = cumulative + np.where(valid, probs[np.minimum(start + k, len(probs) - 1), np.arange(len(self.table))], 0.0)
                    chosen += (valid & (u >= cumulative)).astype(np.int16)
                out[c, d] = chosen
        coords = {"chain": draws["chain"].values, "draw": draws["draw"].values}
        return xr.Dataset({"category": (("chain", "draw", "rating"), out)}, coords=coords)

