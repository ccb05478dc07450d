"""Every command line of the README's "On the command line" block runs as written in a folder
made by ``bayes-raters example`` (issue "Feels native", point 4). In ``make test`` the lines
that only read files run in full and the lines that fit a model run up to the fit (files read
and validated, the fit called with the documented options); ``make validate`` runs them all in
full."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from bayes_raters.cli import EXAMPLE_COMMANDS, main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
CLI_PAGE = ROOT / "docs" / "cli.md"
FITS = {  # module attribute the command imports at call time -> what it fits
    "bayes_raters.ctt.fit.fit_true_score": "true-score model",
    "bayes_raters.irt.fit_irt": "IRT model",
    "bayes_raters.pairwise.fit_pairwise": "pairwise model",
    "bayes_raters.facets.fit.fit_facets": "many-facet model",
    "bayes_raters.judges.fit_judges": "judges model",
    "bayes_raters.labels.fit_labels": "labels model",
}


def readme_commands(path: Path = CLI_PAGE) -> list[list[str]]:
    """The first bash block's commands (of the command-line page, or of the README's section "On the
    command line"), continuation lines joined, comments dropped, ``a && b`` split."""
    text = path.read_text()
    section = text.split("## On the command line", 1)[1] if path == README else text
    block = re.search(r"```bash\n(.*?)```", section, flags=re.S).group(1)
    joined = re.sub(r"\\\n\s*", " ", block)
    commands = []
    for line in joined.splitlines():
        for part in line.split(" # ")[0].split("&&"):
            if part.strip():
                commands.append(shlex.split(part))
    return commands


def fits(argv: list[str]) -> bool:
    command = argv[1]
    return command in ("irt", "demo", "facets", "plan", "judges", "labels") or "--bayes" in argv or (command == "pairwise" and "--method" not in argv)


class _Stop(Exception):
    """Raised by the spy in place of the fit."""


def _check_output(argv: list[str], out: str, folder: Path) -> None:
    if "--json" in argv:
        assert json.loads(out)
    elif "--output" in argv:
        assert (folder / argv[argv.index("--output") + 1]).stat().st_size > 0
    else:
        assert out.strip()


def test_the_readme_block_covers_every_command_and_the_example_list():
    commands = readme_commands()
    assert commands[0][:2] == ["bayes-raters", "example"] and commands[1][0] == "cd"
    assert {c[1] for c in commands if c[0] == "bayes-raters"} == {"example", "prmse", "irt", "pairwise", "facets", "leaderboard", "plan",
                                                                  "agreement", "judges", "labels", "demo"}
    assert all(c[0] in ("bayes-raters", "cd") for c in commands)
    assert len(commands) >= 12


def test_the_readme_lines_are_lines_of_the_page_that_runs():
    """The README's five lines are among the command-line page's, so the runs below cover them."""
    short = readme_commands(README)
    assert len(short) == 6 and short[1][0] == "cd"  # five commands after the example files
    page = readme_commands()
    assert all(line in page for line in short), [line for line in short if line not in page]


def _run_block(tmp_path, monkeypatch, capsys, *, full: bool) -> int:
    monkeypatch.chdir(tmp_path)
    called = []

    def spy(*args, **kwargs):
        called.append(kwargs)
        raise _Stop

    if not full:
        for target in FITS:
            monkeypatch.setattr(target, spy)
    folder, ran = tmp_path, 0
    for argv in readme_commands() + [shlex.split(line) for line in EXAMPLE_COMMANDS]:
        if argv[0] == "cd":
            folder = folder / argv[1]
            monkeypatch.chdir(folder)
            continue
        if fits(argv) and not full:
            before = len(called)
            with pytest.raises(_Stop):
                main(argv[1:])
            assert len(called) == before + 1, argv
            capsys.readouterr()
            continue
        assert main(argv[1:]) == 0, (argv, capsys.readouterr().err)
        _check_output(argv, capsys.readouterr().out, folder)
        ran += 1
    return ran


def test_readme_command_lines_run_as_written(tmp_path, monkeypatch, capsys):
    assert _run_block(tmp_path, monkeypatch, capsys, full=False) >= 5


@pytest.mark.slow
def test_readme_command_lines_run_in_full(tmp_path, monkeypatch, capsys):
    assert _run_block(tmp_path, monkeypatch, capsys, full=True) == len(readme_commands()) - 1 + len(EXAMPLE_COMMANDS)


def test_shipped_examples_are_what_make_examples_writes(tmp_path):
    import pandas as pd

    from bayes_raters.examples import FILES, make_examples, shipped

    for path in make_examples(tmp_path):
        pd.testing.assert_frame_equal(pd.read_csv(path), pd.read_csv(shipped(path.name)))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(FILES)
