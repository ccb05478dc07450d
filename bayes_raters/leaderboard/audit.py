r"""The benchmark audit: for each item, the posterior probability that it is keyed right, mis-keyed,
or answered at random, and how saturated it is (:func:`audit_table`, ``LeaderboardResult.audit_table``).

Given the abilities (posterior means of a fitted leaderboard) and the item population (posterior
means of its hyperparameters), each item's answers :math:`y_j` are explained by one of three
hypotheses:

* **keyed** (:math:`h = 1`): the fitted model, :math:`P(y_{sj} = 1) = \operatorname{logit}^{-1}(a_j(\theta_s - b_j))`
  with :math:`a_j > 0` and the population prior on :math:`(\log a_j, b_j)`;
* **mis-keyed** (:math:`h = 2`): the key is wrong, so the answers fall as ability rises:
  :math:`P(y_{sj} = 1) = 1 - \operatorname{logit}^{-1}(a_j(\theta_s - b_j))`, the same prior (the
  keyed model of the flipped answers :math:`1 - y`);
* **random** (:math:`h = 3`): the answers do not depend on ability (an ambiguous item, a key that
  accepts nearly anything or nothing): :math:`y_{sj} \sim \text{Bernoulli}(p_j)`,
  :math:`p_j \sim \text{Beta}(1, 1)`, whose marginal likelihood is
  :math:`B(k_j + 1, n_j - k_j + 1)` for :math:`k_j` right of :math:`n_j` answers.

The marginal likelihoods :math:`L_{jh}` of the first two are Laplace approximations over
:math:`(\log a_j, b_j)` (:func:`~bayes_raters.leaderboard.items.laplace_log_evidence`; for the 1PL
over :math:`b_j` at the common slope). The shares :math:`\pi_h` of the three kinds of item in the
benchmark are estimated by EM (the Dirichlet(2, 2, 2) posterior mode, so that no share is exactly
0), and each item's probabilities are :math:`P(h \mid y_j) = \pi_h L_{jh} / \sum_g \pi_g L_{jg}`.
Saturation is the posterior mean of :math:`\operatorname{logit}^{-1}(a_j(\max_s \theta_s - b_j))`,
the chance that the best system answers the item right.

What it leaves out: the abilities enter at their posterior means (with thousands of answers per
system their spread is small beside an item's); the mis-keyed items were part of the fit that
gave the abilities (few of them move the abilities little). Checked on planted errors in
``validation/leaderboard_audit.py`` (precision of the top items and calibration, in
``models/leaderboards.md``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special

from bayes_raters.leaderboard.items import item_modes, laplace_log_evidence
from bayes_raters.leaderboard.kernel import MatrixPasses
from bayes_raters.leaderboard.state import State

HYPOTHESES = ("keyed", "miskeyed", "random")
#: Dirichlet concentration of the shares' prior (the EM gives its posterior mode).
SHARE_PRIOR = 2.0
#: Posterior draws used for saturation.
SATURATION_DRAWS = 400


def transposed_answers(result) -> np.ndarray:
    """The answers as the items x systems int8 matrix of the sampler (-1: not answered)."""
    const = result.idata["constant_data"]
    post = result.posterior
    out = np.full((post.sizes["item"], post.sizes["system"]), -1, np.int8)
    out[const["item_index"].values, const["system_index"].values] = result.idata["observed_data"]["correct"].values
    return out


def population_state(result) -> tuple[State, bool]:
    """The posterior means of the abilities, items and item population, as a sampler state."""
    mean = result.posterior.mean(("chain", "draw"))
    two_pl = "a" in mean
    log_a = np.log(result.posterior["a"].astype(float)).mean(("chain", "draw")).values if two_pl else \
        np.full(mean.sizes["item"], float(np.log(mean["a_common"])))
    scalars = {name: float(mean[name]) for name in ("b_mean", "b_sigma")}
    if two_pl:
        scalars |= {name: float(mean[name]) for name in ("log_a_mean", "log_a_sigma")}
    else:
        scalars |= {"log_a_mean": float(log_a[0]), "log_a_sigma": 1.0}
    state = State(mean["theta"].values.astype(float), log_a, mean["b"].values.astype(float), **scalars)
    return state, two_pl


def item_log_evidence(answers_t: np.ndarray, state: State, two_pl: bool) -> np.ndarray:
    """The log marginal likelihood of each item's answers under the three hypotheses (items, 3)."""
    observed = answers_t >= 0
    flipped = np.where(observed, 1 - answers_t, answers_t).astype(np.int8)
    n_items = len(answers_t)
    out = np.empty((n_items, 3))
    start = np.tile([state.log_a_mean, -np.exp(state.log_a_mean) * state.b_mean], (n_items, 1)) if two_pl \
        else np.full((n_items, 1), state.b_mean)
    for h, matrix in enumerate((answers_t, flipped)):
        _, target, chol = item_modes(MatrixPasses(matrix.T, matrix), state.theta, state, two_pl, start)
        out[:, h] = laplace_log_evidence(target, chol, state, two_pl)
    right, n = (answers_t == 1).sum(1), observed.sum(1)
    out[:, 2] = special.betaln(right + 1, n - right + 1)
    return out


def mixture_probabilities(log_evidence: np.ndarray, iterations: int = 500, tol: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
    r"""EM for the shares :math:`\pi` of the hypotheses (module docstring) from the items' log marginal
    likelihoods (items, 3): each item's posterior probabilities and the shares (Dirichlet
    :data:`SHARE_PRIOR` prior, posterior mode)."""
    share = np.array([0.9, 0.05, 0.05])
    n_items, n_h = log_evidence.shape
    for _ in range(iterations):
        resp = special.softmax(np.log(share) + log_evidence, axis=1)
        new = (resp.sum(0) + SHARE_PRIOR - 1) / (n_items + n_h * (SHARE_PRIOR - 1))
        done = np.abs(new - share).max() < tol
        share = new
        if done:
            break
    return special.softmax(np.log(share) + log_evidence, axis=1), share


def saturation(result, draws: int = SATURATION_DRAWS) -> np.ndarray:
    """Per item, the posterior mean chance that the best system of each draw answers it right."""
    post = result.posterior.stack(sample=("chain", "draw"))
    keep = np.linspace(0, post.sizes["sample"] - 1, min(draws, post.sizes["sample"])).astype(int)
    post = post.isel(sample=keep)
    top = post["theta"].max("system").values
    a = result._slopes(post).transpose("item", "sample").values.astype(float)  # as ability.item_bank reads them
    b = post["b"].transpose("item", "sample").values.astype(float)
    return special.expit(a * (top[None, :] - b)).mean(1)


def audit_table(result) -> pd.DataFrame:
    """One row per item of a fitted leaderboard: ``p_keyed``, ``p_miskeyed``, ``p_random`` (they sum
    to 1), ``saturation`` (P(the best system answers it right), read from the fitted keyed model, so
    not meaningful for an item that is likely mis-keyed), ``n_answers``, ``share_correct`` and
    ``flag``: ``"miskeyed"`` or ``"random"`` where that hypothesis has probability above 0.5,
    ``"saturated"`` where saturation is above 0.95 (the item no longer separates the best systems),
    else empty. The estimated shares of the three kinds of item are in ``table.attrs["shares"]``.
    Method and limits: the module docstring."""
    answers_t = transposed_answers(result)
    state, two_pl = population_state(result)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        log_evidence = item_log_evidence(answers_t, state, two_pl)
    probs, shares = mixture_probabilities(log_evidence)
    observed = answers_t >= 0
    table = pd.DataFrame({f"p_{h}": probs[:, k] for k, h in enumerate(HYPOTHESES)},
                         index=pd.Index(result.posterior["item"].values, name="item"))
    table["saturation"] = saturation(result)
    table["n_answers"] = observed.sum(1)
    table["share_correct"] = (answers_t == 1).sum(1) / np.maximum(table["n_answers"].to_numpy(), 1)
    flag = np.where(table["p_miskeyed"] > 0.5, "miskeyed", np.where(table["p_random"] > 0.5, "random", ""))
    table["flag"] = np.where((flag == "") & (table["saturation"] > 0.95), "saturated", flag)
    table.attrs["shares"] = dict(zip(HYPOTHESES, shares.round(6).tolist()))
    return table
