"""Rating-scale (RSE) vs preference-strength (PJE) experiments over the same systems
(Belz & Kow 2010/2011): a simulator with a repeated Latin-square design and the
paper's four comparisons, with the Bayesian posterior criterion beside the classical tests.

Design: S systems with true quality m_g in [0, 1]; the output of system g on test item t
has quality q_gt = clip(m_g + N(0, output_sd^2), 0, 1). RSE: in each S x S Latin square
evaluator e rates test item t as produced by system (e + t) mod S, on a 0-100 slider:
100 clip(q_gt + b_e + N(0, rse_noise_sd^2), 0, 1), b_e ~ N(0, rse_bias_sd^2) (evaluators'
own scale). PJE: the P = S(S-1)/2 system pairs in P x P squares; evaluator e sees, for test
item t, the outputs of pair (e + t) mod P side by side and moves a slider in [-X, X]:
X clip(gain (q_at - q_bt) + N(0, pje_noise_sd^2), -1, 1); a relative judgement carries no
evaluator scale offset. Each evaluator repeats ``n_repeats`` of its trials (self-consistency).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats

from bayes_raters.agreement import eta_squared, kendalls_w
from bayes_raters.errors import InvalidInputError


def _systems(quality) -> pd.Series:
    quality = pd.Series(quality, dtype=float)
    if quality.index.equals(pd.RangeIndex(len(quality))):
        quality.index = [f"sys_{k + 1}" for k in range(len(quality))]
    if len(quality) < 2 or not quality.between(0, 1).all():
        raise InvalidInputError("system_quality needs at least two values in [0, 1].")
    return quality.rename_axis("system")


def simulate_rse_pje(
    system_quality=(0.35, 0.45, 0.5, 0.55, 0.6, 0.7),
    *,
    squares: int = 2,
    output_sd: float = 0.1,
    rse_bias_sd: float = 0.1,
    rse_noise_sd: float = 0.15,
    pje_noise_sd: float = 0.15,
    pje_gain: float = 2.0,
    strength_max: float = 50.0,
    n_repeats: int = 2,
    random_seed=None,
) -> dict[str, pd.DataFrame]:
    """Simulate both experiments on the same systems and test items (see the module
    docstring). Returns ``rse`` (evaluator, test_item, system, score in [0, 100], repeat),
    ``pje`` (evaluator, test_item, system_a, system_b, strength, repeat) and ``quality``."""
    quality = _systems(system_quality)
    rng = np.random.default_rng(random_seed)
    names = quality.index.to_numpy()
    n_systems = len(names)
    pairs = list(combinations(range(n_systems), 2))
    n_items = max(n_systems, len(pairs)) * squares
    output = np.clip(quality.to_numpy()[:, None] + rng.normal(0, output_sd, (n_systems, n_items)), 0, 1)

    rse_rows = []
    for square in range(squares):
        bias = rng.normal(0, rse_bias_sd, n_systems)
        for e in range(n_systems):
            trials = [(square * n_systems + t, (e + t) % n_systems) for t in range(n_systems)]
            for k, (t, g) in enumerate(trials):
                for repeat in range(2 if k < n_repeats else 1):
                    value = np.clip(output[g, t] + bias[e] + rng.normal(0, rse_noise_sd), 0, 1)
                    rse_rows.append((f"rse_{square}_{e}", f"t{t:03d}", names[g], round(100 * value), repeat))
    pje_rows = []
    for square in range(squares):
        for e in range(len(pairs)):
            for t in range(len(pairs)):
                k = t
                a, b = pairs[(e + t) % len(pairs)]
                if rng.random() < 0.5:
                    a, b = b, a
                item = square * len(pairs) + t
                for repeat in range(2 if k < n_repeats else 1):
                    value = np.clip(pje_gain * (output[a, item] - output[b, item]) + rng.normal(0, pje_noise_sd), -1, 1)
                    pje_rows.append((f"pje_{square}_{e}", f"t{item:03d}", names[a], names[b], strength_max * value, repeat))
    return {
        "rse": pd.DataFrame(rse_rows, columns=["evaluator", "test_item", "system", "score", "repeat"]),
        "pje": pd.DataFrame(pje_rows, columns=["evaluator", "test_item", "system_a", "system_b", "strength", "repeat"]),
        "quality": quality.to_frame("quality"),
    }


def pje_system_scores(pje: pd.DataFrame) -> pd.DataFrame:
    """Each PJE trial as a score per system: +strength for system_a, -strength for system_b."""
    first = pje.assign(system=pje["system_a"], score=pje["strength"])
    second = pje.assign(system=pje["system_b"], score=-pje["strength"])
    return pd.concat([first, second], ignore_index=True)[["evaluator", "test_item", "system", "score", "repeat"]]


def _self_consistency(table: pd.DataFrame, keys: list[str], value: str) -> float:
    """Pearson r between first and repeated judgements of the same trials, pooled."""
    wide = table.pivot_table(index=keys, columns="repeat", values=value)
    wide = wide.dropna()
    if len(wide) < 3:
        raise InvalidInputError("self-consistency needs at least 3 repeated trials (column 'repeat' = 1).")
    return float(stats.pearsonr(wide[0], wide[1]).statistic)


def _significant_rse(rse: pd.DataFrame, alpha: float) -> int:
    groups = [g.to_numpy(float) for _, g in rse.groupby("system")["score"]]
    return int((np.triu(stats.tukey_hsd(*groups).pvalue, 1)[np.triu_indices(len(groups), 1)] < alpha).sum())


def _significant_pje(pje: pd.DataFrame, alpha: float) -> int:
    oriented = pje.copy()
    swap = oriented["system_a"] > oriented["system_b"]
    oriented.loc[swap, ["system_a", "system_b"]] = oriented.loc[swap, ["system_b", "system_a"]].to_numpy()
    oriented.loc[swap, "strength"] = -oriented.loc[swap, "strength"]
    groups = oriented.groupby(["system_a", "system_b"])["strength"]
    p_values = np.array([stats.wilcoxon(g.to_numpy(), zero_method="zsplit").pvalue for _, g in groups])
    return int((p_values * len(p_values) < alpha).sum())  # Bonferroni


def _significant_posterior(result, threshold: float) -> int:
    matrix = result.prob_above_matrix().to_numpy()
    upper = matrix[np.triu_indices(len(matrix), 1)]
    return int(((upper > threshold) | (upper < 1 - threshold)).sum())


def compare_rse_pje(
    rse: pd.DataFrame,
    pje: pd.DataFrame,
    *,
    strength_max: float = 50.0,
    alpha: float = 0.05,
    posterior_threshold: float = 0.95,
    fit: bool = True,
    random_seed=0,
    **fit_kwargs,
) -> pd.DataFrame:
    """Belz & Kow's comparisons, RSE vs PJE: eta^2 of System (one-way ANOVA), Kendall's W
    over evaluators' per-system means, self-consistency on repeated trials, and the number of
    system pairs found different: Tukey HSD (RSE) / Bonferroni-corrected Wilcoxon
    signed-rank tests of the strengths (PJE) at ``alpha``, and (``fit``) the posterior
    criterion P(s_g > s_h) > ``posterior_threshold`` of the beta-latent model with systems as
    items (RSE: scores / 100 as scalar judgements; PJE: strengths), evaluators as annotators."""
    from bayes_raters.pairwise.fit import fit_pairwise

    first_rse, first_pje = rse[rse["repeat"] == 0], pje[pje["repeat"] == 0]
    pje_scores = pje_system_scores(first_pje)
    rows = {
        "eta_squared (System)": (eta_squared(first_rse)["eta_squared"], eta_squared(pje_scores)["eta_squared"]),
        "Kendall's W": (kendalls_w(first_rse), kendalls_w(pje_scores)),
        "self-consistency (r)": (
            _self_consistency(rse, ["evaluator", "test_item", "system"], "score"),
            _self_consistency(pje, ["evaluator", "test_item", "system_a", "system_b"], "strength"),
        ),
        f"pairs different: frequentist (alpha {alpha})": (_significant_rse(first_rse, alpha), _significant_pje(first_pje, alpha)),
    }
    if fit:
        fit_kwargs = {"chains": 4, "cores": 2, **fit_kwargs}
        scalars = first_rse.rename(columns={"system": "item", "evaluator": "annotator"}).assign(value=first_rse["score"] / 100)
        strengths = first_pje.rename(columns={"system_a": "item_a", "system_b": "item_b", "evaluator": "annotator"})
        fit_rse = fit_pairwise(scalars=scalars, random_seed=random_seed, **fit_kwargs)
        fit_pje = fit_pairwise(strengths=strengths, strength_max=strength_max, random_seed=random_seed, **fit_kwargs)
        rows[f"pairs different: posterior P > {posterior_threshold}"] = (
            _significant_posterior(fit_rse, posterior_threshold),
            _significant_posterior(fit_pje, posterior_threshold),
        )
    return pd.DataFrame.from_dict(rows, orient="index", columns=["RSE", "PJE"]).rename_axis("measure")
