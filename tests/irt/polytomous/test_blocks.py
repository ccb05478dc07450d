"""The one-hot pattern product by blocks of items against the dense product."""

from __future__ import annotations

import numpy as np
import pytest

from bayes_raters.irt.polytomous.blocks import BlockedOnehot
from bayes_raters.irt.polytomous.model import CategoryLayout


def _patterns(rng, layout: CategoryLayout, n: int, missing: float) -> np.ndarray:
    """One-hot rows of ``n`` random patterns, each answer missing with probability ``missing``."""
    onehot = np.zeros((n, len(layout.cat_item)))
    for j, k in enumerate(layout.n_categories):
        answer = rng.integers(0, k, n)
        shown = rng.random(n) >= missing
        onehot[np.flatnonzero(shown), layout.cat_start[j] + answer[shown]] = 1.0
    return np.unique(onehot, axis=0)


@pytest.mark.parametrize(("categories", "missing"), [([5] * 15, 0.0), ([2, 5, 3, 4, 6, 2, 3], 0.3), ([4], 0.0)])
def test_blocked_product_equals_the_dense_product(categories, missing):
    """Items of 2-6 categories, missing answers (zero blocks) and a single item: the same
    numbers as ``onehot @ matrix`` to rounding, into ``out`` as well."""
    rng = np.random.default_rng(7)
    layout = CategoryLayout(np.array(categories))
    onehot = _patterns(rng, layout, 3000, missing)
    matrix = rng.normal(-2.0, 1.0, (len(layout.cat_item), 49))
    blocked = BlockedOnehot(onehot, layout.cat_item)
    np.testing.assert_allclose(blocked.product(matrix), onehot @ matrix, rtol=0, atol=1e-12)
    out = np.full((len(onehot), 49), np.nan)
    assert blocked.product(matrix, out=out) is out
    np.testing.assert_allclose(out, onehot @ matrix, rtol=0, atol=1e-12)


def test_blocks_are_chosen_by_the_cost_of_their_distinct_subpatterns():
    """Fifteen 5-category items answered at random: single items (15 gathers a pattern) and
    the whole pattern (thousands of distinct rows) both cost more than blocks of a few items."""
    rng = np.random.default_rng(8)
    layout = CategoryLayout(np.array([5] * 15))
    blocked = BlockedOnehot(_patterns(rng, layout, 2000, 0.0), layout.cat_item)
    assert 2 <= blocked.size <= 4
    assert blocked.index.shape[1] == -(-15 // blocked.size)  # blocks of consecutive items, the last may be short
