"""Sphinx configuration of the bayes_raters documentation site (``make docs``).

The site is built from three sources that live elsewhere in the repository: the API reference
from the package's docstrings (autodoc), the model cards (``models/*.md``) and the executed
notebooks (``notebooks/*.ipynb``, rendered with their stored outputs, not re-run). The cards and
notebooks are copied into ``docs/_copied/`` at build time, so that they stay where users look."""

from __future__ import annotations

import shutil
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
COPIED = DOCS / "_copied"

project = "bayes_raters"
author = "the bayes_raters developers"
extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.napoleon", "sphinx.ext.mathjax"]
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
nb_execution_mode = "off"  # the notebooks are committed executed (full mode); the site shows those outputs
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True}
autodoc_typehints = "description"
autosummary_generate = True
napoleon_numpy_docstring = True
napoleon_use_ivar = True  # a dataclass's Attributes section as fields, not duplicate objects
exclude_patterns = ["_build"]
html_theme = "alabaster"
suppress_warnings = ["myst.header"]


def _copy_sources() -> None:
    """The cards (with their figures) and the notebooks, copied beside the docs' own pages."""
    shutil.rmtree(COPIED, ignore_errors=True)
    (COPIED / "models").mkdir(parents=True)
    for card in sorted((ROOT / "models").glob("*.md")):
        shutil.copy(card, COPIED / "models" / card.name)
    shutil.copytree(ROOT / "models" / "sbc", COPIED / "models" / "sbc", ignore=shutil.ignore_patterns("*.csv"))
    shutil.copytree(ROOT / "notebooks", COPIED / "notebooks", ignore=shutil.ignore_patterns("*.py", "__pycache__", ".ipynb_checkpoints"))


def _api_page() -> None:
    """One section per module of the library (the deprecated ``bayes_raters.plan`` and ``bayes_raters.ctt.posterior`` left out),
    each with the module's docstring and its documented members, found by walking the package."""
    import importlib
    import pkgutil

    import bayes_raters

    deprecated = ("bayes_raters.plan", "bayes_raters.ctt.posterior")
    names = ["bayes_raters"] + [m.name for m in pkgutil.walk_packages(bayes_raters.__path__, "bayes_raters.") if m.name not in deprecated]
    lines = ["API reference", "=============", ""]
    for name in names:
        # a package's page is its docstring: its members are documented in their own modules
        package = hasattr(importlib.import_module(name), "__path__")
        lines += [name, "-" * len(name), "", f".. automodule:: {name}"] + (["   :no-members:"] if package else []) + [""]
    (COPIED / "api.rst").write_text("\n".join(lines))


_copy_sources()
_api_page()
