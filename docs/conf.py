"""Sphinx configuration of the bayes_raters documentation site (``make docs``).

The site's own pages (``docs/*.md``: the landing page, getting started, the user guide, the
gallery, fitting and results, the command line) sit beside three sources that live elsewhere in
the repository and are copied into ``docs/_copied/`` at build time: the model cards
(``models/*.md``), the executed notebooks (``notebooks/*.ipynb``, shown with their stored
outputs, not re-run) and the API reference, one page per family written from
:data:`API_PAGES` (each family's public ``__all__``; internals stay out). Formulas are rendered
by MathJax 3 served from the built site (``sphinx-mathjax-offline``), so the site needs no
network. ``tests/docs/test_site.py`` opens the built site in headless Chromium."""

from __future__ import annotations

import base64
import importlib
import json
import re
import shutil
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
COPIED = DOCS / "_copied"

project = "bayes_raters"
author = "the bayes_raters developers"
copyright = "2026, the bayes_raters developers"
extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",
    "sphinx_design",
    "sphinx_copybutton",
]
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3
nb_execution_mode = "off"  # the notebooks are committed executed (full mode); the site shows those outputs
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True}
autodoc_typehints = "description"
autosummary_generate = False  # the API pages document every name themselves (one page per family)
napoleon_numpy_docstring = True
napoleon_use_ivar = True  # a dataclass's Attributes section as fields, not duplicate objects
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
suppress_warnings = ["myst.header"]

html_theme = "pydata_sphinx_theme"
html_title = "bayes_raters"
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
    "secondary_sidebar_items": ["page-toc"],
}
html_context = {"default_mode": "light"}
html_show_sourcelink = False

#: The API reference: page -> (title, what it is for, [(module, names)]). Each family's public
#: names are its ``__all__``; a few functions users call from a submodule are named here.
API_PAGES = {
    "ctt": ("True scores and PRMSE", "Closed-form and posterior PRMSE of automated scorers against the true score, "
            "the Loukina et al. (2020) design, and the double-scoring planner.",
            [("bayes_raters.ctt", None), ("bayes_raters.ctt.plan", ["plan_double_scoring", "plot_plan"])]),
    "agreement": ("Inter-rater agreement", "Krippendorff's alpha, Cohen's and Fleiss' kappa, the six ICCs with classical, "
                  "bootstrap and posterior intervals, and system-against-human scores.", [("bayes_raters.agreement", None)]),
    "pairwise": ("Pairwise judgements and arena votes", "The Bayesian beta-latent model of pairwise, slider and strength "
                 "judgements, the online methods, simulated annotators, the comparisons planner, and arena votes at "
                 "millions of votes.", [("bayes_raters.pairwise", None)]),
    "irt": ("Item response theory", "1PL-4PL, graded response and partial credit, multidimensional models; item "
            "diagnostics, scales and short forms.", [("bayes_raters.irt", None)]),
    "facets": ("Many-facet rater model", "Rater severity and consistency across prompts, abilities integrated out.",
               [("bayes_raters.facets", None)]),
    "leaderboard": ("Leaderboards", "IRT at leaderboard size with a blocked sampler, and the fitted leaderboard as an "
                    "item bank: small benchmarks and adaptive tests.", [("bayes_raters.leaderboard", None)]),
    "judges": ("LLM judges against noisy humans", "Each system's mean true score from judge scores on every response and "
               "human ratings on a few: judges calibrated against the true score, their bias by system, and the PPI "
               "baselines beside.", [("bayes_raters.judges", None)]),
    "labels": ("Categorical labels", "Each item's true class, each annotator's confusion matrix and the prevalence from "
               "categorical labels of several annotators (Dawid-Skene, one-coin, MACE, pooled by annotator kind, annotators "
               "of one kind erring together), gold items as observed classes, labels that are not classes.",
               [("bayes_raters.labels", None)]),
    "core": ("Results, data, errors and calibration", "What every family shares: the result protocol, the convergence "
             "report, long tables, errors and warnings, and simulation-based calibration.",
             [("bayes_raters.results", ["FitResult"]), ("bayes_raters.sampling", ["ConvergenceReport"]),
              ("bayes_raters.inference_record", ["InferenceRecord"]), ("bayes_raters.fit_spec", ["FitSpec"]),
              ("bayes_raters.inference", ["sample_model"]),
              ("bayes_raters", None), ("bayes_raters.sbc", ["Configuration", "run_sbc", "uniformity_table", "plot_sbc"])]),
}


def _directive(module: str, name: str) -> list[str]:
    """The autodoc directive that documents ``module.name``: a class, a function or a constant."""
    value = getattr(importlib.import_module(module), name)
    if isinstance(value, type):
        return [f".. autoclass:: {name}", "   :members:", ""]
    if callable(value):
        return [f".. autofunction:: {name}", ""]
    return [f".. data:: {name}", f"   :value: {value!r}", "", f"   {_comment_of(name)}", ""]


def _comment_of(name: str) -> str:
    """The ``#:`` comment above the constant's definition in the package (autodoc finds it only
    in the defining module, and would show the docstring of ``dict`` or ``tuple`` instead)."""
    for path in sorted((ROOT / "bayes_raters").rglob("*.py")):
        match = re.search(rf"^#: (.*)\n{name}\b", path.read_text(), flags=re.M)
        if match:
            return match.group(1)
    return f"The names :data:`{name}` accepts."


def _api_pages() -> None:
    """One page per family: an autosummary table of its public names, then each documented."""
    (COPIED / "api").mkdir(parents=True, exist_ok=True)
    index = ["API reference", "=============", "", "What users call, one page per family (each family's ``__all__``).", "",
             ".. toctree::", "   :maxdepth: 1", ""]
    for page, (title, about, sections) in API_PAGES.items():
        index.append(f"   {page}")
        lines = [title, "=" * len(title), "", about, ""]
        for module, names in sections:
            names = sorted(names or importlib.import_module(module).__all__, key=str.lower)
            names = [n for n in names if not n.startswith("__")]
            lines += [f"``{module}``", "-" * (len(module) + 4), "", f".. currentmodule:: {module}", "", ".. autosummary::", ""]
            module_object = importlib.import_module(module)
            lines += [f"   {name}" for name in names if callable(getattr(module_object, name))] + [""]  # constants: below only
            for name in names:
                lines += _directive(module, name)
        (COPIED / "api" / f"{page}.rst").write_text("\n".join(lines))
    (COPIED / "api" / "index.rst").write_text("\n".join(index) + "\n")


def _thumbnail(notebook: Path) -> None:
    """The notebook's first stored PNG figure, written beside the copies for the gallery."""
    for cell in json.loads(notebook.read_text())["cells"]:
        for output in cell.get("outputs", []):
            image = output.get("data", {}).get("image/png")
            if image:
                target = COPIED / "thumbnails" / f"{notebook.stem}.png"
                target.write_bytes(base64.b64decode("".join(image) if isinstance(image, list) else image))
                return


def _copy_sources() -> None:
    """The cards (with their figures), the notebooks and their gallery thumbnails."""
    shutil.rmtree(COPIED, ignore_errors=True)
    (COPIED / "models").mkdir(parents=True)
    (COPIED / "thumbnails").mkdir()
    for card in sorted((ROOT / "models").glob("*.md")):
        shutil.copy(card, COPIED / "models" / card.name)
    shutil.copytree(ROOT / "models" / "sbc", COPIED / "models" / "sbc", ignore=shutil.ignore_patterns("*.csv"))
    shutil.copytree(ROOT / "notebooks", COPIED / "notebooks", ignore=shutil.ignore_patterns("*.py", "__pycache__", ".ipynb_checkpoints"))
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        _thumbnail(notebook)


_copy_sources()
_api_pages()
