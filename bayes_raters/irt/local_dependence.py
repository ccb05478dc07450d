r"""Local dependence: Yen's :math:`Q_3` from posterior draws, with a posterior predictive check.

IRT assumes that, given ability, a respondent's answers to different items are independent.
Items that share a stem, a passage or a rater's halo break this, and then the model counts the
same information twice (inflated discriminations, too-narrow intervals). Yen's (1984)
:math:`Q_3` is the correlation over respondents of two items' residuals,

.. math::

    d_{ij} = x_{ij} - E(X_{ij} \mid \theta_i), \qquad
    Q_{3,jk} = \operatorname{corr}_i(d_{ij}, d_{ik}),

over the respondents who answered both (pairwise complete). :math:`E(X_{ij} \mid \theta)` is
:math:`P_j(\theta)` for right/wrong items and :math:`\sum_k k\,P(X_j = k \mid \theta)` (category
index) for graded and partial-credit items. Under local independence :math:`Q_3` is not centred
at zero: with :math:`J` items its expectation is near :math:`-1/(J - 1)` (Yen 1993), and its
spread depends on the number of respondents, so fixed cut-offs (0.2, 0.3) mean different things
in different designs (Christensen, Makransky and Horton 2017). The posterior predictive check
removes both problems: for each of ``n_draws`` posterior draws :math:`s` (item parameters and
the respondent's :math:`\theta^{(s)}`, drawn from its exact conditional under the marginal
method), the realised :math:`Q_3^{(s)}` of the observed answers is compared with
:math:`Q_3^{\mathrm{rep}(s)}` of answers replicated from the model with the same draw, on the
same missingness. Reported per pair: posterior mean and interval of the realised :math:`Q_3`,
the mean replicated :math:`Q_3`, the excess :math:`E[Q_3 - Q_3^{\mathrm{rep}}]` and the
posterior predictive p-value :math:`p = P(Q_3^{\mathrm{rep}} \ge Q_3 \mid x)`. A pair is
flagged when :math:`p < \alpha` **and** the excess exceeds ``min_excess`` (significance and
size: at a few thousand respondents a trivial dependence is significant).

Reading the flags: a strongly dependent pair pulls each respondent's :math:`\theta` toward
itself (its discriminations are inflated), so on a short test the other items' residuals then
correlate among themselves and negatively with the pair. Measured with six GPCM items and one
pair copied half the time (400 respondents): the pair's excess 0.27, two other pairs flagged at
0.15; with ten items only the pair. Read flags from the largest excess down, and refit without
(or after merging) the worst pair before trusting the next ones.

The correlations are computed for all pairs at once from masked cross-products (four
:math:`N \times J` by :math:`N \times J` products per draw), so 200 draws of 10,000 x 100 answers
take seconds.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from bayes_raters.errors import InvalidInputError
from bayes_raters.irt.binary.model import irt_probability
from bayes_raters.irt.diagnostics import item_parameters
from bayes_raters.irt.polytomous.model import category_logp
from bayes_raters.results import check_ci_prob

#: Default thresholds of a flag: posterior predictive p-value and excess correlation.
ALPHA, MIN_EXCESS = 0.05, 0.1


def residual_correlations(residual: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """Pairwise complete Pearson correlations of the columns of ``residual`` (respondents x
    items; values where ``seen`` is False are ignored): an items x items matrix, NaN where two
    items share fewer than three respondents or a residual is constant."""
    mask = seen.astype(float)
    d = np.where(seen, residual, 0.0)
    n = mask.T @ mask
    sums = d.T @ mask  # [j, k]: sum of d_j over respondents who answered j and k
    squares = (d * d).T @ mask
    cross = d.T @ d
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = cross / n - sums * sums.T / n**2
        var_j = squares / n - (sums / n) ** 2
        q3 = cov / np.sqrt(var_j * var_j.T)
    q3[n < 3] = np.nan
    return q3


def q3_table(
    answers: np.ndarray,
    draws: Callable[[int, np.random.Generator], tuple[np.ndarray, np.ndarray]],
    n_draws: int,
    items: pd.Index,
    *,
    alpha: float = ALPHA,
    min_excess: float = MIN_EXCESS,
    ci_prob: float = 0.9,
    random_seed=0,
) -> pd.DataFrame:
    """One row per item pair ``(item_a, item_b)``: ``q3_mean``, ``q3_lower``/``q3_upper``
    (``ci_prob`` interval of the realised Q3), ``q3_rep_mean``, ``excess``, ``ppp``,
    ``n_both`` and ``flagged`` (module docstring); NaN and not flagged where two items share
    fewer than three respondents or a residual is constant in some draw.

    ``answers``: respondents x items with NaN where not answered. ``draws(s, rng)`` returns
    draw ``s``'s expected scores and replicated answers, both respondents x items."""
    check_thresholds(alpha, min_excess, ci_prob)
    rng = np.random.default_rng(random_seed)
    seen = ~np.isnan(answers)
    observed, replicated = [], []
    for s in range(n_draws):
        expected, rep = draws(s, rng)
        observed.append(residual_correlations(answers - expected, seen))
        replicated.append(residual_correlations(rep - expected, seen))
    observed, replicated = np.stack(observed), np.stack(replicated)
    upper = np.triu_indices(len(items), 1)
    obs, rep = observed[:, upper[0], upper[1]], replicated[:, upper[0], upper[1]]
    seen_f = seen.astype(float)
    n_both = (seen_f.T @ seen_f)[upper].astype(int)
    stats = np.full((6, len(n_both)), np.nan)  # pairs with < 3 shared respondents (or constant residuals) stay NaN
    ok = np.isfinite(obs).all(axis=0) & np.isfinite(rep).all(axis=0)
    tail = (1 - ci_prob) / 2
    o, r = obs[:, ok], rep[:, ok]
    stats[:, ok] = [o.mean(0), np.quantile(o, tail, 0), np.quantile(o, 1 - tail, 0), r.mean(0), (o - r).mean(0), (r >= o).mean(0)]
    q3_mean, q3_lower, q3_upper, q3_rep_mean, excess, ppp = stats
    return pd.DataFrame({
        "item_a": items[upper[0]], "item_b": items[upper[1]], "q3_mean": q3_mean, "q3_lower": q3_lower,
        "q3_upper": q3_upper, "q3_rep_mean": q3_rep_mean, "excess": excess, "ppp": ppp, "n_both": n_both,
        "flagged": ok & (ppp < alpha) & (excess > min_excess),
    })


def check_thresholds(alpha: float, min_excess: float, ci_prob: float) -> None:
    """Refuse thresholds outside their ranges before any work."""
    if not 0 < alpha < 1:
        raise InvalidInputError(f"alpha must lie in (0, 1), got {alpha}.")
    if not -1 <= min_excess < 1:
        raise InvalidInputError(f"min_excess must lie in [-1, 1), got {min_excess}.")
    check_ci_prob(ci_prob)


def wide_answers(table: pd.DataFrame, value: str, respondents, items) -> np.ndarray:
    """The long ``table``'s ``value`` as respondents x items (NaN where not answered), in the
    order of ``respondents`` and ``items``."""
    wide = table.pivot(index="respondent", columns="item", values=value)
    return wide.reindex(index=respondents, columns=items).to_numpy(float)


def thinned_draws(n_available: int, n_draws: int) -> np.ndarray:
    """``n_draws`` indices evenly spaced over the flattened (chain, draw) axis."""
    if n_draws < 2:
        raise InvalidInputError(f"n_draws must be at least 2, got {n_draws}.")
    return np.linspace(0, n_available - 1, min(n_draws, n_available)).round().astype(int)


def plant_local_dependence(table: pd.DataFrame, pairs, share: float = 0.5, *, random_seed=None,
                           value: str = "correct") -> pd.DataFrame:
    """Answers with local dependence planted: for each ``(source, copy)`` item pair, each
    respondent who answered both gets the source item's answer on the copy item with
    probability ``share`` (their other answers unchanged). For checks of :func:`q3_table`."""
    if not 0 < share <= 1:
        raise InvalidInputError(f"share must lie in (0, 1], got {share}.")
    rng = np.random.default_rng(random_seed)
    out = table.copy()
    keyed = out.set_index(["respondent", "item"])[value]
    for source, copy in pairs:
        both = keyed.xs(source, level="item").index.intersection(keyed.xs(copy, level="item").index)
        chosen = both[rng.random(len(both)) < share]
        rows = out["item"].eq(copy) & out["respondent"].isin(chosen)
        out.loc[rows, value] = out.loc[rows, "respondent"].map(keyed.xs(source, level="item")).to_numpy()
    return out


def _flat(posterior, name: str, index: np.ndarray) -> np.ndarray:
    """Draws of ``name`` with (chain, draw) flattened and thinned to ``index``: (draws, ...)."""
    values = posterior[name].values
    return values.reshape(-1, *values.shape[2:])[index]


def binary_draws(posterior, respondents, items, index: np.ndarray):
    """The ``draws`` callable of :func:`q3_table` for right/wrong items: expected score
    :math:`P_j(\\theta_i)` and Bernoulli replicates, per thinned draw."""
    params = {k: v.sel(item=items) for k, v in item_parameters(posterior).items()}
    a, b, c, d = (p.values.reshape(-1, len(items))[index] for p in (params[k] for k in "abcd"))
    theta = _flat(posterior.sel(respondent=respondents), "theta", index)

    def one(s: int, rng: np.random.Generator):
        p = irt_probability(theta[s][:, None], a[s], b[s], c[s], d[s], lib=np)
        return p, (rng.random(p.shape) < p).astype(float)

    return one


def polytomous_draws(posterior, model: str, layout, respondents, index: np.ndarray):
    """The ``draws`` callable of :func:`q3_table` for graded / partial-credit items: expected
    category index :math:`\\sum_k k P(X_j = k \\mid \\theta_i)` and categorical replicates."""
    a, b = _flat(posterior, "a", index), _flat(posterior, "b", index)
    theta = _flat(posterior.sel(respondent=respondents), "theta", index)
    k_max = int(layout.n_categories.max())

    def one(s: int, rng: np.random.Generator):
        probs = np.exp(category_logp(model, a[s], b[s], theta[s], layout, lib=np))  # (rows, respondents)
        padded = np.concatenate([probs, np.zeros((1, probs.shape[1]))])[layout.padded]  # (items, K_max, N)
        expected = np.einsum("jkn,k->nj", padded, np.arange(k_max, dtype=float))
        below = np.cumsum(padded, axis=1)[:, :-1, :]  # P(X <= k), k < K_max - 1
        u = rng.random((padded.shape[0], 1, padded.shape[2]))
        replicated = (u >= below).sum(axis=1).T.astype(float)
        return expected, np.minimum(replicated, layout.n_categories - 1)

    return one


def local_dependence(result, *, n_draws: int = 200, alpha: float = ALPHA, min_excess: float = MIN_EXCESS,
                     ci_prob: float = 0.9, random_seed=0) -> pd.DataFrame:
    """Yen's Q3 of every item pair of a fitted :class:`~bayes_raters.irt.IRTResult` or
    :class:`~bayes_raters.irt.PolytomousResult`, from ``n_draws`` posterior draws, with the
    posterior predictive check of the module docstring (:func:`q3_table` gives the columns),
    sorted by excess, largest first."""
    posterior = result.posterior
    respondents = pd.Index(posterior["respondent"].values)
    index = thinned_draws(posterior.sizes["chain"] * posterior.sizes["draw"], n_draws)
    if hasattr(result, "categories"):
        items, value = pd.Index(list(result.categories)), "category"
        draws = polytomous_draws(posterior, result.model, result.layout, respondents, index)
    else:
        items, value = pd.Index(posterior["item"].values), "correct"
        draws = binary_draws(posterior, respondents, items, index)
    answers = wide_answers(result.table, value, respondents, items)
    table = q3_table(answers, draws, len(index), items, alpha=alpha, min_excess=min_excess, ci_prob=ci_prob,
                     random_seed=random_seed)
    return table.sort_values("excess", ascending=False, ignore_index=True)
