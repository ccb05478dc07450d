"""Online elicitation of scalar labels (Sakaguchi & Van Durme 2018): TrueSkill, bounded
ranking aggregation (RA), EASL and direct assessment (DA), with HIT selection by
variance and match quality (Algorithm 1). The update math is in
:mod:`bayes_raters.pairwise.updates`.

Every method holds one value per item along an ``item`` coordinate (``.state`` is an
``xarray.Dataset``), reads judgements in row order, reports ``.scores()`` (columns
``scalar`` and ``uncertainty``, the latter a variance) and can be saved and resumed::

    ra = BoundedRA(items)
    hits = ra.select_hits(n_items=5, random_seed=1)      # columns hit, item
    ra.observe_pairs(comparisons)                        # item_a, item_b, outcome
    ra.save("ra.nc"); ra = BoundedRA.load("ra.nc")
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.errors import InvalidInputError, PersistenceError
from bayes_raters.pairwise import updates
from bayes_raters.pairwise.hits import hits_to_pairs, validate_hits, validate_pairs, validate_scalars
from bayes_raters.persistence import load_dataset, save_dataset

STATE_ATTR = "bayes_raters_online"


def _item_index(items: Sequence) -> pd.Index:
    index = pd.Index(list(items) if not isinstance(items, pd.Index) else items, name="item")
    if len(index) < 2:
        raise InvalidInputError(f"need at least two item ids to compare, got {len(index)}.")
    if index.hasnans:
        raise InvalidInputError("item ids must not be missing (NaN/None).")
    if not index.is_unique:
        raise InvalidInputError(f"item ids must be unique; repeated: {index[index.duplicated()].unique()[:5].tolist()}.")
    return index


class OnlineMethod:
    """Shared state handling: item index, judgement counts, HIT selection, save/load.

    Subclasses define ``_variables`` (state arrays), ``_scalar_and_variance`` and
    ``scores``; ``_gamma`` is the width in match quality (Eqs. 11, 23)."""

    _kind: str = "pairs"  # which judgements the method reads: "pairs" or "scalars"

    def __init__(self, items: Sequence, **hyperparameters: float) -> None:
        self.items = _item_index(items)
        self.hyperparameters = hyperparameters
        self.n_judgements = np.zeros(len(self.items), dtype=np.int64)

    # --- state ---------------------------------------------------------------------
    def _variables(self) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _set_variables(self, values: dict[str, np.ndarray]) -> None:
        raise NotImplementedError

    @property
    def state(self) -> xr.Dataset:
        """A copy of the state, one value per item, plus the judgement counts."""
        data = {name: ("item", value.copy()) for name, value in self._variables().items()}
        data["n_judgements"] = ("item", self.n_judgements.copy())
        attrs = {STATE_ATTR: json.dumps(self._config())}
        return xr.Dataset(data, coords={"item": self.items.to_numpy()}, attrs=attrs)

    def _config(self) -> dict:
        return {"method": type(self).__name__, "hyperparameters": self.hyperparameters}

    def save(self, path: str | Path) -> Path:
        """Write the state and hyperparameters to netCDF (with a checksum, verified by
        ``load``); resume with ``load``."""
        state = self.state
        state.attrs = {}
        return save_dataset(state, path, self._config())

    @classmethod
    def load(cls, path: str | Path) -> OnlineMethod:
        """Rebuild a method from a file written by ``save``; a damaged or foreign file raises
        :class:`~bayes_raters.errors.PersistenceError`."""
        state, config = load_dataset(path)
        method = _METHODS.get(config.get("method"))
        if method is None or not issubclass(method, cls):
            raise PersistenceError(f"{path} does not hold a saved {cls.__name__} state (found {config or 'none'}).")
        restored = method(state["item"].values, **config["hyperparameters"])
        restored._set_variables({name: state[name].values.copy() for name in restored._variables()})
        restored.n_judgements = state["n_judgements"].values.astype(np.int64)
        return restored

    # --- judgements ----------------------------------------------------------------
    def _count(self, *positions: np.ndarray) -> None:
        for index in positions:
            self.n_judgements += np.bincount(index, minlength=len(self.items))

    def observe_pairs(self, comparisons: pd.DataFrame) -> OnlineMethod:
        """Refuse pairwise outcomes: this method learns from scalar judgements."""
        raise InvalidInputError(
            f"{type(self).__name__} learns from scalar judgements: use observe_scalars (or observe_hits)."
        )

    def observe_scalars(self, scalars: pd.DataFrame) -> OnlineMethod:
        """Refuse scalar judgements: this method learns from pairwise outcomes."""
        raise InvalidInputError(
            f"{type(self).__name__} learns from pairwise outcomes: use observe_pairs (or observe_hits)."
        )

    def observe_hits(self, hits: pd.DataFrame, tie_threshold: float = 0.0) -> OnlineMethod:
        """Read answered HITs (columns ``hit, item, value``): as C(n, 2) pairwise outcomes
        (differences within ``tie_threshold`` are ties) or as n scalars, per method."""
        if self._kind == "pairs":
            return self.observe_pairs(hits_to_pairs(hits, tie_threshold))
        return self.observe_scalars(validate_hits(hits))

    # --- selection -----------------------------------------------------------------
    def _scalar_and_variance(self) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    @property
    def _gamma(self) -> float:
        return float(self.hyperparameters["gamma"])

    def select_hits(self, n_items: int = 5, n_hits: int | None = None, random_seed=None) -> pd.DataFrame:
        """The next HITs by Algorithm 1 of the paper: the k = n_hits (default
        ceil(N / n_items)) items of highest variance, each joined by n_items - 1 partners
        drawn without replacement from the other items with probability proportional to
        match quality. While no item has been judged, the HITs instead partition a random
        permutation of the items, so the first round covers every item (when k n >= N).
        Returns columns ``hit`` (0..k-1) and ``item``."""
        n_total = len(self.items)
        if not 2 <= n_items <= n_total:
            raise InvalidInputError(f"n_items must be between 2 and the number of items ({n_total}), got {n_items}.")
        k = math.ceil(n_total / n_items) if n_hits is None else int(n_hits)
        if k < 1:
            raise InvalidInputError(f"n_hits must be at least 1, got {n_hits}.")
        rng = np.random.default_rng(random_seed)
        if not self.n_judgements.any():
            groups = _random_partition(n_total, n_items, k, rng)
        else:
            groups = self._groups_by_match_quality(n_items, k, rng)
        return pd.DataFrame(
            {"hit": np.repeat(np.arange(k), n_items), "item": self.items.to_numpy()[np.concatenate(groups)]}
        )

    def _groups_by_match_quality(self, n_items: int, k: int, rng: np.random.Generator) -> list[np.ndarray]:
        scalar, variance = self._scalar_and_variance()
        n_total = len(scalar)
        by_variance = np.lexsort((rng.random(n_total), -variance))
        anchors = by_variance[np.arange(k) % n_total]
        rest = by_variance[k:] if n_total - k >= n_items - 1 else by_variance
        groups = []
        for anchor in anchors:
            candidates = rest[rest != anchor]
            quality = updates.match_quality(scalar[anchor], variance[anchor], scalar[candidates], variance[candidates], self._gamma)
            partners = rng.choice(candidates, size=n_items - 1, replace=False, p=quality / quality.sum())
            groups.append(np.concatenate([[anchor], partners]))
        return groups


def _random_partition(n_total: int, n_items: int, k: int, rng: np.random.Generator) -> list[np.ndarray]:
    """k HITs from a random permutation; a short last HIT is filled with other random items."""
    order = rng.permutation(n_total)
    groups = []
    for h in range(k):
        group = order[(h * n_items) % n_total : (h * n_items) % n_total + n_items]
        if len(group) < n_items:
            others = np.setdiff1d(np.arange(n_total), group)
            group = np.concatenate([group, rng.choice(others, size=n_items - len(group), replace=False)])
        groups.append(group)
    return groups


class _BetaState(OnlineMethod):
    """Items as Beta(alpha, beta): scalar = mode (Eq. 12), uncertainty = variance (Eq. 13)."""

    def __init__(self, items: Sequence, alpha: float = 1.0, beta: float = 1.0, gamma: float = 0.1, **more: float) -> None:
        if alpha < 1 or beta < 1:
            raise InvalidInputError(
                f"the prior Beta(alpha, beta) needs alpha, beta >= 1 so its mode is defined; got {alpha}, {beta}."
            )
        if gamma <= 0:
            raise InvalidInputError(f"gamma must be > 0, got {gamma}.")
        super().__init__(items, alpha=alpha, beta=beta, gamma=gamma, **more)
        self.alpha = np.full(len(self.items), float(alpha))
        self.beta = np.full(len(self.items), float(beta))

    def _variables(self) -> dict[str, np.ndarray]:
        return {"alpha": self.alpha, "beta": self.beta}

    def _set_variables(self, values: dict[str, np.ndarray]) -> None:
        self.alpha, self.beta = values["alpha"].astype(float), values["beta"].astype(float)

    def _scalar_and_variance(self) -> tuple[np.ndarray, np.ndarray]:
        return updates.beta_mode(self.alpha, self.beta), updates.beta_variance(self.alpha, self.beta)

    def scores(self) -> pd.DataFrame:
        """Per item: ``scalar`` (mode), ``uncertainty`` (variance), ``alpha``, ``beta``,
        ``n_judgements``."""
        scalar, variance = self._scalar_and_variance()
        return pd.DataFrame(
            {"scalar": scalar, "uncertainty": variance, "alpha": self.alpha, "beta": self.beta, "n_judgements": self.n_judgements},
            index=self.items,
        )


class BoundedRA(_BetaState):
    """Bounded online ranking aggregation: Beta items updated by win / tie / loss with
    Rao-Kupper probabilities on pi = exp(mode) (Eqs. 14-22). Defaults from the paper:
    alpha = beta = 1, gamma = epsilon = 0.1."""

    def __init__(self, items: Sequence, alpha: float = 1.0, beta: float = 1.0, gamma: float = 0.1, epsilon: float = 0.1) -> None:
        if epsilon < 0:
            raise InvalidInputError(f"epsilon (tie rate) must be >= 0, got {epsilon}.")
        super().__init__(items, alpha=alpha, beta=beta, gamma=gamma, epsilon=epsilon)

    def observe_pairs(self, comparisons: pd.DataFrame) -> BoundedRA:
        """Apply outcomes (columns ``item_a, item_b, outcome``) in row order."""
        pairs = validate_pairs(comparisons, self.items)
        updates.ra_sequence(
            self.alpha, self.beta, pairs["first"], pairs["second"], pairs["outcome"],
            float(self.hyperparameters["gamma"]), float(self.hyperparameters["epsilon"]),
        )
        self._count(pairs["first"], pairs["second"])
        return self


class EASL(_BetaState):
    """EASL: Beta items updated by scalar judgements s in [0, 1]: alpha += s,
    beta += 1 - s (Eqs. 24-25); HITs chosen by variance and match quality."""

    _kind = "scalars"

    def __init__(self, items: Sequence, alpha: float = 1.0, beta: float = 1.0, gamma: float = 0.1) -> None:
        super().__init__(items, alpha=alpha, beta=beta, gamma=gamma)

    def observe_scalars(self, scalars: pd.DataFrame) -> EASL:
        """Add judgements (columns ``item, value``); the update commutes, so a batch is
        applied at once."""
        judged = validate_scalars(scalars, self.items)
        updates.easl_update(self.alpha, self.beta, judged["index"], judged["value"])
        self._count(judged["index"])
        return self


class TrueSkill(OnlineMethod):
    """TrueSkill for two items with ties (Eqs. 3-11), with the parameters and defaults of
    the ``trueskill`` package: ``mu`` = 25, ``sigma`` = mu / 3 (prior), ``beta`` = sigma / 2
    (performance SD, the skill chain), ``tau`` = sigma / 100 (dynamics added before each
    game), ``draw_probability`` = 0.1 (sets the draw margin). scalar = mu,
    uncertainty = sigma^2."""

    def __init__(
        self,
        items: Sequence,
        mu: float = 25.0,
        sigma: float | None = None,
        beta: float | None = None,
        tau: float | None = None,
        draw_probability: float = 0.10,
    ) -> None:
        sigma = mu / 3 if sigma is None else sigma
        beta = sigma / 2 if beta is None else beta
        tau = sigma / 100 if tau is None else tau
        if sigma <= 0 or beta <= 0 or tau < 0:
            raise InvalidInputError(f"need sigma > 0, beta > 0, tau >= 0; got {sigma}, {beta}, {tau}.")
        if not 0 <= draw_probability < 1:
            raise InvalidInputError(f"draw_probability must be in [0, 1), got {draw_probability}.")
        super().__init__(items, mu=mu, sigma=sigma, beta=beta, tau=tau, draw_probability=draw_probability)
        self.mu = np.full(len(self.items), float(mu))
        self.sigma2 = np.full(len(self.items), float(sigma) ** 2)

    @property
    def _gamma(self) -> float:
        return float(self.hyperparameters["beta"])

    def _variables(self) -> dict[str, np.ndarray]:
        return {"mu": self.mu, "sigma2": self.sigma2}

    def _set_variables(self, values: dict[str, np.ndarray]) -> None:
        self.mu, self.sigma2 = values["mu"].astype(float), values["sigma2"].astype(float)

    def _scalar_and_variance(self) -> tuple[np.ndarray, np.ndarray]:
        return self.mu, self.sigma2

    @property
    def draw_margin(self) -> float:
        """TrueSkill's draw margin for the configured draw probability and beta."""
        return updates.trueskill_draw_margin(self.hyperparameters["draw_probability"], self.hyperparameters["beta"])

    def observe_pairs(self, comparisons: pd.DataFrame) -> TrueSkill:
        """Apply games (columns ``item_a, item_b, outcome``) in row order."""
        pairs = validate_pairs(comparisons, self.items)
        if self.hyperparameters["draw_probability"] == 0 and (pairs["outcome"] == updates.TIE).any():
            raise InvalidInputError("a tie was observed but draw_probability is 0: set a draw probability > 0.")
        updates.trueskill_sequence(
            self.mu, self.sigma2, pairs["first"], pairs["second"], pairs["outcome"],
            self.hyperparameters["beta"], self.hyperparameters["tau"], self.draw_margin,
        )
        self._count(pairs["first"], pairs["second"])
        return self

    def quality(self, item_a, item_b) -> float:
        """Match quality of two items (Eq. 11), as ``trueskill.quality_1vs1``."""
        a, b = self.items.get_indexer([item_a, item_b])
        if a < 0 or b < 0:
            raise InvalidInputError(f"unknown item id in ({item_a!r}, {item_b!r}).")
        return float(updates.match_quality(self.mu[a], self.sigma2[a], self.mu[b:b + 1], self.sigma2[b:b + 1], self._gamma)[0])

    def scores(self) -> pd.DataFrame:
        """Per item: ``scalar`` (= mu), ``uncertainty`` (= sigma^2), ``mu``, ``sigma``, ``n_judgements``."""
        return pd.DataFrame(
            {"scalar": self.mu, "uncertainty": self.sigma2, "mu": self.mu, "sigma": np.sqrt(self.sigma2), "n_judgements": self.n_judgements},
            index=self.items,
        )


class DirectAssessment(OnlineMethod):
    """Direct assessment: the running mean of scalar judgements per item. uncertainty is
    the variance of that mean, s^2 / n (NaN below two judgements); items never judged
    have scalar NaN. HITs go to the least-judged items (random among ties)."""

    _kind = "scalars"

    def __init__(self, items: Sequence) -> None:
        super().__init__(items)
        self.total = np.zeros(len(self.items))
        self.total_squares = np.zeros(len(self.items))

    def _variables(self) -> dict[str, np.ndarray]:
        return {"total": self.total, "total_squares": self.total_squares}

    def _set_variables(self, values: dict[str, np.ndarray]) -> None:
        self.total, self.total_squares = values["total"].astype(float), values["total_squares"].astype(float)

    def observe_scalars(self, scalars: pd.DataFrame) -> DirectAssessment:
        """Add judgements (columns ``item, value``)."""
        judged = validate_scalars(scalars, self.items)
        n = len(self.items)
        self.total += np.bincount(judged["index"], weights=judged["value"], minlength=n)
        self.total_squares += np.bincount(judged["index"], weights=judged["value"] ** 2, minlength=n)
        self._count(judged["index"])
        return self

    def _scalar_and_variance(self) -> tuple[np.ndarray, np.ndarray]:
        n = self.n_judgements.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(n > 0, self.total / n, np.nan)
            sample_var = np.where(n > 1, (self.total_squares - n * mean**2) / (n - 1), np.nan)
            return mean, np.maximum(sample_var, 0.0) / n

    def select_hits(self, n_items: int = 5, n_hits: int | None = None, random_seed=None) -> pd.DataFrame:
        """The least-judged items (random among equals), n_items per HIT; DA judges each
        item on its own, so the grouping is only a batch."""
        n_total = len(self.items)
        if not 1 <= n_items <= n_total:
            raise InvalidInputError(f"n_items must be between 1 and the number of items ({n_total}), got {n_items}.")
        k = math.ceil(n_total / n_items) if n_hits is None else int(n_hits)
        rng = np.random.default_rng(random_seed)
        order = np.lexsort((rng.random(n_total), self.n_judgements))
        chosen = order[np.arange(k * n_items) % n_total]
        return pd.DataFrame({"hit": np.repeat(np.arange(k), n_items), "item": self.items.to_numpy()[chosen]})

    def scores(self) -> pd.DataFrame:
        """Per item: ``scalar`` (mean), ``uncertainty`` (variance of the mean), ``n_judgements``."""
        mean, variance = self._scalar_and_variance()
        return pd.DataFrame({"scalar": mean, "uncertainty": variance, "n_judgements": self.n_judgements}, index=self.items)


_METHODS = {method.__name__: method for method in (TrueSkill, BoundedRA, EASL, DirectAssessment)}
