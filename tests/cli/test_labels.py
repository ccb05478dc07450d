"""``bayes-raters labels``: the tables as JSON with the convergence record, renamed columns, gold
classes, and bad input named by its file."""

from __future__ import annotations

import json

import pytest

from bayes_raters.cli import EXIT_BAD_INPUT, main
from bayes_raters.labels import simulate_labels


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    sim = simulate_labels(n_items=120, n_annotators=5, n_classes=3, random_seed=9)
    folder = tmp_path_factory.mktemp("labels")
    sim["labels"].rename(columns={"annotator": "worker", "label": "answer"}).to_csv(folder / "labels.csv", index=False)
    sim["classes"].iloc[:10].rename("answer").reset_index().to_csv(folder / "gold.csv", index=False)
    sim["classes"].iloc[:2].rename("answer").reset_index().assign(item="ghost").to_csv(folder / "gold_unknown.csv", index=False)
    return folder


COLUMNS = ["--annotator-column", "worker", "--label-column", "answer"]
FAST = ["--draws", "300", "--tune", "300", "--quiet", "--inference", "nuts"]


@pytest.mark.filterwarnings("ignore::bayes_raters.errors.ConvergenceWarning")  # 300 draws: the tables' shape is tested
def test_json_has_every_table_gold_and_the_convergence_record(files, capsys):
    args = ["labels", str(files / "labels.csv"), "--gold", str(files / "gold.csv"), *COLUMNS, *FAST, "--json", "--confusion", "--next", "5"]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"items", "annotators", "prevalence", "confusion", "next", "convergence", "inference"}
    assert len(data["next"]) == 5 and all(row["information"] >= 0 for row in data["next"])
    assert len(data["items"]) == 120 and len(data["annotators"]) == 5 and len(data["confusion"]) == 5 * 3 * 3
    gold = [row for row in data["items"] if row["gold"] is not None]
    assert len(gold) == 10 and all(row["map_class"] == row["gold"] and row["p_map"] == pytest.approx(1.0) for row in gold)
    assert sum(row["mean"] for row in data["prevalence"]) == pytest.approx(1.0)
    assert data["convergence"]["draws"] == 300 and data["inference"]["path"] == "nuts"


def test_a_gold_item_without_labels_names_the_file(files, capsys):
    args = ["labels", str(files / "labels.csv"), "--gold", str(files / "gold_unknown.csv"), *COLUMNS, *FAST]
    assert main(args) == EXIT_BAD_INPUT
    message = capsys.readouterr().err
    assert "gold_unknown.csv" in message and "ghost" in message


def test_a_wrong_column_gets_the_flag_in_the_advice(files, capsys):
    assert main(["labels", str(files / "labels.csv"), *FAST]) == EXIT_BAD_INPUT
    assert "--annotator-column" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore::bayes_raters.errors.ConvergenceWarning")
def test_hierarchical_with_a_kinds_file(files, capsys):
    import pandas as pd

    pd.DataFrame({"worker": [f"annotator{a}" for a in range(5)], "kind": ["human"] * 3 + ["llm"] * 2}).to_csv(files / "kinds.csv", index=False)
    args = ["labels", str(files / "labels.csv"), "--model", "hierarchical", "--kinds", str(files / "kinds.csv"), *COLUMNS, *FAST, "--json"]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert {row["kind"] for row in data["annotators"]} == {"human", "llm"} and len(data["kinds"]) == 2 * 3 * 3


@pytest.mark.filterwarnings("ignore::bayes_raters.errors.ConvergenceWarning")  # 300 draws: the tables' shape is tested
def test_correlated_with_a_kinds_file_that_leaves_the_humans_out(files, capsys):
    import pandas as pd

    pd.DataFrame({"worker": ["annotator3", "annotator4"], "kind": ["llm", "llm"]}).to_csv(files / "llm_kinds.csv", index=False)
    args = ["labels", str(files / "labels.csv"), "--model", "correlated", "--kinds", str(files / "llm_kinds.csv"), *COLUMNS, *FAST, "--json"]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert {row["kind"] for row in data["annotators"]} == {"llm", "alone:annotator0", "alone:annotator1", "alone:annotator2"}
    assert len(data["kinds"]) == 3 * 3 and {row["shared_kind"] for row in data["kinds"]} == {"llm"}
