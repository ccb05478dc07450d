"""Every public function is documented the same way (issue 37, point 4): a numpydoc
``Parameters`` section naming every argument and no other, a ``Returns`` section, and a
runnable ``Examples`` section unless the README's Python code already calls it. The checks are
numpydoc's own validator (codes PR01, PR02, RT01), and the examples run here with
:mod:`doctest`, so an example whose printed output drifts from the code fails."""

from __future__ import annotations

import doctest
import importlib
import inspect
import re
import warnings
from pathlib import Path

import pytest
from numpydoc.validate import validate

from bayes_raters.results import FitResult

ROOT = Path(__file__).resolve().parents[1]
#: The pages whose Python code counts as a function's example: the README and the docs pages.
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# The packages whose __all__ is the public API (the README's "Map" and the API pages).
PUBLIC = ("bayes_raters", "bayes_raters.ctt", "bayes_raters.pairwise", "bayes_raters.irt", "bayes_raters.facets",
          "bayes_raters.leaderboard", "bayes_raters.agreement", "bayes_raters.data")
REQUIRED = {"PR01": "a parameter is not documented", "PR02": "a documented parameter does not exist",
            "RT01": "no Returns section"}


def _public_functions() -> dict[str, object]:
    found = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for name in PUBLIC:
            module = importlib.import_module(name)
            for attribute in getattr(module, "__all__", []):
                value = getattr(module, attribute)
                if inspect.isfunction(value) and value.__module__.startswith("bayes_raters"):
                    found[f"{value.__module__}.{value.__qualname__}"] = value
    return dict(sorted(found.items()))


FUNCTIONS = _public_functions()
# The contract every family's result shares (bayes_raters.results.FitResult) is public API too.
CONTRACT = ("save", "load", "summary", "sample_posterior_predictive", "compute_log_likelihood", "pointwise_tree", "loo",
            "compare")
FUNCTIONS.update({f"bayes_raters.results.FitResult.{name}": getattr(FitResult, name) for name in CONTRACT})


def _fits_a_model(function) -> bool:
    """An example that samples a posterior (``fit_*(``, ``agreement_table(``) takes seconds to minutes: those run in
    ``make validate`` (marker ``slow``), the others in ``make test``."""
    return re.search(r"(>>>|\.\.\.) .*\b(fit_\w+|agreement_table)\(", function.__doc__ or "") is not None


EXAMPLES = [pytest.param(name, marks=pytest.mark.slow) if _fits_a_model(f) else name for name, f in FUNCTIONS.items()]


README_CODE = "\n".join(block for page in PAGES for block in re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S))


def _called_in_readme(function) -> bool:
    return re.search(rf"\b{function.__name__}\(", README_CODE) is not None


def test_the_public_api_is_found():
    """The list below is not empty by accident (a renamed ``__all__`` would empty it)."""
    assert len(FUNCTIONS) >= 50
    assert "bayes_raters.irt.binary.fit.fit_irt" in FUNCTIONS


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_public_function_has_parameters_and_returns(name):
    errors = [f"{code}: {message}" for code, message in validate(name)["errors"] if code in REQUIRED]
    assert not errors, f"{name}:\n" + "\n".join(errors)


@pytest.mark.parametrize("name", EXAMPLES)
def test_public_function_example_runs(name):
    """The docstring's examples run and print what they show (``...`` stands for any text);
    a function the README's Python code calls may go without one."""
    function = FUNCTIONS[name]
    tests = [t for t in doctest.DocTestFinder(recurse=False).find(function, name, globs={}) if t.examples]
    if not tests:
        assert _called_in_readme(function), f"{name} has no Examples section and the README's code does not call it"
        return
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        runner.run(test)
    assert runner.failures == 0, f"{name}: {runner.failures} example(s) failed (output above)"
