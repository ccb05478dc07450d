"""The README's quick start and the getting-started page's examples run as written and say what
they claim; the README stays a landing page."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GETTING_STARTED = ROOT / "docs" / "getting_started.md"


def _blocks(path: Path = GETTING_STARTED) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


def test_readme_python_example_runs(capsys):
    blocks = _blocks()
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


def test_readme_is_a_landing_page():
    """At most 10 KB; the first code block within the first 40 lines; one Python block, the quick
    start (at most 15 lines), which is the getting-started page's first block, run above."""
    text = README.read_text()
    assert len(text.encode()) <= 10_000, len(text.encode())
    first_fence = next(number for number, line in enumerate(text.splitlines(), 1) if line.startswith("```"))
    assert first_fence <= 40, first_fence
    (quick,) = _blocks(README)
    assert len(quick.strip().splitlines()) <= 15
    assert quick == _blocks()[0], "the README's quick start is not the getting-started page's first example"


def test_readme_question_table_has_a_row_for_every_family():
    """Every family's fit, with a link to its card and notebook that exists in the repository."""
    text = README.read_text()
    table = text.split("## Which question, which entry point", 1)[1].split("\n## ", 1)[0]
    for entry in ("fit_true_score", "agreement_table", "fit_facets", "fit_pairwise", "EASL", "fit_irt", "fit_polytomous",
                  "dims=2", "fit_leaderboard", "fit_arena", "plan_double_scoring", "sbc"):
        assert entry in table, entry
    for target in re.findall(r"\]\(([^)#]+)\)", text):
        assert (ROOT / target).exists(), f"README links to {target}, which is not there"


def test_readme_pairwise_example_runs(capsys):
    blocks = _blocks()
    pairwise = [b for b in blocks if "bayes_raters.pairwise" in b]
    assert pairwise, "README has no pairwise example"
    namespace: dict = {}
    exec(compile(pairwise[0], "README.md", "exec"), namespace)
    scores = namespace["easl"].scores()
    assert scores["n_judgements"].sum() == 3 * 150
    assert scores["scalar"].corr(namespace["truth"], method="spearman") > 0.8
    assert "uncertainty" in capsys.readouterr().out


def test_every_python_block_is_one_that_a_test_runs():
    """A block added to the getting-started page without a test here fails: each block is the first
    (PRMSE) example, the protocol example, the pairwise example or the agreement example, each run here."""
    blocks = _blocks()
    protocol = [b for b in blocks if "sample_posterior_predictive" in b][:1]
    pairwise = [b for b in blocks if "bayes_raters.pairwise" in b][:1]
    agreement = [b for b in blocks if "agreement_table" in b][:1]
    unrun = [b[:60] for b in blocks if b not in [blocks[0], *protocol, *pairwise, *agreement]]
    assert not unrun, f"README python blocks no test runs: {unrun}"


def test_readme_agreement_example_runs(capsys):
    """The inter-rater agreement block, as written (the essays example file; two posterior fits)."""
    blocks = [b for b in _blocks() if "agreement_table" in b]
    assert blocks, "README has no agreement example"
    namespace: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    table = namespace["table"]
    assert table.attrs["converged"] and table.attrs["n_single"] == 250
    assert table.loc["ICC2", ["posterior_lower", "bootstrap_lower"]].notna().all()
    assert "ICC3k" in capsys.readouterr().out
