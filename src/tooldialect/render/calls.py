"""A call written back in a registry-gated body syntax: the inverse of its parser.

``render_call(tool, arguments, style)`` writes the body that goes inside ``<tool_call>``:
``f[0|v0|1|v1]`` (P-Format), ``f(a="x", b=1)`` (Python) or ``f({a: "x", b: 1})``
(TypeScript).  Parsing the result against a toolset that offers ``tool`` gives back the
same arguments (property-tested), within what each syntax can say: P-Format has no
empty or all-blank string (an empty slot retracts it), and a top-level ``None`` in a code
call means "not given".  Values nest at most ``MAX_NESTING`` (512) levels, the deepest any
``Policy.max_depth`` reads: every writer refuses deeper arguments before walking them.

:func:`as_call` reads a call in each shape a writer accepts (a parse's, a transcript's, a
dict); the family writers and the dialects both take calls through it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import PolicyError
from ..models import ToolCall
from ..toolset import Tool
from ..transcript import AssistantCall, decode_object
from .signatures import (
    MAX_NESTING,
    STYLES,
    _name_pattern,
    _py_literal,
    _py_name,
    _tool,
    _ts_key,
    _ts_name,
    nesting,
    parameter_order,
)

__all__ = ["as_call", "check_nesting", "render_call", "too_deep"]


def as_call(call: Any) -> tuple[str, dict[str, Any] | None, str | None]:
    """``(name, arguments, arguments_json)`` of a call in any accepted shape: a ``td.ToolCall``,
    a ``td.transcript.AssistantCall``, or ``{"name": …, "arguments": dict | JSON text}``.
    ``arguments`` is None when the JSON text is not one object; ``arguments_json`` is the
    exact text when one was given."""
    if isinstance(call, ToolCall):
        exact = call.arguments_json if decode_object(call.arguments_json) is not None else None
        return call.name, dict(call.arguments), exact
    if isinstance(call, AssistantCall):
        return call.name, decode_object(call.arguments), call.arguments
    if isinstance(call, Mapping) and isinstance(call.get("name"), str) and call["name"]:
        args = call.get("arguments", {})
        if isinstance(args, str):
            return call["name"], decode_object(args), args
        if isinstance(args, Mapping):
            return call["name"], dict(args), None
    raise PolicyError(
        "a call is a td.ToolCall, a td.transcript.AssistantCall or {'name': str, 'arguments': dict or JSON text}, "
        f"got {call!r:.80}"
    )


def render_call(tool: Any, arguments: Mapping[str, Any], style: str = "pformat") -> str:
    """The body of a call to ``tool`` (a ``td.Tool`` or tool object) with ``arguments``."""
    t = _tool(tool)
    if not isinstance(arguments, Mapping):
        raise PolicyError(f"arguments must be a JSON object (a dict), got {type(arguments).__name__}")
    writer = _WRITERS.get(style) if isinstance(style, str) else None
    if writer is None:
        raise PolicyError(f"unknown call style {style!r}; use one of {', '.join(STYLES)}")
    check_nesting(t.name, arguments)
    return writer(t, dict(arguments))


def too_deep(arguments: Mapping[str, Any]) -> bool:
    """Whether a value of ``arguments`` nests deeper than ``MAX_NESTING``: the arguments
    object is one level more, as in a call ``parse`` returns under ``max_depth=512``."""
    return nesting(arguments) > MAX_NESTING + 1


def check_nesting(name: str, arguments: Mapping[str, Any]) -> None:
    """Refuse, before any writer walks them, arguments no parser reads back: a writer that
    recursed into them would only fail later, deep in the stack."""
    if too_deep(arguments):
        raise PolicyError(
            f"the arguments of {name!r} nest deeper than {MAX_NESTING} levels: no parser reads that back; "
            "flatten the value, or pass it as a JSON string"
        )


def _pformat(tool: Tool, arguments: dict[str, Any]) -> str:
    if _name_pattern("_tagged", "BARE_NAME").fullmatch(tool.name) is None:
        raise PolicyError(f"P-Format cannot write the tool name {tool.name!r}")
    order = parameter_order(tool.parameters)
    slots = []
    for key, value in arguments.items():
        if key not in order:
            raise PolicyError(f"{key!r} is not a parameter of {tool.name!r}: P-Format has no slot for it")
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        if not text.strip():
            raise PolicyError(f"P-Format cannot write the blank value of {key!r} (an empty slot retracts it)")
        escaped = text.replace("\\", "\\\\").replace("|", "\\|").replace("]", "\\]")
        slots.append(f"{order.index(key)}|{escaped}")
    return f"{tool.name}[{'|'.join(slots)}]"


def _python(tool: Tool, arguments: dict[str, Any]) -> str:
    if not _py_name(tool.name):
        raise PolicyError(f"Python cannot write the tool name {tool.name!r}")
    if not arguments:
        return f"{tool.name}()"
    if all(_py_name(k) for k in parameter_order(tool.parameters)) and all(_py_name(k) for k in arguments):
        return f"{tool.name}({', '.join(f'{k}={_py_literal(v)}' for k, v in arguments.items())})"
    return f"{tool.name}({_py_literal(arguments)})"  # one dict, as the fallback signature asks


def _typescript(tool: Tool, arguments: dict[str, Any]) -> str:
    if not _ts_name(tool.name):
        raise PolicyError(f"TypeScript cannot write the tool name {tool.name!r}")
    if not arguments:
        return f"{tool.name}()"
    members = ", ".join(f"{_ts_key(k)}: {json.dumps(v)}" for k, v in arguments.items())
    return f"{tool.name}({{{members}}})"


_WRITERS = {"pformat": _pformat, "python": _python, "typescript": _typescript}
