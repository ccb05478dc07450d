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
product) plus patterns x nodes, instead of patterns x items x nodes.

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

from bayes_raters.irt.diagnostics import PARAMETERS, item_parameters
from bayes_raters.irt.model import centred_items, item_priors, option_count
from bayes_raters.quadrature import QuadratureRule, draw_conditional, marginal_loglik, rule_for


def answer_patterns(table: pd.DataFrame, respondents, items) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Distinct answer patterns of a validated table.

    Returns ``(correct, answered, index, counts)``: (patterns, items) 0/1 matrices of right
    answers (0 where unanswered) and of answered items, each respondent's pattern (in the order
    of ``respondents``), and the number of respondents per pattern."""
    wide = table.pivot(index="respondent", columns="item", values="correct").reindex(index=respondents, columns=items)
    coded = np.nan_to_num(wide.to_numpy(float), nan=-1.0)
    patterns, index, counts = np.unique(coded, axis=0, return_inverse=True, return_counts=True)
    return (patterns == 1).astype(float), (patterns >= 0).astype(float), index.ravel(), counts.astype(float)


def _sigmoid_logs(eta, c, d, lib):
    """log P and log(1 - P) of P = c + (d - c) sigmoid(eta)."""
    if lib is np:
        sigmoid = 1.0 / (1.0 + np.exp(-eta))
        return np.log(c + (d - c) * sigmoid), np.log((1.0 - c) - (d - c) * sigmoid)
    sigmoid = pt.sigmoid(eta)
    return pt.log(c + (d - c) * sigmoid), pt.log((1.0 - c) - (d - c) * sigmoid)


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
    log_p, log_q = _sigmoid_logs(eta, c[:, None], d[:, None], lib)
    wrong = (log_q.sum(axis=0)[None, :] if complete else lib.dot(answered, log_q)) - lib.dot(correct, log_q)
    return lib.dot(correct, log_p) + wrong


def point_loglik(correct, answered, a, b, c, d, theta, *, logistic: bool) -> np.ndarray:
    """Log-likelihood of each row's answers at its own ability ``theta`` (NumPy; rows, items)."""
    eta = a * (theta[:, None] - b)
    if logistic:
        return (correct * eta - answered * np.logaddexp(0.0, eta)).sum(axis=1)
    log_p, log_q = _sigmoid_logs(eta, c, d, np)
    return (correct * log_p + (answered - correct) * log_q).sum(axis=1)


def build_marginal_from_table(
    table: pd.DataFrame, model: str, *, n_options: int | None, hierarchical: bool, rule: QuadratureRule | None = None
) -> pm.Model:
    """The marginal model (no ``theta`` variable). Coords: ``respondent``, ``item``,
    ``pattern``, ``node``; the data are ``pattern_correct``, ``pattern_answered``,
    ``pattern_count`` and ``respondent_pattern``; the likelihood is the Potential
    ``marginal_loglik`` (sum over patterns of count x log marginal)."""
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
        a, b, c, d = item_priors(model, option_count(n_options), len(items), hierarchical, centred_items(table))
        logistic = model in ("1pl", "2pl")
        d_vec = d if model == "4pl" else pt.ones(len(items))  # indexed by item in the 3PL's form
        table_q = node_loglik(y, m, a, b, c, d_vec, nodes, logistic=logistic, complete=bool(answered.all()))
        pm.Potential("marginal_loglik", (n * marginal_loglik(table_q, rule.log_weights)).sum())
    return irt


def default_rule(answered: np.ndarray) -> QuadratureRule:
    """The quadrature rule for these patterns: :func:`rule_for` the most answers any pattern has."""
    return rule_for(int(answered.sum(axis=1).max()))


def _item_draws(posterior: xr.Dataset, items) -> tuple[np.ndarray, ...]:
    """a, b, c, d as (samples, items) arrays in ``items`` order."""
    params = item_parameters(posterior.stack(sample=("chain", "draw")))
    return tuple(params[k].sel(item=items).transpose("sample", "item").values for k in PARAMETERS)


def conditional_abilities(
    posterior: xr.Dataset, irt: pm.Model, model: str, rule: QuadratureRule | None = None, random_seed=None, mh_steps: int = 2
) -> tuple[xr.DataArray, xr.DataArray, float]:
    """Draw every respondent's theta from its exact conditional, once per posterior draw.
    ``rule`` must be the one the model was built with (default: the builder's default).

    Returns ``(theta, log_lik, acceptance)``: theta and the marginal log-likelihood of each
    respondent's answers, both (chain, draw, respondent), and the mean MH acceptance rate."""
    data = {name: irt[name].get_value() for name in ("pattern_correct", "pattern_answered", "respondent_pattern")}
    correct, answered, index = data["pattern_correct"], data["pattern_answered"], data["respondent_pattern"]
    items, respondents = list(irt.coords["item"]), list(irt.coords["respondent"])
    a, b, c, d = _item_draws(posterior, items)
    rule = rule or default_rule(answered)
    logistic = model in ("1pl", "2pl")
    complete = bool(answered.all())
    rng = np.random.default_rng(random_seed)
    rows_y, rows_m = correct[index], answered[index]
    theta = np.empty((len(a), len(index)))
    log_lik = np.empty_like(theta)
    accepted = []
    for s in range(len(a)):
        table = node_loglik(correct, answered, a[s], b[s], c[s], d[s], rule.nodes, logistic=logistic, complete=complete, lib=np)
        log_lik[s] = marginal_loglik(table, rule.log_weights)[index]

        def exact(z, s=s):
            return point_loglik(rows_y, rows_m, a[s], b[s], c[s], d[s], z, logistic=logistic)

        theta[s], rate = draw_conditional(table, exact, rule, rng, unit_index=index, mh_steps=mh_steps)
        accepted.append(rate)
    shape = (posterior.sizes["chain"], posterior.sizes["draw"], len(index))
    coords = {"chain": posterior["chain"].values, "draw": posterior["draw"].values, "respondent": respondents}
    as_array = lambda values, name: xr.DataArray(values.reshape(shape), dims=("chain", "draw", "respondent"), coords=coords, name=name)  # noqa: E731
    return as_array(theta, "theta"), as_array(log_lik, "answers"), float(np.mean(accepted))
