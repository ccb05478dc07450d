r"""Draws from the piecewise-exponential interpolant of a log density known on sorted nodes,
compiled with Numba: the proposal of :func:`bayes_raters.quadrature.draw_conditional`, and the
envelope of a concave log density built on the same cells (:func:`concave_envelope`), the
proposal of :func:`bayes_raters.quadrature.draw_log_concave`.

For a group with log density :math:`\ell_k` at nodes :math:`x_0 < \dots < x_{N-1}`, cell
:math:`k` (width :math:`h_k`, :math:`d_k = \ell_{k+1} - \ell_k`) carries the density
:math:`e^{\ell_k + d_k t}` for :math:`x = x_k + t h_k`, :math:`t \in [0, 1]`, so its mass is
:math:`h_k e^{\ell_k} (e^{d_k} - 1) / d_k` (:math:`h_k e^{\ell_k}` when :math:`d_k \to 0`).
A draw picks a cell by its mass (binary search on the group's cumulative masses) and inverts
the cell's CDF, :math:`t = \log(1 + v (e^{d_k} - 1)) / d_k`; its log density is
:math:`\ell_k + d_k t - \log Z` with :math:`Z` the sum of the masses.

Why compiled: in NumPy the same algebra allocated a (groups, cells) temporary per operation
and a (units, cells) copy per search, and was most of the time of the theta draws
(``models/implementation.md``). ``nogil=True`` lets the per-chain threads of the callers run in
parallel.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _cell_mass(width, d, low, high):
    r"""Mass of a cell of ``width`` whose scaled density runs from ``low`` to ``high`` at both ends
    (:math:`d` their log ratio): :math:`h (e^{\ell_{k+1}} - e^{\ell_k}) / d`, :math:`h e^{\ell_k}` as :math:`d \to 0`."""
    return width * low if abs(d) < 1e-8 else width * (high - low) / d


@numba.njit(cache=True, nogil=True)
def _within_cell(d, v):
    r"""The cell fraction :math:`t` whose CDF within a cell of log slope ``d`` is ``v``:
    :math:`\log(1 + v (e^d - 1)) / d` (``v`` as :math:`d \to 0`)."""
    return v if abs(d) < 1e-8 else np.log1p(v * np.expm1(d)) / d


@numba.njit(cache=True, nogil=True)
def _cell_masses(log_post, scaled, top, nodes):
    r"""Per group: normalised cumulative masses of the cells (groups, cells) and
    :math:`\log Z`. ``scaled`` is :math:`e^{\ell_k - m}` with ``top`` :math:`m` the group's
    largest :math:`\ell_k` (NumPy's vectorised exp, faster than Numba's scalar exp and expm1:
    ``models/implementation.md``). A cell's mass is
    :math:`h (e^{\ell_{k+1}} - e^{\ell_k}) / d`; its relative rounding error, about
    :math:`10^{-16} / |d|`, only moves which cell a uniform picks by as much, and the
    Metropolis-Hastings ratio uses the exact :math:`\ell` (and :math:`Z` cancels in it)."""
    groups, n = log_post.shape
    cumulative = np.empty((groups, n - 1))
    log_norm = np.empty(groups)
    for g in range(groups):
        total = 0.0
        for k in range(n - 1):
            d = log_post[g, k + 1] - log_post[g, k]
            total += _cell_mass(nodes[k + 1] - nodes[k], d, scaled[g, k], scaled[g, k + 1])
            cumulative[g, k] = total
        log_norm[g] = top[g] + np.log(total)
        for k in range(n - 1):
            cumulative[g, k] /= total
    return cumulative, log_norm


@numba.njit(cache=True, nogil=True)
def _draw(log_post, nodes, cumulative, log_norm, index, u_cell, u_within):
    """One draw per (batch, unit) from its group's interpolant, and its log density."""
    batches, units = u_cell.shape
    cells = nodes.size - 1
    points = np.empty((batches, units))
    log_q = np.empty((batches, units))
    for i in range(units):
        g = index[i]
        for r in range(batches):
            cell = np.searchsorted(cumulative[g], u_cell[r, i])
            cell = min(cell, cells - 1)
            d = log_post[g, cell + 1] - log_post[g, cell]
            t = _within_cell(d, u_within[r, i])
            points[r, i] = nodes[cell] + t * (nodes[cell + 1] - nodes[cell])
            log_q[r, i] = log_post[g, cell] + d * t - log_norm[g]
    return points, log_q


def interpolant_draws(log_post: np.ndarray, nodes: np.ndarray, index: np.ndarray, batches: int, rng: np.random.Generator):
    """``batches`` independent draws for every unit ``i`` from the interpolant of group
    ``index[i]`` (``log_post``: (groups, nodes), unnormalised), and their normalised log
    densities: two (batches, units) arrays."""
    log_post, nodes = np.ascontiguousarray(log_post, dtype=float), np.asarray(nodes, float)
    top = log_post.max(axis=1)
    cumulative, log_norm = _cell_masses(log_post, np.exp(log_post - top[:, None]), top, nodes)
    u = rng.random((2, batches, len(index)))
    return _draw(log_post, nodes, cumulative, log_norm, np.asarray(index, np.int64), u[0], u[1])


@numba.njit(cache=True, nogil=True)
def _envelope_masses(log_post, gradient, scaled, nodes, cumulative, multiplier):
    r"""Per group, into ``cumulative`` and ``multiplier`` (groups, cells): the normalised
    cumulative masses of the envelope :math:`M_k e^{c(x)}` of a concave log density
    (:func:`concave_envelope`) and each cell's multiplier :math:`M_k \ge e^{\delta_k}`
    (:math:`1 + \delta + \delta^2` for :math:`\delta \le 1`, which bounds :math:`e^\delta`
    there without a scalar exp)."""
    groups, n = log_post.shape
    cells = n - 1
    width = nodes[1:] - nodes[:-1]
    inverse = 1.0 / width
    for g in range(groups):
        total = 0.0
        for k in range(cells):
            d = log_post[g, k + 1] - log_post[g, k]
            slope = d * inverse[k]
            alpha = max(gradient[g, k] - slope, 0.0)
            beta = max(slope - gradient[g, k + 1], 0.0)
            delta = alpha * beta * width[k] / (alpha + beta) if alpha + beta > 0.0 else 0.0
            m = 1.0 + delta + delta * delta if delta <= 1.0 else np.exp(delta)
            multiplier[g, k] = m
            total += _cell_mass(width[k], d, scaled[g, k], scaled[g, k + 1]) * m
            cumulative[g, k] = total
        inverse_total = 1.0 / total
        for k in range(cells):
            cumulative[g, k] *= inverse_total


@numba.njit(cache=True, nogil=True)
def envelope_point(log_post, nodes, cumulative, multiplier, g, u_cell, u_within, u_accept):
    """One proposal from group ``g``'s envelope (:func:`concave_envelope`) from three uniforms:
    ``(point, bar, squeezed)``, ``squeezed`` where it is accepted without the exact density
    (:math:`u M_k \\le 1`), else ``bar``: accept iff the exact log density at the point is at
    least ``bar``."""
    cells = nodes.size - 1
    cell = min(np.searchsorted(cumulative[g], u_cell), cells - 1)
    d = log_post[g, cell + 1] - log_post[g, cell]
    t = _within_cell(d, u_within)
    point = nodes[cell] + t * (nodes[cell + 1] - nodes[cell])
    scaled_u = u_accept * multiplier[g, cell]
    if scaled_u <= 1.0:
        return point, -np.inf, True
    return point, log_post[g, cell] + d * t + np.log(scaled_u), False


@numba.njit(cache=True, nogil=True)
def _envelope_draw(log_post, nodes, cumulative, multiplier, index, u_cell, u_within, u_accept):
    """One proposal per unit from its group's envelope (:func:`envelope_point`)."""
    units = index.size
    points, bar = np.empty(units), np.empty(units)
    squeezed = np.empty(units, dtype=np.bool_)
    for i in range(units):
        points[i], bar[i], squeezed[i] = envelope_point(log_post, nodes, cumulative, multiplier, index[i], u_cell[i], u_within[i],
                                                        u_accept[i])
    return points, bar, squeezed


def concave_envelope(log_post: np.ndarray, gradient: np.ndarray, scaled: np.ndarray, nodes: np.ndarray, out=None):
    r"""The envelope of a concave log density known with its derivative on sorted nodes, ready
    for :func:`envelope_propose`: ``(cumulative, multiplier)``.

    On cell :math:`k` (width :math:`h`, chord slope :math:`s_k`) the chord :math:`c(x)` lies
    below a concave :math:`\ell` and the tangents at both ends lie above it (Gilks and Wild
    1992, adaptive rejection sampling). With :math:`\alpha = \ell'(x_k) - s_k \ge 0` and
    :math:`\beta = s_k - \ell'(x_{k+1}) \ge 0`, :math:`\ell - c \le \min(\alpha t, \beta (h - t))
    \le \delta_k = \alpha\beta h / (\alpha + \beta)` (:math:`t = x - x_k`). So :math:`M_k e^{c(x)}` with
    :math:`M_k \ge e^{\delta_k}` bounds the density, and a proposal accepted with probability
    :math:`e^{\ell - c} / M_k` is an exact draw; :math:`u M_k \le 1` accepts without
    evaluating :math:`\ell` (the squeeze). ``scaled``: :math:`e^{\ell_k - m}` with :math:`m` each
    group's largest :math:`\ell_k`; ``gradient``: :math:`\ell'` at the nodes. ``out``: two
    (groups, cells) arrays to fill and return instead of new ones."""
    groups, cells = log_post.shape[0], len(nodes) - 1
    cumulative, multiplier = (np.empty((groups, cells)), np.empty((groups, cells))) if out is None else out
    _envelope_masses(np.ascontiguousarray(log_post, dtype=float), np.ascontiguousarray(gradient, dtype=float), scaled,
                     np.asarray(nodes, float), cumulative, multiplier)
    return cumulative, multiplier


def envelope_propose(log_post, nodes, envelope, index: np.ndarray, rng: np.random.Generator):
    """One proposal per unit ``i`` from the envelope of group ``index[i]``: ``(points, bar,
    squeezed)`` (:func:`_envelope_draw`)."""
    u = rng.random((3, len(index)))
    cumulative, multiplier = envelope
    return _envelope_draw(log_post, np.asarray(nodes, float), cumulative, multiplier, np.asarray(index, np.int64), u[0], u[1], u[2])
