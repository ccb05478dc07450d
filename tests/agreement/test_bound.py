"""Coefficients whose data point below the bound 0 of the posterior ICCs
(:mod:`bayes_raters.agreement.bound`): the flag, the warning, the table column, the command line,
on HANNA's crowd ratings (negative within-story correlation) and on data that agree."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_raters.agreement import agreement_table
from bayes_raters.agreement.bound import below_bound, bound_message
from bayes_raters.agreement.simulate import simulate_agreement
from bayes_raters.cli import main
from bayes_raters.errors import BoundWarning


def _table(estimate, classical_upper, bootstrap_upper, posterior_mean):
    return pd.DataFrame(
        {"estimate": estimate, "classical_upper": classical_upper, "bootstrap_upper": bootstrap_upper, "posterior_mean": posterior_mean},
        index=["alpha_ordinal", "ICC1", "ICC2", "ICC3"],
    )


def test_flag_needs_a_posterior_and_an_upper_limit_below_zero():
    table = _table(
        estimate=[-0.05, -0.05, -0.01, 0.2],
        classical_upper=[np.nan, -0.02, 0.03, 0.3],
        bootstrap_upper=[-0.01, 0.01, -0.001, 0.3],
        posterior_mean=[np.nan, 0.003, 0.01, 0.2],
    )
    flags = below_bound(table)
    # alpha has no posterior (no bound imposed); ICC1 by its classical limit (preferred to the bootstrap's);
    # ICC2's classical limit is above 0 although its bootstrap limit is not; ICC3 agrees
    assert flags.tolist() == [False, True, False, False]
    table["below_bound"] = flags
    message = bound_message(table)
    assert "ICC1 -0.050 (upper limit -0.020; posterior 0.003)" in message and "alpha_ordinal -0.050 below 0 too" in message
    assert "ICC2" not in message.split(". The")[0].split("too")[0].replace("ICC1", "")


def test_nothing_flagged_gives_no_message():
    table = _table([0.3] * 4, [0.4] * 4, [0.4] * 4, [np.nan, 0.3, 0.3, 0.3])
    table["below_bound"] = below_bound(table)
    assert not table["below_bound"].any() and bound_message(table) is None


@pytest.fixture(scope="module")
def hanna(shared_data):
    """HANNA's Coherence crowd ratings: 1,056 stories x 3 annotation slots (tests/data/README.md)."""
    return pd.read_csv(shared_data / "agreement" / "hanna_coherence.csv")


def test_hanna_coherence_is_flagged_below_the_bound(hanna):
    with pytest.warns(BoundWarning, match="correlate negatively") as caught:
        table = agreement_table(hanna, level="ordinal", n_boot=200, draws=500, random_seed=0, progressbar=False)
    icc = table.loc[table.index.str.startswith("ICC")]
    assert icc["below_bound"].all() and not table.loc[["alpha_ordinal", "fleiss_kappa"], "below_bound"].any()
    assert table.loc["ICC1", "estimate"] == pytest.approx(-0.055, abs=0.001)  # psych-style one-way estimate
    assert table.loc["ICC1", "classical_upper"] < 0 and table.loc["ICC1", "posterior_upper"] < 0.03
    assert "ICC1 -0.055" in str(caught[0].message) and table.attrs["below_bound"] == str(caught[0].message)


def test_agreeing_ratings_are_not_flagged():
    ratings = simulate_agreement(150, 8, random_seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BoundWarning)
        table = agreement_table(ratings, level="ordinal", n_boot=100, random_seed=1, progressbar=False)
    assert not table["below_bound"].any() and table.attrs["below_bound"] is None
    assert (table.loc[table.index.str.startswith("ICC"), "estimate"] > 0.3).all()


def test_command_line_says_it_in_json_and_on_stderr(shared_data, capsys):
    path = shared_data / "agreement" / "hanna_coherence.csv"
    argv = ["agreement", str(path), "--level", "ordinal", "--bootstrap", "100", "--draws", "500", "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert "below the bound" in data["below_bound"] and "below the bound" in captured.err
    assert [row["below_bound"] for row in data["coefficients"] if row["coefficient"].startswith("ICC")] == [True] * 6
