r"""Arena votes: the Rao-Kupper (Bradley-Terry with ties) model of pairwise votes between models,
with style covariates and per-category ratings shrunk to the overall ones.

Vote :math:`v` compares model :math:`a_v` with model :math:`b_v` in category :math:`c_v` and
ends in a win, a tie or a loss of :math:`a_v`. With the linear predictor

.. math::

    \eta_v = \theta_{c_v a_v} - \theta_{c_v b_v} + z_v^\top \beta, \qquad
    \theta_{cm} = \theta_m + u_{cm},

and the tie band :math:`\epsilon > 0` (Rao & Kupper 1967),

.. math::

    P(\text{win}) = \sigma(\eta - \epsilon), \quad P(\text{loss}) = \sigma(-\eta - \epsilon),
    \quad P(\text{tie}) = (e^{2\epsilon} - 1)\, \sigma(\eta - \epsilon)\, \sigma(-\eta - \epsilon),

the three summing to one. Without ties (``ties=False``, or no tie in the data) :math:`\epsilon = 0`:
Bradley-Terry. :math:`z_v` are the vote's style covariates (differences between the two answers:
length, headers, lists...), scaled to unit root mean square, so :math:`\beta` is the shift in log
odds per RMS of each covariate; the model ratings :math:`\theta` are then the ratings with style
held equal (style control).

Priors: :math:`\theta_m \sim N(0, s_\theta^2)` (``rating_prior_sd``, 2 by default on the log-odds
scale: 695 Elo points), :math:`\beta_k \sim N(0, 1)`, :math:`\epsilon \sim \mathrm{HalfNormal}(1)`,
category deviations :math:`u_{cm} \sim N(0, \tau^2)` with :math:`\tau \sim \mathrm{HalfNormal}(0.5)`:
one model, each category's ratings pulled to the overall ones as far as the category's votes
allow. Votes identify only differences, so the ratings' common level (and each category's) rests
on the prior; every table reports ratings centred at the mean over models, which the data
determine.

:func:`build_arena_model` writes this model in PyMC (for NUTS on a slice of the votes, and for
checking the fast path's log density); :mod:`bayes_raters.pairwise.arena.posterior` computes
the same log density, its gradient and Hessian directly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt

from bayes_raters.data import numeric_scores, quote_rows, require_columns, require_frame
from bayes_raters.errors import InsufficientDataError, InvalidInputError
from bayes_raters.fit_spec import FitSpec
from bayes_raters.pairwise.likelihood import OUTCOME_INDEX, difference_logp
from bayes_raters.pairwise.model import comparison_components

#: Outcome codes seen from the first model (``item_a``): those of the pairwise likelihood.
LOSS, TIE, WIN = OUTCOME_INDEX["loss"], OUTCOME_INDEX["tie"], OUTCOME_INDEX["win"]
OUTCOMES = {"loss": LOSS, "tie": TIE, "win": WIN}
RATING_PRIOR_SD = 2.0
TAU_PRIOR_SD = 0.5
EPSILON_PRIOR_SD = 1.0


@dataclass(frozen=True)
class ArenaSpec(FitSpec):
    """Options of an arena fit: ``rating_prior_sd``, the prior SD of every model's rating. Ties,
    style covariates and categories come with the votes (``ArenaResult.data``)."""

    rating_prior_sd: float = RATING_PRIOR_SD


@dataclass(frozen=True)
class ArenaData:
    """Validated votes, pooled into rows of identical votes (``weight`` = how many).

    ``key`` numbers each row's (category, first model, second model) triple; ``key_c``, ``key_a``,
    ``key_b`` give the triple of every key. ``z`` holds the style covariates divided by
    ``style_scale`` (their root mean square)."""

    models: pd.Index
    categories: pd.Index | None
    style: tuple[str, ...]
    key: np.ndarray
    key_c: np.ndarray
    key_a: np.ndarray
    key_b: np.ndarray
    outcome: np.ndarray
    weight: np.ndarray
    z: np.ndarray
    style_scale: np.ndarray
    ties: bool
    n_votes: int

    @property
    def n_categories(self) -> int:
        """Number of categories (0 without a category column)."""
        return 0 if self.categories is None else len(self.categories)


def _outcome_codes(values: pd.Series, what: str, table: pd.DataFrame) -> np.ndarray:
    codes = values.astype(str).str.lower().map(OUTCOMES)
    bad = codes.isna().to_numpy()
    if bad.any():
        raise InvalidInputError(
            f"{what}: the outcome column must hold win, tie or loss (seen from the first model); bad rows: {quote_rows(table, bad)}. "
            "An arena 'winner' column (model_a / model_b / tie / tie (bothbad)) maps to win / loss / tie / tie."
        )
    return codes.to_numpy(np.int8)


def _style_matrix(table: pd.DataFrame, style: tuple[str, ...], what: str) -> tuple[np.ndarray, np.ndarray]:
    """The style columns as floats scaled to unit root mean square, and the scales."""
    if not style:
        return np.zeros((len(table), 0)), np.zeros(0)
    z = np.column_stack([numeric_scores(table, column, what).to_numpy(float) for column in style])
    scale = np.sqrt(np.mean(z**2, axis=0))
    constant = [column for column, s in zip(style, scale, strict=True) if not s > 0]
    if constant:
        raise InvalidInputError(f"{what}: style column(s) {constant} are zero in every vote: drop them from style=.")
    return z / scale, scale


def _check_connected(models: pd.Index, a: np.ndarray, b: np.ndarray) -> None:
    labels = comparison_components(models, [(a, b)])
    n = len(set(labels))
    if n > 1:
        sizes = np.bincount(labels)
        small = models[labels != np.argmax(sizes)][:5].tolist()
        raise InsufficientDataError(
            f"the votes form {n} groups of models that never met (e.g. {small} apart from the largest group): "
            "ratings across groups are not identified. Drop those models or add votes between the groups."
        )


def prepare_votes(
    votes: pd.DataFrame,
    *,
    item_a: str = "model_a",
    item_b: str = "model_b",
    outcome: str = "outcome",
    style: tuple[str, ...] | list[str] = (),
    category: str | None = None,
    ties: bool | None = None,
    count: str | None = None,
) -> ArenaData:
    """Validate long votes (one row per vote: the two models, columns ``item_a`` and ``item_b`` as in a
    pairwise comparison, the outcome for the first, optional
    style columns and a category column; with ``count``, a column of how many identical votes a
    row stands for) and pool identical ones. Without style covariates, votes pool to at most three
    rows per (category, pair), so the cost no longer grows with the votes."""
    what = "votes"
    table = require_frame(votes, what)
    style = tuple(style)
    needed = {"item_a": item_a, "item_b": item_b, "outcome": outcome}
    absent = [column for column in style if column not in table.columns]
    if absent:
        raise InvalidInputError(f"votes has no style column(s) {absent}; it has {list(table.columns)}. Pass style=... with columns it has.")
    if category is not None:
        needed["category"] = category
    if count is not None:
        needed["count"] = count
    require_columns(table, needed, what)
    if table.empty:
        raise InvalidInputError("votes: the table has no rows.")
    counts = np.ones(len(table))
    if count is not None:
        counts = numeric_scores(table, count, what).to_numpy(float)
        bad = (counts < 0) | (counts != np.round(counts))
        if bad.any():
            raise InvalidInputError(f"votes: column {count!r} must hold whole numbers >= 0; bad rows: {quote_rows(table, bad)}.")
    first, second = table[item_a].astype(str).to_numpy(), table[item_b].astype(str).to_numpy()
    same = first == second
    if same.any():
        raise InvalidInputError(f"votes: {same.sum()} row(s) compare a model with itself, e.g. {quote_rows(table, same)}. Drop them.")
    codes = _outcome_codes(table[outcome], what, table)
    if ties is None:
        ties = bool((codes == TIE).any())
    elif not ties and (codes == TIE).any():
        raise InvalidInputError(f"ties=False, but {(codes == TIE).sum()} vote(s) are ties: pass ties=True or leave ties=None.")
    models = pd.Index(pd.unique(np.concatenate([first, second])), dtype=object, name="model")
    a, b = models.get_indexer(first), models.get_indexer(second)
    _check_connected(models, a, b)
    categories, c = None, np.zeros(len(table), dtype=np.int64)
    if category is not None:
        labels = table[category]
        if labels.isna().any():
            raise InvalidInputError(f"votes: {labels.isna().sum()} row(s) have no {category!r}: give every vote a category.")
        c, uniques = pd.factorize(labels.astype(str))
        categories = pd.Index(np.asarray(uniques, dtype=object), dtype=object, name="category")
    swap = a > b  # each pair in one order: the earlier model first, outcomes and style flipped
    a, b = np.where(swap, b, a), np.where(swap, a, b)
    codes = np.where(swap, 2 - codes, codes).astype(np.int8)
    z, scale = _style_matrix(table, style, what)
    z = np.where(swap[:, None], -z, z)
    triple = (c * len(models) + a) * len(models) + b
    keys, key = np.unique(triple, return_inverse=True)
    if not style:  # pool identical votes: one row per (key, outcome)
        rows, inverse = np.unique(key * 3 + codes, return_inverse=True)
        weight = np.bincount(inverse, weights=counts, minlength=rows.size)
        key, codes, z = rows // 3, (rows % 3).astype(np.int8), np.zeros((rows.size, 0))
    else:
        weight = counts
    return ArenaData(
        models=models, categories=categories, style=style, key=key.astype(np.int64),
        key_c=keys // (len(models) ** 2), key_a=(keys // len(models)) % len(models), key_b=keys % len(models),
        outcome=codes, weight=weight.astype(float), z=np.ascontiguousarray(z), style_scale=scale, ties=bool(ties),
        n_votes=int(counts.sum()),
    )


def build_arena_model(data: ArenaData, rating_prior_sd: float = RATING_PRIOR_SD) -> pm.Model:
    """The PyMC model of the module docstring for validated ``data`` (pooled rows enter with
    their weights, ``pm.Potential``); no sampling. Coords: ``model``, ``category``, ``style``.
    ``fit_arena`` does not sample it (its draws come from
    :mod:`bayes_raters.pairwise.arena.laplace`); it is here for NUTS on a slice of the votes
    and for checking the fast path's log density.

    Parameters
    ----------
    data : ArenaData
        Votes validated by :func:`prepare_votes` (or ``result.data`` of a fit).
    rating_prior_sd : float
        Prior SD of the ratings (log odds).

    Returns
    -------
    pymc.Model
        Free variables ``theta`` (model), and where the data have them ``u`` (category x model),
        ``tau``, ``beta`` (style, per RMS of each column), ``epsilon``.

    Examples
    --------
    >>> from bayes_raters.pairwise import build_arena_model, simulate_arena
    >>> from bayes_raters.pairwise.arena import prepare_votes
    >>> votes = simulate_arena(6, 500, random_seed=1)["votes"]
    >>> model = build_arena_model(prepare_votes(votes))
    >>> sorted(v.name for v in model.free_RVs)
    ['epsilon', 'theta']
    """
    coords = {"model": data.models.to_numpy(), "style": list(data.style)}
    if data.categories is not None:
        coords["category"] = data.categories.to_numpy()
    n_models = len(data.models)
    with pm.Model(coords=coords) as model:
        theta = pm.Normal("theta", 0.0, rating_prior_sd, dims="model")
        table = pt.tile(theta[None, :], (max(data.n_categories, 1), 1))
        if data.categories is not None:
            tau = pm.HalfNormal("tau", TAU_PRIOR_SD)
            u = pm.Normal("u", 0.0, tau, dims=("category", "model"))
            table = table + u
        flat = table.ravel()
        eta_key = flat[data.key_c * n_models + data.key_a] - flat[data.key_c * n_models + data.key_b]
        eta = eta_key[data.key]
        if data.style:
            beta = pm.Normal("beta", 0.0, 1.0, dims="style")
            eta = eta + pt.dot(data.z, beta)
        epsilon = pm.HalfNormal("epsilon", EPSILON_PRIOR_SD) if data.ties else None
        log_p = difference_logp(eta, epsilon)[pt.arange(data.outcome.size), data.outcome]
        pm.Potential("votes", pt.sum(data.weight * log_p))
    return model
