"""Bad or unusual input (issue "Trust", point 2): every class gets a clear BayesRatersError or a
warning that names the rows, with advice that works in the interface it came from."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from bayes_raters.cli import cli_advice, main
from bayes_raters.ctt.prmse import prmse_table
from bayes_raters.errors import (
    ConvergenceWarning,
    InputWarning,
    InsufficientDataError,
    InvalidInputError,
    PersistenceError,
    SmallSampleWarning,
)
from bayes_raters.irt import validate_responses
from bayes_raters.pairwise.model import prepare_data
from bayes_raters.pairwise.online import BoundedRA, TrueSkill
from bayes_raters.persistence import load_datatree, save_datatree
from bayes_raters.sampling import ConvergenceReport, warn_if_not_converged


@pytest.fixture(scope="module")
def essays():
    """600 responses rated twice on 1-6, one system close to the true score."""
    rng = np.random.default_rng(1)
    true = rng.normal(3.5, 1.0, 600)
    ratings = pd.DataFrame(
        {
            "response": np.repeat(np.arange(600), 2),
            "rater": np.tile(["r0", "r1"], 600),
            "score": np.clip(np.round(np.repeat(true, 2) + rng.normal(0, 0.6, 1200)), 1, 6),
        }
    )
    systems = pd.DataFrame({"response": np.arange(600), "system": "m", "score": true + rng.normal(0, 0.5, 600)})
    return ratings, systems


def _only(caught, category):
    return [w for w in caught if issubclass(w.category, category)]


def _prmse_warnings(ratings, systems, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = prmse_table(ratings, systems, **kwargs)
    return table, caught


# ---- silently wrong before ---------------------------------------------------------------


def test_gross_outlier_is_named_and_points_to_score_range(essays):
    ratings, systems = essays
    typo = ratings.copy()
    typo.loc[5, "score"] = 1_000_000
    _, caught = _prmse_warnings(typo, systems)
    (warning,) = _only(caught, InputWarning)
    message = str(warning.message)
    assert "1000000" in message and "'response': 2" in message and "score_range=(low, high)" in message
    with pytest.raises(InvalidInputError, match="outside the declared scale"):
        prmse_table(typo, systems, score_range=(1, 6))
    assert not _only(_prmse_warnings(ratings, systems)[1], InputWarning)  # clean 1-6 data: no warning


def test_shifted_system_is_blamed_on_its_scale_not_on_sample_size(essays):
    ratings, systems = essays
    shifted = systems.assign(system="shifted", score=systems["score"] + 1.0)
    table, caught = _prmse_warnings(ratings, pd.concat([systems, shifted]))
    assert table.loc["shifted", "prmse"] < 0 < table.loc["m", "prmse"]
    assert not _only(caught, SmallSampleWarning)
    (warning,) = _only(caught, InputWarning)
    assert "'shifted'" in str(warning.message) and "+1.0" in str(warning.message) and "'m'" not in str(warning.message)


def test_constant_system_or_rater_is_an_error(essays):
    ratings, systems = essays
    with pytest.raises(InvalidInputError, match="'m': 3 for all 600 responses"):
        prmse_table(ratings, systems.assign(score=3.0))
    lazy = ratings.copy()
    lazy.loc[lazy["rater"] == "r1", "score"] = 4.0
    with pytest.raises(InvalidInputError, match="rater.*'r1': 4 for all 600"):
        prmse_table(lazy, systems)
    with pytest.raises(InvalidInputError, match="constant scores"):
        prmse_table(ratings.assign(score=3.0), systems)


def test_padded_ids_are_warned_about_naming_both_spellings(essays):
    ratings, systems = essays
    padded = ratings.assign(rater=ratings["rater"].where(ratings.index != 3, "r1 "))
    _, caught = _prmse_warnings(padded, systems)
    (warning,) = _only(caught, InputWarning)
    assert "'r1 ' and 'r1'" in str(warning.message) and ".str.strip()" in str(warning.message)


def test_aggregated_comparisons_need_count_and_are_expanded_with_it():
    table = pd.DataFrame(
        {"item_a": ["x", "x", "y"], "item_b": ["y", "z", "z"], "outcome": ["win", "loss", "tie"], "n": [10, 3, 7]}
    )
    with pytest.raises(InvalidInputError, match=r"column 'n' looks like the number.*count='n'"):
        prepare_data(table)
    data = prepare_data(table, count="n")
    assert len(data.comparisons) == 20
    assert data.comparisons["outcome"].value_counts().to_dict() == {2: 10, 0: 3, 1: 7}
    with pytest.raises(InvalidInputError, match=r"table.index.repeat"):
        BoundedRA(["x", "y", "z"]).observe_pairs(table)
    with pytest.raises(InvalidInputError, match="whole numbers"):
        prepare_data(table.assign(n=[1.5, 2, 3]), count="n")


def test_disconnected_design_carries_groups_and_says_ranks_rest_on_the_prior():
    table = pd.DataFrame({"item_a": ["a", "c"], "item_b": ["b", "d"], "outcome": ["win", "loss"]})
    with pytest.raises(InsufficientDataError, match="allow_disconnected=True"):
        prepare_data(table)
    with pytest.warns(InputWarning, match="rest on the prior"):
        data = prepare_data(table, allow_disconnected=True)
    assert data.groups.to_dict() == {"a": 0, "b": 0, "c": 1, "d": 1}
    assert prepare_data(pd.concat([table, table.assign(item_b=["c", "a"])])).groups is None


# ---- advice that works where it is read --------------------------------------------------


def test_mixed_id_types_are_named(essays):
    ratings, systems = essays
    with pytest.raises(InvalidInputError, match=r"differ in type: '0' \(str\) here and 0 \(int\)"):
        prmse_table(ratings, systems.assign(response=systems["response"].astype(str)))


@pytest.mark.parametrize("delimiter, word", [(";", "semicolon"), ("\t", "tab")])
def test_wrong_delimiter_is_named_in_python_and_cli(essays, tmp_path, capsys, delimiter, word):
    ratings, systems = essays
    ratings.to_csv(tmp_path / "r.csv", sep=delimiter, index=False)
    systems.to_csv(tmp_path / "s.csv", sep=delimiter, index=False)
    with pytest.raises(InvalidInputError, match=f"{word}-separated.*sep="):
        prmse_table(pd.read_csv(tmp_path / "r.csv"), systems)
    # the CLI detects the delimiter and names it on stderr (issue 13, point 3) ...
    files = ["prmse", str(tmp_path / "r.csv"), "--systems", str(tmp_path / "s.csv")]
    assert main(files) == 0
    detected = capsys.readouterr()
    assert detected.err.count(f"as {word}-separated (detected; set --sep to override)") == 2
    sep = "\\t" if delimiter == "\t" else delimiter
    assert main([*files, "--sep", sep]) == 0
    assert capsys.readouterr().out == detected.out
    assert main([*files, "--sep", sep, "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    # ... and a wrong --sep gets the advice as flags, not keywords
    assert main([*files, "--sep", ","]) == 2
    err = capsys.readouterr().err
    assert f"{word}-separated" in err and "--sep" in err and "sep=" not in err.replace("--sep", "")


def test_cli_advice_names_flags_not_keywords(essays, tmp_path, capsys):
    ratings, systems = essays
    ratings.rename(columns={"rater": "who"}).to_csv(tmp_path / "r.csv", index=False)
    systems.to_csv(tmp_path / "s.csv", index=False)
    assert main(["prmse", str(tmp_path / "r.csv"), "--systems", str(tmp_path / "s.csv")]) == 2
    err = capsys.readouterr().err
    assert "--rater-column NAME" in err and "rater=" not in err
    assert cli_advice("declare score_range=(low, high) or chains=2") == "declare --score-range LOW HIGH or --chains 2"


def test_cli_checks_options_before_reading_or_fitting(capsys):
    assert main(["prmse", "does-not-exist.csv", "--systems", "x.csv", "--bayes", "--ci", "1.5"]) == 2
    assert "--ci must lie strictly between 0 and 1" in capsys.readouterr().err
    assert main(["prmse", "does-not-exist.csv", "--chains", "0"]) == 2
    assert "--chains must be at least 1" in capsys.readouterr().err


def test_cli_encoding_error_points_to_the_flag(essays, tmp_path, capsys):
    ratings, systems = essays
    ratings.assign(rater=ratings["rater"].str.replace("r0", "Jürgen")).to_csv(tmp_path / "r.csv", index=False, encoding="latin-1")
    systems.to_csv(tmp_path / "s.csv", index=False)
    assert main(["prmse", str(tmp_path / "r.csv"), "--systems", str(tmp_path / "s.csv")]) == 2
    assert "--encoding latin-1" in capsys.readouterr().err
    args = ["prmse", str(tmp_path / "r.csv"), "--systems", str(tmp_path / "s.csv"), "--encoding", "latin-1"]
    assert main(args) == 0


def test_numeric_text_and_boolean_answers_are_read_as_numbers(essays):
    ratings, systems = essays
    as_text = prmse_table(ratings.assign(score=ratings["score"].map(lambda v: f"{v:.1f}")), systems)
    pd.testing.assert_frame_equal(as_text, prmse_table(ratings, systems))
    answers = pd.DataFrame({"respondent": [1, 1, 2, 2], "item": ["a", "b", "a", "b"], "correct": [True, False, False, True]})
    assert validate_responses(answers)["correct"].tolist() == [1.0, 0.0, 0.0, 1.0]
    words = answers.assign(correct=["TRUE", "false", "False", " true"])
    assert validate_responses(words)["correct"].tolist() == [1.0, 0.0, 0.0, 1.0]
    with pytest.raises(InvalidInputError, match="must hold numbers"):
        prmse_table(ratings.assign(score=ratings["score"] > 3), systems)  # booleans are no ratings
    with pytest.raises(InvalidInputError, match="must hold numbers"):
        validate_responses(answers.assign(correct=["yes", "no", "no", "yes"]))


def test_pairwise_column_advice_is_a_rename_not_a_keyword():
    table = pd.DataFrame({"winner": ["a"], "loser": ["b"], "outcome": ["win"]})
    with pytest.raises(InvalidInputError) as raised:
        prepare_data(table)
    assert "table.rename(columns=" in str(raised.value) and "item_a=..." not in str(raised.value)


def test_one_chain_is_reported_as_unchecked_not_as_nan():
    report = ConvergenceReport(float("nan"), 800.0, 800.0, 0, chains=1, draws=1000)
    assert not report.converged
    assert "needs at least 2 chains" in report.problems[0] and "nan" not in report.problems[0]
    with pytest.warns(ConvergenceWarning, match="cannot be checked.*chains=2"):
        warn_if_not_converged(report, "model")


def test_single_chain_report_raises_no_numpy_warning():
    """R-hat of one chain is NaN everywhere: the report says NaN without numpy's All-NaN
    RuntimeWarning (issue "Trust", point 6); an infinite R-hat still counts as the worst."""
    from bayes_raters.sampling import _worst

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(_worst(xr.Dataset({"a": ("x", [np.nan, np.nan])}), np.max))
        assert _worst(xr.Dataset({"a": ("x", [1.0, np.nan]), "b": ("y", [np.inf])}), np.max) == np.inf
        assert _worst(xr.Dataset({"a": ("x", [400.0, np.nan]), "b": ("y", [350.0])}), np.min) == 350.0


def test_sampler_overflow_in_warm_up_raises_no_numpy_warning(monkeypatch):
    """PyMC's NUTS overflows in the kinetic energy of a diverging warm-up trajectory (CI:
    ``overflow encountered in dot`` from the README example). sample_model keeps numpy's
    warning inside the sampler and reports the divergence instead (point 6)."""
    import pymc as pm

    from bayes_raters import inference

    def diverging_sampler(**kwargs):
        momentum = np.array([1e200, np.nan])
        _ = 0.5 * np.dot(momentum, momentum)  # what quadpotential.velocity_energy does
        rng = np.random.default_rng(0)
        return xr.DataTree.from_dict(
            {
                "posterior": xr.Dataset({"mu": (("chain", "draw"), rng.normal(size=(2, 500)))}),
                "sample_stats": xr.Dataset({"diverging": (("chain", "draw"), np.eye(2, 500, dtype=bool))}),
            }
        )

    monkeypatch.setattr(inference.pm, "sample", diverging_sampler)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, report = inference.sample_model(pm.Model(), draws=500, chains=2, random_seed=0)
    assert report.divergences == 2
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in caught]
    assert [w for w in caught if issubclass(w.category, ConvergenceWarning)]


# ---- persistence -------------------------------------------------------------------------


def _tree(seed: int = 0) -> xr.DataTree:
    rng = np.random.default_rng(seed)
    posterior = xr.Dataset(
        {"a": (("chain", "draw", "item"), rng.normal(size=(2, 200, 30))), "flag": ("item", rng.random(30) > 0.5)},
        coords={"item": [f"i{k}" for k in range(30)]},
    )
    return xr.DataTree.from_dict({"posterior": posterior, "observed_data": xr.Dataset({"y": ("n", rng.integers(0, 2, 50))})})


def test_round_trip_is_lossless_and_checked(tmp_path):
    path = save_datatree(_tree(), tmp_path / "fit.nc", {"model": "x"})
    tree, config = load_datatree(path)
    assert config == {"model": "x"}
    xr.testing.assert_identical(tree["posterior"].to_dataset(), _tree()["posterior"].to_dataset())


def test_every_corruption_raises_or_loads_the_same_arrays(tmp_path):
    """Flip bytes at 60 places spread over the file: each load either raises PersistenceError
    (naming the file) or gives back exactly the saved arrays; never another exception."""
    path = save_datatree(_tree(), tmp_path / "fit.nc", {"model": "x"})
    original = path.read_bytes()
    raised = 0
    for offset in np.linspace(0, len(original) - 9, 60).astype(int):
        damaged = bytearray(original)
        damaged[offset : offset + 8] = bytes(b ^ 0x5A for b in damaged[offset : offset + 8])
        path.write_bytes(bytes(damaged))
        try:
            tree, _ = load_datatree(path)
        except PersistenceError as exc:
            raised += 1
            assert str(path) in str(exc)
            continue
        xr.testing.assert_identical(tree["posterior"].to_dataset(), _tree()["posterior"].to_dataset())
    assert raised >= 30, raised
    print(f"{raised} of 60 corruptions raised PersistenceError; the rest loaded the saved arrays")


@pytest.mark.parametrize("case", ["missing", "not netcdf", "truncated", "folder absent", "foreign netcdf"])
def test_unusable_files_raise_persistence_errors_naming_the_file(tmp_path, case):
    path = tmp_path / "fit.nc"
    if case == "folder absent":
        with pytest.raises(PersistenceError, match="does not exist"):
            save_datatree(_tree(), tmp_path / "no" / "fit.nc", {})
        return
    if case == "not netcdf":
        path.write_text("response,rater,score\n1,a,3\n")
    elif case == "truncated":
        save_datatree(_tree(), path, {})
        path.write_bytes(path.read_bytes()[:2000])
    elif case == "foreign netcdf":
        _tree().to_netcdf(path, engine="h5netcdf")
    with pytest.raises(PersistenceError, match=str(path)):
        load_datatree(path)


def test_online_state_round_trips_through_the_checked_format(tmp_path):
    model = TrueSkill(["a", "b", "c"]).observe_pairs(
        pd.DataFrame({"item_a": ["a", "b"], "item_b": ["b", "c"], "outcome": ["win", "loss"]})
    )
    path = model.save(tmp_path / "ts.nc")
    pd.testing.assert_frame_equal(TrueSkill.load(path).scores(), model.scores())
    with pytest.raises(PersistenceError, match="does not hold a saved BoundedRA"):
        BoundedRA.load(path)


def test_id_types_are_named_for_online_states_too():
    model = TrueSkill([1, 2, 3])
    with pytest.raises(InvalidInputError, match=r"differ in type: '1' \(str\) here and 1 \(int\)"):
        model.observe_pairs(pd.DataFrame({"item_a": ["1"], "item_b": ["2"], "outcome": ["win"]}))
