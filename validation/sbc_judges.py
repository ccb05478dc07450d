"""SBC configuration of the judges model (:mod:`bayes_raters.sbc`).

The user path standardises the human ratings and each judge's scores by their own mean and SD,
which makes the priors depend on the data (no SBC guarantee there); this configuration keeps the
model and the fit's sampler settings but fixes every centre at 0 and scale at 1
(:class:`UnitScaleData`). Design: 3 systems x 40 responses, 2 judges scoring every response, a
quarter of each system's responses rated by 2 of 4 raters.

Parameters are drawn from exactly the priors of
:func:`~bayes_raters.judges.model.build_judges_model`: :math:`\\sigma_0 \\sim N^+(1)`,
:math:`\\log\\sigma_s \\sim N(\\log\\sigma_0, 0.3)`, :math:`\\mu_s \\sim N(0, 1.5)`,
:math:`\\sigma_H \\sim N^+(1)`, :math:`\\alpha_j \\sim N(0, 1)`, :math:`\\log\\beta_j \\sim N(0, 1)`,
:math:`\\sigma_j \\sim N^+(1)`, :math:`\\tau_\\rho \\sim N^+(0.5)` with zero-sum rater effects,
:math:`\\tau_j \\sim N^+(0.3)` with zero-sum biases over systems (iid normal minus the mean, as
PyMC's ``ZeroSumNormal``); the data from the model with every true score drawn.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from bayes_raters.inference import sample_model
from bayes_raters.judges.data import JudgesData
from bayes_raters.judges.draws import with_integrated_draws
from bayes_raters.judges.fit import ADAPTATION, SAMPLED
from bayes_raters.judges.model import JudgesSpec, build_judges_model
from bayes_raters.sbc import Configuration

#: systems, responses per system, judges, raters, ratings per rated response, rated share
SIZE = (3, 40, 2, 4, 2, 0.25)
FIT = {"draws": 1000, "tune": 1000, "chains": 2, "cores": 1, "target_accept": 0.9}


@dataclass(frozen=True)
class UnitScaleData(JudgesData):
    """The judges data with every centre 0 and scale 1 (the model's scale is the data's)."""

    @property
    def center(self) -> float:
        return 0.0

    @property
    def scale(self) -> float:
        return 1.0

    @property
    def judge_center(self) -> np.ndarray:
        return np.zeros(len(self.judge_names))

    @property
    def judge_scale(self) -> np.ndarray:
        return np.ones(len(self.judge_names))


def _zero_sum(rng: np.random.Generator, shape) -> np.ndarray:
    values = rng.standard_normal(shape)
    return values - values.mean(axis=-1, keepdims=True)


def simulate_judges_sbc(rng: np.random.Generator):
    """``(truth, data)``: parameters from the priors (module docstring), data from the model."""
    n_systems, per_system, n_judges, n_raters, per_response, share = SIZE
    typical = abs(rng.normal(0, 1.0))
    sigma = np.exp(rng.normal(np.log(typical), 0.3, n_systems))
    mu, sigma_h = rng.normal(0, 1.5, n_systems), abs(rng.normal(0, 1.0))
    alpha, beta, sigma_j = rng.normal(0, 1.0, n_judges), np.exp(rng.normal(0, 1.0, n_judges)), np.abs(rng.normal(0, 1.0, n_judges))
    rater_effect = abs(rng.normal(0, 0.5)) * _zero_sum(rng, n_raters)
    tau = np.abs(rng.normal(0, 0.3, n_judges))
    bias = tau[:, None] * _zero_sum(rng, (n_judges, n_systems))
    system = np.repeat(np.arange(n_systems), per_system)
    true = mu[system] + sigma[system] * rng.standard_normal(len(system))
    grand = mu @ (np.bincount(system) / len(system))
    names = [f"r{i}" for i in range(len(system))]
    scores = [(names[r], f"j{j}", alpha[j] + beta[j] * (true[r] - grand) + bias[j, system[r]] + sigma_j[j] * rng.standard_normal())
              for j in range(n_judges) for r in range(len(system))]
    humans = []
    for s in range(n_systems):
        for r in rng.choice(np.flatnonzero(system == s), size=round(share * per_system), replace=False):
            humans += [(names[r], f"h{h}", true[r] + rater_effect[h] + sigma_h * rng.standard_normal())
                       for h in rng.choice(n_raters, size=per_response, replace=False)]
    data = UnitScaleData(humans=pd.DataFrame(humans, columns=["response", "rater", "score"]),
                         judges=pd.DataFrame(scores, columns=["response", "judge", "score"]),
                         systems=pd.DataFrame({"response": names, "system": [f"s{s}" for s in system]}))
    truth = {"mu[0]": mu[0], "mu[1] - mu[0]": mu[1] - mu[0], "sigma_true[0]": sigma[0], "sigma_human": sigma_h, "alpha[0]": alpha[0],
             "beta[0]": beta[0], "sigma_judge[0]": sigma_j[0], "bias[0,0]": bias[0, 0], "sigma_bias[0]": tau[0]}
    return truth, data


def fit_judges_sbc(data: UnitScaleData, seed: int):
    """The fit path of :func:`~bayes_raters.judges.fit_judges` on the unit-scale data."""
    spec = JudgesSpec(shared_error=False)
    model = build_judges_model(data, spec)
    idata, report = sample_model(model, random_seed=seed, nuts_sampler="nutpie", nuts_kwargs=ADAPTATION["nutpie"], progressbar=False,
                                 what="judges model", var_names=[v for v in SAMPLED if v in model.named_vars], extra_chains=FIT["chains"],
                                 **FIT)
    post = with_integrated_draws(idata["posterior"].to_dataset(), data, spec, seed)  # as fit_judges does
    draws = {"mu[0]": post["mu"].values[..., 0], "mu[1] - mu[0]": post["mu"].values[..., 1] - post["mu"].values[..., 0],
             "sigma_true[0]": post["sigma_true"].values[..., 0], "sigma_human": post["sigma_human"].values,
             "alpha[0]": post["alpha"].values[..., 0], "beta[0]": post["beta"].values[..., 0], "sigma_judge[0]": post["sigma_judge"].values[..., 0],
             "bias[0,0]": post["bias"].values[..., 0, 0], "sigma_bias[0]": post["sigma_bias"].values[..., 0]}
    return draws, report


JUDGES_CONFIGURATIONS = {"judges": Configuration("judges", simulate_judges_sbc, fit_judges_sbc)}
