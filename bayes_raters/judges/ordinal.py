r"""Ordinal human ratings in the judges model (``observation="ordinal"``): an integer rating on
a declared scale is the category of a latent rating, the true scores still integrated out.

Rater :math:`h` rating response :math:`r` gives category :math:`k` when its latent rating
:math:`U_{rh} = T_r + \rho_h + \varepsilon_{rh}`, :math:`\varepsilon \sim N(0, \sigma_H^2)`, lies
between the cutpoints :math:`k - 1/2` and :math:`k + 1/2` of the rating scale (the lowest and
highest categories open-ended): the ordered probit of the true-score model's ordinal option
(:mod:`bayes_raters.ctt.ordinal`), standardised as the ratings are (:math:`T` keeps the rating
scale's unit, so ``system_mean`` is the mean latent rating of each system).

Integrating :math:`(t_r, f_r)` out. The judge scores of response :math:`r` alone are normal (the
model's Woodbury form, :func:`~bayes_raters.judges.marginal.true_score_given_rows`), and given them
:math:`t_r \sim N(m_r, v_r)`, so :math:`T_r \sim N(\mu_s + \sigma_s m_r, \sigma_s^2 v_r)` and

.. math:: \log p(x_r) = \log p(z_r) + \log \int \prod_h P(H_{rh} \mid T)\,
   N(T; \mu_s + \sigma_s m_r, \sigma_s^2 v_r)\,dT,

the integral by 15 Gauss-Hermite nodes centred and scaled per response on its ratings' combined
one-rating conditionals (:func:`bayes_raters.ctt.ordinal.quadrature_terms`; one rule whatever the
number of ratings), each node's category probability by
:func:`~bayes_raters.bivariate.log_diff_ndtr_erfc`: within 2e-6 in log of a direct double
integral over :math:`(t_r, f_r)` (``tests/judges/test_ordinal.py``; ``models/judges.md`` has the
node counts measured). Responses with no human rating keep the normal model's
grouped likelihood: the ratings' scale does not enter it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytensor.tensor as pt
import scipy.stats

from bayes_raters.ctt.ordinal import OrdinalParameters, padded_cutpoints, quadrature_terms
from bayes_raters.data import quote_rows
from bayes_raters.errors import InvalidInputError
from bayes_raters.judges.data import HUMAN, JudgesData
from bayes_raters.judges.marginal import segment_totals, slots_within
from bayes_raters.quadrature import gauss_hermite_rule

OBSERVATIONS = ("normal", "ordinal")

#: Adaptive Gauss-Hermite nodes of the rated responses' integral (module docstring).
N_NODES = 15


@dataclass(frozen=True)
class RatingSlots:
    """The human ratings of the rated responses, one row per response: ``response`` (position
    in :attr:`JudgesData.responses`), ``system``, and (responses, slots) ``rater``, ``category``
    (0 for the scale's lowest score) and ``used`` (1 where a slot holds a rating)."""

    response: np.ndarray
    system: np.ndarray
    rater: np.ndarray
    category: np.ndarray
    used: np.ndarray


def check_ordinal_ratings(data: JudgesData, score_range) -> None:
    """Ordinal ratings need a declared scale and integer ratings on it (the range itself is
    checked with the data); an error naming the rows otherwise."""
    if score_range is None:
        raise InvalidInputError("observation='ordinal' needs the declared scale of the human ratings: score_range=(low, high) "
                                "in Python, --score-range LOW HIGH on the command line.")
    low, high = score_range
    if low != int(low) or high != int(high) or high - low < 1:
        raise InvalidInputError(f"observation='ordinal' needs an integer scale of two points or more; got score_range={score_range}.")
    scores = data.humans["score"].to_numpy(float)
    fractional = scores != np.round(scores)
    if fractional.any():
        raise InvalidInputError(f"{HUMAN}: observation='ordinal' needs integer ratings; {fractional.sum()} rating(s) have decimals, "
                                f"e.g. {quote_rows(data.humans, fractional)}. Round them or fit observation='normal'.")


def rating_slots(data: JudgesData, low: int) -> RatingSlots:
    """Each rated response's ratings packed into slots (:class:`RatingSlots`)."""
    frame = pd.DataFrame({"response": data.human_response, "rater": data.human_rater,
                          "category": np.round(data.humans["score"].to_numpy(float)).astype(int) - int(low)})
    frame["slot"] = slots_within(data.human_response)
    rated = np.unique(frame["response"])
    row = np.searchsorted(rated, frame["response"])
    width = int(frame["slot"].max()) + 1
    rater, category, used = (np.zeros((len(rated), width), int) for _ in range(3))
    rater[row, frame["slot"]], category[row, frame["slot"]], used[row, frame["slot"]] = frame["rater"], frame["category"], 1
    return RatingSlots(response=rated, system=data.response_system[rated], rater=rater, category=category, used=used.astype(float))


def standardised_cutpoints(data: JudgesData, score_range) -> np.ndarray:
    """The cutpoints :math:`k + 1/2` of the scale on the model's standardised scale, padded with
    the open ends (category ``k - low`` spans ``cut[k - low]`` to ``cut[k - low + 1]``)."""
    low, high = score_range
    return padded_cutpoints((np.arange(low, high) + 0.5 - data.center) / data.scale, np)


def ordinal_parameters(p: dict, cut, lib=pt) -> OrdinalParameters:
    """The rating side of the parameters ``p`` as the true-score model's ordinal code reads it."""
    return OrdinalParameters(mu=None, sigma_t=None, alpha=None, beta=None, tau=None, offset=p["rater_effect"],
                             error_sd=p["sigma_human"], cut=pt.as_tensor(cut) if lib is pt else cut, center=0.0)


def ordinal_loglik(judged, slots: RatingSlots, p: dict, cut: np.ndarray, n_responses: int, lib=pt):
    """Every response's log-likelihood (module docstring) over ``n_responses`` responses from
    ``judged``: each one's log-likelihood of its judge scores and the mean and variance of
    :math:`t_r` given them (:func:`~bayes_raters.judges.marginal.woodbury` of a block's totals, or
    :func:`~bayes_raters.judges.marginal.true_score_given_rows` of the judge rows); ``slots`` the
    ratings of those responses (their ``response`` in the same numbering); NumPy or PyTensor."""
    log_judges, t_mean, t_var = judged
    s, r = slots.system, slots.response
    mean = p["mu"][s] + p["sigma_true"][s] * t_mean[r]
    var = p["sigma_true"][s] ** 2 * t_var[r]
    log_ratings, _, _ = quadrature_terms(mean, var, slots.rater, slots.category, slots.used, ordinal_parameters(p, cut, lib), lib,
                                         gauss_hermite_rule(N_NODES), exact_tails=False)
    return log_judges + segment_totals(log_ratings, r, n_responses, lib)


def categories(latent: np.ndarray, data: JudgesData, score_range) -> np.ndarray:
    """Latent ratings on the standardised scale as scores of the scale (:func:`to_category`)."""
    return to_category(data.center + data.scale * latent, score_range)


def to_category(latent, score_range) -> np.ndarray:
    """Latent ratings on the rating scale as its integer scores: the category whose cutpoints
    :math:`k \\pm 1/2` hold them (a cutpoint itself goes down), the ends open."""
    low, high = score_range
    return np.clip(np.ceil(np.asarray(latent, dtype=float) - 0.5), low, high)


def equivalent_noise_variance(mu, sigma_true, sigma_human, cut: np.ndarray, n_nodes: int = 40) -> np.ndarray:
    r"""The error variance of a normal rating that carries as much information about the true
    score as one ordinal rating, per system: :math:`1 / E_T[I(T)]` with the Fisher information
    of the category about :math:`T`,

    .. math:: I(T) = \frac{1}{\sigma_H^2} \sum_k \frac{(\varphi(a_k) - \varphi(b_k))^2}{\Phi(b_k) - \Phi(a_k)},

    :math:`a_k, b_k` the category's cutpoints minus :math:`T` over :math:`\sigma_H`, averaged over
    the system's true scores :math:`T \sim N(\mu_s, \sigma_s^2)` by Gauss-Hermite quadrature (rater
    effects left out). It exceeds :math:`\sigma_H^2` (coarse categories lose information) and
    grows where the system's ratings pile at an end of the scale. NumPy; ``mu`` and
    ``sigma_true`` (..., systems), ``sigma_human`` (...), standardised."""
    rule = gauss_hermite_rule(n_nodes)
    x, w = rule.nodes, np.exp(rule.log_weights)
    sd = np.asarray(sigma_human)[..., None, None]
    latent = np.asarray(mu)[..., None] + np.asarray(sigma_true)[..., None] * x  # (..., systems, nodes)
    z = (cut.reshape(-1, *[1] * latent.ndim) - latent[None]) / sd[None]  # (cuts, ..., systems, nodes)
    density = np.where(np.abs(z) < 1e3, scipy.stats.norm.pdf(z), 0.0)
    mass = np.diff(scipy.stats.norm.cdf(z), axis=0)
    kept = mass > 1e-12  # a category this improbable adds about z^2 times its mass: nothing
    info = np.where(kept, np.diff(density, axis=0) ** 2 / np.where(kept, mass, 1.0), 0.0).sum(axis=0) / sd**2
    return 1.0 / (info @ w)
