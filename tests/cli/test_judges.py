"""``bayes-raters judges``: the tables as JSON with the convergence record, renamed columns, and
bad input named by its file."""

from __future__ import annotations

import json

import pytest

from bayes_raters.cli import EXIT_BAD_INPUT, main
from bayes_raters.judges import simulate_judges


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    sim = simulate_judges(n_systems=3, n_responses=40, judge_quality=(0.8, 0.5), score_range=(1, 5), random_seed=7)
    folder = tmp_path_factory.mktemp("judges")
    sim["human_ratings"].rename(columns={"rater": "annotator_id", "score": "rating"}).to_csv(folder / "human.csv", index=False)
    sim["judge_scores"].rename(columns={"judge": "llm", "score": "rating"}).to_csv(folder / "judges.csv", index=False)
    sim["systems"].to_csv(folder / "systems.csv", index=False)
    sim["systems"].iloc[3:].to_csv(folder / "systems_short.csv", index=False)
    return folder


COLUMNS = ["--rater-column", "annotator_id", "--judge-column", "llm", "--score-column", "rating"]
FAST = ["--draws", "200", "--tune", "300", "--quiet"]


@pytest.mark.filterwarnings("ignore::bayes_raters.errors.ConvergenceWarning")  # 200 draws: the tables' shape is tested
def test_json_has_every_table_and_the_convergence_record(files, capsys):
    """Ordinal human ratings (1-5), the option the other tests of the family leave to Python."""
    args = ["judges", str(files / "human.csv"), str(files / "judges.csv"), "--systems", str(files / "systems.csv"), *COLUMNS, *FAST, "--json",
            "--plan", "20", "40", "--plan-raters", "3", "--observation", "ordinal", "--score-range", "1", "5"]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert all(row["worth_mean"] > 0 for row in data["judges"])
    assert set(data) == {"systems", "judges", "differences", "baselines", "human_check", "plan", "convergence", "inference"}
    assert len(data["plan"]) == 3 * 3 and {row["extra_ratings"] for row in data["plan"]} == {0, 60, 120}
    assert len(data["systems"]) == 3 and sum(row["p_best"] for row in data["systems"]) == pytest.approx(1.0)
    assert {row["judge"] for row in data["judges"]} == {"judge0", "judge1"}
    assert {row["method"] for row in data["baselines"]} == {"humans", "judges_naive", "ppi", "ppi++", "bayes_raters"}
    assert len(data["differences"]) == 3 and data["convergence"]["draws"] == 200


def test_a_response_without_a_system_names_the_files(files, capsys):
    args = ["judges", str(files / "human.csv"), str(files / "judges.csv"), "--systems", str(files / "systems_short.csv"), *COLUMNS, *FAST]
    assert main(args) == EXIT_BAD_INPUT
    message = capsys.readouterr().err
    assert "systems_short.csv" in message and "no system" in message
    assert "human.csv" in message or "judges.csv" in message


def test_a_wrong_column_gets_the_flag_in_the_advice(files, capsys):
    args = ["judges", str(files / "human.csv"), str(files / "judges.csv"), "--systems", str(files / "systems.csv"), *FAST]
    assert main(args) == EXIT_BAD_INPUT
    assert "--rater-column" in capsys.readouterr().err


def test_ordinal_ratings_without_a_scale_get_the_flag_in_the_advice(files, capsys):
    args = ["judges", str(files / "human.csv"), str(files / "judges.csv"), "--systems", str(files / "systems.csv"), *COLUMNS, *FAST,
            "--observation", "ordinal"]
    assert main(args) == EXIT_BAD_INPUT
    assert "--score-range LOW HIGH" in capsys.readouterr().err
