r"""Response types of a mixed leaderboard beside the 0/1 answers of the 1PL/2PL: the 3PL for
multiple-choice items where weak systems guess, and the graded response model (GRM) for grades on an
ordered scale (a judge's 1-10). Every type answers through the same linear predictor
:math:`\eta_{sj} = a_j(\theta_s - b_j)` on the one ability per system, so a suite that mixes them
ranks the systems on one scale; each type adds its own item parameters :math:`e_j`:

* ``"3pl"``: :math:`P(y = 1) = c_j + (1 - c_j)\operatorname{logit}^{-1}(\eta)`, with
  :math:`e_j = \gamma_j = \operatorname{logit} c_j \sim N(\operatorname{logit}(1 / \text{options}), 0.5)`
  (:data:`GUESS_SD`);
* ``"graded"``: :math:`K` ordered categories, :math:`P(y \ge k) = \operatorname{logit}^{-1}(\eta - \kappa_k)`
  for :math:`k = 1, \dots, K - 1`, the cutpoints centred (:math:`\sum_k \kappa_k = 0`, so :math:`b_j` is the
  item's location) and ordered by positive spacings: :math:`\tau_1 = 0`, :math:`\tau_k = \tau_{k-1} + e^{u_k}`,
  :math:`\kappa = \tau - \bar\tau`, with :math:`e = (u_2, \dots, u_{K-1})`, each :math:`\sim N(0, 1)`
  (:data:`SPACING_SD`). The cutpoints are **shared** by the graded items (Muraki's rating-scale form of the
  GRM: one grading scale, each item its own slope and location), so they rest on every graded answer; with
  a set of cutpoints per item, ten grades and 120 systems, their bulk ESS was 27-280 in 1,000 draws
  (``models/leaderboards.md``). With :math:`K = 2` it is the 2PL;
* ``"bounded"``: a score in [0, 1] with exact zeros and ones (ROUGE, BLEU, a pass rate), the ordered beta model: two
  centred cutpoints :math:`\kappa_{1,2} = \mp e^{u}/2` split the answer into 0, a value between, and 1 as the
  graded model with three categories does (:math:`P(0) = 1 - \sigma(\eta - \kappa_1)`, :math:`P(1) =
  \sigma(\eta - \kappa_2)`), and a value between has the density :math:`\operatorname{Beta}(\mu\phi,
  (1 - \mu)\phi)` with mean :math:`\mu = \sigma(\eta)` and precision :math:`\phi`; :math:`e = (u, \log\phi)`,
  shared by the bounded items (one metric's scale), :math:`u \sim N(1.5, 1)` (at :math:`\eta = 0` a 10% chance
  of an exact 0 and of an exact 1 at the prior median) and :math:`\log\phi \sim N(2, 1.5)`
  (:data:`BOUNDED_PRIOR`). Its passes are :mod:`bayes_raters.leaderboard.bounded_kernel`'s.

The cutpoints and the guessing chance live on the :math:`\eta` scale, so the sampler's shift and scale moves,
which leave :math:`\eta` unchanged, leave them unchanged too.

Each type gives, for a block of answers, the category probabilities :math:`p_k` (``(K, ...)``), their
derivative in :math:`\eta` and in :math:`e` (``(K, m, ...)``): the item and ability passes of
:mod:`bayes_raters.leaderboard.typed` build scores and Fisher information from them
(:math:`\sum_k \nabla p_k \nabla p_k^\top / p_k`, the information of one categorical answer).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

#: Prior SD of the 3PL's logit guessing chance around logit(1 / options).
GUESS_SD = 0.5
#: Prior SD of the graded model's log cutpoint spacings (median spacing 1 on the logit scale).
SPACING_SD = 1.0
#: Item updates a sweep of the 3PL items (four for graded items, two for the 2PL's): an item whose guessing
#: chance the data hardly pin down trades it against its slope and difficulty along a curved ridge, which
#: the Newton moves cross slowly. At 150 systems x 40 3PL items (seed 1) such an item (c 0.14-0.45 in its
#: 90% interval) had a bulk ESS of 106 in 2,000 draws with four updates and 1,015 with eight
#: (``models/leaderboards.md``, which gives the cost of a 3PL pass).
THREE_PL_UPDATES = 8
#: Prior means and SDs of the bounded type's log cutpoint spacing u and log precision log phi.
BOUNDED_PRIOR = ((1.5, 2.0), (1.0, 1.5))
#: The response types beside the binary 2PL.
RESPONSE_TYPES = ("3pl", "graded", "bounded")


@dataclass(frozen=True, eq=False)
class ResponseType:
    """One response type: its ``name``, its number of categories ``n_categories`` and of extra
    parameters ``n_extra``, the prior mean and SD of those parameters, and whether they are ``shared``
    by the type's items (one vector, the graded scale's) or each item's own (the 3PL's guessing), and the
    item ``updates`` a sweep of :func:`~bayes_raters.leaderboard.typed.update_typed_items`. The prior mean and
    SD are stored as arrays (one value, or one per extra parameter)."""

    name: str
    n_categories: int
    n_extra: int
    prior_mean: np.ndarray
    prior_sd: np.ndarray
    shared: bool = False
    updates: int = 4

    def __post_init__(self):
        object.__setattr__(self, "prior_mean", np.asarray(self.prior_mean, dtype=float))
        object.__setattr__(self, "prior_sd", np.asarray(self.prior_sd, dtype=float))

    def probabilities(self, eta: np.ndarray, extra: np.ndarray, with_extra: bool = True) -> tuple:
        """``(p, dp/deta, dp/de)`` with shapes ``(K,) + eta.shape`` and ``(K, m) + eta.shape``;
        ``extra`` is (items, m) and ``eta`` (items, systems); ``dp/de`` is None unless ``with_extra``."""
        if self.name == "3pl":
            return _three_pl(eta, extra[:, 0])
        if self.name == "bounded":
            raise NotImplementedError("the bounded type is continuous: bayes_raters.leaderboard.bounded_kernel has its passes")
        return _graded(eta, extra, with_extra)

    def start_extra(self, n_items: int) -> np.ndarray:
        """Starting extra parameters, (items, m) or (1, m) when shared: the prior mean."""
        return np.full((1 if self.shared else n_items, self.n_extra), self.prior_mean)


def response_type(name: str, *, options: int = 4, n_categories: int = 2) -> ResponseType:
    """The :class:`ResponseType` ``name`` (:data:`RESPONSE_TYPES`): the 3PL's prior centred on
    1 / ``options``, the graded model with ``n_categories`` categories, the bounded (ordered beta) model."""
    if name == "3pl":
        return ResponseType("3pl", 2, 1, float(special.logit(1.0 / options)), GUESS_SD, updates=THREE_PL_UPDATES)
    if name == "bounded":
        return ResponseType("bounded", 3, 2, *BOUNDED_PRIOR, shared=True)
    return ResponseType("graded", n_categories, n_categories - 2, 0.0, SPACING_SD, shared=True)


def ordered_draw(eta: np.ndarray, kappa: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    r"""A category per answer from the ordered logistic, :math:`P(y \ge k) = \sigma(\eta - \kappa_k)`: the number
    of the cutpoints ``kappa`` (K - 1,) that one uniform draw per answer passes (0..K - 1, shape of ``eta``)."""
    return (rng.random(np.shape(eta))[..., None] < special.expit(np.asarray(eta)[..., None] - kappa)).sum(-1)


def bounded_draw(eta: np.ndarray, kappa: np.ndarray, precision: float, rng: np.random.Generator) -> np.ndarray:
    r"""A bounded score per answer from the ordered beta: exactly 0 or 1 by :func:`ordered_draw` with the two
    cutpoints ``kappa``, else :math:`\operatorname{Beta}(\mu\phi, (1 - \mu)\phi)`, :math:`\mu = \sigma(\eta)`."""
    category = ordered_draw(eta, kappa, rng)
    mu = special.expit(eta)
    between = rng.beta(np.maximum(mu * precision, 1e-300), np.maximum((1 - mu) * precision, 1e-300))
    return np.select([category == 0, category == 2], [0.0, 1.0], between)


def _three_pl(eta: np.ndarray, gamma: np.ndarray):
    r""":math:`p_1 = c + (1 - c)\sigma(\eta)`, :math:`p_0 = (1 - c)\sigma(-\eta)` (no cancellation), with
    :math:`c = \sigma(\gamma)`; :math:`dp_1/d\eta = (1 - c)\sigma(\eta)\sigma(-\eta)`,
    :math:`dp_1/d\gamma = \sigma(-\eta)\,c(1 - c)`."""
    c = special.expit(gamma)[:, None]
    up, down = special.expit(eta), special.expit(-eta)
    p0 = (1 - c) * down
    p = np.stack([p0, 1 - p0])
    d_eta = (1 - c) * up * down
    d_gamma = down * c * (1 - c)
    return p, np.stack([-d_eta, d_eta]), np.stack([-d_gamma, d_gamma])[:, None]


def cutpoints(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""The centred cutpoints :math:`\kappa` (items, K - 1) from the log spacings ``u`` (items, K - 2), and
    their Jacobian :math:`d\kappa_l / du_i` (items, K - 1, K - 2)."""
    n_items, m = u.shape
    spacing = np.exp(u)
    tau = np.concatenate([np.zeros((n_items, 1)), np.cumsum(spacing, axis=1)], axis=1)
    kappa = tau - tau.mean(1, keepdims=True)
    n_cuts = m + 1
    l_index, i_index = np.arange(n_cuts)[:, None], np.arange(1, m + 1)[None, :]
    # tau_l = sum_{i <= l} e^{u_i} (cutpoint l = 0..K-2, spacing i = 1..K-2); the mean subtracts (K-1-i)/(K-1) e^{u_i}
    pattern = (i_index <= l_index) - (n_cuts - i_index) / n_cuts
    return kappa, spacing[:, None, :] * pattern[None]


def _graded(eta: np.ndarray, u: np.ndarray, with_extra: bool = True):
    r"""Category probabilities of the graded model, :math:`p_k = F_k - F_{k+1}` with :math:`F_k =
    \sigma(\eta - \kappa_k)` (:math:`F_0 = 1, F_K = 0`), taken as :math:`\sigma(x)\sigma(-y)(1 - e^{y - x})`
    for :math:`x = \eta - \kappa_k > y = \eta - \kappa_{k+1}` (no cancellation in the tails);
    :math:`dp_k/d\eta = f_k - f_{k+1}` with :math:`f = F(1 - F)`, and :math:`dp_k/du = -f_k\,d\kappa_k/du + f_{k+1}\,d\kappa_{k+1}/du`."""
    kappa, jac = cutpoints(u)
    n_cuts = kappa.shape[1]
    x = eta[None] - kappa.T[:, :, None]  # (K-1, items, systems)
    up, down = special.expit(x), special.expit(-x)
    f = up * down
    p = np.empty((n_cuts + 1,) + eta.shape)
    p[0] = down[0]
    p[-1] = up[-1]
    if n_cuts > 1:
        gap = (kappa[:, :-1] - kappa[:, 1:]).T[:, :, None]  # kappa_k - kappa_{k+1} < 0: y - x
        p[1:-1] = up[:-1] * down[1:] * -np.expm1(gap)
    zero = np.zeros((1,) + eta.shape)
    f_pad = np.concatenate([zero, f, zero])
    d_eta = f_pad[:-1] - f_pad[1:]
    if not with_extra:
        return p, d_eta, None
    m = u.shape[1]
    jac_t = np.transpose(jac, (1, 2, 0))[:, :, :, None]  # (K-1, m, items, 1)
    fj = f[:, None] * jac_t  # f_k dkappa_k/du: (K-1, m, items, systems)
    zero_j = np.zeros((1, m) + eta.shape)
    fj_pad = np.concatenate([zero_j, fj, zero_j])
    d_u = fj_pad[1:] - fj_pad[:-1]
    return p, d_eta, d_u
