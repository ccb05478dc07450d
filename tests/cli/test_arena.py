"""``bayes-raters pairwise --method arena``: the system, style and category tables and the drop
check from a CSV of votes, JSON with the convergence record, and errors in the command line's terms."""

from __future__ import annotations

import json

import pytest

from bayes_raters.cli import EXIT_BAD_INPUT, main
from bayes_raters.pairwise import simulate_arena


@pytest.fixture(scope="module")
def votes_file(tmp_path_factory):
    votes = simulate_arena(12, 6000, n_style=1, n_categories=2, random_seed=4)["votes"]
    path = tmp_path_factory.mktemp("arena") / "votes.csv"
    votes.rename(columns={"model_a": "left", "model_b": "right", "outcome": "result", "style_1": "length"}).to_csv(path, index=False)
    return path


COLUMNS = ["--method", "arena", "--item-a-column", "left", "--item-b-column", "right", "--outcome-column", "result", "--quiet"]


def test_json_has_every_table_the_drop_check_and_convergence(votes_file, capsys):
    argv = ["pairwise", str(votes_file), *COLUMNS, "--style-column", "length", "--category-column", "category", "--drop-check", "--json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"method", "systems", "style", "categories", "drop_check", "convergence", "inference"}
    assert len(data["systems"]) == 12 and sum(row["p_rank_1"] for row in data["systems"]) == pytest.approx(1.0)
    assert data["style"][0]["style"] == "length" and len(data["categories"]) == 24
    assert data["convergence"]["converged"] and "pareto_k" in data["convergence"]
    assert data["drop_check"]["top"] == data["systems"][0]["model"]


def test_text_output_names_the_elo_scale(votes_file, capsys):
    assert main(["pairwise", str(votes_file), *COLUMNS, "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "Elo points" in out and len([line for line in out.splitlines() if line.startswith("model_")]) == 3


@pytest.mark.parametrize(("extra", "expected"), [
    (["--style-column", "width"], "--style-column NAME"),
    (["--annotator-column", "judge"], "--method bayes"),
])
def test_bad_options_are_named_with_the_flag_that_fixes_them(votes_file, capsys, extra, expected):
    assert main(["pairwise", str(votes_file), *COLUMNS, *extra]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bayes-raters: error:") and expected in err[0]


def test_a_missing_column_and_arena_flags_without_arena(votes_file, capsys):
    assert main(["pairwise", str(votes_file), "--method", "arena", "--quiet"]) == EXIT_BAD_INPUT
    assert "--item-a-column" in capsys.readouterr().err
    assert main(["pairwise", str(votes_file), "--style-column", "length", "--quiet"]) == EXIT_BAD_INPUT
    assert "need --method arena" in capsys.readouterr().err
