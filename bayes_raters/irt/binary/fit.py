"""Fit the unidimensional binary IRT models (1PL-4PL, marginal or joint) and hand the draws to
:class:`~bayes_raters.irt.binary.result.IRTResult`; ``fit_irt(dims=...)`` passes multidimensional
fits on to :mod:`bayes_raters.irt.multidimensional.fit`."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr

from bayes_raters.errors import InvalidInputError, QuadratureWarning
from bayes_raters.fit_signature import Inference, NutsSampler, sampler_block
from bayes_raters.inference import sample_model
from bayes_raters.inference_record import InferenceRecord
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
    IRTSpec,
    build_from_table,
    centred_items,
    resolve_hierarchical,
    validate_responses,
)
from bayes_raters.irt.binary.result import LOG_LIK_DRAWS, IRTResult
from bayes_raters.irt.slopes import rest_correlations, warn_contradicted_slopes
from bayes_raters.results import thinned_posterior
from bayes_raters.sampling import derived_rng, fewest_divergences, sample_refined

if TYPE_CHECKING:
    from bayes_raters.irt.multidimensional.result import MultidimensionalIRTResult


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


@sampler_block(reasons={
    "nuts_sampler": 'None is ``"pymc"``.',
    "target_accept": "None is 0.9, and 0.97 for the unidimensional 3PL/4PL (see above).",
})
def fit_irt(
    data: pd.DataFrame,
    model: Literal["1pl", "2pl", "3pl", "4pl"] = "2pl",
    *,
    method: Literal["marginal", "joint"] = "marginal",
    n_options: int | None = None,
    hierarchical: bool | None = None,
    dims: int | None = None,
    dimensions: dict | None = None,
    anchors=None,
    inference: Inference = "auto",
    respondent: str = "respondent",
    item: str = "item",
    score: str = "correct",
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    cores: int | None = None,
    random_seed: int | np.random.Generator | None = None,
    nuts_sampler: NutsSampler | None = None,
    target_accept: float | None = None,
    progressbar: bool | None = None,
    nuts_kwargs: dict | None = None,
) -> IRTResult | MultidimensionalIRTResult:
    r"""Fit a 1PL/2PL/3PL/4PL model (see :mod:`bayes_raters.irt.binary.model`) to long answers
    (``respondent``, ``item``, ``score`` columns); missing answers are absent rows.

    ``method="marginal"`` (default) integrates the abilities out by quadrature and samples
    the item parameters only (:mod:`bayes_raters.irt.binary.marginal`); theta is then drawn from its
    exact conditional for every posterior draw, so the posterior has ``theta`` with dims
    ``respondent`` as before, and ``log_likelihood`` holds each respondent's marginal
    log-likelihood (LOO over respondents). ``method="joint"`` samples theta with NUTS and
    stores the per-answer log-likelihood (thinned to 400 draws). Convergence is checked on the
    sampled parameters; a :class:`ConvergenceWarning` is issued if it fails. The draws repeat
    exactly for the same ``random_seed`` (theta draws included). ``progressbar``: None (default)
    shows the sampler's progress bar in a terminal or notebook only. ``cores``: chains run in
    parallel (NUTS processes, theta-draw threads); None (default) one per CPU. (``cores=1`` ran the chains one after the
    other: ``models/irt.md`` gives LSAT-7's timings both ways.)

    ``inference`` (unidimensional marginal method): ``"auto"`` (default) keeps importance-sampled
    Laplace draws of the item parameters when they pass every check (Pareto :math:`\hat k`, R-hat, ESS)
    (:mod:`bayes_raters.laplace`) and samples with NUTS otherwise; ``"nuts"``/``"laplace"`` force
    one (``draws`` per chain either way; the Laplace path resamples them from twice as many
    proposals). When the draws are rejected with Pareto :math:`\hat k \le 1`, the 1PL/2PL's NUTS
    starts from the Laplace approximation (``sample_model(warm_start="after_laplace")``: a draw of it per
    chain, its covariance as dense mass matrix, 300 tuning iterations; ``result.inference.warm_start``);
    the guessing models start cold (their banana-shaped posteriors make the Hessian a poor mass
    matrix). Every unidimensional marginal fit whose NUTS chains fail R-hat or ESS without a
    divergence adds ``chains`` more (``sample_model(extra_chains=)``). Each path is faster than a
    cold NUTS on LSAT-7 (``models/irt.md``; ``benchmarks/bench_lsat7.py`` measures them). The
    multidimensional models take the same ``inference``.

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
    non-centred too, and the fit with fewer divergences is kept (``result.inference.parametrisation``).

    ``dims=K`` (2 or 3) fits the exploratory multidimensional 2PL/3PL, ``dimensions={item:
    name}`` the confirmatory one with correlated abilities (``anchors=[item, ...]`` picks the
    exploratory model's anchor items); both return a
    :class:`~bayes_raters.irt.multidimensional.result.MultidimensionalIRTResult`
    (:mod:`bayes_raters.irt.multidimensional.model`). ``dims=1`` is the unidimensional model.

    Parameters
    ----------
    data : pandas.DataFrame
        Long answers, one row per (respondent, item), the ``score`` column 0/1 (True/False).
    model : {"1pl", "2pl", "3pl", "4pl"}
        The item response function.
    method : {"marginal", "joint"}
        Integrate the abilities out (default) or sample them with NUTS.
    n_options : int, optional
        Answer options per item (guessing prior of the 3PL/4PL).
    hierarchical : bool, optional
        Population priors on the items; None decides by the number of items. Unidimensional
        models only: a multidimensional fit refuses it.
    dims : int, optional
        Number of abilities of an exploratory multidimensional model (2 or 3).
    dimensions : dict, optional
        Item -> ability name: a confirmatory multidimensional model.
    anchors : list, optional
        The exploratory model's anchor items, one per ability.
    inference : {"auto", "nuts", "laplace"}
        How the item parameters are drawn (see above).
    respondent, item, score : str
        Column names in ``data``: who answered, which item, and the right (1) or wrong (0) answer
        (default column ``correct``).
    {sampler_block}
    nuts_kwargs : dict, optional
        Other keywords for the NUTS sampler.

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
    multidimensional = dimensions is not None or (dims is not None and dims != 1) or anchors is not None
    if multidimensional and hierarchical is not None:
        raise InvalidInputError("hierarchical= is for unidimensional models: a multidimensional fit (dims=, dimensions=, anchors=) "
                                "has its own priors; leave hierarchical out.")
    nuts_sampler = "pymc" if nuts_sampler is None else nuts_sampler
    table = validate_responses(data, respondent=respondent, item=item, score=score)
    hierarchical = resolve_hierarchical(hierarchical, table)
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
        record = InferenceRecord.of(idata).updated(method="joint")
        log_lik = _thinned_log_likelihood(idata, irt, LOG_LIK_DRAWS)
        groups = {"log_likelihood": log_lik["log_likelihood"].to_dataset() if isinstance(log_lik, xr.DataTree) else log_lik}
        posterior = idata["posterior"].to_dataset()
    else:
        marginal = {**settings, "inference": inference, "extra_chains": chains, "warm_start": "never" if guessing else "after_laplace"}
        irt, idata, report, rule, error = _sample_marginal(table, model, n_options, hierarchical, marginal)
        posterior = idata["posterior"].to_dataset()
        theta, log_lik, acceptance = conditional_abilities(posterior, irt, model, rule, random_seed=derived_rng(random_seed, "abilities"), cores=cores)
        posterior = posterior.assign(theta=theta)
        record = InferenceRecord.of(idata).with_exact_abilities(acceptance, len(rule), quadrature_error=float(error))
        groups = {"log_likelihood": log_lik.to_dataset()}
    posterior.attrs.update(idata["posterior"].attrs)
    tree = xr.DataTree.from_dict(
        {
            "posterior": posterior,
            "sample_stats": idata["sample_stats"].to_dataset(),
            **groups,
            "observed_data": xr.Dataset({"correct": ("answer", table["correct"].to_numpy())}),
            "constant_data": xr.Dataset({c: ("answer", table[c].to_numpy()) for c in ("respondent", "item")}),
        }
    )
    record.write(tree)
    spec = IRTSpec(model=model, n_options=n_options, hierarchical=hierarchical, method=method)
    return IRTResult(idata=tree, spec=spec, table=table, report=report)


def _sample_marginal(table, model, n_options, hierarchical, settings, refinements: int = 2):
    """Sample the marginal model; if the quadrature's error at the posterior exceeds
    :data:`QUADRATURE_TOLERANCE` (steep items, :func:`quadrature_error`), rebuild with half the
    node spacing and sample again, up to ``refinements`` times, then warn. Hierarchical
    difficulties centred by :func:`~bayes_raters.irt.binary.model.centred_items` whose fit diverges are
    sampled non-centred too, and the fit with fewer divergences is kept
    (:func:`~bayes_raters.sampling.fewest_divergences`; ``result.inference.parametrisation`` and
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
        InferenceRecord.of(idata).updated(parametrisation=name, divergences_by_form=tried).write(idata)
    if error > QUADRATURE_TOLERANCE:
        warnings.warn(
            f"the quadrature over theta is still off by {error:.1e} per respondent with {len(rule)} nodes "
            "(very steep items); the marginal posterior may be slightly off. method='joint' avoids quadrature.",
            QuadratureWarning,
            stacklevel=3,
        )
    return irt, idata, report, rule, error
