r"""The leaderboard model: 1PL/2PL IRT over the answers of many systems to many benchmark items.

.. math::

    P(y_{sj} = 1) = \operatorname{logit}^{-1}\big(a_j(\theta_s - b_j)\big), \qquad
    \theta_s \sim N(0, 1),

    b_j \sim N(\mu_b, \sigma_b), \quad \mu_b \sim N(0, 1), \quad \sigma_b \sim N^+(1.5),

    \log a_j \sim N(\mu_{\log a}, \sigma_{\log a}), \quad \mu_{\log a} \sim N(0, 0.5), \quad
    \sigma_{\log a} \sim N^+(0.5) \quad \text{(2PL; 1PL: one } a \sim \mathrm{LogNormal}(0, 0.5)).

It is the hierarchical joint model of :mod:`bayes_raters.irt.binary.model` (same priors): system
:math:`s` is a respondent, its ability :math:`\theta_s` the leaderboard score; the positive slope
keeps the scale's sign fixed, and the N(0, 1) abilities fix its location and unit (so the scale is
that of these systems: their abilities have mean about 0 and SD about 1). Missing answers (a
system skipped an item) are absent rows. :func:`build_leaderboard_model` writes it in PyMC
(coords ``system`` and ``item``, dims on every variable) for checks and small data;
:func:`~bayes_raters.leaderboard.fit_leaderboard` samples it with the blocked sampler of
:mod:`bayes_raters.leaderboard.sampler`, which scales to leaderboards.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pymc as pm

from bayes_raters.errors import InvalidInputError
from bayes_raters.fit_spec import FitSpec
from bayes_raters.irt.binary.model import validate_responses
from bayes_raters.leaderboard.sampler import B_MEAN_SD, B_SIGMA_SCALE, LOG_A_MEAN_SD, LOG_A_SIGMA_SCALE

#: The models `fit_leaderboard` fits.
LEADERBOARD_MODELS = ("1pl", "2pl")


@dataclass(frozen=True)
class LeaderboardSpec(FitSpec):
    """Options of a leaderboard fit: the ``model`` (:data:`LEADERBOARD_MODELS`)."""

    model: str = "2pl"


def check_model(model: str) -> str:
    """The model name in lower case, or an error naming the choices."""
    name = str(model).lower()
    if name not in LEADERBOARD_MODELS:
        raise InvalidInputError(
            f"model={model!r} is not a leaderboard model; use model='2pl' or model='1pl' (the 3PL/4PL and the "
            "polytomous models are in bayes_raters.irt: fit_irt, fit_polytomous)."
        )
    return name


@dataclass(frozen=True)
class AnswerMatrix:
    """The answers as a dense int8 matrix (systems x items; 1 right, 0 wrong, -1 not answered),
    its transpose (items x systems, contiguous, for the item passes), the ids in matrix order
    and the validated long ``table`` (``respondent, item, correct``)."""

    answers: np.ndarray
    answers_t: np.ndarray
    systems: pd.Index
    items: pd.Index
    table: pd.DataFrame
    system_index: np.ndarray
    item_index: np.ndarray


def answer_matrix(answers: pd.DataFrame, *, respondent: str = "respondent", item: str = "item", score: str = "correct") -> AnswerMatrix:
    """Validate long answers (:func:`bayes_raters.irt.binary.model.validate_responses`: the
    columns, 0/1 answers, no duplicate (system, item) pair, two systems and two items) and lay
    them out as :class:`AnswerMatrix`, systems and items in order of first appearance.

    Parameters
    ----------
    answers : pandas.DataFrame
        One row per (system, item) answer.
    respondent, item, score : str
        Column names of the system, the item and the 0/1 answer.

    Returns
    -------
    AnswerMatrix
        The matrix, its transpose and the ids.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayes_raters.leaderboard import answer_matrix
    >>> answers = pd.DataFrame({"respondent": ["m1", "m1", "m2", "m3"], "item": ["q1", "q2", "q2", "q1"], "correct": [1, 0, 1, 0]})
    >>> answer_matrix(answers).answers.tolist()
    [[1, 0], [-1, 1], [0, -1]]
    """
    table = validate_responses(answers, respondent=respondent, item=item, score=score, calibration=True)
    system_index, systems = pd.factorize(table["respondent"])
    item_index, items = pd.factorize(table["item"])
    matrix = np.full((len(systems), len(items)), -1, dtype=np.int8)
    matrix[system_index, item_index] = table["correct"].to_numpy().astype(np.int8)
    return AnswerMatrix(matrix, np.ascontiguousarray(matrix.T), pd.Index(systems, name="system"), pd.Index(items, name="item"),
                        table, system_index.astype(np.int64), item_index.astype(np.int64))


def build_leaderboard_model(
    answers: pd.DataFrame, model: str = "2pl", *, respondent: str = "respondent", item: str = "item", score: str = "correct"
) -> pm.Model:
    """The leaderboard model (module docstring) in PyMC, without sampling: coords ``system``,
    ``item`` and ``answer``, the abilities ``theta`` (system), ``a`` and ``b`` (item), the
    hyperparameters, and the observed ``correct`` (answer). Centred, as the blocked sampler
    samples it; NUTS on it suits a few thousand answers (the checks of the sampler use it).

    Parameters
    ----------
    answers : pandas.DataFrame
        Long answers, one row per (system, item).
    model : {"2pl", "1pl"}
        Common slope (1PL) or one per item (2PL).
    respondent, item, score : str
        Column names.

    Returns
    -------
    pymc.Model
        The model, ready for ``pm.sample``.

    Examples
    --------
    >>> from bayes_raters.leaderboard import build_leaderboard_model, simulate_leaderboard
    >>> answers, _ = simulate_leaderboard(5, 8, random_seed=1)
    >>> sorted(build_leaderboard_model(answers).coords)
    ['answer', 'item', 'system']
    """
    name = check_model(model)
    data = answer_matrix(answers, respondent=respondent, item=item, score=score)
    coords = {"system": list(data.systems), "item": list(data.items), "answer": np.arange(len(data.table))}
    with pm.Model(coords=coords) as pymc_model:
        theta = pm.Normal("theta", 0.0, 1.0, dims="system")
        b_mean = pm.Normal("b_mean", 0.0, B_MEAN_SD)
        b_sigma = pm.HalfNormal("b_sigma", B_SIGMA_SCALE)
        b = pm.Normal("b", b_mean, b_sigma, dims="item")
        if name == "2pl":
            log_a_mean = pm.Normal("log_a_mean", 0.0, LOG_A_MEAN_SD)
            log_a_sigma = pm.HalfNormal("log_a_sigma", LOG_A_SIGMA_SCALE)
            log_a = pm.Normal("log_a", log_a_mean, log_a_sigma, dims="item")
            a = pm.Deterministic("a", pm.math.exp(log_a), dims="item")
        else:
            a_common = pm.LogNormal("a_common", 0.0, LOG_A_MEAN_SD)
            a = pm.Deterministic("a", a_common * pm.math.ones(len(data.items)), dims="item")
        s, j = data.system_index, data.item_index
        eta = a[j] * (theta[s] - b[j])
        pm.Bernoulli("correct", logit_p=eta, observed=data.table["correct"].to_numpy(), dims="answer")
    return pymc_model
