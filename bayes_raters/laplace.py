r"""Importance-sampled Laplace approximation: posterior draws at the cost of a mode, a Hessian and
a few thousand log-density evaluations, checked by Pareto-smoothed importance sampling, with
NUTS as the fallback when the check fails.

Method. Let :math:`x \in \mathbb{R}^d` be the model's free parameters on PyMC's unconstrained
scale and :math:`\log p(x)` the log posterior density there (Jacobians included). With the
mode :math:`\hat x` (L-BFGS) and the negative Hessian :math:`H` at it, the proposal is
:math:`q = N(\hat x, H^{-1})`. For :math:`S` proposals :math:`x_s \sim q` the importance
log-weights are :math:`\log r_s = \log p(x_s) - \log q(x_s)`; Pareto smoothing of their upper
tail (Vehtari et al. 2024, ``arviz_stats``' ``psislw``) gives smoothed weights :math:`w_s` and
the shape estimate :math:`\hat k`. Here the draws fail when
:math:`\hat k > \min(0.7,\ 1 - 1/\log_{10} S)` (below it the weighted estimates converge at the
usual rate: the paper's sample-size-dependent threshold); the convergence report built from them
(:func:`bayes_raters.inference.laplace_report`) adds the ESS rule (``ESS_MIN``, 400, on the
effective size below, from Kish's :math:`1 / \sum_s w_s^2` per chain) and R-hat.

Each chain has its own batch of proposals (its own spawned generator) and keeps ``draws`` of
them resampled with probabilities :math:`w_s` (systematic resampling, :func:`resample`), so the posterior has the usual
(chain, draw) shape, every ArviZ function reads it, and R-hat compares independent batches.
Resampling :math:`n` draws from a weighted sample of effective size :math:`E` leaves an effective
size of about :math:`(1/E + 1/n)^{-1}` for means with multinomial resampling (systematic
resampling does better, so this is conservative); that, summed over chains, is the ESS the
convergence report states (never the count of resampled draws).

A batch that passes the Pareto check but not R-hat or ESS (Monte Carlo noise of the
resampled draws, not a bad proposal) is followed by twice as many fresh proposals from the same
mode and Hessian, pooled with the first batch's and resampled (:func:`sample_laplace` with ``retry=True``); only then does
the caller turn to NUTS, whose compile and sampling cost far more than a fresh batch (``models/implementation.md``).

When the posterior is far from Gaussian (a funnel under a hierarchical scale, a likelihood
that only bounds a parameter) :math:`\hat k` is large, and :func:`sample_laplace` says so and the
caller samples with NUTS instead (:func:`bayes_raters.inference.sample_model` with
``inference="auto"``).

Multivariate t proposals and a round of moment matching were tried and gave no smaller
:math:`\hat k` (``models/implementation.md``), so the plain Laplace Gaussian stays: where it fails
the posterior is skewed, and NUTS runs.

Why not NUTS started at the mode: its step count follows the dimension (13-15 leapfrog steps per
draw on the 75-parameter GRM even with the dense Hessian as mass matrix; ``models/irt_polytomous.md``),
so ESS 400 costs over 10,000 gradients per chain; here a fit costs about 150 gradients for the
mode, :math:`2d` for the Hessian and :math:`S` log densities. Where the draws are rejected,
though, the mode and Hessian already paid for make a good start for the NUTS that follows
(:func:`warm_start`; used where measured to help, ``sample_model(warm_start=...)``).
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field, replace

import arviz as az
import numpy as np
import pymc as pm
import scipy.linalg
import scipy.optimize
import xarray as xr
from arviz_stats.base import array_stats
from pymc.initial_point import make_initial_point_fn
from pymc.pytensorf import join_nonshared_inputs

from bayes_raters.forked import map_forked

#: Proposals per chain, as a multiple of the draws kept per chain.
PROPOSALS_PER_DRAW = 2
#: Relative step of the central differences of the gradient that give the Hessian.
HESSIAN_STEP = 1e-5
#: Proposals whose Pareto :math:`\hat k` decides whether NUTS starts from the approximation when
#: no Laplace draws were tried (:func:`checked_approximation`).
CHECK_PROPOSALS = 1000


@dataclass(frozen=True)
class LaplaceCheck:
    """What the importance-sampling check found: Pareto :math:`\\hat k`, its threshold, the
    effective size of the resampled draws over all chains, and why the draws were rejected
    (``reason``; empty when accepted)."""

    pareto_k: float
    k_threshold: float
    ess: float
    reason: str
    #: the mode and Hessian the draws came from (a NUTS fallback may start there: :func:`warm_start`)
    approximation: LaplaceApproximation | None = field(default=None, repr=False, compare=False)
    #: proposals behind each chain's resampled draws (all batches pooled)
    proposals_per_chain: int = 0

    @property
    def accepted(self) -> bool:
        """Whether the approximation passed its check (no reason to reject it)."""
        return not self.reason


def _raveled(model: pm.Model, initvals: dict | None = None):
    """``(logp(x), grad(x))`` compiled (PyMC's ``ValueGradFunction``, which ``pm.NUTS`` takes as
    ``logp_dlogp_func``), ``logp(x)`` alone not yet compiled (a function that compiles it: the
    proposals need it, a NUTS start from the mode does not, and on the many-facet model each
    compile takes seconds), both of the raveled unconstrained parameters; the starting point
    (the model's initial point with ``initvals``, on the parameters' own scale as ``pm.sample``
    takes them) and the map back to a point dict (PyMC's ``join_nonshared_inputs``)."""
    start = make_initial_point_fn(model=model, overrides=initvals, jitter_rvs=set())(0)
    names = [v.name for v in model.value_vars]
    term = getattr(model, "numpy_term", None)
    if term is None:
        [joined_logp], x = join_nonshared_inputs(start, [model.logp(jacobian=True)], model.value_vars)
        compile_logp = functools.partial(pm.pytensorf.compile, [x], joined_logp)
    else:
        compile_logp = functools.partial(_split_logp, model, term, start)
    f_both = model.logp_dlogp_function(model.value_vars, ravel_inputs=True, initial_point=start)
    x0 = np.concatenate([np.ravel(start[name]) for name in names]).astype(float)
    shapes = [np.shape(start[name]) for name in names]
    return compile_logp, f_both, x0, names, shapes


@dataclass(frozen=True)
class NumpyTerm:
    """One ``pm.Potential`` of a model that the proposals' log densities evaluate in NumPy:
    ``function(*values)`` returns the potential's value from the constrained ``inputs`` (names of
    model variables). A model that carries one as ``model.numpy_term`` gets it in
    :func:`_split_logp`; the mode, Hessian and NUTS still use PyMC's compiled graph.

    Why: PyTensor's Numba backend evaluates ``exp`` one element at a time (llvmlite is built
    without SVML), where NumPy's ufunc uses AVX-512 SIMD: on the 2D 2PL at 1,000 x 20 (978
    patterns x 673 nodes, one exponential per pair) NumPy was several times faster
    (``models/implementation.md``), and the Laplace proposals are thousands of log densities."""

    potential: str
    inputs: tuple
    function: object


def _split_logp(model: pm.Model, term: NumpyTerm, start: dict, **compile_kwargs):
    r""":math:`\log p(x)` as PyMC's compiled log density of every term but ``term.potential``
    (priors, Jacobians, other potentials) plus ``term.function`` of the constrained inputs in
    NumPy; same value as ``model.logp(jacobian=True)`` to rounding (tested)."""
    rest = [v for v in model.free_RVs + model.observed_RVs + model.potentials if v.name != term.potential]
    inputs = model.replace_rvs_by_values([model[name] for name in term.inputs])
    joined, x = join_nonshared_inputs(start, [model.logp(vars=rest, jacobian=True), *inputs], model.value_vars)
    compiled = pm.pytensorf.compile([x], joined, **compile_kwargs)
    lock = threading.Lock()  # a compiled function is not reentrant; its call takes microseconds

    def logp(point):
        with lock:
            value, *values = compiled(point)
            values = [np.array(v) for v in values]
        return float(value) + float(term.function(*values))

    return logp


def _mode(f_both, x0: np.ndarray):
    """L-BFGS on :math:`-\\log p`; returns the mode or None when the optimiser failed."""
    def negative(x):
        value, grad = f_both(x)
        return -float(value), -np.asarray(grad, dtype=float)

    result = scipy.optimize.minimize(negative, x0, jac=True, method="L-BFGS-B", options={"maxiter": 2000})
    return result.x if result.success and np.all(np.isfinite(result.x)) else None


def _negative_hessian(f_both, x: np.ndarray) -> np.ndarray:
    """:math:`-\\nabla^2 \\log p` by central differences of the exact gradient, symmetrised
    (:math:`2d` gradients; relative error about ``HESSIAN_STEP``\\ :sup:`2`)."""
    d = x.size
    out = np.empty((d, d))
    for i in range(d):
        step = HESSIAN_STEP * max(1.0, abs(x[i]))
        e = np.zeros(d)
        e[i] = step
        out[i] = (np.asarray(f_both(x + e)[1]) - np.asarray(f_both(x - e)[1])) / (2 * step)
    return -(out + out.T) / 2


def k_threshold(n_proposals: int) -> float:
    """:math:`\\min(0.7, 1 - 1/\\log_{10} S)`, the PSIS reliability threshold."""
    return float(min(0.7, 1.0 - 1.0 / np.log10(n_proposals)))


def _gaussian(mode, chol_precision, z):
    """Rows of :math:`N(\\hat x, H^{-1})` from standard normal rows ``z``:
    :math:`\\hat x + L^{-T} z` with :math:`H = L L^T` (one triangular solve, no inverse)."""
    return mode + scipy.linalg.solve_triangular(chol_precision, z.T, lower=True, trans="T").T


def _propose(f_logp, mode, chol_precision, n, rng):
    """``n`` draws of :math:`N(\\hat x, H^{-1})` and their log importance ratios."""
    z = rng.standard_normal((n, mode.size))
    log_q = -0.5 * np.sum(z**2, axis=1)  # constants cancel in the normalised weights
    x = _gaussian(mode, chol_precision, z)
    log_p = np.array([float(f_logp(row)) for row in x])
    log_r = np.where(np.isfinite(log_p), log_p - log_q, -np.inf)
    return x, log_r


def resample(weights: np.ndarray, n: int, rng) -> np.ndarray:
    r"""Systematic resampling (one uniform, ``n`` evenly spaced positions on the weights' CDF),
    then shuffled: each proposal is kept :math:`\lfloor n w_s \rfloor` or one more times, so the
    resampling adds far less noise than multinomial draws. With multinomial resampling 2 of the
    first 21 GRM SBC fits (300 x 5 x 4) had max R-hat 1.015-1.016 between the chains: duplicates
    that a random count leaves behind look like independent draws to R-hat."""
    positions = (rng.random() + np.arange(n)) / n
    index = np.minimum(np.searchsorted(np.cumsum(weights), positions), weights.size - 1)
    return rng.permutation(index)


@dataclass
class LaplaceApproximation:
    """The log density, the mode and the Cholesky factor of the negative Hessian there:
    everything a batch of proposals needs, so a second batch costs only its log densities."""

    compile_logp: object
    mode: np.ndarray
    chol: np.ndarray
    names: list
    shapes: list
    #: PyMC's compiled (logp, gradient) of the raveled value variables (the mode search's, and :func:`warm_start`'s NUTS's)
    logp_dlogp: object = None
    #: the proposals' log density is mostly NumPy (a :class:`NumpyTerm`), so chains' batches run side by side (:func:`importance_draws`)
    threaded: bool = False

    @functools.cached_property
    def f_logp(self):
        """The compiled log density alone, compiled on first use (by the proposals)."""
        return self.compile_logp()


def laplace_approximation(model: pm.Model, initvals: dict | None = None):
    """The :class:`LaplaceApproximation` of ``model``, or ``(None, reason)`` when the optimiser
    found no mode or the Hessian there is not negative definite. The optimiser starts from
    ``initvals`` where given (a multidimensional model's rotation and sign basin)."""
    compile_logp, f_both, x0, names, shapes = _raveled(model, initvals)
    mode = _mode(f_both, x0)
    if mode is None:
        return None, "the optimiser found no posterior mode"
    try:
        chol = np.linalg.cholesky(_negative_hessian(f_both, mode))
    except np.linalg.LinAlgError:
        return None, "the Hessian at the mode is not negative definite"
    threaded = getattr(model, "numpy_term", None) is not None
    return LaplaceApproximation(compile_logp, mode, chol, names, shapes, f_both, threaded), ""


def importance_draws(approx: LaplaceApproximation, *, draws: int, chains: int, seeds, proposals_per_draw: int = PROPOSALS_PER_DRAW,
                     previous=None, processes: bool = True):
    """Raveled resampled draws (chains, draws, d), the :class:`LaplaceCheck` and the proposals
    (per chain: points and log ratios) of a batch of ``proposals_per_draw`` x ``draws`` new
    proposals per chain (``seeds``: one SeedSequence per chain), pooled with ``previous``
    (an earlier call's proposals from the same approximation) when given. A model with a
    :class:`NumpyTerm` evaluates each chain's batch in its own forked process
    (:func:`~bayes_raters.forked.map_forked`; ``processes=False``: threads), the same draws either way."""
    rngs = [np.random.default_rng(s) for s in seeds]
    f_logp = approx.f_logp  # compiled here, once, before any process or thread asks

    def propose(rng):
        points, log_r = _propose(f_logp, approx.mode, approx.chol, proposals_per_draw * draws, rng)
        return points, log_r, rng.bit_generator.state  # a forked child's generator advances there only

    if approx.threaded:  # mostly NumPy between Python steps: one process per chain (or thread where none fork)
        done = map_forked(propose, rngs, processes=processes)
        for rng, (_, _, state) in zip(rngs, done):
            rng.bit_generator.state = state
        batches = [(points, log_r) for points, log_r, _ in done]
    else:
        batches = [propose(rng)[:2] for rng in rngs]
    if previous is not None:
        batches = [(np.concatenate([old[0], new[0]]), np.concatenate([old[1], new[1]])) for old, new in zip(previous, batches)]
    kept, check = resampled_batches(batches, draws, rngs)
    return kept, replace(check, approximation=approx), batches


def resampled_batches(batches, draws: int, rngs) -> tuple[np.ndarray, LaplaceCheck]:
    r"""Each chain's ``draws`` resampled from its batch ``(points, log ratios)`` with the
    Pareto-smoothed weights of all batches together, and the check: :math:`\hat k` against
    :func:`k_threshold`, and the effective size :math:`\sum_c (1/E_c + 1/n)^{-1}` (module docstring)."""
    log_r = np.concatenate([b[1] for b in batches])
    smoothed, k = smoothed_log_weights(log_r)
    threshold = k_threshold(log_r.size)
    kept, ess, start = [], 0.0, 0
    for c, (x, _) in enumerate(batches):
        w = np.exp(smoothed[start:start + len(x)])
        start += len(x)
        w /= w.sum()
        ess += 1.0 / (1.0 / kish_ess(w) + 1.0 / draws)
        kept.append(x[resample(w, draws, rngs[c])])
    reason = ""
    if not k <= threshold:
        reason = f"Pareto k {k:.2f} > {threshold:.2f}: the posterior is too far from its Laplace approximation"
    return np.stack(kept), LaplaceCheck(k, threshold, ess, reason)


def smoothed_log_weights(log_r: np.ndarray) -> tuple[np.ndarray, float]:
    r"""Pareto-smoothed log weights of importance log ratios and the shape estimate :math:`\hat k`
    (``psislw`` smooths the weights exp(-input): its LOO convention, input = log-likelihood)."""
    smoothed, k = array_stats.psislw(-(log_r - np.max(log_r)), r_eff=1.0)
    return smoothed, float(np.max(k))


def warm_start(model: pm.Model, approx: LaplaceApproximation, chains: int, rng: np.random.Generator) -> tuple[list[dict], np.ndarray]:
    r"""Where NUTS starts when the Laplace draws were rejected: one draw of
    :math:`N(\hat x, H^{-1})` per chain (mapped to the free variables' own scale, as
    ``pm.sample``'s ``initvals`` take them; overdispersed enough for R-hat to compare chains
    that started apart) and :math:`H^{-1}` as the mass matrix (``QuadPotentialFull``, in the
    order of ``model.value_vars``).

    A cold start needs the warm-up to find the typical set and a diagonal metric (1,000
    iterations); the mode and Hessian already computed give both, so :data:`~bayes_raters.inference.WARM_TUNE` (300)
    iterations adapt the step size: on LSAT-7's 2PL fewer than half the leapfrog steps per draw
    and about twice the ESS of a cold start. Not for the guessing models (a banana-shaped hard
    item, where the metric at the mode takes more steps than the cold start's adapted diagonal),
    nor far from Gaussian (Pareto :math:`\hat k` above :data:`~bayes_raters.inference.WARM_K_MAX`).
    The measurements: ``models/implementation.md``."""
    raveled = _gaussian(approx.mode, approx.chol, rng.standard_normal((chains, approx.mode.size)))
    covariance = scipy.linalg.cho_solve((approx.chol, True), np.eye(approx.mode.size))
    free = [v.name for v in model.free_RVs]
    constrained = _constrained(model, free)
    starts = [dict(zip(free, constrained(**_point(row, approx.names, approx.shapes)))) for row in raveled]
    return starts, covariance


def _constrained(model: pm.Model, wanted):
    """A compiled map from the value variables (unconstrained) to the variables ``wanted``."""
    outputs = model.replace_rvs_by_values([model[name] for name in wanted])
    return model.compile_fn(outputs, inputs=model.value_vars, point_fn=False, on_unused_input="ignore")


def _point(row: np.ndarray, names, shapes) -> dict:
    """A raveled unconstrained vector as a point dict keyed by value-variable name."""
    parts = np.split(row, np.cumsum([int(np.prod(s)) for s in shapes])[:-1])
    return {n: p.reshape(s) for n, p, s in zip(names, parts, shapes)}


def checked_approximation(model: pm.Model, *, rng: np.random.Generator, initvals: dict | None = None,
                          proposals: int = CHECK_PROPOSALS) -> LaplaceCheck:
    r"""The Laplace approximation and Pareto :math:`\hat k` of ``proposals`` importance draws from
    it (drawn with ``rng``), evaluated with the gradient function the mode search compiled (no
    logp-only compile): what a NUTS fit that does not keep the draws needs to decide whether to
    start from the approximation (:func:`warm_start`). A :class:`LaplaceCheck` (its ``ess``: Kish's
    effective size of the smoothed weights); :math:`\hat k` infinite and no approximation when
    there is no mode or no positive-definite Hessian."""
    approx, reason = laplace_approximation(model, initvals)
    if approx is None:
        return LaplaceCheck(np.inf, k_threshold(proposals), 0.0, reason)
    _, log_r = _propose(lambda x: approx.logp_dlogp(x)[0], approx.mode, approx.chol, proposals, rng)
    smoothed, k = smoothed_log_weights(log_r)
    w = np.exp(smoothed - np.max(smoothed))
    threshold = k_threshold(proposals)
    reason = f"Pareto k {k:.2f} > {threshold:.2f}" if not k <= threshold else ""
    return LaplaceCheck(k, threshold, kish_ess(w), reason, approx)


def kish_ess(weights: np.ndarray) -> float:
    r"""Kish's effective sample size of importance weights :math:`w` (normalised or not):
    :math:`(\sum w)^2 / \sum w^2`."""
    return float(weights.sum() ** 2 / np.sum(weights**2))


def _entropy(random_seed):
    """Entropy for ``np.random.SeedSequence``: an integer seed as it is, a Generator's next
    integer (as :func:`bayes_raters.sampling.derived_rng` takes a Generator), None for fresh entropy."""
    if isinstance(random_seed, np.random.Generator):
        return int(random_seed.integers(2**63))
    return random_seed


def to_datatree(model: pm.Model, raveled: np.ndarray, names, shapes, var_names=None) -> xr.DataTree:
    """The posterior (and ``sample_stats`` with ``diverging``, all False) of raveled
    unconstrained draws, with the model's coords and dims, as PyMC would store it."""
    wanted = list(var_names) if var_names is not None else [v.name for v in model.free_RVs + model.deterministics]
    fn = _constrained(model, wanted)
    chains, draws = raveled.shape[:2]
    values = {name: [] for name in wanted}
    for row in raveled.reshape(chains * draws, -1):
        for name, value in zip(wanted, fn(**_point(row, names, shapes))):
            values[name].append(value)
    posterior = {n: np.asarray(v).reshape(chains, draws, *np.shape(v[0])) for n, v in values.items()}
    dims = {n: list(model.named_vars_to_dims.get(n, ())) for n in wanted}
    coords = {k: list(v) for k, v in model.coords.items() if v is not None}
    stats = {"diverging": np.zeros((chains, draws), dtype=bool)}
    return az.from_dict({"posterior": posterior, "sample_stats": stats}, coords=coords, dims=dims)


def sample_laplace(model: pm.Model, *, draws: int, chains: int, random_seed=None, var_names=None, retry: bool = False,
                   initvals: dict | None = None):
    r"""Importance-sampled Laplace draws of ``model`` as a DataTree, and the :class:`LaplaceCheck`
    (the tree is None when there was no mode or no positive-definite Hessian; the check holds
    :math:`\hat k`, its threshold, the effective size of the resampled draws and the proposals
    per chain).

    ``retry=True`` returns a generator instead: the first batch as above, then, if the caller
    asks for more (``next``), twice as many fresh proposals from the same mode and Hessian (no
    second compile or optimisation), pooled with the first batch's (6 x ``draws`` per chain) and
    resampled afresh: fewer duplicates, so the resampled draws' ESS is closer to their count. A caller whose first batch passed
    the Pareto check but not R-hat or ESS takes it: R-hat between the chains' independent
    batches is then Monte Carlo noise (200 parameters at 2 x 500 iid draws exceed 1.01 in 14% of
    replications, ``benchmarks/bench_irt.py``), which a fresh batch resolves at the cost of its
    log densities, where NUTS would cost its own compile and sampling."""
    batches = _laplace_batches(model, draws, chains, random_seed, var_names, initvals)
    return batches if retry else next(batches)


def _laplace_batches(model, draws, chains, random_seed, var_names, initvals):
    approx, reason = laplace_approximation(model, initvals)
    if approx is None:
        yield None, LaplaceCheck(np.inf, 0.7, 0.0, reason)
        return
    seeds = np.random.SeedSequence(_entropy(random_seed)).spawn(2 * chains)
    pooled = None
    for attempt, per_draw in enumerate((PROPOSALS_PER_DRAW, 2 * PROPOSALS_PER_DRAW)):
        raveled, check, pooled = importance_draws(approx, draws=draws, chains=chains, seeds=seeds[attempt * chains:(attempt + 1) * chains],
                                                  proposals_per_draw=per_draw, previous=pooled)
        tree = to_datatree(model, raveled, approx.names, approx.shapes, var_names)
        yield tree, replace(check, proposals_per_chain=len(pooled[0][1]))
