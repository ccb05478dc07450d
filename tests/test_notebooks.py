"""Every notebook runs top to bottom in fast mode (BAYES_RATERS_FAST=1)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
_spec = importlib.util.spec_from_file_location("nb_execute", Path(__file__).resolve().parents[1] / "notebooks" / "execute.py")
nb_execute = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nb_execute)


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ has no .ipynb"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes_in_fast_mode(path):
    notebook = nb_execute.execute(path, full=False, timeout=600)
    errors = [o for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    checks = [c for c in notebook.cells if c.cell_type == "code" and "assert " in c.source]
    assert checks, f"{path.name} asserts nothing about its results"
