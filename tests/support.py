"""Shared test helpers: the golden-corpus format, stream runners and the stream invariants."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hypothesis import settings

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


_OPTIONS: dict[tuple[str, int], dict[str, Any]] = {}


def options(case: Case) -> dict[str, Any]:
    """The case's ``parse()`` options, built once per case: a toolset checks its schemas
    when it is built, which costs more than parsing the case (a fresh dict each call)."""
    key = (str(case.path), case.line)
    if key not in _OPTIONS:
        _OPTIONS[key] = corpus_options(case, toolsets())
    return dict(_OPTIONS[key])


def check_invariants(text: str, events: list[td.Event], batch: td.ParseResult) -> None:
    """The stream invariants of DESIGN §4, for one way of cutting ``text``."""
    problem = stream_problem(text, events, batch)
    assert problem is None, problem


# -- how long a search runs -----------------------------------------------------------------------


def long_search() -> bool:
    """Whether a longer hypothesis profile was asked for (``HYPOTHESIS_PROFILE=fuzz`` or
    ``thorough``): the contract searches then try every input they can, not a sample."""
    return os.environ.get("HYPOTHESIS_PROFILE", "default") != "default"


def budget(examples: int) -> settings:
    """Settings for a property whose examples are costly: ``examples`` of them, always the
    same ones (derandomized, so CI is reproducible) in ``make test``; the loaded profile's
    count, at random, in a long search."""
    return settings() if long_search() else settings(max_examples=examples, derandomize=True)


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


def nested(depth: int, leaf: Any = 1) -> Any:
    """``leaf`` inside ``depth`` lists, built by hand: deeper than any parser would return
    it, and deeper than Python's stack, when a test asks."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value
