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
:math:`p`: small products, then one gather-add of a row per block and pattern
(:func:`_gather_add`, Numba). The block size minimises
:math:`\tfrac14 \sum_b u_b r_b + P B` (:math:`r_b` rows per block, :math:`B` blocks,
:math:`P` patterns), the products' multiply-adds at a quarter of a gathered add's cost.

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
#: Cost of a multiply-add in the blocks' small products relative to a gathered add.
PRODUCT_COST = 0.25


@numba.njit(cache=True, nogil=True)
def _gather_add(tables, index, out):
    """``out[p] = sum_b tables[index[p, b]]`` (rows of ``tables``, every column)."""
    patterns, blocks = index.shape
    width = tables.shape[1]
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
    belong to the items ``row_item`` (consecutive rows per item), by blocks of items (module
    docstring); :meth:`product` is thread-safe."""

    def __init__(self, onehot: np.ndarray, row_item: np.ndarray):
        self.shape = onehot.shape
        self.size, self.rows, self.subpatterns, self.index = self._best_blocks(np.asarray(onehot, float), np.asarray(row_item))
        self.offsets = np.cumsum([0] + [len(s) for s in self.subpatterns])

    @staticmethod
    def _blocks(onehot: np.ndarray, row_item: np.ndarray, size: int):
        items = np.unique(row_item)
        rows, subpatterns, index, offset = [], [], [], 0
        for start in range(0, len(items), size):
            block_rows = np.flatnonzero(np.isin(row_item, items[start:start + size]))
            distinct, inverse = np.unique(onehot[:, block_rows], axis=0, return_inverse=True)
            rows.append(block_rows)
            subpatterns.append(np.ascontiguousarray(distinct))
            index.append(inverse.ravel() + offset)
            offset += len(distinct)
        return rows, subpatterns, np.ascontiguousarray(np.stack(index, axis=1), dtype=np.int64)

    @classmethod
    def _best_blocks(cls, onehot: np.ndarray, row_item: np.ndarray):
        best = None
        for size in BLOCK_SIZES[: len(np.unique(row_item))]:
            rows, subpatterns, index = cls._blocks(onehot, row_item, size)
            cost = PRODUCT_COST * sum(s.size for s in subpatterns) + index.size
            if best is None or cost < best[0]:
                best = (cost, size, rows, subpatterns, index)
        return best[1:]

    def product(self, matrix: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """:math:`Y M` (patterns, columns of ``matrix``); ``out``: a C-contiguous float array to fill."""
        matrix = np.asarray(matrix, float)
        tables = np.empty((self.offsets[-1], matrix.shape[1]))
        for rows, subpatterns, start in zip(self.rows, self.subpatterns, self.offsets):
            np.matmul(subpatterns, matrix[rows], out=tables[start:start + len(subpatterns)])
        out = np.empty((self.shape[0], matrix.shape[1])) if out is None else out
        _gather_add(tables, self.index, out)
        return out
