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


# -- tiers: how much of each sweep a run tries ------------------------------------------------------
#
# ``make test`` runs the quick tier (``--tier=quick``, pytest's default here): every test
# function, with a sample of the parameters marked ``exhaustive``, fewer hypothesis examples
# and smaller inputs where a test sweeps.  ``make check`` runs the full tier: every parameter,
# every example the long-standing counts ask for, full-size inputs.  ``HYPOTHESIS_PROFILE=fuzz``
# (or ``thorough``) is a long search: the full tier, with the profile's own example counts.

TIERS = ("quick", "full")
_TIER = "quick"
#: (module path, test function) of every test collected, before the quick tier samples them.
COLLECTED: set[tuple[Path, str]] = set()
#: How many times fewer hypothesis examples a quick run tries than a full one.
QUICK_EXAMPLES = 6


def set_tier(name: str) -> None:
    global _TIER
    if name not in TIERS:
        raise ValueError(f"--tier is one of {', '.join(TIERS)}, not {name!r}")
    _TIER = name


def long_search() -> bool:
    """Whether a longer hypothesis profile was asked for (``HYPOTHESIS_PROFILE=fuzz`` or
    ``thorough``): the contract searches then try every input they can, not a sample."""
    return os.environ.get("HYPOTHESIS_PROFILE", "default") not in ("default", "quick")


def full_tier() -> bool:
    """Whether this run sweeps everything (``make check``, or a long search)."""
    return _TIER == "full" or long_search()


def sweep(full: Any, quick: Any) -> Any:
    """``full`` in the full tier, ``quick`` in the quick one: how much of a sweep to try."""
    return full if full_tier() else quick


def budget(examples: int, **kw: Any) -> settings:
    """Settings for a property of ``examples`` examples, always the same ones (derandomized,
    so a run that fails fails again): all of them in the full tier, a sixth (at least five)
    in the quick one, and the loaded profile's count, at random, in a long search."""
    if long_search():
        return settings(**kw)
    n = examples if full_tier() else max(5, examples // QUICK_EXAMPLES)
    return settings(max_examples=n, derandomize=True, **kw)


# -- the project's own files -------------------------------------------------------------------------


def pyproject() -> dict[str, Any]:
    """pyproject.toml, parsed (tomllib; tomli on Python 3.10, else the test skips)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import pytest

        tomllib = pytest.importorskip("tomli", reason="reading pyproject.toml on Python 3.10 needs tomli")
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


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


#: A NexusRaven-style grammar (``Call: get_time(tz='UTC')``), gated by the toolset.
NEXUSRAVEN = """\
// family: nexusraven
// title: NexusRaven Call: lines with Python keyword arguments
// models: Nexusflow/NexusRaven-*
// checked against: an invented copy of the NexusRaven prompt format
// gated: toolset
// write call: CALL_LINE " " name:PY_NAME "(" arguments:keywords ")"

%import ._json (WS)
%import ._pyliteral (py_value, _py_atom, py_name, py_string, py_template, py_number, py_op, py_list, py_tuple, py_dict, py_entry, _py_items, _py_item, py_kwarg, PY_STRING, BACKTICK_STRING, PY_NAME, PY_NUMBER, PY_OP, COMMA)
%ignore WS

start: CALL_LINE call
call: name "(" args? ")"
args: _py_items
name: PY_NAME

CALL_LINE: "Call:"
"""
