r"""ArviZ's standard groups for a true-score result: observed and constant data, the pointwise
log-likelihood (LOO over responses) and posterior predictive replicates.

**Observed data.** ``rating_score`` (dim ``rating``, the rows of the validated ratings table)
and ``system_score`` (dim ``system_row``); ids of each row in ``constant_data``.

**Pointwise log-likelihood (normal observations).** Response i is measured by its ratings,
:math:`x_k = H_k - \delta_{r(k)}` with loading :math:`b_k = 1` and variance :math:`v_k = \sigma_{r(k)}^2`,
and by system scores, :math:`x_k = M_k - \alpha_s + \beta_s c_0` with :math:`b_k = \beta_s`,
:math:`v_k = \tau_s^2`. With :math:`T_i \sim N(\mu, \sigma_T)` integrated out,

.. math::
    \log p(x_i) = \sum_k \log N(x_k \mid b_k m_i, v_k) + \log N(m_i \mid \mu, \sigma_T)
                  - \tfrac12 \log(P_i / 2\pi),

with :math:`P_i = \sigma_T^{-2} + \sum_k b_k^2 / v_k` and :math:`m_i = (\mu / \sigma_T^2 +
\sum_k b_k x_k / v_k) / P_i` the conditional precision and mean of :math:`T_i` (the same
identity as the model's likelihood, :mod:`bayes_raters.ctt.model`). One value per response and
posterior draw, so ``az.loo`` leaves out one response (all its ratings and scores) at a time.
Ordinal observations: the same quantity, log p(ratings, system scores of i) with T integrated
out, from the ordinal model's per-unit terms (:func:`bayes_raters.ctt.ordinal.unit_logliks`) on
the exact units (no Chebyshev grid), each response taking its unit's value.

**Posterior predictive.** Per draw, :math:`T_i` from its exact conditional (normal:
:math:`N(m_i, P_i^{-1/2})`; ordinal: :func:`bayes_raters.ctt.ordinal.draw_true_scores`), then
ratings :math:`T_i + \delta_r + \sigma_r z` (ordinal: the category whose cutpoints bracket
that value, i.e. rounded and clipped to the scale when the cutpoints are fixed) and system scores
:math:`\alpha_s + \beta_s (T_i - c_0) + \tau_s z`.
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm
import pytensor
import pytensor.tensor as pt
import xarray as xr
from scipy import sparse

from bayes_raters.ctt import ordinal
from bayes_raters.ctt.model import TrueScoreSpec, build_from_data, model_data
from bayes_raters.ctt.ordinal_units import ordinal_units
from bayes_raters.errors import InvalidInputError
from bayes_raters.results import thinned_posterior

LOG_2PI = float(np.log(2 * np.pi))
LOG_LIK_DRAWS = 400  # draws kept for the pointwise log-likelihood (memory: draws x responses)


def id_column(values) -> np.ndarray:
    """Ids as stored in netCDF: kept as they are, unless of mixed types (then as text)."""
    values = np.asarray(values)
    return values.astype(str) if values.dtype == object else values


def data_groups(rated: pd.DataFrame, scored: pd.DataFrame) -> dict[str, xr.Dataset]:
    """The ``observed_data`` and ``constant_data`` groups of the validated tables."""
    observed = xr.Dataset(
        {"rating_score": ("rating", rated["score"].to_numpy(float)), "system_score": ("system_row", scored["score"].to_numpy(float))}
    )
    constant = xr.Dataset(
        {
            "rating_response": ("rating", id_column(rated["response"])), "rating_rater": ("rating", id_column(rated["rater"])),
            "score_response": ("system_row", id_column(scored["response"])), "score_system": ("system_row", id_column(scored["system"])),
        }
    )
    return {"observed_data": observed, "constant_data": constant}


def stacked(draws: xr.Dataset) -> dict[str, np.ndarray]:
    """Each variable as an array with the (chain, draw) sample first."""
    flat = draws.stack(sample=("chain", "draw"))
    return {name: flat[name].transpose("sample", ...).to_numpy() for name in flat.data_vars}


def rating_offset_and_sd(data, p: dict) -> tuple[np.ndarray | float, np.ndarray]:
    """Each rating's rater offset (0 without rater effects) and error SD, (samples x ratings)."""
    n, rater = len(p["mu"]), data.rating_rater
    offset = p["rater_offset"][:, rater] if "rater_offset" in p else 0.0
    sd = p["sigma_rater"][:, rater] if "sigma_rater" in p else np.broadcast_to(p["sigma_e"].reshape(n, 1), (n, len(rater)))
    return offset, sd


def measurements(data, p: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(x, b, v, response index)`` of every measurement (ratings first, then system scores),
    the first three with shape (samples, measurements), for draws ``p`` of one model."""
    n = len(p["mu"])
    offset, sd = rating_offset_and_sd(data, p)
    x = [data.ratings["score"].to_numpy(float) - offset]
    b, v = [np.ones(sd.shape)], [sd**2]
    if len(data.systems):
        s = data.system_index
        x.append(data.systems["score"].to_numpy(float) - p["alpha"][:, s] + p["beta"][:, s] * data.center)
        b.append(p["beta"][:, s])
        v.append(p["tau"][:, s] ** 2)
    x, b, v = (np.concatenate([np.broadcast_to(part, (n, part.shape[-1])) for part in parts], axis=1) for parts in (x, b, v))
    return x, b, v, np.concatenate([data.rating_response, data.system_response])


def conditional_and_loglik(data, p: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per response and draw: conditional mean ``m`` and precision ``P`` of T, and the log
    marginal likelihood of the response's measurements (module docstring). Shapes (samples,
    responses)."""
    x, b, v, index = measurements(data, p)
    n_resp = len(data.responses)
    by_response = sparse.csr_matrix((np.ones(len(index)), (index, np.arange(len(index)))), shape=(n_resp, len(index)))

    def per_response(values: np.ndarray) -> np.ndarray:  # sum over each response's measurements
        return np.asarray(by_response @ values.T).T

    mu, var_t = p["mu"][:, None], p["sigma_T"][:, None] ** 2
    precision = 1 / var_t + per_response(b**2 / v)
    mean = (mu / var_t + per_response(b * x / v)) / precision
    log_measure = -0.5 * (LOG_2PI + np.log(v)) - 0.5 * (x - b * mean[:, index]) ** 2 / v
    log_prior = -0.5 * (LOG_2PI + np.log(var_t)) - 0.5 * (mean - mu) ** 2 / var_t
    return mean, precision, per_response(log_measure) + log_prior - 0.5 * (np.log(precision) - LOG_2PI)


def replicate(data, spec, p: dict, true: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Replicated ratings and system scores (samples x rows) given true scores ``true``
    (samples x responses) and parameter draws ``p`` of one model."""
    n = true.shape[0]
    offset, sd = rating_offset_and_sd(data, p)
    latent = true[:, data.rating_response] + offset + sd * rng.standard_normal(sd.shape)
    if spec.observation == "ordinal":
        low, high = spec.score_range
        cut = p["cutpoints"] if "cutpoints" in p else np.broadcast_to(np.arange(low, high) + 0.5, (n, high - low))
        ratings = low + (latent[:, :, None] > cut[:, None, :]).sum(axis=-1).astype(float)
    else:
        ratings = latent
    s = data.system_index
    systems = p["alpha"][:, s] + p["beta"][:, s] * (true[:, data.system_response] - data.center)
    systems = systems + p["tau"][:, s] * rng.standard_normal(systems.shape)
    return ratings, systems


def _ordinal_parameters(draw: dict, data, spec: TrueScoreSpec, lib) -> ordinal.OrdinalParameters:
    """The ordinal model's parameters from one draw's values (NumPy) or symbols (PyTensor)."""
    fixed = np.arange(*spec.score_range) + 0.5
    cut = draw.get("cutpoints", fixed if lib is np else pt.as_tensor(fixed))
    return ordinal.OrdinalParameters(
        draw.get("mu"), draw.get("sigma_T"), draw.get("alpha"), draw.get("beta"), draw.get("tau"), draw.get("rater_offset"),
        draw.get("sigma_rater", draw.get("sigma_e")), ordinal.padded_cutpoints(cut, lib), data.center,
    )


def ordinal_loglik(data, spec: TrueScoreSpec, p: dict) -> np.ndarray:
    """Pointwise log-likelihood (samples x responses) of the ordinal model at parameter draws
    ``p`` (samples first): the per-unit terms compiled once, evaluated per draw."""
    units = ordinal_units(data, spec.score_range[0], spec.rater_effects or spec.rater_error == "rater")
    names = sorted(name for name in p if name in ORDINAL_PARAMETERS)
    symbols = {name: pt.tensor(name, shape=(None,) * (p[name].ndim - 1), dtype="float64") for name in names}
    per_unit = pytensor.function(
        [symbols[n] for n in names], ordinal.unit_logliks(units, _ordinal_parameters(symbols, data, spec, pt)),
        on_unused_input="ignore",
    )
    return np.stack([per_unit(*(p[n][j] for n in names))[units.response_unit] for j in range(len(p["mu"]))])


ORDINAL_PARAMETERS = ("mu", "sigma_T", "alpha", "beta", "tau", "rater_offset", "sigma_rater", "sigma_e", "cutpoints")


def ordinal_true_scores(data, spec: TrueScoreSpec, draws: xr.Dataset, rng: np.random.Generator) -> xr.DataArray:
    """Exact conditional draws of T_i under the ordinal model, one per posterior draw."""
    units = ordinal_units(data, spec.score_range[0], spec.rater_effects or spec.rater_error == "rater")
    values = np.empty((draws.sizes["sample"], len(data.responses)))
    for j in range(draws.sizes["sample"]):
        one = draws.isel(sample=j)
        params = _ordinal_parameters({name: one[name].to_numpy() for name in one.data_vars}, data, spec, np)
        values[j] = ordinal.draw_true_scores(units, params, rng)
    return xr.DataArray(values, dims=("sample", "response"), coords={"response": data.responses}, name="true_score")


def draws_for_model(posterior: xr.Dataset, model: pm.Model, names: list[str], system) -> xr.Dataset:
    """The posterior draws of ``names`` shaped as ``model`` expects them: the slice of
    one system's fit, with every dimension cut to the model's own coordinates."""
    out = {}
    for name in names:
        values = posterior[name]
        dims = model.named_vars_to_dims.get(name, ())
        if system is not None and "system" not in dims:
            values = values.sel(system=system)
        out[name] = values.sel({dim: list(model.coords[dim]) for dim in dims})
    return xr.Dataset(out)


class TrueScoreGroups:
    """The methods of :class:`~bayes_raters.ctt.result.TrueScoreResult` that build and read
    these groups (a mixin: it uses the result's ``idata``, ``spec``, ``posterior``, ``ratings``
    and ``system_scores``)."""

    spec: TrueScoreSpec

    def fit_tree(self, system=None) -> xr.DataTree:
        """The groups of one fit as a standard DataTree without the ``system`` dimension of
        the separate fits (``None``: the only system, or the joint fit), e.g. for
        ``az.plot_energy(result.fit_tree("engine_a"))``. Rows and responses that fit did not
        use (another system's) are left out."""
        if self.spec.joint:
            return self.idata
        systems = list(self.posterior["system"].values)
        if system is None and len(systems) == 1:
            system = systems[0]
        if system not in systems:
            raise InvalidInputError(f"pick the fit: system= one of {systems}.")
        groups = {}
        for name, node in self.idata.children.items():
            group = node.to_dataset()
            if "system" in group.dims and name not in ("closed_form",):
                group = group.sel(system=system, drop=True)
            groups[name] = group
        used = groups["constant_data"]["score_system"].values.astype(str) == str(system) if "constant_data" in groups else None
        if used is not None:
            responses = set(groups["constant_data"]["score_response"].values[used].astype(str))
            rows = np.isin(groups["constant_data"]["rating_response"].values.astype(str), list(responses))
            for name in ("observed_data", "constant_data", "posterior_predictive"):
                if name in groups:
                    groups[name] = groups[name].isel(rating=rows, system_row=used, missing_dims="ignore")
        if "log_likelihood" in groups:
            groups["log_likelihood"] = groups["log_likelihood"].dropna("response", how="all")
        return xr.DataTree.from_dict(groups)

    def pointwise_tree(self, system=None) -> xr.DataTree:
        """One fit's groups with its pointwise log-likelihood per response (computed first if
        missing): the joint fit, or one system's separate fit (``system``; None: the only one).
        Separate fits are separate models, so their responses are not pooled into one LOO."""
        self.compute_log_likelihood()
        systems = [] if self.spec.joint else list(self.posterior["system"].values)
        if system is None and len(systems) > 1:
            raise InvalidInputError(f"one fit per system: result.loo(system=...) with one of {systems}, "
                                    "az.compare({name: r.fit_tree(system) ...}), or fit_true_score(..., joint=True).")
        return self.fit_tree(system)

    def loo(self, system=None):
        """``az.loo`` over responses of the joint fit or of one system's fit
        (:meth:`pointwise_tree`)."""
        return az.loo(self.pointwise_tree(system), pointwise=True)

    def _fits(self):
        """(system or None, TrueScoreData, model) of every fit behind the result."""
        rated, scored = self.ratings, self.system_scores
        chosen = [None] if self.spec.joint else list(self.posterior["system"].values)
        for system in chosen:
            data = model_data(rated, scored, self.spec, None if system is None else [system])
            yield system, data, build_from_data(data, self.spec)

    def _fit_draws(self, draws: xr.Dataset, system, model) -> xr.Dataset:
        """The draws of one fit's parameters, shaped as its model expects them."""
        names = [v.name for v in model.free_RVs + model.deterministics if v.name in draws]
        return draws_for_model(draws, model, names, system)

    def _per_fit(self, pieces: dict, dim: str, coords: dict, size: int, draws: xr.Dataset) -> xr.DataArray:
        """Arrays (samples x rows) of each fit, placed in the full ``dim`` (NaN where a fit has
        none), with a ``system`` dimension for separate fits."""
        shape = (draws.sizes["chain"], draws.sizes["draw"], size)
        arrays = []
        for rows, values in pieces.values():
            full = np.full(shape, np.nan)
            full[:, :, rows] = values.reshape(shape[0], shape[1], -1)
            arrays.append(full)
        dims = ("chain", "draw", dim)
        base = {"chain": draws["chain"].values, "draw": draws["draw"].values, **coords}
        if self.spec.joint:
            return xr.DataArray(arrays[0], dims=dims, coords=base)
        return xr.DataArray(np.stack(arrays, axis=2), dims=("chain", "draw", "system", dim), coords={**base, "system": list(pieces)})

    def _log_likelihood(self, n_draws: int | None = LOG_LIK_DRAWS) -> xr.Dataset:
        """The pointwise log-likelihood of each response (all its ratings and system scores,
        T integrated out; module docstring) for about ``n_draws`` posterior draws (memory:
        draws x responses)."""
        draws = thinned_posterior(self.posterior, n_draws)
        responses = pd.unique(self.ratings["response"])
        position = pd.Index(responses)
        pieces = {}
        for system, data, model in self._fits():
            p = stacked(self._fit_draws(draws, system, model))
            log_lik = ordinal_loglik(data, self.spec, p) if self.spec.observation == "ordinal" else conditional_and_loglik(data, p)[2]
            pieces["joint" if system is None else system] = (position.get_indexer(data.responses), log_lik)
        array = self._per_fit(pieces, "response", {"response": id_column(responses)}, len(responses), draws)
        return xr.Dataset({"ratings_and_scores": array})

    def _posterior_predictive(self, draws: xr.Dataset, rng: np.random.Generator) -> xr.Dataset:
        rated, scored = self.ratings, self.system_scores
        ratings, systems = {}, {}
        for system, data, model in self._fits():
            fit_draws = self._fit_draws(draws, system, model)
            p = stacked(fit_draws)
            if self.spec.observation == "ordinal":
                true = ordinal_true_scores(data, self.spec, fit_draws.stack(sample=("chain", "draw")), rng).values
            else:
                mean, precision, _ = conditional_and_loglik(data, p)
                true = mean + rng.standard_normal(mean.shape) / np.sqrt(precision)
            rating_rep, system_rep = replicate(data, self.spec, p, true, rng)
            key = "joint" if system is None else system
            used = scored["system"].isin(data.system_ids).to_numpy()
            ratings[key] = (np.flatnonzero(rated["response"].isin(scored["response"][used])), rating_rep)
            systems[key] = (np.flatnonzero(used), system_rep)
        system_score = self._per_fit(systems, "system_row", {}, len(scored), draws)
        if not self.spec.joint:  # each row was replicated by exactly one system's fit
            system_score = system_score.sum("system", min_count=1)
        return xr.Dataset({"rating_score": self._per_fit(ratings, "rating", {}, len(rated), draws), "system_score": system_score})
