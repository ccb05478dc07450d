r"""The exact log-likelihood of a unit's answers at the unit's own :math:`\theta`: what the
theta draws' rejection step (:func:`bayes_raters.quadrature.draw_log_concave`) evaluates for the
proposals its squeeze did not accept, with the same item parameters for every unit of a
posterior draw.

GRM. For the answer in category :math:`k` of item :math:`j`, with
:math:`x_{\text{below}} = a_j(\theta - b_{jk})` and :math:`x_{\text{above}} = a_j(\theta - b_{j,k+1})`
(:mod:`bayes_raters.irt.polytomous.model`),

.. math::

    \log P = \log\sigma(x_{\text{below}}) + \log\sigma(-x_{\text{above}}) + \log(1 - e^{-a_j(b_{j,k+1} - b_{jk})}),

one formula for every category: the lowest category's missing lower threshold is
:math:`-S` and the highest's missing upper threshold :math:`+S` (:data:`SENTINEL`, far beyond
any :math:`a\theta`), where :math:`\log\sigma(\pm S)` is exactly 0 or irrelevant, and the last
term, free of :math:`\theta`, is 0 there. An unanswered (unit, item) cell has slope 0 and both
sentinels, so it adds exactly 0. The answers then form a dense (units, items) array, summed
along items without a scatter; the :math:`\theta`-free parts (slope, :math:`a b` of both
thresholds, the gap term) are computed once per posterior draw and category row
(:func:`answered_logp_fn`), and gathered only for the units asked about.

Why this layout: the rejection step asks for a different, small subset of units in every
round, and a dense (units, items) array is sliced by unit without a scatter back. The GPCM's
sum runs in the compiled :func:`bayes_raters.irt.polytomous.kernel.gpcm_answered_units`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from bayes_raters.irt.polytomous.kernel import gpcm_answered_units, grm_rejection, step_sums
from bayes_raters.quadrature import fast_softplus

#: Proposals per unit in the compiled GRM step (:func:`grm_unit_draws`): with the envelope's
#: acceptance near 0.8, a unit is left for the general rounds about once in 600.
UNIT_TRIES = 4
#: The stand-in for a missing threshold (a lowest category's lower one is -SENTINEL, a highest
#: category's upper one +SENTINEL) in units of :math:`a b`.
SENTINEL = 1e8


def answer_plan(rows: np.ndarray, layout) -> dict:
    """The theta-independent part of :func:`answered_logp`: the answered (unit, category row)
    pairs, their items and categories (the GPCM kernel's input), and the dense (units, items)
    category rows (the GRM's: ``rows`` with -1 where unanswered, ``cells`` with the row past the
    last there, which :func:`_grm_rows` makes the unanswered cell's). Built once per fit."""
    rows = np.asarray(rows)
    unit, column = np.nonzero(rows >= 0)
    row = rows[unit, column]
    start = np.concatenate([[0], np.cumsum(np.bincount(unit, minlength=len(rows)))])  # unit u's pairs: start[u]:start[u + 1]
    cells = np.ascontiguousarray(np.where(rows >= 0, rows, len(layout.cat_item)), dtype=np.int64)  # past the last row: unanswered
    return {"start": start, "item": layout.cat_item[row], "step": layout.step[row], "rows": rows, "n_units": len(rows), "cells": cells}


def answered_logp_fn(model: str, a, b, rows: np.ndarray, layout, plan: dict | None = None) -> Callable[..., np.ndarray]:
    r"""``(theta, units=None) ->`` the sum over each unit's answers of
    :math:`\log P(X_j = k \mid \theta_i)`, for one posterior draw's slopes ``a`` (items,) and
    thresholds ``b`` (thresholds,); ``rows[i, j]`` is the category row of unit i's answer to
    item j (-1 where unanswered), ``plan`` its :func:`answer_plan` (built here when not given).
    ``theta`` holds every unit's ability, or, with ``units`` (indices), those units' only. The
    work that does not depend on theta is done here, once."""
    plan = plan or answer_plan(rows, layout)
    a, b = np.asarray(a, float), np.asarray(b, float)
    if model != "grm":
        sums, coefficients = step_sums(a, b, layout)
        every = np.arange(plan["n_units"])

        def gpcm(theta, units=None):
            return gpcm_answered_units(np.asarray(theta, float), every if units is None else np.asarray(units, np.int64), plan["start"],
                                       plan["item"], plan["step"], a, sums, coefficients, layout.n_categories)

        return gpcm
    slope, below, above, gap = _grm_rows(a, b, layout)
    cells = plan["cells"]

    def logp(theta, units=None):
        chosen = cells if units is None else cells[units]
        s, lo, hi = slope[chosen], below[chosen], above[chosen]
        scaled = s * np.asarray(theta, float)[:, None]
        # log sigma(x_below) + log sigma(-x_above) = -softplus(-x_below) - softplus(x_above)
        terms = fast_softplus(lo - scaled) + fast_softplus(scaled - hi)
        return gap[chosen].sum(axis=1) - terms.sum(axis=1)

    return logp


def grm_unit_draws(a, b, layout, plan: dict, tries: int = UNIT_TRIES) -> Callable[..., tuple]:
    r"""The GRM's first rejection proposals for one posterior draw, compiled
    (:func:`~bayes_raters.irt.polytomous.kernel.grm_rejection`): ``(log_post, nodes, envelope,
    index, rng) -> (z, done, proposed)``, the ``unit_draws`` of
    :func:`bayes_raters.quadrature.draw_log_concave`; ``tries`` proposals per unit at most."""
    slope, below, above, gap = _grm_rows(np.asarray(a, float), np.asarray(b, float), layout)

    def draws(log_post, nodes, envelope, index, rng):
        u = rng.random((tries, 3, len(index)))
        return grm_rejection(log_post, np.asarray(nodes, float), envelope[0], envelope[1], np.asarray(index, np.int64), plan["cells"],
                             slope, below, above, gap, u)

    return draws


def _grm_rows(a: np.ndarray, b: np.ndarray, layout):
    r"""Per category row, plus one last row for an unanswered cell: slope, :math:`a b` of the
    lower and upper threshold (:math:`\mp` :data:`SENTINEL` where the category has none) and
    :math:`\log(1 - e^{-a(b_{\text{above}} - b_{\text{below}})})` (0 for the end categories)."""
    a_row = a[layout.cat_item]
    below = np.where(layout.first, -SENTINEL, a_row * b[layout.below])
    above = np.where(layout.last, SENTINEL, a_row * b[layout.above])
    middle = ~(layout.first | layout.last)
    gap = np.zeros(len(a_row))
    gap[middle] = np.log(-np.expm1(-(above[middle] - below[middle])))
    return (np.append(a_row, 0.0), np.append(below, -SENTINEL), np.append(above, SENTINEL), np.append(gap, 0.0))


def answered_logp(model: str, a, b, theta, rows: np.ndarray, layout, plan: dict | None = None) -> np.ndarray:
    r"""Sum over each unit's answers of :math:`\log P(X_j = k \mid \theta_i)` (NumPy): the
    formulas of :func:`~bayes_raters.irt.polytomous.model.category_logp` at the answered (row,
    theta) pairs only, much faster than all category rows at every theta and a one-hot sum
    (``models/irt_polytomous.md``). One call of :func:`answered_logp_fn`."""
    return answered_logp_fn(model, a, b, rows, layout, plan)(theta)
