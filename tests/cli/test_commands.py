"""The bayes-raters command line: prmse (long and wide), JSON keys, errors, demo."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayes_raters.cli import PRMSE_KEYS, main
from bayes_raters.ctt import prmse_table

WIDE_ARGS = ["--system", "system", "--human", "h1", "--human", "h2", "--human", "h3", "--human", "h4"]


def test_wide_rsmtool_file_prints_reference_prmse(shared_data, capsys):
    path = shared_data / "rsmtool_prmse" / "prmse_data.csv"
    assert main(["prmse", str(path), *WIDE_ARGS]) == 0
    assert "0.5409673" in capsys.readouterr().out


def test_json_has_the_documented_keys_at_full_precision(shared_data, capsys):
    path = shared_data / "rsmtool_prmse" / "prmse_data_sparse_matrix.csv"
    assert main(["prmse", str(path), *WIDE_ARGS, "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert len(records) == 1
    assert list(records[0]) == PRMSE_KEYS
    assert records[0]["system"] == "system" and records[0]["n"] == 10_000
    assert records[0]["prmse"] == pytest.approx(0.538748, abs=1e-7)
    assert records[0]["prmse"] != round(records[0]["prmse"], 7)  # not rounded


@pytest.fixture
def long_files(tmp_path):
    rng = np.random.default_rng(1)
    true = rng.normal(3, 1, 200)
    ratings = pd.DataFrame(
        {
            "id": np.repeat(np.arange(200), 2),
            "who": np.tile(["a", "b"], 200),
            "value": np.round(np.repeat(true, 2) + rng.normal(0, 0.6, 400)),
        }
    )
    systems = pd.DataFrame(
        {
            "id": np.tile(np.arange(200), 2),
            "engine": np.repeat(["m1", "m2"], 200),
            "value": np.concatenate([true + rng.normal(0, 0.3, 200), true + rng.normal(0, 0.8, 200)]),
        }
    )
    ratings.to_csv(tmp_path / "ratings.csv", index=False)
    systems.to_csv(tmp_path / "systems.csv", index=False)
    return tmp_path, ratings, systems


def test_long_format_with_custom_columns(long_files, capsys):
    folder, ratings, systems = long_files
    args = ["prmse", str(folder / "ratings.csv"), "--systems", str(folder / "systems.csv"), "--json",
            "--response-column", "id", "--rater-column", "who", "--system-column", "engine", "--score-column", "value"]
    assert main(args) == 0
    records = {r["system"]: r for r in json.loads(capsys.readouterr().out)}
    expected = prmse_table(ratings, systems, response="id", rater="who", system="engine", score="value")
    for name in ("m1", "m2"):
        assert records[name]["prmse"] == expected.loc[name, "prmse"]
    assert records["m1"]["prmse"] > records["m2"]["prmse"]


@pytest.mark.parametrize(
    "extra, message",
    [
        ([], "--systems"),
        (["--systems", "nope.csv"], "no such file"),
        (["--human", "h1"], "--system COL"),
    ],
)
def test_bad_invocations_exit_2_with_one_line(long_files, capsys, extra, message):
    folder, _, _ = long_files
    assert main(["prmse", str(folder / "ratings.csv"), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bayes-raters: error:") and message in err
    assert err.count("\n") == 1


def test_missing_columns_in_file_exit_2(long_files, capsys):
    folder, _, _ = long_files
    assert main(["prmse", str(folder / "ratings.csv"), "--systems", str(folder / "systems.csv")]) == 2
    assert "missing column(s) 'response'" in capsys.readouterr().err


def test_small_sample_warning_goes_to_stderr(tmp_path, capsys):
    frame = pd.DataFrame({"h1": [1, 2, 3, 4, 2], "h2": [2, np.nan, np.nan, np.nan, np.nan], "m": [4, 1, 5, 1, 3.0]})
    frame.to_csv(tmp_path / "wide.csv", index=False)
    assert main(["prmse", str(tmp_path / "wide.csv"), "--human", "h1", "--human", "h2", "--system", "m"]) == 0
    captured = capsys.readouterr()
    assert "bayes-raters: warning: PRMSE outside [0, 1]" in captured.err
    assert "prmse" in captured.out


def test_console_script_is_installed_and_reports_without_traceback(tmp_path):
    script = Path(sys.executable).with_name("bayes-raters")
    (tmp_path / "bad.csv").write_text("response,rater,score\n1,a,x\n")
    result = subprocess.run(
        [str(script), "prmse", str(tmp_path / "bad.csv"), "--systems", str(tmp_path / "bad.csv")],
        capture_output=True, text=True, check=False,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and "must hold numbers" in result.stderr


def test_demo_prints_closed_form_and_posterior_columns(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    for token in ("sys_1", "sys_5", "closed_form", "posterior", "lower_90", "r2_true", "How to read it"):
        assert token in out
    rows = [line.split() for line in out.splitlines() if line.startswith("sys_")]
    closed, posterior, lower, upper, r_hat, r2_true = (np.array([float(r[k]) for r in rows]) for k in (2, 3, 4, 5, 6, 7))
    assert len(rows) == 5
    assert np.allclose(closed, r2_true, atol=0.05) and np.allclose(posterior, r2_true, atol=0.05)
    assert np.all(lower < posterior) and np.all(posterior < upper) and np.all(r_hat < 1.01)


def test_bayes_flag_adds_posterior_keys(long_files, capsys, monkeypatch):
    monkeypatch.setenv("BAYES_RATERS_PROGRESSBAR", "1")  # a progress bar is drawn: it must not reach stdout
    folder, ratings, systems = long_files
    args = ["prmse", str(folder / "ratings.csv"), "--systems", str(folder / "systems.csv"), "--json",
            "--response-column", "id", "--rater-column", "who", "--system-column", "engine", "--score-column", "value",
            "--bayes", "--ci", "0.8", "--seed", "3"]
    assert main(args) == 0
    captured = capsys.readouterr()
    records = json.loads(captured.out)
    assert [r["system"] for r in records] == ["m1", "m2"]
    for record in records:
        assert list(record)[: len(PRMSE_KEYS)] == PRMSE_KEYS
        assert {"prmse_mean", "prmse_sd", "prmse_lower", "prmse_upper", "r_hat", "ess_bulk"} <= set(record)
        assert record["prmse_lower"] < record["prmse_mean"] < record["prmse_upper"]
        assert abs(record["prmse_mean"] - record["prmse"]) < 0.1
        assert record["r_hat"] < 1.01 and record["ess_bulk"] > 400
        assert record["converged"] is True and record["divergences"] == 0  # the whole fit, strict JSON
        assert record["max_r_hat"] >= record["r_hat"] and record["min_ess_bulk"] <= record["ess_bulk"]
    assert "warning" not in captured.err
    assert "NaN" not in captured.out and "Infinity" not in captured.out


def test_ordinal_observation_from_the_command_line(long_files, capsys, monkeypatch):
    """The flags reach fit_true_score (the ordinal fit itself is tested in
    tests/ctt/test_ordinal.py, and from the command line in full by the README's line in
    `make validate`: 131 s here was the suite's fifth-longest test)."""
    import bayes_raters.ctt.fit as ctt_fit

    folder, ratings, _ = long_files
    base = ["prmse", str(folder / "ratings.csv"), "--systems", str(folder / "systems.csv"), "--json",
            "--response-column", "id", "--rater-column", "who", "--system-column", "engine", "--score-column", "value",
            "--bayes", "--observation", "ordinal", "--seed", "5"]
    assert main(base) == 2
    assert "--score-range LOW HIGH" in capsys.readouterr().err
    seen = []

    def spy(*args, **kwargs):
        seen.append(kwargs)
        raise KeyboardInterrupt  # stop before sampling

    monkeypatch.setattr(ctt_fit, "fit_true_score", spy)
    low, high = ratings["value"].min(), ratings["value"].max()
    with pytest.raises(KeyboardInterrupt):
        main([*base, "--score-range", str(low), str(high), "--draws", "1000"])
    assert seen[0]["observation"] == "ordinal" and seen[0]["score_range"] == (low, high)
    assert seen[0]["draws"] == 1000 and seen[0]["random_seed"] == 5 and seen[0]["progressbar"] is None


def test_json_is_strict_null_for_missing_or_infinite():
    from bayes_raters.cli.commands import json_records

    table = pd.DataFrame(
        {"n": [3], "n_raters": [2], "n_single": [1], "n_multiple": [2], "error_variance": [np.nan],
         "true_score_variance": [1.0], "mse_true": [np.inf], "prmse": [-np.inf]},
        index=pd.Index(["m"], name="system"),
    )
    record = json.loads(json.dumps(json_records(table), allow_nan=False))[0]
    assert record["error_variance"] is None and record["mse_true"] is None and record["prmse"] is None
    assert record["n"] == 3 and record["true_score_variance"] == 1.0
