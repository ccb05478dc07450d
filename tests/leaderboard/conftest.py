"""Item banks for the adaptive-testing and item-selection tests: a synthetic bank with known item
parameters (no fit: the fast tests), and a bank fitted to simulated systems with held-out
systems' full answers beside it (the slow checks, computed once per run)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import special

from bayes_raters.errors import SmallSampleWarning
from bayes_raters.leaderboard import ItemBank, fit_leaderboard, simulate_leaderboard


def synthetic_bank(n_items: int, *, n_draws: int = 50, spread: float = 0.05, n_systems: int = 40, random_seed: int = 0):
    """A bank whose item draws scatter by ``spread`` around known parameters (slopes LogNormal(0,
    0.4), difficulties a two-cluster mixture), its bank systems' abilities, and the parameters."""
    rng = np.random.default_rng(random_seed)
    a = rng.lognormal(0.0, 0.4, n_items)
    b = np.where(rng.random(n_items) < 0.3, rng.normal(1.5, 0.5, n_items), rng.normal(-0.5, 0.8, n_items))
    theta = rng.normal(0.0, 1.0, n_systems)
    items = pd.Index([f"item{j:04d}" for j in range(n_items)], name="item")
    systems = pd.Index([f"sys{s:03d}" for s in range(n_systems)], name="system")
    bank = ItemBank(items, a * np.exp(spread * rng.standard_normal((n_draws, n_items))), b + spread * rng.standard_normal((n_draws, n_items)),
                    systems, theta + spread * rng.standard_normal((n_draws, n_systems)))
    return bank, a, b


def answers_of(theta: float, a: np.ndarray, b: np.ndarray, items: pd.Index, rng: np.random.Generator) -> pd.Series:
    """One system's 2PL answers to every item."""
    return pd.Series((rng.random(a.size) < special.expit(a * (theta - b))).astype(int), index=items)


@pytest.fixture(scope="session")
def held_out_bank(computed_once):
    """A 2PL bank fitted to 80 simulated systems x 600 items (defaults) and the full answers of 30
    more systems from the same leaderboard, held out of the fit."""

    def compute():
        answers, _ = simulate_leaderboard(110, 600, random_seed=5)
        held = sorted(answers["respondent"].unique())[80:]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SmallSampleWarning)  # one item every bank system got right
            result = fit_leaderboard(answers[~answers["respondent"].isin(held)], random_seed=1, progressbar=False)
        return result, answers[answers["respondent"].isin(held)].reset_index(drop=True)

    return computed_once("leaderboard_held_out_bank", compute)
