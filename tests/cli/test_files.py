"""The command line on real files (issue "Feels native", points 2-3): one set of column names
per file, long and wide on either side, detected delimiters, --output, defaults in --help,
progress on stderr only, and a --help that loads no numerics."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from bayes_raters.cli import main
from bayes_raters.cli.files import progress_on_stderr
from bayes_raters.ctt import prmse_table


@pytest.fixture
def export(tmp_path):
    """A human-scores export (essay_id, rater_id, score; ids as text) beside a machine file
    with its own names (essay_id, engine, pred_score), and the same data wide."""
    rng = np.random.default_rng(7)
    essays = [f"E{k:04d}" for k in range(300)]
    true = rng.normal(3.5, 1, 300)
    human = pd.DataFrame({"essay_id": np.repeat(essays, 2), "rater_id": np.tile(["R01", "R02"], 300),
                          "score": np.clip(np.round(np.repeat(true, 2) + rng.normal(0, 0.6, 600)), 1, 6)})
    machine = pd.DataFrame({"essay_id": np.tile(essays, 2), "engine": np.repeat(["e-rater", "baseline"], 300),
                            "pred_score": np.concatenate([true + rng.normal(0, 0.3, 300), true + rng.normal(0, 0.6, 300)])})
    human.to_csv(tmp_path / "human.csv", index=False)
    machine.to_csv(tmp_path / "machine.csv", index=False)
    wide_h = human.pivot(index="essay_id", columns="rater_id", values="score").reset_index()
    wide_m = machine.pivot(index="essay_id", columns="engine", values="pred_score").reset_index()
    wide_h.to_csv(tmp_path / "human_wide.csv", index=False)
    wide_m.to_csv(tmp_path / "machine_wide.csv", index=False)
    expected = prmse_table(human, machine.rename(columns={"pred_score": "score"}), response="essay_id", rater="rater_id", system="engine")
    return tmp_path, machine, expected


def _records(capsys) -> dict:
    return {r["system"]: r for r in json.loads(capsys.readouterr().out)}


def test_each_file_has_its_own_column_names(export, capsys):
    folder, machine, expected = export
    args = ["prmse", str(folder / "human.csv"), "--systems", str(folder / "machine.csv"), "--json",
            "--response-column", "essay_id", "--rater-column", "rater_id",
            "--system-column", "engine", "--systems-score-column", "pred_score"]
    assert main(args) == 0
    records = _records(capsys)
    for engine in ("e-rater", "baseline"):
        assert records[engine]["prmse"] == pytest.approx(expected.loc[engine, "prmse"], rel=1e-12)
    assert records["e-rater"]["prmse"] > records["baseline"]["prmse"]
    # the machine file's id column may carry another name too
    machine.rename(columns={"essay_id": "text_id"}).to_csv(folder / "machine2.csv", index=False)
    args[3] = str(folder / "machine2.csv")
    assert main(args) == 2  # the advice names this file's flag
    err = capsys.readouterr().err
    assert "system scores is missing column(s) 'essay_id'" in err and "--systems-response-column NAME" in err
    assert main([*args, "--systems-response-column", "text_id"]) == 0
    assert _records(capsys)["e-rater"]["prmse"] == pytest.approx(expected.loc["e-rater", "prmse"], rel=1e-12)


@pytest.mark.parametrize("ratings, systems", [("human_wide", "machine"), ("human", "machine_wide"), ("human_wide", "machine_wide")])
def test_long_and_wide_on_either_side(export, capsys, ratings, systems):
    folder, _, expected = export
    args = ["prmse", str(folder / f"{ratings}.csv"), "--systems", str(folder / f"{systems}.csv"), "--json",
            "--response-column", "essay_id"]
    args += ["--human", "R01", "--human", "R02"] if ratings.endswith("wide") else ["--rater-column", "rater_id"]
    wide = ["--system", "e-rater", "--system", "baseline"]
    args += wide if systems.endswith("wide") else ["--system-column", "engine", "--systems-score-column", "pred_score"]
    assert main(args) == 0, capsys.readouterr().err
    records = _records(capsys)
    for engine in ("e-rater", "baseline"):
        assert records[engine]["prmse"] == pytest.approx(expected.loc[engine, "prmse"], rel=1e-9)
        assert records[engine]["n"] == 300


def test_wide_systems_file_without_the_id_column_is_named(export, capsys):
    folder, _, _ = export
    args = ["prmse", str(folder / "human.csv"), "--systems", str(folder / "machine_wide.csv"), "--response-column", "essay_id",
            "--rater-column", "rater_id", "--system", "e-rater", "--systems-response-column", "id"]
    assert main(args) == 2
    assert "has no response id column 'id': name it with --systems-response-column NAME" in capsys.readouterr().err


def test_output_file_csv_and_json(export, capsys):
    folder, _, expected = export
    base = ["prmse", str(folder / "human.csv"), "--systems", str(folder / "machine.csv"), "--response-column", "essay_id",
            "--rater-column", "rater_id", "--system-column", "engine", "--systems-score-column", "pred_score"]
    assert main([*base, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert main([*base, "--output", str(folder / "out.json")]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and f"wrote {folder / 'out.json'}" in captured.err
    assert json.loads((folder / "out.json").read_text()) == printed
    assert main([*base, "--output", str(folder / "out.csv"), "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    table = pd.read_csv(folder / "out.csv", index_col="system")
    assert table.loc["e-rater", "prmse"] == pytest.approx(expected.loc["e-rater", "prmse"], rel=1e-12)
    for bad, message in [("out.txt", "name a .csv or a .json file"), ("no/such/dir/out.csv", "does not exist")]:
        assert main([*base, "--output", str(folder / bad)]) == 2
        assert message in capsys.readouterr().err


def test_help_shows_defaults_in_plain_text(capsys):
    for command in (["prmse"], ["irt"], []):
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        text = capsys.readouterr().out
        assert "``" not in text and "(default: None)" not in text and "(default: False)" not in text
    with pytest.raises(SystemExit):
        main(["prmse", "--help"])
    text = capsys.readouterr().out
    for shown in ("(default: rater)", "(default: 0.9)", "(default: 2000)", "(default: utf-8)"):
        assert shown in text


def test_help_and_version_load_no_numerics():
    """--help must answer at once: the parser alone imports neither pandas, SciPy nor PyMC."""
    code = ("import sys\nfrom bayes_raters.cli import build_parser\nbuild_parser().format_help()\n"
            "heavy = [m for m in ('numpy', 'pandas', 'scipy', 'pymc', 'pytensor') if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_progress_goes_to_stderr(capsys):
    with progress_on_stderr():
        print("a progress bar")
    captured = capsys.readouterr()
    assert captured.out == "" and "a progress bar" in captured.err


def test_pairwise_command_bayes_and_online(tmp_path, capsys):
    """The example comparisons (8 systems, quality rising from sys_A to sys_H) with their own
    column names: the Bayesian fit (through fit_pairwise's item_a=/item_b=/outcome=)
    and TrueSkill on the aggregated file both recover the order; strict JSON with convergence."""
    from scipy import stats

    assert main(["example", str(tmp_path)]) == 0
    capsys.readouterr()
    names = ["--item-a-column", "system_a", "--item-b-column", "system_b", "--outcome-column", "result"]
    truth = {f"sys_{c}": k for k, c in enumerate("ABCDEFGH")}
    args = ["pairwise", str(tmp_path / "comparisons.csv"), *names, "--draws", "300", "--tune", "300", "--seed", "1", "--json",
            "--plan", "50", "100", "--top-k", "2", "--batch", "10"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    plan = pd.DataFrame(out["plan"])  # --plan: the planner's table, its stopping rule and the next batch
    assert sorted(set(plan["extra"])) == [0, 50, 100] and set(plan["strategy"]) == {"bald", "random"}
    # 8 items of rank width about 0.75: 100 more comparisons move the expected width by less than the
    # planner's Monte Carlo error (the same fit in either parametrisation: 0.72-0.77 at 100, 0.75 at 0), so
    # the narrowing itself is checked on larger designs against refits (tests/pairwise/test_plan.py)
    assert plan["rank_width"].between(0, 7).all() and (plan.loc[plan["extra"] > 0, "rank_width_se"] > 0).all()
    assert 0 <= out["p_top_k_now"] <= 1 and len(out["next_pairs"]) == 10 and out["stop_prob"] == 0.9
    assert out["comparisons_to_stop"] in (None, 0, 50, 100)
    assert out["method"] == "bayes" and len(out["items"]) == 8
    assert set(out["convergence"]) >= {"converged", "max_r_hat", "min_ess_bulk", "divergences"}
    means = {row["item"]: row["s_mean"] for row in out["items"]}
    assert stats.spearmanr([means[k] for k in truth], list(truth.values())).statistic > 0.9
    assert all(0 < row["s_lower"] < row["s_mean"] < row["s_upper"] < 1 for row in out["items"])
    counts = ["pairwise", str(tmp_path / "comparison_counts.csv"), *names, "--count-column", "n", "--method", "trueskill", "--json"]
    assert main(counts) == 0
    online = json.loads(capsys.readouterr().out)
    assert sum(row["n_judgements"] for row in online["items"]) == 2 * 600  # every judgement counted, both items
    scalar = {row["item"]: row["scalar"] for row in online["items"]}
    assert stats.spearmanr([scalar[k] for k in truth], list(truth.values())).statistic > 0.9
    unnamed = [c for c in counts if c not in ("--count-column", "n")]
    assert main(unnamed) == 2  # a count column left unnamed is refused, with the flag that uses it
    assert "Name it with --count-column n" in capsys.readouterr().err


@pytest.mark.parametrize("flags, message", [(["--plan", "-5"], "--plan takes numbers >= 0"),
                                            (["--plan", "10", "--method", "trueskill"], "--plan needs --method bayes")])
def test_pairwise_plan_options_are_checked_before_the_fit(tmp_path, capsys, flags, message):
    assert main(["example", str(tmp_path)]) == 0
    capsys.readouterr()
    names = ["--item-a-column", "system_a", "--item-b-column", "system_b", "--outcome-column", "result"]
    assert main(["pairwise", str(tmp_path / "comparisons.csv"), *names, *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_pairwise_column_keywords_name_missing_columns():
    from bayes_raters.errors import InvalidInputError
    from bayes_raters.pairwise import fit_pairwise

    table = pd.DataFrame({"first": ["a", "b"], "second": ["b", "c"], "result": ["win", "loss"]})
    with pytest.raises(InvalidInputError, match=r"no column named by item_b='other'"):
        fit_pairwise(table, item_a="first", item_b="other", outcome="result")


def test_pairwise_ties_no_on_tied_data_advises_the_flag(tmp_path, capsys):
    """--ties no on a file with ties stops before sampling, with advice in flags, not keywords."""
    assert main(["example", str(tmp_path)]) == 0
    capsys.readouterr()
    names = ["--item-a-column", "system_a", "--item-b-column", "system_b", "--outcome-column", "result"]
    assert main(["pairwise", str(tmp_path / "comparison_counts.csv"), *names, "--count-column", "n", "--ties", "no"]) == 2
    err = capsys.readouterr().err
    assert "--ties no, but" in err and "--ties yes" in err and "ties=" not in err


def test_facets_command_tables_prmse_and_flag_advice(tmp_path, capsys):
    """``bayes-raters facets`` on an essay design with its own column names: strict JSON with the
    rater, prompt and PRMSE tables and convergence; a missing column is named with the CLI flag."""
    from bayes_raters.facets.simulate import simulate_facet_ratings

    ratings, systems, truth = simulate_facet_ratings(200, 5, 2, 5, random_seed=8)
    ratings.rename(columns={"response": "essay_id", "prompt": "task"}).to_csv(tmp_path / "ratings.csv", index=False)
    systems.rename(columns={"response": "essay_id"}).to_csv(tmp_path / "systems.csv", index=False)
    args = ["facets", str(tmp_path / "ratings.csv"), "--systems", str(tmp_path / "systems.csv"), "--response-column",
            "essay_id", "--prompt-column", "task", "--draws", "300", "--tune", "300", "--seed", "2", "--json", "--quiet"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert {row["rater"] for row in out["raters"]} == {f"r{r}" for r in range(5)}
    assert len(out["prompts"]) == 2 and out["prmse"][0]["system"] == "engine"
    assert set(out["convergence"]) >= {"converged", "max_r_hat", "min_ess_bulk", "divergences"}
    kept, tried = out["inference"]["parametrisation"], out["inference"]["divergences_by_form"]
    assert kept in {"centred", "non-centred"} and next(iter(tried)) == "centred" and kept in tried
    severity = {row["rater"]: row["severity_mean"] for row in out["raters"]}
    assert np.corrcoef([severity[f"r{r}"] for r in range(5)], truth["severity"])[0, 1] > 0.8
    assert main(args[:2] + ["--draws", "10"]) == 2  # default column names: no 'response' column in the file
    assert "--response-column" in capsys.readouterr().err


def test_plan_command_reports_the_grid_and_the_target(tmp_path, capsys):
    """``bayes-raters plan`` on the example essays: strict JSON with a row per (extra, system or
    pair), widths shrinking with more double-scoring, and the smallest grid point reaching the
    target; a non-positive --target-width stops before any fit with the flag's name."""
    assert main(["example", str(tmp_path)]) == 0
    capsys.readouterr()
    files = [str(tmp_path / "human_scores.csv"), "--systems", str(tmp_path / "machine_scores.csv"), "--response-column",
             "essay_id", "--rater-column", "rater_id", "--system-column", "engine", "--systems-score-column", "pred_score"]
    args = ["plan", *files, "--extra", "0", "300", "3000", "--target-width", "0.1", "--draws", "500", "--tune", "500", "--json", "--quiet"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    rows = pd.DataFrame(out["plan"])
    assert set(rows["quantity"]) == {"engine_a", "engine_b", "engine_a - engine_b"} and len(rows) == 9
    for _, group in rows.groupby("quantity"):
        assert group.sort_values("extra_double")["expected_width"].is_monotonic_decreasing
    reached = out["reaches_target"]
    widths = rows.set_index(["quantity", "extra_double"])["expected_width"]
    for name, extra in reached.items():
        if extra is not None:
            assert widths[name, extra] <= 0.1 and all(widths[name, e] > 0.1 for e in (0, 300, 3000) if e < extra)
    assert main(["plan", *files, "--target-width", "-1"]) == 2
    assert "--target-width must be positive" in capsys.readouterr().err
