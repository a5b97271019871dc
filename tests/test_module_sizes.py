"""The package stays readable in pieces (docs/engine.md): no module of ``src/tooldialect``
over 600 lines and no function over 80, so that each unit can be read, and tested, on
its own."""

from __future__ import annotations

import ast

from support import ROOT

SRC = ROOT / "src" / "tooldialect"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def test_no_module_is_over_600_lines():
    long = {
        str(p.relative_to(SRC)): n
        for p in sorted(SRC.rglob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"split these modules (lines): {long}"


def test_no_function_is_over_80_lines():
    long = {}
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(SRC)}:{node.name}"] = size
    assert not long, f"split these functions (lines): {long}"
