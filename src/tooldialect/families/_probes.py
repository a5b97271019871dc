"""The probe calls :func:`tooldialect.families.from_template` renders through a chat template,
the tools they call, and the judge that says whether a reading gave a probe back exactly.

Each probe is one assistant turn of a shape templates treat differently: one call, two
calls, a string holding quotes, a newline and non-ASCII text, nested objects and lists,
numbers and a boolean, an empty argument list, and prose before a call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..models import ParseResult

__all__ = ["PROBES", "PROBE_TOOLS", "USER", "Probe", "judge", "message"]

#: The user turn every probe answers.
USER = "What is the weather in Paris, and what else is on my list?"


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": required}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


_STR = {"type": "string"}
_INT = {"type": "integer"}

#: The tools the probes call, in OpenAI's shape (what servers and transformers hand a template).
PROBE_TOOLS: list[dict[str, Any]] = [
    _tool("get_weather", "Current weather for a city.", {"city": _STR, "days": _INT}, ["city"]),
    _tool("search_files", "Find files whose names match a pattern.", {"pattern": _STR, "path": _STR}, ["pattern"]),
    _tool("write_note", "Save a note.", {"text": _STR}, ["text"]),
    _tool(
        "create_event",
        "Put an event in the calendar.",
        {
            "event": {
                "type": "object",
                "properties": {
                    "title": _STR,
                    "attendees": {"type": "array", "items": _STR},
                    "place": {"type": "object", "properties": {"room": _STR, "floor": _INT}},
                },
            }
        },
        ["event"],
    ),
    _tool(
        "set_values",
        "Set numeric settings.",
        {"count": _INT, "ratio": {"type": "number"}, "offset": _INT, "enabled": {"type": "boolean"}},
        ["count"],
    ),
    _tool("list_tasks", "List the open tasks.", {}, []),
]


@dataclass(frozen=True)
class Probe:
    """An assistant turn: optional prose, then calls as (name, arguments)."""

    name: str
    calls: tuple[tuple[str, dict[str, Any]], ...]
    content: str = ""


PROBES: tuple[Probe, ...] = (
    Probe("one_call", (("get_weather", {"city": "Paris", "days": 3}),)),
    Probe(
        "two_calls",
        (("get_weather", {"city": "Tokyo", "days": 1}), ("search_files", {"pattern": "*.py", "path": "src"})),
    ),
    Probe("quoted_string", (("write_note", {"text": 'She said "hi",\nthen left for the café.'}),)),
    Probe(
        "nested",
        (
            (
                "create_event",
                {"event": {"title": "Review", "attendees": ["ana", "bo"], "place": {"room": "B2", "floor": 3}}},
            ),
        ),
    ),
    Probe("numbers", (("set_values", {"count": 42, "ratio": 0.5, "offset": -7, "enabled": True}),)),
    Probe("no_arguments", (("list_tasks", {}),)),
    Probe("with_text", (("get_weather", {"city": "Berlin", "days": 2}),), "Let me look that up."),
)


def message(probe: Probe, *, arguments: str, ids: str, empty: str | None = None) -> dict[str, Any]:
    """The probe as an assistant message in OpenAI's shape, its arguments a mapping
    (``arguments="object"``) or JSON text (``"string"``), its ids nine letters and digits
    (``ids="plain"``, as Mistral's templates demand) or ``functions.NAME:INDEX`` (``"functions"``,
    as Kimi K2's template writes in place of the name); without prose its content is
    ``empty`` (None, as clients send it, or ``""`` for a template that needs a string)."""
    calls = []
    for i, (name, args) in enumerate(probe.calls):
        call_id = f"call{i:05d}" if ids == "plain" else f"functions.{name}:{i}"
        value: Any = json.dumps(args, ensure_ascii=False) if arguments == "string" else args
        calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": value}})
    return {"role": "assistant", "content": probe.content or empty, "tool_calls": calls}


def rendered_calls(probe: Probe, turn: str) -> tuple[tuple[str, dict[str, Any]], ...]:
    """The probe's calls the turn shows (a template may write fewer than it was given)."""
    return tuple(call for call in probe.calls if call[0] in turn)


def judge(probe: Probe, turn: str, result: ParseResult) -> str | None:
    """None when ``result`` gives the probe back exactly: the calls the turn shows, in order,
    with their arguments, no diagnostic, and no visible text but the probe's own prose (which
    a template may also put in its reasoning channel); else what differs."""
    want = rendered_calls(probe, turn)
    got = [(c.name, c.arguments) for c in result.calls]
    if len(got) != len(want):
        return f"read {len(got)} call(s) of {len(want)}"
    for i, ((name, args), (got_name, got_args)) in enumerate(zip(want, got)):
        if got_name != name:
            return f"call {i + 1}: read the name {got_name!r}, not {name!r}"
        if got_args != args:
            return f"call {i + 1}: read the arguments {json.dumps(got_args, ensure_ascii=False)[:200]}"
    if result.diagnostics:
        first = result.diagnostics[0]
        return f"diagnostic {first.kind}: {first.detail}"[:300]
    prose = probe.content if probe.content and probe.content in turn else ""
    text = result.text.strip()
    if text not in ("", prose):
        return f"left visible text {text[:200]!r}"
    if prose and prose not in result.text and prose not in result.reasoning:
        return f"lost the text {prose!r}"
    return None
