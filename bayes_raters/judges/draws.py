r"""What the judges model's posterior draws give after sampling: the quantities users read, on
the rating scales (:func:`on_the_rating_scales`), the parameters one draw at a time as the
likelihood reads them (:func:`parameter_draws`), and the draws of the judges' biases and the
rater effects that the likelihood integrates out (:func:`bias_posterior`)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from bayes_raters.judges import ordinal
from bayes_raters.judges.biases import bias_draws, zero_sum_basis
from bayes_raters.judges.data import JudgesData
from bayes_raters.judges.model import JudgesSpec, integrate_biases, integrate_raters, likelihood_data, shift_terms, system_weights
from bayes_raters.sampling import derived_rng


def on_the_rating_scales(posterior: xr.Dataset, data: JudgesData, spec: JudgesSpec | None = None) -> xr.Dataset:
    r"""``posterior`` with the quantities users read, on their scales, computed from the draws
    (not in the model's graph: as deterministics they doubled the compile time,
    ``models/judges.md``): ``system_mean`` (:math:`c + s\mu`, the human ratings' mean
    :math:`c` and SD :math:`s`), ``system_sd``, ``rater_severity``, ``human_noise``, each judge's
    ``judge_intercept`` and ``judge_slope`` (its expected score is intercept + slope x true
    score), ``judge_noise``, ``judge_bias`` (judge, system), and two summaries per judge:
    ``judge_prmse``, the share of the true score's variance over all responses
    (:math:`V = \sum_s w_s(\sigma_s^2 + (\mu_s - \bar\mu)^2)`, :math:`w_s` the systems' shares
    of responses) that the linearly calibrated judge explains,
    :math:`\beta_j^2 V / (\beta_j^2 V + \sigma_j^2 + \lambda_j^2 + \sum_s w_s \delta_{js}^2)`
    (PRMSE of the calibrated judge against the true score, Loukina et al. 2020); and
    ``judge_worth``, how many human ratings of one response carry as much information about its
    true score as one score of the judge: :math:`(\sigma_H^2 + \tau_\rho^2)\,\beta_j^2 / (\sigma_j^2 + \lambda_j^2)`
    (error variances on the true score's scale; the system bias is left out: it does not shrink
    with more ratings of the response; for ordinal ratings ``spec.ordinal``, :math:`\sigma_H^2` is
    the variance of a normal rating as informative as one ordinal rating,
    :func:`~bayes_raters.judges.ordinal.equivalent_noise_variance`, averaged in information over
    the systems by their shares of responses); and ``judge_own_share``, the share of the judge's modelled
    score variance (PRMSE's denominator) that is its own noise :math:`\sigma_j^2`, near zero in a
    Heywood case (:func:`~bayes_raters.judges.checks.near_zero_own_error`)."""
    c, s = data.center, data.scale
    human = posterior["sigma_human"] ** 2
    if spec is not None and spec.ordinal:  # the information of one ordinal rating, averaged over the responses
        cut = ordinal.standardised_cutpoints(data, spec.score_range)
        w = xr.DataArray(system_weights(data), dims="system", coords={"system": posterior["system"].values})
        equivalent = xr.apply_ufunc(lambda m, t, h: ordinal.equivalent_noise_variance(m, t, h, cut), posterior["mu"], posterior["sigma_true"],
                                    posterior["sigma_human"], input_core_dims=[["system"], ["system"], []], output_core_dims=[["system"]])
        human = 1 / (w / equivalent).sum("system")
    jc = xr.DataArray(data.judge_center, dims="judge", coords={"judge": posterior["judge"].values})
    js = xr.DataArray(data.judge_scale, dims="judge", coords={"judge": posterior["judge"].values})
    weights = xr.DataArray(system_weights(data), dims="system", coords={"system": posterior["system"].values})
    mu, beta = posterior["mu"], posterior["beta"]
    grand = (weights * mu).sum("system")
    loading = posterior["loading"] if "loading" in posterior else xr.zeros_like(posterior["sigma_judge"])
    spread = (weights * (posterior["sigma_true"] ** 2 + (mu - grand) ** 2)).sum("system")
    own = posterior["sigma_judge"] ** 2 + loading**2
    explained = beta**2 * spread
    modelled = explained + own + (weights * posterior["bias"] ** 2).sum("system")
    return posterior.assign(
        system_mean=c + s * mu, system_sd=s * posterior["sigma_true"], rater_severity=s * posterior["rater_effect"],
        human_noise=s * posterior["sigma_human"], judge_intercept=jc + js * (posterior["alpha"] - beta * (grand + c / s)),
        judge_slope=js * beta / s, judge_noise=js * posterior["sigma_judge"], judge_bias=js * posterior["bias"],
        judge_prmse=explained / modelled, judge_own_share=posterior["sigma_judge"] ** 2 / modelled,
        judge_worth=(human + posterior["sigma_rater"] ** 2) * beta**2 / own,
    )


#: Standardised-scale parameters the likelihood reads, by name in the posterior.
PARAMETERS = ("mu", "sigma_true", "sigma_human", "alpha", "beta", "sigma_judge", "rater_effect", "bias")


def parameter_draws(posterior: xr.Dataset, shared_error: bool, weights: np.ndarray):
    """One dict of standardised parameters per posterior draw (chain-major), as
    :func:`~bayes_raters.judges.model.row_terms` reads them (``weights``: the systems' shares of
    the responses, for the grand mean)."""
    stacked = posterior.stack(sample=("chain", "draw"))
    arrays = {name: np.moveaxis(stacked[name].values, -1, 0) for name in PARAMETERS}
    n_judges = arrays["alpha"].shape[1]
    loading = np.moveaxis(stacked["loading"].values, -1, 0) if shared_error else np.zeros((len(arrays["alpha"]), n_judges))
    for s in range(len(arrays["alpha"])):
        yield {**{name: values[s] for name, values in arrays.items()}, "loading": loading[s], "grand_mean": weights @ arrays["mu"][s]}


def bias_posterior(posterior: xr.Dataset, data: JudgesData, spec: JudgesSpec, rng: np.random.Generator) -> dict:
    """Draws of the judges' biases (``bias``: chain, draw, judge, system; standardised scale) and,
    where they are integrated out too, the rater effects (``rater_effect``), from their Gaussian
    given each posterior draw of the other parameters (:func:`~bayes_raters.judges.model.integrate_biases`,
    :func:`~bayes_raters.judges.model.integrate_raters`; :func:`~bayes_raters.judges.biases.bias_draws`): the pairs are
    draws of the joint posterior."""
    n_judges, n_systems = posterior.sizes["judge"], posterior.sizes["system"]
    with_raters = integrate_raters(spec, data)
    _, inputs = likelihood_data(data, spec)
    basis = zero_sum_basis(n_systems)
    n_raters = len(data.raters) if with_raters else 0
    zero = {"bias": (xr.zeros_like(posterior["alpha"]) * xr.zeros_like(posterior["mu"])).transpose("chain", "draw", "judge", "system")}
    if with_raters:
        zero["rater_effect"] = xr.zeros_like(posterior["sigma_rater"]) * xr.DataArray(np.zeros(len(data.raters)), dims="rater")
    sample = ("chain", "draw")
    taus = np.moveaxis(posterior["sigma_bias"].stack(sample=sample).values, -1, 0)
    tau_rho = posterior["sigma_rater"].stack(sample=sample).values
    biases, effects = [], []
    draws = parameter_draws(posterior.assign(**zero), spec.shared_error, system_weights(data))
    for p, tau, scale in zip(draws, taus, tau_rho, strict=True):
        g, h, raters = shift_terms(inputs, p, n_raters, scale, np)
        out = bias_draws(g, h, tau, basis, rng, raters)
        biases.append(out[0] if with_raters else out)
        if with_raters:
            effects.append(out[1])
    shape = (posterior.sizes["chain"], posterior.sizes["draw"])
    coords = {name: posterior[name].values for name in ("chain", "draw", "judge", "system")}
    result = {"bias": xr.DataArray(np.asarray(biases).reshape(*shape, n_judges, n_systems), dims=("chain", "draw", "judge", "system"), coords=coords)}
    if with_raters:
        result["rater_effect"] = xr.DataArray(np.asarray(effects).reshape(*shape, -1), dims=("chain", "draw", "rater"),
                                              coords={"chain": coords["chain"], "draw": coords["draw"], "rater": list(data.raters)})
    return result


def with_integrated_draws(posterior: xr.Dataset, data: JudgesData, spec: JudgesSpec, random_seed) -> xr.Dataset:
    """``posterior`` with the draws of what the likelihood integrated out (:func:`bias_posterior`,
    on the fit's ``"judges_biases"`` stream of ``random_seed``); as it is where the model sampled
    them (:func:`~bayes_raters.judges.model.integrate_biases`)."""
    if not integrate_biases(spec):
        return posterior
    return posterior.assign(bias_posterior(posterior, data, spec, derived_rng(random_seed, "judges_biases")))
