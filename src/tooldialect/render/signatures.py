"""Signature catalogues: a toolset written the way a model will call it.

Three styles, each the inverse of a registry-gated family's parser:

* ``pformat``: ``get_weather[0|<city>|1|<unit>]`` (the ``pformat`` family);
* ``python``: a stub ``def get_weather(city: str, unit: Literal["c", "f"] = None) -> str:``
  with the description as its docstring (the ``codecall`` family, Python spelling);
* ``typescript``: ``function get_weather(city: string, unit?: "c" | "f"): string;`` with a
  JSDoc comment (the ``codecall`` family, TypeScript spelling).

Parameters come in one order everywhere: required ones in the schema's order, then the
optional ones alphabetically — the order in which the parsers bind positional arguments
and P-Format slots (:func:`parameter_order`).  Whatever the schema holds, the output is
valid in its language: a tool whose name cannot be written there becomes a comment that
says so, parameters that cannot be named become one object argument the parser unpacks,
and every type is bounded in depth (``anyOf``/``oneOf`` included).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..errors import PolicyError
from ..pieces import piece
from ..pyliteral import PYTHON, TYPESCRIPT, is_identifier, name_pattern
from ..toolset import Tool, Toolset, parameter_order

__all__ = ["MAX_NESTING", "MAX_TYPE_DEPTH", "STYLES", "catalogue", "nesting", "parameter_order", "signature"]

#: The styles a catalogue can be written in.
STYLES = ("pformat", "python", "typescript")
#: How deep a parameter's type is spelled out; deeper parts are ``Any`` / ``unknown``.
MAX_TYPE_DEPTH = 4
#: The deepest value a writer writes: the highest ``Policy.max_depth``, so a value of any
#: call ``parse`` returns can be written back.  Deeper values are refused (a call) or
#: spelled ``Any`` / ``unknown`` (an ``enum`` or ``const`` in a signature), never walked.
MAX_NESTING = 512
_MAX_MEMBERS = 16  # object members spelled out in a TypeScript type
_SPACE = re.compile(r"\s+")
_TRIPLE_QUOTE = re.compile(r'"(?="")')
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def required_parameters(schema: Any) -> set[str]:
    order = parameter_order(schema)
    required = schema.get("required") if isinstance(schema, Mapping) else None
    return {r for r in required if r in order} if isinstance(required, list) else set()


def nesting(value: Any, limit: int = MAX_NESTING + 1) -> int:
    """How deeply lists and dicts nest in ``value``, counted up to one past ``limit`` (walked
    with a stack, not recursion: the value may be deeper than Python's stack)."""
    deepest = 0
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, depth + 1) for v in item)
        else:
            continue
        deepest = max(deepest, depth + 1)
        if deepest > limit:
            break
    return deepest


def signature(tool: Any, style: str = "pformat") -> str:
    """One tool written in ``style``: the P-Format slot signature (``f[0|<a>|1|<b>]``), a
    Python stub with its docstring, or a TypeScript declaration with its JSDoc comment.
    A tool whose name the style cannot write is a comment saying so."""
    return _writer(style)[0](_tool(tool))


def catalogue(tools: Any, style: str = "pformat") -> str:
    """Every tool of a toolset written in ``style``, in the toolset's order: P-Format
    entries (signature, description, one line per slot), Python stubs or TypeScript
    declarations, separated by a blank line."""
    write = _writer(style)[1]
    toolset = tools if isinstance(tools, Toolset) else Toolset.coerce(tools)
    entries = [write(t) for t in toolset]
    return "\n\n".join(entries) + ("\n" if entries else "")


def _writer(style: Any) -> tuple[Callable[[Tool], str], Callable[[Tool], str]]:
    got = _WRITERS.get(style) if isinstance(style, str) else None
    if got is None:
        raise PolicyError(f"unknown signature style {style!r}; use one of {', '.join(STYLES)}")
    return got


def _tool(tool: Any) -> Tool:
    if isinstance(tool, Tool):
        return tool
    if isinstance(tool, (str, bytes)) or not isinstance(tool, Mapping):
        raise PolicyError(
            "signature() takes a td.Tool or one tool object (OpenAI, Anthropic, MCP or "
            f"{{'name', 'description', 'parameters'}}), got {type(tool).__name__}"
        )
    return next(iter(Toolset.coerce([tool])))


def _one_line(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def _described(schema: Any) -> str:
    return (
        _one_line(schema.get("description", ""))
        if isinstance(schema, Mapping) and isinstance(schema.get("description"), str)
        else ""
    )


# -- P-Format ------------------------------------------------------------------------------


def _pformat(tool: Tool) -> str:
    if _name_pattern("_tagged", "BARE_NAME").fullmatch(tool.name) is None:
        return f"unsupported tool name: {json.dumps(tool.name)}"
    order = parameter_order(tool.parameters)
    return f"{tool.name}[{'|'.join(f'{i}|<{_pformat_escape(p)}>' for i, p in enumerate(order))}]"


def _pformat_entry(tool: Tool) -> str:
    head = _pformat(tool)
    if _name_pattern("_tagged", "BARE_NAME").fullmatch(tool.name) is None:
        return head
    order, props, required = _parameters(tool)
    desc = _one_line(tool.description)
    lines = [head + (f" — {desc}" if desc else "")]
    for i, p in enumerate(order):
        sub = props.get(p)
        kind = _ts_type(sub, 0)
        note = _described(sub)
        flag = ", required" if p in required else ""
        lines.append(f"    {i} {_pformat_escape(p)}: {kind}{flag}" + (f" — {note}" if note else ""))
    return "\n".join(lines)


def _pformat_escape(text: str) -> str:
    return _one_line(text).replace("\\", "\\\\").replace("|", "\\|").replace("]", "\\]")


# -- Python --------------------------------------------------------------------------------


def _parameters(tool: Tool) -> tuple[list[str], dict[str, Any], set[str]]:
    """A tool's parameters in signature order, their schemas, and the required ones."""
    order = parameter_order(tool.parameters)
    props = tool.parameters.get("properties", {}) if order else {}
    return order, props, required_parameters(tool.parameters)


def _python(tool: Tool) -> str:
    if not _py_name(tool.name):
        return f"# unsupported tool name: {json.dumps(tool.name)}"
    order, props, required = _parameters(tool)
    if all(_py_name(p) for p in order):
        params = [f"{p}: {_py_type(props.get(p), 0)}" + ("" if p in required else " = None") for p in order]
        head = f"def {tool.name}({', '.join(params)}) -> str:"
        keys = order
    else:
        # names Python cannot spell: one positional dict the parser unpacks (f({"a-b": 1}))
        head = f"def {tool.name}(args: dict, /) -> str:"
        keys = []
    doc: list[str] = []
    desc = tool.description.strip()
    if desc:
        doc.extend(line.rstrip() for line in desc.splitlines())
    if keys:
        notes = [(p, _described(props.get(p))) for p in keys]
        if any(n for _, n in notes):
            doc += ["", "Args:"] if doc else ["Args:"]
            doc += [f"    {p}: {n}" if n else f"    {p}" for p, n in notes]
    elif order:
        doc += [""] if doc else []
        doc.append("Pass one dict whose keys are the parameters:")
        for p in order:
            note = _described(props.get(p))
            flag = " (required)" if p in required else ""
            doc.append(f"    {json.dumps(p)}: {_py_type(props.get(p), 0)}{flag}" + (f" — {note}" if note else ""))
    if not doc:
        return head + " ..."
    body = "\n".join(f"    {line}" if line else "" for line in doc)
    return f'{head}\n    """{_docstring(body.lstrip())}\n    """'


def _docstring(text: str) -> str:
    """Text safe inside a triple-quoted (non-raw) docstring."""
    text = _TRIPLE_QUOTE.sub('\\\\"', text.replace("\\", "\\\\"))  # no \"\"\" inside
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _py_name(name: str) -> bool:
    return is_identifier(name, PYTHON)


def _py_type(schema: Any, depth: int) -> str:
    parts = _types(schema, depth, PYTHON)
    return " | ".join(dict.fromkeys(parts)) if parts else "Any"


class _Written(str):
    """Text of a literal already spelled (a bracket, a separator, a key), as opposed to a
    value still to write."""


def _py_literal(value: Any) -> str:
    """``value`` as a Python literal, written with a stack of its own rather than by
    recursion, so a value as deep as the writers allow costs no Python stack."""
    out: list[str] = []
    todo: list[Any] = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, _Written):
            out.append(item)
        elif isinstance(item, list):
            todo += reversed(_members("[", (("", v) for v in item), "]"))
        elif isinstance(item, Mapping):
            todo += reversed(_members("{", ((f"{json.dumps(str(k))}: ", v) for k, v in item.items()), "}"))
        else:
            out.append(_py_scalar(item))
    return "".join(out)


def _members(open_: str, members: Iterable[tuple[str, Any]], close: str) -> list[Any]:
    """A container in writing order: brackets, separators and keys as written text, each
    member's value still to write."""
    parts: list[Any] = [_Written(open_)]
    for i, (head, value) in enumerate(members):
        parts += [_Written((", " if i else "") + head), value]
    parts.append(_Written(close))
    return parts


def _py_scalar(value: Any) -> str:
    if value is True:
        return "True"
    if value is False:
        return "False"
    if value is None:
        return "None"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))


# -- TypeScript ----------------------------------------------------------------------------


def _typescript(tool: Tool) -> str:
    if not _ts_name(tool.name):
        return f"// unsupported tool name: {json.dumps(tool.name)}"
    order, props, required = _parameters(tool)
    if all(_ts_name(p) for p in order):
        params = [f"{p}{'' if p in required else '?'}: {_ts_type(props.get(p), 0)}" for p in order]
        keys = order
    else:
        # names TypeScript cannot spell as parameters: one object argument (f({"a-b": 1}))
        params = [f"args: {_ts_object(tool.parameters, 0)}"]
        keys = []
    head = f"function {tool.name}({', '.join(params)}): string;"
    doc = [line.rstrip() for line in tool.description.strip().splitlines()] if tool.description.strip() else []
    for p in keys:
        note = _described(props.get(p))
        if note:
            doc.append(f"@param {p} {note}")
    if not keys:
        for p in order:
            note = _described(props.get(p))
            if note:
                doc.append(f"@param args.{_ts_key(p)} {note}")
    if not doc:
        return head
    lines = "\n".join(f" * {line}".rstrip() for line in doc)
    return f"/**\n{lines.replace('*/', '*' + chr(92) + '/')}\n */\n{head}"


def _ts_name(name: str) -> bool:
    return is_identifier(name, TYPESCRIPT)


def _ts_key(name: str) -> str:
    """An object key: bare when it is an identifier name (reserved words included), else quoted."""
    return name if name_pattern().fullmatch(name) else json.dumps(name, ensure_ascii=False)


def _ts_type(schema: Any, depth: int) -> str:
    parts = list(dict.fromkeys(_types(schema, depth, TYPESCRIPT)))
    return " | ".join(parts) if parts else "unknown"


def _ts_object(schema: Any, depth: int) -> str:
    order = parameter_order(schema)
    if not order or depth >= MAX_TYPE_DEPTH:
        return "object"
    props = schema["properties"]
    required = required_parameters(schema)
    members = [
        f"{_ts_key(p)}{'' if p in required else '?'}: {_ts_type(props.get(p), depth + 1)}" for p in order[:_MAX_MEMBERS]
    ]
    if len(order) > _MAX_MEMBERS:
        members.append("[key: string]: unknown")
    return "{" + ", ".join(members) + "}"


def _ts_literal(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


# -- types, shared ---------------------------------------------------------------------------

_NAMES = {
    PYTHON: {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"},
    TYPESCRIPT: {"string": "string", "integer": "number", "number": "number", "boolean": "boolean", "null": "null"},
}


def _types(schema: Any, depth: int, lang: str) -> list[str]:
    """The alternatives of a schema's type, spelled in ``lang`` (empty: anything)."""
    if not isinstance(schema, Mapping) or depth > MAX_TYPE_DEPTH:
        return []
    literal = _py_literal if lang == PYTHON else _ts_literal
    if nesting(schema.get("enum")) > MAX_NESTING + 1 or nesting(schema.get("const")) > MAX_NESTING:
        return []  # a value too deep to spell (the enum's own list is a level): anything
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        values = [literal(v) for v in schema["enum"]]
        return [f"Literal[{', '.join(values)}]"] if lang == PYTHON else values
    if "const" in schema:
        value = literal(schema["const"])
        return [f"Literal[{value}]"] if lang == PYTHON else [value]
    out: list[str] = []
    for key in ("anyOf", "oneOf"):
        alts = schema.get(key)
        if isinstance(alts, list) and alts:
            for alt in alts:  # each variant one level deeper: nested combinators are bounded too
                got = _types(alt, depth + 1, lang)
                if not got:
                    return []  # one variant is anything: so is the whole
                out.extend(got)
            return _nullable(schema, out, lang)
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and all_of:
        return _nullable(schema, _types(all_of[0], depth + 1, lang), lang)
    kinds = schema.get("type")
    if isinstance(kinds, str):
        kinds = [kinds]
    elif not isinstance(kinds, list):
        kinds = ["object"] if "properties" in schema else ["array"] if "items" in schema else []
    for kind in kinds:
        if not isinstance(kind, str):
            continue
        if kind in _NAMES[lang]:
            out.append(_NAMES[lang][kind])
        elif kind == "array":
            item = (
                _py_type(schema.get("items"), depth + 1) if lang == PYTHON else _ts_type(schema.get("items"), depth + 1)
            )
            if lang == PYTHON:
                out.append(f"list[{item}]")
            else:
                out.append(f"Array<{item}>" if " " in item or "|" in item else f"{item}[]")
        elif kind == "object":
            out.append("dict" if lang == PYTHON else _ts_object(schema, depth))
        else:
            return []
    return _nullable(schema, out, lang)


def _nullable(schema: Mapping[str, Any], out: list[str], lang: str) -> list[str]:
    if out and schema.get("nullable") is True:
        out.append(_NAMES[lang]["null"])
    return out


_PATTERNS: dict[tuple[str, str], re.Pattern[str]] = {}


def _name_pattern(piece_name: str, terminal: str) -> re.Pattern[str]:
    """A name terminal of a shared grammar piece: the grammar says what a name is."""
    key = (piece_name, terminal)
    got = _PATTERNS.get(key)
    if got is None:
        term = piece(piece_name)[terminal]
        assert term.pattern is not None
        got = term.pattern.regex
        _PATTERNS[key] = got
    return got


_WRITERS: dict[str, tuple[Callable[[Tool], str], Callable[[Tool], str]]] = {
    "pformat": (_pformat, _pformat_entry),
    "python": (_python, _python),
    "typescript": (_typescript, _typescript),
}
