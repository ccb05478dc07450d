r"""Item response theory in PyMC: 1PL, 2PL, 3PL and 4PL for right/wrong answers.

.. math::

    P(y_{ij} = 1 \mid \theta_i) = c_j + (d_j - c_j)\,\operatorname{logit}^{-1}\big(a_j(\theta_i - b_j)\big)

with ability :math:`\theta_i \sim N(0, 1)` (fixes the scale's location and unit),
difficulty :math:`b_j`, discrimination :math:`a_j > 0` (log-normal, so the scale cannot
flip sign between runs), lower asymptote (guessing) :math:`c_j` and upper asymptote
:math:`d_j`. 1PL: one common :math:`a`, :math:`c = 0`, :math:`d = 1`; 2PL: :math:`a_j`;
3PL: + :math:`c_j \sim \mathrm{Beta}(2, 2(k - 1))` (mean 1/k for k answer options);
4PL: + :math:`d_j \sim \mathrm{Beta}(20, 1)`. ``hierarchical=True`` (the default from
:data:`HIERARCHY_MIN_ITEMS` = 10 items on, :func:`resolve_hierarchical`) puts
population priors on the items, :math:`b_j \sim N(\mu_b, \sigma_b)` (:math:`\mu_b \sim N(0, 1)`,
:math:`\sigma_b \sim N^+(1.5)`) and :math:`\log a_j \sim N(\mu_{\log a}, \sigma_{\log a})`
(:math:`N(0, 0.5)`, :math:`N^+(0.5)`), centred where every item has 330 answers or more and
non-centred below (500 for :math:`\log a`; for the 3PL/4PL :math:`b` from 1,500; :func:`centred_items`). Centred, with :math:`\mu`
integrated out: :math:`\log a` as the items' mean and zero-sum deviations (:func:`_population`),
:math:`b` as each item's logit at a data-based pivot ability plus a common shift
(:func:`_pivoted_difficulty`, :func:`item_pivots`). ``hierarchical=False`` uses fixed
:math:`b_j \sim N(0, 2)`, :math:`a_j \sim \mathrm{LogNormal}(0, 0.5)`. Observations are a Bernoulli ``correct`` (logit link
written out for 1PL/2PL, see :func:`bernoulli_logit_logp`; for 3PL/4PL :func:`guessing_logp`, without the
cancellation of 1 - P) with dims ``answer`` (one per row), so ``pm.compute_log_likelihood`` feeds ``az.loo``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.transforms import ZeroSumTransform
from scipy import special, stats
from scipy.special import expit

from bayes_raters.data import validate_long
from bayes_raters.errors import InsufficientDataError, InvalidInputError, SmallSampleWarning
from bayes_raters.fit_spec import FitSpec

#: The binary IRT models `fit_irt` fits.
IRT_MODELS = ("1pl", "2pl", "3pl", "4pl")


@dataclass(frozen=True)
class IRTSpec(FitSpec):
    """Options of a unidimensional binary IRT fit: the ``model`` (:data:`IRT_MODELS`), the number
    of answer options ``n_options`` behind the guessing prior (None: not a multiple-choice test),
    ``hierarchical`` item priors, and the ``method`` (``"marginal"``: abilities integrated out;
    ``"joint"``: sampled with the items)."""

    model: str = "2pl"
    n_options: int | None = None
    hierarchical: bool = True
    method: str = "marginal"


def validate_responses(
    responses: pd.DataFrame,
    *,
    respondent: str = "respondent",
    item: str = "item",
    score: str = "correct",
    items: list | None = None,
    respondents: list | None = None,
    calibration: bool = True,
) -> pd.DataFrame:
    """Validate a long table of answers, one row per (respondent, item), the ``score`` column 0/1
    (True/False and the text "true"/"false" are read as 1/0).

    Raises :class:`InvalidInputError` for missing columns, duplicates, non-binary answers,
    and declared ``items`` / ``respondents`` with no answer. For calibration
    (``calibration=True``) it also needs two respondents and two items and warns
    (:class:`SmallSampleWarning`) for items everyone got right or wrong, whose
    difficulty is only bounded, not estimated.

    Parameters
    ----------
    responses : pandas.DataFrame
        Long answers, one row per (respondent, item).
    respondent, item, score : str
        Column names in ``responses`` (the answers' column is ``correct`` unless ``score`` names another).
    items, respondents : list, optional
        Ids that must all have an answer.
    calibration : bool
        Check what calibrating item parameters needs (see above).

    Returns
    -------
    pandas.DataFrame
        Columns ``respondent, item, correct`` (correct as 0.0/1.0).

    Examples
    --------
    >>> import pandas as pd
    >>> from bayes_raters.irt import validate_responses
    >>> table = pd.DataFrame({"who": [1, 1, 2, 2], "q": ["a", "b", "a", "b"], "ok": ["true", "false", "false", "true"]})
    >>> validate_responses(table, respondent="who", item="q", score="ok")["correct"].tolist()
    [1.0, 0.0, 0.0, 1.0]
    """
    table = validate_long(
        responses, {"respondent": respondent, "item": item}, score, "responses", booleans=True
    )
    table = table.rename(columns={"score": "correct"})
    values = set(np.unique(table["correct"]))
    if not values <= {0.0, 1.0}:
        raise InvalidInputError(
            f"responses: column {score!r} must be 0 (wrong) or 1 (right); found {sorted(values - {0.0, 1.0})[:5]}. "
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
    return asymptote_probability(a * (theta - b), c, d, lib)


def asymptote_probability(eta, c=0.0, d=1.0, lib=pt):
    r""":math:`P = c + (d - c)\sigma(\eta)` at linear predictor ``eta`` (broadcasting)."""
    sigmoid = pm.math.sigmoid if lib is pt else expit
    return c + (d - c) * sigmoid(eta)


def asymptote_logs(eta, c, d, lib):
    r"""log P and log(1 - P) of :math:`P = c + (d - c)\sigma(\eta) = c(1 - \sigma) + d\sigma`;
    ``d`` None for no upper asymptote (None, not ones: :math:`\log(1 - d)` would be
    :math:`-\infty`). Both are sums of non-negative terms,
    :math:`1 - P = (1 - c)(1 - \sigma) + (1 - d)\sigma`, with :math:`\log \sigma = -\operatorname{softplus}(-\eta)`
    and :math:`\log(1 - \sigma) = -\operatorname{softplus}(\eta)`: for the 3PL
    :math:`\log(1 - P) = \log(1 - c) - \operatorname{softplus}(\eta)`, for the 4PL the log-sum-exp of
    the two terms. Why not the difference :math:`(1 - c) - (d - c)\sigma`: it rounds to 0 once
    :math:`\sigma` rounds to 1 (:math:`\eta > 37`, which steep items reach at the outer quadrature
    nodes during warm-up), and the infinite log and NaN gradient end the trajectory as a divergence
    (470 of 2,000 transitions on the 3PL SBC's simulation 0; none with this form)."""
    if lib is np:
        sigmoid, softplus = expit(eta), (lambda x: np.logaddexp(0.0, x))
    else:
        sigmoid, softplus = pt.sigmoid(eta), pt.softplus
    lower = lib.log1p(-c) - softplus(eta)
    if d is None:
        return lib.log(c + (1.0 - c) * sigmoid), lower
    upper = lib.log1p(-d) - softplus(-eta)
    log_q = lib.maximum(lower, upper) + lib.log1p(lib.exp(-lib.abs(lower - upper)))
    return lib.log(c * (1.0 - sigmoid) + d * sigmoid), log_q


def guessing_logp(value, eta, c, d=None):
    """Bernoulli log-likelihood of the 3PL (``d`` None) or 4PL answer ``value`` at linear
    predictor ``eta``, through :func:`asymptote_logs` (the joint model's likelihood)."""
    log_p, log_q = asymptote_logs(eta, c, d, pt)
    return value * log_p + (1 - value) * log_q


def guessing_random(eta, c, d=1.0, rng=None, size=None):
    """Draws of ``correct`` under the 3PL/4PL, for the predictive samplers."""
    return rng.binomial(1, asymptote_probability(eta, c, d, np), size=size)


def bernoulli_logit_logp(value, eta):
    r""":math:`\log p(y \mid \eta) = y\,\eta - \log(1 + e^{\eta})`, the Bernoulli log-likelihood
    on the logit scale.

    Written out rather than ``pm.Bernoulli(logit_p=)`` because PyMC's form (a switch over
    two ``log1pexp`` branches plus parameter checks) makes the log-density + gradient about twice
    as slow (``models/irt.md``; ``benchmarks/bench_irt.py --gradient-only`` measures it).
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


#: The same for the 3PL/4PL, whose answers say less about b (a guess looks like a right answer).
#: Models with a lower asymptote c (guessing); their priors and sampler defaults differ.
GUESSING_MODELS = ("3pl", "4pl")
CENTRED_MIN_ANSWERS_GUESSING = {"b": 1500, "log_a": 500}


def centred_items(table: pd.DataFrame, model: str = "2pl") -> dict[str, bool]:
    """Parameterisation of the hierarchical priors: centred where every item's likelihood
    dominates its prior (:data:`CENTRED_MIN_ANSWERS`, for the 3PL/4PL
    :data:`CENTRED_MIN_ANSWERS_GUESSING`), non-centred otherwise: with few answers per item the
    centred form is a funnel and diverges; with many it mixes several times better. The
    thresholds come from the 2PL and 3PL runs of ``models/irt.md`` (section on the parametrisation
    of the hierarchical priors)."""
    answers = int(table.groupby("item").size().min())
    thresholds = CENTRED_MIN_ANSWERS_GUESSING if model in GUESSING_MODELS else CENTRED_MIN_ANSWERS
    return {name: answers >= least for name, least in thresholds.items()}


def _population(name: str, prior_sd: float, scale, centred: bool, n_items: int):
    r"""``name`` ~ N(mu, scale) per item with mu ~ N(0, prior_sd), in one of two forms.

    Non-centred: ``{name}_mu`` and ``{name}_z`` ~ N(0, 1), name = mu + scale * z. Centred: the
    items' mean and their deviations from it, which are independent under this prior,
    :math:`\bar x \sim N(0, \sqrt{s_0^2 + \sigma^2 / J})` (``{name}_mean``, mu integrated
    out) and :math:`x - \bar x \sim \text{ZeroSumNormal}(\sigma)` (``{name}_dev``). The
    same prior; but the direction in which all items move together (pinned only by
    theta ~ N(0, 1), so far better determined than any one item) becomes one coordinate,
    which a diagonal mass matrix can scale (fewer leapfrog steps per draw than centred items:
    ``models/irt.md``)."""
    if centred:
        mean = pm.Normal(f"{name}_mean", 0.0, pt.sqrt(prior_sd**2 + scale**2 / n_items))
        deviation = pm.ZeroSumNormal(f"{name}_dev", sigma=scale, dims="item")
        return pm.Deterministic(name, mean + deviation, dims="item")
    z = pm.Normal(f"{name}_z", 0.0, 1.0, dims="item")
    return pm.Deterministic(name, pm.Normal(f"{name}_mu", 0.0, prior_sd) + scale * z, dims="item")


def item_pivots(table: pd.DataFrame) -> np.ndarray:
    r"""Each item's pivot ability :math:`\theta^*_j`, in the order of ``pd.unique(table["item"])``:
    the information-weighted mean ability of its respondents,
    :math:`\theta^*_j = \sum_i w_{ij} z_i / \sum_i w_{ij}` with :math:`w = p(1 - p)`,
    where :math:`z_i` are normal scores of the respondents' proportions correct and
    :math:`p_{ij} = \operatorname{logit}^{-1}(\alpha_j + \beta_j z_i)` a per-item logistic
    regression on them (Newton steps with a ridge of 0.01, so all-right items stay finite).
    A data summary (a constant of the model), used to centre each item's logit (see
    :func:`_pivoted_difficulty`)."""
    person, _ = pd.factorize(table["respondent"])
    item, items = pd.factorize(table["item"])
    y = table["correct"].to_numpy(float)
    share = np.bincount(person, y) / np.bincount(person)
    z = special.ndtri(stats.rankdata(share) / (len(share) + 1))[person]
    coef = np.zeros((len(items), 2))
    for _ in range(20):
        p = special.expit(coef[item, 0] + coef[item, 1] * z)
        w = p * (1 - p)
        grad = np.stack([np.bincount(item, y - p), np.bincount(item, (y - p) * z)], 1) - 0.01 * coef
        h00, h01, h11 = (np.bincount(item, w * f) + ridge for f, ridge in ((1, 0.01), (z, 0.0), (z * z, 0.01)))
        det = h00 * h11 - h01**2
        coef += np.stack([h11 * grad[:, 0] - h01 * grad[:, 1], h00 * grad[:, 1] - h01 * grad[:, 0]], 1) / det[:, None]
    p = special.expit(coef[item, 0] + coef[item, 1] * z)
    w = p * (1 - p)
    return np.bincount(item, w * z) / np.bincount(item, w)


def _pivoted_difficulty(a, pivots: np.ndarray, scale, prior_sd: float):
    r"""Centred hierarchical difficulties written as :math:`b_j = \theta^*_j + \delta - \ell_j / a_j`:
    :math:`\ell_j = a_j(\theta^*_j + \delta - b_j)` is item j's logit at its pivot ability
    (``b_logit``, flat, summing to zero) and :math:`\delta` the items' common shift
    (``b_shift``, flat). The map is one to one, with
    :math:`\log|\partial b / \partial(\delta, \ell)| = \log\sum_j a_j - \sum_j \log a_j` + const.
    The prior is the one of :func:`_population` with :math:`\mu` integrated out,
    :math:`b \sim N(0, \sigma^2 I + s_0^2 \mathbf{1}\mathbf{1}^T)`:
    :math:`\log p(b) = -\tfrac12[(J-1)\log\sigma^2 + \log(\sigma^2 + J s_0^2) + \sum_j (b_j - \bar b)^2/\sigma^2
    + J \bar b^2 / (\sigma^2 + J s_0^2)]`, added as the Potential ``b_prior`` with the Jacobian.
    Why: the data pin an item's curve where its respondents are, so :math:`b_j` and
    :math:`\log a_j` are correlated in the posterior (median 0.53, up to 0.89 at 2,000 x 100)
    and NUTS with a diagonal mass matrix needs ~30 leapfrog steps per draw; :math:`\ell_j`
    and :math:`\log a_j` are nearly uncorrelated. The shift keeps the one direction in which all
    items move together a coordinate of its own (without it: ESS 123 for the mean difficulty)."""
    shift = pm.Flat("b_shift")
    logit = pm.Flat("b_logit", dims="item", transform=ZeroSumTransform([-1]))
    b = pm.Deterministic("b", pt.as_tensor(pivots) + shift - logit / a, dims="item")
    n_items = len(pivots)
    mean = b.mean()
    total = scale**2 + n_items * prior_sd**2
    logp = -0.5 * ((n_items - 1) * pt.log(scale**2) + pt.log(total) + ((b - mean) ** 2).sum() / scale**2 + n_items * mean**2 / total)
    pm.Potential("b_prior", logp + pt.log(a.sum()) - pt.log(a).sum())
    return b


def item_priors(model: str, k: int, n_items: int, hierarchical: bool, centred: dict | None = None, pivots=None):
    """Item parameters ``(a, b, c, d)`` with the priors of the module docstring, inside the
    current model context (dims ``item``); c = 0 and d = 1 (constants) where the model has none.
    ``centred``: parameterisation of each hierarchical prior (:func:`centred_items`; default
    all centred). ``pivots`` (:func:`item_pivots`): centred difficulties are then sampled as
    logits at the pivots (:func:`_pivoted_difficulty`)."""
    centred = {"b": True, "log_a": True} if centred is None else centred
    pivoted = hierarchical and centred["b"] and pivots is not None
    if pivoted:
        b_sigma = pm.HalfNormal("b_sigma", 1.5)
    elif hierarchical:
        b = _population("b", 1.0, pm.HalfNormal("b_sigma", 1.5), centred["b"], n_items)
    else:
        b = pm.Normal("b", 0.0, 2.0, dims="item")
    a, c, d = _other_items(model, k, n_items, hierarchical, centred)
    if pivoted:
        b = _pivoted_difficulty(a, pivots, b_sigma, 1.0)
    return a, b, c, d


def _other_items(model: str, k: int, n_items: int, hierarchical: bool, centred: dict):
    if model == "1pl":
        a_common = pm.LogNormal("a_common", 0.0, 0.5)
        a = pm.Deterministic("a", a_common * pt.ones(n_items), dims="item")
    elif hierarchical:
        log_a = _population("log_a", 0.5, pm.HalfNormal("log_a_sigma", 0.5), centred["log_a"], n_items)
        a = pm.Deterministic("a", pt.exp(log_a), dims="item")
    else:
        a = pm.LogNormal("a", 0.0, 0.5, dims="item")
    c = pm.Beta("c", 2.0, 2.0 * (k - 1), dims="item") if model in GUESSING_MODELS else 0.0
    d = pm.Beta("d", 20.0, 1.0, dims="item") if model == "4pl" else 1.0
    return a, c, d


#: Fewest items for the hierarchical item priors by default (:func:`resolve_hierarchical`).
HIERARCHY_MIN_ITEMS = 10


def resolve_hierarchical(hierarchical: bool | None, table: pd.DataFrame) -> bool:
    """``hierarchical`` as given, or for None: hierarchical priors when the test has at least
    :data:`HIERARCHY_MIN_ITEMS` items. Why: with a handful of items the population scale of
    log a has almost nothing to learn from, and the centred form is a funnel: on LSAT-7 (5 items)
    the hierarchical fit diverged on every seed tried and fixed priors did not
    (``models/irt.md``, "Short tests")."""
    if hierarchical is not None:
        return bool(hierarchical)
    return bool(table["item"].nunique() >= HIERARCHY_MIN_ITEMS)


def build_irt_model(
    responses: pd.DataFrame,
    model: str = "2pl",
    *,
    n_options: int | None = None,
    hierarchical: bool | None = None,
    respondent: str = "respondent",
    item: str = "item",
    score: str = "correct",
) -> pm.Model:
    """Build (without sampling) the IRT model of the module docstring from long answers.

    ``n_options`` (answer options per item) sets the guessing prior of 3PL/4PL (default 4).
    ``hierarchical``: None (default) as :func:`resolve_hierarchical`. Coords: ``respondent``, ``item``, ``answer`` (rows).

    Parameters
    ----------
    responses : pandas.DataFrame
        Long answers, one row per (respondent, item), ``correct`` 0/1.
    model : {"1pl", "2pl", "3pl", "4pl"}
        The item response function.
    n_options : int, optional
        Answer options per item (guessing prior of the 3PL/4PL).
    hierarchical : bool, optional
        Population priors on the items; None decides by the number of items.
    respondent, item, score : str
        Column names in ``responses`` (the answers' column is ``correct`` unless ``score`` names another).

    Returns
    -------
    pymc.Model
        The model with every variable on named dims, not yet sampled.

    Examples
    --------
    >>> from bayes_raters.irt import build_irt_model, simulate_responses
    >>> answers, _ = simulate_responses(200, 8, random_seed=1)
    >>> model = build_irt_model(answers, "2pl")
    >>> {name: model.named_vars_to_dims[name] for name in ("a", "b", "theta")}
    {'a': ('item',), 'b': ('item',), 'theta': ('respondent',)}
    """
    if model not in IRT_MODELS:
        raise InvalidInputError(f"model must be one of {IRT_MODELS}, got {model!r}.")
    table = validate_responses(responses, respondent=respondent, item=item, score=score)
    return build_from_table(table, model, n_options=n_options, hierarchical=resolve_hierarchical(hierarchical, table))


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
        # no pivots here: indexing b by answer lifts its arithmetic to all 200,000 answers (PyTensor
        # moves the indexing through elementwise ops), more than doubling a gradient's cost (models/irt.md)
        a, b, c, d = item_priors(model, k, len(items), hierarchical, centred_items(table, model))
        eta = a[question] * (theta[person] - b[question])
        if model in ("1pl", "2pl"):
            pm.CustomDist(
                "correct", eta, logp=bernoulli_logit_logp, random=bernoulli_logit_random,
                observed=observed, dtype="int64", dims="answer",
            )
        else:
            upper = (d[question],) if model == "4pl" else ()
            pm.CustomDist(
                "correct", eta, c[question], *upper, logp=guessing_logp, random=guessing_random,
                observed=observed, dtype="int64", dims="answer",
            )
    return irt
