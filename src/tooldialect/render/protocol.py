"""Protocol instruction blocks: what a model is told about calling tools, per dialect.

    td.render.instructions(tools, style="xml")                       # block + catalogue
    td.render.instructions(tools, style="pformat", tool_choice={"name": "search"})
    td.render.json_catalogue(tools)                                  # full JSON schemas

A block says what to write, where, and shows one example; the example is written by the
same renderer the dialect uses for calls, so it is always a call the parser reads.  The
catalogue follows (JSON schemas for ``xml``, signatures for the others), then a line for a
forced ``tool_choice``.  Everything written here is byte-stable for a given toolset (JSON
with sorted keys), so a prompt prefix can be cached.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import PolicyError
from ..pieces import piece
from ..toolset import Tool, Toolset
from .calls import render_call
from .signatures import catalogue as signature_catalogue
from .tool_results import spelling

__all__ = ["STYLES", "TOOL_CHOICES", "catalogue_for", "check_tool_choice", "instructions", "json_catalogue", "tagged"]

#: Styles of instruction block: the four text dialects and native tool calling.
STYLES = ("xml", "pformat", "python", "typescript", "native")
#: The string values of ``tool_choice``; a forced tool is ``{"name": TOOL}``.
TOOL_CHOICES = ("auto", "required", "none")

_EXAMPLE_TOOL = Tool(
    name="get_weather",
    parameters={
        "type": "object",
        "properties": {"location": {"type": "string"}, "unit": {"type": "string", "enum": ["metric", "imperial"]}},
        "required": ["location"],
    },
)
_EXAMPLE_ARGUMENTS = {"location": "London", "unit": "metric"}


def json_dumps(value: Any) -> str:
    """JSON as the library writes it into prompts: sorted keys, one stable layout."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)


def json_catalogue(tools: Any) -> str:
    """One line per tool, in the toolset's order: its name, description (when it has one)
    and the full JSON Schema of its arguments, as JSON with sorted keys."""
    toolset = Toolset.coerce(tools)
    lines = []
    for tool in toolset:
        entry: dict[str, Any] = {"name": tool.name, "parameters": tool.parameters}
        if tool.description:
            entry["description"] = tool.description
        lines.append(json_dumps(entry))
    return "".join(line + "\n" for line in lines)


def tagged(body: str) -> str:
    """A call body inside the tag the text dialects write, on lines of its own."""
    terms = piece("_tagged")
    open_, close = (terms[n].pattern.literal for n in ("CANONICAL_TOOL_CALL_OPEN", "CANONICAL_TOOL_CALL_CLOSE"))  # type: ignore[union-attr]
    return f"{open_}\n{body}\n{close}"


def json_call(name: str, arguments_json: str) -> str:
    """The JSON body every text dialect reads: ``{"arguments": …, "name": …}``, keys sorted,
    ``arguments_json`` spliced in as given (the caller checked it is one JSON object)."""
    return f'{{"arguments": {arguments_json}, "name": {json_dumps(name)}}}'


def check_tool_choice(choice: Any, names: tuple[str, ...] | list[str]) -> str | dict[str, str]:
    """``tool_choice`` checked against the offered names: ``"auto" | "required" | "none"``
    or ``{"name": TOOL}`` (a dict, so a tool called ``required`` is never ambiguous;
    OpenAI's ``{"type": "function", "function": {"name": TOOL}}`` is read the same)."""
    if isinstance(choice, str):
        if choice not in TOOL_CHOICES:
            raise PolicyError(
                f"tool_choice must be 'auto', 'required', 'none' or {{'name': TOOL}}, got {choice!r}"
                + (f"; to force the tool {choice!r} pass {{'name': {choice!r}}}" if choice in names else "")
            )
        if choice == "required" and not names:
            raise PolicyError("tool_choice 'required' needs at least one tool")
        return choice
    if isinstance(choice, Mapping) and choice.get("type") == "function" and isinstance(choice.get("function"), Mapping):
        choice = choice["function"]  # OpenAI's spelling of the same: {"type": "function", "function": {"name": …}}
    if isinstance(choice, Mapping) and set(choice) == {"name"} and isinstance(choice["name"], str):
        if choice["name"] not in names:
            raise PolicyError(f"tool_choice names {choice['name']!r}, which is not among the tools offered")
        return {"name": choice["name"]}
    raise PolicyError(f"tool_choice must be 'auto', 'required', 'none' or {{'name': TOOL}}, got {choice!r}")


def _choice_line(choice: str | dict[str, str]) -> str | None:
    if choice == "required":
        return "In this reply you must call at least one tool."
    if choice == "none":
        return "In this reply do not call any tool: answer in text."
    if isinstance(choice, dict):
        return f"In this reply you must call the tool {choice['name']}."
    return None


def instructions(
    tools: Any,
    *,
    style: str,
    tool_choice: Any = "auto",
    host_renders_catalogue: bool = False,
    turn_tools: Any = (),
) -> str:
    """The tool section of a system prompt in ``style``: the protocol block, the catalogue
    of ``tools`` and ``turn_tools``, and a line for a forced ``tool_choice``.

    ``host_renders_catalogue``: the host's own prompt already holds the block and the
    catalogue of ``tools``; only what it could not know is written — the catalogue of
    ``turn_tools`` (tools made for this turn, such as a structured-output tool) and the
    ``tool_choice`` line.  Native tool calling carries specs and tool choice in the
    request, so its block is behavioural only.  No tools and nothing forced: ``""``.
    """
    if style not in STYLES:
        raise PolicyError(f"unknown instruction style {style!r}; use one of {', '.join(STYLES)}")
    if not isinstance(host_renders_catalogue, bool):
        raise PolicyError("host_renders_catalogue must be True or False")
    offered = Toolset.coerce(tools)
    extra = Toolset.coerce(turn_tools)
    every = Toolset([*offered, *extra]) if len(extra) else offered  # a name offered twice raises ToolsetError
    choice = check_tool_choice(tool_choice, every.names)
    parts: list[str] = []
    if style == "native":
        if len(every) and not host_renders_catalogue:
            parts.append(_NATIVE)
        return _join(parts)
    if not host_renders_catalogue and len(every):
        parts += [_block(style), "### Tools\n\n" + catalogue_for(every, style).rstrip("\n")]
    elif host_renders_catalogue and len(extra):
        parts.append("### Tools added for this turn\n\n" + catalogue_for(extra, style).rstrip("\n"))
    line = _choice_line(choice)
    if line:
        parts.append(line)
    return _join(parts)


def _join(parts: list[str]) -> str:
    return "\n\n".join(parts) + "\n" if parts else ""


def catalogue_for(tools: Toolset, style: str) -> str:
    """The catalogue a style writes: JSON schemas for ``xml``, signatures for the others."""
    return json_catalogue(tools) if style == "xml" else signature_catalogue(tools, style=style)


def _example(style: str) -> str:
    if style == "xml":
        return tagged(json_call(_EXAMPLE_TOOL.name, json_dumps(_EXAMPLE_ARGUMENTS)))
    return tagged(render_call(_EXAMPLE_TOOL, _EXAMPLE_ARGUMENTS, style))


def _block(style: str) -> str:
    env = spelling()
    result = f'{env.open} name="…" tool_call_id="…" status="ok|error">'
    lead, rules = _WORDING[style]
    # the tags appear only in the example: written in prose, "<tag> and </tag>" reads as a call
    text = "## Tool use\n\n" + lead + "\n\n" + _example(style) + "\n\n"
    text += "".join(f"- {rule}\n" for rule in rules)
    text += (
        f"\nEach result comes back in the next turn, after a line {env.heading.strip()}, as one {result} element per call."
        " Keep calling tools until you can give your final answer, then answer in plain text."
    )
    return text


_WORDING: dict[str, tuple[str, tuple[str, ...]]] = {
    "xml": (
        "You can call the tools listed below. To call one, write a JSON object with the tool's"
        ' "name" and its "arguments" (an object), wrapped in tags as in this example:',
        (
            "Write one tag per call; several calls in one reply are fine.",
            "Only the JSON object goes inside the tags: no prose, no code fences.",
        ),
    ),
    "pformat": (
        "You can call the tools listed below in P-Format: the tool's name, then its arguments in"
        " numbered slots, wrapped in tags as in this example:",
        (
            "A call is name[index|value|index|value…]: each index is the number of a parameter in"
            " the tool's signature below, whose <…> placeholders show where the values go.",
            "Send only the slots you mean to set; name[] is a call with no arguments.",
            "Inside a value write \\| for |, \\] for ] and \\\\ for \\.",
            "A call with an index that is missing, not a number or out of range is refused.",
            "One call per tag; several tags in one reply are fine.",
            'For nested arguments you may write a JSON object instead: {"name": …, "arguments": {…}} inside the tags.',
        ),
    ),
    "python": (
        "You can call the tools listed below by writing a Python function call, wrapped in tags as in this example:",
        (
            "Call each function as its signature below declares: keyword arguments, or positional ones in the"
            " signature's order.",
            "Values are Python literals: strings, numbers, True, False, None, lists and dicts. Leave out the"
            " optional arguments you do not need.",
            "Only calls go inside the tags: no prose, no code fences, no other statements. Several calls: one per"
            " line, or one tag each.",
        ),
    ),
    "typescript": (
        "You can call the tools listed below by writing a TypeScript function call with one object whose keys"
        " are the parameter names, wrapped in tags as in this example:",
        (
            "Call each function as its declaration below says; positional arguments in the declaration's order"
            " also work.",
            "Values are literals: strings, numbers, true, false, null, arrays and objects. Leave out the optional"
            " members you do not need.",
            "Only calls go inside the tags: no prose, no code fences, no other statements. Several calls: one per"
            " line, or one tag each.",
        ),
    ),
}

_NATIVE = (
    "## Tool use\n\n"
    "Call tools through the native tool-calling interface, in this same message. A short lead-in sentence"
    " is fine, but the call itself must be part of the same message: never end a turn on an announcement"
    " of what you are about to do. Do not write tool calls as text. When the results arrive, keep going"
    " until you can give your final answer."
)
