"""``bayes-raters agreement``: the table from a CSV (long or wide), JSON with the convergence
record, and errors in the command line's terms."""

from __future__ import annotations

import json

import pytest

from bayes_raters.agreement.simulate import simulate_agreement
from bayes_raters.cli import EXIT_BAD_INPUT, main


@pytest.fixture(scope="module")
def ratings_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("agreement") / "ratings.csv"
    simulate_agreement(80, 6, random_seed=2).rename(columns={"response": "essay"}).to_csv(path, index=False)
    return path


def test_json_has_every_coefficient_and_the_convergence_record(ratings_file, capsys):
    argv = ["agreement", str(ratings_file), "--response-column", "essay", "--level", "ordinal", "--bootstrap", "200", "--json", "--quiet"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    names = [row["coefficient"] for row in data["coefficients"]]
    assert names == ["alpha_ordinal", "fleiss_kappa", "ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k"]
    icc2 = data["coefficients"][3]
    assert icc2["bootstrap_lower"] < icc2["estimate"] < icc2["bootstrap_upper"] and icc2["posterior_lower"] is not None
    assert data["converged"] is True and len(data["convergence"]) == 2 and not data["complete"]


def test_wide_file_without_posterior(tmp_path, capsys):
    path = tmp_path / "wide.csv"
    path.write_text("id,h1,h2,h3\n1,3,3,4\n2,2,2,\n3,5,4,5\n4,1,2,1\n5,4,4,4\n")
    assert main(["agreement", str(path), "--response-column", "id", "--human", "h1", "--human", "h2", "--human", "h3",
                 "--no-posterior", "--bootstrap", "50", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "alpha_interval" in out and "ICC2" in out and "posterior" not in out and "5 responses" in out


def test_bad_input_names_the_flags(ratings_file, capsys):
    assert main(["agreement", str(ratings_file), "--quiet"]) == EXIT_BAD_INPUT
    assert "--response-column" in capsys.readouterr().err
    assert main(["agreement", str(ratings_file), "--response-column", "essay", "--categories", "1", "2", "--quiet"]) == EXIT_BAD_INPUT
    assert "--categories" in capsys.readouterr().err
