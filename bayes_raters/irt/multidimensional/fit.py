r"""Fit the multidimensional IRT model (:mod:`bayes_raters.irt.multidimensional.model`), draw the abilities,
and hand them to :class:`~bayes_raters.irt.multidimensional.result.MultidimensionalIRTResult` (its tables).

After NUTS has sampled the item parameters, each respondent's :math:`\theta_i \in
\mathbb{R}^K` is drawn for every posterior draw from its exact conditional: the quadrature
gives the conditional mean :math:`m_i` and covariance :math:`S_i` on the nodes; a draw from
:math:`N(m_i, 1.2^2 S_i)` is corrected by ``mh_steps`` independence Metropolis-Hastings
steps with the exact likelihood times the prior (the mean acceptance rate is stored in
``posterior.attrs``). The pointwise log-likelihood is each respondent's marginal
:math:`\log p(y_i \mid \text{items})`, so ``az.loo`` / ``az.compare`` leave out respondents and
compare with the unidimensional marginal fits directly.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.chains import map_chains
from bayes_raters.errors import InvalidInputError, QuadratureWarning
from bayes_raters.inference import sample_model
from bayes_raters.inference_record import InferenceRecord
from bayes_raters.irt.multidimensional.factorised import AxisRule, weighted_moments
from bayes_raters.irt.multidimensional.model import (
    RADIUS,
    MultidimensionalSpec,
    NodeTable,
    ball_rule,
    default_spacing,
    normalise_rows,
)
from bayes_raters.irt.multidimensional.result import MultidimensionalIRTResult
from bayes_raters.irt.slopes import dimension_rest_correlations, warn_contradicted_slopes
from bayes_raters.quadrature import fast_softplus
from bayes_raters.sampling import derived_rng, sample_refined

#: Largest accepted quadrature error of a respondent's log marginal (rule against half the
#: spacing). Looser than the unidimensional engine's 1e-6 because each refinement multiplies
#: the nodes by 2^(K/2): 1e-3 per respondent moves an ELPD over 1,000 respondents by at most 1,
#: a small part of the standard error of any difference worth reading (5-30 in our checks).
MIRT_TOLERANCE = 1e-3
#: Each refinement multiplies the spacing by this: the error falls like exp(-c / h^2), so its
#: logarithm doubles (1e-3 becomes about 1e-6).
REFINE = 0.7


def item_arrays(posterior: xr.Dataset) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """a (samples, items, K), d (samples, items), c (samples, items) or None, and the Cholesky
    factor of the ability correlation (samples, K, K) or None, draws flattened over chains."""
    stacked = posterior.stack(sample=("chain", "draw"))
    a = stacked["a"].transpose("sample", "item", "dimension").values
    d = stacked["d"].transpose("sample", "item").values
    c = stacked["c"].transpose("sample", "item").values if "c" in stacked else None
    chol = stacked["corr_cholesky"].transpose("sample", "dimension", "dimension_other").values if "corr_cholesky" in stacked else None
    return a, d, c, chol


class BallRule:
    """The general rule (:func:`~bayes_raters.irt.multidimensional.model.ball_rule` nodes, every item at
    every node: :class:`~bayes_raters.irt.multidimensional.model.NodeTable`) with the interface of
    :class:`~bayes_raters.irt.multidimensional.factorised.AxisRule`."""

    def __init__(self, correct: np.ndarray, answered: np.ndarray, n_dimensions: int, spacing: float):
        nodes, log_weights = ball_rule(n_dimensions, spacing)
        self.table = NodeTable(correct, answered, nodes, log_weights)
        self.n_nodes = len(nodes)

    def numpy_log_marginal(self, a, d, c=None, chol=None) -> np.ndarray:
        """Each pattern's log marginal (patterns,)."""
        return normalise_rows(self.table.fill(a, d, c, chol)[0])

    def moments(self, a, d, c=None, chol=None):
        """Each pattern's log marginal, and the mean and covariance of its abilities' conditional."""
        weights, at_nodes = self.table.fill(a, d, c, chol)
        log_p = normalise_rows(weights)
        mean, cov = weighted_moments(weights, at_nodes)
        return log_p, mean, cov


def rule_for(mirt, spacing: float):
    """The rule a model built by :func:`~bayes_raters.irt.multidimensional.model.build_mirt_model` integrates
    with at ``spacing``: factorised over the abilities for the confirmatory model
    (:class:`~bayes_raters.irt.multidimensional.factorised.AxisRule`), the ball rule otherwise."""
    correct, answered = (mirt[name].get_value() for name in ("pattern_correct", "pattern_answered"))
    k = len(mirt.coords["dimension"])
    if mirt.mirt["item_dimension"] is None:
        return BallRule(correct, answered, k, spacing)
    return AxisRule(correct, answered, mirt.mirt["item_dimension"], k, spacing, RADIUS[k])


def quadrature_error(posterior: xr.Dataset, mirt, spacing: float, n_draws: int = 6) -> float:
    """Largest difference of a pattern's log marginal between the rule and the rule with half
    the spacing, over ``n_draws`` evenly spaced posterior draws (estimates the rule's error)."""
    a, d, c, chol = item_arrays(posterior)
    rules = [rule_for(mirt, h) for h in (spacing, spacing / 2)]
    worst = 0.0
    for s in np.unique(np.linspace(0, len(a) - 1, n_draws).astype(int)):
        cs = None if c is None else c[s]
        ch = None if chol is None else chol[s]
        values = [rule.numpy_log_marginal(a[s], d[s], cs, ch) for rule in rules]
        worst = max(worst, float(np.abs(values[0] - values[1]).max()))
    return worst


def draw_abilities(posterior: xr.Dataset, mirt, spacing: float, random_seed, mh_steps: int = 3, cores: int | None = None):
    """theta (chain, draw, respondent, dimension), the marginal log-likelihood per respondent
    (chain, draw, respondent) and the mean MH acceptance (module docstring). Chains in threads
    (:func:`bayes_raters.chains.map_chains`; the work is NumPy products and exponentials on a
    rule's products and exponentials, which release the GIL; :func:`rule_for`)."""
    correct, answered, index = (mirt[name].get_value() for name in ("pattern_correct", "pattern_answered", "respondent_pattern"))
    a, d, c, chol = item_arrays(posterior)
    k = a.shape[-1]
    chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
    rule = rule_for(mirt, spacing)
    rows_y, rows_m = correct[index], answered[index]

    def one_chain(chain, rng):
        theta, log_lik, rates = np.empty((draws, len(index), k)), np.empty((draws, len(index))), []
        for i, s in enumerate(range(chain * draws, (chain + 1) * draws)):
            cs = None if c is None else c[s]
            ch = np.eye(k) if chol is None else chol[s]
            log_p, mean, cov = rule.moments(a[s], d[s], cs, None if chol is None else ch)
            log_lik[i] = log_p[index]
            theta[i], rate = _independence_mh(mean[index], 1.44 * cov[index], rows_y, rows_m, a[s], d[s], cs, ch @ ch.T, rng, mh_steps)
            rates.append(rate)
        return theta, log_lik, float(np.mean(rates))

    results = map_chains(one_chain, chains, random_seed, cores)
    coords = {"chain": posterior["chain"].values, "draw": posterior["draw"].values, "respondent": list(mirt.coords["respondent"]),
              "dimension": list(mirt.coords["dimension"])}
    theta = xr.DataArray(np.stack([r[0] for r in results]), dims=("chain", "draw", "respondent", "dimension"), coords=coords, name="theta")
    log_lik = xr.DataArray(np.stack([r[1] for r in results]), dims=("chain", "draw", "respondent"),
                           coords={key: coords[key] for key in ("chain", "draw", "respondent")}, name="answers")
    return theta, log_lik, float(np.mean([r[2] for r in results]))


def _independence_mh(mean, cov, y, m, a, d, c, corr, rng, steps):
    """Independence MH from N(mean, cov) per row to the exact conditional of theta. The
    proposal's log density is that of its standard-normal draw (:math:`x - m = Lz`)."""
    chol = np.linalg.cholesky(cov)
    precision = np.linalg.inv(corr)
    log_det = np.log(np.diagonal(chol, axis1=1, axis2=2)).sum(axis=1)

    def propose():
        z = rng.standard_normal(mean.shape)
        return mean + np.einsum("pkl,pl->pk", chol, z), -0.5 * (z * z).sum(axis=1) - log_det

    def target(x):
        eta = x @ a.T + d
        if c is None:
            like = (y * eta).sum(axis=1) - (m * fast_softplus(eta)).sum(axis=1)  # eta overwritten
        else:
            p = c + (1 - c) / (1 + np.exp(-eta))
            like = (y * np.log(p) + (m - y) * np.log1p(-p)).sum(axis=1)
        return like - 0.5 * np.einsum("pk,kl,pl->p", x, precision, x)

    current, current_q = propose()
    current_p = target(current)
    rates = []
    for _ in range(steps):
        new, new_q = propose()
        new_p = target(new)
        accept = np.log(rng.random(len(mean))) < (new_p - current_p) - (new_q - current_q)
        current[accept], current_p[accept], current_q[accept] = new[accept], new_p[accept], new_q[accept]
        rates.append(accept.mean())
    return current, float(np.mean(rates))


def sample_mirt(table, model, structure: dict, settings: dict, refinements: int = 1):
    """Sample the marginal model; refine the node spacing (times :data:`REFINE`) when the quadrature error
    exceeds :data:`MIRT_TOLERANCE`, up to ``refinements`` times
    (:func:`bayes_raters.sampling.sample_refined`: only the kept fit's warnings reach the user), then warn. Returns
    ``(model, idata, report, spacing, error)``."""
    from bayes_raters.irt.multidimensional.model import build_mirt_model

    def build(spacing):
        return build_mirt_model(table, model, dims=structure["dims"], dimensions=structure["dimensions"],
                                anchors=structure["anchors"], n_options=structure["n_options"], spacing=spacing), spacing

    def sample(mirt):
        checked = [v.name for v in mirt.free_RVs if v.name != "corr_cholesky"] + (["corr_pair"] if "corr_pair" in mirt else [])
        return sample_model(mirt, what=f"IRT {model} ({structure['k']} dimensions, marginal)",
                            check_var_names=checked, initvals=mirt.mirt["initvals"], **settings)

    mirt, idata, report, spacing, error = sample_refined(
        build, sample, lambda idata, mirt, spacing: quadrature_error(idata["posterior"].to_dataset(), mirt, spacing),
        lambda spacing: spacing * REFINE, tolerance=MIRT_TOLERANCE, refinements=refinements,
        start=default_spacing(table["item"].nunique(), structure["k"]),
    )
    if error > MIRT_TOLERANCE:
        warnings.warn(f"the quadrature over the abilities is off by {error:.1e} per respondent with {len(mirt.coords['node'])} "
                      f"nodes (spacing {spacing:.3g}, already refined); the posterior may be slightly off. A finer rule: "
                      "bayes_raters.irt.multidim.build_mirt_model(answers, model, dims=..., spacing=<smaller>) sampled with "
                      "bayes_raters.inference.sample_model.", QuadratureWarning, stacklevel=3)
    return mirt, idata, report, spacing, error


def fit_mirt(table: pd.DataFrame, model: str, *, dims, dimensions, anchors, n_options, settings: dict, random_seed) -> MultidimensionalIRTResult:
    """Fit the multidimensional model to a validated answers table (called by
    :func:`bayes_raters.irt.fit_irt` with ``dims=`` or ``dimensions=``)."""
    if model not in ("2pl", "3pl"):
        raise InvalidInputError(f"multidimensional models are model='2pl' or '3pl', got {model!r}.")
    from bayes_raters.irt.multidimensional.model import resolve_structure, wide_correct

    respondents, items = pd.unique(table["respondent"]), pd.unique(table["item"])
    k = len(resolve_structure(items, dims, dimensions, anchors, wide_correct(table, respondents, items))[0])  # checked before fitting
    structure = {"dims": dims, "dimensions": dimensions, "anchors": anchors, "n_options": n_options, "k": k}
    warn_contradicted_slopes(dimension_rest_correlations(table, "correct", dimensions), f"IRT {model} ({k} dimensions)", subject="dimension")
    mirt, idata, report, spacing, error = sample_mirt(table, model, structure, settings)
    posterior = idata["posterior"].to_dataset()

    theta, log_lik, acceptance = draw_abilities(posterior, mirt, spacing, derived_rng(random_seed, "abilities"), cores=settings.get("cores"))
    posterior = posterior.assign(theta=theta)
    info = mirt.mirt
    posterior.attrs.update(idata["posterior"].attrs)
    tree = xr.DataTree.from_dict({
        "posterior": posterior, "sample_stats": idata["sample_stats"].to_dataset(), "log_likelihood": log_lik.to_dataset(),
        "observed_data": xr.Dataset({"correct": ("answer", table["correct"].to_numpy())}),
        "constant_data": xr.Dataset({c: ("answer", table[c].to_numpy()) for c in ("respondent", "item")}),
    })
    item_dimension = None if info["item_dimension"] is None else dict(zip(mirt.coords["item"], [info["dimensions"][i] for i in info["item_dimension"]]))
    InferenceRecord.of(idata).with_exact_abilities(acceptance, len(mirt.coords["node"]), quadrature_spacing=float(spacing),
                                                   quadrature_error=float(error)).write(tree)
    anchors = None if info["anchors"] is None else list(info["anchors"])
    spec = MultidimensionalSpec(model=model, dimensions=list(info["dimensions"]), anchors=anchors,
                                item_dimension=item_dimension, n_options=n_options)
    return MultidimensionalIRTResult(idata=tree, spec=spec, table=table, report=report)
