"""``bayes-raters leaderboard``: system and item tables from a CSV of answers, JSON with the
convergence record, CSV output of both tables, and errors in the command line's own terms."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from bayes_raters.cli import EXIT_BAD_INPUT, main
from bayes_raters.leaderboard import simulate_leaderboard


@pytest.fixture(scope="module")
def answers_file(tmp_path_factory):
    answers, _ = simulate_leaderboard(25, 80, flat_share=0.0, random_seed=6)
    answers = answers[answers.groupby("item")["correct"].transform("std") > 0]
    path = tmp_path_factory.mktemp("leaderboard") / "answers.csv"
    answers.rename(columns={"respondent": "model", "item": "question"}).to_csv(path, index=False)
    return path


FAST = ["--respondent-column", "model", "--item-column", "question", "--draws", "150", "--tune", "100", "--quiet"]


def test_json_has_both_tables_and_the_convergence_record(answers_file, capsys):
    assert main(["leaderboard", str(answers_file), *FAST, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"systems", "items", "convergence", "inference"}
    assert len(data["systems"]) == 25 and {"system", "theta_mean", "rank_lower", "rank_upper", "p_rank_1"} <= set(data["systems"][0])
    assert sum(row["p_rank_1"] for row in data["systems"]) == pytest.approx(1.0)
    assert {"item", "a_mean", "b_mean", "flag"} <= set(data["items"][0])
    assert data["convergence"]["draws"] == 150 and data["inference"]["draws_rule"] == "150 draws per chain"


def test_output_csv_writes_the_system_and_item_tables(answers_file, tmp_path, capsys):
    target = tmp_path / "board.csv"
    assert main(["leaderboard", str(answers_file), *FAST, "--model", "1pl", "--output", str(target)]) == 0
    written = sorted(p.name for p in tmp_path.glob("board*.csv"))
    assert len(written) == 2
    tables = [pd.read_csv(tmp_path / name) for name in written]
    assert sorted(len(t) for t in tables) == [25, 80]


def test_a_missing_column_is_named_with_the_flag_that_fixes_it(answers_file, capsys):
    assert main(["leaderboard", str(answers_file), "--respondent-column", "model", "--quiet"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bayes-raters: error:") and "--item-column" in err[0]


def test_audit_adds_the_items_probabilities_sorted_by_p_miskeyed(answers_file, tmp_path, capsys):
    answers = pd.read_csv(answers_file)
    flipped = answers["question"] == answers["question"].iloc[0]
    answers.loc[flipped, "correct"] = 1 - answers.loc[flipped, "correct"]
    path = tmp_path / "planted.csv"
    answers.to_csv(path, index=False)
    assert main(["leaderboard", str(path), *FAST, "--audit", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    audit = data["audit"]
    assert len(audit) == 80 and {"item", "p_keyed", "p_miskeyed", "p_random", "saturation", "flag"} <= set(audit[0])
    assert [row["p_miskeyed"] for row in audit] == sorted((row["p_miskeyed"] for row in audit), reverse=True)
    assert audit[0]["item"] == answers["question"].iloc[0] and audit[0]["flag"] == "miskeyed"
    assert sum(data["audit_shares"].values()) == pytest.approx(1.0)


def test_item_types_make_a_mixed_leaderboard_and_its_errors_name_the_flags(tmp_path, capsys):
    from bayes_raters.leaderboard import simulate_mixed_leaderboard

    answers, truth = simulate_mixed_leaderboard(20, 6, 6, 6, grades=5, n_bounded=4, random_seed=3)
    path, types = tmp_path / "mixed.csv", tmp_path / "types.csv"
    answers.to_csv(path, index=False)
    guessing = truth["item_type"][truth["item_type"] == "3pl"]
    pd.DataFrame({"item": guessing.index, "type": guessing.to_numpy()}).to_csv(types, index=False)
    fast = ["--draws", "60", "--tune", "40", "--quiet"]
    assert main(["leaderboard", str(path), "--item-types", str(types), "--options", "5", *fast, "--json"]) == 0
    items = json.loads(capsys.readouterr().out)["items"]
    assert {row["item_type"] for row in items} == {"2pl", "3pl", "graded", "bounded"}
    assert main(["leaderboard", str(path), "--item-types", str(types), "--model", "1pl", *fast]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "--model 2pl" in err and "model=" not in err


def test_a_dask_scheduler_or_jax_gives_the_tables_of_the_default_backend(answers_file, capsys):
    """``--scheduler``: the same draws, so the same tables to the last digit; ``--backend jax``: the same to rounding."""
    distributed = pytest.importorskip("distributed")
    pytest.importorskip("jax")
    assert main(["leaderboard", str(answers_file), *FAST, "--json"]) == 0
    here = json.loads(capsys.readouterr().out)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        assert main(["leaderboard", str(answers_file), *FAST, "--json", "--scheduler", cluster.scheduler_address]) == 0
    there = json.loads(capsys.readouterr().out)
    assert there["systems"] == here["systems"] and there["items"] == here["items"]
    assert "Dask workers" in there["inference"]["sampler"]
    assert main(["leaderboard", str(answers_file), *FAST, "--json", "--backend", "jax"]) == 0
    on_jax = json.loads(capsys.readouterr().out)
    assert pd.DataFrame(on_jax["systems"])["theta_mean"].to_numpy() == pytest.approx(pd.DataFrame(here["systems"])["theta_mean"].to_numpy(), abs=1e-6)


def test_a_scheduler_that_does_not_answer_is_named(answers_file, capsys):
    pytest.importorskip("distributed")
    assert main(["leaderboard", str(answers_file), *FAST, "--scheduler", "tcp://127.0.0.1:9"]) == EXIT_BAD_INPUT
    assert "no Dask scheduler answered" in capsys.readouterr().err
