r"""The convergence check of a leaderboard fit, vectorised over its tens of thousands of parameters.

The numbers are ArviZ's (Vehtari et al. 2021): rank-normalised split R-hat (the larger of the
bulk and the folded form), bulk ESS (Geyer's initial monotone sequence on the rank-normalised
split chains) and tail ESS (the smaller ESS of the indicators of two tail quantiles, ArviZ's default ones).
ArviZ computes them one parameter at a time: on 2 chains x 700 draws of the 20,200 parameters
of a 200 x 10,000 leaderboard, ``bayes_raters.sampling.convergence_report`` took 114 s
(measured 2026-11-28, 2 cores), longer than a third of the sampling. Here each step runs on all
parameters at once (one ``rankdata``, one FFT, the Geyer truncation as array operations); the
results equal ArviZ's to 1e-8 (``tests/leaderboard/test_convergence.py``).
"""

from __future__ import annotations

import arviz as az
import numpy as np
import xarray as xr
from scipy import fft, special

from bayes_raters.sampling import ConvergenceReport


def _tail_probs() -> tuple[float, float]:
    """The quantiles of ArviZ's default tail ESS (as ``az.ess(method="tail")`` without ``prob``,
    which ``bayes_raters.sampling.convergence_report`` uses): ``rcParams["stats.ci_prob"]`` and its
    complement (0.11 and 0.89 with ArviZ 1.3's default 0.89)."""
    prob = float(az.rcParams["stats.ci_prob"])
    return tuple(sorted((prob, 1 - prob)))


def _split(values: np.ndarray) -> np.ndarray:
    """(chains, draws, P) -> (2 chains, draws // 2, P): first and last halves of each chain."""
    half = values.shape[1] // 2
    return np.concatenate([values[:, :half], values[:, -half:]], axis=0)


def _ranks(flat: np.ndarray) -> np.ndarray:
    """Ranks (1..N) down each column, ties averaged as ``scipy.stats.rankdata(method="average")``
    (a Metropolis chain repeats a value at every rejection, so ties are the rule): per parameter
    one argsort of a contiguous row, then each run of equal values gets the mean of its ordinal
    ranks. Measured on 2,800 draws x 2,000 parameters (2026-11-29): ``rankdata`` over the columns
    1.1-1.3 s, this about 0.3 s; equal to ``rankdata`` (``tests/leaderboard/test_convergence.py``)."""
    rows = np.ascontiguousarray(flat.T)
    n = rows.shape[1]
    ranks = np.empty(rows.shape)
    steps = np.arange(1.0, n + 1)
    starts = np.ones(n, bool)
    for p, row in enumerate(rows):
        order = row.argsort()
        ordered = row[order]
        np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
        if starts.all():
            ranks[p, order] = steps
        else:
            first = np.flatnonzero(starts)
            counts = np.diff(np.append(first, n))
            ranks[p, order] = np.repeat(first + (counts + 1) / 2, counts)
    return ranks.T


def _z_scale(values: np.ndarray) -> np.ndarray:
    """Ranks over every draw of each parameter (ties averaged), back-transformed to normal scores
    (Blom's offset 3/8; ``scipy.special.ndtri``, the normal quantile without ``stats.norm``'s
    argument checks, which cost 4 s per two checks at 100 x 2,000)."""
    shape = values.shape
    flat = values.reshape(-1, shape[-1])
    return special.ndtri((_ranks(flat) - 3 / 8) / (flat.shape[0] - 2 * 3 / 8 + 1)).reshape(shape)


def _rhat(values: np.ndarray) -> np.ndarray:
    """Classic R-hat of (chains, draws, P)."""
    n = values.shape[1]
    between = n * np.var(values.mean(axis=1), axis=0, ddof=1)
    within = np.var(values, axis=1, ddof=1).mean(axis=0)
    return np.sqrt((between / within + n - 1) / n)


def rank_rhat(values: np.ndarray) -> np.ndarray:
    """Rank-normalised split R-hat of (chains, draws, P), per parameter."""
    split = _split(values)
    folded = np.abs(split - np.median(split.reshape(-1, split.shape[-1]), axis=0))
    return np.maximum(_rhat(_z_scale(split)), _rhat(_z_scale(folded)))


def _ess(values: np.ndarray) -> np.ndarray:
    """ESS of (chains, draws, P) by Geyer's initial monotone sequence, as ArviZ's ``_ess``."""
    m, n, _ = values.shape
    size = fft.next_fast_len(2 * n)
    centred = values - values.mean(axis=1, keepdims=True)
    spectrum = fft.rfft(centred, n=size, axis=1)
    acov = fft.irfft(spectrum * np.conjugate(spectrum), n=size, axis=1)[:, :n] / n
    mean_var = acov[:, 0].mean(axis=0) * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n + (np.var(values.mean(axis=1), axis=0, ddof=1) if m > 1 else 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):  # a constant parameter: 0 / 0, replaced below
        rho = 1.0 - (mean_var - acov.mean(axis=0)) / var_plus  # (n, P); rho[0] == 1 up to rounding
    rho[0] = 1.0
    k_max = max(1, -(-(n - 2) // 2) - 1)  # pairs the loop can reach: 2k - 1 < n - 3
    pairs = rho[0:2 * k_max + 2:2][: k_max + 1] + rho[1:2 * k_max + 2:2][: k_max + 1]
    stop = pairs[1:] <= 0
    last = np.where(stop.any(axis=0), stop.argmax(axis=0) + 1, k_max)  # K: the last pair computed
    monotone = np.minimum.accumulate(pairs, axis=0)
    index = np.arange(pairs.shape[0])[:, None]
    total = np.where(index < last, monotone, 0.0).sum(axis=0)
    columns = np.arange(rho.shape[1])
    even = rho[2 * last, columns]
    extra = np.where((even > 0) | (pairs[last, columns] >= 0), even, 0.0)
    tau = np.maximum(-1.0 + 2.0 * total + extra, 1 / np.log10(m * n))
    ess = m * n / tau
    constant = (values.max(axis=(0, 1)) - values.min(axis=(0, 1))) < np.finfo(float).resolution
    return np.where(constant, float(m * n), ess)


def bulk_ess(values: np.ndarray) -> np.ndarray:
    """Bulk ESS of (chains, draws, P), per parameter."""
    return _ess(_z_scale(_split(values)))


def tail_ess(values: np.ndarray) -> np.ndarray:
    """Tail ESS of (chains, draws, P): the smaller ESS of the indicators of the quantiles of :func:`_tail_probs`."""
    flat = values.reshape(-1, values.shape[-1])
    out = []
    for prob in _tail_probs():
        below = (values <= np.quantile(flat, prob, axis=0)).astype(float)
        out.append(_ess(_split(below)))
    return np.minimum(*out)


def leaderboard_report(posterior: xr.Dataset, var_names) -> ConvergenceReport:
    """The fit's :class:`~bayes_raters.sampling.ConvergenceReport` over ``var_names`` (worst R-hat,
    smallest bulk and tail ESS; no divergences: the sampler takes no Hamiltonian steps)."""
    r_hat, bulk, tail = [], [], []
    for name in var_names:
        array = posterior[name].astype(float)
        values = array.transpose("chain", "draw", ...).values.reshape(array.sizes["chain"], array.sizes["draw"], -1)
        r_hat.append(np.nanmax(rank_rhat(values)))
        bulk.append(np.nanmin(bulk_ess(values)))
        tail.append(np.nanmin(tail_ess(values)))
    return ConvergenceReport(max_r_hat=float(max(r_hat)), min_ess_bulk=float(min(bulk)), min_ess_tail=float(min(tail)),
                             divergences=0, chains=posterior.sizes["chain"], draws=posterior.sizes["draw"])
