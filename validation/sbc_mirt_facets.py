r"""SBC configurations of the two-dimensional IRT model and the many-facet rater model
(:mod:`bayes_raters.sbc`), each fitted by its default path.

**Two-dimensional exploratory 2PL** (:mod:`bayes_raters.irt.multidimensional.model`), :data:`MIRT_SIZE`
respondents x items, anchors fixed to the first two items (``anchors=["i0", "i1"]``: the
default picks anchors from the data, which would make the prior depend on the data). Drawn
from the model's priors: :math:`d_j \sim N(0, 2)`; anchor k's own loading
:math:`a_{kk} \sim \text{LogNormal}(0, 0.5)`, anchor 0's loading on dimension 2 zero, every
other loading N(0, 1); :math:`\theta_i \sim N(0, I_2)`. A data set with an item answered the
same way by everyone is drawn again (the fit refuses it).

**Many-facet rater model** (:mod:`bayes_raters.facets.model`, ``consistency=True``),
:data:`FACETS_SIZE` responses, raters, prompts, categories, each response rated by
:data:`RATERS_PER_RESPONSE` distinct raters on one prompt (round robin). Drawn from the priors of
:func:`bayes_raters.facets.model.facet_priors`: :math:`\mu_a \sim N(0, 0.5)`,
:math:`\sigma_a \sim N^+(0.5)`, :math:`\log a_r \sim N(\mu_a, \sigma_a)`; severities and
difficulties zero-sum normal (iid :math:`N(0, \sigma)` minus their mean, as PyMC's
``ZeroSumNormal``) with :math:`\sigma_\delta, \sigma_b \sim N^+(1)`; thresholds
:math:`\tau_k \sim N(0, 2)`; :math:`\theta_i \sim N(0, 1)`. A data set in which a score went
unused is drawn again (the fit would collapse it): rejecting on the data alone keeps the ranks
uniform for a calibrated fit, as in the polytomous configurations.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayes_raters.sbc import Configuration

#: respondents, items of the two-dimensional configuration
MIRT_SIZE = (300, 8)
MIRT_ANCHORS = ["i0", "i1"]
#: responses, raters, prompts, categories of the facets configuration
FACETS_SIZE = (120, 5, 2, 4)
RATERS_PER_RESPONSE = 3


def mirt_loadings(rng: np.random.Generator, n_items: int) -> np.ndarray:
    """(items, 2) loadings from the exploratory priors with the first two items as anchors."""
    a = rng.normal(0.0, 1.0, (n_items, 2))
    a[0, 0], a[0, 1] = rng.lognormal(0.0, 0.5), 0.0
    a[1, 1] = rng.lognormal(0.0, 0.5)
    return a


def simulate_mirt(rng: np.random.Generator):
    """``(truth, answers)`` of the two-dimensional configuration (module docstring)."""
    n, n_items = MIRT_SIZE
    while True:
        a, d = mirt_loadings(rng, n_items), rng.normal(0.0, 2.0, n_items)
        theta = rng.normal(0.0, 1.0, (n, 2))
        correct = (rng.random((n, n_items)) < 1 / (1 + np.exp(-(theta @ a.T + d)))).astype(float)
        if np.all(correct.std(axis=0) > 0):
            break
    truth = {"a[0,0]": a[0, 0], "a[1,0]": a[1, 0], "a[1,1]": a[1, 1], "a[2,0]": a[2, 0], "a[2,1]": a[2, 1],
             "d[0]": d[0], "d[2]": d[2], "theta[0,0]": theta[0, 0], "theta[0,1]": theta[0, 1]}
    answers = pd.DataFrame({"respondent": np.repeat(np.arange(n), n_items),
                            "item": np.tile([f"i{j}" for j in range(n_items)], n), "correct": correct.ravel()})
    return truth, answers


def fit_mirt_config(answers: pd.DataFrame, seed: int, settings: dict | None = None):
    """``fit_irt(answers, "2pl", dims=2, anchors=MIRT_ANCHORS)`` at its defaults (one core per
    fit: the runner parallelises over simulations)."""
    from bayes_raters.irt import fit_irt

    result = fit_irt(answers, "2pl", dims=2, anchors=MIRT_ANCHORS, random_seed=seed, **{"cores": 1, **(settings or {})})
    posterior = result.posterior
    draws = {}
    for j, k in ((0, 0), (1, 0), (1, 1), (2, 0), (2, 1)):
        draws[f"a[{j},{k}]"] = posterior["a"].isel(item=j, dimension=k).values
    for j in (0, 2):
        draws[f"d[{j}]"] = posterior["d"].isel(item=j).values
    for k in (0, 1):
        draws[f"theta[0,{k}]"] = posterior["theta"].isel(respondent=0, dimension=k).values
    return draws, result.report


def _zero_sum(rng: np.random.Generator, sigma: float, size: int) -> np.ndarray:
    values = rng.normal(0.0, sigma, size)
    return values - values.mean()


def facets_parameters(rng: np.random.Generator) -> dict:
    """One draw of the facets priors (module docstring)."""
    _, n_raters, n_prompts, n_categories = FACETS_SIZE
    mu_a, sigma_a = rng.normal(0.0, 0.5), abs(rng.normal(0.0, 0.5))
    sigma_severity, sigma_difficulty = abs(rng.normal(0.0, 1.0)), abs(rng.normal(0.0, 1.0))
    return {"mu_log_a": mu_a, "sigma_log_a": sigma_a, "log_a": rng.normal(mu_a, sigma_a, n_raters),
            "sigma_severity": sigma_severity, "severity": _zero_sum(rng, sigma_severity, n_raters),
            "sigma_difficulty": sigma_difficulty, "difficulty": _zero_sum(rng, sigma_difficulty, n_prompts),
            "thresholds": rng.normal(0.0, 2.0, n_categories - 1)}


def simulate_facets(rng: np.random.Generator):
    """``(truth, ratings)`` of the facets configuration (module docstring)."""
    from bayes_raters.facets.draws import rating_logits
    from bayes_raters.facets.simulate import design_layout
    from bayes_raters.results import draw_categories

    n, n_raters, n_prompts, n_categories = FACETS_SIZE
    prompt = np.arange(n) % n_prompts
    unit = np.repeat(np.arange(n), RATERS_PER_RESPONSE)
    while True:
        p = facets_parameters(rng)
        theta = rng.normal(0.0, 1.0, n)
        raters = np.concatenate([rng.choice(n_raters, RATERS_PER_RESPONSE, replace=False) for _ in range(n)])
        layout = design_layout(unit, prompt, raters, n_raters, n_prompts, n_categories)
        location = p["severity"][:, None] + p["difficulty"][None, :]
        probability = np.exp(rating_logits(np.exp(p["log_a"]), location, p["thresholds"], theta, layout))
        category = draw_categories(probability, rng)
        if len(np.unique(category)) == n_categories:
            break
    truth = {name: p[name] for name in ("mu_log_a", "sigma_log_a", "sigma_severity", "sigma_difficulty")}
    truth |= {"log_a[0]": p["log_a"][0], "severity[0]": p["severity"][0], "severity[1]": p["severity"][1],
              "difficulty[0]": p["difficulty"][0], "thresholds[0]": p["thresholds"][0],
              "thresholds[2]": p["thresholds"][2], "theta[0]": theta[0]}
    ratings = pd.DataFrame({"response": [f"e{i}" for i in unit], "prompt": [f"p{j}" for j in prompt[unit]],
                            "rater": [f"r{r}" for r in raters], "score": category + 1})
    return truth, ratings


def fit_facets_config(ratings: pd.DataFrame, seed: int, settings: dict | None = None):
    """``fit_facets(ratings)`` at its defaults (one core per fit)."""
    from bayes_raters.facets import fit_facets

    result = fit_facets(ratings, random_seed=seed, **{"cores": 1, **(settings or {})})
    posterior = result.posterior
    draws = {name: posterior[name].values for name in ("mu_log_a", "sigma_log_a", "sigma_severity", "sigma_difficulty")}
    draws["log_a[0]"] = np.log(posterior["a"].sel(rater="r0").values)
    draws |= {f"severity[{r}]": posterior["severity"].sel(rater=f"r{r}").values for r in (0, 1)}
    draws["difficulty[0]"] = posterior["difficulty"].sel(prompt="p0").values
    draws |= {f"thresholds[{k}]": posterior["thresholds"].isel(threshold=k).values for k in (0, 2)}
    draws["theta[0]"] = posterior["theta"].sel(response="e0").values
    draws["diag_non_centred"] = float(result.inference.parametrisation == "non-centred")  # which form was kept
    draws["diag_warm_start"] = float(bool(result.inference.warm_start))  # NUTS started from the Laplace approximation
    return draws, result.report


MIRT_FACETS_CONFIGURATIONS = {
    "irt_2d_exploratory": Configuration("irt_2d_exploratory", simulate_mirt, fit_mirt_config),
    "facets": Configuration("facets", simulate_facets, fit_facets_config),
}
