"""The samples ``grammar check`` reads back: calls of a few argument shapes, and the calls a
corpus expects, written by the family's own ``// write`` lines and parsed with the family
alone.  Every call must come back as it was written: its name, its arguments, nothing left
as text and no diagnostic.

A grammar can compile, name its rules as the reader wants and still read the wrong thing: a
terminal under ``arguments`` that swallows the closer (``ARGS_BODY: /\\{[\\s\\S]{0,500}\\}/``)
reads ``{}``, and a second call disappears into the first.  No rule name says that; reading
back what the family writes does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from . import shape as sh
from .coerce import json_type
from .compiled_grammar import CompiledGrammar
from .errors import GrammarError, PolicyError
from .models import ParseResult
from .stream import parse
from .toolset import Tool, Toolset

__all__ = ["SAMPLES", "check_samples", "read_back"]

#: The calls every grammar writes and reads back: no arguments, a string and a number,
#: nested values, quotes and brackets in a string, and two calls in one reply.
SAMPLES: tuple[tuple[dict[str, Any], ...], ...] = (
    ({"name": "get_time", "arguments": {}},),
    ({"name": "get_weather", "arguments": {"city": "Paris", "days": 3}},),
    (
        {
            "name": "search_notes",
            "arguments": {
                "query": 'say "hi" {now}, [then] (go)',
                "tags": ["a", "b"],
                "options": {"exact": True, "ratio": 0.5, "since": None},
            },
        },
    ),
    ({"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}, {"name": "get_time", "arguments": {}}),
)
#: At most this many replies of a corpus are written and read back (its cases run whole in
#: the corpus check).
MAX_CORPUS_REPLIES = 24


def check_samples(family: str, compiled: CompiledGrammar, cases: Sequence[Any] = ()) -> tuple[bool, str]:
    """``grammar check``'s ``samples`` line for a compiled grammar (the family must be in the
    registry as ``family``): whether every sample, and the calls of every ``cases`` reply (corpus
    cases with an expectation), read back through each of its spellings, and what it found."""
    from .render.family import compile_writer

    try:
        variants = [None, *(name for name, _globs in compiled.header.variants[1:])]
        writers = [compile_writer(compiled, variant) for variant in variants]
    except GrammarError as exc:
        return False, f"not run: {exc}"
    expected = [
        [{"name": c["name"], "arguments": c["arguments"], "id": c.get("id")} for c in case.expected["calls"]]
        for case in cases
        if case.expected and case.expected.get("calls")
    ]
    problems = read_back(family, writers, expected)
    if problems:
        return False, "\n".join(problems)
    spellings = f" in {len(writers)} spellings" if len(writers) > 1 else ""
    corpus = f" and the calls of {min(len(expected), MAX_CORPUS_REPLIES)} corpus replies" if expected else ""
    return True, f"{len(SAMPLES)} sample replies{corpus} written{spellings} and read back as written"


def read_back(family: str, writers: Sequence[Any], corpus_calls: Iterable[list[dict[str, Any]]] = ()) -> list[str]:
    """What does not read back as written, one line each (empty: every sample did), for each
    writer (the family's spellings) over :data:`SAMPLES` and ``corpus_calls`` (the calls of
    each corpus reply).  A sample a spelling cannot say (``PolicyError``) is skipped; a
    spelling that can say none of them is a problem too."""
    replies = [list(calls) for calls in SAMPLES] + list(corpus_calls)[:MAX_CORPUS_REPLIES]
    problems = []
    for writer in writers:
        written = 0
        refused: list[str] = []
        spelling = f" (variant {writer.shape.variant})" if writer.shape.variant else ""
        for calls in replies:
            if len(calls) > 1 and not writer.shape.parallel:
                continue
            calls = _with_ids(calls, writer.shape)
            tools = _toolset(calls)
            try:
                text = writer.render(calls, tools)
            except PolicyError as exc:
                refused.append(str(exc))
                continue
            written += 1
            why = _differs(calls, parse(text, tools=tools, families=[family]), writer.shape)
            if why is not None:
                problems.append(f"{_say(calls)}{spelling}, written as {text!r}, {why}")
        if not written:
            problems.append(f"no sample could be written{spelling}: {refused[0] if refused else 'none applies'}")
    return problems


def _with_ids(calls: list[dict[str, Any]], shape: sh.Shape) -> list[dict[str, Any]]:
    """The calls with an id each where the family writes the call's id, else without one."""
    writes_id = any(isinstance(p, sh.Id) for p in shape.call)
    out = []
    for i, call in enumerate(calls):
        call = {"name": call["name"], "arguments": call["arguments"], "id": call.get("id")}
        if not writes_id:
            call["id"] = None
        elif not call["id"]:
            call["id"] = f"a{i:08d}"  # nine letters and digits: the ids Mistral writes
        out.append(call)
    return out


def _toolset(calls: list[dict[str, Any]]) -> Toolset:
    """A tool per name whose schema types each argument as written (text-valued families read
    values by the schema; registry-gated ones read only the tools offered)."""
    properties: dict[str, dict[str, Any]] = {}
    for call in calls:
        props = properties.setdefault(call["name"], {})
        for key, value in call["arguments"].items():
            props.setdefault(key, {"type": json_type(value)})
    return Toolset([Tool(name=name, parameters={"type": "object", "properties": p}) for name, p in properties.items()])


def _differs(calls: list[dict[str, Any]], got: ParseResult, shape: sh.Shape) -> str | None:
    """How what was read differs from the calls written, or None."""
    if got.diagnostics:
        first = got.diagnostics[0]
        reason = str(first.detail.get("reason") or "")
        reason = reason if len(reason) <= 160 else reason[:157] + "..."
        return f"reads back with a diagnostic: {first.kind}" + (f" ({reason})" if reason else "")
    read = [{"name": c.name, "arguments": c.arguments} for c in got.calls]
    if len(read) != len(calls):
        return f"reads back {len(read)} call{'s' * (len(read) != 1)} ({_say(read) or 'none'}), not {len(calls)}"
    for want, call in zip(calls, got.calls):
        if call.name != want["name"] or not _same(call.arguments, want["arguments"]):
            return f"reads back {_say([{'name': call.name, 'arguments': call.arguments}])}"
        if want["id"] is not None and call.id != want["id"]:
            return f"reads back the id {call.id!r}, not {want['id']!r}"
    # what may be left: the separators between per-call blocks (a separator that is a marker,
    # Functionary's ``>>>``, is read with the calls), white space
    if (got.text.replace(shape.sep, "") if shape.sep.strip() else got.text).strip():
        return f"leaves {got.text!r} as text"
    return None


def _say(calls: Iterable[dict[str, Any]]) -> str:
    return "; ".join(f"{c['name']} {json.dumps(c['arguments'], ensure_ascii=False)}" for c in calls)


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values, types included (1 equals 1.0; True is not 1)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b
