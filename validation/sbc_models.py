"""SBC configurations (:mod:`bayes_raters.sbc`): each draws parameters from exactly the
priors its model states, simulates data from the model, and fits with the package's fit path.

Sizes are small (a few hundred observations) so 200 simulations run in minutes per core.
The true-score configurations build the model from :class:`~bayes_raters.ctt.model.TrueScoreData`
with the prior centre and width fixed (a nominal 1-6 scale: centre 3.5, width 5), because
the user path takes them from the data when no ``score_range`` is declared, and a prior that
depends on the data has no SBC guarantee.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from bayes_raters.ctt.finite_sample import add_finite_sample_spread
from bayes_raters.ctt.fit import checked_variables
from bayes_raters.ctt.model import TrueScoreData, TrueScoreSpec, build_from_data
from bayes_raters.inference import sample_model
from bayes_raters.results import worst_report
from bayes_raters.sampling import quiet_pymc
from bayes_raters.sbc import RANK_DRAWS, Configuration, thinned
from validation.sbc_judges import JUDGES_CONFIGURATIONS
from validation.sbc_labels import LABELS_CONFIGURATIONS
from validation.sbc_leaderboard import LEADERBOARD_CONFIGURATIONS
from validation.sbc_mirt_facets import MIRT_FACETS_CONFIGURATIONS
from validation.sbc_polytomous import POLYTOMOUS_CONFIGURATIONS

CENTER, WIDTH = 3.5, 5.0
N_RESPONSES, N_DOUBLE = 200, 100
FIT = {"draws": 1000, "tune": 1000, "chains": 2, "cores": 1, "target_accept": 0.95}


def _finite_prmse(system: np.ndarray, true: np.ndarray) -> np.ndarray:
    """1 - sum_i (M_i - T_i)^2 / sum_i (T_i - Tbar)^2 along the last axis."""
    centred = true - true.mean(axis=-1, keepdims=True)
    return 1 - ((system - true) ** 2).sum(axis=-1) / (centred**2).sum(axis=-1)


N_RATERS = 6


def _true_score_parameters(rng: np.random.Generator, variant: str) -> dict:
    """Draws from the priors of ``ctt.model._true_score_priors`` and ``_system_priors`` (centre
    3.5, width 5), with the rater options of ``variant``."""
    params = {
        "mu": rng.normal(CENTER, WIDTH / 2), "sigma_T": abs(rng.normal(0, WIDTH / 4)),
        "sigma_e": abs(rng.normal(0, WIDTH / 4)), "alpha": rng.normal(CENTER, WIDTH / 2),
        "beta": rng.normal(1.0, 1.0), "tau": rng.gamma(2.0, (WIDTH / 8) / 2.0),
    }
    if variant == "rater_effects":  # ZeroSumNormal(spread): iid normals minus their mean
        params["sigma_rater_offset"] = abs(rng.normal(0, WIDTH / 8))
        z = rng.normal(0, params["sigma_rater_offset"], N_RATERS)
        params["rater_offset"] = z - z.mean()
    if variant == "rater_error":  # log sigma_r = log sigma_e + omega eta_r
        params["sigma_log_rater_sd"] = abs(rng.normal(0, 0.5))
        params["sigma_rater"] = params["sigma_e"] * np.exp(params["sigma_log_rater_sd"] * rng.normal(0, 1, N_RATERS))
    return params


def simulate_true_score(rng: np.random.Generator, variant: str = "normal"):
    """The true-score model's generative story: 200 responses, 100 of them rated twice by two
    of 6 raters, one system. ``variant``: "normal" (base), "rater_effects", "rater_error"
    (normal ratings with those options) or "ordinal" (ratings rounded to 1-6 at the fixed
    cutpoints k + 1/2; a data set whose ratings, or one rater's, do not vary is drawn again:
    rejecting on the data alone leaves p(theta | y) and so the ranks unchanged)."""
    while True:
        p = _true_score_parameters(rng, variant)
        true = rng.normal(p["mu"], p["sigma_T"], N_RESPONSES)
        counts = np.where(np.arange(N_RESPONSES) < N_DOUBLE, 2, 1)
        response = np.repeat(np.arange(N_RESPONSES), counts)
        first = rng.integers(0, N_RATERS, N_RESPONSES)
        second = (first + rng.integers(1, N_RATERS, N_RESPONSES)) % N_RATERS
        rater = np.where(np.r_[True, response[1:] != response[:-1]], first[response], second[response])
        offset = p.get("rater_offset", np.zeros(N_RATERS))[rater]
        sd = p.get("sigma_rater", np.full(N_RATERS, p["sigma_e"]))[rater]
        score = true[response] + offset + rng.normal(0, 1, len(response)) * sd
        if variant == "ordinal":
            score = np.clip(np.round(score), 1, 6)
        ratings = pd.DataFrame({"response": response, "rater": np.array([f"r{k}" for k in range(N_RATERS)])[rater], "score": score})
        system = p["alpha"] + p["beta"] * (true - CENTER) + rng.normal(0, p["tau"], N_RESPONSES)
        if variant != "ordinal" or _varies(ratings):
            break
    systems = pd.DataFrame({"response": np.arange(N_RESPONSES), "system": "m", "score": system})
    bias = p["alpha"] - p["beta"] * CENTER + (p["beta"] - 1) * p["mu"]
    truth = {name: value for name, value in p.items() if np.ndim(value) == 0}
    for name in ("rater_offset", "sigma_rater"):
        truth.update({f"{name}[{k}]": p[name][k] for k in range(2)} if name in p else {})
    truth["prmse_population"] = 1 - (bias**2 + (p["beta"] - 1) ** 2 * p["sigma_T"] ** 2 + p["tau"] ** 2) / p["sigma_T"] ** 2
    truth["prmse_finite"] = float(_finite_prmse(system, true))
    truth["prmse"] = truth["prmse_finite"]  # the package's own draws (finite-sample spread added)
    return truth, (ratings, systems)


def _varies(ratings: pd.DataFrame) -> bool:
    """Ratings that the package accepts: they vary, and so does every rater's (>= 20 ratings)."""
    per_rater = ratings.groupby("rater")["score"].agg(["nunique", "size"])
    return ratings["score"].nunique() > 1 and not ((per_rater["nunique"] == 1) & (per_rater["size"] >= 20)).any()


def simulate_true_score_normal(rng: np.random.Generator):
    return simulate_true_score(rng, "normal")


SPECS = {
    "normal": TrueScoreSpec(),
    "rater_effects": TrueScoreSpec(rater_effects=True),
    "rater_error": TrueScoreSpec(rater_error="rater"),
}


def fit_true_score_for_sbc(data, seed: int, variant: str = "normal", settings: dict | None = None):
    """Normal variants: the model built from :class:`TrueScoreData` with the prior centre and
    width fixed, sampled as ``fit_true_score`` samples it. Ordinal: ``fit_true_score``
    itself (its declared ``score_range=(1, 6)`` fixes centre and width). PRMSE's posterior
    from draws of T given each posterior draw (the finite-sample PRMSE of these responses)."""
    ratings, systems = data
    settings = settings or FIT
    if variant == "ordinal":
        from bayes_raters.ctt.fit import fit_true_score

        result = fit_true_score(ratings, systems, observation="ordinal", score_range=(1, 6), random_seed=seed, **settings)
        posterior = result.posterior.squeeze("system", drop=True)
        true = result.true_score_draws(system="m", n_draws=RANK_DRAWS, random_seed=seed).values
        converged = worst_report(result.reports.values())  # every fit behind the result
    else:
        model_data = TrueScoreData(
            ratings=ratings, systems=systems, responses=systems["response"].to_numpy(),
            raters=np.array([f"r{k}" for k in range(N_RATERS)]), system_ids=np.array(["m"], dtype=object),
            center=CENTER, width=WIDTH,
        )
        model = build_from_data(model_data, SPECS[variant])
        # converged as fit_true_score judges it: parameters and PRMSE, not the per-response
        # deterministics (whose R-hat/ESS took 1.6 of 7 s per smoke fit)
        idata, report = sample_model(model, random_seed=seed, what="SBC", check_var_names=checked_variables(model), **settings)
        posterior = add_finite_sample_spread(idata["posterior"].to_dataset(), np.random.default_rng([seed, 7]))
        posterior = posterior.squeeze("system", drop=True)
        mean, sd = thinned_rows(posterior["true_score_mean"].values), thinned_rows(posterior["true_score_sd"].values)
        true = mean + sd * np.random.default_rng([seed, 7]).standard_normal(mean.shape)
        converged = report
    draws = {name: posterior[name].values for name in posterior.data_vars if posterior[name].dims == ("chain", "draw")}
    for name in ("rater_offset", "sigma_rater"):
        if name in posterior:
            draws.update({f"{name}[{k}]": posterior[name].sel(rater=f"r{k}").values for k in range(2)})
    draws["prmse_finite"] = _finite_prmse(systems["score"].to_numpy(), true)
    return draws, converged


def fit_true_score_normal(data, seed: int, settings: dict | None = None):
    return fit_true_score_for_sbc(data, seed, "normal", settings)


def thinned_rows(values: np.ndarray) -> np.ndarray:
    """(chain, draw, k) -> (RANK_DRAWS, k): the draws :func:`~bayes_raters.sbc.thinned` keeps."""
    flat = values.reshape(-1, values.shape[-1])
    index = thinned(np.arange(flat.shape[0]), RANK_DRAWS)
    return flat[index]


IRT_SIZE = (400, 10)  # 400 answers per item: the difficulties take the pivoted form
IRT_TRACKED = 2  # items and respondents whose own values are ranked


def simulate_irt(rng: np.random.Generator, model: str = "2pl"):
    """Answers from the default (hierarchical) priors of ``irt.binary.model.item_priors``: item
    locations b_j ~ N(m_b, s_b), m_b ~ N(0, 1), s_b ~ HalfNormal(1.5); log a_j ~ N(m_a, s_a),
    m_a ~ N(0, 0.5), s_a ~ HalfNormal(0.5) (2PL) or a ~ LogNormal(0, 0.5) common (1PL);
    theta_i ~ N(0, 1); every respondent answers every item."""
    n, k = IRT_SIZE
    b = rng.normal(rng.normal(0, 1), (b_sigma := abs(rng.normal(0, 1.5))), k)
    truth = {"b_sigma": b_sigma, "b_mean": b.mean()}
    if model == "1pl":
        a = np.full(k, rng.lognormal(0, 0.5))
        truth["a_common"] = a[0]
    else:
        a = np.exp(rng.normal(rng.normal(0, 0.5), (log_a_sigma := abs(rng.normal(0, 0.5))), k))
        truth["log_a_sigma"] = log_a_sigma
        truth.update({f"a[{j}]": a[j] for j in range(IRT_TRACKED)})
    truth.update({f"b[{j}]": b[j] for j in range(IRT_TRACKED)})
    c = rng.beta(2.0, 2.0 * (4 - 1), k) if model == "3pl" else np.zeros(k)  # n_options 4
    truth.update({f"c[{j}]": c[j] for j in range(IRT_TRACKED)} if model == "3pl" else {})
    theta = rng.normal(0, 1, n)
    truth.update({f"theta[{i}]": theta[i] for i in range(IRT_TRACKED)})
    probability = c + (1 - c) / (1 + np.exp(-a * (theta[:, None] - b)))
    correct = (rng.random((n, k)) < probability).astype(float)
    table = pd.DataFrame(
        {"respondent": np.repeat(np.arange(n), k), "item": np.tile([f"i{j}" for j in range(k)], n), "correct": correct.ravel()}
    )
    return truth, table


def fit_irt_config(table: pd.DataFrame, seed: int, model: str = "2pl", method: str = "marginal", settings: dict | None = None):
    """``fit_irt`` with its defaults (hierarchical priors; ``method`` marginal by default, theta
    then from its exact conditional draws)."""
    from bayes_raters.irt import fit_irt

    defaults = {key: value for key, value in FIT.items() if key != "target_accept"}  # fit_irt's own
    result = fit_irt(table, model, method=method, random_seed=seed, **{**defaults, **(settings or {})})
    posterior = result.posterior
    draws = {name: posterior[name].values for name in ("b_sigma", "log_a_sigma", "a_common") if name in posterior}
    draws["b_mean"] = posterior["b"].mean("item").values
    for j in range(IRT_TRACKED):
        draws[f"b[{j}]"] = posterior["b"].sel(item=f"i{j}").values
        draws[f"a[{j}]"] = posterior["a"].sel(item=f"i{j}").values
        draws[f"theta[{j}]"] = posterior["theta"].sel(respondent=j).values
        if "c" in posterior:
            draws[f"c[{j}]"] = posterior["c"].sel(item=f"i{j}").values
    draws["diag_chains"] = float(posterior.sizes["chain"])  # chains may be added (sample_model(extra_chains=))
    record = result.inference
    draws["diag_warm_start"] = float(bool(record.warm_start))  # NUTS started from the Laplace approximation
    if record.parametrisation:  # 1: the non-centred difficulties were kept (their centred fit diverged, or by rule)
        draws["diag_noncentred_b"] = float(record.parametrisation == "non-centred")
    return draws, result.report


PAIRWISE_ITEMS, PAIRWISE_TRACKED = 12, 3
PAIRWISE_DESIGNS = {  # judgements of each kind (comparisons, scalars, strengths), annotators
    "outcomes": (300, 0, 0, 1),
    "mixed": (150, 60, 40, 3),
}


def _pairwise_design(rng: np.random.Generator, design: str):
    """Who judges what: random pairs of distinct items, random items for sliders; the
    judgements themselves are filled in from the model's prior predictive."""
    n_comp, n_scal, n_stre, n_ann = PAIRWISE_DESIGNS[design]
    items = np.array([f"t{j}" for j in range(PAIRWISE_ITEMS)])
    annotators = np.array([f"k{j}" for j in range(n_ann)])

    def pairs(n):
        a = rng.integers(0, PAIRWISE_ITEMS, n)
        return items[a], items[(a + rng.integers(1, PAIRWISE_ITEMS, n)) % PAIRWISE_ITEMS]

    first, second = pairs(n_comp)
    comparisons = pd.DataFrame({"item_a": first, "item_b": second, "outcome": "win", "annotator": rng.choice(annotators, n_comp)})
    comparisons.loc[: PAIRWISE_ITEMS - 1, ["item_a", "item_b"]] = np.c_[items, np.roll(items, -1)]  # a connected ring
    scalars = pd.DataFrame({"item": rng.choice(items, n_scal), "value": 0.5, "annotator": rng.choice(annotators, n_scal)})
    first, second = pairs(n_stre)
    strengths = pd.DataFrame({"item_a": first, "item_b": second, "strength": 0.0, "annotator": rng.choice(annotators, n_stre)})
    return comparisons, (scalars if n_scal else None), (strengths if n_stre else None)


def comparisons_from_counts(pooled: pd.DataFrame, counts: np.ndarray, items: pd.Index, annotators: pd.Index) -> pd.DataFrame:
    """One row per judgement (item_a, item_b, outcome, annotator) from simulated counts of
    (loss, tie, win) per pooled pair (:func:`~bayes_raters.pairwise.likelihood.pool_comparisons`)."""
    kinds = np.tile(np.array(["loss", "tie", "win"]), len(pooled))
    rows = np.repeat(np.arange(len(pooled)), 3)
    times = np.asarray(counts, dtype=np.int64).reshape(-1)
    rows, kinds = np.repeat(rows, times), np.repeat(kinds, times)
    return pd.DataFrame(
        {"item_a": items[pooled["a"].to_numpy()[rows]], "item_b": items[pooled["b"].to_numpy()[rows]], "outcome": kinds,
         "annotator": annotators[pooled["annotator"].to_numpy()[rows]]}
    )


def simulate_pairwise(rng: np.random.Generator, design: str = "outcomes"):
    """Parameters and judgements drawn from the beta-latent model's own prior predictive
    (``pm.sample_prior_predictive`` on the model built for the design), so the priors are
    exactly those of :func:`~bayes_raters.pairwise.model.build_pairwise_model`."""
    import pymc as pm

    from bayes_raters.pairwise.likelihood import pool_comparisons
    from bayes_raters.pairwise.model import build_pairwise_model, prepare_data

    comparisons, scalars, strengths = _pairwise_design(rng, design)
    data = prepare_data(comparisons, scalars, strengths)
    model = build_pairwise_model(data, ties=True, parametrisation="values")  # flat variables cannot be drawn
    with quiet_pymc():  # no "Sampling: [...]" line per simulation
        draw = pm.sample_prior_predictive(draws=1, model=model, random_seed=rng, compile_kwargs={"mode": "FAST_COMPILE"})
    prior, predictive = draw["prior"].to_dataset().isel(chain=0, draw=0), draw["prior_predictive"].to_dataset().isel(chain=0, draw=0)
    pooled = pool_comparisons(data.comparisons, data.items, data.annotators)
    comparisons = comparisons_from_counts(pooled, predictive["outcome"].values, data.items, data.annotators)
    if scalars is not None:
        scalars["value"] = predictive["value"].values
    if strengths is not None:
        strengths["strength"] = predictive["preference"].values
    truth = {name: float(prior[name]) for name in prior.data_vars if prior[name].ndim == 0 and not name.endswith("_z")}
    truth.update({f"s[{j}]": float(prior["s"].values[j]) for j in range(PAIRWISE_TRACKED)})
    return truth, (comparisons, scalars, strengths)


def fit_pairwise_for_sbc(data, seed: int):
    """``fit_pairwise`` with its defaults (and the tie band the data were drawn with) on the simulated judgements."""
    from bayes_raters.pairwise import fit_pairwise

    comparisons, scalars, strengths = data
    defaults = {key: value for key, value in FIT.items() if key != "target_accept"}
    result = fit_pairwise(comparisons, scalars, strengths, ties=True, random_seed=seed, **defaults)
    posterior = result.posterior
    draws = {name: posterior[name].values for name in posterior.data_vars if posterior[name].dims == ("chain", "draw")}
    draws.update({f"s[{j}]": posterior["s"].values[..., j] for j in range(PAIRWISE_TRACKED)})
    return draws, result.report


CONFIGURATIONS = {
    "true_score_normal": Configuration("true_score_normal", simulate_true_score_normal, fit_true_score_normal),
    **{
        f"true_score_{variant}": Configuration(
            f"true_score_{variant}", functools.partial(simulate_true_score, variant=variant),
            functools.partial(fit_true_score_for_sbc, variant=variant),
        )
        for variant in ("rater_effects", "rater_error", "ordinal")
    },
    "irt_2pl_marginal": Configuration("irt_2pl_marginal", simulate_irt, fit_irt_config),
    "irt_1pl_marginal": Configuration(
        "irt_1pl_marginal", functools.partial(simulate_irt, model="1pl"), functools.partial(fit_irt_config, model="1pl")
    ),
    "irt_3pl_marginal": Configuration(
        "irt_3pl_marginal", functools.partial(simulate_irt, model="3pl"), functools.partial(fit_irt_config, model="3pl")
    ),
    **{  # the joint method (theta sampled with the items) for every model the marginal one has
        f"irt_{model}_joint": Configuration(
            f"irt_{model}_joint", functools.partial(simulate_irt, model=model),
            functools.partial(fit_irt_config, model=model, method="joint"),
        )
        for model in ("1pl", "2pl", "3pl")
    },
    **POLYTOMOUS_CONFIGURATIONS,  # GRM and GPCM (validation.sbc_polytomous)
    **MIRT_FACETS_CONFIGURATIONS,  # 2D exploratory 2PL, many-facet raters (validation.sbc_mirt_facets)
    **JUDGES_CONFIGURATIONS,  # LLM judges against noisy humans, unit scales (validation.sbc_judges)
    **LABELS_CONFIGURATIONS,  # Dawid-Skene, one-coin, MACE, hierarchical, correlated with their default priors (validation.sbc_labels)
    **LEADERBOARD_CONFIGURATIONS,  # the mixed leaderboard's model: 0/1, 3PL, graded and bounded items (validation.sbc_leaderboard)
    "pairwise_outcomes": Configuration("pairwise_outcomes", simulate_pairwise, fit_pairwise_for_sbc),
    "pairwise_mixed": Configuration(
        "pairwise_mixed", functools.partial(simulate_pairwise, design="mixed"), fit_pairwise_for_sbc
    ),
}
