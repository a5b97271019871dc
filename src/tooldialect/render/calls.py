"""A call written back in a registry-gated body syntax: the inverse of its parser.

``render_call(tool, arguments, style)`` writes the body that goes inside ``<tool_call>``:
``f[0|v0|1|v1]`` (P-Format), ``f(a="x", b=1)`` (Python) or ``f({a: "x", b: 1})``
(TypeScript).  Parsing the result against a toolset that offers ``tool`` gives back the
same arguments (property-tested), within what each syntax can say: P-Format has no
empty or all-blank string (an empty slot retracts it), and a top-level ``None`` in a code
call means "not given".
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import PolicyError
from ..toolset import Tool
from .signatures import STYLES, _name_pattern, _py_literal, _py_name, _tool, _ts_key, _ts_name, parameter_order

__all__ = ["render_call"]


def render_call(tool: Any, arguments: Mapping[str, Any], style: str = "pformat") -> str:
    """The body of a call to ``tool`` (a ``td.Tool`` or tool object) with ``arguments``."""
    t = _tool(tool)
    if not isinstance(arguments, Mapping):
        raise PolicyError(f"arguments must be a JSON object (a dict), got {type(arguments).__name__}")
    writer = _WRITERS.get(style) if isinstance(style, str) else None
    if writer is None:
        raise PolicyError(f"unknown call style {style!r}; use one of {', '.join(STYLES)}")
    return writer(t, dict(arguments))


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
