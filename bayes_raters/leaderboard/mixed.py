r"""Mixed leaderboards: 0/1 items of the 2PL beside items of other response types
(:mod:`bayes_raters.leaderboard.responses`: the 3PL, graded answers, bounded scores), one ability per system.
:func:`mixed_answers` lays the long answers out for the blocked sampler; :func:`build_mixed_model` writes the
same model in PyMC (for checks and small data).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr
from scipy import special

from bayes_raters.data import validate_long
from bayes_raters.errors import InvalidInputError
from bayes_raters.leaderboard.model import AnswerMatrix
from bayes_raters.leaderboard.responses import RESPONSE_TYPES, bounded_draw, cutpoints, ordered_draw, response_type
from bayes_raters.leaderboard.sampler import B_MEAN_SD, B_SIGMA_SCALE, LOG_A_MEAN_SD, LOG_A_SIGMA_SCALE
from bayes_raters.leaderboard.typed import TypedAnswers

#: Every item type a mixed leaderboard takes.
ITEM_TYPES = ("2pl",) + RESPONSE_TYPES


def item_type_table(table: pd.DataFrame, item_types: Mapping | pd.Series | None) -> pd.Series:
    """Each item's type: as declared in ``item_types`` (item -> ``"2pl"``, ``"3pl"``, ``"graded"`` or
    ``"bounded"``), else what its answers reveal: ``"2pl"`` when every answer is 0 or 1, ``"graded"`` when they
    are whole numbers, ``"bounded"`` when they lie in [0, 1]."""
    declared = pd.Series(dict(item_types or {}), dtype=object).astype(str).str.lower()
    unknown = sorted(set(declared) - set(ITEM_TYPES))
    if unknown:
        raise InvalidInputError(f"item_types: {unknown} are not item types; use one of {list(ITEM_TYPES)}.")
    missing = sorted(set(declared.index) - set(table["item"]), key=str)
    if missing:
        raise InvalidInputError(f"item_types names {len(missing)} item(s) without answers, e.g. {missing[:5]}.")
    values = table.groupby("item", sort=False)["score"]
    binary = values.apply(lambda v: bool(np.isin(v, (0.0, 1.0)).all()))
    whole = values.apply(lambda v: bool((v == np.round(v)).all()))
    unit = values.apply(lambda v: bool(((v >= 0) & (v <= 1)).all()))
    revealed = pd.Series(np.where(binary, "2pl", np.where(whole, "graded", np.where(unit, "bounded", ""))), index=binary.index)
    types = declared.reindex(revealed.index).fillna(revealed)
    fits = {"": binary & False, "2pl": binary, "3pl": binary, "graded": whole, "bounded": unit}
    for name, what in (("", "neither 0/1, whole grades nor scores in [0, 1]"), ("2pl", "not 0/1"), ("3pl", "not 0/1"),
                       ("graded", "not whole grades"), ("bounded", "outside [0, 1]")):
        bad = types.index[(types == name) & ~fits[name]]
        if len(bad):
            example = table.loc[table["item"].isin(bad[:1]), "score"].head(3).tolist()
            raise InvalidInputError(
                f"items {list(bad[:5])}{' (declared ' + repr(name) + ')' if name else ''} have scores {what} (e.g. {example}); "
                "a leaderboard takes 0/1 answers, whole grades or bounded scores in [0, 1]: rescale a metric to [0, 1] "
                "(divide by its maximum), round it to grades or threshold it to 0/1.")
    return types


def mixed_answers(data: pd.DataFrame, item_types=None, *, options: int = 4, respondent: str = "respondent", item: str = "item",
                  score: str = "correct") -> tuple[AnswerMatrix, tuple[TypedAnswers, ...], pd.Series, np.ndarray]:
    """Validate long answers of mixed types and lay them out: the 0/1 items' :class:`AnswerMatrix` (its ``table``
    holds every answer, ``correct`` the score scaled to [0, 1]: grade positions over K - 1), one
    :class:`~bayes_raters.leaderboard.typed.TypedAnswers` per other type present, each item's type
    and the graded levels (sorted distinct grades; their positions are the categories)."""
    if int(options) != options or options < 2:
        raise InvalidInputError(f"options must be a whole number >= 2 (the 3PL's guessing prior is 1 / options), got {options!r}.")
    table = validate_long(data, {"respondent": respondent, "item": item}, score, "answers", booleans=True)
    types = item_type_table(table, item_types)
    system_index, systems = pd.factorize(table["respondent"])
    item_index, items = pd.factorize(table["item"])
    if len(systems) < 2 or len(items) < 2:
        raise InvalidInputError("a leaderboard needs answers from two systems to two items at least.")
    kind_of = types.reindex(items).to_numpy()
    levels = np.unique(table.loc[np.isin(kind_of[item_index], "graded"), "score"])
    if (kind_of == "graded").any() and len(levels) < 3:
        raise InvalidInputError(f"graded items need three grades or more; found {levels.tolist()} (two grades: declare the items '2pl').")
    value, row_kind = table["score"].to_numpy(dtype=float), kind_of[item_index]
    category = np.select([row_kind == "graded", row_kind == "bounded"], [np.searchsorted(levels, value), bounded_category(value)],
                         value).astype(np.int8)
    blocks, binary = [], np.flatnonzero(kind_of == "2pl")
    for name in RESPONSE_TYPES:
        positions = np.flatnonzero(kind_of == name)
        if len(positions):
            kind = response_type(name, options=options, n_categories=max(len(levels), 3))
            answers_t = _matrix(category, system_index, item_index, positions, len(systems)).T.copy()
            logs_t = _bounded_logs(value, system_index, item_index, positions, len(systems)) if name == "bounded" else None
            blocks.append(TypedAnswers(kind, answers_t, positions, logs_t))
    matrix = _matrix(category, system_index, item_index, binary, len(systems))
    scaled = np.where(row_kind == "graded", category / max(len(levels) - 1, 1), value).astype(float)
    long = pd.DataFrame({"respondent": table["respondent"].to_numpy(), "item": table["item"].to_numpy(), "correct": scaled})
    data_out = AnswerMatrix(matrix, np.ascontiguousarray(matrix.T), pd.Index(systems, name="system"), pd.Index(items, name="item"),
                            long, system_index.astype(np.int64), item_index.astype(np.int64))
    return data_out, tuple(blocks), pd.Series(kind_of, index=items, name="item_type"), levels


def is_mixed(data: pd.DataFrame, score: str, item_types) -> bool:
    """Whether a fit takes the mixed path: ``item_types`` given, or a numeric score other than 0 and 1."""
    if item_types is not None:
        return True
    if not isinstance(data, pd.DataFrame) or score not in data:
        return False
    values = pd.to_numeric(data[score], errors="coerce").dropna()
    return bool(len(values)) and not np.isin(values, (0.0, 1.0)).all()


def mixed_posterior(outputs_stack: dict, types: pd.Series, blocks: tuple, binary: np.ndarray) -> dict:
    """Every item's ``a``, ``b`` and log-likelihood in the item order (chain, draw, item) from the sampler's
    per-type arrays."""
    n_chains, n_draws = outputs_stack["theta"].shape[:2]
    full = {name: np.empty((n_chains, n_draws, len(types))) for name in ("a", "b", "item_loglik")}
    for name in full:
        full[name][..., binary] = outputs_stack[name]
    for i, block in enumerate(blocks):
        for name, key in (("a", "a"), ("b", "b"), ("item_loglik", "loglik")):
            full[name][..., block.positions] = outputs_stack[f"typed{i}_{key}"]
    return full


#: The posterior variables each response type adds (besides its items' ``a`` and ``b``).
TYPE_VARIABLES = {"3pl": ("c",), "graded": ("cutpoints",), "bounded": ("bounded_cutpoints", "precision")}
#: The bounded type's two cutpoints: below the first an exact 0, above the second an exact 1.
BOUNDED_CUTPOINTS = ("zero", "one")


def type_variables(outputs_stack: dict, blocks: tuple, items: np.ndarray) -> tuple[dict, dict]:
    """The response types' own posterior variables as ``{name: (dims, values)}`` and their coords: the 3PL's
    guessing chance ``c`` (dim ``item_3pl``), the graded scale's ``cutpoints`` (dim ``cutpoint``), the bounded
    scores' ``bounded_cutpoints`` (dim ``bounded_cutpoint``) and ``precision``; each type's items as a coord
    ``item_<type>``."""
    sample, out, coords = ("chain", "draw"), {}, {}
    for i, block in enumerate(blocks):
        coords[f"item_{block.kind.name}"] = items[block.positions]
        extra = outputs_stack[f"typed{i}_extra"]  # (chain, draw, items or 1, m)
        if block.kind.name == "3pl":
            out["c"] = (sample + ("item_3pl",), 1 / (1 + np.exp(-extra[..., 0])))
        elif block.kind.name == "graded":
            kappa, _ = cutpoints(extra.reshape(-1, extra.shape[-1]))
            coords["cutpoint"] = np.arange(1, block.kind.n_categories)
            out["cutpoints"] = (sample + ("cutpoint",), kappa.reshape(extra.shape[:2] + (kappa.shape[-1],)))
        else:
            kappa, _ = cutpoints(extra[..., 0, :1].reshape(-1, 1))
            coords["bounded_cutpoint"] = np.array(BOUNDED_CUTPOINTS)
            out["bounded_cutpoints"] = (sample + ("bounded_cutpoint",), kappa.reshape(extra.shape[:2] + (2,)))
            out["precision"] = (sample, np.exp(extra[..., 0, 1]))
    return out, coords


def mixed_predictive(tree, draws, rng: np.random.Generator):
    """Replicated answers of a mixed fit for ``draws`` (a posterior subset): per answer a 0/1 draw for the 2PL
    and 3PL items, a grade position scaled to [0, 1] for the graded items, a score in [0, 1] for the bounded items
    (the scale of ``observed_data``)."""
    const = tree["constant_data"]
    s, j = const["system_index"].values, const["item_index"].values
    kind = const["item_type"].values[j]
    where = np.full(const.sizes["item"], -1)
    if "c" in draws:
        where[np.isin(const["item"].values, draws["c"]["item_3pl"].values)] = np.arange(draws.sizes["item_3pl"])
    grid = ("chain", "draw")
    theta, a, b = (draws[name].transpose(*grid, ...).values for name in ("theta", "a", "b"))
    out = np.empty(theta.shape[:2] + (len(s),))
    for c in range(theta.shape[0]):
        for d in range(theta.shape[1]):
            eta = a[c, d, j] * (theta[c, d, s] - b[c, d, j])
            p = special.expit(eta)
            if "c" in draws:
                guess = draws["c"].transpose(*grid, ...).values[c, d][where[j]]
                p = np.where(kind == "3pl", guess + (1 - guess) * p, p)
            value = (rng.random(len(s)) < p).astype(float)
            if "cutpoints" in draws:
                grade = ordered_draw(eta, draws["cutpoints"].transpose(*grid, ...).values[c, d], rng) / draws.sizes["cutpoint"]
                value = np.where(kind == "graded", grade, value)
            if "precision" in draws:
                score = bounded_draw(eta, draws["bounded_cutpoints"].transpose(*grid, ...).values[c, d],
                                      float(draws["precision"].transpose(*grid).values[c, d]), rng)
                value = np.where(kind == "bounded", score, value)
            out[c, d] = value
    coords = {"chain": draws["chain"].values, "draw": draws["draw"].values, "answer": np.arange(len(s))}
    return xr.Dataset({"correct": (("chain", "draw", "answer"), out)}, coords=coords)


def local_positions(positions: np.ndarray, n_items: int) -> np.ndarray:
    """For each of ``n_items`` items its index among ``positions`` (a type's items), -1 for the others."""
    where = np.full(n_items, -1)
    where[positions] = np.arange(len(positions))
    return where


def bounded_category(value: np.ndarray) -> np.ndarray:
    """The ordered beta's category of bounded scores: 0 (exactly 0), 1 (between), 2 (exactly 1)."""
    return np.where(value <= 0, 0, np.where(value >= 1, 2, 1))


def _bounded_logs(value, system_index, item_index, columns, n_systems) -> np.ndarray:
    """(2, items, systems): log v and log(1 - v) of the scores strictly between 0 and 1, 0 elsewhere."""
    out = np.zeros((2, len(columns), n_systems))
    where = local_positions(columns, item_index.max() + 1)
    keep = (where[item_index] >= 0) & (value > 0) & (value < 1)
    out[0, where[item_index[keep]], system_index[keep]] = np.log(value[keep])
    out[1, where[item_index[keep]], system_index[keep]] = np.log1p(-value[keep])
    return out


def _matrix(category, system_index, item_index, columns, n_systems) -> np.ndarray:
    """Systems x ``columns`` int8 categories, -1 where a system did not answer."""
    out = np.full((n_systems, len(columns)), -1, dtype=np.int8)
    where = local_positions(columns, item_index.max() + 1)
    keep = where[item_index] >= 0
    out[system_index[keep], where[item_index[keep]]] = category[keep]
    return out


def build_mixed_model(data: pd.DataFrame, item_types=None, *, options: int = 4, respondent: str = "respondent", item: str = "item",
                      score: str = "correct") -> pm.Model:
    """The mixed leaderboard in PyMC, without sampling: the 2PL's population (``theta``, ``b``, ``log_a``
    and hyperparameters, :func:`~bayes_raters.leaderboard.model.build_leaderboard_model`) over every item, the
    3PL items' ``extra_3pl`` (logit guessing chance, dim ``item_3pl``), the graded scale's ``extra_graded``
    (log cutpoint spacings, dim ``spacing``) and the bounded scores' ``extra_bounded`` (log spacing and log
    precision, dim ``bounded_parameter``), with ``c``, ``cutpoints``, ``bounded_cutpoints`` and ``precision`` as
    deterministics (the names of :func:`~bayes_raters.leaderboard.fit_leaderboard`'s posterior), and one observed
    variable per type (two for bounded scores: the category and the value between) (:mod:`bayes_raters.leaderboard.responses` states the
    likelihoods). NUTS on it suits a few thousand answers; the blocked sampler is checked against it.

    Parameters
    ----------
    data : pandas.DataFrame
        Long answers, one row per (system, item): 0/1, whole grades on graded items, scores in [0, 1] on
        bounded items.
    item_types : mapping or pandas.Series, optional
        Item -> ``"2pl"``, ``"3pl"``, ``"graded"`` or ``"bounded"`` (items left out: what their answers reveal).
    options : int
        The 3PL items' number of options (their guessing prior is centred on 1 / ``options``).
    respondent, item, score : str
        Column names.

    Returns
    -------
    pymc.Model
        The model, ready for ``pm.sample``.

    Examples
    --------
    >>> from bayes_raters.leaderboard import build_mixed_model, simulate_mixed_leaderboard
    >>> answers, truth = simulate_mixed_leaderboard(6, 3, 3, 3, grades=4, random_seed=1)
    >>> model = build_mixed_model(answers, truth["item_type"].to_dict())
    >>> sorted(model.coords)
    ['cutpoint', 'item', 'item_3pl', 'item_graded', 'spacing', 'system']
    """
    matrix, blocks, types, _ = mixed_answers(data, item_types, options=options, respondent=respondent, item=item, score=score)
    s, j = matrix.system_index, matrix.item_index
    category, value = np.full(len(s), -1), matrix.table["correct"].to_numpy(dtype=float)
    for block in blocks:
        where = local_positions(block.positions, len(types))
        rows = where[j] >= 0
        category[rows] = block.answers_t[where[j[rows]], s[rows]]
    kind = types.to_numpy()[j]
    coords = {"system": list(matrix.systems), "item": list(matrix.items)}
    with pm.Model(coords=coords) as model:
        theta = pm.Normal("theta", 0.0, 1.0, dims="system")
        b_mean = pm.Normal("b_mean", 0.0, B_MEAN_SD)
        b_sigma = pm.HalfNormal("b_sigma", B_SIGMA_SCALE)
        # non-centred (b and log a as deterministics): prior draws put items with few informative answers in the
        # population's funnel, where NUTS on the centred form diverged (simulation-based calibration's design)
        b = pm.Deterministic("b", b_mean + b_sigma * pm.Normal("b_z", 0.0, 1.0, dims="item"), dims="item")
        log_a_mean = pm.Normal("log_a_mean", 0.0, LOG_A_MEAN_SD)
        log_a_sigma = pm.HalfNormal("log_a_sigma", LOG_A_SIGMA_SCALE)
        log_a = pm.Deterministic("log_a", log_a_mean + log_a_sigma * pm.Normal("log_a_z", 0.0, 1.0, dims="item"), dims="item")
        eta = pm.math.exp(log_a)[j] * (theta[s] - b[j])
        rows = kind == "2pl"
        if rows.any():
            pm.Bernoulli("y_2pl", logit_p=eta[rows], observed=matrix.table["correct"].to_numpy()[rows])
        for block in blocks:
            rows = kind == block.kind.name
            model.add_coord(f"item_{block.kind.name}", list(matrix.items[block.positions]))
            local = local_positions(block.positions, len(types))[j[rows]]
            _TYPE_LIKELIHOODS[block.kind.name](model, block.kind, eta[rows], local, category[rows], value[rows])
    return model




def _three_pl_likelihood(model: pm.Model, kind, eta, local, category, value) -> None:
    extra = pm.Normal("extra_3pl", kind.prior_mean, kind.prior_sd, dims="item_3pl")
    c = pm.Deterministic("c", pm.math.sigmoid(extra), dims="item_3pl")[local]
    pm.Bernoulli("y_3pl", p=c + (1 - c) * pm.math.sigmoid(eta), observed=category)


def _graded_likelihood(model: pm.Model, kind, eta, local, category, value) -> None:
    model.add_coord("spacing", np.arange(kind.n_extra))
    model.add_coord("cutpoint", np.arange(1, kind.n_categories))
    extra = pm.Normal("extra_graded", kind.prior_mean, kind.prior_sd, dims="spacing")
    tau = pm.math.concatenate([pm.math.zeros(1), pm.math.cumsum(pm.math.exp(extra))])
    kappa = pm.Deterministic("cutpoints", tau - tau.mean(), dims="cutpoint")
    pm.OrderedLogistic("y_graded", eta=eta, cutpoints=kappa, observed=category, compute_p=False)


def _bounded_likelihood(model: pm.Model, kind, eta, local, category, value) -> None:
    """The ordered beta: the category (0, between, 1) by the ordered logistic with cutpoints -+ e^u / 2, the
    value between by Beta(mu phi, (1 - mu) phi), mu = logistic(eta)."""
    model.add_coord("bounded_parameter", ["log_spacing", "log_precision"])
    model.add_coord("bounded_cutpoint", list(BOUNDED_CUTPOINTS))
    extra = pm.Normal("extra_bounded", kind.prior_mean, kind.prior_sd, dims="bounded_parameter")
    half = pm.math.exp(extra[0]) / 2
    kappa = pm.Deterministic("bounded_cutpoints", pm.math.stack([-half, half]), dims="bounded_cutpoint")
    phi = pm.Deterministic("precision", pm.math.exp(extra[1]))
    pm.OrderedLogistic("y_bounded", eta=eta, cutpoints=kappa, observed=category, compute_p=False)
    between = category == 1
    mu = pm.math.sigmoid(eta[between])
    pm.Beta("y_bounded_value", alpha=mu * phi, beta=(1 - mu) * phi, observed=value[between])


_TYPE_LIKELIHOODS = {"3pl": _three_pl_likelihood, "graded": _graded_likelihood, "bounded": _bounded_likelihood}
