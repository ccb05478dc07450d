r"""The GPCM log-probability of every answered (unit, item) pair at the unit's own
:math:`\theta`, compiled with Numba: the exact likelihood of the theta draws' rejection step
(:func:`bayes_raters.irt.polytomous.answered.answered_logp`); and the GRM's whole rejection step
for the first proposals of every unit (:func:`grm_rejection`).

For item :math:`j` with slope :math:`a`, cumulative step sums :math:`s_k` (:math:`s_0 = 0`)
and categories :math:`k = 0, \dots, K - 1`,
:math:`\log P(X = r \mid \theta) = a (r \theta - s_r) - \log \sum_k e^{a (k \theta - s_k)}`.
With :math:`w = e^{a \theta}` and :math:`c_k = e^{-a s_k}` (per item and posterior draw) the
sum is the polynomial :math:`\sum_k c_k w^k`, evaluated by Horner's rule: one exp and one log
per pair instead of :math:`K` exps. Where it over- or underflows (:math:`|a \theta| K` or
:math:`|a s_k|` beyond about 700) the pair falls back to the log-sum-exp with the largest
term factored out.

Why compiled: the NumPy form built (pairs, K) temporaries for the step sums, the exponent, its
maximum and the exps, and took two thirds of the GPCM's theta draws; compiled, the theta draws
take a quarter of the time (``models/irt_polytomous.md``; ``tests/irt/polytomous/test_fit.py``
checks the kernel against
:func:`bayes_raters.irt.polytomous.category_logp`).

Why the GRM's rejection step is one compiled call: the chains' ability draws run in threads, and
the step's many small NumPy calls (a proposal round, the exact likelihood of the proposals the
squeeze left) made each thread wait on the other for the GIL; one ``nogil`` call per posterior
draw does not (``models/irt_polytomous.md``).
"""

from __future__ import annotations

import numba
import numpy as np

from bayes_raters.interpolant import envelope_point
from bayes_raters.quadrature import LOG_ROOT_2PI


@numba.njit(cache=True, nogil=True)
def _stable(a, theta, sums, n):
    """:math:`\\log \\sum_{k < n} e^{a (k \\theta - s_k)}` with the largest term factored out."""
    top = -np.inf
    for k in range(n):
        top = max(top, a * (k * theta - sums[k]))
    total = 0.0
    for k in range(n):
        total += np.exp(a * (k * theta - sums[k]) - top)
    return top + np.log(total)


@numba.njit(cache=True, nogil=True)
def _pair_logp(t, slope, r, n, sums, coefficients):
    r""":math:`\log P(X = r \mid \theta = t)` for one item (``sums``, ``coefficients``: its rows):
    Horner's rule on :math:`w = e^{a t}`, the log-sum-exp where that over- or underflows."""
    w = np.exp(slope * t)
    total = coefficients[n - 1]
    for k in range(n - 2, -1, -1):
        total = total * w + coefficients[k]
    if np.isfinite(total) and total > 0.0 and np.isfinite(w) and w > 0.0:
        log_norm = np.log(total)
    else:
        log_norm = _stable(slope, t, sums, n)
    return slope * (r * t - sums[r]) - log_norm


@numba.njit(cache=True, nogil=True)
def gpcm_answered(theta, unit, item, category, a, sums, coefficients, n_categories, n_units):
    r"""Sum over each unit's answered pairs of :math:`\log P(X = r \mid \theta)`.
    ``sums`` (items, K_max): :math:`s_k`; ``coefficients``: :math:`e^{-a s_k}`."""
    out = np.zeros(n_units)
    for p in range(unit.size):
        i, j = unit[p], item[p]
        out[i] += _pair_logp(theta[i], a[j], category[p], n_categories[j], sums[j], coefficients[j])
    return out


@numba.njit(cache=True, nogil=True)
def gpcm_answered_units(theta, units, start, item, category, a, sums, coefficients, n_categories):
    """:func:`gpcm_answered` for the units ``units`` only, at their own ``theta`` (both
    (selected,)): unit ``u``'s pairs are ``start[u]:start[u + 1]`` of ``item`` and ``category``."""
    out = np.zeros(units.size)
    for i in range(units.size):
        for p in range(start[units[i]], start[units[i] + 1]):
            j = item[p]
            out[i] += _pair_logp(theta[i], a[j], category[p], n_categories[j], sums[j], coefficients[j])
    return out


def step_sums(a: np.ndarray, b: np.ndarray, layout) -> tuple[np.ndarray, np.ndarray]:
    """:math:`s_{jk}` (items, K_max; 0 for k = 0, padded with 0 past an item's categories) and
    :math:`c_{jk} = e^{-a_j s_{jk}}` for one posterior draw."""
    sums = np.zeros((layout.n_items, int(layout.n_categories.max())))
    valid = layout.padded < len(layout.step)  # the pad of shorter items points past the last row
    sums[valid] = (layout.cumulative @ b)[layout.padded[valid]]
    with np.errstate(over="ignore"):
        coefficients = np.exp(-a[:, None] * sums)
    return sums, coefficients


@numba.njit(cache=True, nogil=True)
def gpcm_expected(theta, a, sums, coefficients, values):
    """Expected value of ``values[k]`` under every item at every unit's theta, for a block of
    posterior draws: ``theta`` (draws, units), ``a`` (draws, items), ``sums`` and
    ``coefficients`` (draws, items, K); returns (draws, units, items). All items have
    ``len(values)`` categories: :math:`\\sum_k v_k c_k w^k / \\sum_k c_k w^k`, both polynomials
    by Horner's rule (one exp per pair), with the largest term factored out where they over- or
    underflow."""
    n = values.size
    out = np.empty((theta.shape[0], theta.shape[1], a.shape[1]))
    for d in range(theta.shape[0]):
        for i in range(theta.shape[1]):
            for j in range(a.shape[1]):
                slope, t = a[d, j], theta[d, i]
                w = np.exp(slope * t)
                total, weighted = coefficients[d, j, n - 1], coefficients[d, j, n - 1] * values[n - 1]
                for k in range(n - 2, -1, -1):
                    total = total * w + coefficients[d, j, k]
                    weighted = weighted * w + coefficients[d, j, k] * values[k]
                if np.isfinite(total) and total > 0.0 and np.isfinite(weighted) and np.isfinite(w) and w > 0.0:
                    out[d, i, j] = weighted / total
                else:
                    log_norm = _stable(slope, t, sums[d, j], n)
                    mean = 0.0
                    for k in range(n):
                        mean += values[k] * np.exp(slope * (k * t - sums[d, j, k]) - log_norm)
                    out[d, i, j] = mean
    return out


@numba.njit(cache=True, nogil=True)
def _softplus(x):
    r""":math:`\log(1 + e^x)` as :math:`\max(x, 0) + \log(1 + e^{-|x|})`."""
    return max(x, 0.0) + np.log1p(np.exp(-abs(x)))


@numba.njit(cache=True, nogil=True)
def grm_unit_logp(theta, cells, slope, below, above, gap):
    r"""One unit's GRM log-likelihood at ``theta``: over its category rows ``cells`` (one per
    item; the unanswered cell's row adds 0), :math:`g_r - \operatorname{sp}(\text{below}_r - a_r\theta)
    - \operatorname{sp}(a_r\theta - \text{above}_r)` (:mod:`bayes_raters.irt.polytomous.answered`'s formula)."""
    total = 0.0
    for r in cells:
        x = slope[r] * theta
        total += gap[r] - _softplus(below[r] - x) - _softplus(x - above[r])
    return total


@numba.njit(cache=True, nogil=True)
def grm_rejection(log_post, nodes, cumulative, multiplier, index, cells, slope, below, above, gap, u):
    r"""Rejection draws of the GRM abilities from the envelope of
    :func:`bayes_raters.interpolant.concave_envelope`: unit ``i`` (group ``index[i]``, category
    rows ``cells[i]``) tries the proposals of its uniforms ``u[t, :, i]`` in turn and keeps the
    first accepted, by the squeeze or by its exact log density (:func:`grm_unit_logp` plus the
    normal prior's) against the proposal's bar. Returns ``(z, done, proposed)``: the draws, which
    units were accepted within ``u.shape[0]`` tries, and the proposals made."""
    tries, units = u.shape[0], u.shape[2]
    z, done, proposed = np.zeros(units), np.zeros(units, dtype=np.bool_), 0
    for i in range(units):
        for t in range(tries):
            point, bar, squeezed = envelope_point(log_post, nodes, cumulative, multiplier, index[i], u[t, 0, i], u[t, 1, i], u[t, 2, i])
            proposed += 1
            if squeezed or grm_unit_logp(point, cells[i], slope, below, above, gap) - 0.5 * point * point - LOG_ROOT_2PI >= bar:
                z[i], done[i] = point, True
                break
    return z, done, proposed
