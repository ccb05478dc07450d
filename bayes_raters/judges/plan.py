r"""How many human ratings to buy, and of which responses, from a pilot judges fit (a
preposterior analysis, no refit).

Coordinates. Given the judges' calibration and the noise scales, the judges model is linear and
normal in the systems' means and the judges' biases,
:math:`\theta = (\mu_1, \dots, \mu_S, \eta_1, \dots, \eta_J)` with each judge's biases
:math:`\delta_{j\cdot} = Q \eta_j` (:math:`Q` an orthonormal basis of the vectors summing to zero,
so :math:`\eta_j \sim N(0, \tau_j^2 I_{S-1})` is the zero-sum prior exactly). A response of
system :math:`s` with :math:`c` human ratings and the scores of the judges in a set :math:`M`
observes :math:`x = H\theta + \text{noise}`: the mean rating (row :math:`e_{\mu_s}`, noise
:math:`\sigma_H^2 / c`) and each score (row :math:`\beta_j(e_{\mu_s} - w) + e_{\delta_{js}}`,
:math:`w` the systems' shares of responses; noise :math:`\sigma_j^2`), all sharing the response's
true-score deviation (loadings :math:`\sigma_s` and :math:`\beta_j \sigma_s`; for ordinal ratings
:math:`\sigma_H^2` becomes the variance of a normal rating with the same Fisher information,
:func:`ordinal_human_variance`: an approximation, the ratings' likelihood linearised) and the judges' shared
error (:math:`\lambda_j`): covariance :math:`\Sigma = D + u u^\top + \lambda \lambda^\top`. Its
Fisher information :math:`H^\top \Sigma^{-1} H` depends on the design, not on the scores, so the
posterior precision of :math:`\theta` under a design is the prior precision plus the sum of its
responses' informations, computed for every posterior draw of the other parameters.

Method. For a quantity :math:`q = c^\top \theta` (a system's mean, or the difference of two) the
planned interval width is the fit's own width times :math:`\sqrt{\bar v_D / \bar v_{now}}`,
:math:`\bar v` the mean over draws of :math:`c^\top P^{-1} c` (the Bernstein-von Mises ratio, as
:mod:`bayes_raters.ctt.plan` does it; the uncertainty of the calibration itself is carried by the
fit's width). More responses for humans either come at random from each system's unrated
responses (``allocation="random"``) or are chosen greedily, a batch at a time, where the summed
variance of the planned quantities falls most (``"targeted"``, the rule of
:func:`next_responses`). The probability that a future interval of a difference excludes zero
uses the law of total variance (:mod:`bayes_raters.ctt.plan`).

Choosing responses by their observed judge scores or by this rule keeps the posterior valid: the
choice depends only on data already observed, so the selection is ignorable and the likelihood of
the ratings bought is the one the model already has (``models/judges.md``). Checked against
refits in ``tests/judges/test_plan.py`` and ``validation/judges_plan.py``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from scipy import linalg, stats

from bayes_raters.ctt.plan import p_clears
from bayes_raters.errors import InvalidInputError
from bayes_raters.judges import ordinal
from bayes_raters.judges.model import system_weights
from bayes_raters.results import check_ci_prob, seeded_rng, thinned_posterior

ALLOCATIONS = ("random", "targeted")
PRIOR_SD_MEAN = 1.5  # the model's prior SD of each system's standardised mean
GREEDY_STEPS = 40  # batches in which a targeted allocation is built


def draw_parameters(result, n_draws: int) -> dict[str, np.ndarray]:
    """Flat standardised draws (draws first) of what the information reads."""
    posterior = thinned_posterior(result.posterior, n_draws).stack(sample=("chain", "draw"))
    names = ("mu", "sigma_true", "sigma_human", "beta", "sigma_judge", "sigma_bias")
    out = {name: np.moveaxis(posterior[name].values, -1, 0) for name in names}
    out["loading"] = np.moveaxis(posterior["loading"].values, -1, 0) if "loading" in posterior else np.zeros_like(out["beta"])
    if result.spec.ordinal:
        out["human_variance"] = ordinal_human_variance(out, result.data, result.spec)
    return out


def ordinal_human_variance(p: dict, data, spec) -> np.ndarray:
    """Per draw and system (draws, systems), standardised: the variance of a normal rating with
    the information of one ordinal rating (:func:`~bayes_raters.judges.ordinal.equivalent_noise_variance`)."""
    cut = ordinal.standardised_cutpoints(data, spec.score_range)
    return ordinal.equivalent_noise_variance(p["mu"], p["sigma_true"], p["sigma_human"], cut)


def response_groups(data) -> pd.DataFrame:
    """Responses by (system, judge set, human ratings): ``system`` (position), ``mask`` (tuple of
    judge positions), ``ratings`` and ``n``, with the unrated responses' names in ``responses``."""
    judged = pd.DataFrame({"response": data.judge_response, "judge": data.judge_index}).groupby("response")["judge"].agg(lambda j: tuple(sorted(j)))
    counts = np.bincount(data.human_response, minlength=len(data.responses))
    frame = pd.DataFrame({"system": data.response_system, "mask": judged.reindex(range(len(data.responses))).to_numpy(),
                          "ratings": counts, "response": np.asarray(data.responses)})
    frame["mask"] = [m if isinstance(m, tuple) else () for m in frame["mask"]]
    return frame.groupby(["system", "mask", "ratings"], sort=True).agg(n=("response", "size"), responses=("response", list)).reset_index()


class Information:
    """The prior precision and the per-response informations of :math:`\\theta` for every draw."""

    def __init__(self, params: dict, weights: np.ndarray):
        self.p, self.w = params, weights
        self.n_draws, self.n_systems = params["mu"].shape
        self.n_judges = params["beta"].shape[1]
        self.basis = linalg.null_space(np.ones((1, self.n_systems)))  # (S, S-1)
        # one human rating's error variance per draw and system (ordinal fits: ``human_variance``)
        self.human = params.get("human_variance", np.repeat(params["sigma_human"][:, None] ** 2, self.n_systems, axis=1))
        self.size = self.n_systems + self.n_judges * (self.n_systems - 1)

    def prior(self) -> np.ndarray:
        """Prior precision (draws, K, K)."""
        diagonal = np.concatenate([np.full((self.n_draws, self.n_systems), PRIOR_SD_MEAN**-2),
                                   np.repeat(self.p["sigma_bias"] ** -2, self.n_systems - 1, axis=1)], axis=1)
        return np.einsum("dk,kl->dkl", diagonal, np.eye(self.size))

    def response(self, system: int, mask: tuple, ratings: int) -> np.ndarray:
        """Information (draws, K, K) of one response of ``system`` scored by the judges in
        ``mask`` and rated ``ratings`` times (module docstring)."""
        p, s, judges = self.p, system, list(mask)
        rows = len(judges) + (ratings > 0)
        if rows == 0:
            return np.zeros((self.n_draws, self.size, self.size))
        design = np.zeros((self.n_draws, rows, self.size))
        variance = np.empty((self.n_draws, rows))
        true_load, shared_load = np.empty((self.n_draws, rows)), np.zeros((self.n_draws, rows))
        for row, j in enumerate(judges):
            beta = p["beta"][:, j]
            design[:, row, : self.n_systems] = -beta[:, None] * self.w[None, :]
            design[:, row, s] += beta
            start = self.n_systems + j * (self.n_systems - 1)
            design[:, row, start: start + self.n_systems - 1] = self.basis[s]
            variance[:, row], true_load[:, row], shared_load[:, row] = p["sigma_judge"][:, j] ** 2, beta * p["sigma_true"][:, s], p["loading"][:, j]
        if ratings > 0:
            design[:, -1, s] = 1.0
            variance[:, -1], true_load[:, -1] = self.human[:, s] / ratings, p["sigma_true"][:, s]
        covariance = (np.einsum("dr,rq->drq", variance, np.eye(rows)) + true_load[:, :, None] * true_load[:, None, :]
                      + shared_load[:, :, None] * shared_load[:, None, :])
        return np.einsum("drk,drl->dkl", design, np.linalg.solve(covariance, design))

    def contrasts(self, quantities: list) -> np.ndarray:
        """Rows (Q, K): a system position ``s`` (its mean) or a pair ``(a, b)`` (the difference)."""
        out = np.zeros((len(quantities), self.size))
        for row, q in enumerate(quantities):
            if isinstance(q, tuple):
                out[row, q[0]], out[row, q[1]] = 1.0, -1.0
            else:
                out[row, q] = 1.0
        return out


def variances(precision: np.ndarray, contrasts: np.ndarray) -> np.ndarray:
    """Posterior variance of each contrast (draws, Q) under each draw's precision."""
    solved = np.linalg.solve(precision, np.broadcast_to(contrasts.T, (len(precision), *contrasts.T.shape)))
    return np.einsum("qk,dkq->dq", contrasts, solved)


def greedy_path(precision, gains, available, total, contrasts, steps=GREEDY_STEPS):
    """Responses per candidate group after each of ``steps`` batches of a greedy allocation of
    ``total`` responses: each batch goes to the group whose gain (draws, K, K) most lowers the
    summed variance of the contrasts, averaged over draws. Returns the counts (steps, G)."""
    batch = max(1, int(np.ceil(total / steps)))
    counts, path, left = np.zeros(len(gains)), [], total
    while left > 0:
        size = min(batch, left)
        scores = [np.inf if counts[g] + size > available[g] else variances(precision + size * gains[g], contrasts).sum(axis=1).mean()
                  for g in range(len(gains))]
        best = int(np.argmin(scores))
        if not np.isfinite(scores[best]):
            size, best = 1, int(np.argmax(available - counts))
        counts[best] += size
        precision = precision + size * gains[best]
        left -= size
        path.append(counts.copy())
    return np.array(path)


def _setup(result, n_draws):
    params = draw_parameters(result, n_draws)
    info = Information(params, system_weights(result.data))
    groups = response_groups(result.data)
    precision = info.prior()
    for row in groups.itertuples():
        precision = precision + row.n * info.response(row.system, row.mask, row.ratings)
    unrated = groups[groups["ratings"] == 0].reset_index(drop=True)
    return info, precision, unrated


def _quantities(result, pairs, systems):
    names = list(result.data.system_names)
    position = {name: i for i, name in enumerate(names)}
    if pairs is None and systems is None:
        pairs = list(itertools.combinations(names, 2))
    chosen = [(a, b) for a, b in (pairs or [])] + list(systems or [])
    unknown = sorted({s for q in chosen for s in (q if isinstance(q, tuple) else (q,))} - set(names), key=str)
    if unknown:
        raise InvalidInputError(f"unknown systems {unknown}; the fit has {names}.")
    coded = [(position[q[0]], position[q[1]]) if isinstance(q, tuple) else position[q] for q in chosen]
    labels = [f"{q[0]} - {q[1]}" if isinstance(q, tuple) else str(q) for q in chosen]
    return coded, labels


def _current(result, coded, ci_prob):
    draws = result.posterior["system_mean"].stack(sample=("chain", "draw")).transpose("system", "sample").values
    tail, out = (1 - ci_prob) / 2, []
    for q in coded:
        values = draws[q[0]] - draws[q[1]] if isinstance(q, tuple) else draws[q]
        low, high = np.quantile(values, [tail, 1 - tail])
        out.append((float(high - low), float(values.mean())))
    return out


def plan_human_ratings(result, extra=(0, 50, 100, 200, 400), raters=(1, 2), *, pairs=None, systems=None, allocation: str = "random",
                       ci_prob: float = 0.9, target_width: float | None = None, n_draws: int = 200) -> pd.DataFrame:
    """Expected interval widths after sending ``extra`` more responses (not yet human-rated) to
    ``raters`` human raters each, from a fitted :func:`~bayes_raters.judges.fit_judges` result
    (module docstring for the method).

    ``pairs``: system pairs whose difference to plan, ``systems``: systems whose mean to plan
    (neither: every pair). ``allocation``: ``"random"`` (each system's share of the unrated
    responses) or ``"targeted"`` (greedy, for the planned quantities together).

    Returns a tidy table, one row per (raters, extra, quantity): ``raters``, ``extra_responses``,
    ``extra_ratings``, ``quantity`` (a system or ``"A - B"``), ``current_mean``,
    ``current_width``, ``expected_width``, for differences ``p_excludes_zero`` (the probability
    that the interval then excludes zero), and with ``target_width`` ``meets_target``.

    Stopping rule: stop when the interval meets the target or excludes zero; stop as well where
    ``p_excludes_zero`` at the largest affordable ``extra`` stays low, since the difference is
    then too small to resolve with that budget."""
    if allocation not in ALLOCATIONS:
        raise InvalidInputError(f"allocation must be one of {ALLOCATIONS}, got {allocation!r}.")
    check_ci_prob(ci_prob)
    extra, raters = sorted(int(e) for e in np.atleast_1d(extra)), [int(k) for k in np.atleast_1d(raters)]
    if min(extra) < 0 or min(raters) < 1:
        raise InvalidInputError(f"extra must be >= 0 and raters >= 1; got {extra} and {raters}.")
    coded, labels = _quantities(result, pairs, systems)
    info, precision, unrated = _setup(result, n_draws)
    if max(extra) > unrated["n"].sum():
        raise InvalidInputError(f"only {unrated['n'].sum()} responses have no human rating; plan extra <= that (got {max(extra)}).")
    contrasts, z = info.contrasts(coded), stats.norm.ppf(0.5 + ci_prob / 2)
    now_var = variances(precision, contrasts).mean(axis=0)
    current = _current(result, coded, ci_prob)
    rows = []
    for k in raters:
        gains = [info.response(g.system, g.mask, k) - info.response(g.system, g.mask, 0) for g in unrated.itertuples()]
        path = greedy_path(precision, gains, unrated["n"].to_numpy(float), max(extra), contrasts) if allocation == "targeted" else None
        for e in extra:
            counts = _allocation(unrated["n"].to_numpy(float), e, path)
            future = precision + sum(c * g for c, g in zip(counts, gains, strict=True))
            ratio = np.sqrt(variances(future, contrasts).mean(axis=0) / now_var)
            for q, label, (width, mean), r in zip(coded, labels, current, ratio, strict=True):
                row = {"raters": k, "extra_responses": e, "extra_ratings": e * k, "quantity": label, "current_mean": mean,
                       "current_width": width, "expected_width": width * r}
                if isinstance(q, tuple):
                    sd_now, sd_future = width / (2 * z), width * r / (2 * z)
                    row["p_excludes_zero"] = p_clears(mean, sd_now, sd_future, z) + p_clears(-mean, sd_now, sd_future, z)
                if target_width is not None:
                    row["meets_target"] = width * r <= target_width
                rows.append(row)
    return pd.DataFrame(rows)


def _allocation(available: np.ndarray, extra: int, path) -> np.ndarray:
    """Responses per unrated group: in proportion to the group sizes, or the greedy path's counts
    when it first reaches ``extra`` (each batch may overshoot by less than one batch: scaled)."""
    if extra == 0:
        return np.zeros_like(available)
    if path is None:
        return extra * available / available.sum()
    totals = path.sum(axis=1)
    step = int(np.searchsorted(totals, extra))
    return path[step] * extra / totals[step]


def next_responses(result, n: int = 20, *, pairs=None, systems=None, raters: int = 2, n_draws: int = 100, random_seed=None) -> pd.DataFrame:
    """The next ``n`` responses to send to ``raters`` human raters each: chosen greedily where the
    summed posterior variance of the planned quantities (``pairs``/``systems`` as in
    :func:`plan_human_ratings`; default every pair) falls most, one response at a time (a batch
    at a time past 40), at random among equally informative responses (same system and judges).

    Returns one row per response in the order chosen: ``response``, ``system`` and
    ``expected_variance`` (the summed variance, standardised scale, once it is rated)."""
    if n < 1:
        raise InvalidInputError(f"n must be a positive number of responses, got {n}.")
    coded, _ = _quantities(result, pairs, systems)
    info, precision, unrated = _setup(result, n_draws)
    if n > unrated["n"].sum():
        raise InvalidInputError(f"only {unrated['n'].sum()} responses have no human rating; ask for n <= that (got {n}).")
    contrasts = info.contrasts(coded)
    gains = [info.response(g.system, g.mask, raters) - info.response(g.system, g.mask, 0) for g in unrated.itertuples()]
    path = greedy_path(precision, gains, unrated["n"].to_numpy(float), n, contrasts, steps=min(n, GREEDY_STEPS))
    rng, names, rows, previous = seeded_rng(random_seed), list(result.data.system_names), [], np.zeros(len(gains))
    pools = [list(rng.permutation(g.responses)) for g in unrated.itertuples()]
    for counts in path:
        added = counts - previous
        precision = precision + sum(a * g for a, g in zip(added, gains, strict=True))
        total = float(variances(precision, contrasts).sum(axis=1).mean())
        for g in np.flatnonzero(added):
            for _ in range(int(added[g])):
                rows.append({"response": pools[g].pop(), "system": names[unrated.loc[g, "system"]], "expected_variance": total})
        previous = counts
    return pd.DataFrame(rows)
