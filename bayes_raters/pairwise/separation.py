r"""Items the comparisons do not bound: separation in the graph of wins.

Draw an arrow :math:`i \to j` whenever :math:`i` beat or tied :math:`j` at least once (a tie
counts both ways). The Bradley-Terry (and Rao-Kupper) likelihood has a finite maximum exactly
when this graph is strongly connected (Zermelo 1929; Ford 1957): every item beat, directly or
through others, every other item. Otherwise some group of items never loses to the rest (or never
beats it), and the likelihood keeps rising as that group moves away: an item that never wins has
no lower bound from the data, one that never loses no upper bound. A Bayesian fit stays finite
(the prior bounds it), but the item's value is then the prior's as much as the data's, and
:meth:`~bayes_raters.pairwise.result.PairwiseResult.item_table` says so (``never_wins``,
``never_loses``).

The same condition chooses how comparisons alone are sampled
(:func:`~bayes_raters.pairwise.abilities.uses_differences`): the abilities' differences where the
data bound every one of them, the values otherwise. On R's chameleons contests (35 lizards, 106
contests, 10 that never win and 2 that never lose) the differences' ``min`` and ``max`` kept
switching among the unbounded items and 4 chains of 1,000 ended at bulk ESS 199, where the values
coordinates reached 748 with 2 chains in a tenth of the time (``models/pairwise_beta_latent.md``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.sparse import coo_array
from scipy.sparse.csgraph import connected_components

from bayes_raters.pairwise.likelihood import OUTCOME_INDEX


def win_graph(a: np.ndarray, b: np.ndarray, outcome: np.ndarray, n_items: int) -> coo_array:
    """The directed graph of :mod:`this module <bayes_raters.pairwise.separation>` from item
    positions ``a``, ``b`` and the outcome of ``a`` (:data:`OUTCOME_INDEX` codes): an edge from
    the winner to the loser of every comparison, both ways for a tie."""
    win, tie, loss = (outcome == OUTCOME_INDEX[k] for k in ("win", "tie", "loss"))
    source = np.concatenate([a[win | tie], b[loss | tie]])
    target = np.concatenate([b[win | tie], a[loss | tie]])
    return coo_array((np.ones(len(source)), (source, target)), shape=(n_items, n_items))


def separation_flags(a: np.ndarray, b: np.ndarray, outcome: np.ndarray, items: pd.Index) -> pd.DataFrame:
    """One row per item: ``never_wins`` (no comparison won or tied: the data bound its value from
    above only) and ``never_loses`` (none lost or tied: bounded from below only)."""
    graph = win_graph(a, b, outcome, len(items)).tocsr()
    wins = np.asarray(graph.sum(axis=1)).ravel()
    losses = np.asarray(graph.sum(axis=0)).ravel()
    return pd.DataFrame({"never_wins": wins == 0, "never_loses": losses == 0}, index=items)


def _coded(comparisons: pd.DataFrame, items: pd.Index) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Item positions of ``item_a`` and ``item_b`` and the outcome codes of validated comparisons."""
    return items.get_indexer(comparisons["item_a"]), items.get_indexer(comparisons["item_b"]), comparisons["outcome"].to_numpy(np.int64)


def separation_table(comparisons: pd.DataFrame, items: pd.Index) -> pd.DataFrame:
    """:func:`separation_flags` of validated comparisons (``item_a``, ``item_b``, ``outcome``)."""
    return separation_flags(*_coded(comparisons, items), items)


def likelihood_bounds_every_item(comparisons: pd.DataFrame, items: pd.Index) -> bool:
    """True when the win graph is strongly connected: the maximum-likelihood abilities exist.
    (A graph that is not may still have no item that never wins or never loses: a group that
    beats every item outside it but is never beaten by one.)"""
    if not len(comparisons):
        return False
    graph = win_graph(*_coded(comparisons, items), len(items))
    return connected_components(graph, directed=True, connection="strong")[0] == 1
