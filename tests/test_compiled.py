"""One source, two builds: the default install is pure Python, and ``make compiled`` builds a
platform wheel whose hot modules mypyc compiled from the same source.  ``make check`` installs
that wheel in a new venv and runs the golden corpus four ways, the conformance vectors and the
differential tests against it (``TOOLDIALECT_EXPECT_COMPILED=1``): the same events, or CI fails.
"""

from __future__ import annotations

import importlib
import os

from support import ROOT, pyproject

import tooldialect as td

PYPROJECT = pyproject()
HOOK = PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["hooks"]["mypyc"]
EXPECT_COMPILED = os.environ.get("TOOLDIALECT_EXPECT_COMPILED") == "1"


def _module(path: str) -> str:
    """``src/tooldialect/engine/core.py`` -> ``tooldialect.engine.core``."""
    return path.removeprefix("src/").removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def test_the_flag_says_which_build_is_imported():
    assert td.compiled is EXPECT_COMPILED


def test_every_listed_module_is_compiled_in_the_compiled_build_only():
    listed = sorted(
        {p.relative_to(ROOT).as_posix() for pattern in HOOK["include"] for p in ROOT.glob(pattern.lstrip("/"))}
    )
    assert len(listed) >= len(HOOK["include"])
    for path in listed:
        mod = importlib.import_module(_module(path))
        assert mod.__file__ is not None
        native = not mod.__file__.endswith(".py")
        assert native is EXPECT_COMPILED, (path, mod.__file__)


def test_the_compiled_build_is_off_by_default_and_checked_strictly():
    assert HOOK["enable-by-default"] is False  # pip install gives the pure build
    assert "--strict" in HOOK["mypy-args"]
    # what mypyc compiles, mypy --strict checks in `make lint` too
    checked = PYPROJECT["tool"]["mypy"]["files"]
    unchecked = [p for p in HOOK["include"] if not any(p == f or p.startswith(f.rstrip("/") + "/") for f in checked)]
    assert not unchecked, unchecked


def test_the_records_a_call_makes_are_built_by_compiled_code():
    """A record whose ``__init__`` the ``dataclasses`` module wrote would run Python code
    for every call even in the compiled build (decision 220)."""
    import types

    from tooldialect import records
    from tooldialect.engine import cand

    classes = [records.RawCall, records.Issue, cand.TextValue, cand.ArgStream, cand.Resyncing, cand.Failed]
    interpreted = [c.__name__ for c in classes if isinstance(c.__init__, types.FunctionType)]
    assert interpreted == ([] if EXPECT_COMPILED else [c.__name__ for c in classes])


def test_tokens_and_nodes_are_left_out_of_the_cycle_collector_in_the_compiled_build():
    """A parse tree holds no reference cycle (``test_a_reply_leaves_nothing_for_the_garbage_
    collector`` checks it in the pure build, which tracks tokens and nodes), so the compiled
    build declares them acyclic: the collector neither counts nor walks them (decision 226).
    A node's list of children is still a tracked list."""
    import gc

    from tooldialect.lalr import Node, Tok

    tok = Tok("A", "a", 0, 1)
    node = Node("n", [tok], 0, 1)
    assert (gc.is_tracked(tok), gc.is_tracked(node)) == (not EXPECT_COMPILED, not EXPECT_COMPILED)
    assert gc.is_tracked(node.children)
