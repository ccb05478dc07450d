r"""The simulation design of Loukina et al. (2020), seeded and parameterised.

True scores :math:`T_i \sim N(\mu, \sigma)` clipped to the score range. Rater k of a
category with error SD :math:`s_k` scores :math:`H_{ik} = \mathrm{clip}(\mathrm{round}(T_i +
e_{ik}))`, :math:`e_{ik} \sim N(0, s_k)`. A system with target :math:`R^2` scores
:math:`M_i = T_i + u_i`, :math:`u_i \sim N(0, \sqrt{\widehat{Var}(T)(1 - R^2)})` (neither
rounded nor clipped), so that its :math:`R^2` against the true score is about the target.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.errors import InvalidInputError

#: Rater error SDs per category; inter-rater r about 0.40 / 0.55 / 0.65 / 0.80.
RATER_ERROR_SDS: dict[str, float] = {"low": 0.85, "moderate": 0.60, "average": 0.46, "high": 0.24}
#: Target R2 against the true score per system category.
SYSTEM_R2: dict[str, float] = {"poor": 0.0, "low": 0.4, "medium": 0.65, "high": 0.8, "perfect": 0.99}

RandomSeed = int | np.random.Generator | None


def _check_design(
    n_responses: int, true_sd: float, score_range: tuple[float, float], rater_error_sds, system_r2
) -> None:
    if int(n_responses) < 2:
        raise InvalidInputError(f"n_responses must be at least 2, got {n_responses}.")
    if true_sd <= 0:
        raise InvalidInputError(f"true_sd must be positive, got {true_sd}.")
    if not score_range[0] < score_range[1]:
        raise InvalidInputError(f"score_range must be (low, high) with low < high, got {score_range}.")
    if any(sd < 0 for sd in rater_error_sds.values()):
        raise InvalidInputError(f"rater error SDs must be >= 0, got {dict(rater_error_sds)}.")
    if any(not 0 <= r2 <= 1 for r2 in system_r2.values()):
        raise InvalidInputError(f"system R2 targets must lie in [0, 1], got {dict(system_r2)}.")


def simulate_dataset(
    n_responses: int = 10_000,
    *,
    true_mean: float = 3.844,
    true_sd: float = 0.74,
    score_range: tuple[float, float] = (1, 6),
    rater_error_sds: Mapping[str, float] = RATER_ERROR_SDS,
    raters_per_category: int = 50,
    system_r2: Mapping[str, float] = SYSTEM_R2,
    systems_per_category: int = 5,
    random_seed: RandomSeed = None,
) -> xr.Dataset:
    """Simulate true scores, human ratings and system scores (see module docstring).

    Returns an :class:`xarray.Dataset` with ``true_score`` (response), ``rating``
    (response, rater; integer-valued floats) and ``system_score`` (response, system),
    and coordinates ``rater_category`` (rater), ``rater_error_sd`` (rater),
    ``system_category`` (system) and ``system_r2_target`` (system). Raters are named
    ``h_1 ..`` and systems ``sys_1 ..`` in category order, as in ETS's prmse-simulations.

    Parameters
    ----------
    n_responses : int
        The number of responses.
    true_mean, true_sd : float
        Mean and standard deviation of the true scores (before rounding to the scale).
    score_range : tuple of float
        The scale; human ratings are rounded and clipped to its integers.
    rater_error_sds : mapping of str to float
        Rater category -> the error SD of its raters.
    raters_per_category : int
        Raters simulated in each rater category.
    system_r2 : mapping of str to float
        System category -> the target :math:`R^2` of its systems against the true score.
    systems_per_category : int
        Systems simulated in each system category.
    random_seed : int, numpy.random.Generator or None
        Seed of every draw.

    Returns
    -------
    xarray.Dataset
        True scores, ratings and system scores with the coordinates above.

    Examples
    --------
    >>> from bayes_raters.ctt import simulate_dataset
    >>> dataset = simulate_dataset(500, raters_per_category=2, systems_per_category=1, random_seed=1)
    >>> dict(dataset.sizes)
    {'response': 500, 'rater': 8, 'system': 5}
    """
    _check_design(n_responses, true_sd, score_range, rater_error_sds, system_r2)
    rng = np.random.default_rng(random_seed)
    low, high = score_range
    true = np.clip(rng.normal(true_mean, true_sd, size=int(n_responses)), low, high)

    rater_category = np.repeat(list(rater_error_sds), raters_per_category)
    rater_sd = np.repeat(list(rater_error_sds.values()), raters_per_category).astype(float)
    errors = rng.normal(0.0, 1.0, size=(true.size, rater_sd.size)) * rater_sd
    ratings = np.clip(np.round(true[:, None] + errors), low, high)

    system_category = np.repeat(list(system_r2), systems_per_category)
    r2 = np.repeat(list(system_r2.values()), systems_per_category).astype(float)
    system_sd = np.sqrt(np.var(true, ddof=1) * (1 - r2))
    system_scores = true[:, None] + rng.normal(0.0, 1.0, size=(true.size, r2.size)) * system_sd

    raters = [f"h_{k + 1}" for k in range(rater_sd.size)]
    systems = [f"sys_{k + 1}" for k in range(r2.size)]
    return xr.Dataset(
        {
            "true_score": ("response", true),
            "rating": (("response", "rater"), ratings),
            "system_score": (("response", "system"), system_scores),
        },
        coords={
            "response": np.arange(true.size),
            "rater": raters,
            "system": systems,
            "rater_category": ("rater", rater_category),
            "rater_error_sd": ("rater", rater_sd),
            "system_category": ("system", system_category),
            "system_r2_target": ("system", r2),
        },
        attrs={"score_min": float(low), "score_max": float(high), "design": "Loukina et al. (2020)"},
    )


def ratings_to_long(dataset: xr.Dataset, raters: Sequence[str] | None = None) -> pd.DataFrame:
    """Long ratings ``response, rater, score`` of the chosen raters (default: all).

    Parameters
    ----------
    dataset : xarray.Dataset
        A data set of :func:`simulate_dataset`.
    raters : sequence of str, optional
        The raters to keep; default all.

    Returns
    -------
    pandas.DataFrame
        Long ratings ``response, rater, score``.

    Examples
    --------
    >>> from bayes_raters.ctt import ratings_to_long, simulate_dataset
    >>> dataset = simulate_dataset(100, random_seed=1)
    >>> ratings_to_long(dataset, ["h_1", "h_2"]).shape
    (200, 3)
    """
    rating = dataset["rating"] if raters is None else dataset["rating"].sel(rater=list(raters))
    frame = rating.to_dataframe(name="score").reset_index()
    return frame[["response", "rater", "score"]]


def system_scores_to_long(dataset: xr.Dataset, systems: Sequence[str] | None = None) -> pd.DataFrame:
    """Long system scores ``response, system, score`` of the chosen systems (default: all).

    Parameters
    ----------
    dataset : xarray.Dataset
        A data set of :func:`simulate_dataset`.
    systems : sequence of str, optional
        The systems to keep; default all.

    Returns
    -------
    pandas.DataFrame
        Long system scores ``response, system, score``.
    """
    scores = dataset["system_score"] if systems is None else dataset["system_score"].sel(system=list(systems))
    frame = scores.to_dataframe(name="score").reset_index()
    return frame[["response", "system", "score"]]


def double_scored_subset(
    dataset: xr.Dataset,
    raters: tuple[str, str],
    n_double: int,
    *,
    only_double_scored: bool = False,
    random_seed: RandomSeed = None,
) -> pd.DataFrame:
    """Long ratings where every response has ``raters[0]``'s score and ``n_double``
    responses, drawn without replacement, also have ``raters[1]``'s.

    With ``only_double_scored=True`` only those ``n_double`` responses are returned
    (the stand-alone sample of Loukina et al., Section 5.3).

    Parameters
    ----------
    dataset : xarray.Dataset
        A data set of :func:`simulate_dataset`.
    raters : tuple of str
        The first rater (scores every response) and the second (scores ``n_double`` of them).
    n_double : int
        The number of double-scored responses.
    only_double_scored : bool
        Keep only the double-scored responses.
    random_seed : int, numpy.random.Generator or None
        Seed of the choice of double-scored responses.

    Returns
    -------
    pandas.DataFrame
        Long ratings ``response, rater, score``.
    """
    first, second = raters
    n_responses = dataset.sizes["response"]
    if not 1 <= int(n_double) <= n_responses:
        raise InvalidInputError(f"n_double must be between 1 and {n_responses}, got {n_double}.")
    if first == second:
        raise InvalidInputError(f"raters must be two different raters, got {raters}.")
    rng = np.random.default_rng(random_seed)
    chosen = np.sort(rng.choice(n_responses, size=int(n_double), replace=False))
    responses = dataset["response"].to_numpy()
    double = responses[chosen]
    kept = double if only_double_scored else responses
    first_scores = dataset["rating"].sel(rater=first, response=kept).to_numpy()
    second_scores = dataset["rating"].sel(rater=second, response=double).to_numpy()
    return pd.DataFrame(
        {
            "response": np.concatenate([kept, double]),
            "rater": [first] * kept.size + [second] * double.size,
            "score": np.concatenate([first_scores, second_scores]),
        }
    ).sort_values(["response", "rater"], kind="stable", ignore_index=True)
