"""The experiments of Loukina et al. (2020) on the simulated design of
:func:`bayes_raters.ctt.simulate_dataset`, plus the Bayesian extension, as functions that
return tidy DataFrames.

Each experiment is split into independent *cells* (a rater category, a number of
double-scored responses, ...). A cell is a plain function call on a :class:`StudyConfig`
that re-simulates the (seeded, cached per process) data set itself, so cells can run in any
``concurrent.futures.Executor``: in process (default), a ``ProcessPoolExecutor``, or a
``dask.distributed`` client's executor (``client.get_executor()``), with results
independent of where and in which order they ran. Random draws of cell k come from
``SeedSequence([seed, experiment, k])``.

Experiments (paper section): 1 :func:`metric_stability` (4.1, Fig. 1), 2
:func:`ranking` (4.2 and 5.2, Fig. 2), 3 :func:`more_raters` (4.3, Fig. 3), 4
:func:`prmse_stability` (5.2, Fig. 4), 5 :func:`double_scoring` (5.3, Fig. 5, Table 4),
6 :func:`bayesian_double_scoring` (new: the posterior PRMSE on the same grid).
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

from bayes_raters.agreement import degradation, pearson_r, quadratic_weighted_kappa, r2_score
from bayes_raters.ctt.prmse import prmse_true
from bayes_raters.ctt.simulate import RATER_ERROR_SDS, SYSTEM_R2, simulate_dataset
from bayes_raters.errors import InvalidInputError, RoundingWarning, SmallSampleWarning

CATEGORIES = tuple(RATER_ERROR_SDS)
SYSTEM_CATEGORIES = tuple(SYSTEM_R2)
METRICS = ("r", "QWK", "R2", "degradation")


@dataclass(frozen=True)
class StudyConfig:
    """The design: data size, seed, the evaluated "high" system, pairs per rater category,
    numbers of double-scored responses, and the Bayesian grid's size and sampler settings."""

    n_responses: int = 10_000
    random_seed: int = 2020
    system: str = "sys_16"
    pairs_per_category: int = 50
    max_raters: int = 50
    double_scored: tuple[int, ...] = (100, 250, 500, 1000, 2500, 5000, 10_000)
    bayes_pairs_per_category: int = 10
    bayes_draws: int = 1000
    bayes_tune: int = 1000
    bayes_chains: int = 2
    bayes_ci_prob: float = 0.9
    bayes_observation: str = "normal"  # or "ordinal" (integer ratings on score_range)
    bayes_categories: tuple[str, ...] = CATEGORIES
    score_range: tuple[float, float] = (1, 6)

    def __post_init__(self) -> None:
        if any(not 1 <= n <= self.n_responses for n in self.double_scored):
            raise InvalidInputError(f"double_scored sizes must lie in [1, {self.n_responses}], got {self.double_scored}.")
        if self.pairs_per_category < 1 or self.bayes_pairs_per_category < 1:
            raise InvalidInputError("pairs per category must be at least 1.")
        unknown = set(self.bayes_categories) - set(CATEGORIES)
        if unknown:
            raise InvalidInputError(f"bayes_categories must come from {CATEGORIES}, got {sorted(unknown)}.")


@functools.lru_cache(maxsize=4)
def study_data(config: StudyConfig) -> xr.Dataset:
    """The simulated data set of ``config`` (cached per process)."""
    return simulate_dataset(config.n_responses, random_seed=config.random_seed)


def _rng(config: StudyConfig, experiment: int, *cell: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([config.random_seed, experiment, *cell]))


def _raters(data: xr.Dataset, category: str) -> np.ndarray:
    return data["rater"].where(data["rater_category"] == category, drop=True).to_numpy()


def _metrics(system: np.ndarray, human_1: np.ndarray, human_2: np.ndarray, reference: str) -> dict[str, float]:
    """r, QWK (continuous), R2 against the first rater (``reference="first"``) or the pair
    mean (``"mean"``), and degradation r(M, ref) - r(H1, H2)."""
    values = human_1 if reference == "first" else (human_1 + human_2) / 2
    return {
        "r": pearson_r(system, values),
        "QWK": quadratic_weighted_kappa(system, values),
        "R2": r2_score(system, values),
        "degradation": degradation(system, human_1, human_2, reference=reference),
    }


def _pairs(config: StudyConfig, data: xr.Dataset, category_index: int, n_pairs: int, experiment: int = 1) -> list[tuple[str, str]]:
    rng = _rng(config, experiment, category_index)
    raters = _raters(data, CATEGORIES[category_index])
    return [tuple(rng.choice(raters, size=2, replace=False)) for _ in range(n_pairs)]


# --- cells ---------------------------------------------------------------------------


def metric_stability_cell(config: StudyConfig, category_index: int) -> pd.DataFrame:
    """Experiment 1 for one rater category: the system against each random pair, with the
    first rater and the pair mean as reference, four metrics (long format)."""
    data = study_data(config)
    scores = data["system_score"].sel(system=config.system).to_numpy()
    rows = []
    for pair_index, pair in enumerate(_pairs(config, data, category_index, config.pairs_per_category)):
        h1, h2 = (data["rating"].sel(rater=r).to_numpy() for r in pair)
        for reference, key in (("first rater", "first"), ("pair mean", "mean")):
            for metric, value in _metrics(scores, h1, h2, key).items():
                rows.append((CATEGORIES[category_index], pair_index, "+".join(pair), reference, metric, value))
    return pd.DataFrame(rows, columns=["rater_category", "pair", "raters", "reference", "metric", "value"])


def prmse_stability_cell(config: StudyConfig, category_index: int) -> pd.DataFrame:
    """Experiment 4 for one rater category: R2 against the pair mean and closed-form PRMSE
    of the system for the same pairs as experiment 1."""
    data = study_data(config)
    scores = data["system_score"].sel(system=config.system).to_numpy()
    rows = []
    for pair_index, pair in enumerate(_pairs(config, data, category_index, config.pairs_per_category)):
        humans = data["rating"].sel(rater=list(pair)).to_numpy()
        rows.append((CATEGORIES[category_index], pair_index, r2_score(scores, humans.mean(axis=1)), prmse_true(scores, humans)))
    return pd.DataFrame(rows, columns=["rater_category", "pair", "R2 (pair mean)", "PRMSE"])


def ranking_cell(config: StudyConfig, repetition: int = 0) -> pd.DataFrame:
    """Experiment 2: every system gets a random pair from a random rater category; metrics
    against the pair mean, PRMSE, and the same metrics against one common 'average' pair.
    Ranks are 1 = best (for degradation, higher = better as for the others)."""
    data = study_data(config)
    rng = _rng(config, 2, repetition)
    truth = data["true_score"].to_numpy()
    common = tuple(rng.choice(_raters(data, "average"), size=2, replace=False))
    rows = []
    for system in data["system"].to_numpy():
        category = rng.choice(CATEGORIES)
        pair = tuple(rng.choice(_raters(data, category), size=2, replace=False))
        scores = data["system_score"].sel(system=system).to_numpy()
        for design, chosen in (("assigned pair", pair), ("same pair", common)):
            h1, h2 = (data["rating"].sel(rater=r).to_numpy() for r in chosen)
            values = _metrics(scores, h1, h2, "mean")
            with warnings.catch_warnings():  # a poor system's PRMSE near 0 may fall just below
                warnings.simplefilter("ignore", SmallSampleWarning)
                values["PRMSE"] = prmse_true(scores, np.column_stack([h1, h2]))
            for metric, value in values.items():
                rows.append((repetition, system, str(data["system_category"].sel(system=system).item()),
                             r2_score(scores, truth), design, category if design == "assigned pair" else "average",
                             metric, value))
    frame = pd.DataFrame(rows, columns=["repetition", "system", "system_category", "true_R2", "design", "rater_category", "metric", "value"])
    frame["true_rank"] = frame.groupby(["design", "metric"])["true_R2"].rank(ascending=False, method="first").astype(int)
    frame["rank"] = frame.groupby(["design", "metric"])["value"].rank(ascending=False, method="first").astype(int)
    return frame


def more_raters_cell(config: StudyConfig, category_index: int) -> pd.DataFrame:
    """Experiment 3 for one rater category: the system against the cumulative mean of the
    first k of the category's raters in random order, k = 1..max_raters; r, QWK, R2."""
    data = study_data(config)
    rng = _rng(config, 3, category_index)
    raters = rng.permutation(_raters(data, CATEGORIES[category_index]))[: config.max_raters]
    scores = data["system_score"].sel(system=config.system).to_numpy()
    cumulative = np.cumsum(data["rating"].sel(rater=list(raters)).to_numpy(), axis=1) / np.arange(1, len(raters) + 1)
    rows = []
    for k in range(len(raters)):
        reference = cumulative[:, k]
        rows += [
            (CATEGORIES[category_index], k + 1, "r", pearson_r(scores, reference)),
            (CATEGORIES[category_index], k + 1, "QWK", quadratic_weighted_kappa(scores, reference)),
            (CATEGORIES[category_index], k + 1, "R2", r2_score(scores, reference)),
        ]
    return pd.DataFrame(rows, columns=["rater_category", "n_raters", "metric", "value"])


def _double_scored_humans(data: xr.Dataset, pair, n_double: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """All responses with the first rater's score, n_double of them also the second's."""
    humans = data["rating"].sel(rater=list(pair)).to_numpy().copy()
    chosen = np.sort(rng.choice(len(humans), size=n_double, replace=False))
    single = np.ones(len(humans), dtype=bool)
    single[chosen] = False
    humans[single, 1] = np.nan
    return humans, chosen


def double_scoring_cell(config: StudyConfig, category_index: int, size_index: int) -> pd.DataFrame:
    """Experiment 5 for one (rater category, number double-scored): closed-form PRMSE of the
    system per pair on the full sample (all responses, n double-scored) and on the
    double-scored responses alone; values outside [0, 1] are kept (and counted)."""
    data = study_data(config)
    n_double = config.double_scored[size_index]
    scores = data["system_score"].sel(system=config.system).to_numpy()
    rng = _rng(config, 5, category_index, size_index)
    rows = []
    for pair_index, pair in enumerate(_pairs(config, data, category_index, config.pairs_per_category, experiment=5)):
        humans, chosen = _double_scored_humans(data, pair, n_double, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SmallSampleWarning)
            full = prmse_true(scores, humans)
            alone = prmse_true(scores[chosen], humans[chosen])
        for sample, value in (("full", full), ("double-scored only", alone)):
            rows.append((CATEGORIES[category_index], n_double, 100 * n_double / len(scores), pair_index, sample, value))
    return pd.DataFrame(rows, columns=["rater_category", "n_double", "percent_double", "pair", "sample", "prmse"])


def bayesian_double_scoring_cell(config: StudyConfig, category_index: int, size_index: int, pair_index: int) -> pd.DataFrame:
    """Experiment 6, one fit: the posterior PRMSE of the system on the double-scored-only
    sample of one pair, beside the closed form and the PRMSE against the simulated true
    scores of the same responses: 1 - sum (M - T)^2 / sum (T - mean T)^2."""
    from bayes_raters.ctt.fit import fit_true_score

    data = study_data(config)
    n_double = config.double_scored[size_index]
    pair = _pairs(config, data, category_index, config.bayes_pairs_per_category, experiment=6)[pair_index]
    rng = _rng(config, 6, category_index, size_index, pair_index)
    humans, chosen = _double_scored_humans(data, pair, n_double, rng)
    responses = data["response"].to_numpy()[chosen]
    ratings = pd.DataFrame(
        {"response": np.repeat(responses, 2), "rater": np.tile(list(pair), n_double), "score": humans[chosen].ravel()}
    )
    scores = data["system_score"].sel(system=config.system).to_numpy()[chosen]
    systems = pd.DataFrame({"response": responses, "system": config.system, "score": scores})
    truth = data["true_score"].to_numpy()[chosen]
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ordinal = {"observation": "ordinal", "score_range": config.score_range} if config.bayes_observation == "ordinal" else {}
        result = fit_true_score(
            ratings, systems, draws=config.bayes_draws, tune=config.bayes_tune, chains=config.bayes_chains,
            random_seed=int(rng.integers(2**31)), cores=1, **ordinal,  # the pool runs fits in parallel
        )
        row = result.prmse_table(config.bayes_ci_prob).loc[config.system]
    true_prmse = 1 - np.sum((scores - truth) ** 2) / np.sum((truth - truth.mean()) ** 2)
    return pd.DataFrame(
        [{
            "rater_category": CATEGORIES[category_index], "n_double": n_double, "pair": pair_index,
            "observation": config.bayes_observation,
            "true_prmse": true_prmse, "closed_form": row["closed_form"], "posterior_mean": row["prmse_mean"],
            "lower": row["prmse_lower"], "upper": row["prmse_upper"], "r_hat": row["r_hat"], "converged": bool(row["converged"]),
            "warnings": len([w for w in caught if not issubclass(w.category, (SmallSampleWarning, RoundingWarning))]),
            "seconds": time.perf_counter() - started,
        }]
    )


# --- running a grid ------------------------------------------------------------------


class InProcessExecutor(Executor):
    """Runs each submitted call at once, in this process (the default executor)."""

    def submit(self, fn, /, *args, **kwargs) -> Future:
        """Run ``fn(*args, **kwargs)`` now and return a finished future (the in-process executor)."""
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as error:  # noqa: BLE001 - handed to the caller through the future
            future.set_exception(error)
        return future


def _run(cells: Sequence[tuple[Callable, tuple]], executor: Executor | None) -> pd.DataFrame:
    executor = executor or InProcessExecutor()
    futures = [executor.submit(fn, *args) for fn, args in cells]
    return pd.concat([f.result() for f in futures], ignore_index=True)


def metric_stability(config: StudyConfig = StudyConfig(), executor: Executor | None = None) -> pd.DataFrame:
    """The paper's metric-stability experiment (Figure 4), one cell per rater category, on ``executor``."""
    return _run([(metric_stability_cell, (config, c)) for c in range(len(CATEGORIES))], executor)


def prmse_stability(config: StudyConfig = StudyConfig(), executor: Executor | None = None) -> pd.DataFrame:
    """PRMSE against the rater pair used, one cell per rater category, on ``executor``."""
    return _run([(prmse_stability_cell, (config, c)) for c in range(len(CATEGORIES))], executor)


def ranking(config: StudyConfig = StudyConfig(), executor: Executor | None = None, repetitions: int = 1) -> pd.DataFrame:
    """How often each metric ranks the systems as their true R2 does, over ``repetitions``, on ``executor``."""
    return _run([(ranking_cell, (config, r)) for r in range(repetitions)], executor)


def more_raters(config: StudyConfig = StudyConfig(), executor: Executor | None = None) -> pd.DataFrame:
    """Metrics against the average of more raters, one cell per rater category, on ``executor``."""
    return _run([(more_raters_cell, (config, c)) for c in range(len(CATEGORIES))], executor)


def double_scoring(config: StudyConfig = StudyConfig(), executor: Executor | None = None) -> pd.DataFrame:
    """Closed-form PRMSE against the number of double-scored responses (Table 4), on ``executor``."""
    cells = [(double_scoring_cell, (config, c, s)) for c in range(len(CATEGORIES)) for s in range(len(config.double_scored))]
    return _run(cells, executor)


def bayesian_double_scoring(config: StudyConfig = StudyConfig(), executor: Executor | None = None) -> pd.DataFrame:
    """Posterior PRMSE and its interval against the number of double-scored responses, on ``executor``."""
    cells = [
        (bayesian_double_scoring_cell, (config, c, s, p))
        for c in range(len(CATEGORIES))
        if CATEGORIES[c] in config.bayes_categories
        for s in range(len(config.double_scored))
        for p in range(config.bayes_pairs_per_category)
    ]
    return _run(cells, executor)


# --- summaries -----------------------------------------------------------------------


def inter_rater_table(config: StudyConfig = StudyConfig()) -> pd.DataFrame:
    """Table 1: mean correlation of all rater pairs within each category, score mean and SD."""
    data = study_data(config)
    rows = {}
    for category in CATEGORIES:
        ratings = data["rating"].sel(rater=_raters(data, category)).to_numpy()
        r = np.corrcoef(ratings.T)[np.triu_indices(ratings.shape[1], 1)]
        rows[category] = {"n_raters": ratings.shape[1], "r": r.mean(), "mean": ratings.mean(), "sd": ratings.std(ddof=1)}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("rater_category")


def system_table(config: StudyConfig = StudyConfig()) -> pd.DataFrame:
    """Table 2: mean R2 and r against the true score per system category, and r against an
    'average' rater."""
    data = study_data(config)
    truth = data["true_score"].to_numpy()
    average_rater = data["rating"].sel(rater=_raters(data, "average")[0]).to_numpy()
    rows = []
    for system in data["system"].to_numpy():
        scores = data["system_score"].sel(system=system).to_numpy()
        rows.append({
            "system_category": str(data["system_category"].sel(system=system).item()),
            "R2 (true)": r2_score(scores, truth), "r (true)": pearson_r(scores, truth),
            "r (average rater)": pearson_r(scores, average_rater),
        })
    return pd.DataFrame(rows).groupby("system_category", sort=False).mean()


def ranking_agreement(frame: pd.DataFrame) -> pd.DataFrame:
    """Spearman correlation of each metric's ranking with the true ranking, per design."""
    return (
        frame.groupby(["design", "metric", "repetition"])
        .apply(lambda g: stats.spearmanr(g["rank"], g["true_rank"]).statistic, include_groups=False)
        .groupby(["design", "metric"]).mean().unstack("design")
    )


def prmse_ranges(frame: pd.DataFrame, sample: str = "double-scored only") -> pd.DataFrame:
    """Table 4: range (max - min) of PRMSE over pairs per (n double-scored, rater category)."""
    chosen = frame[frame["sample"] == sample]
    return chosen.pivot_table(index="n_double", columns="rater_category", values="prmse", aggfunc=np.ptp)[list(CATEGORIES)]


def bayesian_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (rater category, n double-scored): coverage of the posterior interval for the
    true-score PRMSE, mean interval width, the share of closed-form and posterior means
    outside [0, 1], mean absolute errors of both against the true-score PRMSE."""
    frame = frame.assign(
        covered=(frame["lower"] <= frame["true_prmse"]) & (frame["true_prmse"] <= frame["upper"]),
        width=frame["upper"] - frame["lower"],
        closed_outside=(frame["closed_form"] < 0) | (frame["closed_form"] > 1),
        posterior_outside=(frame["posterior_mean"] < 0) | (frame["posterior_mean"] > 1),
        closed_error=(frame["closed_form"] - frame["true_prmse"]).abs(),
        posterior_error=(frame["posterior_mean"] - frame["true_prmse"]).abs(),
    )
    summary = frame.groupby(["rater_category", "n_double"], sort=False).agg(
        fits=("covered", "size"), coverage=("covered", "mean"), width=("width", "mean"),
        closed_outside=("closed_outside", "mean"), posterior_outside=("posterior_outside", "mean"),
        closed_mae=("closed_error", "mean"), posterior_mae=("posterior_error", "mean"),
        not_converged=("converged", lambda c: int((~c.astype(bool)).sum())),
    )
    return summary


@dataclass
class StudyResults:
    """Every experiment's tidy frame, with the config that made them."""

    config: StudyConfig
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)



def run_study(config: StudyConfig = StudyConfig(), executor: Executor | None = None, *, bayesian: bool = True) -> StudyResults:
    """Run experiments 1-5 (and 6 if ``bayesian``) on ``executor``."""
    results = StudyResults(config)
    results.frames["metric_stability"] = metric_stability(config, executor)
    results.frames["ranking"] = ranking(config, executor)
    results.frames["more_raters"] = more_raters(config, executor)
    results.frames["prmse_stability"] = prmse_stability(config, executor)
    results.frames["double_scoring"] = double_scoring(config, executor)
    if bayesian:
        results.frames["bayesian_double_scoring"] = bayesian_double_scoring(config, executor)
    return results
