r"""The one-hot product :math:`Y M` of rating patterns, by blocks of items.

A pattern's log-likelihood at the quadrature nodes is the sum over its items of the answered
category's row of a (category rows, nodes) matrix :math:`M`: the product :math:`Y M` with
the one-hot (patterns, category rows) matrix :math:`Y` (:mod:`~bayes_raters.irt.polytomous.model`).
As a dense product it costs patterns x rows x nodes multiply-adds, most of them by zero.

Split the items into consecutive blocks of :math:`s` items. Within block :math:`b` the
patterns show only :math:`u_b` distinct sub-patterns (at most :math:`K^s`, far fewer than
the patterns when :math:`s` is small), so

.. math::

    (Y M)_p = \sum_b T_b[\iota_{pb}], \qquad T_b = Y_b M_b,

with :math:`Y_b` the (:math:`u_b`, rows of the block) one-hots of the distinct sub-patterns,
:math:`M_b` the block's rows of :math:`M` and :math:`\iota_{pb}` the sub-pattern of pattern
:math:`p`. Both levels are gathers: a row of :math:`T_b` sums the answered categories' rows of
:math:`M` (at most :math:`s`), a pattern sums one row of each :math:`T_b`; one compiled
``nogil`` call does both (:func:`_two_level_sum`), so threads drawing different chains do not
wait on each other. The block size minimises the rows gathered, :math:`\sum_b u_b s_b + P B`
(:math:`s_b` items in block :math:`b`, :math:`B` blocks, :math:`P` patterns).

Why: on ConspiracistBeliefs2016 (2,209 patterns x 75 category rows x 49 nodes) the blocked
product is 2.5 times as fast as the dense one on one thread (blocks of 3 or 4 items), the same
numbers to 1e-13; the theta draws form two such products per posterior draw and the Laplace
proposals one per proposal (``models/irt_polytomous.md`` has the timings).
"""

from __future__ import annotations

import numba
import numpy as np

#: Block sizes tried (items per block).
BLOCK_SIZES = (1, 2, 3, 4, 5, 6)


@numba.njit(cache=True, nogil=True)
def _two_level_sum(matrix, members, index, tables, out):
    """``tables[u] = sum of matrix[members[u, k]]`` over the members that are not -1, then
    ``out[p] = sum_b tables[index[p, b]]`` (every column)."""
    width = matrix.shape[1]
    for u in range(members.shape[0]):
        for q in range(width):
            tables[u, q] = 0.0
        for k in range(members.shape[1]):
            row = members[u, k]
            if row >= 0:
                for q in range(width):
                    tables[u, q] += matrix[row, q]
    patterns, blocks = index.shape
    for p in range(patterns):
        row = index[p, 0]
        for q in range(width):
            out[p, q] = tables[row, q]
        for b in range(1, blocks):
            row = index[p, b]
            for q in range(width):
                out[p, q] += tables[row, q]


class BlockedOnehot:
    """:math:`Y M` for a fixed one-hot pattern matrix ``onehot`` (patterns, rows), whose rows
    belong to the items ``row_item``, by blocks of consecutive items (module docstring);
    :meth:`product` is thread-safe."""

    def __init__(self, onehot: np.ndarray, row_item: np.ndarray):
        onehot, row_item = np.asarray(onehot, float), np.asarray(row_item)
        self.shape = onehot.shape
        best = min((self._blocks(onehot, row_item, size) for size in BLOCK_SIZES[: len(np.unique(row_item))]), key=lambda b: b[0])
        _, self.size, self.members, self.index = best

    @staticmethod
    def _blocks(onehot: np.ndarray, row_item: np.ndarray, size: int):
        """(cost, size, members, index) of blocks of ``size`` items: ``members`` (sub-patterns,
        ``size``) the category rows each distinct sub-pattern answers (-1: none), ``index``
        (patterns, blocks) each pattern's sub-pattern per block."""
        items = np.unique(row_item)
        members, index, offset = [], [], 0
        for start in range(0, len(items), size):
            rows = np.flatnonzero(np.isin(row_item, items[start:start + size]))
            distinct, inverse = np.unique(onehot[:, rows], axis=0, return_inverse=True)
            answered = np.full((len(distinct), size), -1, dtype=np.int64)
            sub, position = np.nonzero(distinct)
            rank = np.arange(len(sub)) - np.searchsorted(sub, sub)  # k-th answered row of its sub-pattern
            answered[sub, rank] = rows[position]
            members.append(answered)
            index.append(inverse.ravel() + offset)
            offset += len(distinct)
        members, index = np.concatenate(members), np.ascontiguousarray(np.stack(index, axis=1), dtype=np.int64)
        return int((members >= 0).sum() + index.size), size, members, index

    def product(self, matrix: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """:math:`Y M` (patterns, columns of ``matrix``); ``out``: a C-contiguous float array to fill."""
        matrix = np.ascontiguousarray(matrix, dtype=float)
        out = np.empty((self.shape[0], matrix.shape[1])) if out is None else out
        _two_level_sum(matrix, self.members, self.index, np.empty((len(self.members), matrix.shape[1])), out)
        return out
