"""HANNA's crowd ratings of Coherence (``tests/data/hanna/``): within every generated-story source
the three ratings of a story correlate negatively, which independent rater errors cannot give.
The judges fit must say so (a BoundWarning naming the sources, flags in ``human_check``), not
quietly print intervals; and with the five judges' shared error factor the fit lets ChatGPT define
the true score (its own noise near zero, a Heywood case), which must be named too."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from bayes_raters.errors import BoundWarning
from bayes_raters.judges import fit_judges

HANNA = Path(__file__).resolve().parents[1] / "data" / "hanna"


def hanna_tables():
    """Human ratings, the five judges' parsed scores (-1 dropped) and the story sources."""
    judges = pd.read_csv(HANNA / "coherence_judges_p1.csv")
    return pd.read_csv(HANNA / "coherence_human.csv"), judges[judges["score"] >= 0], pd.read_csv(HANNA / "systems.csv")


@pytest.mark.slow  # a real-data fit (105 s warm, 231 s on a cold compile cache): make validate; tests/judges/test_fit.py flags simulated designs
@pytest.mark.filterwarnings("ignore::bayes_raters.errors.ConvergenceWarning")  # the check is the point (card: HANNA's mixing)
def test_negative_within_story_correlations_are_flagged():
    humans, judges, systems = hanna_tables()
    with pytest.warns(BoundWarning) as record:
        result = fit_judges(humans, judges, systems, draws=200, tune=300, random_seed=3, progressbar=False)
    messages = [str(w.message) for w in record if issubclass(w.category, BoundWarning)]
    assert any("agree less than independent rater errors allow" in m for m in messages)
    heywood = [m for m in messages if "Heywood" in m]
    assert len(heywood) == 1 and "ChatGPT_p1" in heywood[0] and "shared_error=False" in heywood[0]
    flags = result.judge_table()["own_error_near_zero"]
    assert list(flags.index[flags]) == ["ChatGPT_p1"]
    check = result.human_check()
    generated = check.drop(index=["all", "Human"])
    assert check.loc["all", "flagged"] and check.loc["all", "observed"] < -0.1
    assert generated["flagged"].sum() >= 8 and (generated["observed"] < 0).all()
    assert not check.loc["Human", "flagged"] and check.loc["Human", "observed"] > 0
