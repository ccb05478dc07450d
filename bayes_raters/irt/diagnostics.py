r"""Item diagnostics for fitted IRT models: information, posterior predictive item fit,
LOO Pareto-k per item, flags, scoring of new respondents and reliability.

Item information of the four-parameter logistic model:

.. math::

    I_j(\theta) = \frac{a_j^2 (P - c_j)^2 (d_j - P)^2}{(d_j - c_j)^2 P (1 - P)},
    \qquad P = P_j(\theta),

which is :math:`a_j^2 P (1 - P)` for 1PL/2PL. Test information is the sum over items and
the standard error of :math:`\theta` is :math:`1/\sqrt{I(\theta)}`.

Item fit: per posterior draw, a grouped Pearson discrepancy of item j over ability groups
(in the spirit of Yen's Q1 / mirt's S-X2, with the ability uncertainty carried by the
draws) for the observed answers and for answers replicated from the model; the posterior
predictive p-value is :math:`P(X^2_j(y^{rep}) \ge X^2_j(y))`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.irt.binary.model import irt_probability

PARAMETERS = ("a", "b", "c", "d")


def item_parameters(posterior: xr.Dataset) -> dict[str, xr.DataArray]:
    """a, b, c, d draws with dims (chain, draw, item); c = 0 and d = 1 where absent."""
    out = {name: posterior[name] for name in ("a", "b")}
    zeros = xr.zeros_like(posterior["b"])
    out["c"] = posterior["c"] if "c" in posterior else zeros
    out["d"] = posterior["d"] if "d" in posterior else zeros + 1.0
    return out


def item_information(a, b, c, d, theta) -> np.ndarray:
    """Fisher information of items (last axis) at abilities ``theta`` (broadcasting).

    Parameters
    ----------
    a, b, c, d : array_like
        Slope, difficulty, lower and upper asymptote of each item.
    theta : array_like
        Abilities.

    Returns
    -------
    numpy.ndarray
        The information, broadcast over the inputs.

    Examples
    --------
    >>> from bayes_raters.irt import item_information
    >>> float(item_information(1.0, 0.0, 0.0, 1.0, 0.0))
    0.25
    """
    p = irt_probability(theta, a, b, c, d, lib=np)
    return a**2 * (p - c) ** 2 * (d - p) ** 2 / ((d - c) ** 2 * p * (1 - p))


def information_curves(posterior: xr.Dataset, theta: np.ndarray) -> xr.Dataset:
    """Posterior draws of item information, test information and SE(theta) on a grid.

    Parameters
    ----------
    posterior : xarray.Dataset
        Posterior draws of the item parameters (``a`` and ``b``; ``c``, ``d`` where the model has them).
    theta : numpy.ndarray
        The ability grid.

    Returns
    -------
    xarray.Dataset
        ``item_information`` (chain, draw, item, theta), ``test_information`` and ``se_theta``.

    Examples
    --------
    >>> import numpy as np
    >>> import xarray as xr
    >>> from bayes_raters.irt import information_curves
    >>> draws = {"a": np.ones((1, 2, 3)), "b": np.zeros((1, 2, 3))}
    >>> posterior = xr.Dataset({k: (("chain", "draw", "item"), v) for k, v in draws.items()})
    >>> curves = information_curves(posterior, np.array([-1.0, 0.0, 1.0]))
    >>> curves["test_information"].isel(chain=0, draw=0).round(3).values.tolist()
    [0.59, 0.75, 0.59]
    """
    params = item_parameters(posterior)
    grid = xr.DataArray(np.asarray(theta, float), dims="theta", coords={"theta": np.asarray(theta, float)})
    info = xr.apply_ufunc(item_information, params["a"], params["b"], params["c"], params["d"], grid)
    test = info.sum("item")
    return xr.Dataset({"item_information": info, "test_information": test, "se_theta": 1 / np.sqrt(test)})


def _stacked(posterior: xr.Dataset, n_draws: int, rng: np.random.Generator) -> xr.Dataset:
    stacked = posterior.stack(sample=("chain", "draw"))
    keep = np.sort(rng.choice(stacked.sizes["sample"], size=min(n_draws, stacked.sizes["sample"]), replace=False))
    return stacked.isel(sample=keep)


def posterior_predictive_item_fit(
    posterior: xr.Dataset, table: pd.DataFrame, *, n_draws: int = 200, n_groups: int = 10, random_seed=None
) -> pd.Series:
    """Posterior predictive p-value of a grouped (Yen's Q1-like) item-fit discrepancy.

    Per draw, respondents are split into ``n_groups`` ability groups by that draw's theta;
    for item j, :math:`X^2_j = \\sum_g (O_{jg} - E_{jg})^2 / (E_{jg}(1 - E_{jg}/n_{jg}))` with
    observed and expected numbers correct O, E over the n answers of the group. The p-value
    is P(X^2 of replicated answers >= X^2 of the observed ones) over draws.
    """
    rng = np.random.default_rng(random_seed)
    draws = _stacked(posterior, n_draws, rng)
    params = item_parameters(draws)
    items = pd.Index(draws["item"].values)
    j = items.get_indexer(table["item"])
    i = pd.Index(draws["respondent"].values).get_indexer(table["respondent"])
    thetas = draws["theta"].transpose("sample", "respondent").values
    a, b, c, d = (params[k].transpose("sample", "item").values for k in PARAMETERS)
    y = table["correct"].to_numpy()
    cells = len(items) * n_groups
    exceed = np.zeros(len(items))
    for s in range(thetas.shape[0]):
        group = np.minimum((np.argsort(np.argsort(thetas[s])) * n_groups) // thetas.shape[1], n_groups - 1)[i]
        cell = j * n_groups + group
        p = irt_probability(thetas[s, i], a[s, j], b[s, j], c[s, j], d[s, j], lib=np)
        replicated = (rng.random(p.size) < p).astype(float)
        n = np.bincount(cell, minlength=cells)
        expected = np.bincount(cell, p, minlength=cells)
        variance = np.maximum(np.bincount(cell, p * (1 - p), minlength=cells), 1e-9)

        def x2(values):
            per_cell = (np.bincount(cell, values, minlength=cells) - expected) ** 2 / variance
            return np.where(n > 0, per_cell, 0.0).reshape(len(items), n_groups).sum(axis=1)

        exceed += x2(replicated) >= x2(y)
    return pd.Series(exceed / thetas.shape[0], index=items, name="fit_ppp")


def expected_a_posteriori(
    answers: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray, grid: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Posterior of theta on a grid (N(0, 1) prior) for each item draw and respondent.

    ``answers``: (respondents, items) with NaN where not answered; item parameters:
    (draws, items). Returns grid weights of shape (draws, respondents, grid)."""
    p = irt_probability(grid[None, None, :], a[:, :, None], b[:, :, None], c[:, :, None], d[:, :, None], lib=np)
    p = np.clip(p, 1e-12, 1 - 1e-12)  # (draws, items, grid)
    seen = ~np.isnan(answers)
    y = np.nan_to_num(answers)
    log_lik = np.einsum("ri,sig->srg", y * seen, np.log(p)) + np.einsum("ri,sig->srg", (1 - y) * seen, np.log1p(-p))
    log_post = log_lik - 0.5 * grid[None, None, :] ** 2
    log_post -= log_post.max(axis=-1, keepdims=True)
    weights = np.exp(log_post)
    return weights / weights.sum(axis=-1, keepdims=True), grid


def empirical_reliability(theta_mean: np.ndarray, theta_sd: np.ndarray) -> float:
    r"""Empirical (marginal) reliability :math:`\mathrm{Var}(\hat\theta) / (\mathrm{Var}(\hat\theta) + \overline{SD^2})`
    of posterior means :math:`\hat\theta` with posterior SDs.

    Parameters
    ----------
    theta_mean, theta_sd : numpy.ndarray
        Posterior means and SDs of the abilities.

    Returns
    -------
    float
        The reliability, between 0 and 1.

    Examples
    --------
    >>> from bayes_raters.irt import empirical_reliability
    >>> round(empirical_reliability([-1.0, 0.0, 1.0], [0.5, 0.5, 0.5]), 3)
    0.727
    """
    spread = np.var(theta_mean)
    return float(spread / (spread + np.mean(np.asarray(theta_sd) ** 2)))
