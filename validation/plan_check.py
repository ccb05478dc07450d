"""The planner's prediction against what happens (:mod:`bayes_raters.ctt.plan`): a known truth, a
pilot fitted once, then more double-scored responses simulated from the truth and the model
refitted; the mean realised interval width is compared with the planned one.

Truth: true scores N(3.5, 0.8); six raters with error SD 0.6 (continuous ratings, the normal
model's assumptions); system ``A`` = T + N(0, 0.45), system ``B`` = 0.3 + 0.9 T + N(0, 0.6).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

TRUTH = {"mu": 3.5, "sigma_T": 0.8, "sigma_e": 0.6, "raters": 6,
         "systems": {"A": (0.0, 1.0, 0.45), "B": (0.3, 0.9, 0.6)}}


def simulate_evaluation(n_single: int, n_double: int, seed: int, systems=("A", "B")) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Long ratings (``n_double`` responses rated twice, ``n_single`` once) and system scores
    of every response, from :data:`TRUTH`; response ids carry the seed, so sets combine."""
    rng = np.random.default_rng(seed)
    n = n_single + n_double
    true = rng.normal(TRUTH["mu"], TRUTH["sigma_T"], n)
    ids = np.array([f"s{seed}-{i}" for i in range(n)])
    rows = []
    for i in range(n):
        for rater in rng.choice(TRUTH["raters"], 2 if i < n_double else 1, replace=False):
            rows.append((ids[i], f"r{rater}", true[i] + rng.normal(0, TRUTH["sigma_e"])))
    ratings = pd.DataFrame(rows, columns=["response", "rater", "score"])
    scores = [pd.DataFrame({"response": ids, "system": name,
                            "score": TRUTH["systems"][name][0] + TRUTH["systems"][name][1] * true
                            + rng.normal(0, TRUTH["systems"][name][2], n)}) for name in systems]
    return ratings, pd.concat(scores, ignore_index=True)


def realised_width(task: tuple, pilot: tuple[pd.DataFrame, pd.DataFrame], ci_prob: float = 0.9, **fit_options) -> dict:
    """One refit: ``task = (extra, seed)``: ``extra`` double-scored responses simulated with
    ``seed`` added to the ``pilot`` tables; returns the PRMSE interval width per system."""
    from bayes_raters.ctt import fit_true_score

    extra, seed = task
    ratings, systems = simulate_evaluation(0, extra, seed, tuple(pd.unique(pilot[1]["system"])))
    result = fit_true_score(pd.concat([pilot[0], ratings]), pd.concat([pilot[1], systems]), random_seed=seed,
                                  progressbar=False, **fit_options)
    table = result.prmse_table(ci_prob)
    return {"extra_double": extra, "seed": seed, **(table["prmse_upper"] - table["prmse_lower"]).to_dict()}
