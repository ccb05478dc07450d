"""A wheel that works alone (``make validate``): ``python -m build`` makes it; installed into a fresh
virtual environment outside the repository, ``import bayes_raters`` finds the installed package and
no file of the repository, and ``bayes-raters example DIR`` and ``bayes-raters demo`` run.

The fresh environment takes its dependencies (PyMC, ArviZ, ...) from the test's own environment,
through a ``.pth`` line to its site-packages (so the check needs no network and no minutes of
downloads); that line adds a path only, so the editable install of the repository there is not
active. ``BAYES_RATERS_WHEEL_FROM_PYPI=1`` installs the dependencies from the package index instead."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _run(args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, check=True, timeout=1200, **kwargs)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv (outside the repository) with the built wheel installed; returns its bin/."""
    work = tmp_path_factory.mktemp("wheel")
    had_build = (ROOT / "build").exists()
    try:
        _run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(work / "dist"), str(ROOT)])
    finally:
        if not had_build:  # setuptools stages the wheel in the source tree's build/
            shutil.rmtree(ROOT / "build", ignore_errors=True)
    (wheel,) = (work / "dist").glob("bayes_raters-*.whl")
    venv = work / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    if os.environ.get("BAYES_RATERS_WHEEL_FROM_PYPI"):
        _run([str(python), "-m", "pip", "install", "--quiet", str(wheel)])
    else:
        purelib = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
        (purelib / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        _run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)])
    return venv / "bin"


def test_import_needs_no_file_of_the_repository(installed, tmp_path):
    code = ("import bayes_raters, bayes_raters.examples, sys; print(bayes_raters.__file__); print(bayes_raters.__version__); "
            "import importlib.util; print(importlib.util.find_spec('validation'), importlib.util.find_spec('tests'))")
    out = _run([str(installed / "python"), "-c", code], cwd=tmp_path).stdout.splitlines()
    assert Path(out[0]).is_relative_to(installed.parent), out[0]
    assert not Path(out[0]).is_relative_to(ROOT)
    assert out[1] == "0.1.0" and out[2] == "None None", out


def test_the_example_files_and_the_demo_run_from_the_wheel(installed, tmp_path):
    _run([str(installed / "bayes-raters"), "example", "files"], cwd=tmp_path)
    written = sorted(p.name for p in (tmp_path / "files").iterdir())
    assert {"human_scores.csv", "answers.csv", "arena_votes.csv"} <= set(written), written
    out = _run([str(installed / "bayes-raters"), "demo", "--quiet"], cwd=tmp_path).stdout
    assert "closed_form" in out and "posterior" in out, out
