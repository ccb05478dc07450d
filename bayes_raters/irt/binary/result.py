"""The binary IRT result: item and respondent tables, flags, scoring new respondents, LOO and the
plots of a fitted :func:`~bayes_raters.irt.fit_irt` (the contract of :mod:`bayes_raters.results`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.errors import InvalidInputError
from bayes_raters.input_checks import id_type_advice
from bayes_raters.irt import plots
from bayes_raters.irt.binary.model import (
    IRTSpec,
    asymptote_logs,
    irt_probability,
    validate_responses,
)
from bayes_raters.irt.diagnostics import (
    PARAMETERS,
    empirical_reliability,
    expected_a_posteriori,
    information_curves,
    item_parameters,
    posterior_predictive_item_fit,
)
from bayes_raters.irt.local_dependence import local_dependence
from bayes_raters.irt.slopes import rest_correlations, slope_reason
from bayes_raters.results import SD_DDOF, FitResult, quiet_loo, thinned_posterior
from bayes_raters.sampling import ConvergenceReport

#: Flag thresholds (documented in models/irt.md).
LOW_A = 0.5  # discrimination below this measures little ("low" on Baker's scale)
LOW_A_PROB = 0.7  # ... flagged when P(a < LOW_A) exceeds this
FIT_PPP = 0.05  # posterior predictive p-value of the item-fit discrepancy
PARETO_K = 0.7  # LOO Pareto-k above this is unreliable for an answer ...
PARETO_SHARE = 0.1  # ... flagged when more than this share of the item's answers have it
CHANCE_MARGIN = 0.05  # observed proportion correct within this of 1/k
LOG_LIK_DRAWS = 400  # draws kept for the pointwise log-likelihood (memory: draws x answers)


@dataclass(repr=False, kw_only=True)
class IRTResult(FitResult):
    """A fitted IRT model (the result protocol of :mod:`bayes_raters.results`): ``idata``
    (DataTree with posterior, sample_stats, log_likelihood, observed_data ``correct`` and
    constant_data ``respondent``/``item`` per answer), the validated answers ``table``, and the
    convergence ``report`` (also :attr:`convergence`)."""

    idata: xr.DataTree
    spec: IRTSpec
    table: pd.DataFrame
    report: ConvergenceReport
    _cache: dict = field(default_factory=dict, repr=False)

    summary_var_names = ("a", "b", "c", "d", "a_common", "b_mean", "b_sigma", "log_a_mean", "log_a_sigma")
    family = "IRT"

    @property
    def model(self) -> str:
        """The model's name: ``"1pl"``, ``"2pl"``, ``"3pl"`` or ``"4pl"``."""
        return self.spec.model

    def _size(self) -> str:
        respondents, items = self.table["respondent"].nunique(), self.table["item"].nunique()
        return f"{self.model.upper()} {self.spec.method}, {respondents} respondents x {items} items"

    def _posterior_predictive(self, draws: xr.Dataset, rng: np.random.Generator) -> xr.Dataset:
        """Replicated answers: correct ~ Bernoulli(P(theta_i, item j)) per answer, from each
        draw's theta (exact conditional draws under the marginal method) and item parameters."""
        params = item_parameters(draws)
        person = pd.Index(draws["respondent"].values).get_indexer(self.table["respondent"])
        question = pd.Index(draws["item"].values).get_indexer(self.table["item"])
        replicated = np.empty((draws.sizes["chain"], draws.sizes["draw"], len(self.table)), dtype=np.int8)
        for chain in range(draws.sizes["chain"]):  # one chain at a time: draws x answers floats
            one = {name: value.isel(chain=chain).values[:, question] for name, value in params.items()}
            p = irt_probability(draws["theta"].isel(chain=chain).values[:, person], one["a"], one["b"], one["c"], one["d"], lib=np)
            replicated[chain] = rng.random(p.shape) < p
        coords = {"chain": draws["chain"].values, "draw": draws["draw"].values}
        return xr.Dataset({"correct": (("chain", "draw", "answer"), replicated)}, coords=coords)

    def _loo_pareto_k(self) -> pd.Series:
        """Share of each item's answers with LOO Pareto-k above 0.7 (per-answer LOO; for the
        marginal method from the conditional theta draws, see :func:`answer_pareto_k`)."""
        if "loo_k" not in self._cache:
            if self.spec.method == "joint":
                k = np.asarray(quiet_loo(self.idata).pareto_k).ravel()
            else:
                k = answer_pareto_k(self.posterior, self.table, LOG_LIK_DRAWS)
            k = pd.Series(k, index=self.table["item"].to_numpy())
            self._cache["loo_k"] = (k > PARETO_K).groupby(level=0, sort=False).mean()
        return self._cache["loo_k"]

    def loo(self):
        """``az.loo`` of the fitted model: over respondents (marginal log-likelihood) for the
        marginal method, over answers for the joint one (thinned to 400 draws)."""
        if "loo" not in self._cache:
            self._cache["loo"] = quiet_loo(self.idata)
        return self._cache["loo"]

    def item_table(self, ci_prob: float = 0.9, theta_points=(-2.0, 0.0, 2.0), random_seed=0) -> pd.DataFrame:
        """One row per item: posterior mean, sd and ``ci_prob`` interval of a, b (c, d),
        worst R-hat and bulk ESS of its parameters, observed proportion correct, information
        at ``theta_points``, P(a < 0.5), item-fit ppp, share of its answers with LOO
        Pareto-k > 0.7, the item-rest correlation (``rest_corr``, ``rest_corr_upper``,
        ``contradicts_slope``: :mod:`bayes_raters.irt.slopes`), ``flagged``, ``reasons``."""
        posterior = self.posterior
        names = [p for p in PARAMETERS if p in posterior]
        eti = az.eti(posterior[names], prob=ci_prob)
        rhat = az.rhat(posterior[names])
        ess = az.ess(posterior[names], method="bulk")
        columns = {}
        for name in names:
            draws = posterior[name]
            columns[f"{name}_mean"] = draws.mean(("chain", "draw")).to_series()
            columns[f"{name}_sd"] = draws.std(("chain", "draw"), ddof=SD_DDOF).to_series()
            columns[f"{name}_lower"] = eti[name].sel(ci_bound="lower").to_series()
            columns[f"{name}_upper"] = eti[name].sel(ci_bound="upper").to_series()
        table = pd.DataFrame(columns)
        table["r_hat"] = pd.concat([rhat[n].to_series() for n in names], axis=1).max(axis=1)
        table["ess_bulk"] = pd.concat([ess[n].to_series() for n in names], axis=1).min(axis=1)
        answers = self.table.groupby("item", sort=False)["correct"]
        table["n_answers"] = answers.size()
        table["p_correct"] = answers.mean()
        info = information_curves(posterior, np.asarray(theta_points, float))["item_information"].mean(("chain", "draw"))
        for point in theta_points:
            table[f"info_at_{point:g}"] = info.sel(theta=point).to_series()
        table["p_low_a"] = (posterior["a"] < LOW_A).mean(("chain", "draw")).to_series()
        table["fit_ppp"] = posterior_predictive_item_fit(posterior, self.table, random_seed=random_seed)
        table["share_high_k"] = self._loo_pareto_k()
        table = table.rename_axis("item").join(rest_correlations(self.table, "correct"))
        reasons = [self._reasons(row) for _, row in table.iterrows()]
        table["flagged"] = [bool(r) for r in reasons]
        table["reasons"] = ["; ".join(r) for r in reasons]
        return table

    def _reasons(self, row: pd.Series) -> list[str]:
        reasons = [reason for reason in (slope_reason(row),) if reason]
        if self.model != "1pl" and row["p_low_a"] > LOW_A_PROB:
            reasons.append(f"low discrimination: P(a < {LOW_A}) = {row['p_low_a']:.2f}")
        if row["fit_ppp"] < FIT_PPP:
            reasons.append(f"poor fit: posterior predictive p = {row['fit_ppp']:.3f}")
        if row["share_high_k"] > PARETO_SHARE:
            reasons.append(f"influential answers: {row['share_high_k']:.0%} with LOO Pareto k > {PARETO_K}")
        if self.spec.n_options and row["p_correct"] <= 1 / self.spec.n_options + CHANCE_MARGIN:
            reasons.append(f"near chance: {row['p_correct']:.2f} correct with {self.spec.n_options} options")
        return reasons

    def respondent_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per respondent: theta mean, sd, interval, answers and accuracy."""
        theta = self.posterior["theta"]
        eti = az.eti(theta.to_dataset(), prob=ci_prob)["theta"]
        answers = self.table.groupby("respondent", sort=False)["correct"]
        table = pd.DataFrame(
            {
                "theta_mean": theta.mean(("chain", "draw")).to_series(),
                "theta_sd": theta.std(("chain", "draw"), ddof=SD_DDOF).to_series(),
                "theta_lower": eti.sel(ci_bound="lower").to_series(),
                "theta_upper": eti.sel(ci_bound="upper").to_series(),
                "n_answers": answers.size(),
                "accuracy": answers.mean(),
            }
        )
        return table.rename_axis("respondent")

    def reliability(self) -> float:
        """Empirical reliability of the fitted abilities (see :func:`empirical_reliability`)."""
        table = self.respondent_table()
        return empirical_reliability(table["theta_mean"].to_numpy(), table["theta_sd"].to_numpy())

    def score(
        self, responses: pd.DataFrame, *, n_draws: int = 400, grid_size: int = 161, ci_prob: float = 0.9, random_seed=None, **columns
    ) -> pd.DataFrame:
        """Score new respondents (e.g. NLP systems) on the calibrated scale, items fixed.

        For each of ``n_draws`` posterior draws of the item parameters, theta's posterior
        (N(0, 1) prior) is computed on a grid and one theta drawn from it, so the result
        carries the item uncertainty. Also reports accuracy and agreement with the
        majority-vote key (1 where most calibration respondents were right, else 0).
        """
        table = validate_responses(responses, calibration=False, **columns)
        unknown = sorted(set(table["item"]) - set(self.posterior["item"].values), key=str)
        if unknown:
            known = pd.Series(self.posterior["item"].values)
            raise InvalidInputError(
                f"items {unknown[:5]} are not on the calibrated scale; drop them."
                f"{id_type_advice(np.asarray(unknown, dtype=object), known)}"
            )
        rng = np.random.default_rng(random_seed)
        draws = self.posterior.stack(sample=("chain", "draw"))
        keep = np.sort(rng.choice(draws.sizes["sample"], size=min(n_draws, draws.sizes["sample"]), replace=False))
        params = item_parameters(draws.isel(sample=keep))
        wide = table.pivot(index="respondent", columns="item", values="correct")
        items = list(wide.columns)
        a, b, c, d = (params[k].sel(item=items).transpose("sample", "item").values for k in PARAMETERS)
        grid = np.linspace(-5, 5, grid_size)
        weights, _ = expected_a_posteriori(wide.to_numpy(float), a, b, c, d, grid)
        cumulative = weights.cumsum(axis=-1)
        u = rng.random(weights.shape[:2])[..., None]
        theta = grid[np.minimum((cumulative < u).sum(axis=-1), grid_size - 1)]  # (draws, respondents)
        lower, upper = np.quantile(theta, [(1 - ci_prob) / 2, (1 + ci_prob) / 2], axis=0)
        key = (self.table.groupby("item")["correct"].mean() > 0.5).astype(float)
        agreement = (table["correct"] == key.reindex(table["item"]).to_numpy()).groupby(table["respondent"]).mean()
        return pd.DataFrame(
            {
                "theta_mean": theta.mean(axis=0),
                "theta_sd": theta.std(axis=0, ddof=SD_DDOF),
                "theta_lower": lower,
                "theta_upper": upper,
                "n_answers": wide.notna().sum(axis=1).to_numpy(),
                "accuracy": table.groupby("respondent")["correct"].mean().reindex(wide.index).to_numpy(),
                "majority_agreement": agreement.reindex(wide.index).to_numpy(),
            },
            index=wide.index.rename("respondent"),
        )

    def _saved_config(self) -> dict:
        return {"spec": self.spec.to_dict(), "report": self.report.to_dict()}

    @classmethod
    def _from_saved(cls, tree: xr.DataTree, config: dict) -> IRTResult:
        answers = tree["constant_data"].to_dataset()
        table = pd.DataFrame(
            {"respondent": answers["respondent"].values, "item": answers["item"].values,
             "correct": tree["observed_data"]["correct"].values}
        )
        return cls(idata=tree, spec=IRTSpec.from_dict(config["spec"]), table=table, report=ConvergenceReport(**config["report"]))

    def local_dependence(self, **kwargs) -> pd.DataFrame:
        """Yen's Q3 of every item pair with its posterior predictive check and flags
        (:func:`bayes_raters.irt.local_dependence.local_dependence`, keywords ``n_draws``,
        ``alpha``, ``min_excess``, ``ci_prob``, ``random_seed``)."""
        return local_dependence(self, **kwargs)

    def plot_item_curves(self, items=None, ax=None, ci_prob: float = 0.9, labels: dict | None = None):
        """Item characteristic curves with posterior bands (:func:`bayes_raters.irt.plots.plot_item_curves`)."""
        return plots.plot_item_curves(self.posterior, items, ax, ci_prob, labels)

    def plot_information(self, ax=None, ci_prob: float = 0.9):
        """Test information and SE(theta) (:func:`bayes_raters.irt.plots.plot_information`)."""
        return plots.plot_information(self.posterior, ax, ci_prob)


def answer_pareto_k(posterior: xr.Dataset, table: pd.DataFrame, draws: int, chunk: int = 100_000) -> np.ndarray:
    r"""LOO Pareto-k of every answer from (thinned) draws of theta and the item parameters:
    :math:`\log p(y_{ij} \mid \theta_i, a_j, b_j, c_j, d_j)` per draw, in chunks of answers
    so memory stays at draws x ``chunk``."""
    thin = thinned_posterior(posterior, draws)
    params = item_parameters(thin)
    item_index = pd.Index(thin["item"].values).get_indexer(table["item"])
    person_index = pd.Index(thin["respondent"].values).get_indexer(table["respondent"])
    theta = thin["theta"].transpose("chain", "draw", "respondent").values
    a, b, c, d = (params[k].transpose("chain", "draw", "item").values for k in PARAMETERS)
    y = table["correct"].to_numpy()
    out = []
    for start in range(0, len(table), chunk):
        i, j, obs = person_index[start:start + chunk], item_index[start:start + chunk], y[start:start + chunk]
        upper = d[..., j] if "d" in thin else None
        log_lik = answer_log_likelihood(obs, a[..., j] * (theta[..., i] - b[..., j]), c[..., j], upper)
        tree = xr.DataTree.from_dict({"log_likelihood": xr.Dataset({"correct": (("chain", "draw", "answer"), log_lik)})})
        out.append(np.asarray(quiet_loo(tree, reff=1.0).pareto_k).ravel())  # thinned draws: ~independent
    return np.concatenate(out)


def answer_log_likelihood(correct: np.ndarray, eta: np.ndarray, c: np.ndarray, d: np.ndarray | None) -> np.ndarray:
    r""":math:`\log p(y \mid \eta)` of each answer, exact in the tails (:func:`asymptote_logs`;
    ``d`` None without an upper asymptote). Why not :math:`\log(1 - P)` of a clipped P: P rounds
    to 1 for :math:`\eta > 37`, and every wrong answer further above the item then got the same
    :math:`\log(10^{-16}) \approx -36.7` (the exact value keeps falling as
    :math:`\log(1 - c) - \eta`)."""
    log_p, log_q = asymptote_logs(eta, c, d, np)
    return np.where(correct == 1, log_p, log_q)

