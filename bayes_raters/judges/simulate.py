r"""Simulated judge designs whose truth is not drawn from the model's priors: skewed true scores
(a standardised gamma with shape 4 around each system's mean), human raters with a set
inter-rater correlation and uniform severities, judges with a set correlation with the true
score, optional biases for chosen systems and errors shared between judges."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayes_raters.errors import InvalidInputError
from bayes_raters.judges.ordinal import to_category


def _skewed(rng: np.random.Generator, size: int, shape: float = 4.0) -> np.ndarray:
    return (rng.gamma(shape, 1.0, size) - shape) / np.sqrt(shape)


def simulate_judges(n_systems: int = 4, n_responses: int = 100, *, judge_quality=(0.8, 0.5, 0.3), judge_bias: dict | None = None,
                    shared_error: float = 0.0, human_share: float = 0.2, ratings_per_response: int = 2, n_raters: int = 6,
                    human_correlation: float = 0.5, spread: float = 0.5, score_range: tuple[int, int] | None = None,
                    random_seed=None) -> dict:
    """A design of ``n_systems`` x ``n_responses`` responses (per system), each scored by every
    judge, a share ``human_share`` of each system's responses rated by ``ratings_per_response``
    of ``n_raters`` human raters.

    True scores: :math:`T = 3 + m_s + u`, :math:`m_s` evenly spaced over ``[-spread, spread]``,
    :math:`u` a standardised gamma (shape 4: skewed, SD 1). A rating is :math:`T` plus the
    rater's severity (uniform on [-0.3, 0.3]) plus normal error whose variance makes two ratings
    of a response correlate ``human_correlation`` within a system. Judge :math:`j` scores
    :math:`2 + 0.7\\,T` plus its bias (``judge_bias``: ``{(judge index, system index): bias in
    true-score SDs}``) plus error that makes its correlation with :math:`T` within a system
    ``judge_quality[j]``; a share ``shared_error`` of each judge's error variance is common to all
    judges. With ``score_range=(low, high)`` a rating is reported as the integer nearest to it on
    that scale (the ends absorbing what lies beyond): ordinal ratings.

    Returns
    -------
    dict
        ``human_ratings`` (response, rater, score), ``judge_scores`` (response, judge, score),
        ``systems`` (response, system) and ``truth``: the systems' true means ``system_mean``
        (population, :math:`3 + m_s`), ``finite_mean`` (the mean of the drawn :math:`T`) and
        ``panel_mean`` (:math:`3 + m_s` plus the raters' mean severity: what the mean rating of
        this panel of raters estimates, and what the fit's ``system_mean`` and PPI estimate).
    """
    if not 0 < human_share <= 1 or not 0 < human_correlation < 1 or not 0 <= shared_error < 1:
        raise InvalidInputError("human_share must lie in (0, 1], human_correlation in (0, 1), shared_error in [0, 1).")
    if any(not 0 < q < 1 for q in judge_quality) or ratings_per_response > n_raters:
        raise InvalidInputError("judge_quality must lie in (0, 1); ratings_per_response cannot exceed n_raters.")
    rng = np.random.default_rng(random_seed)
    system = np.repeat(np.arange(n_systems), n_responses)
    means = np.linspace(-spread, spread, n_systems) if n_systems > 1 else np.zeros(1)
    true = 3.0 + means[system] + _skewed(rng, len(system))
    names = [f"r{i}" for i in range(len(system))]
    severity = rng.uniform(-0.3, 0.3, n_raters)
    noise_h = np.sqrt((1 - human_correlation) / human_correlation)
    humans = []
    for s in range(n_systems):
        members = np.flatnonzero(system == s)
        rated = rng.choice(members, size=max(2, round(human_share * len(members))), replace=False)
        for r in rated:
            for h in rng.choice(n_raters, size=ratings_per_response, replace=False):
                humans.append((names[r], f"rater{h}", true[r] + severity[h] + noise_h * rng.standard_normal()))
    common = rng.standard_normal(len(system))
    scores = []
    for j, quality in enumerate(judge_quality):
        noise = 0.7 * np.sqrt(1 / quality**2 - 1)
        error = noise * (np.sqrt(shared_error) * common + np.sqrt(1 - shared_error) * rng.standard_normal(len(system)))
        bias = np.array([(judge_bias or {}).get((j, s), 0.0) for s in system])
        value = 2.0 + 0.7 * (true + bias) + error
        scores += [(names[r], f"judge{j}", value[r]) for r in range(len(system))]
    systems = pd.DataFrame({"response": names, "system": [f"system{s}" for s in system]})
    truth = pd.DataFrame({"system_mean": 3.0 + means, "finite_mean": [true[system == s].mean() for s in range(n_systems)],
                          "panel_mean": 3.0 + means + severity.mean()},
                         index=pd.Index([f"system{s}" for s in range(n_systems)], name="system"))
    humans = pd.DataFrame(humans, columns=["response", "rater", "score"])
    if score_range is not None:
        humans["score"] = to_category(humans["score"], score_range).astype(int)
    return {"human_ratings": humans,
            "judge_scores": pd.DataFrame(scores, columns=["response", "judge", "score"]), "systems": systems, "truth": truth}
