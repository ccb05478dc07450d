"""Comparisons alone: the same beta-latent model, sampled in the coordinates the data identify.

With only pairwise outcomes, the likelihood reads the values s_i in (0, 1) through the
abilities u_i = lambda s_i alone (Rao-Kupper log-strengths, up to annotator consistency), and
only through their differences. A common shift of every s and the scale lambda are left to
the priors, and in (logit s, log lambda) that ridge is curved: on Stigler's citation counts
(4 journals, 3,727 comparisons) PyMC's NUTS needed 41 leapfrog steps per draw at step size
0.04 and ended at R-hat 1.027 with 2 divergences in 2 x 1,000 draws (a dense mass matrix and
nutpie's low-rank adaptation did no better). Here the sampler works instead on

* ``ability_difference`` delta, zero-sum over items (the differences the data fix; flat,
  its prior comes from the terms below),
* ``log_gap_low`` kappa: the lowest ability's distance above 0, u_min = exp(kappa),
* ``log_gap_high`` rho: lambda's distance above the highest ability, lambda = u_max + exp(rho),

so u_i = delta_i - min(delta) + exp(kappa), lambda = max(u) + exp(rho), s_i = u_i / lambda:
every s lies in (0, 1) by construction. The map is one to one, and the density in the new
coordinates is the model's own,

    log p = log p_lambda(lambda) + sum_i log Beta(s_i | a0, b0) - n log lambda + kappa + rho
            + log-likelihood,

(-n log lambda from s = u / lambda, kappa and rho from the two exponentials; the zero-sum
map and the shift by min(delta) have unit Jacobian: tested against the (s, lambda) density).
On the citation counts: 6 leapfrog steps per draw, R-hat 1.003, no divergence.
``min`` and ``max`` have a kink where two items tie for the extreme; the density is continuous
there. The variables are flat, so ``pm.sample_prior_predictive`` cannot draw them: build the
model with ``parametrisation="values"`` for prior predictive draws (the SBC simulator does).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.transforms import ZeroSumTransform

PARAMETRISATIONS = ("auto", "values", "differences")

#: lambda ~ LogNormal(LAMBDA_PRIOR) in both parametrisations.
LAMBDA_PRIOR = (float(np.log(5.0)), 1.0)


def uses_differences(parametrisation: str, bounded_comparisons_only: bool) -> bool:
    """Whether to sample ability differences: ``"auto"`` does for comparisons alone (no slider
    values, no strengths, no systems) whose win graph bounds every item
    (:func:`~bayes_raters.pairwise.separation.likelihood_bounds_every_item`), with or without
    annotator consistencies (:func:`panel_consistency` keeps the panel's scale out of the
    differences). Where some item never wins or never loses, its ability is bounded by the prior
    alone on one side, the ``min``/``max`` of the differences switch among such items, and the
    values coordinates mix better (:mod:`bayes_raters.pairwise.separation`)."""
    if parametrisation == "auto":
        return bounded_comparisons_only
    return parametrisation == "differences"


def abilities_from_differences(prior: tuple[float, float], n_items: int, log_panel_scale=None):
    r"""s (dims item), lambda and the abilities u from the coordinates of the module docstring,
    with the model's priors on s and lambda and the Jacobian as a ``Potential``.

    ``log_panel_scale`` (annotator consistencies, :func:`panel_consistency`): the log of the
    panel's mean consistency :math:`\gamma = \sigma_c \bar z`. The likelihood then reads the
    abilities through :math:`\bar c\,\lambda s` with :math:`\bar c = e^{\gamma}`, so the
    coordinates parametrise :math:`\Lambda = \bar c \lambda` in place of lambda and the
    returned ``u`` is :math:`\Lambda s`; lambda is :math:`\Lambda e^{-\gamma}`, whose
    Jacobian :math:`e^{-\gamma}` joins the potential."""
    difference = pm.Flat("ability_difference", dims="item", default_transform=ZeroSumTransform([-1]))
    log_gap_low = pm.Flat("log_gap_low")
    log_gap_high = pm.Flat("log_gap_high")
    u = difference - pt.min(difference) + pt.exp(log_gap_low)
    scale = pt.max(u) + pt.exp(log_gap_high)
    s = pm.Deterministic("s", u / scale, dims="item")
    log_jacobian = log_gap_low + log_gap_high - n_items * pt.log(scale)
    if log_panel_scale is None:
        lam = pm.Deterministic("lambda", scale)
    else:
        lam = pm.Deterministic("lambda", scale * pt.exp(-log_panel_scale))
        log_jacobian = log_jacobian - log_panel_scale
    log_prior = pm.logp(pm.LogNormal.dist(*LAMBDA_PRIOR), lam) + pm.logp(pm.Beta.dist(prior[0], prior[1]), s).sum()
    pm.Potential("prior_of_s_and_lambda", log_prior + log_jacobian)
    return s, lam, u


def panel_consistency(n_annotators: int):
    r"""Annotator consistencies :math:`c_k = e^{\sigma_c z_k}`, :math:`z_k \sim N(0, 1)` iid,
    written as the panel's mean :math:`\gamma = \sigma_c \bar z` (``log_panel_consistency``,
    :math:`\bar z \sim N(0, 1/K)`) and zero-sum deviations :math:`w = z - \bar z \sim
    \mathrm{ZeroSumNormal}(1)` (``consistency_deviation_z``): the same distribution.

    The likelihood reads :math:`c_k\,\lambda (s_i - s_j) = r_k\, e^{G} \lambda (s_i - s_j)` with
    :math:`r_k = e^{\sigma_c w_k} / m`, :math:`m = \frac1K \sum_k e^{\sigma_c w_k}` (ratios of mean 1)
    and :math:`G = \gamma + \log m`. :func:`abilities_from_differences` folds :math:`e^{G}` into the
    abilities' scale, so the data's scale of the differences no longer moves with the panel's mean
    (:math:`\bar z`) nor with the spread :math:`\sigma_c` (through :math:`m \approx e^{\sigma_c^2/2}`).
    Adds the full :math:`c_k` as the ``Deterministic`` ``consistency``; returns ``(ratio, G)``,
    :math:`r_k` and :math:`G`."""
    gamma, spread = panel_split(n_annotators, "sigma_consistency", "panel_consistency_z", "log_panel_consistency", "consistency_deviation_z")
    log_mean = pt.logsumexp(spread) - np.log(n_annotators)
    pm.Deterministic("consistency", pt.exp(gamma + spread), dims="annotator")
    return pt.exp(spread - log_mean), gamma + log_mean


def panel_split(n_annotators: int, scale: str, panel_z: str, panel: str, deviation_z: str):
    r"""Per-annotator effects :math:`\sigma z_k`, :math:`z_k \sim N(0, 1)` iid, :math:`\sigma \sim
    \mathrm{HalfNormal}(0.3)` (named ``scale``), written as the panel's mean :math:`\sigma \bar z`
    (``panel``, from ``panel_z`` :math:`= \sqrt K \bar z \sim N(0, 1)`) and zero-sum deviations
    :math:`\sigma (z - \bar z) \sim \sigma\,\mathrm{ZeroSumNormal}(1)` (``deviation_z``): the same
    distribution. Returns ``(panel mean, deviations)``; one annotator has no deviation."""
    sigma = pm.HalfNormal(scale, 0.3)
    mean = pm.Deterministic(panel, sigma * pm.Normal(panel_z, 0.0, 1.0) / np.sqrt(n_annotators))
    if n_annotators > 1:
        return mean, sigma * pm.ZeroSumNormal(deviation_z, 1.0, dims="annotator")
    return mean, pt.zeros(1)
