"""Simulated items and annotators for the online elicitation methods, and the efficiency
experiment of Sakaguchi & Van Durme (2018, Section 5.1): DA vs RA vs EASL on the same
budget, Spearman and Pearson correlation with the latent truth per iteration.

A simulated annotator perceives an item with latent value v in [0, 1] as::

    y = clip(0.5 + exp(s_a) (v - 0.5) + b_a + e,  0, 1),   e ~ N(0, (k sigma)^2)

with annotator bias b_a ~ N(0, bias_sd^2) and log-scale s_a ~ N(0, scale_sd^2), drawn once
per annotator: one annotator answers a whole HIT (so a HIT shares b_a and s_a), while in
DA every judgement comes from a new annotator. k = 1 for a judgement made alone (DA) and
k = ``context_noise`` for one made side by side with the other items of a HIT. With
k = 1 EASL's scalar updates average the same judgements DA averages (the Beta mode after
n judgements is their mean), so any efficiency gain of EASL must come from k < 1 (people
place an item more precisely next to others) or from selection; ``context_noise`` makes
that mechanism an explicit, testable assumption. Two perceived values within
``tie_threshold`` are a tie when a HIT is read as pairwise outcomes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from bayes_raters.errors import InvalidInputError
from bayes_raters.pairwise.design import random_pairs
from bayes_raters.pairwise.hits import pair_ids
from bayes_raters.pairwise.online import EASL, BoundedRA, DirectAssessment, TrueSkill
from bayes_raters.results import draw_categories

LATENT_SHAPES = ("uniform", "skewed", "bimodal", "central", "upper", "lower")


def latent_values(n_items: int, shape: str = "uniform", random_seed=None) -> pd.Series:
    """Latent item values in [0, 1], indexed by item ids ``item_001``...: ``uniform``;
    ``skewed`` Beta(2, 5) (most items rare, as in lexical frequency); ``bimodal`` an equal
    mixture of Beta(2, 7) and Beta(7, 2) (a political-spectrum-like split); ``central``
    Beta(4, 4); ``upper`` Beta(12, 1.5) and ``lower`` Beta(1.5, 12) (all items near one
    bound, as in a set of only liberal propositions).

    Parameters
    ----------
    n_items : int
        The number of items.
    shape : {"uniform", "skewed", "bimodal", "central", "upper", "lower"}
        The distribution of the values.
    random_seed : int, numpy.random.Generator or None
        Seed of the draws.

    Returns
    -------
    pandas.Series
        The values, indexed by item id.
    """
    if shape not in LATENT_SHAPES:
        raise InvalidInputError(f"shape must be one of {LATENT_SHAPES}, got {shape!r}.")
    if n_items < 2:
        raise InvalidInputError(f"n_items must be at least 2, got {n_items}.")
    rng = np.random.default_rng(random_seed)
    if shape == "uniform":
        values = rng.uniform(size=n_items)
    elif shape == "bimodal":
        upper = rng.random(n_items) < 0.5
        values = np.where(upper, rng.beta(7, 2, n_items), rng.beta(2, 7, n_items))
    else:
        a, b = {"skewed": (2, 5), "central": (4, 4), "upper": (12, 1.5), "lower": (1.5, 12)}[shape]
        values = rng.beta(a, b, n_items)
    width = len(str(n_items))
    return pd.Series(values, index=pd.Index([f"item_{i + 1:0{width}d}" for i in range(n_items)], name="item"), name="truth")


@dataclass(frozen=True)
class SimulatedAnnotator:
    """How simulated people judge items on a bounded slider (see the module docstring)."""

    noise_sd: float = 0.15
    context_noise: float = 1.0
    bias_sd: float = 0.0
    scale_sd: float = 0.0
    tie_threshold: float = 0.02

    def __post_init__(self) -> None:
        for name in ("noise_sd", "context_noise", "bias_sd", "scale_sd", "tie_threshold"):
            if not getattr(self, name) >= 0:
                raise InvalidInputError(f"{name} must be >= 0, got {getattr(self, name)}.")

    def _perceive(self, truth: np.ndarray, bias: np.ndarray, log_scale: np.ndarray, noise_factor: float, rng) -> np.ndarray:
        noise = rng.normal(0.0, self.noise_sd * noise_factor, size=truth.shape)
        return np.clip(0.5 + np.exp(log_scale) * (truth - 0.5) + bias + noise, 0.0, 1.0)

    def judge_alone(self, items: Sequence, truth: pd.Series, random_seed=None) -> pd.DataFrame:
        """DA: one judgement per listed item, each by a new annotator. Columns ``item, value``."""
        rng = np.random.default_rng(random_seed)
        values = truth.loc[list(items)].to_numpy()
        n = len(values)
        judged = self._perceive(values, rng.normal(0, self.bias_sd, n), rng.normal(0, self.scale_sd, n), 1.0, rng)
        return pd.DataFrame({"item": list(items), "value": judged})

    def judge_hits(self, hits: pd.DataFrame, truth: pd.Series, random_seed=None) -> pd.DataFrame:
        """Answer HITs (columns ``hit, item``) as partial rankings with scalars, one annotator
        per HIT. Returns columns ``hit, item, value``."""
        rng = np.random.default_rng(random_seed)
        codes, uniques = pd.factorize(hits["hit"])
        bias = rng.normal(0, self.bias_sd, len(uniques))[codes]
        log_scale = rng.normal(0, self.scale_sd, len(uniques))[codes]
        values = truth.loc[hits["item"]].to_numpy()
        judged = self._perceive(values, bias, log_scale, self.context_noise, rng)
        return pd.DataFrame({"hit": hits["hit"].to_numpy(), "item": hits["item"].to_numpy(), "value": judged})


METHODS = ("DA", "RA", "EASL", "TrueSkill")


def _new_method(name: str, items: pd.Index):
    if name == "DA":
        return DirectAssessment(items)
    if name == "RA":
        return BoundedRA(items)
    if name == "EASL":
        return EASL(items)
    return TrueSkill(items, mu=0.5, sigma=0.5 / 3)


def _scalars(method, truth: pd.Series) -> np.ndarray:
    """Final scalars aligned with ``truth``; an item DA never judged sits at 0.5."""
    return method.scores()["scalar"].reindex(truth.index).fillna(0.5).to_numpy()


def _one_run(name: str, truth: pd.Series, annotator: SimulatedAnnotator, iterations: int, n_items: int, k: int, seed) -> tuple[list[dict], np.ndarray]:
    rng = np.random.default_rng(seed)
    method = _new_method(name, truth.index)
    rows = []
    for iteration in range(1, iterations + 1):
        hits = method.select_hits(n_items=n_items, n_hits=k, random_seed=rng)
        if name == "DA":
            method.observe_scalars(annotator.judge_alone(hits["item"], truth, rng))
        else:
            method.observe_hits(annotator.judge_hits(hits, truth, rng), tie_threshold=annotator.tie_threshold)
        scalar = _scalars(method, truth)
        rows.append(
            {
                "method": name,
                "iteration": iteration,
                "judgements_per_item": iteration * k * n_items / len(truth),
                "spearman": stats.spearmanr(scalar, truth.to_numpy()).statistic,
                "pearson": stats.pearsonr(scalar, truth.to_numpy()).statistic,
            }
        )
    return rows, scalar


@dataclass
class ElicitationExperiment:
    """Results of :func:`run_elicitation_experiment`: ``curves`` (one row per method,
    repetition and iteration) and ``final`` (final scalar of every item per method and
    repetition, beside the truth)."""

    curves: pd.DataFrame
    final: pd.DataFrame
    truth: pd.Series

    def summary(self, confidence: float = 0.95, random_seed: int = 0) -> pd.DataFrame:
        """Mean Spearman and Pearson per method and iteration over repetitions, with
        percentile bootstrap intervals of the mean (scipy.stats.bootstrap, 1,000 resamples)."""
        rows = []
        for (method, iteration), group in self.curves.groupby(["method", "iteration"], sort=False):
            row = {"method": method, "iteration": iteration, "judgements_per_item": group["judgements_per_item"].iloc[0]}
            for metric in ("spearman", "pearson"):
                values = group[metric].to_numpy()
                row[metric] = values.mean()
                if len(values) > 1 and np.ptp(values) > 0:
                    ci = stats.bootstrap((values,), np.mean, confidence_level=confidence, n_resamples=1000,
                                         method="percentile", rng=np.random.default_rng(random_seed)).confidence_interval
                    row[f"{metric}_lower"], row[f"{metric}_upper"] = ci.low, ci.high
                else:
                    row[f"{metric}_lower"] = row[f"{metric}_upper"] = values.mean()
            rows.append(row)
        return pd.DataFrame(rows)

    def ranges(self, low: float = 5, high: float = 95) -> pd.DataFrame:
        """Width of the final scalars between the ``low`` and ``high`` percentiles per method
        (mean over repetitions), next to the truth's and as a ratio to it."""
        truth_width = float(np.diff(np.percentile(self.truth, [low, high]))[0])
        widths = self.final.groupby(["method", "repetition"], sort=False)["scalar"].apply(
            lambda s: float(np.diff(np.percentile(s, [low, high]))[0])
        )
        table = widths.groupby("method", sort=False).mean().rename("range").to_frame()
        table["truth_range"] = truth_width
        table["ratio"] = table["range"] / truth_width
        return table

    def plot_curves(self, metric: str = "spearman", ax=None):
        """Mean correlation per judgements-per-item with its bootstrap band (Figs. 6, 9)."""
        import matplotlib.pyplot as plt

        ax = ax or plt.subplots(figsize=(6, 4))[1]
        for method, group in self.summary().groupby("method", sort=False):
            x = group["judgements_per_item"]
            ax.plot(x, group[metric], marker="o", label=method)
            ax.fill_between(x, group[f"{metric}_lower"], group[f"{metric}_upper"], alpha=0.25)
        ax.set_xlabel("judgements per item (budget)")
        ax.set_ylabel(f"{metric} with the truth")
        ax.legend()
        return ax

    def plot_histograms(self, bins: int = 5, repetition: int = 0):
        """Histograms of the final scalars of each method next to the truth (Figs. 7, 10)."""
        import matplotlib.pyplot as plt

        methods = list(self.final["method"].unique())
        fig, axes = plt.subplots(1, len(methods) + 1, figsize=(3 * (len(methods) + 1), 2.8), sharey=True)
        edges = np.linspace(0, 1, bins + 1)
        axes[0].hist(self.truth, bins=edges, color="grey")
        axes[0].set_title("truth")
        for ax, method in zip(axes[1:], methods, strict=True):
            chosen = self.final[(self.final["method"] == method) & (self.final["repetition"] == repetition)]
            ax.hist(chosen["scalar"], bins=edges)
            ax.set_title(method)
        return fig


def run_elicitation_experiment(
    truth: pd.Series,
    annotator: SimulatedAnnotator | None = None,
    *,
    methods: Sequence[str] = ("DA", "RA", "EASL"),
    iterations: int = 10,
    n_items: int = 5,
    hits_per_iteration: int | None = None,
    repetitions: int = 20,
    random_seed: int = 0,
) -> ElicitationExperiment:
    """Run each method for ``iterations`` rounds of ``hits_per_iteration`` HITs of
    ``n_items`` items (default ceil(N / n_items), one judgement per item per round, so
    round t of RA/EASL costs what DA with t judgements per item costs), ``repetitions``
    times with independent seeds. DA judges the least-judged items alone; RA reads each
    HIT as C(n, 2) outcomes, EASL as n scalars, from the same kind of answer.

    The paper's Section 5.1 states 20 HITs per iteration and also the same total budget as
    10 DA judgements per item for 150 items; both cannot hold (20 x 5 x 10 = 1,000 < 1,500),
    so the default follows Algorithm 1's k = N / n, which makes the budgets equal.

    Parameters
    ----------
    truth : pandas.Series
        The items' true values, indexed by item.
    annotator : SimulatedAnnotator, optional
        The simulated judge; default the paper's.
    methods : sequence of str
        Elicitation methods among ``"DA"``, ``"RA"``, ``"EASL"``.
    iterations : int
        Rounds per run.
    n_items : int
        Items per HIT.
    hits_per_iteration : int, optional
        HITs per round (default above).
    repetitions : int
        Independent runs per method.
    random_seed : int
        Seed of the first run.

    Returns
    -------
    ElicitationExperiment
        The correlation with the truth after every round, for every method and run.

    Examples
    --------
    >>> from bayes_raters.pairwise import latent_values, run_elicitation_experiment
    >>> experiment = run_elicitation_experiment(latent_values(20, random_seed=0), iterations=2, repetitions=2)
    >>> type(experiment).__name__
    'ElicitationExperiment'
    """
    unknown = set(methods) - set(METHODS)
    if unknown:
        raise InvalidInputError(f"methods must be among {METHODS}, got {sorted(unknown)}.")
    annotator = annotator or SimulatedAnnotator()
    k = math.ceil(len(truth) / n_items) if hits_per_iteration is None else hits_per_iteration
    seeds = np.random.SeedSequence(random_seed).spawn(repetitions)
    curves, finals = [], []
    for repetition, seed in enumerate(seeds):
        for name, method_seed in zip(methods, seed.spawn(len(methods)), strict=True):
            rows, scalar = _one_run(name, truth, annotator, iterations, n_items, k, method_seed)
            curves.extend({**row, "repetition": repetition} for row in rows)
            finals.append(pd.DataFrame({"method": name, "repetition": repetition, "item": truth.index, "scalar": scalar, "truth": truth.to_numpy()}))
    columns = ["method", "repetition", "iteration", "judgements_per_item", "spearman", "pearson"]
    return ElicitationExperiment(pd.DataFrame(curves)[columns], pd.concat(finals, ignore_index=True), truth)


def outcome_probabilities(s_a: np.ndarray, s_b: np.ndarray, lam, epsilon, link: str = "rao-kupper") -> np.ndarray:
    """P(loss), P(tie), P(win) of item_a (last axis) under the Bayesian model's pairwise
    likelihood (see :mod:`bayes_raters.pairwise.model`); arrays broadcast.

    Parameters
    ----------
    s_a, s_b : numpy.ndarray
        Latent values of the two items, in [0, 1].
    lam : float or numpy.ndarray
        Preference sharpness of the link.
    epsilon : float or numpy.ndarray
        Tie width of the link.
    link : {"rao-kupper", "probit"}
        The tie model.

    Returns
    -------
    numpy.ndarray
        The three probabilities on the last axis, summing to 1.

    Examples
    --------
    >>> import numpy as np
    >>> from bayes_raters.pairwise import outcome_probabilities
    >>> outcome_probabilities(np.array(0.7), np.array(0.3), 8.0, 0.5).round(3).tolist()
    [0.024, 0.039, 0.937]
    """
    s_a, s_b = np.asarray(s_a, float), np.asarray(s_b, float)
    if link == "probit":
        d = lam * (s_a - s_b)
        win, loss = stats.norm.cdf(d - epsilon), stats.norm.cdf(-d - epsilon)
    else:
        pi_a, pi_b, theta = np.exp(lam * s_a), np.exp(lam * s_b), np.exp(epsilon)
        win, loss = pi_a / (pi_a + theta * pi_b), pi_b / (theta * pi_a + pi_b)
    return np.stack([loss, 1.0 - win - loss, win], axis=-1)


def simulate_judgements(
    truth: pd.Series,
    *,
    n_comparisons: int = 0,
    n_scalars: int = 0,
    n_strengths: int = 0,
    n_annotators: int = 1,
    lam: float = 8.0,
    epsilon: float = 0.5,
    phi: float = 20.0,
    strength_gain: float = 1.5,
    strength_sigma: float = 0.2,
    strength_max: float = 1.0,
    sigma_consistency: float = 0.0,
    sigma_bias: float = 0.0,
    link: str = "rao-kupper",
    pairs: pd.DataFrame | None = None,
    random_seed=None,
) -> dict[str, pd.DataFrame]:
    """Judgements drawn from the Bayesian beta-latent model itself (for recovery and
    calibration checks): random pairs with Rao-Kupper (or probit) outcomes, Beta slider
    values (rounded to 0.01, so ends at exactly 0 and 1 occur), and preference strengths
    censored to [-strength_max, strength_max]. Returns ``comparisons``, ``scalars`` and
    ``strengths`` tables (each with an ``annotator`` column) and the annotator effects.
    ``pairs`` (columns ``item_a``, ``item_b``) fixes the compared pairs instead of
    ``n_comparisons`` random ones, e.g. from :func:`~bayes_raters.pairwise.design.neighbour_pairs`.

    Parameters
    ----------
    truth : pandas.Series
        The items' true values in [0, 1], indexed by item.
    n_comparisons, n_scalars, n_strengths : int
        Judgements of each kind.
    n_annotators : int
        Annotators the judgements are spread over.
    lam, epsilon : float
        Preference sharpness and tie width of the pairwise link.
    phi : float
        Precision of the scalar (slider) judgements.
    strength_gain, strength_sigma, strength_max : float
        Gain, noise and upper bound of the preference strengths.
    sigma_consistency, sigma_bias : float
        SD of the annotators' consistency and of their slider biases.
    link : {"rao-kupper", "probit"}
        The tie model.
    pairs : pandas.DataFrame, optional
        The pairs to compare; default random pairs.
    random_seed : int, numpy.random.Generator or None
        Seed of every draw.

    Returns
    -------
    dict of str to pandas.DataFrame
        ``comparisons``, ``scalars`` and ``strengths`` tables.

    Examples
    --------
    >>> from bayes_raters.pairwise import latent_values, simulate_judgements
    >>> data = simulate_judgements(latent_values(5, random_seed=0), n_comparisons=20, n_scalars=10, random_seed=0)
    >>> sorted(data), len(data["comparisons"])
    (['annotator_effects', 'comparisons', 'scalars', 'strengths'], 20)
    """
    rng = np.random.default_rng(random_seed)
    items, s = truth.index.to_numpy(), truth.to_numpy(float)
    if pairs is not None:
        a_ids, b_ids = pair_ids(pairs, "item_b", "pairs")
        given = (truth.index.get_indexer(a_ids.to_numpy()), truth.index.get_indexer(b_ids.to_numpy()))
        if (given[0] < 0).any() or (given[1] < 0).any():
            raise InvalidInputError("pairs: every item_a and item_b must be an item of truth.")
        n_comparisons = len(pairs)
    annotators = np.array([f"ann_{k + 1:02d}" for k in range(n_annotators)])
    consistency = np.exp(rng.normal(0, sigma_consistency, n_annotators))
    bias = rng.normal(0, sigma_bias, n_annotators)

    out = {}
    a, b = given if pairs is not None else random_pairs(len(items), n_comparisons, rng)
    who = rng.integers(0, n_annotators, n_comparisons)
    probs = outcome_probabilities(s[a], s[b], lam * consistency[who], epsilon, link)
    choice = draw_categories(probs, rng)
    out["comparisons"] = pd.DataFrame(
        {"item_a": items[a], "item_b": items[b], "outcome": np.array(["loss", "tie", "win"])[choice], "annotator": annotators[who]}
    )
    where = rng.integers(0, len(items), n_scalars)
    who = rng.integers(0, n_annotators, n_scalars)
    mean = 1 / (1 + np.exp(-(np.log(s[where] / (1 - s[where])) + bias[who])))
    concentration = phi * consistency[who]
    values = np.round(rng.beta(mean * concentration, (1 - mean) * concentration), 2)
    out["scalars"] = pd.DataFrame({"item": items[where], "value": values, "annotator": annotators[who]})
    a, b = random_pairs(len(items), n_strengths, rng)
    who = rng.integers(0, n_annotators, n_strengths)
    raw = rng.normal(strength_gain * (s[a] - s[b]), strength_sigma / consistency[who])
    out["strengths"] = pd.DataFrame(
        {"item_a": items[a], "item_b": items[b], "strength": np.clip(raw, -1, 1) * strength_max, "annotator": annotators[who]}
    )
    out["annotator_effects"] = pd.DataFrame({"consistency": consistency, "bias": bias}, index=pd.Index(annotators, name="annotator"))
    return out
