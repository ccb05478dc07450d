r"""Short forms from a calibrated item bank: choose k items that measure a target population
best, with the item parameters' posterior uncertainty carried through.

Criterion. For posterior draw :math:`s`, item :math:`j` contributes the expected information
:math:`\bar I_{sj} = \int I_j(\theta; \text{params}_s)\,w(\theta)\,d\theta` over the target
density :math:`w` (the population :math:`N(0, 1)`, or uniform on a ``theta_range``); the
selection criterion is its posterior mean :math:`E_s \bar I_{sj}`, not the information at the
posterior-mean parameters (information is convex in the discrimination, so plugging in point
estimates overrates uncertain steep items). Test information is additive, so the k items with
the largest expected information maximise the criterion (no search needed).

Reliability of a short form for respondents :math:`\theta \sim N(0, 1)`: the squared
correlation between the expected a posteriori score and the true ability,
:math:`\rho = \operatorname{corr}(\hat\theta_{EAP}, \theta)^2`, computed for each of
``n_draws`` posterior draws by Monte Carlo (``n_respondents`` simulated respondents answering
with that draw's parameters and scored with the posterior-mean parameters, as a user scores
them; common random numbers across draws), so its posterior mean and interval carry the
parameter uncertainty and the cost of scoring with estimates. ``target_reliability`` adds items
in the order above until the posterior mean reaches it (found by bisection over k).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr
from threadpoolctl import threadpool_limits

from bayes_raters.errors import InvalidInputError
from bayes_raters.irt.binary.model import irt_probability
from bayes_raters.irt.diagnostics import PARAMETERS, expected_a_posteriori, item_information, item_parameters
from bayes_raters.results import check_ci_prob, thinned_posterior

GRID = np.linspace(-4.0, 4.0, 81)


def _draws(posterior: xr.Dataset, n_draws: int) -> dict[str, np.ndarray]:
    """Item parameter draws as (draws, items) arrays."""
    params = item_parameters(thinned_posterior(posterior, n_draws).stack(sample=("chain", "draw")))
    return {k: params[k].transpose("sample", "item").values for k in PARAMETERS}


def expected_information(params: dict, theta_range=None) -> np.ndarray:
    """:math:`\\bar I_{sj}` for every draw and item (draws, items)."""
    if theta_range is None:
        weights = np.exp(-0.5 * GRID**2)
    else:
        low, high = theta_range
        if not low < high:
            raise InvalidInputError(f"theta_range must be (low, high) with low < high, got {theta_range}.")
        weights = ((GRID >= low) & (GRID <= high)).astype(float)
    weights = weights / weights.sum()
    info = item_information(*(params[k][:, :, None] for k in PARAMETERS), GRID[None, None, :])
    return info @ weights


def eap_scores(answers: np.ndarray, a, b, c, d) -> np.ndarray:
    """EAP of theta (N(0, 1) prior, on :data:`GRID`) for each respondent, with one set of item
    parameters; ``answers`` (respondents, items). The posterior on the grid is
    :func:`bayes_raters.irt.diagnostics.expected_a_posteriori`'s."""
    weights, grid = expected_a_posteriori(answers, *(np.asarray(v)[None, :] for v in (a, b, c, d)), GRID)
    return weights[0] @ grid


def reliability_draws(params: dict, items: np.ndarray, n_respondents: int, rng: np.random.Generator) -> np.ndarray:
    """:math:`\\rho_s` of the short form ``items`` (indices) for every draw (module docstring):
    answers from the draw's parameters, scored with the posterior means, as a user scores."""
    theta = rng.standard_normal(n_respondents)
    uniforms = rng.random((n_respondents, len(items)))
    fitted = [params[k][:, items].mean(axis=0) for k in PARAMETERS]
    out = np.empty(len(params["a"]))
    with threadpool_limits(limits=1):  # small products: BLAS threads cost more than they save here
        for s in range(len(out)):
            a, b, c, d = (params[k][s, items] for k in PARAMETERS)
            answers = (uniforms < irt_probability(theta[:, None], a, b, c, d, lib=np)).astype(float)
            out[s] = np.corrcoef(eap_scores(answers, *fitted), theta)[0, 1] ** 2
    return out


def short_form(
    result, k: int | None = None, *, target_reliability: float | None = None, theta_range=None,
    ci_prob: float = 0.9, n_draws: int = 200, n_respondents: int = 5000, random_seed=None,
) -> dict:
    """Choose a short form from a fitted binary IRT result (``fit_irt``): ``k`` items, or the
    fewest items whose expected reliability reaches ``target_reliability``. Returns a dict:
    ``items`` (chosen, best first), ``table`` (every item's expected information with its
    interval and, at the item that completes a form of that size, the form's expected
    reliability where it was computed), ``reliability`` (mean,
    lower, upper of the chosen form).

    Parameters
    ----------
    result : IRTResult
        A fitted binary IRT result.
    k : int, optional
        The number of items of the form.
    target_reliability : float, optional
        Instead of ``k``: the reliability the form must reach.
    theta_range : tuple of float, optional
        Weigh abilities uniformly on this range instead of the population N(0, 1).
    ci_prob : float
        Probability of the intervals.
    n_draws : int
        Posterior draws used.
    n_respondents : int
        Simulated respondents per draw for the reliability.
    random_seed : int, numpy.random.Generator or None
        Seed of the simulation.

    Returns
    -------
    dict
        ``items``, ``table`` and ``reliability`` as above.

    Examples
    --------
    >>> from bayes_raters.irt import fit_irt, short_form, simulate_responses
    >>> answers, _ = simulate_responses(300, 10, random_seed=7)
    >>> result = fit_irt(answers, "2pl", random_seed=7, progressbar=False)
    >>> form = short_form(result, k=4, random_seed=7)
    >>> len(form["items"]), sorted(form["reliability"])
    (4, ['lower', 'mean', 'upper'])
    """
    if (k is None) == (target_reliability is None):
        raise InvalidInputError("give either k= (number of items) or target_reliability= (e.g. 0.8).")
    check_ci_prob(ci_prob)
    items = np.asarray(result.posterior["item"].values)
    if k is not None and not 1 <= k <= len(items):
        raise InvalidInputError(f"k must lie between 1 and the bank's {len(items)} items, got {k}.")
    if target_reliability is not None and not 0 < target_reliability < 1:
        raise InvalidInputError(f"target_reliability must lie in (0, 1), got {target_reliability}.")
    params = _draws(result.posterior, n_draws)
    info = expected_information(params, theta_range)
    order = np.argsort(-info.mean(axis=0), kind="stable")
    tail = (1 - ci_prob) / 2
    table = pd.DataFrame({
        "expected_information": info.mean(axis=0), "information_lower": np.quantile(info, tail, axis=0),
        "information_upper": np.quantile(info, 1 - tail, axis=0),
    }, index=pd.Index(items, name="item")).iloc[order]
    table["rank"] = np.arange(1, len(items) + 1)
    seed = np.random.SeedSequence(random_seed).generate_state(1)[0]

    def reliability(n_items: int) -> np.ndarray:
        return reliability_draws(params, order[:n_items], n_respondents, np.random.default_rng(seed))

    evaluated = {}

    def mean_at(n_items: int) -> float:
        evaluated[n_items] = reliability(n_items)
        table.loc[items[order[n_items - 1]], "expected_reliability"] = evaluated[n_items].mean()
        return evaluated[n_items].mean()

    if k is None:  # bisection: the expected reliability grows with each item added in this order
        if mean_at(len(items)) < target_reliability:
            raise InvalidInputError(
                f"the whole bank of {len(items)} items reaches an expected reliability of "
                f"{evaluated[len(items)].mean():.3f} only, below target_reliability={target_reliability}."
            )
        low, high = 0, len(items)  # mean_at(high) >= target; low = 0 items never reaches it
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (low, middle) if mean_at(middle) >= target_reliability else (middle, high)
        k = high
    else:
        mean_at(k)
    rho = evaluated[k]
    lower, upper = np.quantile(rho, [tail, 1 - tail])
    return {"items": items[order[:k]].tolist(), "table": table,
            "reliability": {"mean": float(rho.mean()), "lower": float(lower), "upper": float(upper)}}


def realised_reliability(items, truth: xr.Dataset, result, n_respondents: int = 5000, random_seed=None) -> float:
    """The short form's reliability on held-out respondents: abilities N(0, 1), answers from
    the true parameters ``truth`` (as :func:`bayes_raters.irt.simulate_responses` returns
    them), scored by EAP with the fit's posterior-mean parameters; corr(EAP, theta)^2."""
    rng = np.random.default_rng(random_seed)
    theta = rng.standard_normal(n_respondents)
    true = [np.asarray(truth[k].sel(item=list(items)).values, float) for k in PARAMETERS]
    answers = (rng.random((n_respondents, len(items))) < irt_probability(theta[:, None], *true, lib=np)).astype(float)
    params = item_parameters(result.posterior.sel(item=list(items)))
    fitted = [params[k].mean(("chain", "draw")).values for k in PARAMETERS]
    return float(np.corrcoef(eap_scores(answers, *fitted), theta)[0, 1] ** 2)
