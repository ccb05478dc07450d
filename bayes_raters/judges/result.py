r"""The judges result (the contract of :mod:`bayes_raters.results`): systems' mean true scores
with intervals, ranks and :math:`P(\text{best})`; pairwise differences with :math:`P(A > B)`; each
judge's calibration, bias by system, PRMSE against the true score and worth in human ratings;
the human raters; the baselines (humans alone, the judge alone, PPI, PPI++) beside the model;
and the check of the human ratings' independence (:meth:`JudgesResult.human_check`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.judges import checks, plan
from bayes_raters.judges.baselines import baseline_table
from bayes_raters.judges.data import JudgesData
from bayes_raters.judges.draws import parameter_draws
from bayes_raters.judges.model import JudgesSpec, per_response_loglik, system_weights
from bayes_raters.persistence import dataset_to_frame, frame_to_dataset
from bayes_raters.results import FitResult, check_ci_prob, interval_table, rank_table
from bayes_raters.sampling import ConvergenceReport


def tables_tree(data: JudgesData) -> dict:
    """The validated tables as Datasets, the groups a saved result reads its data back from."""
    return {name: frame_to_dataset(frame) for name, frame in (("human_ratings", data.humans), ("judge_scores", data.judges), ("systems", data.systems))}


@dataclass(repr=False, kw_only=True)
class JudgesResult(FitResult):
    """A fitted judges model: ``idata`` (posterior of the standardised parameters and their
    versions on the rating scales, :func:`~bayes_raters.judges.draws.on_the_rating_scales`;
    sample_stats; observed_data ``human`` per rating and ``judge`` per score; the validated
    tables as groups), the :class:`~bayes_raters.judges.data.JudgesData`, the spec and the
    convergence ``report``."""

    idata: xr.DataTree
    data: JudgesData
    spec: JudgesSpec
    report: ConvergenceReport

    summary_var_names = ("system_mean", "system_sd", "human_noise", "rater_severity", "judge_intercept", "judge_slope",
                         "judge_noise", "judge_prmse", "judge_worth", "shared_share", "sigma_bias")
    family = "judges model"

    @property
    def model(self) -> str:
        """``"judges_shared_error"`` or ``"judges"`` (no shared error factor), with ``"_ordinal"``
        for ordinal human ratings."""
        return ("judges_shared_error" if self.spec.shared_error else "judges") + ("_ordinal" if self.spec.ordinal else "")

    def _size(self) -> str:
        d = self.data
        return (f"{len(d.responses)} responses of {len(d.system_names)} systems, {len(d.judge_names)} judges, "
                f"{len(d.humans)} human ratings of {d.humans['response'].nunique()} responses")

    def system_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per system: ``n_responses``, ``n_human`` (human-rated responses), the mean true
        score on the human rating scale (``mean``, ``sd``, ``lower``, ``upper``), its rank
        (1 = best; ``rank_mean``, ``rank_lower``, ``rank_upper``), ``p_best``, and the worst
        R-hat and bulk ESS of its mean."""
        values = self.posterior["system_mean"]
        frame = interval_table(values, ci_prob, ("system",))
        counts = self.data.systems.assign(rated=self.data.systems["response"].isin(self.data.humans["response"])).groupby("system", sort=False)
        frame.insert(0, "n_human", counts["rated"].sum().reindex(frame.index))
        frame.insert(0, "n_responses", counts.size().reindex(frame.index))
        ranks = rank_table(values.stack(sample=("chain", "draw")).transpose("sample", "system").values, frame.index, ci_prob)
        frame = frame.join(ranks.rename(columns={"p_rank_1": "p_best"}))
        return frame.join(self._checks("system_mean", "system"))

    def difference_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per pair of systems ``(system_a, system_b)``: the difference of their mean true
        scores a - b (``mean``, ``sd``, ``lower``, ``upper``) and ``p_a_better``, :math:`P(A > B)`."""
        check_ci_prob(ci_prob)
        values = self.posterior["system_mean"].stack(sample=("chain", "draw")).transpose("system", "sample")
        names, tail, rows = list(values["system"].values), (1 - ci_prob) / 2, []
        for a, b in itertools.combinations(range(len(names)), 2):
            difference = values.values[a] - values.values[b]
            rows.append({"system_a": names[a], "system_b": names[b], "mean": difference.mean(), "sd": difference.std(ddof=1),
                         "lower": np.quantile(difference, tail), "upper": np.quantile(difference, 1 - tail), "p_a_better": (difference > 0).mean()})
        return pd.DataFrame(rows).set_index(["system_a", "system_b"])

    def judge_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per judge: ``n_scores``; intervals (``_mean``, ``_lower``, ``_upper``) of its
        ``intercept`` and ``slope`` (expected score = intercept + slope x true score), ``noise``,
        ``prmse`` against the true score and ``worth`` in human ratings per response
        (:func:`~bayes_raters.judges.draws.on_the_rating_scales`), and where the model has the shared
        error factor ``shared_share``, the share of the judge's error variance it shares with the
        other judges (:func:`~bayes_raters.judges.model.split_judge_error`); ``own_error_near_zero``, a
        Heywood case (:func:`~bayes_raters.judges.checks.near_zero_own_error`: the fit lets the judge
        define the true score); ``shared_share_at_cap``, the shared share piled against its upper
        end (:func:`~bayes_raters.judges.checks.shared_share_at_cap`); ``biased_systems``, the systems whose bias interval excludes 0."""
        frame = pd.DataFrame(index=pd.Index(self.data.judge_names, name="judge"))
        frame["n_scores"] = self.data.judges.groupby("judge", sort=False).size()
        names = ["intercept", "slope", "noise", "prmse", "worth"] + (["shared_share"] if self.spec.shared_error else [])
        for name in names:
            variable = name if name == "shared_share" else f"judge_{name}"
            table = interval_table(self.posterior[variable], ci_prob, ("judge",))[["mean", "lower", "upper"]]
            frame = frame.join(table.add_prefix(f"{name}_"))
        frame["own_error_near_zero"] = checks.near_zero_own_error(self.posterior)
        frame["shared_share_at_cap"] = checks.shared_share_at_cap(self.posterior)
        bias = self.bias_table(ci_prob)
        flagged = bias[bias["biased"]].reset_index()
        frame["biased_systems"] = [", ".join(map(str, flagged.loc[flagged["judge"] == j, "system"])) for j in frame.index]
        return frame

    def bias_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per (judge, system): the judge's bias for that system on its own scale, beyond
        its calibration (``mean``, ``sd``, ``lower``, ``upper``; the biases of a judge sum to zero
        over systems), and ``biased`` where the interval excludes 0."""
        frame = interval_table(self.posterior["judge_bias"], ci_prob, ("judge", "system"))
        frame["biased"] = (frame["lower"] > 0) | (frame["upper"] < 0)
        return frame

    def rater_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per human rater: ``n_ratings``, ``mean_score`` and the severity on the rating
        scale (``mean``, ``sd``, ``lower``, ``upper``: the rater's offset from the true score)."""
        frame = interval_table(self.posterior["rater_severity"], ci_prob, ("rater",))
        grouped = self.data.humans.groupby("rater", sort=False)["score"]
        frame.insert(0, "mean_score", grouped.mean())
        frame.insert(0, "n_ratings", grouped.size())
        return frame

    def baseline_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """:func:`~bayes_raters.judges.baselines.baseline_table` with this model's answer as
        method ``bayes_raters`` (posterior mean and equal-tailed interval), one row per
        (system, method), and each interval's ``width``."""
        ours = self.system_table(ci_prob)[["n_responses", "n_human", "mean", "lower", "upper"]].assign(method="bayes_raters", lam=np.nan)
        ours = ours.reset_index().set_index(["system", "method"])
        frame = pd.concat([baseline_table(self.data, ci_prob), ours]).sort_index(level=0, sort_remaining=False)
        frame["width"] = frame["upper"] - frame["lower"]
        return frame

    def plan_human_ratings(self, extra=(0, 50, 100, 200, 400), raters=(1, 2), **kwargs) -> pd.DataFrame:
        """Expected interval widths after more human ratings
        (:func:`~bayes_raters.judges.plan.plan_human_ratings`, same keywords)."""
        return plan.plan_human_ratings(self, extra, raters, **kwargs)

    def next_responses(self, n: int = 20, **kwargs) -> pd.DataFrame:
        """The next responses to send to human raters (:func:`~bayes_raters.judges.plan.next_responses`)."""
        return plan.next_responses(self, n, **kwargs)

    def human_check(self, n_draws: int = checks.CHECK_DRAWS, random_seed=0) -> pd.DataFrame:
        """The posterior predictive check of the human ratings' independence
        (:func:`~bayes_raters.judges.checks.human_independence`)."""
        return checks.human_independence(self, n_draws, random_seed)

    def _checks(self, variable: str, dim: str) -> pd.DataFrame:
        r_hat = az.rhat(self.posterior[[variable]])[variable].to_series()
        ess = az.ess(self.posterior[[variable]], method="bulk")[variable].to_series()
        return pd.DataFrame({"r_hat": r_hat, "ess_bulk": ess}).rename_axis(dim)

    def _posterior_predictive(self, draws: xr.Dataset, rng: np.random.Generator) -> xr.Dataset:
        human, judge = checks.replicate(self, draws, rng)
        shape = (draws.sizes["chain"], draws.sizes["draw"])
        coords = {"chain": draws["chain"].values, "draw": draws["draw"].values}
        return xr.Dataset({"human": (("chain", "draw", "human_rating"), human.reshape(*shape, -1)),
                           "judge": (("chain", "draw", "judge_score"), judge.reshape(*shape, -1))}, coords=coords)

    def _log_likelihood(self) -> xr.Dataset:
        n = len(self.data.responses)
        _, loglik = per_response_loglik(self.data, self.spec, every_response=True)  # every response: each has a judge score
        draws = parameter_draws(self.posterior, self.spec.shared_error, system_weights(self.data))
        rows = [loglik(p, np) for p in draws]
        shape = (self.posterior.sizes["chain"], self.posterior.sizes["draw"], n)
        return xr.Dataset({"responses": (("chain", "draw", "response"), np.reshape(rows, shape))},
                          coords={"chain": self.posterior["chain"].values, "draw": self.posterior["draw"].values,
                                  "response": list(self.data.responses)})

    def _saved_config(self) -> dict:
        score_range = None if self.spec.score_range is None else [float(v) for v in self.spec.score_range]
        return {"shared_error": bool(self.spec.shared_error), "observation": self.spec.observation, "score_range": score_range,
                "report": self.report.to_dict()}

    @classmethod
    def _from_saved(cls, tree: xr.DataTree, config: dict):
        data = JudgesData(humans=dataset_to_frame(tree["human_ratings"].to_dataset()), judges=dataset_to_frame(tree["judge_scores"].to_dataset()),
                          systems=dataset_to_frame(tree["systems"].to_dataset()))
        score_range = config.get("score_range")
        spec = JudgesSpec(shared_error=bool(config["shared_error"]), observation=config.get("observation", "normal"),
                          score_range=None if score_range is None else tuple(score_range))
        return cls(idata=tree, data=data, spec=spec, report=ConvergenceReport(**config["report"]))

