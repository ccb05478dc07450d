r"""Marginal IRT: abilities integrated out by quadrature (:mod:`bayes_raters.quadrature`).

NUTS samples the item (and population) parameters only, from

.. math::

    p(a, b, c, d \mid y) \propto p(a, b, c, d) \prod_p \Big(\int \prod_{j \in p}
    P_j(\theta)^{y_{pj}} (1 - P_j(\theta))^{1 - y_{pj}}\,\varphi(\theta)\,d\theta\Big)^{n_p},

where :math:`p` runs over the distinct answer patterns (answers and missingness together) and
:math:`n_p` counts the respondents who gave pattern :math:`p` (the LSAT7 data's 1,000
respondents are 32 patterns). The integral is the quadrature of the engine with shared nodes
:math:`\theta_q`, so every pattern's log-likelihood on the nodes is a matrix product:

.. math::

    \ell_{pq} = \sum_j y_{pj} \log P_j(\theta_q) + (m_{pj} - y_{pj}) \log(1 - P_j(\theta_q))

(:math:`m_{pj} = 1` where item j was answered). For the 1PL/2PL it is linear in the ability:
:math:`\ell_{pq} = \theta_q \sum_j y_{pj} a_j - \sum_j y_{pj} a_j b_j - \sum_j m_{pj}
\log(1 + e^{a_j(\theta_q - b_j)})`, so a gradient costs patterns x items (one matrix-vector
product) plus patterns x nodes, instead of patterns x items x nodes. When every pattern is
complete, the softplus term is the same for all and a pattern enters only through its weighted
score :math:`S_p = \sum_j y_{pj} a_j`; :func:`score_grid_loglik` then interpolates the log
marginal over a grid of scores, so the cost no longer grows with the number of patterns.

After sampling, each respondent's :math:`\theta` is drawn from its exact conditional given
every posterior draw (:func:`bayes_raters.quadrature.draw_conditional`), and the pointwise
log-likelihood of each respondent is the marginal :math:`\log p(y_i \mid a, b, c, d)`: LOO
then leaves out a respondent, which is what model comparison needs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
import xarray as xr

from bayes_raters.chains import chain_array, map_chains
from bayes_raters.irt.binary.model import asymptote_logs, centred_items, item_pivots, item_priors, option_count
from bayes_raters.irt.diagnostics import PARAMETERS, item_parameters
from bayes_raters.quadrature import QuadratureRule, draw_conditional, fast_softplus, marginal_loglik, rule_for, trapezoid_rule


def answer_patterns(table: pd.DataFrame, respondents, items) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Distinct answer patterns of a validated table.

    Returns ``(correct, answered, index, counts)``: (patterns, items) 0/1 matrices of right
    answers (0 where unanswered) and of answered items, each respondent's pattern (in the order
    of ``respondents``), and the number of respondents per pattern."""
    wide = table.pivot(index="respondent", columns="item", values="correct").reindex(index=respondents, columns=items)
    coded = np.nan_to_num(wide.to_numpy(float), nan=-1.0)
    patterns, index, counts = np.unique(coded, axis=0, return_inverse=True, return_counts=True)
    return (patterns == 1).astype(float), (patterns >= 0).astype(float), index.ravel(), counts.astype(float)


def node_loglik(correct, answered, a, b, c, d, nodes, *, logistic: bool, complete: bool, lib=pt):
    """Log-likelihood (patterns, nodes) of every pattern at every node (the module formula).

    ``logistic``: the 1PL/2PL (c = 0, d = 1), using the linear form; ``complete``: every
    pattern answered every item (then the softplus term is one row). Works on PyTensor
    tensors (``lib=pt``) and NumPy arrays (``lib=np``) alike.
    """
    eta = a[:, None] * (nodes[None, :] - b[:, None])  # (items, nodes)
    if logistic:
        softplus = pt.softplus(eta) if lib is pt else np.logaddexp(0.0, eta)
        spread = softplus.sum(axis=0)[None, :] if complete else lib.dot(answered, softplus)
        return lib.outer(lib.dot(correct, a), nodes) - lib.dot(correct, a * b)[:, None] - spread
    log_p, log_q = asymptote_logs(eta, c[:, None], None if d is None else d[:, None], lib)
    wrong = (log_q.sum(axis=0)[None, :] if complete else lib.dot(answered, log_q)) - lib.dot(correct, log_q)
    return lib.dot(correct, log_p) + wrong


def point_loglik(correct, answered, a, b, c, d, theta, *, logistic: bool, linear=None) -> np.ndarray:
    r"""Log-likelihood of each row's answers at its own ability ``theta`` (NumPy; rows, items).
    For the 1PL/2PL the answer term is :math:`\theta_i S_i - C_i`, :math:`S_i = \sum_j y_{ij} a_j`,
    :math:`C_i = \sum_j y_{ij} a_j b_j`; pass ``linear=(S, C)`` to reuse them across calls.

    Batched over posterior draws too: with ``a``, ``b`` (and ``c``, ``d``) of shape
    (draws, items) and ``theta`` of shape (draws, rows) it returns (draws, rows)."""
    eta = a[..., None, :] * (theta[..., None] - b[..., None, :])
    if logistic:
        score, offset = (a @ correct.T, (a * b) @ correct.T) if linear is None else linear
        return theta * score - offset - np.einsum("...ij,ij->...i", fast_softplus(eta), answered)
    log_p, log_q = asymptote_logs(eta, c[..., None, :], None if d is None else d[..., None, :], np)
    return (correct * log_p + (answered - correct) * log_q).sum(axis=-1)


#: Knots per item of the weighted-score grid (:func:`score_grid_loglik`): spacing mean(a) / 2.
KNOTS_PER_ITEM = 2


def quintic_hermite_basis(t):
    r"""The six quintic Hermite basis polynomials on :math:`t \in [0, 1]`: weights of
    :math:`g_0, h g'_0, h^2 g''_0, g_1, h g'_1, h^2 g''_1` in the interpolant of a cell of width
    :math:`h` (value, first and second derivative match at both ends; error
    :math:`\le h^6 \max|g^{(6)}| / 46080`)."""
    t2 = t * t
    t3 = t2 * t
    t4, t5 = t3 * t, t3 * t2
    return (
        1 - 10 * t3 + 15 * t4 - 6 * t5,
        t - 6 * t3 + 8 * t4 - 3 * t5,
        0.5 * (t2 - 3 * t3 + 3 * t4 - t5),
        10 * t3 - 15 * t4 + 6 * t5,
        -4 * t3 + 7 * t4 - 3 * t5,
        0.5 * (t3 - 2 * t4 + t5),
    )


def score_grid_loglik(correct, a, b, nodes, log_weights, n_knots: int, lib=pt):
    r"""Log marginal of complete 1PL/2PL patterns through their weighted score (module docstring).

    With every item answered, :math:`\ell_p(\theta) = \theta S_p - C_p - F(\theta)` with
    :math:`S_p = \sum_j y_{pj} a_j`, :math:`C_p = \sum_j y_{pj} a_j b_j` and one
    :math:`F(\theta) = \sum_j \log(1 + e^{a_j(\theta - b_j)})` for all patterns, so
    :math:`\log p(y_p) = g(S_p) - C_p` with
    :math:`g(S) = \log \sum_q w_q e^{\theta_q S - F(\theta_q)}`, a smooth convex function whose
    derivatives are the moments of the conditional of :math:`\theta`: :math:`g' = E(\theta)`,
    :math:`g'' = \mathrm{Var}(\theta)`. ``g``, ``g'``, ``g''`` are computed by quadrature at
    ``n_knots + 1`` equally spaced scores :math:`S_k` on :math:`[0, \sum_j a_j]` (all wrong to
    all right), and :math:`g(S_p)` by quintic Hermite interpolation (:func:`quintic_hermite_basis`).
    The cost is knots x nodes instead of patterns x nodes. ``correct``: (patterns, items).
    """
    eta = a[:, None] * (nodes[None, :] - b[:, None])
    spread = (pt.softplus(eta) if lib is pt else fast_softplus(eta)).sum(axis=0)
    h = a.sum() / n_knots
    table = (h * np.arange(n_knots + 1))[:, None] * nodes[None, :] - spread[None, :] + log_weights[None, :]
    g = marginal_loglik(table, 0.0)  # the weights are in the table already
    weights = lib.exp(table - g[:, None])
    mean = lib.dot(weights, nodes)
    var = lib.dot(weights, nodes**2) - mean**2
    position = lib.dot(correct, a) / h
    cell = lib.clip(lib.floor(position), 0, n_knots - 1)
    cell = pt.cast(cell, "int64") if lib is pt else cell.astype(int)
    basis = quintic_hermite_basis(position - cell)
    interpolated = (
        basis[0] * g[cell] + basis[1] * h * mean[cell] + basis[2] * h**2 * var[cell]
        + basis[3] * g[cell + 1] + basis[4] * h * mean[cell + 1] + basis[5] * h**2 * var[cell + 1]
    )
    return interpolated - lib.dot(correct, a * b)


#: Fewest patterns for the score grid: its larger graph adds seconds of compilation, which a
#: few hundred patterns do not win back (``models/irt.md``).
GRID_MIN_PATTERNS = 500


def uses_score_grid(model: str, answered: np.ndarray) -> bool:
    """Whether the likelihood goes through :func:`score_grid_loglik`: a 1PL/2PL, every pattern
    complete, at least :data:`GRID_MIN_PATTERNS` patterns and four times as many as knots."""
    n_knots = KNOTS_PER_ITEM * answered.shape[1]
    many = len(answered) >= max(GRID_MIN_PATTERNS, 4 * (n_knots + 1))
    return model in ("1pl", "2pl") and bool(answered.all()) and many


def build_marginal_from_table(
    table: pd.DataFrame, model: str, *, n_options: int | None, hierarchical: bool, rule: QuadratureRule | None = None,
    centred: dict | None = None,
) -> pm.Model:
    """The marginal model (no ``theta`` variable). Coords: ``respondent``, ``item``,
    ``pattern``, ``node``; the data are ``pattern_correct``, ``pattern_answered``,
    ``pattern_count`` and ``respondent_pattern``; the likelihood is the Potential
    ``marginal_loglik`` (sum over patterns of count x log marginal). ``centred``: the
    hierarchical priors' forms (default :func:`~bayes_raters.irt.binary.model.centred_items`)."""
    respondents, items = pd.unique(table["respondent"]), pd.unique(table["item"])
    correct, answered, index, counts = answer_patterns(table, respondents, items)
    rule = rule or default_rule(answered)
    coords = {"respondent": respondents, "item": items, "pattern": np.arange(len(counts)), "node": rule.nodes}
    with pm.Model(coords=coords) as irt:
        y = pm.Data("pattern_correct", correct, dims=("pattern", "item"))
        m = pm.Data("pattern_answered", answered, dims=("pattern", "item"))
        n = pm.Data("pattern_count", counts, dims="pattern")
        pm.Data("respondent_pattern", index, dims="respondent")
        nodes = pm.Data("quadrature_nodes", rule.nodes, dims="node")
        centred = centred or centred_items(table, model)
        pivots = item_pivots(table) if hierarchical and centred["b"] else None  # only the pivoted form uses them
        a, b, c, d = item_priors(model, option_count(n_options), len(items), hierarchical, centred, pivots)
        logistic = model in ("1pl", "2pl")
        d_vec = d if model == "4pl" else None  # None: no upper asymptote (asymptote_logs)
        if uses_score_grid(model, answered):
            per_pattern = score_grid_loglik(y, a, b, nodes, rule.log_weights, KNOTS_PER_ITEM * len(items))
        else:
            table_q = node_loglik(y, m, a, b, c, d_vec, nodes, logistic=logistic, complete=bool(answered.all()))
            per_pattern = marginal_loglik(table_q, rule.log_weights)
        pm.Potential("marginal_loglik", (n * per_pattern).sum())
    return irt


def default_rule(answered: np.ndarray) -> QuadratureRule:
    """The quadrature rule for these patterns: :func:`rule_for` the most answers any pattern has."""
    return rule_for(int(answered.sum(axis=1).max()))


#: Largest accepted quadrature error of a unit's log marginal (:func:`quadrature_error`).
QUADRATURE_TOLERANCE = 1e-6


def finer_rule(rule: QuadratureRule) -> QuadratureRule:
    """The trapezoid rule with half the spacing on the same interval."""
    return trapezoid_rule(2 * len(rule) - 1, float(rule.nodes[-1]))


def quadrature_error(posterior: xr.Dataset, irt: pm.Model, model: str, rule: QuadratureRule, n_draws: int = 10) -> float:
    r"""Largest error of a pattern's log marginal over ``n_draws`` posterior draws (evenly spaced):
    the rule against the rule with half the spacing (the trapezoid error falls geometrically with
    the spacing, so the difference estimates the coarser rule's error), plus, where the model
    uses it, the weighted-score grid against the direct sum. ``rule_for`` assumes
    discriminations near 1; steep items (a above about 3) sharpen the conditional of
    :math:`\theta` beyond what its spacing resolves (100 items 2.5 times steeper than
    LogNormal(0, 0.5): error 4.5e-3 per unit), and this check catches it."""
    correct, answered = (irt[name].get_value() for name in ("pattern_correct", "pattern_answered"))
    a, b, c, d = _item_draws(posterior, list(irt.coords["item"]))
    logistic, complete, fine = model in ("1pl", "2pl"), bool(answered.all()), finer_rule(rule)
    grid = uses_score_grid(model, answered)
    worst = 0.0
    for s in np.unique(np.linspace(0, len(a) - 1, n_draws).astype(int)):
        def direct(r, s=s):
            table = node_loglik(correct, answered, a[s], b[s], c[s], d[s], r.nodes, logistic=logistic, complete=complete, lib=np)
            return marginal_loglik(table, r.log_weights)
        coarse = direct(rule)
        worst = max(worst, float(np.abs(coarse - direct(fine)).max()))
        if grid:
            knots = KNOTS_PER_ITEM * correct.shape[1]
            on_grid = score_grid_loglik(correct, a[s], b[s], rule.nodes, rule.log_weights, knots, lib=np)
            worst = max(worst, float(np.abs(on_grid - coarse).max()))
    return worst


def _item_draws(posterior: xr.Dataset, items) -> tuple[np.ndarray, ...]:
    """a, b, c, d as (samples, items) arrays in ``items`` order; d a (samples,) array of None
    without an upper asymptote (what :func:`asymptote_logs` takes for "no d")."""
    params = item_parameters(posterior.stack(sample=("chain", "draw")))
    a, b, c, d = (params[k].sel(item=items).transpose("sample", "item").values for k in PARAMETERS)
    return a, b, c, (d if "d" in posterior else np.full(len(a), None))


#: Elements (draws x respondents x items) of one block of the ability draws' exact log-likelihood.
BLOCK_ELEMENTS = 2**19


def draw_block(respondents: int, items: int) -> int:
    """Posterior draws per block of :func:`conditional_abilities`: as many as keep a block's
    (draws, respondents, items) arrays under :data:`BLOCK_ELEMENTS` (4 MB), at least one."""
    return max(1, BLOCK_ELEMENTS // max(1, respondents * items))


def conditional_abilities(
    posterior: xr.Dataset, irt: pm.Model, model: str, rule: QuadratureRule | None = None, random_seed=None, mh_steps: int = 2,
    cores: int | None = None,
) -> tuple[xr.DataArray, xr.DataArray, float]:
    """Draw every respondent's theta from its exact conditional, once per posterior draw.
    ``rule`` must be the one the model was built with (default: the builder's default).
    Chains run in parallel threads (``cores``; None: one per CPU), each with its own generator
    spawned from ``random_seed``, so the draws do not depend on the thread schedule (NumPy
    releases the GIL in the array work).

    Draws are taken in blocks of :func:`draw_block` posterior draws at a time (one interpolant
    and one exact log-likelihood pass per block): one draw at a time, the NumPy calls are too
    small for threads to share (NumPy's ufuncs hold the GIL below a few thousand elements), and
    two threads were no faster than one (``models/irt.md``).

    Returns ``(theta, log_lik, acceptance)``: theta and the marginal log-likelihood of each
    respondent's answers, both (chain, draw, respondent), and the mean MH acceptance rate."""
    data = {name: irt[name].get_value() for name in ("pattern_correct", "pattern_answered", "respondent_pattern")}
    correct, answered, index = data["pattern_correct"], data["pattern_answered"], data["respondent_pattern"]
    items, respondents = list(irt.coords["item"]), list(irt.coords["respondent"])
    rule = rule or default_rule(answered)
    logistic = model in ("1pl", "2pl")
    complete = bool(answered.all())
    rows_y, rows_m = correct[index], answered[index]
    chains = posterior.sizes["chain"]

    block = draw_block(len(index), len(items))

    def one_chain(chain: int, rng: np.random.Generator):
        a, b, c, d = _item_draws(posterior.isel(chain=[chain]), items)
        theta, log_lik, accepted = np.empty((len(a), len(index))), np.empty((len(a), len(index))), []
        for start in range(0, len(a), block):
            s = slice(start, min(start + block, len(a)))
            n = s.stop - s.start
            d_s = None if d.dtype == object else d[s]
            tables = np.stack([node_loglik(correct, answered, a[t], b[t], c[t], None if d_s is None else d[t], rule.nodes,
                                           logistic=logistic, complete=complete, lib=np) for t in range(s.start, s.stop)])
            log_lik[s] = marginal_loglik(tables, rule.log_weights)[:, index]
            linear = (a[s] @ rows_y.T, (a[s] * b[s]) @ rows_y.T) if logistic else None

            def exact(z, s=s, d_s=d_s, linear=linear, n=n):
                z = z.reshape(n, len(index))
                return point_loglik(rows_y, rows_m, a[s], b[s], c[s], d_s, z, logistic=logistic, linear=linear).ravel()

            units = (index[None, :] + len(correct) * np.arange(n)[:, None]).ravel()
            z, rate = draw_conditional(tables.reshape(n * len(correct), -1), exact, rule, rng, unit_index=units, mh_steps=mh_steps)
            theta[s] = z.reshape(n, len(index))
            accepted.extend([rate] * n)
        return theta, log_lik, accepted

    per_chain = map_chains(one_chain, chains, random_seed, cores)
    labels = respondents

    def as_array(position: int, name: str) -> xr.DataArray:
        return chain_array([result[position] for result in per_chain], posterior, "respondent", labels, name)

    acceptance = float(np.mean([rate for result in per_chain for rate in result[2]]))
    return as_array(0, "theta"), as_array(1, "answers"), acceptance
