"""Shared test helpers: the golden-corpus format, stream runners and the stream invariants."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import tooldialect as td
from tooldialect.corpus import (  # noqa: F401 - re-exported for the tests
    Case,
    cuts_for,
    read_corpus,
    run_stream,
    stream_problem,
    summary,
    write_corpus,
)
from tooldialect.corpus import options as corpus_options

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"

# -- corpus files (the format and the runner live in tooldialect.corpus) ----------------------


def all_cases() -> list[Case]:
    cases = []
    for path in sorted(CORPUS.glob("*.txt")):
        cases.extend(read_corpus(path))
    return cases


_TOOLSETS: dict[str, Any] | None = None


def toolsets() -> dict[str, Any]:
    global _TOOLSETS
    if _TOOLSETS is None:
        _TOOLSETS = json.loads((CORPUS / "_tools.json").read_text(encoding="utf-8"))
    return _TOOLSETS


def options(case: Case) -> dict[str, Any]:
    return corpus_options(case, toolsets())


def check_invariants(text: str, events: list[td.Event], batch: td.ParseResult) -> None:
    """The stream invariants of DESIGN §4, for one way of cutting ``text``."""
    problem = stream_problem(text, events, batch)
    assert problem is None, problem


# -- counting work -----------------------------------------------------------------------------


def count_calls(fn) -> int:
    """How many Python and C function calls ``fn()`` makes: a deterministic measure of work
    (tests compare it between input sizes; they never time anything)."""
    import sys

    n = 0

    def counter(frame, event, arg):
        nonlocal n
        if event in ("call", "c_call"):
            n += 1

    sys.setprofile(counter)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return n


def tool(name: str, props: dict, required: list[str] | None = None, description: str = "") -> td.Tool:
    """A tool with an object schema of ``props`` (and ``required`` when given)."""
    schema: dict = {"type": "object", "properties": props}
    if required is not None:
        schema["required"] = required
    return td.Tool(name=name, description=description, parameters=schema)
