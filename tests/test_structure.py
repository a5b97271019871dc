"""The package's classes and types keep the shape the engine's rooms need (DESIGN §3):
objects composed, not one class mixed from many; typed with ``mypy --strict`` over the whole
package, with few and named exceptions."""

from __future__ import annotations

import ast
import re

from support import ROOT, pyproject

SRC = ROOT / "src" / "tooldialect"
#: The most methods a class may have, its project bases' included.
MAX_METHODS = 40
#: The most ``# type: ignore`` comments the package may hold, each naming its error code.
MAX_IGNORES = 25


def _classes() -> dict[str, tuple[ast.ClassDef, str]]:
    """Every class of the package by qualified name (module:Class), with its module."""
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        module = ".".join(["tooldialect", *path.relative_to(SRC).with_suffix("").parts]).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                found[f"{module}:{node.name}"] = (node, module)
    return found


def _own_methods(node: ast.ClassDef) -> set[str]:
    return {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _project_bases(node: ast.ClassDef, module: str, classes: dict[str, tuple[ast.ClassDef, str]]) -> list[str]:
    """The bases of ``node`` that are classes of the package (resolved by name in its module
    or among the package's classes)."""
    names = {k.split(":")[1]: k for k in classes}
    out = []
    for base in node.bases:
        name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
        if name is None:
            continue
        if f"{module}:{name}" in classes:
            out.append(f"{module}:{name}")
        elif name in names:
            out.append(names[name])
    return out


def test_the_check_sees_a_mixin():
    tree = ast.parse("class A: pass\nclass B: pass\nclass C(A, B): pass\nclass D(Exception): pass\n")
    classes = {f"m:{n.name}": (n, "m") for n in tree.body if isinstance(n, ast.ClassDef)}
    assert _project_bases(classes["m:C"][0], "m", classes) == ["m:A", "m:B"]
    assert _project_bases(classes["m:D"][0], "m", classes) == []


def test_no_class_mixes_more_than_one_project_class():
    classes = _classes()
    mixed = {
        k: bases for k, (node, module) in classes.items() if len(bases := _project_bases(node, module, classes)) > 1
    }
    assert not mixed, f"compose these rooms instead of mixing them: {mixed}"


def test_no_class_has_more_than_40_methods_with_its_project_bases():
    classes = _classes()

    def methods(key: str, seen: frozenset[str] = frozenset()) -> set[str]:
        node, module = classes[key]
        got = _own_methods(node)
        for base in _project_bases(node, module, classes):
            if base not in seen:
                got |= methods(base, seen | {key})
        return got

    big = {k: n for k in classes if (n := len(methods(k))) > MAX_METHODS}
    assert not big, f"split these classes (methods, their project bases' included): {big}"


def test_the_engine_is_composed_of_rooms():
    from tooldialect.engine import Engine

    bases = [b for b in Engine.__mro__[1:] if b.__module__.startswith("tooldialect")]
    assert bases == [], bases  # its rooms are fields, not bases
    rooms = {"window", "sink", "ledger", "values", "cursor", "whole", "loops", "recovery", "arbiter", "prose", "fences"}
    assert rooms <= set(Engine.__slots__)


#: What the window keeps (engine/window.py): written only by its own methods.
WINDOW_FIELDS = {"win", "base", "cur", "prev_tail", "eof", "held", "specials"}


def _writes(tree: ast.AST) -> list[ast.Attribute]:
    """Every attribute an assignment in ``tree`` writes (``x.a = …``, ``x.a += …``, ``x.a: T = …``)."""
    out = []
    for node in ast.walk(tree):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, (ast.AugAssign, ast.AnnAssign))
            else []
        )
        for t in targets:
            for sub in ast.walk(t):
                if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store):
                    out.append(sub)
    return out


def _is_window(expr: ast.expr) -> bool:
    return (isinstance(expr, ast.Name) and expr.id in {"w", "window"}) or (
        isinstance(expr, ast.Attribute) and expr.attr == "window"
    )


def test_only_the_window_moves_its_positions():
    wrong = []
    for path in sorted((SRC / "engine").glob("*.py")):
        if path.name == "window.py":
            continue
        for attr in _writes(ast.parse(path.read_text(encoding="utf-8"))):
            if attr.attr in WINDOW_FIELDS and _is_window(attr.value):
                wrong.append(f"{path.name}:{attr.lineno} writes window.{attr.attr}")
    assert not wrong, wrong


def test_only_the_arbiter_changes_a_blocks_phase():
    wrong = []
    for path in sorted((SRC / "engine").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for cls in [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]:
            for attr in _writes(cls):
                if attr.attr != "phase":
                    continue
                made = cls.name == "Block" and isinstance(attr.value, ast.Name) and attr.value.id == "self"
                if not (made or cls.name == "Arbiter"):
                    wrong.append(f"{path.name}:{attr.lineno} {cls.name} sets a phase")
    assert not wrong, wrong


def test_the_check_sees_a_stray_write():
    tree = ast.parse("class Cursor:\n    def f(self, b):\n        self.window.cur = 3\n        b.phase = 1\n")
    names = [(a.attr, _is_window(a.value)) for a in _writes(tree)]
    assert names == [("cur", True), ("phase", False)]


def test_mypy_checks_the_whole_package_strictly():
    cfg = pyproject()["tool"]["mypy"]
    assert cfg["strict"] is True and cfg["files"] == ["src/tooldialect"]
    assert "follow_imports" not in cfg
    for override in cfg.get("overrides", []):
        assert not override.get("ignore_errors"), override  # per-module relaxations name what, never all
        assert set(override) - {"module"} <= {"ignore_missing_imports", "disallow_subclassing_any"}, override


def test_type_ignores_are_few_and_name_their_code():
    ignores = []
    for path in sorted(SRC.rglob("*.py")):
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "type: ignore" in line:
                ignores.append((f"{path.relative_to(SRC)}:{no}", line))
    bare = [where for where, line in ignores if not re.search(r"type: ignore\[[\w-]+(, [\w-]+)*\]", line)]
    assert not bare, f"name the error code of each type: ignore: {bare}"
    assert len(ignores) <= MAX_IGNORES, [where for where, _ in ignores]


def test_the_engines_enums_hash_in_c():
    """The run loop looks its readers up by Mode and a block's reader by Phase on every
    step: an enum hashed by Enum.__hash__ is a Python call per lookup."""
    import enum

    from tooldialect.engine import kinds

    enums = [v for v in vars(kinds).values() if isinstance(v, type) and issubclass(v, enum.Enum) and list(v)]
    assert {e.__name__ for e in enums} >= {"Mode", "Phase", "Verdict", "Channel", "Reading"}
    for e in enums:
        assert e.__hash__ in (object.__hash__, int.__hash__), e.__name__
        member = next(iter(e))
        assert {member: 1}[member] == 1
