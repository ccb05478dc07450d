r"""Fitting the many-facet rater model (:mod:`bayes_raters.facets.model`): NUTS over the facets,
then every response's ability drawn from its exact conditional given each posterior draw
(:func:`bayes_raters.facets.draws.conditional_draws`), its true score and each system's
PRMSE; the rater, prompt and response tables, and LOO against the ordinal true-score model.

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

import warnings
from dataclasses import dataclass

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.errors import InvalidInputError, QuadratureWarning
from bayes_raters.facets.adaptive import (
    ADAPTIVE_NODES,
    ADAPTIVE_TOLERANCE,
    REFINED_NODES,
    adaptive_error,
    uses_adaptive,
)
from bayes_raters.facets.draws import (
    conditional_draws,
    draw_parameters,
    fit_statistics,
    parameter_arrays,
    prmse_draws,
    rating_logits,
)
from bayes_raters.facets.model import build_facets_model, facet_layout
from bayes_raters.irt.slopes import rater_rest_correlations, slope_reason, warn_contradicted_slopes
from bayes_raters.persistence import plain_value
from bayes_raters.results import FitResult, draw_categories, interval_table, thinned_posterior
from bayes_raters.sampling import ConvergenceReport, derived_rng, fewest_divergences, sample_model, sample_refined

ERRATIC_MEAN_SQUARE = 1.5
PREDICTABLE_MEAN_SQUARE = 0.5
ERRATIC_CONSISTENCY = 0.6
ERRATIC_PROBABILITY = 0.9
FIT_DRAWS = 200  # posterior draws behind the fit statistics
#: NUTS on the centred form starts from the Laplace approximation (``fit_facets(warm_start=True)``)
#: when Pareto k of 1,000 proposals is at most this: on 400 essays x 8 raters (k 0.62) the warm
#: start gave 2.5x the ESS with 2.4x fewer gradients; on an SBC prior draw with small rater
#: scales (non-centred form, k 0.81) it gave ESS 381 where the cold start gave 485, and there
#: the non-centred forms' k was 0.81-1.51 (``models/irt_facets.md``), so that form starts cold.
WARM_K_MAX_FACETS = 0.7
#: Divergences of the centred fit, as a share of its draws, up to which it is sampled once more
#: with ``target_accept`` raised halfway to 1 (a smaller step) before the non-centred form runs:
#: a few stray divergences are a step size too large somewhere in a posterior the centred form
#: fits, a funnel gives many (:func:`_sample_forms`).
STRAY_DIVERGENCES = 0.01
#: The rater, prompt and scale parameters kept in the posterior beside the free variables.
FACET_NAMES = ("log_a", "a", "severity", "difficulty", "thresholds")


@dataclass(repr=False)
class FacetsResult(FitResult):
    """A fitted many-facet model: ``idata`` (posterior: ``severity``, ``a`` (consistency) per
    rater, ``difficulty`` per prompt, ``thresholds``, ``theta`` and ``true_score`` per response,
    ``prmse`` per system when systems were given; sample_stats; log_likelihood per response;
    observed_data ``category`` per rating; constant_data ids per rating), the validated
    ``table``, the ``scores`` in category order, the ``systems`` table (or None), whether rater
    ``consistency`` was estimated, and the convergence ``report``."""

    idata: xr.DataTree
    table: pd.DataFrame
    scores: list
    systems: pd.DataFrame | None
    consistency: bool
    report: ConvergenceReport

    summary_var_names = ("severity", "a", "difficulty", "thresholds", "sigma_severity", "sigma_difficulty",
                         "mu_log_a", "sigma_log_a", "prmse")
    family = "many-facet rater model"

    @property
    def model(self) -> str:
        """The model's name: ``"many_facet"`` (a consistency per rater) or ``"many_facet_rasch"``
        (``consistency=False``: one discrimination for all raters)."""
        return "many_facet" if self.consistency else "many_facet_rasch"

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
        if self.consistency:
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
        return {"scores": self.scores, "systems": systems, "consistency": self.consistency,
                "report": self.report.to_dict()}

    @classmethod
    def _from_saved(cls, tree: xr.DataTree, config: dict) -> FacetsResult:
        ids = tree["constant_data"].to_dataset()
        table = pd.DataFrame({c: ids[c].values for c in ("response", "prompt", "rater")})
        table["category"] = tree["observed_data"]["category"].values
        table["score"] = np.asarray(config["scores"])[table["category"]]
        systems = None if config["systems"] is None else pd.DataFrame(config["systems"])
        return cls(tree, table, config["scores"], systems, config["consistency"], ConvergenceReport(**config["report"]))

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


def fit_facets(
    ratings: pd.DataFrame, system_scores: pd.DataFrame | None = None, *, consistency: bool = True,
    response: str = "response", prompt: str = "prompt", rater: str = "rater", score: str = "score",
    system: str = "system", draws: int = 1000, tune: int = 1000, chains: int = 2, cores: int | None = None,
    random_seed=None, nuts_sampler: str = "pymc", target_accept: float = 0.9, progressbar: bool | None = None,
    inference: str = "nuts", centred: bool | None = None, warm_start: bool = True,
) -> FacetsResult:
    """Fit the many-facet rater model to long ratings ``(response, prompt, rater, score)``
    (and, optionally, system scores ``(response, system, score)`` for PRMSE), abilities
    integrated out; see :mod:`bayes_raters.facets.model`. ``consistency=False`` gives the
    many-facet Rasch model (one discrimination for all raters). Raters whose scores fall or stay
    flat as the other raters' scores of the same responses rise raise a
    :class:`~bayes_raters.errors.SlopeWarning` (their consistency is forced positive).

    ``inference``: ``"nuts"`` (default); ``"auto"`` keeps importance-sampled Laplace draws of the
    rater, prompt and threshold parameters when they pass every check (Pareto :math:`\\hat k`,
    R-hat, ESS; :mod:`bayes_raters.laplace`) and runs NUTS otherwise; ``"laplace"`` forces them
    (``posterior.attrs["inference"]`` says which ran). Not the default here: on 400 essays x 8
    raters x 2 prompts the draws passed (Pareto k 0.66, 27 s against NUTS's 45 s) but the
    posterior SD of ``sigma_severity`` was 0.82 of NUTS's and of one ``log_a`` 0.82, more than
    Monte Carlo error (about 0.03 at that ESS): the hierarchical scales' skewed posteriors sit at
    the edge of what the Gaussian proposal covers. ``cores``: chains in parallel, None (default)
    one per CPU (card ``models/irt_facets.md``: timings). ``centred``: the hierarchical rater
    and prompt groups centred (True) or non-centred (False); None (default) samples the centred
    form and, when its draws diverge, the centred form again with a smaller step (a few stray
    divergences) and/or the non-centred one, keeping the fit with the fewest divergences
    (:func:`_sample_forms`; ``posterior.attrs["parametrisation"]`` says which, and
    ``divergences_by_form`` what each form gave). ``warm_start``: True (default) starts NUTS on the
    centred form from the Laplace approximation (mode by L-BFGS, inverse Hessian as dense mass
    matrix, a draw of it per chain, 300 tuning iterations) when Pareto k of 1,000
    proposals from it is at most :data:`WARM_K_MAX_FACETS` (0.7), cold otherwise
    (``sample_model(warm_start="always")``; ``posterior.attrs["nuts_warm_start"]`` says so): on 400
    essays x 8 raters x 2 prompts 2.5x the ESS in 0.7x the time; False always starts cold.

    Parameters
    ----------
    ratings : pandas.DataFrame
        Long ratings, one row per (response, prompt, rater).
    system_scores : pandas.DataFrame, optional
        Long system scores (for PRMSE against the model's true scores).
    consistency : bool
        Each rater's own slope (consistency); False gives the many-facet Rasch model.
    response, prompt, rater, score, system : str
        Column names in the two tables.
    draws, tune, chains : int
        Posterior draws and tuning iterations per chain, and the number of chains.
    cores : int, optional
        Chains run in parallel; None, one per CPU.
    random_seed : int, numpy.random.Generator or None
        Seed of every draw (the same seed gives the same draws).
    nuts_sampler : str
        ``"pymc"``, ``"nutpie"``, ``"numpyro"`` or ``"blackjax"``.
    target_accept : float
        NUTS target acceptance rate.
    progressbar : bool, optional
        None shows the progress bar in a terminal or notebook only.
    inference : {"nuts", "auto", "laplace"}
        How the parameters are drawn (see above).
    centred : bool, optional
        Parametrisation of the hierarchical groups; None chooses from the data (see above).
    warm_start : bool
        Start NUTS from the Laplace approximation where it applies.

    Returns
    -------
    FacetsResult
        The posterior, rater, prompt, response and system tables, and convergence.

    Examples
    --------
    >>> from bayes_raters.facets import fit_facets, simulate_facet_ratings
    >>> ratings, scores, _ = simulate_facet_ratings(200, 5, 2, 4, random_seed=3)
    >>> result = fit_facets(ratings, scores, random_seed=3, progressbar=False)
    >>> result.convergence.converged, result.rater_table().shape[0]
    (True, 5)
    """
    options = {"response": response, "prompt": prompt, "rater": rater, "score": score, "system": system}
    options["fused"] = nuts_sampler in ("pymc", "nutpie")  # the fused Op has no JAX form
    model = build_facets_model(ratings, system_scores, consistency=consistency, **options)
    info = model.facets
    warn_contradicted_slopes(rater_rest_correlations(info["table"]), "many-facet rater model", subject="rater")
    adaptive = uses_adaptive(model)

    def sample_form(form):
        form, accept = form  # (centred, target_accept)

        def build(n_nodes):  # n_nodes None: the shared rule (the model built above, if its form), else adaptive nodes
            n_nodes = (n_nodes or ADAPTIVE_NODES) if adaptive else None
            if n_nodes is None and form:
                return model, None
            return build_facets_model(ratings, system_scores, consistency=consistency, adaptive=n_nodes, centred=form, **options), n_nodes

        def sample(fitted):
            free = {v.name for v in fitted.free_RVs}
            names = [v.name for v in fitted.free_RVs] + [n for n in FACET_NAMES if n in fitted.named_vars and n not in free]
            checked = [n for n in names if not (n.startswith("difficulty") and len(info["layout"].prompts) == 1)]
            return sample_model(
                fitted, draws=draws, tune=tune, chains=chains, cores=cores, random_seed=random_seed, nuts_sampler=nuts_sampler,
                target_accept=accept, progressbar=progressbar, what="many-facet rater model", var_names=names,
                inference=inference, check_var_names=checked, warm_start="always" if warm_start and form else "never",
                warm_k_max=WARM_K_MAX_FACETS,
            )

        def error_of(idata, fitted, n_nodes):
            return 0.0 if n_nodes is None else adaptive_error(idata["posterior"].to_dataset(), fitted.facets, n_nodes)

        return sample_refined(build, sample, error_of, lambda n: REFINED_NODES, tolerance=ADAPTIVE_TOLERANCE, refinements=1)

    (form, (model, idata, report, n_nodes, error)), tried = _sample_forms(sample_form, centred, target_accept, draws * chains)
    if error > ADAPTIVE_TOLERANCE:
        warnings.warn(f"the adaptive quadrature over the abilities is off by {error:.1e} per response with {n_nodes} nodes; "
                      "the posterior may be slightly off.", QuadratureWarning, stacklevel=2)
    posterior = idata["posterior"].to_dataset()
    log_lik, theta, true, rate = conditional_draws(posterior, info["layout"], info["rule"], info["arrays"], derived_rng(random_seed, "facets_abilities"), cores)
    shape = (posterior.sizes["chain"], posterior.sizes["draw"])
    coords = {"chain": posterior["chain"].values, "draw": posterior["draw"].values}
    per_response = lambda v: xr.DataArray(  # noqa: E731
        v.reshape(*shape, -1), dims=("chain", "draw", "response"), coords={**coords, "response": info["layout"].responses}
    )
    posterior = posterior.assign(theta=per_response(theta), true_score=per_response(true))
    if info["arrays"] is not None:
        prmse = prmse_draws(true, info["arrays"]).reshape(*shape, -1)
        posterior["prmse"] = xr.DataArray(prmse, dims=("chain", "draw", "system"), coords={**coords, "system": info["arrays"][2]})
    posterior.attrs.update(idata["posterior"].attrs, theta_draws="exact conditional (quadrature + independence MH)",
                           theta_mh_acceptance=rate, quadrature_nodes=len(info["rule"]),
                           quadrature="shared trapezoid" if n_nodes is None else f"adaptive Gauss-Hermite, {n_nodes} nodes per response",
                           quadrature_error=error, parametrisation="centred" if form else "non-centred",
                           divergences_by_form=", ".join(f"{k}: {v}" for k, v in tried.items()))
    table = info["table"]
    name = "ratings" if info["arrays"] is None else "ratings_and_scores"
    tree = xr.DataTree.from_dict({
        "posterior": posterior, "sample_stats": idata["sample_stats"].to_dataset(),
        "log_likelihood": xr.Dataset({name: per_response(log_lik)}),
        "observed_data": xr.Dataset({"category": ("rating", table["category"].to_numpy())}),
        "constant_data": xr.Dataset({c: ("rating", table[c].to_numpy()) for c in ("response", "prompt", "rater")}),
    })
    return FacetsResult(tree, table, info["scores"], info["systems"], consistency, report)


def _sample_forms(sample_form, centred: bool | None, target_accept: float = 0.9, n_draws: int = 2000):
    r"""Sample the centred form (or the one ``centred`` names) and, with ``centred=None``, when
    the centred draws diverged: the centred form again with ``target_accept`` raised halfway to 1
    if the divergences were at most :data:`STRAY_DIVERGENCES` of the ``n_draws``, then the
    non-centred form if they remain; keep the fit with the fewest divergences (the earlier on a
    tie). ``sample_form`` takes ``(centred, target_accept)``. Why: with few raters or prompts (5
    and 2 in the SBC configuration) a hierarchical scale whose true value is small leaves a funnel
    that the centred form cannot enter (sigma_a 0.03: 157 divergences), while raters that differ
    and rate often (an erratic rater among 8, 89+ ratings each) mix worse non-centred (max R-hat
    1.011 against 1.003); and on 400 essays x 8 raters x 2 prompts (seed 16) the centred fit had
    one divergence, the non-centred 28 (62 s in all), where the centred form at target_accept
    0.95 had none (15.6 s); ``models/irt_facets.md`` has the tables. Only the kept fit's warnings
    reach the user. Returns ``((centred, fit), {form name: divergences})``, ``fit`` the kept
    :class:`~bayes_raters.sampling.RefinedFit`."""
    raised = round(1.0 - (1.0 - target_accept) / 2, 4)
    forms = {"centred": (True, target_accept), f"centred, target_accept {raised:g}": (True, raised),
             "non-centred": (False, target_accept)}
    if centred is not None:
        forms = {name: form for name, form in forms.items() if form[0] == bool(centred)}
        forms = dict(list(forms.items())[:1])

    def skip(name, tried):
        return name.startswith("centred, ") and tried["centred"] > STRAY_DIVERGENCES * n_draws

    name, fit, tried = fewest_divergences(sample_form, forms, skip)
    return (forms[name][0], fit), tried
