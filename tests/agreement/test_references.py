"""Inter-rater agreement against the implementations people use, on their own examples and on
real ratings (tests/data/agreement: psych::ICC, vcd::Kappa, lme4 from
``agreement_reference.R``; krippendorff, pingouin, statsmodels from ``python_reference.py``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayes_raters.agreement import cohens_kappa, fleiss_kappa, intraclass_correlation, krippendorff_alpha
from bayes_raters.agreement.icc import variance_components
from bayes_raters.agreement.layout import agreement_ratings


@pytest.fixture(scope="module")
def folder(shared_data):
    return shared_data / "agreement"


@pytest.fixture(scope="module")
def python_reference(folder):
    return pd.read_csv(folder / "python_reference.csv").set_index(["data", "coefficient", "level"])["estimate"]


def _rsmtool_long(shared_data, name: str, rows: int | None = None) -> pd.DataFrame:
    wide = pd.read_csv(shared_data / "rsmtool_prmse" / f"{name}.csv")[["h1", "h2", "h3", "h4"]]
    wide = wide if rows is None else wide.head(rows)
    return wide.rename_axis("response").reset_index().melt("response", var_name="rater", value_name="score").dropna()


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_alpha_on_krippendorffs_worked_example(folder, python_reference, level):
    """Krippendorff (2011) reports 0.743, 0.815, 0.849 and 0.797 for his 4 x 12 example with
    missing values; the krippendorff package gives them to more digits."""
    published = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}[level]
    got = krippendorff_alpha(pd.read_csv(folder / "krippendorff_example.csv"), level=level)
    assert got == pytest.approx(published, abs=5e-4)
    assert got == pytest.approx(python_reference["krippendorff_example", "alpha", level], abs=1e-12)


@pytest.mark.parametrize("name", ["prmse_data", "prmse_data_sparse_matrix"])
@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_alpha_on_real_essay_ratings(shared_data, python_reference, name, level):
    """10,000 essays x 4 ratings, complete and with 1-4 ratings per essay (3,421 single-rated)."""
    got = krippendorff_alpha(_rsmtool_long(shared_data, name), level=level)
    assert got == pytest.approx(python_reference[name, "alpha", level], abs=1e-9)


def test_icc_equals_psych_on_shrout_and_fleiss_table(folder):
    """Shrout & Fleiss (1979)'s 6 x 4 table: estimates, F tests and 95% intervals of psych::ICC."""
    expected = pd.read_csv(folder / "shrout_fleiss_icc_psych.csv").set_index("coefficient")
    got = intraclass_correlation(pd.read_csv(folder / "shrout_fleiss.csv"), ci_prob=0.95)
    for column in ("estimate", "f", "df1", "df2", "p_value", "lower", "upper"):
        np.testing.assert_allclose(got[column], expected[column], rtol=0, atol=1e-9, err_msg=column)
    assert got.attrs["complete"] and got.attrs["k"] == 4


def test_icc_equals_psych_and_pingouin_on_real_essay_ratings(shared_data, folder, python_reference):
    """RSMTool's 4-rating essays: psych::ICC on the first 1,000 (its aov() is dense), pingouin on all 10,000."""
    expected = pd.read_csv(folder / "rsmtool_icc_psych.csv").set_index("coefficient")
    got = intraclass_correlation(_rsmtool_long(shared_data, "prmse_data", 1000), ci_prob=0.95)
    for column in ("estimate", "f", "lower", "upper"):
        np.testing.assert_allclose(got[column], expected[column], rtol=0, atol=1e-9, err_msg=column)
    everything = intraclass_correlation(_rsmtool_long(shared_data, "prmse_data"))
    pingouin = [python_reference["prmse_data", name, "interval"] for name in everything.index]
    np.testing.assert_allclose(everything["estimate"], pingouin, rtol=0, atol=1e-9)


def test_unbalanced_variance_components_are_near_lme4_reml(shared_data, folder):
    """InstEval's crossed, unbalanced design (59 lecturers rated twice or more, 344 students):
    Henderson III and REML are different estimators of the same components. Measured: unit
    0.3335 vs REML 0.3176 (5%; its standard error with 59 lecturers is about 0.06), rater 0.1459
    vs 0.1438, error 1.3122 vs 1.3132."""
    reml = pd.read_csv(folder / "insteval_lmer_variances.csv").set_index("component")["variance"]
    data = agreement_ratings(pd.read_csv(shared_data / "insteval" / "insteval_ratings.csv"), "interval")
    assert not data.complete
    v = variance_components(data.values)
    for component, tolerance in (("unit", 0.07), ("rater", 0.03), ("error", 0.005)):
        assert v[component] == pytest.approx(reml[component], rel=tolerance), component


@pytest.mark.parametrize("data", ["sexual_fun", "rsmtool_h1_h2"])
@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohens_kappa_equals_vcd(shared_data, folder, data, weights):
    """vcd::Kappa's value, ASE and confint at 95%: SexualFun (91 couples, 4 ordered answers) and
    the first two ratings of RSMTool's 10,000 essays (scores 0-4)."""
    expected = pd.read_csv(folder / "kappa_vcd.csv").set_index(["data", "weights"]).loc[(data, weights or "none")]
    if data == "sexual_fun":
        cells = pd.read_csv(folder / "sexual_fun.csv")
        a, b = np.repeat(cells["husband"], cells["n"]), np.repeat(cells["wife"], cells["n"])
    else:
        essays = pd.read_csv(shared_data / "rsmtool_prmse" / "prmse_data.csv")
        a, b = essays["h1"], essays["h2"]
    got = cohens_kappa(a, b, weights=weights, ci_prob=0.95)
    for column in ("estimate", "se", "lower", "upper"):
        assert got[column] == pytest.approx(expected[column], abs=1e-9), column


def test_fleiss_kappa_equals_statsmodels_on_real_essay_ratings(shared_data, python_reference):
    got = fleiss_kappa(_rsmtool_long(shared_data, "prmse_data"))
    assert got == pytest.approx(python_reference["prmse_data", "fleiss_kappa", "nominal"], abs=1e-9)
