"""The arena result (:func:`~bayes_raters.pairwise.fit_arena`): system, category and style tables
with rank intervals and P(rank 1), the drop-k-votes check of the top rank, per-pair log-likelihood
and posterior predictive counts (the contract of :mod:`bayes_raters.results`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import xarray as xr
from scipy import linalg, special

from bayes_raters.errors import InvalidInputError
from bayes_raters.pairwise.arena.model import OUTCOMES, ArenaData, ArenaSpec
from bayes_raters.pairwise.arena.posterior import layout_of, vote_derivatives
from bayes_raters.pairwise.separation import separation_flags
from bayes_raters.results import FitResult, check_ci_prob, interval_table, quiet_loo, rank_table
from bayes_raters.sampling import ConvergenceReport

#: Elo points per unit of log odds (arena leaderboards' scale: 400 / ln 10), centred at 1000.
ELO_PER_LOGIT = 400 / np.log(10)
ELO_CENTRE = 1000.0


def arena_data_tree(data: ArenaData) -> xr.DataTree:
    """The pooled votes as ``constant_data`` (rows and cells) and ``observed_data`` (win / tie /
    loss counts per cell: a category and an ordered pair of models)."""
    rows = {"row_cell": ("row", data.key), "row_outcome": ("row", data.outcome), "row_weight": ("row", data.weight),
            "row_style": (("row", "style"), data.z * data.style_scale),
            "cell_category": ("cell", data.key_c), "cell_model_a": ("cell", data.key_a), "cell_model_b": ("cell", data.key_b)}
    counts = np.zeros((data.key_a.size, 3))
    np.add.at(counts, (data.key, data.outcome.astype(np.int64)), data.weight)
    constant = xr.Dataset(rows, coords={"style": list(data.style)})
    constant.attrs.update(models=list(map(str, data.models)), categories=[] if data.categories is None else list(map(str, data.categories)),
                          ties=int(data.ties), n_votes=int(data.n_votes), style_scale=list(map(float, data.style_scale)))
    observed = xr.Dataset({"cell_counts": (("cell", "outcome_kind"), counts)}, coords={"outcome_kind": list(OUTCOMES)})
    return xr.DataTree.from_dict({"constant_data": constant, "observed_data": observed})


def data_from_tree(tree: xr.DataTree) -> ArenaData:
    """The :class:`ArenaData` stored by :func:`arena_data_tree` (for a loaded result)."""
    const = tree["constant_data"].to_dataset()
    scale = np.asarray(const.attrs["style_scale"], dtype=float)
    categories = list(const.attrs["categories"])
    return ArenaData(
        models=pd.Index(list(const.attrs["models"]), dtype=object, name="model"),
        categories=pd.Index(categories, dtype=object, name="category") if categories else None,
        style=tuple(map(str, const["style"].values)), key=const["row_cell"].values, key_c=const["cell_category"].values,
        key_a=const["cell_model_a"].values, key_b=const["cell_model_b"].values, outcome=const["row_outcome"].values.astype(np.int8),
        weight=const["row_weight"].values.astype(float), z=np.ascontiguousarray(const["row_style"].values / np.where(scale > 0, scale, 1)),
        style_scale=scale, ties=bool(const.attrs["ties"]), n_votes=int(const.attrs["n_votes"]),
    )


def fewest_flipping(flips, start: int, limit: int, refits: int) -> int | None:
    """The smallest count ``n`` in [1, ``limit``] with ``flips(n)`` found by doubling from ``start``
    until one flips, then bisecting to 2% (``flips`` is assumed monotone; at most ``refits`` calls);
    None when ``limit`` does not flip."""
    low, high, calls = 0, None, 0
    n = max(1, min(start, limit))
    while high is None and calls < refits:
        calls += 1
        if flips(n):
            high = n
        elif n >= limit:
            return None
        else:
            low, n = n, min(limit, 2 * n)
    while high is not None and high - low > max(1, high // 50) and calls < refits:
        calls += 1
        middle = (low + high) // 2
        if flips(middle):
            high = middle
        else:
            low = middle
    return high


@dataclass(repr=False, kw_only=True)
class ArenaResult(FitResult):
    """A fitted arena (:func:`~bayes_raters.pairwise.fit_arena`): ``idata`` (posterior ``theta``,
    ``rating``, and where fitted ``u``, ``category_rating``, ``tau``, ``beta``, ``epsilon``; the
    pooled votes in ``constant_data``/``observed_data``), the convergence ``report`` and the fit's
    ``spec`` (:class:`~bayes_raters.pairwise.arena.model.ArenaSpec`). ``data`` and the Laplace ``approximation`` are rebuilt when a loaded result needs them."""

    idata: xr.DataTree
    spec: ArenaSpec
    report: ConvergenceReport
    data: ArenaData | None = None
    approximation: object = None

    summary_var_names = ("epsilon", "tau", "beta")
    family = "arena"

    def __post_init__(self) -> None:
        if self.data is None:
            self.data = data_from_tree(self.idata)

    def _size(self) -> str:
        return f"{len(self.data.models)} models, {self.data.n_votes:,} votes"

    @property
    def model(self) -> str:
        """The model's name: ``"rao_kupper"`` (ties modelled) or ``"bradley_terry"`` (no tie band)."""
        return "rao_kupper" if self.data.ties else "bradley_terry"

    def _draws(self, name: str, *dims: str) -> np.ndarray:
        values = self.posterior[name].transpose("chain", "draw", *dims).values
        return values.reshape(-1, *values.shape[2:])

    def _votes_by_model(self) -> pd.DataFrame:
        d = self.data
        cell_votes = np.bincount(d.key, weights=d.weight, minlength=d.key_a.size)
        wins = np.bincount(d.key, weights=d.weight * (d.outcome == OUTCOMES["win"]), minlength=d.key_a.size)
        ties = np.bincount(d.key, weights=d.weight * (d.outcome == OUTCOMES["tie"]), minlength=d.key_a.size)
        m = len(d.models)
        votes = np.bincount(d.key_a, cell_votes, m) + np.bincount(d.key_b, cell_votes, m)
        score = np.bincount(d.key_a, wins + ties / 2, m) + np.bincount(d.key_b, cell_votes - wins - ties / 2, m)
        return pd.DataFrame({"n_votes": votes.astype(int), "win_share": score / votes}, index=d.models)

    def system_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per model, best first: ``rating_*`` (mean, sd, equal-tailed ``ci_prob`` interval)
        in Elo points (400 / ln 10 per unit of log odds, the models' mean at 1000; style-controlled
        when the fit had style columns), ``rank_mean``, ``rank_lower``, ``rank_upper``, ``p_rank_1``
        (sums to 1 over models), ``n_votes``, ``win_share`` (wins plus half the ties, raw) and the
        flags ``never_wins`` and ``never_loses`` (the votes leave the rating unbounded on
        one side, so the prior places it there: :mod:`bayes_raters.pairwise.separation`)."""
        check_ci_prob(ci_prob)
        rating = ELO_CENTRE + ELO_PER_LOGIT * self.posterior["rating"]
        table = interval_table(rating, ci_prob, ("model",)).add_prefix("rating_")
        table = table.join(rank_table(self._draws("rating", "model"), self.data.models, ci_prob)).join(self._votes_by_model())
        data = self.data
        table = table.join(separation_flags(data.key_a[data.key], data.key_b[data.key], data.outcome, data.models))
        return table.rename_axis("model").sort_values("rating_mean", ascending=False)

    def category_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per (category, model): the category's ``rating_*`` (Elo points, centred per
        category) and ranks within the category, shrunk to the overall ratings as far as the
        category's votes allow (``tau`` in the posterior is the spread of the deviations)."""
        if "category_rating" not in self.posterior:
            raise InvalidInputError("this fit has no categories: pass category=... (the column of each vote's category) to fit_arena.")
        check_ci_prob(ci_prob)
        rating = ELO_CENTRE + ELO_PER_LOGIT * self.posterior["category_rating"]
        table = interval_table(rating, ci_prob, ("category", "model")).add_prefix("rating_")
        values = self._draws("category_rating", "category", "model")
        ranks = [rank_table(values[:, c], self.data.models, ci_prob).assign(category=name).set_index("category", append=True)
                 for c, name in enumerate(self.data.categories)]
        ranks = pd.concat(ranks).reorder_levels(["category", "model"])
        return table.join(ranks).sort_values(["category", "rating_mean"], ascending=[True, False])

    def style_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per style column: its effect on the log odds of winning per unit of the column
        (``beta_*``), per root mean square of the column (``beta_per_rms_mean``) and P(effect > 0)."""
        if "beta" not in self.posterior:
            raise InvalidInputError("this fit has no style covariates: pass style=... (the style columns) to fit_arena.")
        check_ci_prob(ci_prob)
        table = interval_table(self.posterior["beta"], ci_prob, ("style",)).add_prefix("beta_")
        table["beta_per_rms_mean"] = table["beta_mean"] * self.data.style_scale
        table["p_positive"] = (self.posterior["beta"] > 0).mean(("chain", "draw")).to_series()
        return table

    def _approximation(self):
        if self.approximation is None:
            from bayes_raters.pairwise.arena.laplace import approximate

            self.approximation = approximate(self.data, layout_of(self.data), self.spec.rating_prior_sd)
        return self.approximation

    def drop_votes_check(self, k: int | None = None, max_share: float = 0.1, refits: int = 16) -> pd.Series:
        r"""How few votes must go for the top model to lose first place to the runner-up (at the
        posterior mode)? Each vote's influence on the margin :math:`d = \theta_1 - \theta_2` is
        :math:`-h^\top \nabla \ell_v` with :math:`h = H^{-1} c` (the Laplace curvature, :math:`c`
        the contrast): the first-order change of the mode when the vote is dropped (Broderick,
        Giordano & Meager's approximate maximum influence perturbation). Votes are dropped in order
        of that influence; the linear prediction gives a first count, and refits without the
        dropped votes (Newton from the mode, at most ``refits``) bisect to the fewest in that order
        that really flip the top rank (or test ``k`` votes when given).

        Returns ``top``, ``runner_up``, ``p_rank_1``, ``margin`` (log odds at the mode),
        ``votes_dropped`` (the fewest found: an upper bound on the fewest that could flip it; NaN
        when no flip comes within ``max_share`` of the votes), ``share_dropped``,
        ``predicted_margin`` (linear), ``refit_margin`` after dropping them, and ``flips``."""
        d, approx = self.data, self._approximation()
        table = self.system_table()
        top, second, margin, influence, order, dropped = self._drop_order(table)
        layout = layout_of(d)

        def refit_margin(n: int) -> float:
            from bayes_raters.pairwise.arena.laplace import newton

            x = newton(approx.mean.copy(), approx.free, replace(d, weight=d.weight - dropped(n)), layout,
                       self.spec.rating_prior_sd)[0]
            return float(x[top] - x[second])

        limit = int(max_share * d.n_votes)
        if k is None:
            cumulative = margin + np.cumsum(influence[order] * d.weight[order])
            crossing = np.nonzero(cumulative <= 0)[0]
            first = crossing[0] if crossing.size else int(np.argmin(cumulative))  # else: every vote that lowers the margin
            k = fewest_flipping(lambda n: refit_margin(n) <= 0, int(np.ceil(np.cumsum(d.weight[order])[first])), limit, refits)
        row = {"top": d.models[top], "runner_up": d.models[second], "p_rank_1": float(table["p_rank_1"].iloc[0]),
               "margin": float(margin), "votes_dropped": np.nan, "share_dropped": np.nan, "predicted_margin": np.nan,
               "refit_margin": np.nan, "flips": False}
        if k is not None:
            after = refit_margin(k)
            row.update(votes_dropped=int(k), share_dropped=k / d.n_votes, predicted_margin=float(margin + influence @ dropped(k)),
                       refit_margin=after, flips=bool(after <= 0))
        return pd.Series(row)

    def _drop_order(self, table: pd.DataFrame):
        """From the ``system_table()``: the top two models (positions), the margin at the mode, each pooled row's influence per
        vote, the order of dropping, and a function from a number of votes to the votes dropped per row."""
        d, approx = self.data, self._approximation()
        top, second = d.models.get_indexer(table.index[:2])
        layout = layout_of(d)
        contrast = np.zeros(layout.size)
        contrast[top], contrast[second] = 1.0, -1.0
        h = np.zeros(layout.size)
        h[approx.free] = linalg.cho_solve((approx.chol, True), contrast[approx.free])
        influence = -self._row_gradient_dot(approx.mean, h, layout)
        order = np.argsort(influence)
        before = np.cumsum(d.weight[order]) - d.weight[order]  # votes ahead of each row in that order

        def dropped(n: int) -> np.ndarray:
            out = np.zeros_like(d.weight)
            out[order] = np.minimum(d.weight[order], np.maximum(0.0, n - before))
            return out

        return top, second, float(approx.mean[top] - approx.mean[second]), influence, order, dropped

    def dropped_votes(self, k: int) -> pd.DataFrame:
        """The ``k`` votes whose removal lowers the top model's margin most (the order of
        :meth:`drop_votes_check`): ``model_a``, ``model_b``, ``outcome`` (for model_a), ``category``
        where fitted, the style values where fitted, and ``n`` (how many such votes)."""
        d = self.data
        *_, dropped = self._drop_order(self.system_table())
        n = dropped(k)
        rows = np.nonzero(n > 0)[0]
        cell = d.key[rows]
        table = pd.DataFrame({"model_a": d.models[d.key_a[cell]], "model_b": d.models[d.key_b[cell]],
                              "outcome": np.array(list(OUTCOMES))[d.outcome[rows].astype(np.int64)]})
        if d.categories is not None:
            table["category"] = d.categories[d.key_c[cell]]
        for j, name in enumerate(d.style):
            table[name] = d.z[rows, j] * d.style_scale[j]
        return table.assign(n=n[rows].astype(int))

    def _row_gradient_dot(self, x: np.ndarray, h: np.ndarray, layout) -> np.ndarray:
        r"""Per pooled row, one vote's :math:`\nabla \ell_v^\top h` at ``x``."""
        from bayes_raters.pairwise.arena.posterior import linear_predictor, rating_slots

        d = self.data
        eps = float(np.exp(x[layout.kappa])) if layout.ties else 0.0
        _, g_eta, _, g_eps, _, _ = vote_derivatives(linear_predictor(x, d, layout), d.outcome, eps)
        x_dot_h = np.zeros(d.key_a.size)
        for idx, sign in rating_slots(d, layout):
            x_dot_h += sign * h[idx]
        row = x_dot_h[d.key] + (d.z @ h[layout.beta] if layout.n_style else 0.0)
        out = g_eta * row
        if layout.ties:
            out += eps * g_eps * h[layout.kappa]
        return out

    def _pairs(self) -> tuple[np.ndarray, pd.MultiIndex]:
        d = self.data
        pair, pair_index = np.unique(d.key_a * len(d.models) + d.key_b, return_inverse=True)
        index = pd.MultiIndex.from_arrays([d.models[pair // len(d.models)], d.models[pair % len(d.models)]], names=["model_a", "model_b"])
        return pair_index, index

    def _row_probabilities(self, draw: dict) -> np.ndarray:
        """(rows, 3) outcome probabilities (loss, tie, win) at one draw's parameters."""
        d = self.data
        table = draw["theta"][None, :] + (draw["u"] if "u" in draw else 0.0)
        table = np.atleast_2d(table)
        eta = (table[d.key_c, d.key_a] - table[d.key_c, d.key_b])[d.key]
        if "beta" in draw:
            eta = eta + (d.z * d.style_scale) @ draw["beta"]
        eps = draw.get("epsilon", 0.0)
        win, loss = special.expit(eta - eps), special.expit(-eta - eps)
        return np.column_stack([loss, np.clip(1 - win - loss, 0, 1), win])

    def _each_draw(self, draws: xr.Dataset):
        names = [n for n in ("theta", "u", "beta", "epsilon") if n in draws]
        for c in range(draws.sizes["chain"]):
            for i in range(draws.sizes["draw"]):
                yield c, i, {n: np.asarray(draws[n].values[c, i], dtype=float) for n in names}

    def loo(self):
        """``az.loo`` over ordered pairs of models (each pair's votes, every category, left out
        together: how well the others predict a pair that never met). Pairs with many votes are
        influential by nature, so high Pareto k are common and no warning is repeated here: read
        ``pareto_k`` of the returned object."""
        return quiet_loo(self.compute_log_likelihood())

    def _log_likelihood(self) -> xr.Dataset:
        """Log-likelihood per ordered pair of models (all its votes, every category, left out together)."""
        pair_index, index = self._pairs()
        post = self.posterior
        out = np.empty((post.sizes["chain"], post.sizes["draw"], len(index)))
        d = self.data
        for c, i, draw in self._each_draw(post):
            p = self._row_probabilities(draw)[np.arange(d.outcome.size), d.outcome.astype(np.int64)]
            out[c, i] = np.bincount(pair_index[d.key], weights=d.weight * np.log(p), minlength=len(index))
        return xr.Dataset({"votes": (("chain", "draw", "pair"), out)},
                          coords={"chain": post["chain"].values, "draw": post["draw"].values, "pair": [f"{a} vs {b}" for a, b in index]})

    def _posterior_predictive(self, draws: xr.Dataset, rng: np.random.Generator) -> xr.Dataset:
        """Replicated loss / tie / win counts per cell (as ``observed_data``'s ``cell_counts``)."""
        d = self.data
        out = np.zeros((draws.sizes["chain"], draws.sizes["draw"], d.key_a.size, 3))
        for c, i, draw in self._each_draw(draws):
            counts = rng.multinomial(d.weight.astype(np.int64), self._row_probabilities(draw))
            for kind in range(3):
                out[c, i, :, kind] = np.bincount(d.key, weights=counts[:, kind], minlength=d.key_a.size)
        coords = {"chain": draws["chain"].values, "draw": draws["draw"].values, "outcome_kind": list(OUTCOMES)}
        return xr.Dataset({"cell_counts": (("chain", "draw", "cell", "outcome_kind"), out)}, coords=coords)

    def _saved_config(self) -> dict:
        return {"spec": self.spec.to_dict(), "report": self.report.to_dict()}

    @classmethod
    def _from_saved(cls, tree: xr.DataTree, config: dict) -> ArenaResult:
        return cls(idata=tree, spec=ArenaSpec.from_dict(config["spec"]), report=ConvergenceReport(**config["report"]))
