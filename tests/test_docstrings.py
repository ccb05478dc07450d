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


#: What goes stale in library text: dates, session and issue numbers, "this VM", and timings
#: (seconds, milliseconds, nanoseconds, "Nx faster"). The figures live in the model cards and in
#: benchmarks/; a docstring states the contract and the math and points there.
STALE = {
    "a date": re.compile(r"\b20\d\d-\d\d-\d\d\b"),
    "a session or issue number": re.compile(r"\b(session|issue) \d+", re.IGNORECASE),
    "the development machine": re.compile(r"\b(this|the) (2-core )?VM\b|this 2-core machine"),
    "a timing": re.compile(r"\b\d+(\.\d+)?(-\d+(\.\d+)?)? ?(s|ms|ns|µs)(?![-\w^`])|\b\d+(\.\d+)?x (faster|slower)\b"),
}


def _stale_lines(text: str) -> list[str]:
    return [f"{what}: {line.strip()}" for line in text.splitlines() for what, pattern in STALE.items() if pattern.search(line)]


def test_library_text_carries_no_dates_sessions_or_timings():
    package = Path(__file__).resolve().parents[1] / "bayes_raters"
    found = []
    for path in sorted(package.rglob("*.py")):
        found += [f"{path.relative_to(package)}: {line}" for line in _stale_lines(path.read_text())]
    assert not found, "\n".join(found)


def test_the_stale_text_check_would_catch_each_kind():
    for line in ("measured 2026-11-30 on this VM", "see issue 37", "took 29.1 s with None", "0.7 -> 0.8 ms per gradient",
                 "about 3.5x faster than NumPy", "1.0 ns per value"):
        assert _stale_lines(line), line
    for line in ("2 x 1,000 draws", "400 x 8 raters", "a ~ U(0.5, 3)", "seconds of graph rewriting", "the 2PL's items"):
        assert not _stale_lines(line), line
