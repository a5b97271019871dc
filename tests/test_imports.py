"""No import cycles in ``src/tooldialect`` (DESIGN §3: imports go one way, leaves to CLI).

The graph is read from the source, not from ``sys.modules``: every ``import`` and
``from … import`` anywhere in a module counts, inside a function or an ``if
TYPE_CHECKING:`` block too, because deferring an import hides a cycle without removing
it.  Loading ``a.b.c`` runs ``a.b``'s ``__init__`` first, so an import of it from outside
``a.b`` is an import of ``a.b`` too.  A package's ``__init__`` importing its own
submodules is how a package gathers its API, not a dependency, and is left out.  A module
loaded by name at run time (a family's reader, through ``importlib``) is not an import of
the module that loads it.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from support import ROOT


def modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package under ``root`` (the package's own directory), by dotted
    name; a package is named by its ``__init__.py``."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _target(base: str, name: str | None, known: dict[str, Path]) -> str | None:
    """The module an import of ``name`` from ``base`` loads: ``base.name`` when that is a
    module, else the nearest enclosing module that exists (None: outside the package)."""
    dotted = f"{base}.{name}" if name else base
    while dotted and dotted not in known:
        dotted = dotted.rpartition(".")[0]
    return dotted or None


def imports(name: str, path: Path, known: dict[str, Path]) -> dict[str, int]:
    """The package's modules that module ``name`` imports, each with the first line that does."""
    is_package = path.name == "__init__.py"
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets: list[str | None] = []
        if isinstance(node, ast.Import):
            targets = [_target(alias.name, None, known) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                # relative: from the package that holds the module (the module itself for
                # an __init__), one package up for each dot after the first
                parts = name.split(".") if is_package else name.split(".")[:-1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, node.module] if node.module else parts)
            else:
                base = node.module or ""
            if _target(base, None, known) is None:
                continue  # another distribution's module
            targets = [_target(base, alias.name, known) for alias in node.names]
        for target in targets:
            for loaded in _with_packages(target, name, known):
                if loaded == name or (is_package and loaded.startswith(name + ".")):
                    continue  # itself, or a package gathering its own submodules
                found[loaded] = min(found.get(loaded, node.lineno), node.lineno)
    return found


def _with_packages(target: str | None, importer: str, known: dict[str, Path]) -> list[str]:
    """``target`` and the packages around it that loading it runs first: ``a.b``'s
    ``__init__`` before ``a.b.c``, unless the importer is inside ``a.b`` (it has run)."""
    if target is None:
        return []
    parts = target.split(".")
    outer = [".".join(parts[:k]) for k in range(1, len(parts))]
    return [p for p in outer if p in known and not (importer + ".").startswith(p + ".")] + [target]


def import_graph(root: Path, package: str) -> dict[str, dict[str, str]]:
    """module -> {imported module -> "path:line" of the first import}."""
    known = modules(root, package)
    graph: dict[str, dict[str, str]] = {}
    for name, path in known.items():
        where = path.relative_to(root.parent)
        graph[name] = {target: f"{where}:{line}" for target, line in imports(name, path, known).items()}
    return graph


def cycles(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, each sorted, in name order
    (Tarjan's algorithm, iterative: a deep import chain costs no Python stack)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            nxt = next((s for s in successors if s not in index or s in on_stack), None)
            if nxt is not None:
                if nxt in index:
                    low[node] = min(low[node], index[nxt])
                else:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def describe(graph: dict[str, dict[str, str]], found: list[list[str]]) -> str:
    """Each cycle with the imports that close it, for a failure message."""
    out = []
    for component in found:
        members = set(component)
        out.append(f"{len(component)} modules in one cycle:")
        for module in component:
            for target, where in sorted(graph[module].items()):
                if target in members:
                    out.append(f"    {module} -> {target}    ({where})")
    return "\n".join(out)


def test_the_package_has_no_import_cycles():
    src = ROOT / "src" / "tooldialect"
    graph = import_graph(src, "tooldialect")
    assert len(graph) == len(list(src.rglob("*.py")))
    assert "tooldialect.errors" in graph["tooldialect.stream"]  # the walk reads imports
    found = cycles(graph)
    assert not found, "import cycles (move the shared code down a layer; DESIGN §3):\n" + describe(graph, found)


def test_the_checker_finds_a_hidden_cycle(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from . import a, sub\nfrom .sub import c\n",  # gathering children: no edge
        "a.py": "import json\nfrom .sub.c import helper\n",
        "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n",
        "sub/__init__.py": "from .c import helper\n",
        "sub/c.py": "def helper():\n    from .. import b  # deferred, still an import\n    return b\n",
        "d.py": "from .sub import helper\nimport pkg.a\n",  # a name of sub; outside the cycle
    }
    for rel, text in files.items():
        (pkg / rel).write_text(textwrap.dedent(text), encoding="utf-8")
    graph = import_graph(pkg, "pkg")
    assert graph["pkg"] == {}
    assert set(graph["pkg.d"]) == {"pkg.sub", "pkg.a"}
    assert set(graph["pkg.a"]) == {"pkg.sub", "pkg.sub.c"}  # loading sub.c runs sub's __init__
    found = cycles(graph)
    assert found == [["pkg.a", "pkg.b", "pkg.sub.c"]]
    message = describe(graph, found)
    for edge in ("pkg.a -> pkg.sub.c", "pkg.sub.c -> pkg.b", "pkg.b -> pkg.a"):
        assert edge in message
    assert "pkg/sub/c.py:2" in message
