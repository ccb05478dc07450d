"""Every notebook runs top to bottom in fast mode (BAYES_RATERS_FAST=1)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
_spec = importlib.util.spec_from_file_location("nb_execute", Path(__file__).resolve().parents[1] / "notebooks" / "execute.py")
nb_execute = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nb_execute)


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ has no .ipynb"


#: Notebooks whose fast mode took over two minutes in the suite on 2 cores (fresh clone, 2026-11-28:
#: 01 164 s, 04 197 s, 05 337 s, 06 193 s, 07 249 s; together 1,140 s of the 2,150 s run, which was over
#: the 25-minute CI budget): they execute in `make validate` (and in full with `make notebooks`); the
#: others (00 11 s, 02 94 s, 03 15 s) in `make test`. Every notebook's code is parsed and its stored
#: outputs checked in `make test` (below). 08 took 370 s in the fresh-clone suite of 2026-11-28 (its
#: 40 x 300 quick fit keeps sampling until sigma_log_a converges). 2026-11-29: the suite was 26.6 min on a fresh
#: clone, so 02 (118 s) moved to `make validate` too, and 09 (agreement; posterior fits) starts there, as does 10
#: (judges: two real-data fits, 279 s at full size). 11 (labels: 76 s in fast mode with a warm cache) starts there too.
SLOW_NOTEBOOKS = {"01_prmse_posterior_vs_closed_form.ipynb", "02_loukina2020_reproduction.ipynb", "04_bayesian_pairwise_and_preference_strength.ipynb",
                  "05_irt_item_diagnostics.ipynb", "06_rating_scales_and_dimensionality.ipynb", "07_planning_the_next_ratings.ipynb",
                  "08_leaderboards.ipynb", "09_inter_rater_agreement.ipynb", "10_llm_judges.ipynb",
                  "11_categorical_labels.ipynb"}


@pytest.mark.parametrize("path", [pytest.param(p, marks=[pytest.mark.slow] if p.name in SLOW_NOTEBOOKS else []) for p in NOTEBOOKS],
                         ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes_in_fast_mode(path):
    notebook = nb_execute.execute(path, full=False, timeout=600)
    errors = [o for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    checks = [c for c in notebook.cells if c.cell_type == "code" and "assert " in c.source]
    assert checks, f"{path.name} asserts nothing about its results"


def test_slow_notebooks_exist():
    """The slow list names notebooks that are there (a renamed notebook would drop out of every run)."""
    assert SLOW_NOTEBOOKS <= {p.name for p in NOTEBOOKS}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_every_code_cell_parses_and_imports_only_what_the_package_has(path):
    """What `make test` checks of the notebooks it does not execute: each code cell is valid
    Python (IPython magics aside) and every ``from bayes_raters... import name`` names something
    the package has, so a renamed function breaks the suite, not only `make validate`."""
    import ast
    import importlib
    import importlib.util

    notebook = nbformat.read(path, as_version=4)
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        source = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
        tree = ast.parse(source, filename=f"{path.name} cell {index}")
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "bayes_raters":
                module = importlib.import_module(node.module)
                missing = [alias.name for alias in node.names if not hasattr(module, alias.name)
                           and importlib.util.find_spec(f"{node.module}.{alias.name}") is None]
                assert not missing, f"{path.name} cell {index}: {node.module} has no {missing}"


MACHINE_PATH = re.compile(r"(/work/|/home/|/root/|/tmp/|/Users/|site-packages|[A-Z]:\\\\)")


def _stored_text(output) -> str:
    if output.output_type == "stream":
        return output.get("text", "")
    if output.output_type == "error":
        return "\n".join(output.get("traceback", []))
    return str(output.get("data", {}).get("text/plain", ""))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_stored_outputs_hold_no_machine_paths_or_unexplained_warnings(path):
    """Issue "Feels native", point 7: what a reader sees in the committed notebook carries no
    path of the machine that ran it, and no warning on stderr that the text does not discuss
    (a warning a notebook expects is caught and reported in a sentence instead)."""
    notebook = nbformat.read(path, as_version=4)
    for index, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            text = _stored_text(output)
            assert not MACHINE_PATH.search(text), f"{path.name} cell {index}: a machine path in {text[:200]!r}"
            stderr = output.output_type == "stream" and output.get("name") == "stderr"
            assert not (stderr and "Warning" in text), f"{path.name} cell {index}: a stored warning {text[:200]!r}"
