r"""The inference pipeline every PyMC-model fit runs, one step after another, each step filling
the fit's :class:`~bayes_raters.inference_record.InferenceRecord`.

:func:`sample_model` is the whole path, read top to bottom:

1. **Laplace draws** (``inference="laplace"`` or ``"auto"``; :func:`_laplace_step`): the mode,
   the Hessian and importance-sampled proposals (:mod:`bayes_raters.laplace`); a batch that
   passes Pareto :math:`\hat k` but not R-hat or ESS is followed by one fresh, larger batch
   (``laplace_retries``). Kept when their report passes every rule (``"auto"``) or always
   (``"laplace"``); otherwise the record says why NUTS runs (``reason``).
2. **The warm start** (:func:`_warm_step`): where ``warm_start`` asks for it and the sampler is
   PyMC's, NUTS starts from the Laplace approximation (its draws as starting points, its
   covariance as a dense mass matrix, ``WARM_TUNE`` tuning iterations) when Pareto
   :math:`\hat k` is at most ``warm_k_max``.
3. **NUTS** (:func:`_nuts_step`) with an explicit sampler (PyMC 6 silently prefers nutpie when it
   is installed), quiet, in strict floating point, one BLAS thread share per chain.
4. **Extra chains** (:func:`_extra_chains_step`): when the draws fail R-hat or ESS but none
   diverged (slow mixing, not a biased sampler), ``extra_chains`` more, pooled with the first;
   with nutpie they reuse the first run's compiled model (:func:`_run_nutpie`).

The record is written into the returned tree (``result.inference`` reads it back), and a
:class:`~bayes_raters.errors.ConvergenceWarning` names every failed rule.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import NamedTuple

import numpy as np
import pymc as pm
import xarray as xr
from threadpoolctl import threadpool_limits

from bayes_raters import laplace
from bayes_raters.errors import InvalidInputError
from bayes_raters.inference_record import InferenceRecord
from bayes_raters.nutpie_cache import compile_nutpie
from bayes_raters.sampling import (
    ConvergenceReport,
    blas_threads,
    convergence_report,
    derived_rng,
    quiet_pymc,
    resolve_cores,
    resolve_progressbar,
    sampler_settings,
    strict_float,
    warn_if_not_converged,
)

INFERENCE = ("nuts", "laplace", "auto")
WARM_STARTS = ("never", "after_laplace", "always")
#: NUTS warm-up iterations per chain when NUTS starts from the Laplace approximation (``warm_start``).
WARM_TUNE = 300
#: The default largest Pareto :math:`\hat k` at which NUTS still starts from the Laplace
#: approximation: beyond it the posterior is too far from Gaussian for the Hessian to be a good
#: mass matrix (:func:`bayes_raters.laplace.warm_start`).
WARM_K_MAX = 1.0


class Sampled(NamedTuple):
    """A step's outcome: the draws, their report and the record so far."""

    idata: xr.DataTree | None
    report: ConvergenceReport | None
    record: InferenceRecord
    compiled: object = None  # nutpie's compiled model, for the extra chains


def sample_model(
    model: pm.Model,
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    cores: int | None = 1,
    random_seed: int | np.random.Generator | None = None,
    nuts_sampler: str = "pymc",
    target_accept: float = 0.9,
    var_names: Sequence[str] | None = None,
    check_var_names: Sequence[str] | None = None,
    what: str = "model",
    progressbar: bool | None = None,
    nuts_kwargs: dict | None = None,
    initvals: dict | None = None,
    inference: str = "nuts",
    extra_chains: int = 0,
    warm_start: str = "never",
    warm_k_max: float = WARM_K_MAX,
) -> tuple[xr.DataTree, ConvergenceReport]:
    r"""Sample ``model`` along the pipeline of this module and report convergence.

    ``inference``: ``"nuts"``; ``"laplace"`` (a failed Pareto :math:`\hat k` check is a problem in
    the report); ``"auto"``: the Laplace draws when their report passes every rule, NUTS otherwise.
    ``extra_chains``: chains added after slow mixing without divergences (seeded from stream
    ``"extra_chains"`` of :func:`~bayes_raters.sampling.derived_rng`; chains are independent, so the
    pooled draws are draws of the same posterior and R-hat over all of them still flags a stuck one).
    ``warm_start`` (PyMC's NUTS only): ``"never"``; ``"after_laplace"``: after rejected Laplace draws
    whose :math:`\hat k` is at most ``warm_k_max``; ``"always"``: whenever NUTS runs, checking
    ``CHECK_PROPOSALS`` importance draws' :math:`\hat k` first when no Laplace draws were tried.
    ``random_seed`` makes the draws reproducible bit for bit (for a given sampler, chains and cores);
    ``check_var_names`` are the variables whose R-hat and ESS are checked (default: all);
    ``target_accept`` and ``nuts_kwargs`` reach every sampler (:func:`~bayes_raters.sampling.sampler_settings`);
    ``progressbar`` None shows it in a terminal or notebook only; ``initvals``: starting values.

    Returns ``(datatree, report)``; the tree's :class:`~bayes_raters.inference_record.InferenceRecord`
    says which steps ran.
    """
    if draws < 1 or tune < 0 or chains < 1:
        raise InvalidInputError(f"need draws >= 1, tune >= 0, chains >= 1; got {draws}, {tune}, {chains}.")
    if inference not in INFERENCE:
        raise InvalidInputError(f"inference must be one of {INFERENCE}, got {inference!r}.")
    if warm_start not in WARM_STARTS:
        raise InvalidInputError(f"warm_start must be one of {WARM_STARTS}, got {warm_start!r}.")
    nuts = dict(draws=draws, tune=tune, cores=cores, nuts_sampler=nuts_sampler, var_names=var_names, progressbar=progressbar,
                initvals=initvals, **sampler_settings(nuts_sampler, target_accept, nuts_kwargs))
    record, check = InferenceRecord(), None
    if inference != "nuts":
        kept, check = _laplace_step(model, draws, chains, random_seed, var_names, initvals, check_var_names, keep_failed=inference == "laplace")
        if kept.idata is not None:
            return _finish(kept, what)
        record = kept.record
    warm = _warm_step(model, check, warm_start, nuts_sampler, random_seed, initvals, warm_k_max)
    step = _nuts_step(model, Sampled(None, None, record), chains, random_seed, warm, check_var_names, nuts)
    if extra_chains:
        step = _extra_chains_step(model, step, extra_chains, chains, random_seed, warm, check_var_names, nuts)
    return _finish(step, what)


def _finish(step: Sampled, what: str) -> tuple[xr.DataTree, ConvergenceReport]:
    """Write the record into the tree, warn about failed rules, return ``(tree, report)``."""
    step.record.write(step.idata)
    warn_if_not_converged(step.report, what)
    return step.idata, step.report


def _laplace_step(model, draws, chains, random_seed, var_names, initvals, check_var_names, *, keep_failed: bool):
    r"""Step 1: Laplace batches until one passes (or, with ``keep_failed``, the first that has a
    mode). Returns ``(Sampled, check)``: the kept draws (``idata`` None when NUTS must run, with the
    record's ``reason``) and the last :class:`~bayes_raters.laplace.LaplaceCheck` (its approximation
    serves the warm start)."""
    batches = laplace.sample_laplace(model, draws=draws, chains=chains, random_seed=random_seed, var_names=var_names,
                                     retry=True, initvals=initvals)
    report = check = None
    for retries in range(2):
        with laplace_context():
            idata, check = next(batches, (None, check))
        report = laplace_report(idata, check, check_var_names) if idata is not None else None
        if report is not None and (report.converged or keep_failed):
            record = InferenceRecord(path="laplace", sampler="bayes_raters.laplace", laplace_retries=retries,
                                     proposals_per_chain=check.proposals_per_chain, **laplace_figures(check))
            return Sampled(idata, report, record), check
        if report is None or check.reason:  # no mode, or the Pareto check failed: NUTS
            break
    reason = check.reason or "; ".join(report.problems)
    return Sampled(None, None, InferenceRecord(path="nuts_after_laplace", reason=f"the Laplace draws were rejected: {reason}",
                                               **laplace_figures(check))), check


def laplace_figures(check) -> dict:
    r"""The record's fields from a :class:`~bayes_raters.laplace.LaplaceCheck`: Pareto :math:`\hat k`,
    its threshold and the importance effective size (None where there was no mode)."""
    finite = np.isfinite(check.pareto_k)
    return {"pareto_k": float(check.pareto_k) if finite else None, "pareto_k_threshold": float(check.k_threshold),
            "importance_ess": float(check.ess)}


def _warm_step(model, check, warm_start, nuts_sampler, random_seed, initvals, k_max):
    r"""Step 2: the Laplace approximation NUTS starts from, or None (a cold start): after rejected
    Laplace draws (``"after_laplace"`` or ``"always"``), or computed and checked now (``"always"``,
    Pareto :math:`\hat k` of importance draws from stream ``"laplace_check"``), when
    :math:`\hat k \le` ``k_max``. PyMC's NUTS only (the dense mass matrix is its potential)."""
    if warm_start == "never" or nuts_sampler != "pymc":
        return None
    if check is None:
        if warm_start != "always":
            return None
        with laplace_context():
            check = laplace.checked_approximation(model, rng=derived_rng(random_seed, "laplace_check"), initvals=initvals)
    return warm_approximation(check, k_max)


def warm_approximation(check, k_max: float):
    r"""The Laplace approximation of ``check`` when NUTS may start from it (Pareto :math:`\hat k`
    at most ``k_max``), else None."""
    return check.approximation if check.pareto_k <= k_max else None


def _nuts_step(model, step: Sampled, chains, random_seed, warm, check_var_names, nuts) -> Sampled:
    """Step 3: NUTS (warm-started from ``warm`` when given); the record gains the sampler and the
    warm start."""
    idata, tuned, compiled = _run_nuts(model, chains=chains, random_seed=random_seed, warm=warm, **nuts)
    record = step.record.updated(sampler=nuts["nuts_sampler"])
    if warm is not None:
        record = record.updated(warm_start=f"chains started at Laplace draws, its covariance as mass matrix, {tuned} tuning iterations")
    return Sampled(idata, convergence_report(idata, check_var_names), record, compiled)


def _extra_chains_step(model, step: Sampled, extra, chains, random_seed, warm, check_var_names, nuts) -> Sampled:
    """Step 4: ``extra`` more chains (stream ``"extra_chains"``) pooled with the first when those
    failed R-hat or ESS without a divergence; the record says how many and why."""
    if step.report.converged or step.report.divergences:
        return step
    more, _, _ = _run_nuts(model, chains=extra, random_seed=derived_rng(random_seed, "extra_chains"), warm=warm, compiled=step.compiled, **nuts)
    idata = pooled_chains(step.idata, more)
    record = step.record.updated(extra_chains=extra, extra_chains_reason=f"the first {chains} gave {'; '.join(step.report.problems)}")
    return Sampled(idata, convergence_report(idata, check_var_names), record)


def _run_nuts(model, *, chains, random_seed, cores, nuts_sampler, var_names, progressbar, warm=None, compiled=None,
              **kwargs) -> tuple[xr.DataTree, int, object]:
    """``pm.sample`` (nutpie: :func:`_run_nutpie`) with this package's settings (quiet, strict
    floating point, BLAS threads per chain, no numpy overflow warnings from diverging warm-up
    trajectories: the divergence itself is what matters, and the report counts it); started from
    the Laplace approximation ``warm`` when given (:func:`_warm_nuts`). Returns the tree, the
    tuning iterations run and nutpie's compiled model (None for the other samplers)."""
    cores = resolve_cores(chains, cores)
    if warm is not None:
        kwargs = _warm_nuts(model, warm, chains, random_seed, **kwargs)
    blas = threadpool_limits(limits=blas_threads(chains, cores))
    names = list(var_names) if var_names is not None else None
    with quiet_pymc(), model, warnings.catch_warnings(), blas, strict_float(), np.errstate(over="ignore", invalid="ignore"):
        warnings.filterwarnings("ignore", message=".*running at least 4 chains.*")
        # Python 3.12 warns at every fork of a process with more than one OS thread, and numpy's
        # OpenBLAS starts its worker pool at import, so every multiprocess PyMC fit raised it; the
        # pool is fork-safe (pthread_atfork handlers), and outside pytest Python hides it anyway.
        warnings.filterwarnings("ignore", message=".*is multi-threaded, use of fork.*", category=DeprecationWarning)
        if nuts_sampler == "nutpie":
            idata, compiled = _run_nutpie(model, compiled, chains=chains, cores=cores, random_seed=random_seed, var_names=names,
                                          progressbar=resolve_progressbar(progressbar), **kwargs)
        else:
            with _nuts_for_every_variable(model):
                idata = pm.sample(chains=chains, cores=cores, random_seed=random_seed, nuts_sampler=nuts_sampler, var_names=names,
                                  progressbar=resolve_progressbar(progressbar), compute_convergence_checks=False, **kwargs)
    return _without_object_stats(idata), kwargs["tune"], compiled


def _run_nutpie(model, compiled, *, chains, cores, random_seed, var_names, progressbar, draws, tune, initvals=None, nuts=None):
    """nutpie's compile and sample as ``pm.sample(nuts_sampler="nutpie")`` runs them (the same
    seed from ``random_seed``, so the same draws), with the compiled model returned and taken
    back (``compiled``): the extra chains then skip a second compile, most of a small model's
    fit (``models/implementation.md``). Returns ``(tree, compiled)``."""
    import nutpie
    from pymc.backends.arviz import patch_nutpie_idata
    from pymc.util import get_random_generator

    if initvals is not None and not isinstance(initvals, dict):  # as pm.sample refuses them for nutpie
        raise InvalidInputError("nutpie takes one dict of starting values for every chain, not one per chain: pass a dict, "
                                'or use nuts_sampler="pymc".')
    if compiled is None:
        compiled = compile_nutpie(model, var_names=var_names, initial_points=initvals if isinstance(initvals, dict) else None)
    settings = dict(nuts or {})
    if "max_treedepth" in settings:
        settings["maxdepth"] = settings.pop("max_treedepth")
    seed = int(get_random_generator(random_seed).spawn(chains)[0].integers(2**30))
    start = time.time()
    idata = nutpie.sample(compiled, draws=draws, tune=max(tune, 1), chains=chains, cores=cores, seed=seed, save_warmup=False,
                          store_unconstrained=False, progress_bar=progressbar, **settings)
    patch_nutpie_idata(idata, model, sampling_time=time.time() - start)
    return idata, compiled


@contextlib.contextmanager
def _nuts_for_every_variable(model) -> Iterator[None]:
    """Within: ``pm.sample`` assigns NUTS to every variable of ``model`` without first building one
    symbolic gradient of the whole model per variable, as ``assign_step_methods`` does only to
    learn that each has one (the same assignment, so the same draws; ``models/implementation.md``
    gives the time saved). Left alone when a variable is discrete."""
    from pymc.sampling import mcmc

    if not mcmc.all_continuous(model.value_vars):  # pm.sample's own test before it builds NUTS
        yield
        return
    original = mcmc.assign_step_methods

    def every_variable_to_nuts(model, step=None, methods=None):
        if step is not None:
            return original(model, step, methods=methods)
        return [], {pm.NUTS: list(model.value_vars)}

    mcmc.assign_step_methods = every_variable_to_nuts
    try:
        yield
    finally:
        mcmc.assign_step_methods = original


def _warm_nuts(model, approx, chains, random_seed, *, draws, tune, initvals=None, **nuts) -> dict:
    """``pm.sample``'s keywords for NUTS started from the Laplace approximation ``approx``:
    starting points and a dense mass matrix from :func:`bayes_raters.laplace.warm_start` (the
    points from stream ``"warm_start"``), ``min(tune, WARM_TUNE)`` tuning iterations, and a
    ``pm.NUTS`` step with the sampler settings on the log density the mode search compiled
    (strict floating point, no second compile). ``initvals`` served the mode search already."""
    starts, covariance = laplace.warm_start(model, approx, chains, derived_rng(random_seed, "warm_start"))
    with model:
        step = pm.NUTS(vars=model.value_vars, potential=pm.step_methods.hmc.quadpotential.QuadPotentialFull(covariance),
                       logp_dlogp_func=approx.logp_dlogp, **nuts)
    return {"draws": draws, "tune": min(tune, WARM_TUNE), "initvals": starts, "step": step}


def pooled_chains(first: xr.DataTree, second: xr.DataTree) -> xr.DataTree:
    """``first`` with the chains of ``second`` appended (numbered on) in every group that has a
    ``chain`` dimension; other groups (observed and constant data) are ``first``'s."""
    pooled = {}
    for name, node in first.children.items():
        data = node.to_dataset()
        if "chain" in data.dims and name in second.children:
            more = second[name].to_dataset()
            more = more.assign_coords(chain=more["chain"].values + data.sizes["chain"])
            data = xr.concat([data, more], dim="chain", combine_attrs="override")
        pooled[name] = data
    return xr.DataTree.from_dict(pooled)


@contextlib.contextmanager
def laplace_context() -> Iterator[None]:
    """Where the mode search, the Hessian and the proposals run: PyMC quiet, warnings kept
    local, strict floating point, and no numpy warnings from proposals far in the tails."""
    with quiet_pymc(), warnings.catch_warnings(), strict_float(), np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        yield


def laplace_report(idata: xr.DataTree, check, var_names: Sequence[str] | None = None) -> ConvergenceReport:
    r"""The convergence report of importance-sampled Laplace draws: R-hat between the chains'
    independent batches, the smaller of ArviZ's ESS and the importance-sampling effective size
    (:mod:`bayes_raters.laplace`), no divergences, and Pareto :math:`\hat k` with its threshold."""
    report = convergence_report(idata, var_names)
    return replace(report, min_ess_bulk=float(min(report.min_ess_bulk, check.ess)), min_ess_tail=float(min(report.min_ess_tail, check.ess)),
                   pareto_k=float(check.pareto_k), pareto_k_threshold=float(check.k_threshold))


def _without_object_stats(idata: xr.DataTree) -> xr.DataTree:
    """Drop sample statistics of object dtype (nutpie's ``divergence_message``, None where no
    divergence): netCDF reads them back as float NaN, so a saved result failed its checksum.
    The divergences themselves stay in ``diverging``."""
    if "sample_stats" not in idata.children:
        return idata
    stats = idata["sample_stats"].to_dataset()
    dropped = [name for name, variable in stats.data_vars.items() if variable.dtype == object]
    if dropped:
        idata["sample_stats"] = xr.DataTree(stats.drop_vars(dropped))
    return idata
