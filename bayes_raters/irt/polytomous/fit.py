r"""Fitting the polytomous models (:mod:`bayes_raters.irt.polytomous.model`): NUTS over the item
parameters, then every respondent's :math:`\theta` drawn from its exact conditional given each
posterior draw, by rejection sampling (:func:`bayes_raters.quadrature.draw_log_concave`: both
models' conditionals are log-concave); the tables live on
:class:`~bayes_raters.irt.polytomous.result.PolytomousResult`.

The pointwise log-likelihood is each respondent's marginal
:math:`\log \int \prod_j P(x_{ij} \mid \theta) \varphi(\theta)\,d\theta`, so ``az.loo`` leaves a
respondent out, as for binary items under the marginal method.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.chains import chain_array, map_chains
from bayes_raters.errors import InvalidInputError
from bayes_raters.fit_signature import Inference, NutsSampler, sampler_block
from bayes_raters.inference import sample_model
from bayes_raters.inference_record import EXACT_REJECTION_THETA, InferenceRecord
from bayes_raters.irt.polytomous.answered import answer_plan, answered_logp_fn, grm_unit_draws
from bayes_raters.irt.polytomous.model import (
    POLYTOMOUS_MODELS,
    CategoryLayout,
    PolytomousSpec,
    build_polytomous_model,
    category_dlogp,
    category_logp,
)
from bayes_raters.irt.polytomous.result import PolytomousResult
from bayes_raters.irt.slopes import rest_correlations, warn_contradicted_slopes
from bayes_raters.quadrature import ConcaveScratch, draw_log_concave
from bayes_raters.sampling import derived_rng


def answer_row_index(onehot: np.ndarray, layout: CategoryLayout) -> np.ndarray:
    """(patterns, items) category row of each answer of a one-hot pattern matrix, -1 where unanswered."""
    out = np.full((len(onehot), layout.n_items), -1)
    pattern, row = np.nonzero(onehot)
    out[pattern, layout.cat_item[row]] = row
    return out


#: Posterior draws whose GRM category tables one NumPy call forms (:func:`category_tables`).
TABLE_BATCH = 50


def category_tables(model: str, a: np.ndarray, b: np.ndarray, nodes: np.ndarray, layout: CategoryLayout):
    """``(category_logp, category_dlogp)`` at the nodes, (category rows, nodes) each, for every
    posterior draw of ``a`` (draws, items) and ``b`` (draws, thresholds) in turn. The GRM's come
    :data:`TABLE_BATCH` draws at a time, as the tables of one layout of that many copies of the
    items (the same numbers): one call per draw was many small NumPy calls, which the chains'
    threads wait on each other for (``models/irt_polytomous.md``). The GPCM's step sums would
    grow with the square of the copies, so its tables come one draw at a time."""
    size = min(TABLE_BATCH, len(a)) if model == "grm" else 1
    full = layout if size == 1 else CategoryLayout(np.tile(layout.n_categories, size))
    for start in range(0, len(a), size):
        count = min(size, len(a) - start)
        copies = full if count == size else CategoryLayout(np.tile(layout.n_categories, count))
        shape = (count, len(layout.cat_item), len(nodes))
        logp = category_logp(model, a[start:start + count].ravel(), b[start:start + count].ravel(), nodes, copies, lib=np)
        dlogp = category_dlogp(model, a[start:start + count].ravel(), b[start:start + count].ravel(), nodes, copies)
        yield from zip(logp.reshape(shape), dlogp.reshape(shape))


def conditional_thetas(posterior: xr.Dataset, irt, model: str, random_seed=None, mh_steps: int = 2, cores: int | None = None):
    """theta per (chain, draw, respondent) from its exact conditional, the marginal
    log-likelihood of each respondent, and the mean acceptance rate of the rejection sampler
    (``mh_steps``: of the MH fallback for units it leaves unaccepted).

    Chains are drawn in parallel threads (``cores``; None: one per CPU, :func:`~bayes_raters.sampling.resolve_cores`),
    each with its own generator spawned from ``random_seed``, so the draws do not depend on
    the thread schedule. NumPy releases the GIL in the array work that dominates here, so two
    threads nearly halve the time (``models/irt_polytomous.md``)."""
    info = irt.polytomous
    layout, rule = info["layout"], info["rule"]
    onehot, index = irt["pattern_onehot"].get_value(), irt["respondent_pattern"].get_value()
    answer_rows = answer_row_index(onehot, layout)[index]
    plan = answer_plan(answer_rows, layout)
    blocked = info["blocked"]
    chains = posterior.sizes["chain"]

    def one_chain(c: int, rng: np.random.Generator):
        draws = posterior.isel(chain=c)
        a, b = draws["a"].transpose("draw", "item").values, draws["b"].transpose("draw", "threshold").values
        theta, log_lik, accepted = np.empty((len(a), len(index))), np.empty((len(a), len(index))), []
        scratch = ConcaveScratch(len(onehot), len(rule.nodes))
        for s, (logp, dlogp) in enumerate(category_tables(model, a, b, rule.nodes, layout)):
            table = blocked.product(logp, out=scratch.loglik)
            exact = answered_logp_fn(model, a[s], b[s], answer_rows, layout, plan)
            gradient = blocked.product(dlogp, out=scratch.gradient)
            fused = grm_unit_draws(a[s], b[s], layout, plan) if model == "grm" else None
            theta[s], rate, log_marginal = draw_log_concave(table, gradient, exact, rule, rng, unit_index=index, mh_steps=mh_steps,
                                                            scratch=scratch, unit_draws=fused)
            log_lik[s] = log_marginal[index]
            accepted.append(rate)
        return theta, log_lik, accepted

    per_chain = map_chains(one_chain, chains, random_seed, cores)
    labels = list(irt.coords["respondent"])

    def as_array(position: int, name: str) -> xr.DataArray:
        return chain_array([result[position] for result in per_chain], posterior, "respondent", labels, name)

    acceptance = float(np.mean([rate for result in per_chain for rate in result[2]]))
    return as_array(0, "theta"), as_array(1, "ratings"), acceptance


@sampler_block(reasons={
    "tune": "500 here: nutpie's mass-matrix adaptation needs far fewer tuning steps than PyMC's NUTS "
            "(``benchmarks/bench_irt_polytomous.py``).",
    "nuts_sampler": 'None is ``"nutpie"`` here: several times the ESS per second of PyMC\'s NUTS on the GRM (``models/irt_polytomous.md``).',
    "target_accept": "None is 0.9.",
})
def fit_polytomous(
    data: pd.DataFrame,
    model: Literal["grm", "gpcm"] = "grm",
    *,
    inference: Inference = "auto",
    respondent: str = "respondent",
    item: str = "item",
    score: str = "score",
    draws: int = 1000,
    tune: int = 500,
    chains: int = 2,
    cores: int | None = None,
    random_seed: int | np.random.Generator | None = None,
    nuts_sampler: NutsSampler | None = None,
    target_accept: float | None = None,
    progressbar: bool | None = None,
) -> PolytomousResult:
    r"""Fit the GRM (``model="grm"``) or GPCM (``"gpcm"``) to long-format ordinal ratings
    ``(respondent, item, score)``, abilities integrated out; see the module docstrings.

    Defaults chosen by measurement (``benchmarks/bench_irt_polytomous.py``, ``models/irt_polytomous.md``):
    nutpie with its chains in parallel (``cores=None``: one per usable CPU, resolved by
    :func:`~bayes_raters.sampling.resolve_cores`; the theta draws afterwards also run one thread
    per chain) and 500 tuning steps, which its mass-matrix adaptation needs far fewer of than
    PyMC's NUTS. Items whose data point
    to a negative or near-zero slope raise a :class:`~bayes_raters.errors.SlopeWarning`.

    ``inference="auto"`` (default) first tries importance-sampled Laplace draws
    (:mod:`bayes_raters.laplace`) and keeps them when they pass every check (Pareto :math:`\hat k`, R-hat, ESS), else samples
    with NUTS; ``"nuts"`` and ``"laplace"`` force one (``draws`` per chain either way; the Laplace
    path resamples them from twice as many proposals): the default because it is a fraction of
    NUTS's time with posterior means within a tenth of NUTS's posterior SD
    (``models/irt_polytomous.md``; ``benchmarks/bench_irt_polytomous.py`` measures it).

    Parameters
    ----------
    data : pandas.DataFrame
        Long ordinal ratings, one row per (respondent, item).
    model : {"grm", "gpcm"}
        Graded response or generalised partial credit model.
    inference : {"auto", "nuts", "laplace"}
        How the item parameters are drawn (see above).
    respondent, item, score : str
        Column names in ``data``.
    {sampler_block}

    Returns
    -------
    PolytomousResult
        The posterior, item, category and respondent tables and convergence.

    Examples
    --------
    >>> from bayes_raters.irt import fit_polytomous, simulate_ratings
    >>> ratings, _ = simulate_ratings(300, 5, 4, random_seed=4)
    >>> result = fit_polytomous(ratings, "grm", random_seed=4, progressbar=False)
    >>> result.convergence.converged, result.item_table().shape[0]
    (True, 5)
    """
    if model not in POLYTOMOUS_MODELS:
        raise InvalidInputError(f"model must be one of {POLYTOMOUS_MODELS}, got {model!r}.")
    nuts_sampler = "nutpie" if nuts_sampler is None else nuts_sampler
    target_accept = 0.9 if target_accept is None else target_accept
    irt = build_polytomous_model(data, model, respondent=respondent, item=item, score=score)
    warn_contradicted_slopes(rest_correlations(irt.polytomous["table"], "category"), f"IRT {model.upper()}")
    idata, report = sample_model(
        irt, draws=draws, tune=tune, chains=chains, cores=cores, random_seed=random_seed, nuts_sampler=nuts_sampler,
        target_accept=target_accept, progressbar=progressbar, what=f"IRT {model.upper()} (marginal)",
        var_names=[v for v in ("a", "b", "d", "log_a") if v in irt.named_vars],
        inference=inference,
    )
    posterior = idata["posterior"].to_dataset()
    theta, log_lik, acceptance = conditional_thetas(posterior, irt, model, random_seed=derived_rng(random_seed, "abilities"), cores=cores)
    posterior = posterior.assign(theta=theta)
    posterior.attrs.update(idata["posterior"].attrs)
    table = irt.polytomous["table"]
    tree = xr.DataTree.from_dict({
        "posterior": posterior, "sample_stats": idata["sample_stats"].to_dataset(),
        "log_likelihood": log_lik.to_dataset(),
        "observed_data": xr.Dataset({"category": ("rating", table["category"].to_numpy())}),
        "constant_data": xr.Dataset({c: ("rating", table[c].to_numpy()) for c in ("respondent", "item")}),
    })
    InferenceRecord.of(idata).with_exact_abilities(acceptance, len(irt.polytomous["rule"]), how=EXACT_REJECTION_THETA).write(tree)
    return PolytomousResult(idata=tree, spec=PolytomousSpec(model=model), table=table, categories=irt.polytomous["categories"], report=report)

