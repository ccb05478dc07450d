"""The README's Python example runs as written and says what it claims."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no ```python example"
    namespace: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    table = namespace["table"]
    assert list(table.index) == ["sys_6", "sys_16"]
    posterior = namespace["result"].prmse_table()
    assert (posterior["prmse_mean"] - posterior["closed_form"]).abs().max() < 0.05
    assert table.loc["sys_16", "prmse"] > table.loc["sys_6", "prmse"]
    assert "prmse" in capsys.readouterr().out
    protocol = [b for b in blocks if "sample_posterior_predictive" in b]
    assert protocol, "README has no example of the result protocol"
    exec(compile(protocol[0], "README.md", "exec"), namespace)  # continues the first example
    assert "posterior_predictive" in namespace["result"].idata.children
    out = capsys.readouterr().out
    assert "<TrueScoreResult: " in out and "elpd" in out and "max_r_hat" in out
    again = namespace["again"]
    assert repr(again) == repr(namespace["result"])
    assert again.prmse_table().equals(namespace["result"].prmse_table())


def test_readme_states_the_two_commands():
    text = README.read_text()
    assert "make demo" in text and "make test" in text


def test_readme_pairwise_example_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    pairwise = [b for b in blocks if "bayes_raters.pairwise" in b]
    assert pairwise, "README has no pairwise example"
    namespace: dict = {}
    exec(compile(pairwise[0], "README.md", "exec"), namespace)
    scores = namespace["easl"].scores()
    assert scores["n_judgements"].sum() == 3 * 150
    assert scores["scalar"].corr(namespace["truth"], method="spearman") > 0.8
    assert "uncertainty" in capsys.readouterr().out


def test_every_python_block_is_one_that_a_test_runs():
    """A block added to the README without a test here fails: each block is the first (PRMSE)
    example, the protocol example, the pairwise example or the agreement example, each run here."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    protocol = [b for b in blocks if "sample_posterior_predictive" in b][:1]
    pairwise = [b for b in blocks if "bayes_raters.pairwise" in b][:1]
    agreement = [b for b in blocks if "agreement_table" in b][:1]
    unrun = [b[:60] for b in blocks if b not in [blocks[0], *protocol, *pairwise, *agreement]]
    assert not unrun, f"README python blocks no test runs: {unrun}"


def test_readme_agreement_example_runs(capsys):
    """The inter-rater agreement block, as written (the essays example file; two posterior fits)."""
    blocks = [b for b in re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S) if "agreement_table" in b]
    assert blocks, "README has no agreement example"
    namespace: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    table = namespace["table"]
    assert table.attrs["converged"] and table.attrs["n_single"] == 250
    assert table.loc["ICC2", ["posterior_lower", "bootstrap_lower"]].notna().all()
    assert "ICC3k" in capsys.readouterr().out
