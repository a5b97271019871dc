"""Each extra lists what its feature imports, and nothing else (pyproject.toml).

``pip install 'tooldialect[export]'`` should bring what ``td.export`` needs, not the test
suite's dependencies: those live in ``dev``, which ``make test`` installs.  Every other extra
names a feature here, by its own files; a package the extra lists must be imported by one of
them, or by a module of tooldialect they use (``tooldialect.spark`` runs ``tooldialect.table``'s
functions, so the spark extra lists pyarrow).  Imports are read from the source with ast,
wherever they stand: an optional dependency is imported inside the function that needs it.
The modules a feature uses are its own files, the modules they import, and the modules those
import when they load; an import inside a function of a module the feature reaches is not
followed (``tooldialect.tablerun`` loads ``tooldialect.ray`` on request, and that is the ray
feature).  A distribution's import name is its normalised name (``ray[data]`` imports
``ray``, ``bpe-openai`` imports ``bpe_openai``).
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from support import ROOT
from test_imports import modules

SRC = ROOT / "src" / "tooldialect"
_KNOWN = modules(SRC, "tooldialect")
_BY_PATH = {path.resolve(): name for name, path in _KNOWN.items()}

#: extra -> the files of its feature (globs under the checkout)
FEATURES = {
    "table": [
        "src/tooldialect/table.py",
        "src/tooldialect/tableio.py",
        "src/tooldialect/tablerun.py",
        "src/tooldialect/audit.py",
        "src/tooldialect/cli_tables.py",
    ],
    "spark": ["src/tooldialect/spark.py"],
    "ray": ["src/tooldialect/ray.py"],
    "export": ["src/tooldialect/export/*.py"],
    "fuzz": ["fuzz/*.py"],
}

#: extras that are not a feature: what the tests, the examples and `make lint` / `make dist` need
NOT_FEATURES = {"dev"}

#: extra -> a package it lists only to bound the version of another listed package's own
#: dependency (the feature never imports it), and why
CONSTRAINTS = {
    "spark": {"pandas": "pyspark 4 supports pandas 2.2 up to 3 and warns on 3 (tests/test_packaging.py)"},
}


def _pyproject() -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli", reason="reading pyproject.toml on Python 3.10 needs tomli")
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _import_name(requirement: str) -> str:
    return canonicalize_name(Requirement(requirement).name).replace("-", "_")


def _outside_functions(tree: ast.AST) -> Iterator[ast.AST]:
    """The nodes that run when the module loads: everything but function bodies."""
    stack = list(ast.iter_child_nodes(tree))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _imported(path: Path, name: str | None, nodes: Iterator[ast.AST]) -> tuple[set[str], set[str]]:
    """(top-level names of other distributions, tooldialect modules) that ``nodes`` of the
    module ``name`` (None outside the package) import."""
    others: set[str] = set()
    ours: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            bases = [alias.name for alias in node.names]
            for base in bases:
                (ours if base.split(".")[0] == "tooldialect" else others).add(base)
        elif isinstance(node, ast.ImportFrom):
            if node.level and name is not None:
                parts = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, node.module] if node.module else parts)
            elif node.level:
                continue  # a relative import outside the package: a sibling script's module
            else:
                base = node.module or ""
            if base.split(".")[0] == "tooldialect":
                ours.update(f"{base}.{alias.name}" for alias in node.names)
                ours.add(base)
            else:
                others.add(base)
    resolved = set()
    for dotted in ours:
        while dotted and dotted not in _KNOWN:
            dotted = dotted.rpartition(".")[0]
        if dotted:
            resolved.add(dotted)
    return {o.split(".")[0] for o in others}, resolved


def feature_imports(extra: str) -> dict[str, set[str]]:
    """Top-level import name of another distribution -> the files of the feature that import it."""
    own = {p.resolve() for pattern in FEATURES[extra] for p in ROOT.glob(pattern)}
    assert own, (extra, FEATURES[extra])
    found: dict[str, set[str]] = {}
    seen: set[Path] = set()
    todo = sorted(own)
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        name = _BY_PATH.get(path)
        others, _ = _imported(path, name, ast.walk(tree))
        _, loaded = _imported(path, name, ast.walk(tree) if path in own else _outside_functions(tree))
        for other in others:
            found.setdefault(other, set()).add(str(path.relative_to(ROOT)))
        todo.extend(_KNOWN[module].resolve() for module in loaded)
    return found


def test_every_extra_but_dev_is_a_feature_named_here():
    extras = set(_pyproject()["project"]["optional-dependencies"])
    assert extras - NOT_FEATURES == set(FEATURES), "name the files of each new extra's feature in FEATURES"


@pytest.mark.parametrize("extra", sorted(FEATURES))
def test_an_extra_lists_only_what_its_feature_imports(extra):
    listed = _pyproject()["project"]["optional-dependencies"][extra]
    imported = feature_imports(extra)
    bounds = CONSTRAINTS.get(extra, {})
    unused = [req for req in listed if _import_name(req) not in imported and _import_name(req) not in bounds]
    assert not unused, (
        f"the {extra} extra lists {unused}, which no module of its feature imports "
        f"({FEATURES[extra]}); a test's or an example's dependency goes in dev"
    )


@pytest.mark.parametrize("extra", sorted(CONSTRAINTS))
def test_a_constraint_pin_bounds_a_dependency_of_what_the_extra_lists(extra):
    """A package listed only as a constraint has an upper bound (it is a pin, not a
    dependency of the feature) and is a dependency of a package the feature imports."""
    listed = {_import_name(r): Requirement(r) for r in _pyproject()["project"]["optional-dependencies"][extra]}
    imported = feature_imports(extra)
    for name in CONSTRAINTS[extra]:
        assert name in listed, f"{name} is no longer in the {extra} extra: drop it from CONSTRAINTS"
        assert name not in imported, f"the {extra} feature imports {name}: it is a dependency, not a constraint"
        assert any(spec.operator in ("<", "<=", "==", "~=") for spec in listed[name].specifier), listed[name]
        owners = []
        for other in set(listed) & set(imported):
            try:
                requires = importlib.metadata.requires(str(listed[other].name)) or []
            except importlib.metadata.PackageNotFoundError:
                continue
            if any(_import_name(r.split(";")[0]) == name for r in requires):
                owners.append(other)
        if not owners and not any(_installed(str(listed[o].name)) for o in set(listed) & set(imported)):
            pytest.skip(f"the {extra} extra is not installed here")
        assert owners, f"no package the {extra} feature imports depends on {name}"


def _installed(dist: str) -> bool:
    try:
        importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def test_the_feature_imports_are_read():
    # the reading itself: each feature's optional dependency, found where it is imported
    assert "pyspark" in feature_imports("spark") and "pyarrow" in feature_imports("spark")
    assert "zstandard" in feature_imports("table")  # inside audit.open_lines
    assert "llguidance" in feature_imports("export") and "interegular" in feature_imports("export")
    assert "atheris" in feature_imports("fuzz")
    # what a module of the package imports inside a function is not followed: the export
    # feature reaches the core, not the table functions
    assert "pyarrow" not in feature_imports("export")


# -- make test installs what the tests import ----------------------------------------------


def _make_test_extras() -> list[str]:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^test: \$\(VENV\)/\.installed-dev$", makefile, re.M), "make test installs the dev venv"
    rule = makefile[makefile.index("$(VENV)/.installed-dev:") :].split("\n\n")[0]
    match = re.search(r"pip install -q -e '\.\[([\w,]+)\]'", rule)
    assert match, rule
    return match.group(1).split(",")


def _installed_with(extras: list[str]) -> set[str]:
    """The distributions ``pip install -e '.[extras]'`` brings: pyproject.toml's own lists,
    then what each installed one requires (its metadata), transitively."""
    project = _pyproject()["project"]
    todo = [Requirement(r) for r in project["dependencies"]]
    todo += [Requirement(r) for extra in extras for r in project["optional-dependencies"][extra]]
    names: set[str] = set()
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in names:
            continue
        names.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for line in requires:
            sub = Requirement(line)
            wanted = req.extras or {""}
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in wanted):
                todo.append(sub)
    return names


def _suite_imports() -> dict[str, set[str]]:
    """Top-level names the tests import (tests/integrations run in another venv) and the
    examples import when loaded (not under ``if __name__ == "__main__":``)."""
    local = {p.stem for folder in ("tests", "fuzz", "benchmarks", "examples") for p in (ROOT / folder).rglob("*.py")}
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "tests").rglob("*.py")) + sorted((ROOT / "examples").glob("*.py")):
        if "integrations" in path.relative_to(ROOT).parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        if path.parent.name == "examples":
            tree.body = [n for n in tree.body if not (isinstance(n, ast.If) and "__main__" in ast.unparse(n.test))]
        others, _ = _imported(path, None, ast.walk(tree))
        for other in others - local - set(sys.stdlib_module_names) - {"tooldialect", "__future__"}:
            found.setdefault(other, set()).add(str(path.relative_to(ROOT)))
    return found


def test_make_test_installs_what_the_tests_import():
    installed = _installed_with(_make_test_extras())
    providers = importlib.metadata.packages_distributions()
    missing = {}
    for module, where in _suite_imports().items():
        dists = {canonicalize_name(d) for d in providers.get(module, [])}
        # not installed here: the tests that need it skip or fail on their own
        if dists and not dists & installed:
            missing[module] = (sorted(dists), sorted(where))
    assert not missing, f"imported by the tests, installed by no extra make test installs: {missing}"
