"""Fitting the judges model (:mod:`bayes_raters.judges.model`): NUTS over the calibration,
system and rater parameters, every response's true score integrated out; the tables live on
:class:`~bayes_raters.judges.result.JudgesResult`."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.fit_signature import NutsSampler, sampler_block
from bayes_raters.inference import sample_model
from bayes_raters.judges import checks
from bayes_raters.judges.data import judges_data
from bayes_raters.judges.draws import on_the_rating_scales, with_integrated_draws
from bayes_raters.judges.model import JudgesSpec, build_judges_model, default_shared_error, poolable
from bayes_raters.judges.ordinal import check_ordinal_ratings
from bayes_raters.judges.result import JudgesResult, tables_tree
from bayes_raters.sampling import derived_rng, numba_mode_excluding

#: Mass-matrix adaptation per sampler: the slopes, the systems' spread and the true scores' SDs
#: trade off along one direction where human ratings are few, which a diagonal mass matrix
#: crosses slowly (``models/judges.md``).
ADAPTATION = {"nutpie": {"adaptation": "low_rank"}, "pymc": {"init": "jitter+adapt_full"}}


#: PyTensor rewrites that search the pooled likelihood's graph for diagonal, selection and
#: symmetric matrices and find none there: left out, the compiled graph is the same (the same
#: Numba cache key) and the compile shorter (``models/judges.md``).
FRUITLESS_REWRITES = ("dot_diag_to_elemwise", "selection_dot_to_indexing", "useless_symmetric_transpose")


def excluded_rewrites(data, spec: JudgesSpec) -> tuple[str, ...]:
    """PyTensor rewrites the judges fit leaves out: ``scalarize``, which fails on the likelihood
    with a single judge (:func:`~bayes_raters.sampling.numba_mode_excluding`), and where every
    response enters by groups (:func:`~bayes_raters.judges.model.poolable`) ``inplace`` too,
    which there costs more compile time than it saves in sampling (``models/judges.md``; on the
    ordinal likelihood, leaving it out made one fit's memory grow past 24 GB), and
    :data:`FRUITLESS_REWRITES`."""
    return ("scalarize", "inplace", *FRUITLESS_REWRITES) if poolable(data, spec) else ("scalarize",)


#: What the tables read; the standardised parameters stay in the posterior for the likelihood.
SAMPLED = ("mu", "sigma_true", "sigma_true_typical", "sigma_human", "alpha", "beta", "sigma_judge", "rater_effect", "sigma_rater", "bias",
           "sigma_bias", "loading", "judge_error", "shared_share")


@sampler_block(reasons={
    "nuts_sampler": 'None is ``"nutpie"`` with its low-rank mass-matrix adaptation: the model is a few dozen parameters '
                    "with the true scores integrated out, and the low-rank adaptation crosses the slope-spread trade-off "
                    "(``models/judges.md``).",
    "target_accept": "None is 0.9 (the hierarchical scales of the biases and rater effects).",
    "tune": "700 here: nutpie's low-rank mass-matrix adaptation settles within a few hundred tuning steps on this "
            "model of a few dozen parameters; with 500 the first two chains' R-hat came out just above 1.01 on 2 of 16 "
            "benchmark fits (extra chains followed), 1000 costs HANNA about a second more (``models/judges.md``).",
})
def fit_judges(
    data: pd.DataFrame,
    judge_scores: pd.DataFrame,
    systems,
    *,
    shared_error: bool | None = None,
    observation: Literal["normal", "ordinal"] = "normal",
    inference: Literal["nuts"] = "nuts",
    score_range: tuple[float, float] | None = None,
    judge_range: tuple[float, float] | None = None,
    response: str = "response",
    rater: str = "rater",
    judge: str = "judge",
    score: str = "score",
    system: str = "system",
    draws: int = 1000,
    tune: int = 700,
    chains: int = 2,
    cores: int | None = None,
    random_seed: int | np.random.Generator | None = None,
    nuts_sampler: NutsSampler | None = None,
    target_accept: float | None = None,
    progressbar: bool | None = None,
) -> JudgesResult:
    r"""Each evaluated system's mean true score from LLM judges or automatic metrics on every
    response and noisy human ratings on a few, with the judges calibrated against the true
    score (not against the human ratings); see :mod:`bayes_raters.judges.model`.

    Where the first chains mix slowly without a divergence (ESS or R-hat just outside the rule, as
    on small designs), as many chains again are sampled and pooled (``result.inference`` says so).
    After the fit, the human ratings' independence is checked by posterior predictive replicates
    (:meth:`JudgesResult.human_check`); where the ratings of a response agree less than the
    model allows, a :class:`~bayes_raters.errors.BoundWarning` names the systems; a judge whose own
    noise comes out near zero (a Heywood case) is named too
    (:func:`~bayes_raters.judges.checks.near_zero_own_error`), and so is a judge whose shared
    share of its error piles against its upper end
    (:func:`~bayes_raters.judges.checks.shared_share_at_cap`).

    Parameters
    ----------
    data : pandas.DataFrame
        Human ratings, long: one row per (response, rater) with a numeric score; any subset of
        the responses, one or more raters each.
    judge_scores : pandas.DataFrame
        Judge scores, long: one row per (response, judge); a metric is a judge; every response
        needs one score at least.
    systems : pandas.DataFrame, pandas.Series or dict
        Every response's evaluated system: a table (response, system), a Series indexed by
        response, or a dict.
    shared_error : bool, optional
        Whether the judges' errors share a factor (judges that err together); None, on with three
        judges or more (:func:`~bayes_raters.judges.model.default_shared_error`).
    observation : {"normal", "ordinal"}
        The human ratings: a true score plus rater effect plus normal error, or (``"ordinal"``,
        integer ratings on the declared ``score_range``) the category of such a latent rating
        between cutpoints at :math:`k \pm 1/2` (:mod:`bayes_raters.judges.ordinal`): for short
        scales and ratings piled at an end, where the normal error misreads the spread.
    inference : {"nuts"}
        NUTS over the parameters (the true scores are integrated out exactly).
    score_range, judge_range : tuple of float, optional
        Declared closed scales of the human ratings and the judge scores; a score outside is
        an error naming its rows.
    response, rater, judge, score, system : str
        Column names in the tables.
    {sampler_block}

    Returns
    -------
    JudgesResult
        Systems, differences, judges, biases, raters, baselines and the human check.

    Examples
    --------
    >>> from bayes_raters.judges import fit_judges, simulate_judges
    >>> sim = simulate_judges(n_systems=3, n_responses=60, random_seed=2)
    >>> result = fit_judges(sim["human_ratings"], sim["judge_scores"], sim["systems"], random_seed=2, progressbar=False)
    >>> result.system_table().shape[0], result.convergence.converged
    (3, True)
    """
    table = judges_data(data, judge_scores, systems, response=response, rater=rater, judge=judge, score=score, system=system,
                        score_range=score_range, judge_range=judge_range)
    if observation == "ordinal":
        check_ordinal_ratings(table, score_range)
    spec = JudgesSpec(shared_error=default_shared_error(len(table.judge_names)) if shared_error is None else bool(shared_error),
                      observation=observation, score_range=tuple(score_range) if observation == "ordinal" else None)
    model = build_judges_model(table, spec)
    with numba_mode_excluding(*excluded_rewrites(table, spec)):
        idata, report = sample_model(
            model, draws=draws, tune=tune, chains=chains, cores=cores, random_seed=random_seed,
            nuts_sampler="nutpie" if nuts_sampler is None else nuts_sampler, target_accept=0.9 if target_accept is None else target_accept,
            progressbar=progressbar, what="judges model", nuts_kwargs=ADAPTATION.get(nuts_sampler or "nutpie"),
            var_names=[v for v in SAMPLED if v in model.named_vars], inference=inference, extra_chains=chains,
        )
    posterior = with_integrated_draws(idata["posterior"].to_dataset(), table, spec, random_seed)
    tree = xr.DataTree.from_dict({
        "posterior": on_the_rating_scales(posterior, table, spec), "sample_stats": idata["sample_stats"].to_dataset(),
        "observed_data": xr.Dataset({"human": ("human_rating", table.humans["score"].to_numpy()),
                                     "judge": ("judge_score", table.judges["score"].to_numpy())}),
        **tables_tree(table),
    })
    tree["posterior"].attrs.update(idata["posterior"].attrs)
    result = JudgesResult(idata=tree, data=table, spec=spec, report=report)
    checks.warn_dependent_humans(checks.human_independence(result, random_seed=derived_rng(random_seed, "judges_check")))
    checks.warn_near_zero_own_error(checks.near_zero_own_error(result.posterior), spec.shared_error)
    checks.warn_shared_share_at_cap(checks.shared_share_at_cap(result.posterior))
    return result
