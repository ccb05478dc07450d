"""SBC configuration of the mixed leaderboard (:mod:`bayes_raters.sbc`): 0/1 (2PL), 3PL, graded and bounded items on one
ability per system, every parameter drawn from ``fit_leaderboard``'s own priors (:mod:`bayes_raters.leaderboard.sampler`
and :mod:`bayes_raters.leaderboard.responses`): theta ~ N(0, 1), b ~ N(b_mean, b_sigma) with b_mean ~ N(0, 1) and
b_sigma ~ HalfNormal(1.5), log a ~ N(log_a_mean, log_a_sigma) with log_a_mean ~ N(0, 0.5) and log_a_sigma ~
HalfNormal(0.5), logit c ~ N(logit 1/4, 0.5), the graded scale's log spacings ~ N(0, 1), the bounded scale's
u ~ N(1.5, 1) and log phi ~ N(2, 1.5).

Design: 40 systems x (6 0/1 + 6 3PL + 6 graded with four grades + 6 bounded) items, every answer present (drawn
again in the rare case that a grade does not occur). The fit is NUTS (nutpie) on
:func:`~bayes_raters.leaderboard.build_mixed_model`, the same model in PyMC, 2 x 1,000 draws: this calibrates the model,
its priors and its likelihoods per type; the blocked sampler of ``fit_leaderboard`` is held to NUTS on the same model in
``tests/leaderboard/test_mixed.py`` and ``test_mixed_bounded.py``. At this size the blocked sampler itself does not
mix (2 x 1,000 draws after 300 warm-up sweeps: max R-hat 1.01-1.89 over four simulations, 90-117 s a fit, most of it
the Python steps of sixteen typed item updates a sweep), which is the small-leaderboard limit its card states.
Tracked: the four hyperparameters, one ability, one difficulty per type, one graded slope, one guessing chance, the
graded scale's outer cutpoints and the bounded scale's upper cutpoint and precision.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pymc as pm
from scipy import special

from bayes_raters.leaderboard import build_mixed_model
from bayes_raters.leaderboard.responses import BOUNDED_PRIOR, GUESS_SD, SPACING_SD, cutpoints
from bayes_raters.leaderboard.sampler import B_MEAN_SD, B_SIGMA_SCALE, LOG_A_MEAN_SD, LOG_A_SIGMA_SCALE
from bayes_raters.sampling import convergence_report
from bayes_raters.sbc import Configuration

#: systems, items per type, grades
SIZE = (40, 6, 4)
TYPES = ("2pl", "3pl", "graded", "bounded")
#: NUTS on the PyMC model: draws and warm-up per chain, target acceptance.
NUTS_SETTINGS = {"draws": 1000, "tune": 1000, "target_accept": 0.9}


def draw_parameters(rng: np.random.Generator) -> dict:
    """One draw of every parameter from the fit's priors."""
    n_systems, per_type, grades = SIZE
    n_items = per_type * len(TYPES)
    out = {"b_mean": rng.normal(0, B_MEAN_SD), "b_sigma": abs(rng.normal(0, B_SIGMA_SCALE)),
           "log_a_mean": rng.normal(0, LOG_A_MEAN_SD), "log_a_sigma": abs(rng.normal(0, LOG_A_SIGMA_SCALE)),
           "theta": rng.normal(0, 1, n_systems)}
    out["b"] = rng.normal(out["b_mean"], out["b_sigma"], n_items)
    out["a"] = np.exp(rng.normal(out["log_a_mean"], out["log_a_sigma"], n_items))
    out["c"] = special.expit(rng.normal(special.logit(0.25), GUESS_SD, per_type))
    out["cutpoints"] = cutpoints(rng.normal(0, SPACING_SD, (1, grades - 2)))[0][0]
    (u_mean, phi_mean), (u_sd, phi_sd) = BOUNDED_PRIOR
    out["bounded_cutpoints"] = cutpoints(np.array([[rng.normal(u_mean, u_sd)]]))[0][0]
    out["precision"] = float(np.exp(rng.normal(phi_mean, phi_sd)))
    return out


def tracked(values: dict) -> dict:
    """The ranked quantities from parameter values (truths, or draws with leading axes)."""
    per_type = SIZE[1]
    firsts = {kind: i * per_type for i, kind in enumerate(TYPES)}
    out = {name: values[name] for name in ("b_mean", "b_sigma", "log_a_mean", "log_a_sigma", "precision")}
    out |= {"theta[0]": values["theta"][..., 0], "a[graded 0]": values["a"][..., firsts["graded"]], "c[0]": values["c"][..., 0],
            "cutpoints[first]": values["cutpoints"][..., 0], "cutpoints[last]": values["cutpoints"][..., -1],
            "bounded_cutpoints[one]": values["bounded_cutpoints"][..., 1]}
    return out | {f"b[{kind} 0]": values["b"][..., first] for kind, first in firsts.items()}


def simulate_leaderboard_sbc(rng: np.random.Generator):
    """``(truth, (answers, item_types))``: parameters from the priors, every system answering every item; drawn
    again until every grade occurs (a grade nobody gave is no category of the fit)."""
    while True:
        truth, (answers, item_types) = _simulate_once(rng)
        graded = [item for item, kind in item_types.items() if kind == "graded"]
        if answers.loc[answers["item"].isin(graded), "correct"].nunique() == SIZE[2]:
            return truth, (answers, item_types)


def _simulate_once(rng: np.random.Generator):
    n_systems, per_type, grades = SIZE
    p = draw_parameters(rng)
    kind = np.repeat(TYPES, per_type)
    eta = p["a"] * (p["theta"][:, None] - p["b"])
    score = (rng.random(eta.shape) < special.expit(eta)).astype(float)
    guess = kind == "3pl"
    score[:, guess] = rng.random((n_systems, per_type)) < p["c"] + (1 - p["c"]) * special.expit(eta[:, guess])
    graded = kind == "graded"
    score[:, graded] = 1 + (rng.random((n_systems, per_type, 1)) < special.expit(eta[:, graded, None] - p["cutpoints"])).sum(-1)
    bounded = kind == "bounded"
    category = (rng.random((n_systems, per_type, 1)) < special.expit(eta[:, bounded, None] - p["bounded_cutpoints"])).sum(-1)
    mu = special.expit(eta[:, bounded])
    between = rng.beta(np.maximum(mu * p["precision"], 1e-12), np.maximum((1 - mu) * p["precision"], 1e-12))
    between = np.clip(between, 1e-12, 1 - 1e-12)  # a beta draw can round to 0 or 1 in double precision
    score[:, bounded] = np.select([category == 0, category == 2], [0.0, 1.0], between)
    items = [f"i{j:02d}" for j in range(len(kind))]
    answers = pd.DataFrame({"respondent": np.repeat([f"s{s:02d}" for s in range(n_systems)], len(items)),
                            "item": np.tile(items, n_systems), "correct": score.ravel()})
    return {k: float(v) for k, v in tracked(p).items()}, (answers, dict(zip(items, kind)))


def fit_mixed_model_sbc(data, seed: int):
    """NUTS (nutpie, its low-rank mass matrix) on :func:`~bayes_raters.leaderboard.build_mixed_model`, the same model
    in PyMC. With nutpie's diagonal mass matrix the shared location of the abilities and difficulties (a ridge the
    priors alone pin) mixed poorly on some prior draws: bulk ESS 8 of 2,000 draws, R-hat 1.18."""
    answers, item_types = data
    with build_mixed_model(answers, item_types):
        idata = pm.sample(NUTS_SETTINGS["draws"], tune=NUTS_SETTINGS["tune"], chains=2, cores=1, random_seed=seed, progressbar=False,
                          nuts_sampler="nutpie", target_accept=NUTS_SETTINGS["target_accept"], compute_convergence_checks=False,
                          nuts_sampler_kwargs={"low_rank_modified_mass_matrix": True})
    post = idata["posterior"]
    values = {name: post[name].transpose("chain", "draw", ...).values.astype(float)
              for name in ("b_mean", "b_sigma", "log_a_mean", "log_a_sigma", "precision", "c", "cutpoints", "bounded_cutpoints", "theta", "b")}
    values["a"] = np.exp(post["log_a"].transpose("chain", "draw", ...).values)
    names = ["theta", "b_z", "log_a_z", "b_mean", "b_sigma", "log_a_mean", "log_a_sigma", "extra_3pl", "extra_graded", "extra_bounded"]
    return tracked(values), convergence_report(idata, names)


LEADERBOARD_CONFIGURATIONS = {"leaderboard_mixed_model": Configuration("leaderboard_mixed_model", simulate_leaderboard_sbc, fit_mixed_model_sbc)}
