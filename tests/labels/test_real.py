"""The labels models on real data beside crowd-kit 1.4.2 (``tests/data/labels/crowdkit_real.json``,
the calls in ``tests/data/README.md``) and the majority vote; ``validation/labels_real.py`` prints the
whole table (``models/labels.md``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from validation.labels_real import evaluate

REFERENCE = json.loads((Path(__file__).resolve().parents[1] / "data" / "labels" / "crowdkit_real.json").read_text())


def test_caries_prevalence_equals_crowdkits_dawid_skene():
    """3,859 teeth x 5 dentists: the Laplace draws (Pareto k under its threshold); the posterior
    mean prevalence of a caries call within 0.01 of crowd-kit's EM estimate (0.199)."""
    row = evaluate("caries", "dawid-skene")
    assert row["path"] == "laplace" and row["converged"]
    assert row["prevalence"]["2"] == pytest.approx(REFERENCE["caries"]["dawid_skene"]["prevalence"]["2"], abs=0.01)


@pytest.mark.slow
def test_bluebirds_dawid_skene_and_mace_beat_the_majority_vote():
    """Bluebirds' gold: Dawid-Skene as crowd-kit's (0.889), both above the majority vote (0.759);
    our MACE (learned prevalence, NUTS) 0.880 where crowd-kit's MACE (uniform class prior, VB) has 0.750."""
    for model, floor in (("dawid-skene", 0.88), ("mace", 0.85)):
        row = evaluate("bluebirds", model)
        assert row["converged"] and row["accuracy"] >= floor > row["majority_vote"], row
    assert REFERENCE["bluebirds"]["dawid_skene"]["accuracy"] == pytest.approx(0.889, abs=1e-3)


@pytest.mark.slow
def test_dices_pooled_crowd_switching_is_named():
    """DICES-350 read as one pooled crowd annotator with three labels: the full Dawid-Skene model is
    a mixture of three multinomials whose classes the chains do not agree on; the fit must say so
    (not converged, a warning), not hand out a confident answer. MACE and one-coin converge."""
    row = evaluate("dices350", "dawid-skene")
    assert not row["converged"] and row["warnings"] >= 1
    mace = evaluate("dices350", "mace")
    assert mace["converged"] and mace["accuracy"] > mace["majority_vote"] and np.isfinite(mace["ece"])


@pytest.mark.slow
def test_dices_with_unsure_as_a_label_converges_and_beats_the_majority_vote():
    """DICES-350 with the gold's classes (No, Yes) and "Unsure" a label that is not a class: the full
    Dawid-Skene model that did not converge with three classes converges (measured: 0.683 against
    the majority vote's 0.651 and crowd-kit's Dawid-Skene 0.577 with three classes)."""
    row = evaluate("dices350_unsure", "dawid-skene")
    assert row["converged"] and row["warnings"] == 0, row
    assert row["accuracy"] > row["majority_vote"] + 0.01 > REFERENCE["dices350"]["dawid_skene"]["accuracy"], row
