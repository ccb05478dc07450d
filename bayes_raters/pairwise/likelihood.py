"""The pairwise-outcome likelihood of the beta-latent model, on pooled comparisons.

Comparisons that name the same two items and the same annotator carry the same outcome
probabilities, so they are pooled: the two items are put in a fixed order (the earlier one in
the model's item index first, flipping win and loss when a row had them the other way round)
and the judgements of each (pair, annotator) become counts n = (losses, ties, wins) of the
first item. The counts are multinomial,

    log p(n | s, lambda, epsilon) = log N! - sum_k log n_k! + sum_k n_k log p_k,

with p = (P(loss), P(tie), P(win)) of the Rao-Kupper or probit link (module docstring of
:mod:`bayes_raters.pairwise.model`). This is the same likelihood as one categorical outcome per
comparison (the coefficient is free of parameters), so nothing changes for data judged once
per pair; aggregated data (R's BradleyTerry2 citation counts: 3,727 comparisons over 6 pairs)
cost 6 terms per gradient instead of 3,727.

``ties=False`` drops the tie band (epsilon): P(tie) = 0, and the Rao-Kupper link becomes
Bradley-Terry, P(i > j) = pi_i / (pi_i + pi_j) (the probit link becomes Thurstone's case V).
Written with PyMC's ``CustomDist`` rather than ``pm.Multinomial``, which takes p, not log p:
exp(log p) underflows to 0 for a lopsided pair (lambda in the prior's tail), and log 0 of an
observed count is -inf.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
from scipy import special

from bayes_raters.errors import InvalidInputError
from bayes_raters.pairwise.kernel import BradleyTerryRows, pair_segments

OUTCOME_INDEX = {"loss": 0, "tie": 1, "win": 2}  # category of the observed outcome seen from item_a
OUTCOME_KINDS = list(OUTCOME_INDEX)


def resolve_ties(comparisons: pd.DataFrame, ties: bool | None) -> bool:
    """Whether the model has a tie band: as asked, or (None) when some comparison is a tie;
    ``ties=False`` on data with a tie is an error."""
    n_ties = int((comparisons["outcome"] == OUTCOME_INDEX["tie"]).sum()) if len(comparisons) else 0
    if ties is None:
        return n_ties > 0
    if not ties and n_ties:
        raise InvalidInputError(
            f"ties=False, but {n_ties} comparison(s) are ties: pass ties=True (or leave ties=None), or drop the tied rows."
        )
    return bool(ties)


def pool_comparisons(comparisons: pd.DataFrame, items: pd.Index, annotators: pd.Index) -> pd.DataFrame:
    """One row per (pair, annotator) with the pair in item-index order: integer positions
    ``a < b``, ``annotator`` and the counts ``loss``, ``tie``, ``win`` of item ``a``."""
    a = items.get_indexer(comparisons["item_a"])
    b = items.get_indexer(comparisons["item_b"])
    outcome = comparisons["outcome"].to_numpy(np.int64)
    swap = a > b
    outcome = np.where(swap, 2 - outcome, outcome)  # loss <-> win seen from the other item
    frame = pd.DataFrame(
        {"a": np.where(swap, b, a), "b": np.where(swap, a, b),
         "annotator": annotators.get_indexer(comparisons["annotator"]), "outcome": outcome}
    )
    counts = pd.crosstab([frame["a"], frame["b"], frame["annotator"]], frame["outcome"])
    counts = counts.reindex(columns=range(3), fill_value=0)
    counts.columns = OUTCOME_KINDS
    return counts.reset_index()


def rao_kupper_logp(lam_a, lam_b, epsilon):
    """Log P(loss), P(tie), P(win) of item_a, stacked on the last axis, from the log
    strengths lam = lambda c s (Sakaguchi & Van Durme Eqs. 20-22)."""
    log_win = lam_a - pt.logaddexp(lam_a, epsilon + lam_b)
    log_loss = lam_b - pt.logaddexp(epsilon + lam_a, lam_b)
    log_tie = pt.log(pt.expm1(2 * epsilon)) + lam_a + lam_b - pt.logaddexp(lam_a, epsilon + lam_b) - pt.logaddexp(epsilon + lam_a, lam_b)
    return pt.stack([log_loss, log_tie, log_win], axis=-1)


def difference_logp(difference, epsilon):
    """Log P(loss), P(tie), P(win) of the first item from ``difference``, its log strength minus the
    second's (any linear predictor: arena votes add style terms): Rao-Kupper with tie band
    ``epsilon``, or Bradley-Terry with ``epsilon=None``."""
    if epsilon is None:
        return bradley_terry_logp(difference)
    return rao_kupper_logp(difference, pt.zeros_like(difference), epsilon)


def probit_logp(difference, epsilon):
    """Thurstone with a tie band: log P(loss), P(tie), P(win) at d = lambda c (s_a - s_b)."""
    normal = pm.Normal.dist(0.0, 1.0)
    log_win = pm.logcdf(normal, difference - epsilon)
    log_loss = pm.logcdf(normal, -difference - epsilon)
    log_tie = pm.math.logdiffexp(pm.logcdf(normal, epsilon - difference), pm.logcdf(normal, -epsilon - difference))
    return pt.stack([log_loss, log_tie, log_win], axis=-1)


def bradley_terry_logp(difference):
    """No ties: log P(loss), P(tie) = -inf, P(win) = log sigma(d) (Rao-Kupper at epsilon = 0)."""
    log_win, log_loss = -pt.softplus(-difference), -pt.softplus(difference)
    return pt.stack([log_loss, pt.full_like(difference, -np.inf), log_win], axis=-1)


def thurstone_logp(difference):
    """No ties: log P(win) = log Phi(d), log P(loss) = log Phi(-d) (probit at epsilon = 0)."""
    normal = pm.Normal.dist(0.0, 1.0)
    log_win, log_loss = pm.logcdf(normal, difference), pm.logcdf(normal, -difference)
    return pt.stack([log_loss, pt.full_like(difference, -np.inf), log_win], axis=-1)


def _counts_logp(value, log_p, total, log_coefficient, difference):
    """Multinomial log-probability of the count vector ``value`` (last axis) at log p; a
    category of probability 0 (no ties) adds nothing where its count is 0.
    ``log_coefficient`` is log N! - sum_k log n_k! of the observed counts, computed once
    from the data (a quarter of a gradient's time when it was recomputed at every call).
    ``difference`` is unused here (see :func:`_bradley_terry_counts_logp`)."""
    terms = pt.switch(pt.gt(value, 0), value * log_p, 0.0)
    return log_coefficient + terms.sum(axis=-1)


def _bradley_terry_counts_logp(value, log_p, total, log_coefficient, difference):
    """:func:`_counts_logp` for Bradley-Terry (no tie band), from the log-odds ``difference``
    d alone: with n = (losses, 0, wins), n_w log sigma(d) + n_l log sigma(-d) =
    -(n_w + n_l) softplus(-d) - n_l d. One softplus a pair instead of two, no stacked
    categories (``log_p`` serves the predictive draws only); about half the gradient's time
    on 21,924 judge-by-pair rows (``models/pairwise_beta_latent.md``, Real data)."""
    losses, wins = value[..., 0], value[..., 2]
    return log_coefficient - (losses + wins) * pt.softplus(-difference) - losses * difference


def _fused_counts_logp(value, log_p, total, log_coefficient, u, consistency, starts, first, second, who):
    """:func:`_bradley_terry_counts_logp` per row by the compiled passes of
    :mod:`bayes_raters.pairwise.kernel`, from the abilities ``u``, the annotator multipliers and
    the pair segments of the rows (PyMC hands the core-dimension inputs with a leading axis of 1)."""
    flat = [v.reshape((-1,)) for v in (u, consistency, starts, first, second)]
    loglik, _ = BradleyTerryRows()(*flat, who, value[..., 0], total, log_coefficient)
    return loglik


def _counts_random(log_p, total, log_coefficient, *design, rng=None, size=None):
    """Replicated counts: a multinomial draw of ``total`` judgements per pair at p (``design``:
    the likelihood's other inputs, unused here)."""
    p = np.exp(log_p - log_p.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    if size is not None:
        p = np.broadcast_to(p, (*size, p.shape[-1]))
    return rng.multinomial(np.broadcast_to(total, p.shape[:-1]), p)


def log_multinomial_coefficient(counts: np.ndarray) -> np.ndarray:
    """log N! - sum_k log n_k! of every row of ``counts``."""
    return special.gammaln(counts.sum(axis=-1) + 1) - special.gammaln(counts + 1).sum(axis=-1)


def outcome_likelihood(pooled: pd.DataFrame, u, epsilon, consistency, link: str, fused: bool = True) -> None:
    """Add the pooled comparisons to the model in context: ``pm.Data`` of the pairs and an
    observed ``outcome`` (counts, dims ``pair`` x ``outcome_kind``), at abilities
    ``u`` = lambda s scaled by each annotator's consistency (a vector per annotator).
    ``epsilon=None``: no ties. ``fused``: Bradley-Terry rows (Rao-Kupper without ties) by the
    compiled passes of :mod:`bayes_raters.pairwise.kernel` (Numba and Python backends); False,
    or ties, or the probit link: a PyTensor graph (any backend)."""
    a = pm.Data("pair_item_a", pooled["a"].to_numpy(np.int64), dims="pair")
    b = pm.Data("pair_item_b", pooled["b"].to_numpy(np.int64), dims="pair")
    who = pm.Data("pair_annotator", pooled["annotator"].to_numpy(np.int64), dims="pair")
    counts = pooled[OUTCOME_KINDS].to_numpy(np.int64)
    total = pm.Data("pair_total", counts.sum(axis=1), dims="pair")
    sharp = consistency[who]
    difference = sharp * (u[a] - u[b])
    if link == "rao-kupper":
        log_p = rao_kupper_logp(sharp * u[a], sharp * u[b], epsilon) if epsilon is not None else bradley_terry_logp(difference)
    else:
        log_p = probit_logp(difference, epsilon) if epsilon is not None else thurstone_logp(difference)
    logp = _bradley_terry_counts_logp if link == "rao-kupper" and epsilon is None else _counts_logp
    coefficient = pm.Data("pair_log_coefficient", log_multinomial_coefficient(counts), dims="pair")
    inputs, signature = (difference,), "(k),(),(),()->(k)"
    if fused and link == "rao-kupper" and epsilon is None:
        starts, first, second = pair_segments(pooled["a"].to_numpy(), pooled["b"].to_numpy())
        inputs, signature, logp = (u, consistency, starts, first, second, who), "(k),(),(),(i),(j),(s),(p),(p),()->(k)", _fused_counts_logp
    pm.CustomDist(
        "outcome", log_p, total, coefficient, *inputs, logp=logp, random=_counts_random, signature=signature,
        observed=counts, dims=("pair", "outcome_kind"),
    )
