"""Fit IRT models, read item and respondent tables, flag items, score new respondents,
build a scale, compare models with LOO."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr

from bayes_raters.errors import InvalidInputError, QuadratureWarning
from bayes_raters.input_checks import id_type_advice
from bayes_raters.irt import plots
from bayes_raters.irt.binary.marginal import (
    QUADRATURE_TOLERANCE,
    build_marginal_from_table,
    conditional_abilities,
    default_rule,
    finer_rule,
    quadrature_error,
)
from bayes_raters.irt.binary.model import (
    GUESSING_MODELS,
    IRT_MODELS,
    asymptote_logs,
    build_from_table,
    centred_items,
    irt_probability,
    resolve_hierarchical,
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
from bayes_raters.irt.slopes import rest_correlations, slope_reason, warn_contradicted_slopes
from bayes_raters.results import SD_DDOF, FitResult, quiet_loo, thinned_posterior
from bayes_raters.sampling import ConvergenceReport, derived_rng, fewest_divergences, sample_model, sample_refined

if TYPE_CHECKING:
    from bayes_raters.irt.multidimensional.fit import MultidimensionalIRTResult

#: Flag thresholds (documented in models/irt.md).
LOW_A = 0.5  # discrimination below this measures little ("low" on Baker's scale)
LOW_A_PROB = 0.7  # ... flagged when P(a < LOW_A) exceeds this
FIT_PPP = 0.05  # posterior predictive p-value of the item-fit discrepancy
PARETO_K = 0.7  # LOO Pareto-k above this is unreliable for an answer ...
PARETO_SHARE = 0.1  # ... flagged when more than this share of the item's answers have it
CHANCE_MARGIN = 0.05  # observed proportion correct within this of 1/k
LOG_LIK_DRAWS = 400  # draws kept for the pointwise log-likelihood (memory: draws x answers)


@dataclass(repr=False)
class IRTResult(FitResult):
    """A fitted IRT model (the result protocol of :mod:`bayes_raters.results`): ``idata``
    (DataTree with posterior, sample_stats, log_likelihood, observed_data ``correct`` and
    constant_data ``respondent``/``item`` per answer), the validated answers ``table``, and the
    convergence ``report`` (also :attr:`convergence`)."""

    idata: xr.DataTree
    model: str
    table: pd.DataFrame
    report: ConvergenceReport
    n_options: int | None = None
    hierarchical: bool = True
    method: str = "marginal"
    _cache: dict = field(default_factory=dict, repr=False)

    summary_var_names = ("a", "b", "c", "d", "a_common", "b_mean", "b_sigma", "log_a_mean", "log_a_sigma")
    family = "IRT"

    def _size(self) -> str:
        respondents, items = self.table["respondent"].nunique(), self.table["item"].nunique()
        return f"{self.model.upper()} {self.method}, {respondents} respondents x {items} items"

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
            if self.method == "joint":
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
        if self.n_options and row["p_correct"] <= 1 / self.n_options + CHANCE_MARGIN:
            reasons.append(f"near chance: {row['p_correct']:.2f} correct with {self.n_options} options")
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
        return {
            "model": self.model, "n_options": self.n_options, "hierarchical": self.hierarchical,
            "method": self.method, "report": self.report.to_dict(),
        }

    @classmethod
    def _from_saved(cls, tree: xr.DataTree, config: dict) -> IRTResult:
        answers = tree["constant_data"].to_dataset()
        table = pd.DataFrame(
            {"respondent": answers["respondent"].values, "item": answers["item"].values,
             "correct": tree["observed_data"]["correct"].values}
        )
        report = ConvergenceReport(**config.pop("report"))
        return cls(tree, config.pop("model"), table, report, **config)

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


def _thinned_log_likelihood(idata: xr.DataTree, model: pm.Model, draws: int) -> xr.DataTree:
    thin = thinned_posterior(idata["posterior"].to_dataset(), draws)
    free = [v.name for v in model.free_RVs]
    log_lik = pm.compute_log_likelihood(
        xr.DataTree.from_dict({"posterior": thin[free]}), model=model, extend_inferencedata=False, progressbar=False
    )
    return log_lik


IRT_METHODS = ("marginal", "joint")


#: ``target_accept`` of the guessing models' NUTS (0.9 for the others); see :func:`fit_irt`.
GUESSING_TARGET_ACCEPT = 0.97


def fit_irt(
    responses: pd.DataFrame,
    model: str = "2pl",
    *,
    method: str = "marginal",
    n_options: int | None = None,
    hierarchical: bool | None = None,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    cores: int | None = None,
    random_seed: int | np.random.Generator | None = None,
    nuts_sampler: str = "pymc",
    target_accept: float | None = None,
    nuts_kwargs: dict | None = None,
    progressbar: bool | None = None,
    respondent: str = "respondent",
    item: str = "item",
    correct: str = "correct",
    dims: int | None = None,
    dimensions: dict | None = None,
    anchors=None,
    inference: str = "auto",
) -> IRTResult | MultidimensionalIRTResult:
    r"""Fit a 1PL/2PL/3PL/4PL model (see :mod:`bayes_raters.irt.binary.model`) to long answers
    ``(respondent, item, correct)``; missing answers are absent rows.

    ``method="marginal"`` (default) integrates the abilities out by quadrature and samples
    the item parameters only (:mod:`bayes_raters.irt.binary.marginal`); theta is then drawn from its
    exact conditional for every posterior draw, so the posterior has ``theta`` with dims
    ``respondent`` as before, and ``log_likelihood`` holds each respondent's marginal
    log-likelihood (LOO over respondents). ``method="joint"`` samples theta with NUTS and
    stores the per-answer log-likelihood (thinned to 400 draws). Convergence is checked on the
    sampled parameters; a :class:`ConvergenceWarning` is issued if it fails. The draws repeat
    exactly for the same ``random_seed`` (theta draws included). ``progressbar``: None (default)
    shows the sampler's progress bar in a terminal or notebook only. ``cores``: chains run in
    parallel (NUTS processes, theta-draw threads); None (default) one per CPU. LSAT-7's 2PL with
    NUTS took 11.0-13.1 s with ``cores=1`` (the default before 2026-11-27) and 6.4-8.9 s with None.

    ``inference`` (unidimensional marginal method): ``"auto"`` (default) keeps importance-sampled
    Laplace draws of the item parameters when they pass every check (Pareto :math:`\hat k`, R-hat, ESS)
    (:mod:`bayes_raters.laplace`) and samples with NUTS otherwise; ``"nuts"``/``"laplace"`` force
    one (``draws`` per chain either way; the Laplace path resamples them from twice as many
    proposals). When the draws are rejected with Pareto :math:`\hat k \le 1`, the 1PL/2PL's NUTS
    starts from the Laplace approximation (``sample_model(warm_start="after_laplace")``: a draw of it per
    chain, its covariance as dense mass matrix, 300 tuning iterations; ``posterior.attrs["nuts_warm_start"]``);
    the guessing models start cold (their banana-shaped posteriors make the Hessian a poor mass
    matrix). Every unidimensional marginal fit whose NUTS chains fail R-hat or ESS without a
    divergence adds ``chains`` more (``sample_model(extra_chains=)``). LSAT-7's 2PL, 15 seeds
    (``benchmarks/bench_lsat7.py``): 1.3-1.8 s when the Laplace draws pass (11 seeds), 2.5-2.9 s with
    the warm NUTS (3), 4.8 s with extra chains (1), where a cold NUTS took 6-10 s (``models/irt.md``). The multidimensional
    models take the same ``inference``.

    ``target_accept``: None (default) is 0.9, and :data:`GUESSING_TARGET_ACCEPT` (0.97) for the unidimensional 3PL/4PL,
    whose NUTS fits on the marginal method also add ``chains`` more chains when the first fail
    R-hat or ESS without a divergence (as every unidimensional marginal fit does). Why: a hard item's
    curve is seen only in its lower tail, where a, b and c trade off (a banana-shaped posterior,
    step size 0.05, 90 leapfrog steps per draw); at 0.9 a quarter of the SBC's 3PL fits diverged
    a few times and 62% of 200 passed the convergence rule; with these defaults 71 of the first 73
    of the same simulations do, against 50 of those 73 before (``models/irt.md``).

    ``hierarchical=True`` gives the difficulties and log-discriminations a
    population location and scale; ``False`` gives the fixed N(0, 2) and LogNormal(0, 0.5)
    priors; ``None`` (default) chooses the hierarchy from :data:`~bayes_raters.irt.binary.model.HIERARCHY_MIN_ITEMS`
    items on (:func:`~bayes_raters.irt.binary.model.resolve_hierarchical`: with fewer, the population
    scale of log a is a funnel the sampler diverges in, 286 divergences on LSAT-7). The fixed
    priors pull the 1PL common discrimination 0.07-0.16 away from marginal ML on
    100 x 30 Rasch data where the hierarchical priors stay within 0.012
    (``benchmarks/study_irt_priors.py``; ``models/irt.md``). On the marginal method a hierarchical
    fit whose centred difficulties diverge (their true spread small: a funnel) is sampled with them
    non-centred too, and the fit with fewer divergences is kept (``posterior.attrs["difficulty_form"]``).

    ``dims=K`` (2 or 3) fits the exploratory multidimensional 2PL/3PL, ``dimensions={item:
    name}`` the confirmatory one with correlated abilities (``anchors=[item, ...]`` picks the
    exploratory model's anchor items); both return a
    :class:`~bayes_raters.irt.multidimensional.fit.MultidimensionalIRTResult`
    (:mod:`bayes_raters.irt.multidimensional.model`). ``dims=1`` is the unidimensional model.

    Parameters
    ----------
    responses : pandas.DataFrame
        Long answers, one row per (respondent, item), ``correct`` 0/1.
    model : {"1pl", "2pl", "3pl", "4pl"}
        The item response function.
    method : {"marginal", "joint"}
        Integrate the abilities out (default) or sample them with NUTS.
    n_options : int, optional
        Answer options per item (guessing prior of the 3PL/4PL).
    hierarchical : bool, optional
        Population priors on the items; None decides by the number of items.
    draws, tune, chains : int
        Posterior draws and tuning iterations per chain, and the number of chains.
    cores : int, optional
        Chains run in parallel; None, one per CPU.
    random_seed : int, numpy.random.Generator or None
        Seed of every draw (the same seed gives the same draws).
    nuts_sampler : str
        ``"pymc"``, ``"nutpie"``, ``"numpyro"`` or ``"blackjax"``.
    target_accept : float, optional
        NUTS target acceptance rate; None as above.
    nuts_kwargs : dict, optional
        Other keywords for the NUTS sampler.
    progressbar : bool, optional
        None shows the progress bar in a terminal or notebook only.
    respondent, item, correct : str
        Column names in ``responses``.
    dims : int, optional
        Number of abilities of an exploratory multidimensional model (2 or 3).
    dimensions : dict, optional
        Item -> ability name: a confirmatory multidimensional model.
    anchors : list, optional
        The exploratory model's anchor items, one per ability.
    inference : {"auto", "nuts", "laplace"}
        How the item parameters are drawn (see above).

    Returns
    -------
    IRTResult or MultidimensionalIRTResult
        The posterior, item and respondent tables, flags and convergence.

    Examples
    --------
    >>> from bayes_raters.irt import fit_irt, simulate_responses
    >>> answers, _ = simulate_responses(300, 10, random_seed=2)
    >>> result = fit_irt(answers, "2pl", random_seed=2, progressbar=False)
    >>> result.convergence.converged, result.item_table().shape[0]
    (True, 10)
    """
    if model not in IRT_MODELS:
        raise InvalidInputError(f"model must be one of {IRT_MODELS}, got {model!r}.")
    if method not in IRT_METHODS:
        raise InvalidInputError(f"method must be one of {IRT_METHODS}, got {method!r}.")
    table = validate_responses(responses, respondent=respondent, item=item, correct=correct)
    hierarchical = resolve_hierarchical(hierarchical, table)
    multidimensional = dimensions is not None or (dims is not None and dims != 1) or anchors is not None
    guessing = model in GUESSING_MODELS and not multidimensional  # measured on the unidimensional model only
    if target_accept is None:
        target_accept = GUESSING_TARGET_ACCEPT if guessing else 0.9
    settings = dict(
        draws=draws, tune=tune, chains=chains, cores=cores, random_seed=random_seed,
        nuts_sampler=nuts_sampler, target_accept=target_accept, nuts_kwargs=nuts_kwargs, progressbar=progressbar,
    )
    if multidimensional:
        if method != "marginal":
            raise InvalidInputError("multidimensional models integrate the abilities out: use method='marginal'.")
        from bayes_raters.irt.multidimensional.fit import fit_mirt

        return fit_mirt(table, model, dims=dims, dimensions=dimensions, anchors=anchors, n_options=n_options,
                        settings={**settings, "inference": inference}, random_seed=random_seed)
    # unidimensional only: an item of another dimension may rightly correlate little with the rest
    warn_contradicted_slopes(rest_correlations(table, "correct"), f"IRT {model}")
    if method == "joint":
        irt = build_from_table(table, model, n_options=n_options, hierarchical=hierarchical)
        idata, report = sample_model(irt, what=f"IRT {model} (joint)", **settings)
        log_lik = _thinned_log_likelihood(idata, irt, LOG_LIK_DRAWS)
        groups = {"log_likelihood": log_lik["log_likelihood"].to_dataset() if isinstance(log_lik, xr.DataTree) else log_lik}
        posterior = idata["posterior"].to_dataset()
    else:
        marginal = {**settings, "inference": inference, "extra_chains": chains, "warm_start": "never" if guessing else "after_laplace"}
        irt, idata, report, rule, error = _sample_marginal(table, model, n_options, hierarchical, marginal)
        posterior = idata["posterior"].to_dataset()
        theta, log_lik, acceptance = conditional_abilities(posterior, irt, model, rule, random_seed=derived_rng(random_seed, "abilities"), cores=cores)
        posterior = posterior.assign(theta=theta)
        posterior.attrs.update(theta_draws="exact conditional (quadrature + independence MH)", theta_mh_acceptance=acceptance,
                               quadrature_nodes=len(rule), quadrature_error=error)
        groups = {"log_likelihood": log_lik.to_dataset()}
    posterior.attrs.update(idata["posterior"].attrs, method=method)
    tree = xr.DataTree.from_dict(
        {
            "posterior": posterior,
            "sample_stats": idata["sample_stats"].to_dataset(),
            **groups,
            "observed_data": xr.Dataset({"correct": ("answer", table["correct"].to_numpy())}),
            "constant_data": xr.Dataset({c: ("answer", table[c].to_numpy()) for c in ("respondent", "item")}),
        }
    )
    return IRTResult(tree, model, table, report, n_options, hierarchical, method)


def _sample_marginal(table, model, n_options, hierarchical, settings, refinements: int = 2):
    """Sample the marginal model; if the quadrature's error at the posterior exceeds
    :data:`QUADRATURE_TOLERANCE` (steep items, :func:`quadrature_error`), rebuild with half the
    node spacing and sample again, up to ``refinements`` times, then warn. Hierarchical
    difficulties centred by :func:`~bayes_raters.irt.binary.model.centred_items` whose fit diverges are
    sampled non-centred too, and the fit with fewer divergences is kept
    (:func:`~bayes_raters.sampling.fewest_divergences`; ``posterior.attrs["difficulty_form"]``,
    ``divergences_by_form``). Why: with many answers per item the centred form mixes best, but
    when the difficulties' true spread is small their scale is a funnel there; on the 2PL SBC's
    400 x 10 simulations with ``b_sigma`` 0.08, 0.02 and 0.42 the centred form gave 35, 19 and
    231 divergences (min bulk ESS 103, 145, 7), the non-centred none (ESS 999, 693, 557)
    (``models/irt.md``). Returns ``(model, idata, report, rule, error)``."""
    centred = centred_items(table, model)
    forms = {"centred" if centred["b"] else "non-centred": centred}
    if hierarchical and centred["b"]:
        forms["non-centred"] = {**centred, "b": False}

    def sample_form(form):
        def build(rule):
            irt = build_marginal_from_table(table, model, n_options=n_options, hierarchical=hierarchical, rule=rule, centred=form)
            return irt, rule or default_rule(irt["pattern_answered"].get_value())

        return sample_refined(
            build, lambda irt: sample_model(irt, what=f"IRT {model} (marginal)", **settings),
            lambda idata, irt, rule: quadrature_error(idata["posterior"].to_dataset(), irt, model, rule),
            finer_rule, tolerance=QUADRATURE_TOLERANCE, refinements=refinements,
        )

    name, (irt, idata, report, rule, error), tried = fewest_divergences(sample_form, forms)
    if hierarchical:
        idata["posterior"].attrs.update(difficulty_form=name, divergences_by_form=", ".join(f"{k}: {v}" for k, v in tried.items()))
    if error > QUADRATURE_TOLERANCE:
        warnings.warn(
            f"the quadrature over theta is still off by {error:.1e} per respondent with {len(rule)} nodes "
            "(very steep items); the marginal posterior may be slightly off. method='joint' avoids quadrature.",
            QuadratureWarning,
            stacklevel=3,
        )
    return irt, idata, report, rule, error
