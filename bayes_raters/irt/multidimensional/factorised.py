r"""The confirmatory model's quadrature, factorised over the abilities.

In the confirmatory model (:mod:`bayes_raters.irt.multidimensional.model`) item :math:`j` loads on
its own ability :math:`k(j)` only, so a pattern's likelihood is a product over the abilities,
:math:`p(y_p \mid \theta) = \prod_k f_{pk}(\theta_k)` with
:math:`f_{pk}(t) = \prod_{j: k(j) = k} p(y_{pj} \mid \theta_k = t)`. On a product trapezoid grid
in :math:`\theta` itself (each axis :math:`t_g = h\,g`, :math:`|t_g| \le r`; marginally every
ability is N(0, 1)), the marginal is

.. math::

    p(y_p) \approx \sum_{g_1, \dots, g_K} \prod_k f_{pk}(t_{g_k})\; W_{g_1 \dots g_K},
    \qquad W_g = h^K \varphi_R(t_{g_1}, \dots, t_{g_K}),

with :math:`\varphi_R` the density of :math:`N(0, R)`. The item sums run over one axis of
:math:`G` points per ability (patterns x items x G in all), and the correlation enters only
through the weights :math:`W`: for two abilities :math:`p(y_p) = \sum_{g}
(f_{p1} W)_{g}\, f_{p2, g}`, one (patterns x G) by (G x G) product. The general rule of
:mod:`bayes_raters.irt.multidimensional.model` evaluates every item at every node of a
two-dimensional grid (patterns x items x nodes, and an exponential per pattern and node); on
EPI's 3,516 x 48 answers with two abilities this rule is the faster by an order of magnitude
(``models/irt_multidimensional.md`` gives the measured times). Each :math:`f_{pk}` is scaled by
its largest value on the axis before the exponential (the scales are added back in the
logarithm), so nothing underflows where it matters.

The trapezoid rule on :math:`\theta` errs like the ball rule on :math:`z = L^{-1}\theta`: by
:math:`\exp(-2\pi^2 s^2 / h^2)` with :math:`s` the smallest standard deviation of the
integrand; the fit checks every rule against half its spacing
(:func:`bayes_raters.irt.multidimensional.fit.quadrature_error`).
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from scipy.linalg import solve_triangular

from bayes_raters.irt.multidimensional.likelihood import pattern_node_loglik

#: Entries (patterns x nodes) per block of the full weights the moments of three or more abilities are taken from.
MOMENT_BLOCK_ENTRIES = 2_000_000


def axis_points(spacing: float, radius: float) -> np.ndarray:
    """The points :math:`h\\,g` of one axis within ``radius`` of 0."""
    half = np.floor(radius / spacing + 1e-9)
    return spacing * np.arange(-half, half + 1)


class AxisRule:
    """The factorised rule for the confirmatory model with abilities ``0..K-1`` and
    ``item_dimension[j]`` the ability of item j: the axis, the grid (nodes, K) it spans, and the
    patterns' answers split by ability."""

    def __init__(self, correct: np.ndarray, answered: np.ndarray, item_dimension: np.ndarray, n_dimensions: int,
                 spacing: float, radius: float):
        self.spacing, self.n_dimensions = float(spacing), int(n_dimensions)
        self.axis = axis_points(spacing, radius)
        self.groups = [np.flatnonzero(np.asarray(item_dimension) == k) for k in range(n_dimensions)]
        self.correct, self.answered = correct, answered
        self.complete = bool(answered.all())
        mesh = np.meshgrid(*[self.axis] * n_dimensions, indexing="ij")
        self.grid = np.stack([g.ravel() for g in mesh], axis=1)

    @property
    def n_nodes(self) -> int:
        """Nodes of the product grid, :math:`G^K`."""
        return len(self.grid)

    def log_weights(self, chol, lib=np):
        r""":math:`\log W` at the grid's nodes (nodes,) given the lower Cholesky factor ``chol`` of
        :math:`R` (NumPy, or PyTensor with ``lib=pt``)."""
        k = self.n_dimensions
        if lib is np:
            u = solve_triangular(chol, self.grid.T, lower=True)
        else:
            u = pt.linalg.solve_triangular(chol, self.grid.T, lower=True)
        log_det = lib.log(lib.diagonal(chol)).sum()
        return k * np.log(self.spacing) - 0.5 * (u**2).sum(axis=0) - log_det - 0.5 * k * np.log(2 * np.pi)

    def axis_loglik(self, a_own, d, c=None, lib=np, correct=None, answered=None) -> list:
        r"""Per ability k, :math:`\log f_{pk}(t_g)` (patterns, G): item slopes ``a_own`` (items,),
        intercepts ``d``, guessing ``c`` or None; ``correct``/``answered`` the patterns as model
        tensors (``lib=pt``), NumPy arrays of the rule by default."""
        correct = self.correct if correct is None else correct
        answered = self.answered if answered is None else answered
        out = []
        for idx in self.groups:
            eta = a_own[idx][:, None] * self.axis[None, :] + d[idx][:, None]
            guess = None if c is None else c[idx]
            out.append(pattern_node_loglik(correct[:, idx], answered[:, idx], eta, guess, complete=self.complete, lib=lib))
        return out

    def log_marginal(self, tables: list, log_w, lib=np):
        r""":math:`\log p(y_p)` (patterns,) from :meth:`axis_loglik`'s tables and
        :meth:`log_weights` (module docstring)."""
        tops, scaled = _scaled(tables, lib)
        g = len(self.axis)
        weights = lib.exp(log_w).reshape((g ** (self.n_dimensions - 1), g))
        joined = _outer_rows(scaled[:-1])
        total = (lib.dot(joined, weights) * scaled[-1]).sum(axis=1)
        with np.errstate(divide="ignore"):
            return lib.log(total) + sum(tops)

    def numpy_log_marginal(self, a, d, c=None, chol=None) -> np.ndarray:
        """:meth:`log_marginal` from the (items, K) loadings ``a`` (one nonzero per row)."""
        chol = np.eye(self.n_dimensions) if chol is None else chol
        return self.log_marginal(self.axis_loglik(own_slopes(a, self.groups), d, c), self.log_weights(chol))

    def moments(self, a, d, c=None, chol=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r"""Per pattern: :math:`\log p(y_p)`, and the mean (patterns, K) and covariance
        (patterns, K, K) of the abilities' conditional on the grid. Two abilities: with the
        scaled factors :math:`u = f_{p1}`, :math:`v = f_{p2}` and :math:`t` the axis, every
        moment is a sum :math:`\sum_{g,h} u_g t_g^r W_{gh} v_h t_h^s`, three (patterns, G) by
        (G, G) products in all. More abilities: the full (patterns, nodes) weights, block by
        block (:data:`MOMENT_BLOCK_ENTRIES`), as products of the factors and :math:`W`."""
        chol = np.eye(self.n_dimensions) if chol is None else chol
        tables = self.axis_loglik(own_slopes(a, self.groups), d, c)
        tops, scaled = _scaled(tables, np)
        weights = np.exp(self.log_weights(chol))
        if self.n_dimensions == 2:
            total, mean, cov = _two_moments(scaled[0], scaled[1], weights.reshape(len(self.axis), -1), self.axis)
        else:
            total, mean, cov = self._block_moments(scaled, weights)
        with np.errstate(divide="ignore"):
            return np.log(total) + sum(tops), mean, cov

    def _block_moments(self, scaled: list, weights: np.ndarray):
        n_patterns, k = len(scaled[0]), self.n_dimensions
        total, mean, cov = np.empty(n_patterns), np.empty((n_patterns, k)), np.empty((n_patterns, k, k))
        step = max(1, MOMENT_BLOCK_ENTRIES // self.n_nodes)
        for start in range(0, n_patterns, step):
            rows = slice(start, start + step)
            full = _outer_rows([s[rows] for s in scaled]) * weights
            total[rows] = full.sum(axis=1)
            mean[rows], cov[rows] = weighted_moments(full / total[rows, None], self.grid)
        return total, mean, cov


def _scaled(tables: list, lib):
    """Each table's row maximum over its axis (0 where a row is all -inf, NumPy) and the table's
    exponential after subtracting it: the factors :math:`f_{pk}` up to their scales."""
    tops = [t.max(axis=1) for t in tables]
    if lib is np:
        tops = [np.where(np.isfinite(top), top, 0.0) for top in tops]
    return tops, [lib.exp(t - top[:, None]) for t, top in zip(tables, tops)]


def _two_moments(u: np.ndarray, v: np.ndarray, weights: np.ndarray, t: np.ndarray):
    r"""Normaliser, mean and covariance of :math:`(\theta_1, \theta_2)` under
    :math:`u_{pg} W_{gh} v_{ph}` on the grid :math:`(t_g, t_h)`, per row p."""
    uw, utw = u @ weights, (u * t) @ weights
    total = (uw * v).sum(axis=1)
    m1 = (utw * v).sum(axis=1) / total
    m2 = (uw * v * t).sum(axis=1) / total
    s11 = (((u * t * t) @ weights) * v).sum(axis=1) / total - m1 * m1
    s22 = (uw * v * t * t).sum(axis=1) / total - m2 * m2
    s12 = (utw * v * t).sum(axis=1) / total - m1 * m2
    cov = np.stack([np.stack([s11, s12], axis=1), np.stack([s12, s22], axis=1)], axis=1) + 1e-9 * np.eye(2)
    return total, np.stack([m1, m2], axis=1), cov


def weighted_moments(weights: np.ndarray, points: np.ndarray):
    """Mean (rows, K) and covariance (rows, K, K) of ``points`` (nodes, K) under each row of
    normalised ``weights`` (rows, nodes): one product with the points and their pairwise
    products, not an ``einsum`` over rows x nodes x K x K (``models/irt_multidimensional.md``)."""
    k = points.shape[1]
    upper = np.triu_indices(k)
    moments = weights @ np.hstack([points, points[:, upper[0]] * points[:, upper[1]]])
    mean = moments[:, :k]
    second = np.empty((len(weights), k, k))
    second[:, upper[0], upper[1]] = moments[:, k:]
    second[:, upper[1], upper[0]] = moments[:, k:]
    return mean, second - mean[:, :, None] * mean[:, None, :] + 1e-9 * np.eye(k)


def own_slopes(a: np.ndarray, groups: list) -> np.ndarray:
    """Each item's slope on its own ability from the (items, K) loadings."""
    own = np.empty(a.shape[0])
    for k, idx in enumerate(groups):
        own[idx] = a[idx, k]
    return own


def _outer_rows(factors: list):
    """Row-wise outer product of (patterns, G) factors, flattened to (patterns, G^n) in C order."""
    joined = factors[0]
    for factor in factors[1:]:
        joined = (joined[:, :, None] * factor[:, None, :]).reshape((joined.shape[0], -1))
    return joined
