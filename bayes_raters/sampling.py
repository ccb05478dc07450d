r"""What every fit shares around its sampler: the convergence report and its rules, the sampler
settings, cores and BLAS threads, strict floating point, the seeded secondary streams, and the
searches over model forms and quadrature rules.

:class:`ConvergenceReport` is the verdict every result carries: a fit converged when R-hat
<= 1.01 (two chains or more), bulk and tail ESS >= 400, no transition diverged and, for
importance-sampled draws, Pareto :math:`\hat k` is at most its threshold;
:func:`warn_if_not_converged` raises :class:`~bayes_raters.errors.ConvergenceWarning` naming every
failed rule. The inference path itself is :func:`bayes_raters.inference.sample_model`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import NamedTuple

import arviz as az
import numpy as np
import pymc as pm
import pytensor
import xarray as xr

from bayes_raters.errors import ConvergenceWarning, InvalidInputError

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
    the other, at half the speed (``models/implementation.md``)."""
    return min(chains, usable_cores()) if cores is None else int(cores)


def blas_threads(chains: int, cores: int | None) -> int | None:
    """BLAS threads per chain while chains run in parallel: the machine's cores shared out
    (None: leave BLAS alone when one chain runs at a time). ``cores=None`` means one chain per
    core (:func:`resolve_cores`). PyMC's own ``blas_cores`` is ignored under the fork start
    method (Linux's default), and nutpie's chains are threads in one process; left alone, each
    chain's BLAS calls spread over every core and the chains slow each other down
    (``models/implementation.md``; ``benchmarks/bench_irt.py`` measures it)."""
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
    Strict IEEE arithmetic leaves nothing to the compiler, at a small cost per gradient
    (``models/implementation.md``; ``benchmarks/bench_irt.py --gradient-only`` measures it).
    """
    return pytensor.config.change_flags(numba__fastmath=False)


@contextlib.contextmanager
def numba_mode_excluding(*rewrites: str) -> Iterator[None]:
    """Within: PyTensor's ``"NUMBA"`` mode (the one nutpie compiles with, by name) without the
    graph ``rewrites`` named. PyTensor's ``scalarize`` rewrite fails on the judges model's
    likelihood with a single judge (``ValueError: Operation cannot be done inplace on an input
    with broadcasted dimensions``, WMT23 with chrF alone); PyTensor skips it and goes on, but
    prints the traceback into the user's notebook or terminal, so the judges fit leaves it out."""
    from pytensor.compile import mode

    original = mode.predefined_modes["NUMBA"]
    mode.predefined_modes["NUMBA"] = original.excluding(*rewrites)
    try:
        yield
    finally:
        mode.predefined_modes["NUMBA"] = original


#: The secondary streams of a fit (:func:`derived_rng`), one number each, named where they are
#: used so that no two uses share one: IRT abilities (binary, polytomous, multidimensional), the
#: finite-sample PRMSE spread of the true-score model, the many-facet abilities, extra chains,
#: warm-start points, the Laplace approximation's check.
STREAMS = {"abilities": 17, "finite_sample": 7, "facets_abilities": 23, "extra_chains": 31, "warm_start": 37,
           "laplace_check": 41, "arena_nuts": 43, "judges_check": 47, "judges_biases": 53}


def derived_rng(random_seed, stream: int | str) -> np.random.Generator:
    """The generator of one secondary stream of draws of a fit (its theta draws, extra chains...):
    ``[seed, stream]`` for an integer seed (same seed, same draws), a child seeded from a
    Generator's next integer, fresh entropy for None. ``stream``: a name of :data:`STREAMS` (or
    its number). The one derivation every fit uses."""
    stream = STREAMS[stream] if isinstance(stream, str) else stream
    if isinstance(random_seed, np.random.Generator):
        return np.random.default_rng(random_seed.integers(2**63))
    return np.random.default_rng(None if random_seed is None else [int(random_seed), stream])


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
