r"""Posterior intraclass correlations from the true-score model of :mod:`bayes_raters.ctt`.

The model (:func:`bayes_raters.ctt.build_true_score_model` without system scores) holds the
ingredients of every ICC: the true-score SD :math:`\sigma_T`, the rating error SD
:math:`\sigma_e` and, with ``rater_effects=True``, the SD of the rater offsets
:math:`\sigma_r` (``sigma_rater_offset``). From each posterior draw,

.. math:: \mathrm{ICC1} = \frac{\sigma_T^2}{\sigma_T^2 + \sigma_e^2}\ \text{(rater effects off)},\quad
          \mathrm{ICC2} = \frac{\sigma_T^2}{\sigma_T^2 + \sigma_r^2 + \sigma_e^2},\quad
          \mathrm{ICC3} = \frac{\sigma_T^2}{\sigma_T^2 + \sigma_e^2}\ \text{(rater effects on)},

and the k forms divide the error terms by ``k`` (the number of raters on a complete design,
the harmonic mean of ratings per unit otherwise, as the classical estimates). Two fits: ICC1
and ICC1k from the model without rater effects (a rater's offset is part of its error, the
one-way model), the other four from the model with them. With ``observation="ordinal"`` the
variances are those of the latent normal scale behind the integer scores, a different quantity
from the observed-score ICCs of the classical and bootstrap columns.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.inference import sample_model
from bayes_raters.inference_record import InferenceRecord
from bayes_raters.sampling import ConvergenceReport


def _fit(long: pd.DataFrame, rater_effects: bool, observation: str, score_range, seed, draws, chains, progressbar,
         inference: str = "auto", rater_offsets: str = "centred"):
    from bayes_raters.ctt.fit import ORDINAL_ADAPTATION
    from bayes_raters.ctt.model import TrueScoreSpec, build_from_data, model_data, validate_true_score_inputs

    spec = TrueScoreSpec(rater_effects=rater_effects, observation=observation, score_range=score_range, rater_offsets=rater_offsets)
    rated, scored = validate_true_score_inputs(long, None, spec)
    model = build_from_data(model_data(rated, scored, spec, None), spec)
    sampler = "nutpie" if observation == "ordinal" else "pymc"
    names = ["sigma_T", "sigma_e"] + (["sigma_rater_offset"] if rater_effects else [])
    tree, report = sample_model(
        model, draws=draws, tune=1000, chains=chains, cores=chains if sampler == "nutpie" else 1, random_seed=seed,
        nuts_sampler=sampler, target_accept=0.95, inference=inference, var_names=names, check_var_names=names,
        progressbar=progressbar, nuts_kwargs=ORDINAL_ADAPTATION.get(sampler) if observation == "ordinal" else None,
        what=f"agreement true-score model (rater effects {'on' if rater_effects else 'off'})",
    )
    posterior = tree["posterior"].to_dataset()
    if rater_effects and rater_offsets == "centred" and not report.converged and InferenceRecord.of(tree).path != "laplace":
        # NUTS on the centred offsets diverges when their spread nears 0 (few raters; 1 fit in 6 with 80 x 6 raters)
        return _fit(long, rater_effects, observation, score_range, seed, draws, chains, progressbar, "nuts", "non_centred")
    return posterior, report


def icc_draws(one_way: xr.Dataset, two_way: xr.Dataset, k: float) -> xr.Dataset:
    """The six ICCs per draw (``chain, draw``) from the posteriors of the two fits."""
    t1, e1 = one_way["sigma_T"] ** 2, one_way["sigma_e"] ** 2
    t, e, r = two_way["sigma_T"] ** 2, two_way["sigma_e"] ** 2, two_way["sigma_rater_offset"] ** 2
    return xr.Dataset({
        "ICC1": t1 / (t1 + e1), "ICC2": t / (t + r + e), "ICC3": t / (t + e),
        "ICC1k": t1 / (t1 + e1 / k), "ICC2k": t / (t + (r + e) / k), "ICC3k": t / (t + e / k),
    })


def posterior_icc(
    long: pd.DataFrame,
    k: float,
    *,
    observation: str = "normal",
    score_range=None,
    ci_prob: float = 0.9,
    draws: int = 1000,
    chains: int = 2,
    random_seed=None,
    progressbar: bool | None = None,
    inference: str = "auto",
) -> tuple[pd.DataFrame, xr.Dataset, dict[str, ConvergenceReport]]:
    """Posterior mean and central ``ci_prob`` interval of each ICC, the draws, and both fits' reports.

    ``long`` holds validated ratings (``response, rater, score``) of units rated twice or more.
    ``inference`` as in :func:`bayes_raters.inference.sample_model` (``"auto"``: the importance-
    sampled Laplace draws where their Pareto-k, R-hat and ESS checks pass, NUTS otherwise: about
    half NUTS's time, ``models/agreement.md``). When NUTS on
    the model with centred rater offsets does not converge (divergences where the offsets' spread
    nears 0), the two-way fit is redone with non-centred offsets (``TrueScoreSpec.rater_offsets``);
    on 80 units x 6 raters, seeds 0-5, that parameterisation gave no divergences in any fit (min
    bulk ESS 417-651 of 2,000 draws) where the centred NUTS fit of seed 2 had 3.
    """
    seeds = np.random.default_rng(random_seed).integers(2**31, size=2)
    fits = {
        rater_effects: _fit(long, rater_effects, observation, score_range, int(seed), draws, chains, progressbar, inference)
        for rater_effects, seed in zip((False, True), seeds, strict=True)
    }
    draws_ = icc_draws(fits[False][0], fits[True][0], k)
    tail = (1 - ci_prob) / 2
    rows = {
        name: {"posterior_mean": float(value.mean()), "posterior_lower": float(value.quantile(tail)),
               "posterior_upper": float(value.quantile(1 - tail))}
        for name, value in draws_.data_vars.items()
    }
    reports = {"one-way (rater effects off)": fits[False][1], "two-way (rater effects on)": fits[True][1]}
    return pd.DataFrame.from_dict(rows, orient="index"), draws_, reports
