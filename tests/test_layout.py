"""The package's layout holds itself (issue 37, point 3): the library never imports the
validation harnesses, no module imports another's private names, and the import graph of the
library (imports at any depth, function-level ones included) has no cycle; every family has the
same file roles; no shim is left at the earlier place of a moved name."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bayes_raters", "validation")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(package: str) -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((ROOT / package).rglob("*.py"))}


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """Every ``from X import a, b`` (absolute) and ``import X`` in the file, at any depth:
    ``(line, module, names)``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
    return found


def _import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the library modules it imports (``from pkg import sub`` counts as ``pkg.sub``)."""
    graph = {name: set() for name in modules}
    for name, path in modules.items():
        for _, module, names in _imports(path):
            targets = [f"{module}.{n}" if f"{module}.{n}" in modules else module for n in names] or [module]
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_library_never_imports_the_validation_package():
    modules = _modules("bayes_raters")
    offenders = [f"{path.relative_to(ROOT)}:{line}" for path in modules.values()
                 for line, module, _ in _imports(path) if module.split(".")[0] == "validation"]
    assert len(modules) > 50 and not offenders, offenders
    # and importing every module of the library loads none of it
    code = ("import importlib, pkgutil, sys, bayes_raters\n"
            "for m in pkgutil.walk_packages(bayes_raters.__path__, 'bayes_raters.'):\n"
            "    importlib.import_module(m.name)\n"
            "print(sorted(k for k in sys.modules if k.split('.')[0] == 'validation'))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/").stdout
    assert loaded.strip() == "[]"


#: The core: modules at the package's top level, which no family may be imported by.
FAMILIES = ("ctt", "pairwise", "irt", "facets", "leaderboard", "judges", "labels", "agreement", "cli", "examples")


def test_the_core_imports_no_family():
    core = {name: path for name, path in _modules("bayes_raters").items() if name.count(".") == 1 and path.name != "__init__.py"}
    assert {"bayes_raters.sampling", "bayes_raters.results", "bayes_raters.quadrature"} <= set(core)
    offenders = [f"{path.relative_to(ROOT)}:{line} {module}" for path in core.values() for line, module, _ in _imports(path)
                 if module.split(".")[:2] in [["bayes_raters", family] for family in FAMILIES]]
    assert not offenders, offenders


def test_no_module_imports_another_modules_private_names():
    offenders = []
    for package in PACKAGES:
        for path in _modules(package).values():
            for line, module, names in _imports(path):
                private = [n for n in names if n.startswith("_") and not n.startswith("__")]
                if module.split(".")[0] in PACKAGES and private:
                    offenders.append(f"{path.relative_to(ROOT)}:{line} {module} {private}")
    assert not offenders, offenders


def test_the_library_has_no_import_cycle():
    modules = _modules("bayes_raters")
    graph = _import_graph(modules)
    assert len(graph) > 50 and sum(map(len, graph.values())) > 100  # the graph was read
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def _test_folders() -> set[str]:
    """Folders under ``tests/`` that hold test modules, as paths relative to ``tests/``."""
    tests = ROOT / "tests"
    return {p.parent.relative_to(tests).as_posix() for p in tests.rglob("test_*.py") if p.parent != tests and "data" not in p.parts}


def _family_folders() -> set[str]:
    """Sub-packages of the library with code (``ctt``, ``irt/binary``...; not the data-only
    ``examples``), the validation package and the documentation site (``tests/docs``)."""
    library = {
        p.parent.relative_to(ROOT / "bayes_raters").as_posix()
        for p in (ROOT / "bayes_raters").rglob("*.py")
        if p.name != "__init__.py"
    }
    return (library - {"."}) | {"validation", "docs"}


def test_the_tests_mirror_the_package():
    """Every folder of tests is a folder of the package (``tests/irt/binary`` tests
    ``bayes_raters/irt/binary``), every family folder has tests of its own, and no test module at
    the top of ``tests/`` is named after a family (the place of a family's tests is its folder)."""
    tests, families = _test_folders(), _family_folders()
    assert tests <= families, f"test folders with no package folder: {sorted(tests - families)}"
    assert families <= tests, f"package folders with no test folder: {sorted(families - tests)}"
    names = {name.split("/")[0] for name in families}
    misplaced = [p.name for p in (ROOT / "tests").glob("test_*.py")
                 if any(p.stem == f"test_{name}" or p.stem.startswith(f"test_{name}_") for name in names)]
    assert not misplaced, f"family tests at the top of tests/: {misplaced}"


#: The model families, each a folder with the same file roles.
FAMILIES_WITH_ROLES = ("ctt", "pairwise", "pairwise/arena", "irt/binary", "irt/polytomous", "irt/multidimensional", "facets", "leaderboard",
                       "judges", "labels")
ROLES = ("model", "fit", "result", "simulate")


def _classes(path: Path) -> dict[str, list[str]]:
    """Top-level classes of a module and the names of their bases as written."""
    return {node.name: [ast.unparse(base) for base in node.bases]
            for node in ast.parse(path.read_text()).body if isinstance(node, ast.ClassDef)}


def _functions(path: Path) -> list[str]:
    return [node.name for node in ast.parse(path.read_text()).body if isinstance(node, ast.FunctionDef)]


def test_every_family_has_the_same_file_roles():
    """``model`` builds the PyMC model, ``fit`` holds the public ``fit_*`` and samples, ``result``
    holds the family's one result class (a :class:`~bayes_raters.results.FitResult`), ``simulate``
    draws data; no result class is defined anywhere else in the library."""
    package = ROOT / "bayes_raters"
    for family in FAMILIES_WITH_ROLES:
        folder = package / family
        missing = [role for role in ROLES if not (folder / f"{role}.py").is_file()]
        assert not missing, f"{family}: no {missing}"
        results = [name for name, bases in _classes(folder / "result.py").items() if any("FitResult" in b for b in bases)]
        assert len(results) == 1, f"{family}/result.py defines {results}"
        fits = [name for name in _functions(folder / "fit.py") if name.startswith("fit_")]
        assert fits, f"{family}/fit.py defines no fit_* function"
    elsewhere = [f"{path.relative_to(ROOT)}: {name}" for name, path in _modules("bayes_raters").items() if path.name != "result.py"
                 for name, bases in _classes(path).items() if any(b.endswith("FitResult") for b in bases) and name != "FitResult"]
    assert not elsewhere, f"result classes outside a result module: {elsewhere}"


def test_no_shim_is_left_at_an_earlier_place():
    """Version 0.1.0 was never released, so nothing is kept at a place a name left (CHANGELOG.md
    says where each went): the old modules and names are gone, not forwarding with a warning."""
    import importlib

    import bayes_raters.ctt
    import bayes_raters.irt
    import bayes_raters.pairwise
    import bayes_raters.results

    for module in ("bayes_raters.plan", "bayes_raters.ctt.posterior"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(module)
    for package, name in [(bayes_raters.irt, "fit_facets"), (bayes_raters.irt, "FacetsResult"), (bayes_raters.ctt, "fit_true_score_model"),
                          (bayes_raters.pairwise, "fit_pairwise_model"), (bayes_raters.results, "ModelName"), (bayes_raters.results, "renamed")]:
        assert not hasattr(package, name), f"{package.__name__}.{name} is still there"
