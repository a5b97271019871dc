"""The neutral records reading produces and binding consumes.

A reader (:mod:`tooldialect.transform` and the family modules) turns model text into
:class:`RawCall` and :class:`Issue` records; the binding pass (:mod:`tooldialect.binding`)
turns them into public calls and diagnostics.  Both sides import this module and neither
imports the other for them, so it imports nothing of the package.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "ARGUMENT_KEYS",
    "ID_KEYS",
    "NAME_KEYS",
    "Issue",
    "RawCall",
    "call_id_of",
    "excerpt",
    "is_tool_definition",
    "not_object_issue",
    "not_returned_issue",
    "renamed",
    "repaired_issue",
    "unread_issue",
]

#: Keys that hold a call's arguments, in priority order (read from a call object, and
#: unwrapped by binding when the schema does not expect them).
ARGUMENT_KEYS: Final = ("arguments", "parameters", "args", "params", "input")
#: The members of a call object that hold its tool name, and its id.
NAME_KEYS: Final = ("name", "tool_name")
ID_KEYS: Final = ("id", "tool_call_id", "call_id")
_EXCERPT: Final = 80


def call_id_of(obj: Mapping[str, Any]) -> str | None:
    """The id a call object gives itself: the first non-empty string or integer among
    ``ID_KEYS`` (a boolean is no id)."""
    for k in ID_KEYS:
        if k in obj:
            value = obj[k]
            if isinstance(value, (str, int)) and value != "":
                return str(value) if not isinstance(value, bool) else None
    return None


def is_tool_definition(holder: Mapping[str, Any], key: str | None) -> bool:
    """A catalogue entry echoed back ({"name", "description", "parameters": <schema>}) is not a call."""
    if key != "parameters" or "description" not in holder:
        return False
    params = holder.get("parameters")
    return isinstance(params, dict) and params.get("type") == "object" and "properties" in params


def excerpt(text: str) -> str:
    """A bounded piece of model text for a diagnostic."""
    return text if len(text) <= _EXCERPT else text[: _EXCERPT - 1] + "…"


@dataclass
class RawCall:
    """A call as the model wrote it, before binding."""

    name: str
    arguments: Any
    arguments_json: str | None
    id: str | None
    span: tuple[int, int]
    family: str
    notes: list[Issue]
    gated: bool  # a registry-gated body: bound by exact name only, never repaired
    # values written as text, typed by the binding pass: (key, text, string flag or None)
    text_params: list[tuple[str, str, bool | None]] | None
    # the call object's place in its payload: 0 for a payload that is one call object, its
    # index for an element of a root array, -1 otherwise (a stream announces only these)
    elem: int

    # (written out, with the defaults: the one dataclasses generates is interpreted code in
    # the compiled build, and a call makes one of these)
    def __init__(
        self,
        name: str,
        arguments: Any,
        arguments_json: str | None,
        id: str | None,
        span: tuple[int, int],
        family: str,
        notes: list[Issue] | None = None,
        gated: bool = False,
        text_params: list[tuple[str, str, bool | None]] | None = None,
        elem: int = -1,
    ) -> None:
        self.name = name
        self.arguments = arguments
        self.arguments_json = arguments_json
        self.id = id
        self.span = span
        self.family = family
        self.notes = [] if notes is None else notes
        self.gated = gated
        self.text_params = text_params
        self.elem = elem


@dataclass
class Issue:
    """A diagnostic before it becomes public: kind, detail, span."""

    kind: str
    detail: dict[str, Any]
    span: tuple[int, int] | None
    message: str
    elem: int  # like RawCall.elem, for an issue about one call object of a payload

    def __init__(
        self, kind: str, detail: dict[str, Any], span: tuple[int, int] | None, message: str, elem: int = -1
    ) -> None:
        self.kind = kind
        self.detail = detail
        self.span = span
        self.message = message
        self.elem = elem


def renamed(written: str, name: str, how: str, span: tuple[int, int] | None) -> Issue:
    """The ``name_repaired`` diagnostic of a tool name read as another."""
    return Issue(
        "name_repaired",
        {"from": excerpt(written), "to": name, "how": how},
        span,
        f"tool name {excerpt(written)!r} read as {name!r} ({how})",
    )


# -- the issues a reader reports of a call's arguments ------------------------------------------


def repaired_issue(name: str, repairs: list[str], span: tuple[int, int]) -> Issue:
    return Issue(
        "arguments_repaired",
        {"name": name, "repairs": list(repairs)},
        span,
        f"{name}: arguments repaired ({', '.join(repairs)})",
    )


def not_returned_issue(name: str, reason: str, value: Any, span: tuple[int, int]) -> Issue:
    return Issue(
        "arguments_invalid",
        {"name": name, "reason": reason, "excerpt": excerpt(str(value))},
        span,
        f"{name}: {reason}; the call is not returned",
    )


def not_object_issue(name: str, value: Any, span: tuple[int, int]) -> Issue:
    kind = type(value).__name__ if value is not None else "null"
    kind = {"str": "string", "list": "array", "int": "number", "float": "number", "bool": "boolean"}.get(kind, kind)
    return not_returned_issue(name, f"arguments is a {kind}, not a JSON object", value, span)


#: What a payload node may hold beside its payload and still say nothing: white space and
#: the brackets of an empty object or call (``{}``, ``()``).
_EMPTY: Final = frozenset(" \t\r\n{}[](),;:")


def unread_issue(text: str, kinds: list[str], holder: str, name: str | None, span: tuple[int, int]) -> Issue | None:
    """The issue of a node the reader reads for a payload (``holder``: ``arguments``,
    ``json_calls`` …) that holds ``text``, in terminals ``kinds``, but no payload it reads (no
    ``JSON`` token, no keyword arguments): the grammar put what the model wrote in a terminal
    the reader does not read (``ARGS_BODY: /\\{[\\s\\S]{0,500}\\}/``), and reading it as ``{}``
    would drop it silently.  With ``name`` the call is refused (``arguments_invalid``), else the
    payload is reported (``malformed_block``).  None when ``text`` holds nothing to drop."""
    if all(ch in _EMPTY for ch in text):
        return None
    reason = (
        f"the grammar's {holder!r} rule holds {', '.join(kinds) or 'text'}, which the reader does not read "
        "(it reads a JSON payload, or keyword arguments written as code): what the model wrote there "
        "is not read, so the call is not returned (run 'tooldialect grammar check' on the grammar)"
    )
    detail: dict[str, Any] = {"reason": reason, "excerpt": excerpt(text)}
    if name:
        detail["name"] = name
        return Issue("arguments_invalid", detail, span, f"{name}: arguments not read: {reason}")
    return Issue("malformed_block", detail, span, f"payload not read: {reason}")
