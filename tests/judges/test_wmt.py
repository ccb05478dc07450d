"""WMT23 English-German MQM with chrF as the judge (``tests/data/wmt23/``): chrF against the
reference, scored on the reference itself, is nearly constant (about 100), which one calibration
line per judge cannot describe; the data layer must name it."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest

from bayes_raters.errors import InputWarning
from bayes_raters.judges import judges_data

WMT = Path(__file__).resolve().parents[1] / "data" / "wmt23"


def wmt_tables():
    return pd.read_csv(WMT / "mqm_human.csv"), pd.read_csv(WMT / "chrf_judge.csv"), pd.read_csv(WMT / "systems.csv")


def test_the_shipped_set_has_its_documented_shape():
    humans, judges, systems = wmt_tables()
    assert len(humans) == 3120 and len(judges) == len(systems) == 1040 and systems["system"].nunique() == 10
    assert (humans.groupby("response").size() == 3).all() and humans["score"].max() == 0


def test_a_metric_scoring_the_reference_itself_is_named():
    humans, judges, systems = wmt_tables()
    with pytest.warns(InputWarning, match="chrF on refA") as record:
        judges_data(humans, judges, systems)
    assert len([w for w in record if issubclass(w.category, InputWarning)]) == 1
    kept = systems[systems["system"] != "refA"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        data = judges_data(humans[humans["response"].isin(kept["response"])], judges[judges["response"].isin(kept["response"])], kept)
    assert len(data.system_names) == 9
