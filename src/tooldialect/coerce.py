"""Typing values a model wrote as text (XML parameters, GLM values, P-Format slots, code
calls) by the tool's JSON Schema.  One function for every family; docs/typing.md has
the table.

A string parameter keeps its text exactly: only the template's newline on each side is
removed (by :func:`strip_template_newlines`, which text-valued readers call).  Any other
type is read from the trimmed text, and only from a spelling that means exactly that
value: ``"02139"`` is not the integer 2139, ``"yes"`` is not a boolean, ``"inf"`` is
not a number.  A value that cannot be typed as the schema asks stays the model's string,
and validation reports it; nothing is guessed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

from .jsonscan import JsonValueError, depth_exceeds, loads_strict
from .repair import RepairFailed, repair_json

__all__ = ["ValueTyping", "json_type", "strip_template_newlines", "type_arguments", "type_literal", "type_value"]

_INTEGER: Final = re.compile(r"-?(?:0|[1-9]\d*)")
_INTEGRAL: Final = re.compile(r"-?(?:0|[1-9]\d*)\.0+")
_NUMBER: Final = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_ORDER: Final = ("null", "boolean", "integer", "number", "object", "array", "string")
_MAX_NEST: Final = 64


def strip_template_newlines(text: str) -> str:
    """Remove the one newline a template writes after an opening tag and before a closer
    (exactly one ``\n`` on each side; every other character is the value's)."""
    if text.startswith("\n"):
        text = text[1:]
    if text.endswith("\n"):
        text = text[:-1]
    return text


def type_value(
    text: str,
    schema: Mapping[str, Any] | None,
    *,
    string: bool | None = None,
    notes: list[str] | None = None,
    max_depth: int = _MAX_NEST,
) -> Any:
    """The value of a parameter written as ``text``.

    ``string=True`` (DSML ``string="true"``) always means the text itself; ``string=False``
    means a JSON value.  Without a schema, a trimmed JSON number, ``true``, ``false``,
    ``null``, object or array is that value and anything else is the text.  ``notes``
    collects what had to be repaired to read a JSON value.  Text nesting deeper than
    ``max_depth`` is never read as JSON: it stays the text (a schema that wants an object
    or array then reports it invalid).
    """
    return ValueTyping(schema)(text, string=string, notes=notes, max_depth=max_depth)


class ValueTyping:
    """:func:`type_value` for one parameter's schema, with what depends on the schema alone
    (the types it admits, most specific first, and the part of it for each) worked out
    the first time it is needed, once: binding keeps one per tool parameter, so a value
    then costs only its own reading."""

    __slots__ = ("_plan", "_schema")

    def __init__(self, schema: Mapping[str, Any] | None) -> None:
        self._schema = schema
        self._plan: tuple[tuple[tuple[str, Mapping[str, Any]], ...], Any] | None = None

    def __call__(
        self, text: str, *, string: bool | None = None, notes: list[str] | None = None, max_depth: int = _MAX_NEST
    ) -> Any:
        return self.value(text, string, notes, max_depth)

    def value(self, text: str, string: bool | None, notes: list[str] | None, max_depth: int) -> Any:
        """The call, with positional arguments (the compiled build calls this natively)."""
        if string is True:
            return text
        trimmed = text.strip()
        if trimmed[:1] in ("{", "[") and depth_exceeds(trimmed, max_depth):
            return text
        if string is False:
            got = _json(trimmed, notes)
            return text if got is _NO else got
        steps, enum = self._plan or self._work_out()
        if not steps:
            got = _json(trimmed, notes)
            return text if got is _NO or isinstance(got, str) else got
        return _typed_by(text, trimmed, steps, enum, 0, notes)

    def _work_out(self) -> tuple[tuple[tuple[str, Mapping[str, Any]], ...], Any]:
        schema = self._schema
        if isinstance(schema, Mapping) and _types(schema):
            self._plan = (tuple(_steps(schema)), schema.get("enum"))
        else:
            self._plan = ((), None)  # no schema that types: JSON values, else the text
        return self._plan


def type_literal(value: Any, schema: Mapping[str, Any] | None) -> Any:
    """A value the model wrote as a typed literal (a code call's argument): a string where
    the schema admits no string is typed from its text, like a value written as text
    (``"5"`` for an integer is ``5``); inside objects and arrays, likewise by ``properties``
    and ``items``.  Everything else is kept as written."""
    if not isinstance(schema, Mapping):
        return value
    return _nested_item(value, schema, 0)


def type_arguments(params: list[tuple[str, str]], schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """Type a call's text-valued parameters (name, text) by its object schema."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    props = props if isinstance(props, Mapping) else {}
    out: dict[str, Any] = {}
    for key, text in params:
        sub = props.get(key)
        out[key] = type_value(text, sub if isinstance(sub, Mapping) else None)
    return out


# -- internals ------------------------------------------------------------------------------

_NO: Final = object()


def _json(trimmed: str, notes: list[str] | None = None) -> Any:
    if not trimmed:
        return _NO
    try:
        return loads_strict(trimmed)
    except JsonValueError:
        if trimmed[0] not in "{[":
            return _NO
        try:
            value, done = repair_json(trimmed)
        except RepairFailed:
            value, done = _unescaped(trimmed)
        if value is not _NO and notes is not None:
            notes.extend(done)
        return value


def _unescaped(trimmed: str) -> tuple[Any, list[str]]:
    """JSON written as the inside of a JSON string (``[{\\"id\\": 1}]``), as some models do."""
    if '\\"' not in trimmed:
        return _NO, []
    try:
        inner = loads_strict('"' + trimmed + '"')
        value, done = repair_json(inner)
    except (JsonValueError, RepairFailed):
        return _NO, []
    return value, ["unescaped a JSON value written as a string", *done]


def _types(schema: Mapping[str, Any]) -> list[str]:
    """The JSON types a schema admits, most specific first (string last)."""
    found: set[str] = set()
    t = schema.get("type")
    if isinstance(t, str):
        found.add(t)
    elif isinstance(t, list):
        found.update(x for x in t if isinstance(x, str))
    for key in ("anyOf", "oneOf"):
        alts = schema.get(key)
        if isinstance(alts, list):
            for alt in alts:
                if isinstance(alt, Mapping):
                    found.update(_types(alt))
    if schema.get("nullable") is True:
        found.add("null")
    for key in ("enum", "const"):
        values = schema.get(key) if key == "enum" else [schema.get("const")] if "const" in schema else None
        if isinstance(values, list):
            found.update(json_type(v) for v in values)
    if not found and ("properties" in schema or "required" in schema):
        found.add("object")
    return [t for t in _ORDER if t in found]


def json_type(value: Any) -> str:
    """The JSON Schema type name of a decoded JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _branch(schema: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    """The part of a schema that describes values of ``kind`` (for nested typing)."""
    for key in ("anyOf", "oneOf"):
        alts = schema.get(key)
        if isinstance(alts, list):
            for alt in alts:
                if isinstance(alt, Mapping) and kind in _types(alt):
                    return alt
    return schema


def _steps(schema: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each type a schema admits, most specific first, with the part of it for that type."""
    return ((kind, _branch(schema, kind)) for kind in _types(schema))


def _typed(text: str, trimmed: str, schema: Mapping[str, Any], depth: int, notes: list[str] | None = None) -> Any:
    return _typed_by(text, trimmed, _steps(schema), schema.get("enum"), depth, notes)


def _typed_by(
    text: str,
    trimmed: str,
    steps: Iterable[tuple[str, Mapping[str, Any]]],
    enum: Any,
    depth: int,
    notes: list[str] | None,
) -> Any:
    for kind, branch in steps:
        got = _as(kind, text, trimmed, branch, depth, notes)
        if got is _NO:
            continue
        if isinstance(enum, list) and got not in enum and kind != "string":
            continue
        return got
    return text


def _as(
    kind: str, text: str, trimmed: str, schema: Mapping[str, Any], depth: int, notes: list[str] | None = None
) -> Any:
    if kind == "string":
        return text
    if kind == "null":
        return None if trimmed == "null" else _NO
    if kind == "boolean":
        low = trimmed.lower()
        return (low == "true") if low in ("true", "false") else _NO
    if kind == "integer":
        if _INTEGER.fullmatch(trimmed):
            return int(trimmed)
        if _INTEGRAL.fullmatch(trimmed):
            return int(trimmed.split(".")[0])
        return _NO
    if kind == "number":
        if not _NUMBER.fullmatch(trimmed):
            return _NO
        if _INTEGER.fullmatch(trimmed):
            return int(trimmed)
        value = float(trimmed)
        return value if math.isfinite(value) else _NO
    if kind in ("object", "array"):
        if not trimmed or trimmed[0] != ("{" if kind == "object" else "["):
            return _NO
        got = _json(trimmed, notes)
        if got is _NO or not isinstance(got, dict if kind == "object" else list):
            return _NO
        return _nested(got, schema, depth + 1)
    return _NO


def _nested(value: Any, schema: Mapping[str, Any], depth: int) -> Any:
    """Inside an object or array, type the strings the schema says are something else."""
    if depth > _MAX_NEST:
        return value
    if isinstance(value, dict):
        props = schema.get("properties")
        if not isinstance(props, Mapping):
            return value
        out = {}
        for k, v in value.items():
            sub = props.get(k)
            out[k] = _nested_item(v, sub, depth) if isinstance(sub, Mapping) else v
        return out
    if isinstance(value, list):
        items = schema.get("items")
        if not isinstance(items, Mapping):
            return value
        return [_nested_item(v, items, depth) for v in value]
    return value


def _nested_item(value: Any, schema: Mapping[str, Any], depth: int) -> Any:
    if isinstance(value, str):
        kinds = _types(schema)
        if kinds and "string" not in kinds:
            return _typed(value, value.strip(), schema, depth)
        return value
    if isinstance(value, (dict, list)):
        kind = "object" if isinstance(value, dict) else "array"
        return _nested(value, _branch(schema, kind), depth + 1)
    return value
