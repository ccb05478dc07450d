"""Simulated essay-scoring designs for the many-facet rater model
(:mod:`bayes_raters.facets.model`) and its recovery check.

Design: each response answers one prompt (round robin) and is scored by ``raters_per_response``
distinct raters drawn at random; scores 1..K. Truth: theta ~ N(0, 1); severities
N(0, ``severity_sd``) centred; consistencies a_r = exp(N(0.2, 0.2)), with planted erratic raters
at a = ``erratic_a``; prompt difficulties evenly spaced on [-0.4, 0.4]; thresholds evenly spaced
on [-2.5, 2.5]. A system scores each response's true score (the fit's definition: expected
score over the raters, :func:`bayes_raters.facets.draws.true_scores_at`) plus
N(0, ``system_sd``) noise.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayes_raters.errors import InvalidInputError
from bayes_raters.facets.draws import rating_logits, true_scores_at
from bayes_raters.facets.model import FacetLayout
from bayes_raters.results import draw_categories


def design_layout(unit: np.ndarray, unit_prompt: np.ndarray, rater: np.ndarray, n_raters: int, n_prompts: int,
                  n_categories: int, prefixes: tuple[str, str, str] = ("e", "p", "r")) -> FacetLayout:
    """The layout of a simulated rating design before its scores are drawn: ratings of units
    ``unit`` by raters ``rater``, each unit on its one prompt ``unit_prompt[i]``, scores 1 ..
    ``n_categories``, categories 0 until drawn; ids are the ``prefixes`` with numbers (``e0``,
    ``p0``, ``r0`` ...). What the simulators fill in (here and
    :mod:`validation.sbc_mirt_facets`)."""
    def ids(prefix: str, n: int) -> np.ndarray:
        return np.array([f"{prefix}{i}" for i in range(n)])

    return FacetLayout(
        ids(prefixes[0], len(unit_prompt)), ids(prefixes[1], n_prompts), ids(prefixes[2], n_raters),
        np.arange(1.0, n_categories + 1), unit, unit_prompt[unit], rater, np.zeros(len(unit), int),
        np.eye(n_prompts)[unit_prompt],
    )


def simulate_facet_ratings(
    n_responses: int = 600, n_raters: int = 10, n_prompts: int = 3, n_categories: int = 6, *,
    raters_per_response: int = 2, severity_sd: float = 0.5, erratic=(), erratic_a: float = 0.25,
    system_sd: float = 0.5, random_seed=None,
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Return ``(ratings, system_scores, truth)``: long ratings ``response, prompt, rater,
    score``, system scores ``response, system, score`` (one system, ``engine``) and a dict of
    the true ``theta``, ``severity``, ``a``, ``difficulty``, ``thresholds``, ``true_score``
    (arrays in the order of the ids ``r0..``, ``p0..``, ``e0..``) and ``erratic`` (rater ids).

    Parameters
    ----------
    n_responses, n_raters, n_prompts, n_categories : int
        Responses, raters, prompts and score categories (scores 1..n_categories).
    raters_per_response : int
        Raters who score each response.
    severity_sd : float
        SD of the raters' severities.
    erratic : sequence of int
        Indices of erratic raters (low consistency).
    erratic_a : float
        Consistency of the erratic raters.
    system_sd : float
        SD of the system's error around the true score.
    random_seed : int, numpy.random.Generator or None
        Seed of every draw.

    Returns
    -------
    tuple of (pandas.DataFrame, pandas.DataFrame, dict)
        Ratings, system scores and the true parameters.

    Examples
    --------
    >>> from bayes_raters.facets import simulate_facet_ratings
    >>> ratings, scores, truth = simulate_facet_ratings(100, 6, 2, 5, random_seed=0)
    >>> ratings.shape, scores.shape, len(truth["severity"])
    ((200, 4), (100, 3), 6)
    """
    if not 2 <= raters_per_response <= n_raters or n_categories < 2 or n_responses < 10:
        raise InvalidInputError("need 2 <= raters_per_response <= n_raters, n_categories >= 2 and n_responses >= 10.")
    rng = np.random.default_rng(random_seed)
    theta = rng.normal(0.0, 1.0, n_responses)
    severity = rng.normal(0.0, severity_sd, n_raters)
    severity -= severity.mean()
    a = np.exp(rng.normal(0.2, 0.2, n_raters))
    a[list(erratic)] = erratic_a
    difficulty = np.linspace(-0.4, 0.4, n_prompts) if n_prompts > 1 else np.zeros(1)
    thresholds = np.linspace(-2.5, 2.5, n_categories - 1)
    prompt = np.arange(n_responses) % n_prompts
    raters = np.stack([rng.choice(n_raters, raters_per_response, replace=False) for _ in range(n_responses)])
    unit = np.repeat(np.arange(n_responses), raters_per_response)
    layout = design_layout(unit, prompt, raters.ravel(), n_raters, n_prompts, n_categories)
    location = severity[:, None] + difficulty[None, :]
    p = np.exp(rating_logits(a, location, thresholds, theta, layout))
    category = draw_categories(p, rng)
    ratings = pd.DataFrame({"response": layout.responses[unit], "prompt": layout.prompts[layout.prompt],
                            "rater": layout.raters[layout.rater], "score": category + 1})
    true = true_scores_at(a, location, thresholds, theta, layout)
    systems = pd.DataFrame({"response": layout.responses, "system": "engine",
                            "score": true + rng.normal(0.0, system_sd, n_responses)})
    truth = {"theta": theta, "severity": severity, "a": a, "difficulty": difficulty, "thresholds": thresholds,
             "true_score": true, "erratic": [f"r{r}" for r in erratic]}
    return ratings, systems, truth




def simulate_course_ratings(
    n_lecturers: int = 40, n_students: int = 200, *, most: int = 200, a: float = 1.6,
    thresholds=(-1.5, -0.25, -0.15, 1.2), random_seed=None,
) -> tuple[pd.DataFrame, dict]:
    """Course-evaluation ratings shaped like lme4's InstEval (``tests/data/insteval/``): one
    prompt, lecturers (the responses) rated very unequally often, students (the raters) each
    rating a few of them, scores 1..len(thresholds) + 1, drawn from the many-facet Rasch model
    with parameters NOT from its priors: lecturer abilities skewed (a standardised Gamma(2),
    skewness 1.4), student severities heavy-tailed (0.3 x Student t with 3 df, centred), close
    thresholds (default gaps 0.1 beside 1.25 and 1.35) and one common ``a``. Lecturer ``i``
    gets about ``most`` x 0.93^i ratings (at least 2) from distinct random students. Returns
    ``(ratings, truth)`` with ``theta`` (lecturers ``l0..``, ability units), ``severity``
    (students ``s0..``), ``a`` and ``thresholds``."""
    rng = np.random.default_rng(random_seed)
    theta = (rng.gamma(2.0, 1.0, n_lecturers) - 2.0) / np.sqrt(2.0)
    severity = 0.3 * rng.standard_t(3, n_students)
    severity -= severity.mean()
    counts = np.maximum(2, np.round(most * 0.93 ** np.arange(n_lecturers)).astype(int)).clip(max=n_students)
    unit = np.repeat(np.arange(n_lecturers), counts)
    rater = np.concatenate([rng.choice(n_students, c, replace=False) for c in counts])
    tau = np.asarray(thresholds, float)
    layout = design_layout(unit, np.zeros(n_lecturers, int), rater, n_students, 1, len(tau) + 1, prefixes=("l", "p", "s"))
    common = np.full(n_students, a)
    category = draw_categories(np.exp(rating_logits(common, severity[:, None], tau, theta, layout)), rng)
    ratings = pd.DataFrame({"response": layout.responses[unit], "prompt": "p0", "rater": layout.raters[rater],
                            "score": category + 1})
    return ratings, {"theta": theta, "severity": severity, "a": a, "thresholds": tau}
