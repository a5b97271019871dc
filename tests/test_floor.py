"""benchmarks/floor.py: each floor parser finds the calls tooldialect finds in the same
replies (names, arguments, their JSON), and the text between them: otherwise it would be
a floor for less work and the ratios to it would say nothing."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

import tooldialect as td

ROOT = Path(__file__).resolve().parent.parent


def _load(name: str) -> object:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    path = list(sys.path)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = path
    return module


floor = _load("floor")


@pytest.mark.parametrize("scen", ["a", "b"])
@pytest.mark.parametrize("fam", sorted(floor.FLOORS))
def test_floor_reads_what_tooldialect_reads(fam: str, scen: str) -> None:
    tools = td.Toolset.from_openai(floor.TOOLS)
    text = floor.workload(scen, fam).text
    got = floor.floor_parser(fam, tools)(text)
    want = td.parse(text, tools=tools, families=[floor.FORMATS[fam].name])
    assert [(c.name, c.arguments, c.arguments_json) for c in got.calls] == [
        (c.name, c.arguments, c.arguments_json) for c in want.calls
    ]
    # the result parse() builds, as it builds it: no event made and folded (decisions.md 234)
    assert type(got) is td.ParseResult and (got.text, got.reasoning) == (want.text, want.reasoning)
