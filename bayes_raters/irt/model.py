r"""Item response theory in PyMC: 1PL, 2PL, 3PL and 4PL for right/wrong answers.

.. math::

    P(y_{ij} = 1 \mid \theta_i) = c_j + (d_j - c_j)\,\operatorname{logit}^{-1}\big(a_j(\theta_i - b_j)\big)

with ability :math:`\theta_i \sim N(0, 1)` (fixes the scale's location and unit),
difficulty :math:`b_j`, discrimination :math:`a_j > 0` (log-normal, so the scale cannot
flip sign between runs), lower asymptote (guessing) :math:`c_j` and upper asymptote
:math:`d_j`. 1PL: one common :math:`a`, :math:`c = 0`, :math:`d = 1`; 2PL: :math:`a_j`;
3PL: + :math:`c_j \sim \mathrm{Beta}(2, 2(k - 1))` (mean 1/k for k answer options);
4PL: + :math:`d_j \sim \mathrm{Beta}(20, 1)`. ``hierarchical=True`` (the default) puts
population priors on the items, :math:`b_j \sim N(\mu_b, \sigma_b)` (:math:`\mu_b \sim N(0, 1)`,
:math:`\sigma_b \sim N^+(1.5)`) and :math:`\log a_j \sim N(\mu_{\log a}, \sigma_{\log a})`
(:math:`N(0, 0.5)`, :math:`N^+(0.5)`), centred where every item has 330 answers or more and
non-centred below (500 for :math:`\log a`; :func:`centred_items`); centred means the items'
mean and their zero-sum deviations, with :math:`\mu` integrated out (:func:`_population`). ``hierarchical=False`` uses fixed
:math:`b_j \sim N(0, 2)`, :math:`a_j \sim \mathrm{LogNormal}(0, 0.5)`. Observations are a Bernoulli ``correct`` (logit link
written out for 1PL/2PL, see :func:`bernoulli_logit_logp`) with dims ``answer`` (one per row), so ``pm.compute_log_likelihood`` feeds ``az.loo``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
from scipy.special import expit

from bayes_raters.data import validate_long
from bayes_raters.errors import InsufficientDataError, InvalidInputError, SmallSampleWarning

IRT_MODELS = ("1pl", "2pl", "3pl", "4pl")


def validate_responses(
    responses: pd.DataFrame,
    *,
    respondent: str = "respondent",
    item: str = "item",
    correct: str = "correct",
    items: list | None = None,
    respondents: list | None = None,
    calibration: bool = True,
) -> pd.DataFrame:
    """Validate a long table of answers, one row per (respondent, item), ``correct`` 0/1.

    Raises :class:`InvalidInputError` for missing columns, duplicates, non-binary answers,
    and declared ``items`` / ``respondents`` with no answer. For calibration
    (``calibration=True``) it also needs two respondents and two items and warns
    (:class:`SmallSampleWarning`) for items everyone got right or wrong, whose
    difficulty is only bounded, not estimated.
    """
    table = validate_long(responses, {"respondent": respondent, "item": item}, correct, "responses", score_role="correct")
    table = table.rename(columns={"score": "correct"})
    values = set(np.unique(table["correct"]))
    if not values <= {0.0, 1.0}:
        raise InvalidInputError(
            f"responses: column {correct!r} must be 0 (wrong) or 1 (right); found {sorted(values - {0.0, 1.0})[:5]}. "
            "Score each answer against its key first."
        )
    for declared, column in ((items, "item"), (respondents, "respondent")):
        if declared is not None:
            unanswered = sorted(set(declared) - set(table[column]), key=str)
            if unanswered:
                raise InvalidInputError(
                    f"responses: {len(unanswered)} {column}(s) have no answer at all, e.g. {unanswered[:5]}. "
                    f"Drop them: nothing can be estimated for a {column} without data."
                )
    if not calibration:  # answers to score on an already calibrated scale
        return table
    if table["respondent"].nunique() < 2 or table["item"].nunique() < 2:
        raise InsufficientDataError("IRT needs at least two respondents and two items.")
    proportion = table.groupby("item", sort=False)["correct"].mean()
    extreme = proportion.index[(proportion == 0) | (proportion == 1)].tolist()
    if extreme:
        warnings.warn(
            f"item(s) {extreme[:10]} were answered all right or all wrong by everyone: their difficulty "
            "is bounded by the prior, not estimated. Consider dropping them.",
            SmallSampleWarning,
            stacklevel=2,
        )
    return table


def irt_probability(theta, a, b, c=0.0, d=1.0, lib=pt):
    """P(correct) of the four-parameter logistic model (broadcasting)."""
    sigmoid = pm.math.sigmoid if lib is pt else (lambda x: 1 / (1 + np.exp(-x)))
    return c + (d - c) * sigmoid(a * (theta - b))


def bernoulli_logit_logp(value, eta):
    r""":math:`\log p(y \mid \eta) = y\,\eta - \log(1 + e^{\eta})`, the Bernoulli log-likelihood
    on the logit scale.

    Written out rather than ``pm.Bernoulli(logit_p=)`` because PyMC's form (a switch over
    two ``log1pexp`` branches plus parameter checks) makes the log-density + gradient 2.3x
    slower at 1M answers (33 vs 14 ms; ``benchmarks/bench_irt.py --gradient-only``).
    """
    return value * eta - pt.softplus(eta)


def bernoulli_logit_random(eta, rng=None, size=None):
    """Draws of ``correct`` for ``pm.sample_prior_predictive`` / ``sample_posterior_predictive``."""
    return rng.binomial(1, expit(eta), size=size)


def option_count(n_options: int | None) -> int:
    """Answer options per item for the 3PL/4PL guessing prior (default 4)."""
    k = 4 if n_options is None else int(n_options)
    if k < 2:
        raise InvalidInputError(f"n_options must be at least 2, got {n_options}.")
    return k


#: Centre a hierarchical item prior when every item has at least this many answers.
CENTRED_MIN_ANSWERS = {"b": 330, "log_a": 500}


def centred_items(table: pd.DataFrame) -> dict[str, bool]:
    """Parameterisation of the hierarchical priors: centred where every item's likelihood
    dominates its prior (:data:`CENTRED_MIN_ANSWERS`), non-centred otherwise. Measured (2PL,
    2 x (1,000 + 1,000)): 400 x 20, min bulk ESS 1,220-1,360 all centred against 250-310 all
    non-centred; 300 x 8 (270 answers per item), 35 divergences with log a centred, none with
    b centred and log a non-centred in 3 of 4 seeds but 5 in the fourth; 300 x 15, b centred:
    1 divergence in 5 seeds, none with b non-centred (5 seeds, min bulk ESS 533-696); the 400 x 20
    suite fixture with 10% missing (at least 352 answers per item) needs b centred; 1,000 x 5,
    17 leapfrog steps per draw all centred against 31 with log a non-centred."""
    answers = int(table.groupby("item").size().min())
    return {name: answers >= least for name, least in CENTRED_MIN_ANSWERS.items()}


def _population(name: str, prior_sd: float, scale, centred: bool, n_items: int):
    r"""``name`` ~ N(mu, scale) per item with mu ~ N(0, prior_sd), in one of two forms.

    Non-centred: ``{name}_mu`` and ``{name}_z`` ~ N(0, 1), name = mu + scale * z. Centred: the
    items' mean and their deviations from it, which are independent under this prior,
    :math:`\bar x \sim N(0, \sqrt{s_0^2 + \sigma^2 / J})` (``{name}_mean``, mu integrated
    out) and :math:`x - \bar x \sim \text{ZeroSumNormal}(\sigma)` (``{name}_dev``). The
    same prior; but the direction in which all items move together (pinned only by
    theta ~ N(0, 1), so far better determined than any one item) becomes one coordinate,
    which a diagonal mass matrix can scale. Measured at 2,000 x 100 (2PL, PyMC's NUTS,
    2 x (1,000 + 1,000)): centred items 30 leapfrog steps per draw, step size 0.17, max folded
    R-hat 1.013; mean and deviations: see ``models/irt.md``."""
    if centred:
        mean = pm.Normal(f"{name}_mean", 0.0, pt.sqrt(prior_sd**2 + scale**2 / n_items))
        deviation = pm.ZeroSumNormal(f"{name}_dev", sigma=scale, dims="item")
        return pm.Deterministic(name, mean + deviation, dims="item")
    z = pm.Normal(f"{name}_z", 0.0, 1.0, dims="item")
    return pm.Deterministic(name, pm.Normal(f"{name}_mu", 0.0, prior_sd) + scale * z, dims="item")


def item_priors(model: str, k: int, n_items: int, hierarchical: bool, centred: dict | None = None):
    """Item parameters ``(a, b, c, d)`` with the priors of the module docstring, inside the
    current model context (dims ``item``); c = 0 and d = 1 (constants) where the model has none.
    ``centred``: parameterisation of each hierarchical prior (:func:`centred_items`; default
    all centred)."""
    centred = {"b": True, "log_a": True} if centred is None else centred
    if hierarchical:
        b = _population("b", 1.0, pm.HalfNormal("b_sigma", 1.5), centred["b"], n_items)
    else:
        b = pm.Normal("b", 0.0, 2.0, dims="item")
    if model == "1pl":
        a_common = pm.LogNormal("a_common", 0.0, 0.5)
        a = pm.Deterministic("a", a_common * pt.ones(n_items), dims="item")
    elif hierarchical:
        log_a = _population("log_a", 0.5, pm.HalfNormal("log_a_sigma", 0.5), centred["log_a"], n_items)
        a = pm.Deterministic("a", pt.exp(log_a), dims="item")
    else:
        a = pm.LogNormal("a", 0.0, 0.5, dims="item")
    c = pm.Beta("c", 2.0, 2.0 * (k - 1), dims="item") if model in ("3pl", "4pl") else 0.0
    d = pm.Beta("d", 20.0, 1.0, dims="item") if model == "4pl" else 1.0
    return a, b, c, d


def build_irt_model(
    responses: pd.DataFrame,
    model: str = "2pl",
    *,
    n_options: int | None = None,
    hierarchical: bool = True,
    respondent: str = "respondent",
    item: str = "item",
    correct: str = "correct",
) -> pm.Model:
    """Build (without sampling) the IRT model of the module docstring from long answers.

    ``n_options`` (answer options per item) sets the guessing prior of 3PL/4PL (default 4).
    Coords: ``respondent``, ``item``, ``answer`` (rows).
    """
    if model not in IRT_MODELS:
        raise InvalidInputError(f"model must be one of {IRT_MODELS}, got {model!r}.")
    table = validate_responses(responses, respondent=respondent, item=item, correct=correct)
    return build_from_table(table, model, n_options=n_options, hierarchical=hierarchical)


def build_from_table(table: pd.DataFrame, model: str, *, n_options: int | None, hierarchical: bool) -> pm.Model:
    """Build from a validated table (columns respondent, item, correct)."""
    respondents = pd.unique(table["respondent"])
    items = pd.unique(table["item"])
    k = option_count(n_options)
    coords = {"respondent": respondents, "item": items, "answer": np.arange(len(table))}
    with pm.Model(coords=coords) as irt:
        person = pm.Data("answer_respondent", pd.Index(respondents).get_indexer(table["respondent"]), dims="answer")
        question = pm.Data("answer_item", pd.Index(items).get_indexer(table["item"]), dims="answer")
        observed = pm.Data("answer_correct", table["correct"].to_numpy().astype("int64"), dims="answer")
        theta = pm.Normal("theta", 0.0, 1.0, dims="respondent")
        a, b, c, d = item_priors(model, k, len(items), hierarchical, centred_items(table))
        eta = a[question] * (theta[person] - b[question])
        if model in ("1pl", "2pl"):
            pm.CustomDist(
                "correct", eta, logp=bernoulli_logit_logp, random=bernoulli_logit_random,
                observed=observed, dtype="int64", dims="answer",
            )
        else:
            p = c[question] + ((d[question] if model == "4pl" else 1.0) - c[question]) * pm.math.sigmoid(eta)
            pm.Bernoulli("correct", p=p, observed=observed, dims="answer")
    return irt
