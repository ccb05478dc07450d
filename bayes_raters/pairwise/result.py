"""The pairwise result of :func:`~bayes_raters.pairwise.fit_pairwise` (the contract of
:mod:`bayes_raters.results`): ranked item table, P(i above j), rank distributions, system-level
values, forest plot, LOO, and the next pairs to annotate; the judgements stored as constant data."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr

from bayes_raters.errors import InvalidInputError
from bayes_raters.pairwise.model import PairwiseData, PairwiseSpec, build_pairwise_model
from bayes_raters.pairwise.plan import SELECTION_DRAWS, ability_draws, bald_scores
from bayes_raters.pairwise.separation import separation_table
from bayes_raters.results import FitResult, interval_table
from bayes_raters.sampling import ConvergenceReport, quiet_pymc

#: The validated judgement tables of :class:`~bayes_raters.pairwise.model.PairwiseData`.
JUDGEMENT_TABLES = ("comparisons", "scalars", "strengths")

#: The model's observed variables, one per kind of judgement.
OBSERVED = ("outcome", "value", "preference")


@dataclass(repr=False, kw_only=True)
class PairwiseResult(FitResult):
    """A fitted beta-latent model (the result protocol of :mod:`bayes_raters.results`):
    ``idata`` (DataTree with posterior, sample_stats, observed_data of the judgements
    ``outcome`` / ``value`` / ``preference`` that the fit had, constant_data; their
    log_likelihood after :meth:`compute_log_likelihood`),
    validated ``data``, ``report`` (also :attr:`convergence`) and the ``spec``
    (:class:`~bayes_raters.pairwise.model.PairwiseSpec`: the link and the other options of
    :func:`~bayes_raters.pairwise.model.build_pairwise_model`)."""

    idata: xr.DataTree
    spec: PairwiseSpec
    data: PairwiseData
    report: ConvergenceReport

    summary_var_names = (
        "s", "system_value", "lambda", "epsilon", "phi", "strength_gain", "strength_sigma", "panel_bias", "sigma_bias",
        "bias", "sigma_consistency", "consistency",
    )
    family = "pairwise beta-latent"

    def _size(self) -> str:
        counts = {"comparisons": len(self.data.comparisons), "slider values": len(self.data.scalars),
                  "strengths": len(self.data.strengths)}
        judged = ", ".join(f"{n} {name}" for name, n in counts.items() if n)
        return f"{len(self.data.items)} items, {judged}"

    def pymc_model(self) -> pm.Model:
        """The PyMC model of this fit, rebuilt from the stored judgements and options (not sampled)."""
        return build_pairwise_model(self.data, **self.spec.builder_options())

    @property
    def model(self) -> str:
        """The model's name, ``"beta_latent_<link>"`` (``model`` names the model on every result;
        :meth:`pymc_model` rebuilds the PyMC model)."""
        return f"beta_latent_{self.spec.link}"

    def _log_likelihood(self) -> xr.Dataset:
        """Pointwise log-likelihood of every judgement (``pm.compute_log_likelihood``)."""
        with quiet_pymc():
            return pm.compute_log_likelihood(self.idata, model=self.pymc_model(), extend_inferencedata=False, progressbar=False)

    def _posterior_predictive(self, draws: xr.Dataset, rng: np.random.Generator) -> xr.Dataset:
        """Replicated judgements from the model (``pm.sample_posterior_predictive``)."""
        model = self.pymc_model()
        names = [name for name in OBSERVED if name in model.named_vars]
        with quiet_pymc():
            replicated = pm.sample_posterior_predictive(
                xr.DataTree.from_dict({"posterior": draws}), model=model, var_names=names, random_seed=rng, progressbar=False
            )
        return replicated["posterior_predictive"].to_dataset()

    @functools.cached_property
    def _s_draws(self) -> np.ndarray:
        """(draws, items) matrix of s over all chains (cached)."""
        return self.posterior["s"].stack(sample=("chain", "draw")).transpose("sample", "item").to_numpy()

    def item_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """Items ranked by posterior mean of s: ``s_mean``, ``s_sd``, ``s_mode``, ``s_lower``,
        ``s_upper`` (equal-tailed ``ci_prob`` interval), ``rank_mean`` (1 = highest),
        ``r_hat``, ``ess_bulk`` and the number of judgements of each kind; with comparisons the
        flags ``never_wins`` and ``never_loses`` (the comparisons leave the item's
        value unbounded on one side, so the prior places it there:
        :mod:`bayes_raters.pairwise.separation`); for a design in unlinked groups also ``group``
        (ranks across groups rest on the prior or on scalars)."""
        s = self.posterior[["s"]]
        table = interval_table(s["s"], ci_prob, ("item",)).add_prefix("s_")
        table.insert(2, "s_mode", az.mode(s)["s"].to_series())
        table["r_hat"] = az.rhat(s)["s"].to_series()
        table["ess_bulk"] = az.ess(s, method="bulk")["s"].to_series()
        table["rank_mean"] = self.rank_distribution().mul(np.arange(1, len(table) + 1), axis=1).sum(axis=1)
        for name, frame, columns in (
            ("n_comparisons", self.data.comparisons, ["item_a", "item_b"]),
            ("n_strengths", self.data.strengths, ["item_a", "item_b"]),
            ("n_scalars", self.data.scalars, ["item"]),
        ):
            counts = pd.concat([frame[c] for c in columns]).value_counts() if len(frame) else pd.Series(dtype=int)
            table[name] = counts.reindex(table.index).fillna(0).astype(int)
        if len(self.data.comparisons):
            table = table.join(separation_table(self.data.comparisons, self.data.items))
        if self.data.groups is not None:
            table["group"] = self.data.groups.reindex(table.index)
        return table.rename_axis("item").sort_values("s_mean", ascending=False)

    def annotator_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per annotator: ``consistency_mean``, ``_sd``, ``_lower``, ``_upper``
        (equal-tailed ``ci_prob`` interval of :math:`c_k`), its ``r_hat`` and ``ess_bulk``,
        ``bias_*`` where slider biases are estimated, and the annotator's ``n_comparisons``,
        ``n_scalars`` and ``n_strengths``; sorted by consistency, lowest first (the annotators to
        look at). The fit's convergence report leaves these per-annotator latents out
        (:func:`~bayes_raters.pairwise.fit.checked_variables`): their diagnostics are here."""
        if "consistency" not in self.posterior:
            raise InvalidInputError(
                "this fit has no annotator effects (one annotator, or annotator_effects=False): "
                "refit with an annotator column naming several annotators and annotator_effects=None."
            )
        parts = []
        for name in ("consistency", "bias"):
            if name in self.posterior:
                values = self.posterior[[name]]
                part = interval_table(values[name], ci_prob, ("annotator",)).add_prefix(f"{name}_")
                if name == "consistency":
                    part["r_hat"] = az.rhat(values)[name].to_series()
                    part["ess_bulk"] = az.ess(values, method="bulk")[name].to_series()
                parts.append(part)
        table = pd.concat(parts, axis=1)
        for kind in JUDGEMENT_TABLES:
            counts = getattr(self.data, kind)["annotator"].value_counts() if len(getattr(self.data, kind)) else pd.Series(dtype=int)
            table[f"n_{kind}"] = counts.reindex(table.index.astype(str)).fillna(0).astype(int).to_numpy()
        return table.rename_axis("annotator").sort_values("consistency_mean")

    def prob_above(self, item_i, item_j) -> float:
        """Posterior P(s_i > s_j)."""
        position = self.data.items.get_indexer([item_i, item_j])
        if (position < 0).any():
            raise InvalidInputError(f"unknown item in ({item_i!r}, {item_j!r}).")
        draws = self._s_draws
        return float(np.mean(draws[:, position[0]] > draws[:, position[1]]))

    def prob_above_matrix(self) -> pd.DataFrame:
        """P(row item's s > column item's s) for every pair."""
        draws = self._s_draws
        matrix = (draws[:, :, None] > draws[:, None, :]).mean(axis=0)
        return pd.DataFrame(matrix, index=self.data.items, columns=self.data.items)

    def rank_distribution(self) -> pd.DataFrame:
        """P(item has rank r), rank 1 = highest s; rows items, columns ranks."""
        draws = self._s_draws
        ranks = (-draws).argsort(axis=1).argsort(axis=1)
        n = draws.shape[1]
        counts = np.stack([np.bincount(ranks[:, k], minlength=n) for k in range(n)]) / draws.shape[0]
        return pd.DataFrame(counts, index=self.data.items, columns=pd.RangeIndex(1, n + 1, name="rank"))

    def system_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """System-level values m_g (only when fitted with ``systems=``), ranked: ``system_value_mean``,
        ``system_value_sd``, ``system_value_lower``, ``system_value_upper`` and ``n_items``."""
        if "system_value" not in self.posterior:
            raise InvalidInputError("fit with systems= (item -> system) to get system-level values.")
        table = interval_table(self.posterior["system_value"], ci_prob, ("system",)).add_prefix("system_value_")
        table["n_items"] = self.data.systems.value_counts()
        return table.rename_axis("system").sort_values("system_value_mean", ascending=False)

    def plot_forest(self, ci_prob: float = 0.9, combined: bool = True, **kwargs):
        """``az.plot_forest`` of s, items in ranked order, one line per item (chains pooled;
        ``combined=False`` draws each chain): thick the 50% interval, thin the ``ci_prob``
        interval, the dot the median; the figure says so in its title. Returns the
        PlotCollection."""
        order = self.item_table().index.to_numpy()
        collection = az.plot_forest(
            self.posterior[["s"]].sel(item=order), ci_probs=(0.5, ci_prob), combined=combined, **kwargs
        )
        figure = collection.viz["figure"]
        figure = getattr(figure, "item", lambda: figure)()
        if hasattr(figure, "suptitle"):
            figure.suptitle(f"s per item, ranked: median, 50% (thick) and {ci_prob:.0%} (thin) intervals", fontsize="medium")
        return collection

    def _saved_config(self) -> dict:
        return {"spec": self.spec.to_dict(), "strength_max": self.data.strength_max, "report": self.report.to_dict()}

    @classmethod
    def _from_saved(cls, tree: xr.DataTree, config: dict) -> PairwiseResult:
        data = judgements_from(tree, float(config["strength_max"]))
        idata = xr.DataTree.from_dict({name: node.to_dataset() for name, node in tree.children.items()})
        idata.attrs = dict(tree.attrs)
        return cls(idata=idata, spec=PairwiseSpec.from_dict(config["spec"]), data=data, report=ConvergenceReport(**config["report"]))

    def next_pairs(self, n_pairs: int = 10, n_anchors: int = 50, random_seed=0) -> pd.DataFrame:
        """Pairs whose outcome would tell most about s: the mutual information between the
        next outcome and the parameters (BALD), H[E p] - E H[p], over posterior draws, for
        the ``n_anchors`` items of highest posterior variance paired with every item. This
        is the posterior counterpart of RA's variance + match-quality rule. Scored on the
        abilities u = lambda s, which carry the outcome (:func:`~bayes_raters.pairwise.plan.bald_scores`);
        :func:`~bayes_raters.pairwise.plan.plan_pairwise` predicts what batches of them will gain."""
        u, eps = ability_draws(self, "next_pairs")
        rng = np.random.default_rng(random_seed)
        pick = rng.choice(u.shape[0], size=min(SELECTION_DRAWS, u.shape[0]), replace=False)
        i, j, score = bald_scores(u[pick], eps[pick], self.spec.link, n_anchors)
        table = pd.DataFrame({"item_a": self.data.items[i], "item_b": self.data.items[j], "information": score})
        return table.head(n_pairs).reset_index(drop=True)


def judgement_inputs(data: PairwiseData) -> xr.Dataset:
    """The validated judgements as constant data, so that ``idata`` alone holds the fit's inputs:
    each table's columns as ``<table>_<column>`` along ``<table>_row`` (:data:`JUDGEMENT_TABLES`),
    the items' system and group as ``item_system`` / ``item_group`` along ``item``, and the
    annotators as the ``annotator`` coordinate. :func:`judgements_from` reads them back."""
    variables = {f"{table}_{column}": (f"{table}_row", frame[column].to_numpy())
                 for table in JUDGEMENT_TABLES for frame in [getattr(data, table)] for column in frame.columns}
    for name, series in (("item_system", data.systems), ("item_group", data.groups)):
        if series is not None:
            variables[name] = ("item", series.reindex(data.items).to_numpy())
    return xr.Dataset(variables, coords={"item": data.items.to_numpy(), "annotator": data.annotators.to_numpy()})


def judgements_from(tree: xr.DataTree, strength_max: float) -> PairwiseData:
    """The :class:`PairwiseData` of a saved fit, from :func:`judgement_inputs` in constant_data."""
    items = tree["constant_data"].to_dataset()
    frames = {table: pd.DataFrame({name[len(table) + 1:]: items[name].values for name in items.data_vars
                                   if items[name].dims == (f"{table}_row",)}) for table in JUDGEMENT_TABLES}
    per_item = {name: items[f"item_{name}"].values for name in ("system", "group") if f"item_{name}" in items}
    index = pd.Index(items["item"].values, name="item")
    optional = {name: pd.Series(values, index=index, name=name) for name, values in per_item.items()}
    return PairwiseData(index, pd.Index(items["annotator"].values, name="annotator"), frames["comparisons"], frames["scalars"],
                        frames["strengths"], optional.get("system"), strength_max, optional.get("group"))
