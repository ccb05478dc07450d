"""Fit the true-score model (:mod:`bayes_raters.ctt.model`); PRMSE is read from its posterior,
beside the closed form, on :class:`~bayes_raters.ctt.result.TrueScoreResult`.

``fit_true_score`` fits one model per system (default, like the closed form) or
one joint model, and returns a :class:`TrueScoreResult`: the draws as an
``xarray.DataTree`` with a ``system`` dimension, the closed-form table for the same
data, and the convergence of every fit.
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr

from bayes_raters.ctt import protocol
from bayes_raters.ctt.finite_sample import add_finite_sample_spread
from bayes_raters.ctt.model import (
    TrueScoreSpec,
    build_from_data,
    model_data,
    validate_true_score_inputs,
)
from bayes_raters.ctt.prmse import prmse_table as closed_form_table
from bayes_raters.ctt.result import TrueScoreResult
from bayes_raters.errors import InvalidInputError, RoundingWarning
from bayes_raters.fit_signature import NutsSampler, sampler_block
from bayes_raters.inference import sample_model
from bayes_raters.inference_record import InferenceRecord
from bayes_raters.persistence import frame_to_dataset
from bayes_raters.sampling import derived_rng

_NOT_STORED = {"true_score_mean", "true_score_sd"}  # O(N) per draw; computed on demand


#: Mass-matrix adaptation of the ordinal model, per sampler (see fit_true_score).
ORDINAL_ADAPTATION = {"pymc": {"init": "jitter+adapt_full"}, "nutpie": {"adaptation": "low_rank"}}


def _stored_variables(model: pm.Model) -> list[str]:
    names = [v.name for v in model.free_RVs] + [v.name for v in model.deterministics]
    return [n for n in names if n not in _NOT_STORED]


def checked_variables(model: pm.Model) -> list[str]:
    """Convergence is judged on the model's parameters and PRMSE, not on per-response latents."""
    names = [v.name for v in model.free_RVs if "response" not in model.named_vars_to_dims.get(v.name, ())]
    return names + ["prmse"]


def _combine(trees: dict, group: str, ids: dict) -> xr.Dataset:
    """One group of the separate fits along ``system``; ``ids`` maps each fit's name (text) to
    its system id as given (a number stays a number, as in the posterior's coordinate)."""
    parts = []
    for name, tree in trees.items():
        part = tree[group].to_dataset()
        if "system" not in part.dims:
            part = part.expand_dims(system=[ids[name]])
        parts.append(part)
    combined = xr.concat(parts, dim="system", data_vars="all", coords="different", join="outer", compat="equals")
    return combined.transpose("chain", "draw", ...)


def _seeds(random_seed, n: int) -> list[int]:
    return [int(s) for s in np.random.default_rng(random_seed).integers(0, 2**31 - 1, size=n)]


#: Pooled within-response rating variance below which integer ratings get a RoundingWarning.
ROUNDING_VARIANCE = 0.2


def warn_if_rounding_dominates(rated: pd.DataFrame, min_double_scored: int = 30) -> float | None:
    r"""Warn (:class:`RoundingWarning`) when every rating is an integer and the raters agree so
    closely that rounding, not rater error, makes most of their disagreement: the pooled
    within-response variance of double-scored responses,
    :math:`\hat\sigma^2_e = \operatorname{mean}_i \operatorname{Var}(H_{i\cdot})`, below
    :data:`ROUNDING_VARIANCE`. Two raters then round nearly the same value the same way, their
    rounding errors act as true-score variance, and the normal model's PRMSE interval misses.
    Measured (Loukina design, 1-6, ``benchmarks/study_ordinal_coverage.py``, ``models/ctt_true_score.md``):
    'high' raters (:math:`\hat\sigma^2_e \approx 0.13`), 90% intervals covered the latent PRMSE
    in 0.75 of fits at 1,000 and 0.3 at 10,000 double-scored responses with the normal model,
    0.90 and 0.9 with the ordinal one; 'average' raters (about 0.29) 1.0 and 1.0 with the
    normal model. Returns the pooled variance (None if not checked)."""
    scores = rated["score"].to_numpy(float)
    if not np.all(scores == np.round(scores)):
        return None
    by_response = rated.groupby("response")["score"]
    variance = by_response.var(ddof=1)[by_response.size() >= 2]
    if len(variance) < min_double_scored:
        return None
    pooled = float(variance.mean())
    if pooled < ROUNDING_VARIANCE:
        low, high = int(scores.min()), int(scores.max())
        warnings.warn(
            f"the ratings are integers and the raters agree closely (within-response variance {pooled:.2f} "
            f"over {len(variance)} double-scored responses): rounding, not rater error, makes most of their "
            "disagreement, and the normal model's PRMSE interval is biased there. Fit the ordinal model: "
            f"observation='ordinal', score_range=({low}, {high}) in Python, or "
            f"--observation ordinal --score-range {low} {high} on the command line.",
            RoundingWarning,
            stacklevel=3,
        )
    return pooled


@sampler_block(reasons={
    "draws": "2,000 here: PRMSE is read to the third decimal (see above).",
    "cores": "For PyMC's NUTS, None runs the chains in sequence (parallel PyMC chains fork worker processes); nutpie "
             "runs them in parallel threads.",
    "nuts_sampler": 'None picks by model: ``"pymc"`` for the normal model, ``"nutpie"`` for the ordinal one (see above).',
    "target_accept": "None is 0.95 here (see above).",
})
def fit_true_score(
    data: pd.DataFrame,
    system_scores: pd.DataFrame,
    *,
    rater_effects: bool = False,
    rater_error: Literal["common", "rater"] = "common",
    observation: Literal["normal", "ordinal"] = "normal",
    cutpoints: Literal["fixed", "estimated"] = "fixed",
    joint: bool = False,
    score_range: tuple[float, float] | None = None,
    error_variance: float | None = None,
    response: str = "response",
    rater: str = "rater",
    system: str = "system",
    score: str = "score",
    draws: int = 2000,
    tune: int = 1000,
    chains: int = 2,
    cores: int | None = None,
    random_seed: int | np.random.Generator | None = None,
    nuts_sampler: NutsSampler | None = None,
    target_accept: float | None = None,
    progressbar: bool | None = None,
) -> TrueScoreResult:
    """Fit the Bayesian true-score model and compute PRMSE from its posterior.

    Long tables as in :func:`bayes_raters.ctt.prmse_table`. Options as in
    :func:`bayes_raters.ctt.build_true_score_model`. By default each system gets its
    own model (human ratings + that system's scores, the responses it scored), so one
    system's errors cannot inform another's PRMSE; ``joint=True`` fits all at once.
    Every fit's convergence is checked and a :class:`ConvergenceWarning` is issued
    for any fit with R-hat > 1.01, ESS < 400 or divergences. ``draws`` defaults to 2,000 per chain
    (the other families: 1,000): PRMSE is compared with the closed form to the third decimal, and
    on the demo's design (``bayes-raters demo``, seeds 2020, 1, 2; 2 chains) the Monte Carlo SE of
    the 5% and 95% quantiles of ``prmse`` was 0.0015-0.0021 at 1,000 draws and 0.0011-0.0016 at
    2,000 (min bulk ESS 752-852 against 1,273-1,706). ``target_accept`` defaults
    to 0.95: with ~100 double-scored responses from unreliable raters 0.9 left an
    occasional divergence near tau -> 0. The ordinal model runs PyMC's NUTS with a dense mass
    matrix (``init="jitter+adapt_full"``): its handful of parameters (mu, sigma_T, sigma_e,
    alpha, beta, tau) are strongly correlated, and on 1,000 double-scored responses the dense
    matrix gave min bulk ESS 2,170-2,270 of 2,000 draws at 6.2 leapfrog steps per draw, against
    620 at 8.8 steps with the diagonal one.

    ``nuts_sampler=None`` picks by model, from ``benchmarks/bench_ctt_model.py``: PyMC's NUTS for
    the normal model; nutpie for the ordinal one, with its low-rank mass-matrix adaptation
    (about half the time of PyMC's dense adaptation for similar ESS, which spends most of it in
    tuning: ``models/ctt_true_score.md``). PyMC's NUTS with ``init="jitter+adapt_full"``
    stays available (``nuts_sampler="pymc"``). ``progressbar``: shown per fit; None (default)
    shows it in a terminal or notebook and not in scripts or pipes. ``cores=None``: nutpie runs the chains in
    parallel threads; PyMC runs them in sequence (parallel PyMC chains fork worker processes;
    pass ``cores`` to choose).

    Parameters
    ----------
    data : pandas.DataFrame
        Long human ratings, one row per (response, rater).
    system_scores : pandas.DataFrame
        Long system scores, one row per (response, system).
    rater_effects, rater_error, observation, cutpoints, joint, score_range, error_variance
        The model's options, as in :func:`bayes_raters.ctt.build_true_score_model`.
    response, rater, system, score : str
        Column names in the two tables.
    {sampler_block}

    Returns
    -------
    TrueScoreResult
        Posterior PRMSE, true scores and convergence of every fit.
    """
    nuts_sampler = ("nutpie" if observation == "ordinal" else "pymc") if nuts_sampler is None else nuts_sampler
    target_accept = 0.95 if target_accept is None else target_accept
    if cores is None:
        cores = chains if nuts_sampler == "nutpie" else 1
    spec = TrueScoreSpec(rater_effects, rater_error, observation, cutpoints, joint, score_range, error_variance)
    if observation == "ordinal" and nuts_sampler in ("numpyro", "blackjax"):
        raise InvalidInputError(
            f"the ordinal model's bivariate-normal likelihood runs SciPy code, which {nuts_sampler} (JAX) "
            "cannot call: use nuts_sampler='nutpie' (default) or 'pymc'."
        )
    rated, scored = validate_true_score_inputs(
        data, system_scores, spec, response=response, rater=rater, system=system, score=score
    )
    if observation == "normal":
        warn_if_rounding_dominates(rated)
    system_ids = list(pd.unique(scored["system"]))
    if not system_ids:
        raise InvalidInputError("system_scores is empty: PRMSE needs at least one system.")
    groups = {"joint": None} if joint else {str(s): [s] for s in system_ids}
    trees, reports = {}, {}
    for (name, chosen), seed in zip(groups.items(), _seeds(random_seed, len(groups))):
        model = build_from_data(model_data(rated, scored, spec, chosen), spec)
        trees[name], reports[name] = sample_model(
            model,
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores,
            random_seed=seed,
            nuts_sampler=nuts_sampler,
            target_accept=target_accept,
            nuts_kwargs=ORDINAL_ADAPTATION.get(nuts_sampler) if spec.observation == "ordinal" else None,
            var_names=_stored_variables(model),
            check_var_names=checked_variables(model),
            progressbar=progressbar,
            what=f"true-score model ({'joint' if joint else f'system {name!r}'})",
        )
        record = InferenceRecord.of(trees[name])  # every per-system fit runs the same NUTS path
        spread = add_finite_sample_spread(trees[name]["posterior"].to_dataset(), derived_rng(seed, "finite_sample"))
        trees[name]["posterior"] = xr.DataTree(spread)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        ids = {str(s): s for s in system_ids}
        posterior = trees["joint"]["posterior"].to_dataset() if joint else _combine(trees, "posterior", ids)
        stats = trees["joint"]["sample_stats"].to_dataset() if joint else _combine(trees, "sample_stats", ids)
    closed = closed_form_table(rated, scored, error_variance=error_variance)
    closed.index = closed.index.astype(object)
    idata = xr.DataTree.from_dict(
        {
            "posterior": posterior,
            "sample_stats": stats,
            **protocol.data_groups(rated, scored),
            "closed_form": xr.Dataset.from_dataframe(closed),
            "ratings": frame_to_dataset(rated),
            "system_scores": frame_to_dataset(scored),
        }
    )
    idata.attrs["model"] = "bayes_raters true-score model with rater error"
    record.write(idata)
    return TrueScoreResult(idata=idata, spec=spec, reports=reports)

