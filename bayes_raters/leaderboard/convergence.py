r"""The convergence check of a leaderboard fit, vectorised over its tens of thousands of parameters.

The numbers are ArviZ's (Vehtari et al. 2021): rank-normalised split R-hat (the larger of the
bulk and the folded form), bulk ESS (Geyer's initial monotone sequence on the rank-normalised
split chains) and tail ESS (the smaller ESS of the indicators of two tail quantiles, ArviZ's default ones).
ArviZ computes them one parameter at a time, which at leaderboard size took longer than a third of
the sampling. Here each step runs on all parameters at once (one argsort, one FFT on all cores,
the Geyer truncation as array operations), with the draws of each parameter contiguous and one
rank normalisation shared by R-hat and bulk ESS (``models/leaderboards.md`` gives the timings). The results equal ArviZ's to 1e-8
(``tests/leaderboard/test_convergence.py``).
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


def _rows(values: np.ndarray) -> np.ndarray:
    """(chains, draws, P) -> (P, chains, draws), contiguous: every step below runs along the last
    axis (argsort, partition, FFT on contiguous memory)."""
    return np.ascontiguousarray(np.moveaxis(values, -1, 0), dtype=float)


def _split(rows: np.ndarray) -> np.ndarray:
    """(P, chains, draws) -> (P, 2 chains, draws // 2): first and last halves of each chain."""
    half = rows.shape[2] // 2
    return np.concatenate([rows[:, :, :half], rows[:, :, -half:]], axis=1)


def _doubled_ranks(flat: np.ndarray) -> np.ndarray:
    """Twice the ranks (2..2N) along each row of (P, N), ties averaged as
    ``scipy.stats.rankdata(method="average")`` (a Metropolis chain repeats a value at every
    rejection, so ties are the rule): one argsort of all rows, then each run of equal sorted values
    gets first + last ordinal rank, all as array operations. Doubled, the ranks are whole numbers
    (:func:`_z_scale` looks them up). Equal to ``rankdata`` (``tests/leaderboard/test_convergence.py``)."""
    n = flat.shape[1]
    order = flat.argsort(axis=1)
    ordered = np.take_along_axis(flat, order, axis=1)
    new_run = np.ones(flat.shape, bool)
    new_run[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    ends_run = np.ones(flat.shape, bool)
    ends_run[:, :-1] = new_run[:, 1:]
    position = np.arange(1, n + 1)
    first = np.maximum.accumulate(np.where(new_run, position, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends_run, position, n + 1)[:, ::-1], axis=1)[:, ::-1]
    doubled = np.empty(flat.shape, np.int64)
    np.put_along_axis(doubled, order, first + last, axis=1)
    return doubled


def _z_scale(rows: np.ndarray) -> np.ndarray:
    """Ranks over every draw of each parameter (ties averaged), back-transformed to normal scores
    (Blom's offset 3/8). A rank is a multiple of 1/2 in [1, N], so the normal quantiles
    (``scipy.special.ndtri``) are computed once for the 2N - 1 possible ranks and looked up, not
    once per draw (``models/leaderboards.md``)."""
    flat = rows.reshape(rows.shape[0], -1)
    n = flat.shape[1]
    table = special.ndtri((np.arange(2, 2 * n + 1) / 2 - 3 / 8) / (n - 2 * 3 / 8 + 1))
    return table[_doubled_ranks(flat) - 2].reshape(rows.shape)


def _rhat(rows: np.ndarray) -> np.ndarray:
    """Classic R-hat of (P, chains, draws)."""
    n = rows.shape[2]
    between = n * np.var(rows.mean(axis=2), axis=1, ddof=1)
    within = np.var(rows, axis=2, ddof=1).mean(axis=1)
    return np.sqrt((between / within + n - 1) / n)


def _folded_rhat(split: np.ndarray, z_split: np.ndarray) -> np.ndarray:
    """Rank-normalised split R-hat (the larger of the bulk and the folded form) of split rows whose
    normal scores ``z_split`` are already computed."""
    folded = np.abs(split - np.median(split.reshape(split.shape[0], -1), axis=1)[:, None, None])
    return np.maximum(_rhat(z_split), _rhat(_z_scale(folded)))


def _ess(rows: np.ndarray) -> np.ndarray:
    """ESS of (P, chains, draws) by Geyer's initial monotone sequence, as ArviZ's ``_ess``; NaN
    (not estimable, so the check fails) with fewer than 4 draws per chain."""
    _, m, n = rows.shape
    if n < 4:
        return np.full(rows.shape[0], np.nan)
    size = fft.next_fast_len(2 * n)
    centred = rows - rows.mean(axis=2, keepdims=True)
    spectrum = fft.rfft(centred, n=size, axis=2, workers=-1)
    acov = fft.irfft(spectrum * np.conjugate(spectrum), n=size, axis=2, workers=-1)[:, :, :n] / n
    mean_var = acov[:, :, 0].mean(axis=1) * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n + (np.var(rows.mean(axis=2), axis=1, ddof=1) if m > 1 else 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):  # a constant parameter: 0 / 0, replaced below
        rho = (1.0 - (mean_var[:, None] - acov.mean(axis=1)) / var_plus[:, None]).T  # (n, P); rho[0] == 1 up to rounding
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
    constant = (rows.max(axis=(1, 2)) - rows.min(axis=(1, 2))) < np.finfo(float).resolution
    return np.where(constant, float(m * n), ess)


def _tail_ess(rows: np.ndarray) -> np.ndarray:
    """Tail ESS of (P, chains, draws): the smaller ESS of the indicators of the quantiles of :func:`_tail_probs`."""
    quantiles = np.quantile(rows.reshape(rows.shape[0], -1), _tail_probs(), axis=1)  # (2, P)
    return np.minimum(*(_ess(_split((rows <= q[:, None, None]).astype(float))) for q in quantiles))


def rank_rhat(values: np.ndarray) -> np.ndarray:
    """Rank-normalised split R-hat of (chains, draws, P), per parameter."""
    split = _split(_rows(values))
    return _folded_rhat(split, _z_scale(split))


def bulk_ess(values: np.ndarray) -> np.ndarray:
    """Bulk ESS of (chains, draws, P), per parameter."""
    return _ess(_z_scale(_split(_rows(values))))


def rhat_and_bulk_ess(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`rank_rhat` and :func:`bulk_ess` of (chains, draws, P) from one rank normalisation."""
    split = _split(_rows(values))
    z_split = _z_scale(split)
    return _folded_rhat(split, z_split), _ess(z_split)


def tail_ess(values: np.ndarray) -> np.ndarray:
    """Tail ESS of (chains, draws, P), per parameter."""
    return _tail_ess(_rows(values))


def _smallest(values: np.ndarray) -> float:
    """The smallest ESS, NaN when none is estimable."""
    return float(np.nanmin(values)) if np.isfinite(values).any() else float("nan")


def leaderboard_report(posterior: xr.Dataset, var_names, *, stop_at_r_hat: float | None = None) -> ConvergenceReport:
    """The fit's :class:`~bayes_raters.sampling.ConvergenceReport` over ``var_names`` (worst R-hat,
    smallest bulk and tail ESS; no divergences: the sampler takes no Hamiltonian steps).

    ``stop_at_r_hat``: as soon as a variable's largest R-hat exceeds it, return with that R-hat
    and the ESS left NaN (the report fails either way). The fit uses it for the checks that only
    decide whether to draw more; about half of a check's time is the ESS."""
    r_hat, bulk, tail = [], [], []
    for name in var_names:
        array = posterior[name].astype(float)
        rows = _rows(array.transpose("chain", "draw", ...).values.reshape(array.sizes["chain"], array.sizes["draw"], -1))
        split = _split(rows)
        z_split = _z_scale(split)
        r_hat.append(float(np.nanmax(_folded_rhat(split, z_split))))
        if stop_at_r_hat is not None and r_hat[-1] > stop_at_r_hat:
            bulk, tail = [float("nan")], [float("nan")]
            break
        bulk.append(_smallest(_ess(z_split)))
        tail.append(_smallest(_tail_ess(rows)))
    return ConvergenceReport(max_r_hat=max(r_hat), min_ess_bulk=min(bulk), min_ess_tail=min(tail),
                             divergences=0, chains=posterior.sizes["chain"], draws=posterior.sizes["draw"])
