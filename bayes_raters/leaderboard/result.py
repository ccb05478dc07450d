"""The leaderboard result: item and system tables (ranks, P(rank 1)), flags, posterior
predictive answers (the contract of :mod:`bayes_raters.results`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr
from scipy import special

from bayes_raters.errors import InvalidInputError
from bayes_raters.irt.slopes import rest_correlations
from bayes_raters.leaderboard.audit import audit_table
from bayes_raters.leaderboard.convergence import rhat_and_bulk_ess
from bayes_raters.leaderboard.mixed import mixed_predictive
from bayes_raters.leaderboard.model import LeaderboardSpec
from bayes_raters.results import FitResult, check_ci_prob, interval_table, quiet_loo, rank_table
from bayes_raters.sampling import ConvergenceReport

#: An item "does not rank systems" when its discrimination is below this with posterior
#: probability above :data:`FLAT_PROB` (a = 0.25: the chance of a right answer moves from 0.44
#: to 0.56 between abilities -1 and 1).
FLAT_A = 0.25
FLAT_PROB = 0.9


def _with_answer_counts(table: pd.DataFrame, answers: pd.DataFrame, by: str) -> pd.DataFrame:
    """``table`` (indexed by the ids of column ``by``) with each id's ``n_answers`` and ``share_correct``."""
    counts = answers.groupby(by, sort=False)["correct"].agg(["size", "mean"]).reindex(table.index)
    return table.assign(n_answers=counts["size"].to_numpy(), share_correct=counts["mean"].to_numpy())


@dataclass(repr=False, kw_only=True)
class LeaderboardResult(FitResult):
    """A fitted leaderboard (:func:`~bayes_raters.leaderboard.fit_leaderboard`): ``idata`` (posterior
    ``theta`` per system, ``a``/``b`` per item, hyperparameters; ``sample_stats``; per-item
    ``log_likelihood``; ``observed_data``/``constant_data`` per answer), the model name and the
    convergence ``report``."""

    idata: xr.DataTree
    spec: LeaderboardSpec
    report: ConvergenceReport

    summary_var_names = ("b_mean", "b_sigma", "log_a_mean", "log_a_sigma", "a_common")
    family = "leaderboard"

    @property
    def model(self) -> str:
        """The model's name: ``"2pl"`` or ``"1pl"``."""
        return self.spec.model

    def _size(self) -> str:
        post = self.posterior
        return f"{post.sizes['system']} systems x {post.sizes['item']} items, {self.idata['observed_data'].sizes['answer']:,} answers"

    def _answers(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        const = self.idata["constant_data"]
        return const["system_index"].values, const["item_index"].values, self.idata["observed_data"]["correct"].values

    @property
    def mixed(self) -> bool:
        """Whether the fit is a mixed leaderboard (3PL or graded items beside the 0/1 items)."""
        return "item_type" in self.idata["constant_data"]

    def _refuse_mixed(self, what: str) -> None:
        if self.mixed:
            raise InvalidInputError(
                f"{what} reads 0/1 items under the 2PL; this fit is a mixed leaderboard (item_types). Fit the 0/1 items "
                "alone (fit_leaderboard on their answers) for it.")

    def _slopes(self, draws: xr.Dataset) -> xr.DataArray:
        """``a`` per item (the 1PL's common slope broadcast over the items)."""
        if "a" in draws:
            return draws["a"]
        return draws["a_common"] * xr.ones_like(draws["b"])

    def answer_table(self) -> pd.DataFrame:
        """The answers the model was fitted to: ``respondent, item, correct``."""
        s, j, y = self._answers()
        post = self.posterior
        return pd.DataFrame({"respondent": post["system"].values[s], "item": post["item"].values[j], "correct": y.astype(float)})

    def item_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per item: ``a_*`` and ``b_*`` (posterior mean, sd, equal-tailed ``ci_prob``
        interval), ``n_answers``, ``share_correct``, the item-rest correlation ``rest_corr`` and its
        one-sided upper 95% limit (:mod:`bayes_raters.irt.slopes`), ``p_flat`` = P(a < 0.25), the
        item's worst ``r_hat`` and ``ess_bulk`` over ``a`` and ``b`` (which items limit the fit's
        convergence), and ``flag``: ``"backwards"`` (the upper limit of the item-rest correlation
        is below 0: the answers fall as the other items rise, a miskeyed item, which the positive
        slope cannot express, so its ``a`` sits near 0), ``"flat"`` (the data rule out an item-rest
        correlation of 0.1, or P(a < 0.25) > 0.9: the item ranks systems hardly at all),
        ``"all correct"`` / ``"all wrong"`` (difficulty only bounded), else empty.

        Parameters
        ----------
        ci_prob : float
            Probability of the intervals.

        Returns
        -------
        pandas.DataFrame
            Indexed by item, in the order of the data.
        """
        check_ci_prob(ci_prob)
        post = self.posterior
        parts = []
        for label, values in (("a", self._slopes(post)), ("b", post["b"])):
            part = interval_table(values.astype(float), ci_prob, ("item",))
            parts.append(part.add_prefix(f"{label}_"))
        table = pd.concat(parts, axis=1)
        answers = self.answer_table()
        table = _with_answer_counts(table, answers, "item")
        rest = rest_correlations(answers, "correct").reindex(table.index)
        table["rest_corr"], table["rest_corr_upper"] = rest["rest_corr"], rest["rest_corr_upper"]
        table["p_flat"] = (self._slopes(post) < FLAT_A).mean(("chain", "draw")).to_series().reindex(table.index).to_numpy()
        checked = [post[name].astype(float).transpose("chain", "draw", "item").values for name in (("a", "b") if "a" in post else ("b",))]
        diagnosed = [rhat_and_bulk_ess(values) for values in checked]
        table["r_hat"] = np.max([r_hat for r_hat, _ in diagnosed], axis=0)
        table["ess_bulk"] = np.min([bulk for _, bulk in diagnosed], axis=0)
        backwards = (rest["rest_corr_upper"] < 0).to_numpy()
        weak = rest["contradicts_slope"].fillna(False).to_numpy(bool) | (table["p_flat"] > FLAT_PROB).to_numpy()
        flag = np.where(backwards, "backwards", np.where(weak, "flat", ""))
        flag = np.where(table["share_correct"] == 1, "all correct", np.where(table["share_correct"] == 0, "all wrong", flag))
        table["flag"] = flag
        if self.mixed:
            table.insert(0, "item_type", self.idata["constant_data"]["item_type"].to_series().reindex(table.index).to_numpy())
        return table

    def audit_table(self) -> pd.DataFrame:
        """The benchmark audit (:func:`bayes_raters.leaderboard.audit.audit_table`): per item
        ``p_keyed``, ``p_miskeyed``, ``p_random``, ``saturation`` (P(the best system answers it
        right)) and ``flag``; the shares of the three kinds of item in ``table.attrs["shares"]``.
        The ``backwards`` flag of :meth:`item_table` is a heuristic; these are probabilities.

        Returns
        -------
        pandas.DataFrame
            Indexed by item, in the order of the data.
        """
        self._refuse_mixed("The audit")
        return audit_table(self)

    def system_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per system, best first: ``theta_*`` (mean, sd, interval), the rank (1 = best)
        over the draws: ``rank_mean``, ``rank_lower``, ``rank_upper`` (equal-tailed ``ci_prob``
        interval), ``p_rank_1`` (the posterior probability that the system is the best; the column
        sums to 1), ``n_answers`` and ``share_correct``.

        Parameters
        ----------
        ci_prob : float
            Probability of the intervals.

        Returns
        -------
        pandas.DataFrame
            Indexed by system, sorted by ``theta_mean`` (highest first).
        """
        check_ci_prob(ci_prob)
        theta = self.posterior["theta"]
        table = interval_table(theta, ci_prob, ("system",)).add_prefix("theta_")
        values = theta.transpose("chain", "draw", "system").values.reshape(-1, theta.sizes["system"])
        table = table.join(rank_table(values, pd.Index(theta["system"].values), ci_prob))
        table = _with_answer_counts(table, self.answer_table(), "respondent")
        table.index.name = "system"
        return table.sort_values("theta_mean", ascending=False)

    def loo(self):
        """``az.loo`` over items (each item's answers left out together: how well the fitted
        item population predicts a new item of the benchmark). Items whose Pareto k is high are
        the influential ones; no warning is repeated here."""
        return quiet_loo(self.idata)

    def _posterior_predictive(self, draws: xr.Dataset, rng: np.random.Generator) -> xr.Dataset:
        if self.mixed:
            return mixed_predictive(self.idata, draws, rng)
        s, j, _ = self._answers()
        theta = draws["theta"].transpose("chain", "draw", "system").values
        a = self._slopes(draws).transpose("chain", "draw", "item").values
        b = draws["b"].transpose("chain", "draw", "item").values
        out = np.empty(theta.shape[:2] + (len(s),), dtype=np.int8)
        for c in range(theta.shape[0]):
            for d in range(theta.shape[1]):
                p = special.expit(a[c, d, j] * (theta[c, d, s] - b[c, d, j]))
                out[c, d] = rng.random(len(s)) < p
        coords = {"chain": draws["chain"].values, "draw": draws["draw"].values, "answer": np.arange(len(s))}
        return xr.Dataset({"correct": (("chain", "draw", "answer"), out)}, coords=coords)

    def _saved_config(self) -> dict:
        return {"spec": self.spec.to_dict(), "report": self.report.to_dict()}

    @classmethod
    def _from_saved(cls, tree: xr.DataTree, config: dict) -> LeaderboardResult:
        return cls(idata=tree, spec=LeaderboardSpec.from_dict(config["spec"]), report=ConvergenceReport(**config["report"]))
