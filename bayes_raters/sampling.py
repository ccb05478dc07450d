"""One fit wrapper for every model family: sampling, convergence report, save and load.

:func:`sample_model` runs NUTS with an explicit sampler (PyMC 6 silently prefers
nutpie when it is installed, so the default here is pinned to ``"pymc"``), returns the
``xarray.DataTree`` and a :class:`ConvergenceReport`, and warns with
:class:`~bayes_raters.errors.ConvergenceWarning` when R-hat > 1.01, bulk or tail
ESS < 400, or any transition diverged. Saving and loading live in
:mod:`bayes_raters.persistence` (re-exported here).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from typing import NamedTuple

import arviz as az
import numpy as np
import pymc as pm
import pytensor
import xarray as xr
from threadpoolctl import threadpool_limits

from bayes_raters.errors import ConvergenceWarning, InvalidInputError
from bayes_raters.persistence import load_datatree, save_datatree  # noqa: F401  (re-exported)

R_HAT_MAX = 1.01
ESS_MIN = 400


@dataclass(frozen=True)
class ConvergenceReport:
    """Worst-case convergence figures over the checked variables of one fit."""

    max_r_hat: float
    min_ess_bulk: float
    min_ess_tail: float
    divergences: int
    chains: int
    draws: int
    pareto_k: float | None = None
    pareto_k_threshold: float = 0.7

    @property
    def problems(self) -> list[str]:
        """What fails the convergence rule (R-hat > 1.01, ESS < 400, divergences, Pareto k), one line each."""
        found = []
        if self.chains < 2:
            found.append(
                f"R-hat needs at least 2 chains and this fit ran {self.chains}, so whether the chains "
                "agree cannot be checked: use chains=2 or more"
            )
        elif not self.max_r_hat <= R_HAT_MAX:
            found.append(f"max R-hat {self.max_r_hat:.3f} > {R_HAT_MAX}")
        if not self.min_ess_bulk >= ESS_MIN:
            found.append(f"min bulk ESS {self.min_ess_bulk:.0f} < {ESS_MIN}")
        if not self.min_ess_tail >= ESS_MIN:
            found.append(f"min tail ESS {self.min_ess_tail:.0f} < {ESS_MIN}")
        if self.divergences:
            found.append(f"{self.divergences} divergent transition(s)")
        if self.pareto_k is not None and not self.pareto_k <= self.pareto_k_threshold:
            found.append(f"Pareto k {self.pareto_k:.2f} > {self.pareto_k_threshold:.2f} (importance-sampled Laplace draws)")
        return found

    @property
    def converged(self) -> bool:
        """Whether no rule failed."""
        return not self.problems

    def to_dict(self) -> dict:
        """The report as plain values (for attrs and JSON)."""
        return asdict(self)


def _worst(values: xr.Dataset, reducer) -> float:
    """The worst non-NaN value over all variables (``reducer`` is np.max or np.min; an
    infinite R-hat counts); NaN when all are NaN (R-hat of a single chain), without numpy's
    All-NaN RuntimeWarning."""
    known = [np.asarray(values[name].values, dtype=float).ravel() for name in values.data_vars]
    known = np.concatenate(known) if known else np.empty(0)
    known = known[~np.isnan(known)]
    return float(reducer(known)) if known.size else float("nan")


def convergence_report(idata: xr.DataTree, var_names: Sequence[str] | None = None) -> ConvergenceReport:
    """Max R-hat, min bulk/tail ESS (ArviZ rank-normalised versions) and divergence count (0 for
    samplers without Hamiltonian steps, whose ``sample_stats`` have no ``diverging``)."""
    names = list(var_names) if var_names is not None else None
    posterior = idata["posterior"].to_dataset()
    r_hat = az.rhat(posterior, var_names=names)
    ess_bulk = az.ess(posterior, var_names=names, method="bulk")
    ess_tail = az.ess(posterior, var_names=names, method="tail")
    stats = idata["sample_stats"] if "sample_stats" in idata.children else None
    diverging = stats["diverging"] if stats is not None and "diverging" in stats.data_vars else None
    return ConvergenceReport(
        max_r_hat=_worst(r_hat, np.max),
        min_ess_bulk=_worst(ess_bulk, np.min),
        min_ess_tail=_worst(ess_tail, np.min),
        divergences=int(diverging.sum()) if diverging is not None else 0,
        chains=posterior.sizes["chain"],
        draws=posterior.sizes["draw"],
    )


def warn_if_not_converged(report: ConvergenceReport, what: str) -> None:
    """Issue a :class:`ConvergenceWarning` naming every failed check."""
    if report.problems:
        headline = "convergence cannot be checked" if report.chains < 2 else "the chains did not converge"
        advice = "run longer (draws/tune), more chains, or simplify the model"
        if report.pareto_k is not None:
            headline = "the importance-sampled Laplace draws failed their check"
            advice = "keep more draws (draws=)"
            if not report.pareto_k <= report.pareto_k_threshold:
                advice = "use inference='nuts' (or inference='auto', which falls back to NUTS by itself)"
        warnings.warn(
            f"{what}: {headline} ({'; '.join(report.problems)}). Do not trust this result: {advice}.",
            ConvergenceWarning,
            stacklevel=3,
        )


NUTS_SAMPLERS = ("pymc", "nutpie", "numpyro", "blackjax")


@contextlib.contextmanager
def quiet_pymc() -> Iterator[None]:
    """PyMC's logger at ERROR inside the block (no "Sampling: [...]" or "Auto-assigning NUTS"
    INFO lines from the package's own calls), restored afterwards."""
    logger = logging.getLogger("pymc")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def interactive() -> bool:
    """True where someone watches the fit: a terminal (stderr is a TTY) or a Jupyter/IPython
    kernel. Fits show a progress bar there by default (``progressbar=None``) and stay silent in
    scripts, pipes, CI logs and test runs. The environment variable ``BAYES_RATERS_PROGRESSBAR``
    (``0`` or ``1``) overrides the guess (``notebooks/execute.py`` sets 0, so stored notebook
    outputs hold no progress bars)."""
    forced = os.environ.get("BAYES_RATERS_PROGRESSBAR", "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    return sys.stderr.isatty() or "ipykernel" in sys.modules


def resolve_progressbar(progressbar: bool | None) -> bool:
    """``progressbar`` as given, or :func:`interactive` when it is None."""
    return interactive() if progressbar is None else bool(progressbar)


def sampler_settings(nuts_sampler: str, target_accept: float, nuts_kwargs: dict | None = None) -> dict:
    """Keyword arguments of ``pm.sample`` that give ``nuts_sampler`` the model's settings.

    PyMC's own NUTS takes ``target_accept`` directly; the external samplers (nutpie, numpyro,
    blackjax) take it inside ``nuts={...}``: passing it only to PyMC's sampler, as this package
    did before, left nutpie at its own default of 0.8.
    """
    if nuts_sampler not in NUTS_SAMPLERS:
        raise InvalidInputError(f"nuts_sampler must be one of {NUTS_SAMPLERS}, got {nuts_sampler!r}.")
    if not 0 < target_accept < 1:
        raise InvalidInputError(f"target_accept must lie in (0, 1), got {target_accept}.")
    if nuts_sampler == "pymc":
        return {"target_accept": target_accept, **(nuts_kwargs or {})}
    return {"nuts": {"target_accept": target_accept, **(nuts_kwargs or {})}}


def usable_cores() -> int:
    """CPUs this process may run on (its affinity mask where the platform has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def resolve_cores(chains: int, cores: int | None) -> int:
    """``cores`` as given, or one chain per usable CPU for None.

    Resolved here, not left to ``pm.sample``: PyMC reads None as half the CPU count (it assumes
    hyperthreads), so on a 2-core machine the chains of every ``cores=None`` fit ran one after
    the other. Measured (bfi neuroticism GRM, nutpie, 2 x (300 + 500)): 29.1 s sampling with
    None passed through, 14.6 s with 2."""
    return min(chains, usable_cores()) if cores is None else int(cores)


def blas_threads(chains: int, cores: int | None) -> int | None:
    """BLAS threads per chain while chains run in parallel: the machine's cores shared out
    (None: leave BLAS alone when one chain runs at a time). ``cores=None`` means one chain per
    core (:func:`resolve_cores`): left alone, nutpie's two GRM chains on 2 cores took
    210 s where one BLAS thread each took 66 s (2,449 x 15 x 5). PyMC's own ``blas_cores`` is
    ignored under the fork start method (Linux's default), and nutpie's chains are threads in
    one process; left alone, each chain's BLAS calls spread over every core. Measured on 2 cores,
    two processes evaluating the 10,000 x 100 marginal 2PL gradient: 4.8-5.3 ms each with
    OpenBLAS's default threads, 1.95 ms with one thread each (``benchmarks/bench_irt.py``)."""
    parallel = min(chains, resolve_cores(chains, cores))
    return max(1, usable_cores() // parallel) if parallel > 1 else None


def strict_float():
    """Compile the model's log-density without Numba's fast-math flags (a context manager,
    :func:`sample_model` wraps every fit in it), so that the same seed gives the same draws
    whatever the compile cache holds.

    With fast math, LLVM may fuse multiply-adds and reorder sums differently when a function
    is compiled fresh (helpers inlined into one module) than when its parts come from
    PyTensor's on-disk cache: the gradient of a pairwise model differed in the 15th digit
    between a cold and a warm cache, and NUTS, being chaotic, then gave other draws (and a
    suite run failed on 2 divergences that a second run, with a warm cache, did not have).
    Strict IEEE arithmetic leaves nothing to the compiler. Cost, measured with
    ``benchmarks/bench_irt.py --gradient-only``: the marginal 2PL gradient 0.7 -> 0.8 ms at
    2,000 x 100 and 1.6 -> 2.0 ms at 10,000 x 100; the joint one unchanged (3.0 / 15.1 ms).
    """
    return pytensor.config.change_flags(numba__fastmath=False)


#: NUTS warm-up iterations per chain when NUTS starts from the Laplace approximation (``warm_start``).
WARM_TUNE = 300
#: The default largest Pareto :math:`\hat k` at which NUTS still starts from the Laplace
#: approximation: beyond it the posterior is too far from Gaussian for the Hessian to be a good
#: mass matrix (:func:`bayes_raters.laplace.warm_start`).
WARM_K_MAX = 1.0


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
    r"""Sample ``model`` with NUTS (or importance-sampled Laplace draws) and report convergence.

    ``inference``: ``"nuts"``; ``"laplace"`` (:mod:`bayes_raters.laplace`: mode, Hessian,
    Pareto-smoothed importance sampling; a failed Pareto :math:`\hat k` check is a problem in
    the report); or ``"auto"``: the Laplace draws when their report passes every rule (Pareto
    :math:`\hat k`, R-hat between the chains' batches, ESS), NUTS otherwise (the posterior's
    ``inference`` attribute says which, and why NUTS ran). When a batch passes the Pareto check
    but not R-hat or ESS, twice as many fresh proposals are drawn from the same mode and Hessian,
    pooled with the first batch's and resampled, before NUTS (:func:`bayes_raters.laplace.sample_laplace`; the posterior's
    ``laplace_batch`` attribute says which batch was kept).

    ``extra_chains``: when the NUTS draws fail R-hat or ESS but none diverged (slow mixing, not a
    biased sampler), run this many more chains (seed from :func:`derived_rng`) and pool them with
    the first (:func:`pooled_chains`; the posterior's ``extra_chains`` attribute says why). Chains
    are independent, so the pooled draws are draws of the same posterior, and R-hat over all of
    them still flags a stuck chain. Used by the guessing IRT models (``irt.binary.fit``), where a hard
    item's weakly identified (a, b, c) leaves ESS just under 400 in a fifth of the fits.

    ``warm_start`` (PyMC's NUTS only): ``"never"`` (default); ``"after_laplace"``: when NUTS runs
    after rejected Laplace draws whose Pareto :math:`\hat k` is at most ``warm_k_max`` (default
    ``WARM_K_MAX``, 1.0; farther from Gaussian the cold start wins), start each chain at a draw of
    the Laplace approximation with its covariance as a dense mass matrix, and tune for ``min(tune,
    WARM_TUNE)`` (300) iterations; ``"always"``: the same whenever NUTS runs, computing the mode,
    Hessian and ``CHECK_PROPOSALS`` (1,000) proposals' Pareto :math:`\hat k` first when no Laplace
    draws were tried (:func:`bayes_raters.laplace.checked_approximation`; :func:`bayes_raters.laplace.warm_start`,
    where the measurements are; the posterior's ``nuts_warm_start`` attribute says so). For the
    families where that was measured to help: ``irt.binary.fit``'s unidimensional 1PL/2PL
    (``"after_laplace"``) and the many-facet model (``"always"``).

    ``random_seed`` makes the draws reproducible bit for bit (for a given sampler,
    chains and cores). ``check_var_names`` are the variables whose R-hat and ESS are
    checked (default: all in the posterior). ``target_accept`` and ``nuts_kwargs`` (e.g.
    nutpie's ``{"adaptation": "low_rank"}``) reach every sampler (:func:`sampler_settings`).
    Compiled in strict floating point (:func:`strict_float`), so the draws do not depend on
    the compile cache. ``progressbar``: PyMC's (or nutpie's) progress bar; None shows it in a
    terminal or notebook only (:func:`interactive`). The sampler is recorded in the posterior's
    ``nuts_sampler`` attribute. ``initvals``: starting values (jittered as usual). Returns
    ``(datatree, report)`` and warns if the report shows a problem.

    Numpy's floating-point warnings are silenced inside the sampler only: PyMC's NUTS
    evaluates the kinetic energy of a diverging warm-up trajectory, which overflows, and
    numpy reported that as a stray ``RuntimeWarning: overflow encountered in dot`` in the
    README example. The divergence itself is what matters, and the report counts it.
    """
    if draws < 1 or tune < 0 or chains < 1:
        raise InvalidInputError(f"need draws >= 1, tune >= 0, chains >= 1; got {draws}, {tune}, {chains}.")
    if inference not in INFERENCE:
        raise InvalidInputError(f"inference must be one of {INFERENCE}, got {inference!r}.")
    if warm_start not in WARM_STARTS:
        raise InvalidInputError(f"warm_start must be one of {WARM_STARTS}, got {warm_start!r}.")
    fallback, warm = "", None
    if inference != "nuts":
        for idata, check in _laplace(model, draws, chains, random_seed, var_names, initvals):
            report = laplace_report(idata, check, check_var_names) if idata is not None else None
            if report is not None and (report.converged or inference == "laplace"):
                warn_if_not_converged(report, what)
                return idata, report
            if report is None or check.reason:  # no mode, or the Pareto check failed: NUTS
                break
        fallback = f"nuts (the Laplace draws were rejected: {check.reason or '; '.join(report.problems)})"
        if warm_start in ("after_laplace", "always") and nuts_sampler == "pymc":
            warm = _warm_approximation(check, warm_k_max)
    elif warm_start == "always" and nuts_sampler == "pymc":
        warm = _checked_approximation(model, random_seed, initvals, warm_k_max)
    nuts = dict(draws=draws, tune=tune, cores=cores, nuts_sampler=nuts_sampler, var_names=var_names, progressbar=progressbar,
                initvals=initvals, **sampler_settings(nuts_sampler, target_accept, nuts_kwargs))
    idata = _run_nuts(model, chains=chains, random_seed=random_seed, warm=warm, **nuts)
    idata["posterior"].attrs["inference"] = fallback or "nuts"
    report = convergence_report(idata, check_var_names)
    if extra_chains and not report.converged and not report.divergences:
        idata = pooled_chains(idata, _run_nuts(model, chains=extra_chains, random_seed=derived_rng(random_seed, "extra_chains"), warm=warm, **nuts))
        idata["posterior"].attrs["extra_chains"] = f"{extra_chains} added: the first {chains} gave {'; '.join(report.problems)}"
        report = convergence_report(idata, check_var_names)
    warn_if_not_converged(report, what)
    return idata, report


def _run_nuts(model, *, chains, random_seed, cores, nuts_sampler, var_names, progressbar, warm=None, **kwargs) -> xr.DataTree:
    """``pm.sample`` with this package's settings (quiet, strict floating point, BLAS threads
    per chain, no numpy overflow warnings from diverging warm-up trajectories); started from
    the Laplace approximation ``warm`` when given (:func:`_warm_nuts`)."""
    cores = resolve_cores(chains, cores)
    if warm is not None:
        kwargs = _warm_nuts(model, warm, chains, random_seed, **kwargs)
    blas = threadpool_limits(limits=blas_threads(chains, cores))
    with quiet_pymc(), model, warnings.catch_warnings(), blas, strict_float(), np.errstate(over="ignore", invalid="ignore"):
        warnings.filterwarnings("ignore", message=".*running at least 4 chains.*")
        # Python 3.12 warns at every fork of a process with more than one OS thread, and numpy's
        # OpenBLAS starts its worker pool at import (2 threads in a bare `import numpy` here), so
        # every multiprocess PyMC fit raised it; the pool is fork-safe (pthread_atfork handlers),
        # and outside pytest the DeprecationWarning is hidden by Python's default filters anyway.
        warnings.filterwarnings("ignore", message=".*is multi-threaded, use of fork.*", category=DeprecationWarning)
        idata = pm.sample(chains=chains, cores=cores, random_seed=random_seed, nuts_sampler=nuts_sampler,
                          var_names=list(var_names) if var_names is not None else None,
                          progressbar=resolve_progressbar(progressbar), compute_convergence_checks=False, **kwargs)
    idata["posterior"].attrs["nuts_sampler"] = nuts_sampler
    if warm is not None:
        idata["posterior"].attrs["nuts_warm_start"] = f"chains started at Laplace draws, its covariance as mass matrix, {kwargs['tune']} tuning iterations"
    return _without_object_stats(idata)


def _warm_approximation(check, k_max: float):
    r"""The Laplace approximation of rejected draws when NUTS may start from it (Pareto
    :math:`\hat k` at most ``k_max``), else None."""
    return check.approximation if check.pareto_k <= k_max else None


def _checked_approximation(model, random_seed, initvals, k_max):
    r"""The Laplace approximation for a NUTS fit to start from when Pareto :math:`\hat k` of
    importance draws from it (stream ``"laplace_check"`` of :func:`derived_rng`) is at most ``k_max``
    (:func:`bayes_raters.laplace.checked_approximation`, :func:`_warm_approximation`), else None."""
    from bayes_raters.laplace import checked_approximation  # noqa: PLC0415  (imports this module)

    with _laplace_context():
        check = checked_approximation(model, rng=derived_rng(random_seed, "laplace_check"), initvals=initvals)
    return _warm_approximation(check, k_max)


def _warm_nuts(model, approx, chains, random_seed, *, draws, tune, initvals=None, **nuts) -> dict:
    """``pm.sample``'s keywords for NUTS started from the Laplace approximation ``approx``:
    starting points and a dense mass matrix from :func:`bayes_raters.laplace.warm_start` (the
    points from the stream ``"warm_start"`` of :func:`derived_rng`), ``min(tune, WARM_TUNE)`` tuning
    iterations, and a ``pm.NUTS`` step with the sampler settings (``target_accept`` and
    ``nuts_kwargs``) on the log density the mode search compiled (strict floating point, no
    second compile: 0.9 s on LSAT-7). ``initvals`` served the mode search already."""
    from bayes_raters.laplace import warm_start  # noqa: PLC0415  (imports this module)

    starts, covariance = warm_start(model, approx, chains, derived_rng(random_seed, "warm_start"))
    with model:
        step = pm.NUTS(vars=model.value_vars, potential=pm.step_methods.hmc.quadpotential.QuadPotentialFull(covariance),
                       logp_dlogp_func=approx.logp_dlogp, **nuts)
    return {"draws": draws, "tune": min(tune, WARM_TUNE), "initvals": starts, "step": step}


#: The secondary streams of a fit (:func:`derived_rng`), one number each, named where they are
#: used so that no two uses share one: IRT abilities (binary, polytomous, multidimensional), the
#: finite-sample PRMSE spread of the true-score model, the many-facet abilities, extra chains,
#: warm-start points, the Laplace approximation's check.
STREAMS = {"abilities": 17, "finite_sample": 7, "facets_abilities": 23, "extra_chains": 31, "warm_start": 37,
           "laplace_check": 41}


def derived_rng(random_seed, stream: int | str) -> np.random.Generator:
    """The generator of one secondary stream of draws of a fit (its theta draws, extra chains...):
    ``[seed, stream]`` for an integer seed (same seed, same draws), a child seeded from a
    Generator's next integer, fresh entropy for None. ``stream``: a name of :data:`STREAMS` (or
    its number). The one derivation every fit uses."""
    stream = STREAMS[stream] if isinstance(stream, str) else stream
    if isinstance(random_seed, np.random.Generator):
        return np.random.default_rng(random_seed.integers(2**63))
    return np.random.default_rng(None if random_seed is None else [int(random_seed), stream])


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


INFERENCE = ("nuts", "laplace", "auto")
WARM_STARTS = ("never", "after_laplace", "always")


@contextlib.contextmanager
def _laplace_context() -> Iterator[None]:
    """Where the mode search, the Hessian and the proposals run: PyMC quiet, warnings kept
    local, strict floating point, and no numpy warnings from proposals far in the tails."""
    with quiet_pymc(), warnings.catch_warnings(), strict_float(), np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        yield


def _laplace(model, draws, chains, random_seed, var_names, initvals):
    from bayes_raters.laplace import sample_laplace  # noqa: PLC0415  (imports this module)

    batches = sample_laplace(model, draws=draws, chains=chains, random_seed=random_seed, var_names=var_names, retry=True, initvals=initvals)
    while True:
        with _laplace_context():
            batch = next(batches, None)
        if batch is None:
            return
        yield batch


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


class RefinedFit(NamedTuple):
    """What :func:`sample_refined` kept: the model, its draws and report, the quadrature setting
    it was built with and that setting's error at the posterior."""

    model: pm.Model
    idata: xr.DataTree
    report: ConvergenceReport
    setting: object
    error: float


def fewest_divergences(sample_form, forms: dict, skip=None) -> tuple[str, object, dict]:
    """Sample each of ``forms`` (name -> form, in order: ``sample_form(form)`` returns a fit with
    a ``report``) until one does not diverge; keep the fit with the fewest divergences (the
    earlier on a tie). Only the kept fit's warnings reach the user. Returns ``(name, fit,
    {name: divergences})`` over the forms tried. The parametrisations of a hierarchical scale
    fail in opposite places (the centred form in the funnel of a small scale, the non-centred
    one where the data pin every member down), and divergences say which the data are in.
    ``skip(name, tried)``: True passes over form ``name`` given the divergences so far."""
    fits, tried = [], {}
    for name, form in forms.items():
        if fits and skip is not None and skip(name, tried):
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fit = sample_form(form)
        fits.append((name, fit, caught))
        tried[name] = fit.report.divergences
        if fit.report.divergences == 0:
            break
    name, fit, caught = min(fits, key=lambda kept: kept[1].report.divergences)  # min keeps the first of equals
    for warning in caught:
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return name, fit, tried


def sample_refined(build, sample, error_of, refine, *, tolerance: float, refinements: int, start=None) -> RefinedFit:
    """Sample a model whose likelihood is a quadrature, refining the rule while its error at the
    posterior exceeds ``tolerance``, up to ``refinements`` times (shared by the marginal IRT
    fits). ``build(setting)`` returns ``(model, setting)`` (the setting it used, e.g. the default
    rule for ``start=None``); ``sample(model)`` returns ``(idata, report)``; ``error_of(idata,
    model, setting)`` the quadrature error; ``refine(setting)`` the next, finer setting. Only the
    kept fit's warnings reach the user (a discarded coarse fit's convergence warning would be
    about a posterior nobody sees). Returns ``(model, idata, report, setting, error)``; the
    caller warns when ``error`` is still above ``tolerance`` (a :class:`RefinedFit`)."""
    setting = start
    for attempt in range(refinements + 1):
        model, setting = build(setting)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            idata, report = sample(model)
        error = error_of(idata, model, setting)
        if error <= tolerance or attempt == refinements:
            break
        setting = refine(setting)
    for warning in caught:
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return RefinedFit(model, idata, report, setting, error)
