"""One source, two builds: the default install is pure Python, and ``make compiled`` builds a
platform wheel whose hot modules mypyc compiled from the same source.  ``make check`` installs
that wheel in a new venv and runs the golden corpus four ways, the conformance vectors and the
differential tests against it (``TOOLDIALECT_EXPECT_COMPILED=1``): the same events, or CI fails.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
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


def _compiled_sources() -> list[Path]:
    """The source files the compiled build compiles (the hook's include globs)."""
    return sorted({p for pattern in HOOK["include"] for p in ROOT.glob(pattern.lstrip("/"))})


def test_every_listed_module_is_compiled_in_the_compiled_build_only():
    listed = [p.relative_to(ROOT).as_posix() for p in _compiled_sources()]
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


def test_what_a_reply_makes_per_block_is_left_out_of_the_cycle_collector_in_the_compiled_build():
    """No reference cycle passes through a block, a candidate or its loop watch
    (``test_a_reply_leaves_nothing_for_the_garbage_collector`` checks it in the pure
    build, which tracks them all), so the compiled build declares them acyclic: the
    collector neither counts nor walks them (decision 226).  Tokens, nodes and a call's
    records, which a parse tree may hold deeper than the interpreter's trashcan level,
    stay tracked (decision 233)."""
    import gc

    from tooldialect import records
    from tooldialect.catalog import catalog_for
    from tooldialect.engine.cand import Block, Cand
    from tooldialect.engine.kinds import Channel
    from tooldialect.engine.search import Skipping
    from tooldialect.engine.watches import LoopWatch
    from tooldialect.lalr import Node, Tok
    from tooldialect.transform import Reader

    tok = Tok("A", "a", 0, 1)
    node = Node("n", [tok], 0, 1)
    raw = records.RawCall("f", {}, "{}", None, (0, 1), "hermes")
    issue = records.Issue("malformed_block", {}, (0, 1), "m")
    watch = LoopWatch(Skipping(re.compile("<a>"), None), "<a>", 0, 3)
    cand = Cand(catalog_for(("hermes",)).grammars[0], "start", 0, False, Reader("hermes", frozenset(), 64))
    block = Block(0, 11, [cand], Channel.TEXT, False, "")
    acyclic = [watch, cand, block]
    assert [gc.is_tracked(x) for x in acyclic] == [not EXPECT_COMPILED] * len(acyclic)
    assert all(gc.is_tracked(x) for x in (tok, node, raw, issue, node.children))


def test_a_tree_deeper_than_the_trashcan_level_is_freed_safely():
    """A parse tree nested far deeper than the interpreter's trashcan level (50), read
    again and again with the collector running often: its deep nodes' deallocation is
    deferred, which needs a collector's header on every object in the tree.  The compiled
    build crashed here while tokens and nodes were acyclic."""
    import subprocess
    import sys

    code = (
        "import gc, tooldialect as td\n"
        "gc.set_threshold(50)\n"
        "tools = [{'type': 'function', 'function': {'name': 'configure',"
        " 'parameters': {'type': 'object', 'properties': {'config': {}}}}}]\n"
        "for depth in (60, 65, 200):\n"
        "    text = '<tool_call>configure(config=' + '[' * depth + '0' + ']' * depth + ')</tool_call>'\n"
        "    for _ in range(30):\n"
        "        td.parse(text, tools=tools)\n"
        "        s = td.ToolStream(tools)\n"
        "        for i in range(0, len(text), 3):\n"
        "            s.feed(text[i : i + 3])\n"
        "        s.close()\n"
        "print('ok')\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]


def test_either_build_finds_where_a_marker_may_begin_where_the_class_does():
    """``Leads`` tries the character class over ``NEAR`` characters and ``str.find`` past
    them (both builds, decision 242); the search stops at the places the class alone
    finds, before, at and past that bound."""
    from tooldialect.catalog import catalog_for
    from tooldialect.engine.search import Skipping
    from tooldialect.markerpattern import NEAR

    cat = catalog_for(("kimi_k2",))
    assert cat.leads.far
    call = "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{}"
    for gap in (0, 1, 7, 40, NEAR - 3, NEAR + 40):
        for text in ("x" * gap + call, "~ [" * gap + call, "x" * gap, "<" * gap + "x"):
            for pos in range(0, len(text), 5):
                first = cat.first_rx.search(text, pos)
                assert cat.leads.find(text, pos, len(text)) == (first.start() if first else -1)
                plain = Skipping(cat.prose, cat.first_rx).search(text, pos, len(text))
                led = Skipping(cat.prose, cat.first_rx, leads=cat.leads).search(text, pos, len(text))
                assert (led and led.span()) == (plain and plain.span()), (text[:40], pos)


def test_the_compiled_library_calls_mypycs_runtime_directly():
    """``make compiled`` builds the C with ``-fno-semantic-interposition`` (decision 245):
    the engine's calls into mypyc's runtime helpers, built into the same library, are then
    direct, and none goes through the library's PLT (readelf lists a PLT entry per
    symbol called through it)."""
    if not EXPECT_COMPILED:
        pytest.skip("the pure build has no compiled library")
    readelf = shutil.which("readelf")
    if readelf is None or not sys.platform.startswith("linux"):
        pytest.skip("reads an ELF library with readelf")
    site = Path(td.__file__).resolve().parent.parent
    # the library the compiled modules' shims imported (named by a hash of the group)
    (lib,) = {
        m.__file__
        for name, m in sys.modules.items()
        if name.endswith("__mypyc") and m.__file__ and Path(m.__file__).parent == site
    }
    relocs = subprocess.run([readelf, "-rW", lib], capture_output=True, text=True, check=True).stdout
    plt = relocs[relocs.index(".rela.plt") :] if ".rela.plt" in relocs else ""
    assert "PyObject_" in plt or "Py_" in plt  # (the interpreter's API is called through it)
    through_plt = sorted(set(re.findall(r"\bCPy\w+", plt)))
    assert not through_plt, through_plt[:10]


#: Module constants tests rebind to exercise a limit or a registry in the pure build (the
#: compiled build would not see a rebinding of a Final name): left unannotated.
REBOUND_IN_TESTS = {"_MAX_PAIRS", "MAX_PLANS", "_BUILDERS", "_READERS"}


def test_module_constants_of_compiled_modules_are_final():
    """A module-level name the compiled code reads is looked up in the module's dictionary at
    every read unless it is ``Final``, which mypyc keeps in a C static or writes in place
    (decision 247): every constant (an upper-case name bound once, at module level) of a
    compiled module is ``Final``."""
    import ast

    plain = []
    for path in _compiled_sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rebound = {n for node in ast.walk(tree) if isinstance(node, ast.Global) for n in node.names}
        bound = [
            name.id
            for node in tree.body
            for target in (node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)])
            for name in ast.walk(target or ast.Pass())
            if isinstance(name, ast.Name)
        ]
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name, final, value = node.targets[0].id, False, node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                name, final, value = node.target.id, "Final" in ast.unparse(node.annotation), node.value
            else:
                continue
            typevar = isinstance(value, ast.Call) and ast.unparse(value.func) in ("TypeVar", "NewType")
            constant = re.fullmatch(r"_?[A-Z][A-Z0-9_]*", name) and name != "__all__" and not typevar
            if constant and not final and bound.count(name) == 1 and name not in rebound | REBOUND_IN_TESTS:
                plain.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}")
    assert not plain, plain
