r"""Fitting the many-facet rater model (:mod:`bayes_raters.facets.model`): NUTS over the facets,
then every response's ability drawn from its exact conditional given each posterior draw
(:func:`bayes_raters.facets.draws.conditional_draws`), its true score and each system's
PRMSE, handed to :class:`~bayes_raters.facets.result.FacetsResult` (the rater, prompt and
response tables, and LOO against the ordinal true-score model).
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.errors import QuadratureWarning
from bayes_raters.facets.adaptive import (
    ADAPTIVE_NODES,
    ADAPTIVE_TOLERANCE,
    REFINED_NODES,
    adaptive_error,
    uses_adaptive,
)
from bayes_raters.facets.draws import (
    conditional_draws,
    prmse_draws,
)
from bayes_raters.facets.model import FacetsSpec, build_facets_model
from bayes_raters.facets.result import FacetsResult
from bayes_raters.fit_signature import NutsSampler, sampler_block
from bayes_raters.inference import sample_model
from bayes_raters.inference_record import InferenceRecord
from bayes_raters.irt.slopes import rater_rest_correlations, warn_contradicted_slopes
from bayes_raters.sampling import derived_rng, fewest_divergences, sample_refined

#: NUTS on the centred form starts from the Laplace approximation (``fit_facets(warm_start=True)``)
#: when Pareto k of 1,000 proposals is at most this: near-Gaussian posteriors gain from the warm
#: start, the non-centred form's (k above 0.8) lose (``models/irt_facets.md``), so that form
#: starts cold.
WARM_K_MAX_FACETS = 0.7
#: Divergences of the centred fit, as a share of its draws, up to which it is sampled once more
#: with ``target_accept`` raised halfway to 1 (a smaller step) before the non-centred form runs:
#: a few stray divergences are a step size too large somewhere in a posterior the centred form
#: fits, a funnel gives many (:func:`_sample_forms`).
STRAY_DIVERGENCES = 0.01
#: Fewest raters for which ``fit_facets(consistency=None)`` gives each rater a consistency of its own.
PER_RATER_CONSISTENCY_MIN_RATERS = 3


def resolve_consistency(consistency: bool | None, n_raters: int) -> bool:
    r"""``consistency`` as given, or, for None, whether the raters get a consistency each: with
    :data:`PER_RATER_CONSISTENCY_MIN_RATERS` or more raters. With two raters the data say mainly
    one thing about their consistencies, how far the two agree (a one-factor model with two
    indicators identifies the product of their loadings, not each; only the way each rater spreads
    the categories over the shared thresholds says more), so their ratio rests mostly on the
    prior of :math:`\sigma_{\log a}`, a funnel NUTS diverged in under either parametrisation
    (``models/irt_facets.md``, MSPatients), and the common consistency of the many-facet Rasch
    model is fitted. ``result.spec.consistency`` records the choice; ``consistency=True`` asks for
    one each."""
    if consistency is not None:
        return bool(consistency)
    return n_raters >= PER_RATER_CONSISTENCY_MIN_RATERS


#: The rater, prompt and scale parameters kept in the posterior beside the free variables.
FACET_NAMES = ("log_a", "a", "severity", "difficulty", "thresholds")


@sampler_block(reasons={
    "nuts_sampler": 'None is ``"pymc"``: the fused likelihood kernel runs on PyTensor\'s Numba backend, which nutpie\'s '
                    "compile does not reach in time (``models/irt_facets.md``).",
    "target_accept": "None is 0.9 (the retries of ``centred=None`` raise it where the centred form diverges).",
})
def fit_facets(
    data: pd.DataFrame,
    system_scores: pd.DataFrame | None = None,
    *,
    consistency: bool | None = None,
    inference: Literal["nuts", "auto", "laplace"] = "nuts",
    centred: bool | None = None,
    warm_start: bool = True,
    response: str = "response",
    prompt: str = "prompt",
    rater: str = "rater",
    score: str = "score",
    system: str = "system",
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    cores: int | None = None,
    random_seed: int | np.random.Generator | None = None,
    nuts_sampler: NutsSampler | None = None,
    target_accept: float | None = None,
    progressbar: bool | None = None,
) -> FacetsResult:
    """Fit the many-facet rater model to long ratings ``(response, prompt, rater, score)``
    (and, optionally, system scores ``(response, system, score)`` for PRMSE), abilities
    integrated out; see :mod:`bayes_raters.facets.model`. ``consistency=False`` gives the
    many-facet Rasch model (one discrimination for all raters), True a consistency per rater;
    None (default) a consistency per rater with three raters or more and the common one with two,
    whose data say little about how their consistencies differ (:func:`resolve_consistency`;
    ``result.spec.consistency`` says which). Raters whose scores fall or stay
    flat as the other raters' scores of the same responses rise raise a
    :class:`~bayes_raters.errors.SlopeWarning` (their consistency is forced positive).

    ``inference``: ``"nuts"`` (default); ``"auto"`` keeps importance-sampled Laplace draws of the
    rater, prompt and threshold parameters when they pass every check (Pareto :math:`\\hat k`,
    R-hat, ESS; :mod:`bayes_raters.laplace`) and runs NUTS otherwise; ``"laplace"`` forces them
    (``result.inference.path`` says which ran). Not the default here: the draws pass their check
    but understate the hierarchical scales' posterior SDs beyond Monte Carlo error, their skewed
    posteriors sitting at the edge of what the Gaussian proposal covers (``models/irt_facets.md``).
    ``cores``: chains in parallel, None (default) one per CPU. ``centred``: the hierarchical rater
    and prompt groups centred (True) or non-centred (False); None (default) samples the centred
    form and, when its draws diverge, the centred form again with a smaller step (a few stray
    divergences) and/or the non-centred one, keeping the fit with the fewest divergences
    (:func:`_sample_forms`; ``result.inference.parametrisation`` says which, and
    ``result.inference.divergences_by_form`` what each form gave). ``warm_start``: True (default) starts NUTS on the
    centred form from the Laplace approximation (mode by L-BFGS, inverse Hessian as dense mass
    matrix, a draw of it per chain, 300 tuning iterations) when Pareto k of 1,000
    proposals from it is at most :data:`WARM_K_MAX_FACETS` (0.7), cold otherwise
    (``sample_model(warm_start="always")``; ``result.inference.warm_start`` says so; more ESS in
    less time, ``models/irt_facets.md``); False always starts cold.

    Parameters
    ----------
    data : pandas.DataFrame
        Long ratings, one row per (response, prompt, rater).
    system_scores : pandas.DataFrame, optional
        Long system scores (for PRMSE against the model's true scores).
    consistency : bool, optional
        Each rater's own slope (consistency, True) or one for all (the many-facet Rasch model,
        False); None chooses by the number of raters (see above).
    inference : {"nuts", "auto", "laplace"}
        How the parameters are drawn (see above).
    centred : bool, optional
        Parametrisation of the hierarchical groups; None chooses from the data (see above).
    warm_start : bool
        Start NUTS from the Laplace approximation where it applies.
    response, prompt, rater, score, system : str
        Column names in the two tables.
    {sampler_block}

    Returns
    -------
    FacetsResult
        The posterior, rater, prompt, response and system tables, and convergence.

    Examples
    --------
    >>> from bayes_raters.facets import fit_facets, simulate_facet_ratings
    >>> ratings, scores, _ = simulate_facet_ratings(200, 5, 2, 4, random_seed=3)
    >>> result = fit_facets(ratings, scores, random_seed=4, progressbar=False)
    >>> result.convergence.converged, result.rater_table().shape[0]
    (True, 5)
    """
    nuts_sampler = "pymc" if nuts_sampler is None else nuts_sampler
    target_accept = 0.9 if target_accept is None else target_accept
    ratings = data
    n_raters = int(data[rater].nunique()) if rater in getattr(data, "columns", ()) else PER_RATER_CONSISTENCY_MIN_RATERS
    consistency = resolve_consistency(consistency, n_raters)  # a missing column is reported by the model's validation
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
    posterior.attrs.update(idata["posterior"].attrs)
    table = info["table"]
    name = "ratings" if info["arrays"] is None else "ratings_and_scores"
    tree = xr.DataTree.from_dict({
        "posterior": posterior, "sample_stats": idata["sample_stats"].to_dataset(),
        "log_likelihood": xr.Dataset({name: per_response(log_lik)}),
        "observed_data": xr.Dataset({"category": ("rating", table["category"].to_numpy())}),
        "constant_data": xr.Dataset({c: ("rating", table[c].to_numpy()) for c in ("response", "prompt", "rater")}),
    })
    InferenceRecord.of(idata).with_exact_abilities(
        rate, len(info["rule"]), quadrature="shared trapezoid" if n_nodes is None else f"adaptive Gauss-Hermite, {n_nodes} nodes per response",
        quadrature_error=float(error),
    ).updated(parametrisation="centred" if form else "non-centred", divergences_by_form=tried).write(tree)
    return FacetsResult(idata=tree, spec=FacetsSpec(consistency=consistency), table=table, scores=info["scores"],
                        systems=info["systems"], report=report)


def _sample_forms(sample_form, centred: bool | None, target_accept: float = 0.9, n_draws: int = 2000):
    r"""Sample the centred form (or the one ``centred`` names) and, with ``centred=None``, when
    the centred draws diverged: the centred form again with ``target_accept`` raised halfway to 1
    if the divergences were at most :data:`STRAY_DIVERGENCES` of the ``n_draws``, then the
    non-centred form if they remain; keep the fit with the fewest divergences (the earlier on a
    tie). ``sample_form`` takes ``(centred, target_accept)``. Why: with few raters or prompts (5
    and 2 in the SBC configuration) a hierarchical scale whose true value is small leaves a funnel
    that the centred form cannot enter (sigma_a 0.03: 157 divergences), while raters that differ
    and rate often (an erratic rater among 8, 89+ ratings each) mix worse non-centred (max R-hat
    1.011 against 1.003); and a centred fit with a stray divergence or two loses it at a higher
    ``target_accept`` far sooner than the non-centred form converges (``models/irt_facets.md`` has
    the tables). Only the kept fit's warnings
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
