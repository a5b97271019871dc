"""Where values lie inside a JSON payload: the span of an object's member, of an array's
elements, of the last complete element of a cut-off array, and the members of an object
cut off by the end of the text.  Readers ask this once a payload is read, to keep the
model's own text of a call's arguments.

Two walks give the spans: in text ``json.loads`` read strictly, ``json``'s own scanner
crosses each value in one C-level step; in anything else (repaired, cut off) a walk over
structure characters, which never reads a character twice, answers."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Final, cast

from .jsonscan import JSON_WS, JsonValueError, loads_strict, skip_ws, strict_value_at, string_end

__all__ = [
    "Spans",
    "complete_elements_end",
    "element_spans",
    "last_element",
    "member_span",
    "member_spans",
    "partial_object",
    "strict_element_spans",
    "strict_object_at",
]

#: where each member's value lies in an object: its key and its (start, end)
Spans = dict[str, tuple[int, int]]


# -- spans in JSON the character scanner reads (also when it is cut off) ------------------------------------------------------------

#: ``match`` of a pattern that matches the empty string, so it finds a match at any offset.
_AlwaysMatch = Callable[[str, int], "re.Match[str]"]

_ws_match: Final = cast(_AlwaysMatch, re.compile(r"[ \t\r\n]*").match)
_SCALAR: Final = re.compile(r"[^,}\]\s]+")
_DEPTH_STOP: Final = re.compile(r'["\[\]{}]')
_STRUCT: Final = re.compile(r'["{}\[\]]')


def _value_end(text: str, pos: int) -> int:
    ch = text[pos]
    if ch == '"':
        return string_end(text, pos)
    if ch in "{[":
        depth = 0
        i = pos
        while True:
            m = _STRUCT.search(text, i)
            if m is None:
                return len(text)
            c = m.group()
            if c == '"':
                i = string_end(text, m.start())
                continue
            i = m.end()
            depth += 1 if c in "{[" else -1
            if depth == 0:
                return i
    m = _SCALAR.match(text, pos)
    return m.end() if m else pos


def member_spans(text: str, start: int) -> dict[str, tuple[int, int]]:
    """Spans of the values of an object's members (strict JSON at ``start``, a ``{``; on
    text that is not, the members before the first that is not ``"key": value``)."""
    spans: dict[str, tuple[int, int]] = {}
    pos = _ws_match(text, start + 1).end()
    while pos < len(text) and text[pos] != "}":
        if text[pos] != '"':
            break
        key_end = string_end(text, pos)
        raw = text[pos:key_end]
        colon = _ws_match(text, key_end).end()
        if key_end > len(text) or colon >= len(text) or text[colon] != ":":
            break  # not an object's member after all: the spans read so far
        try:
            key = raw[1:-1] if "\\" not in raw else json.loads(raw)
        except ValueError:
            break  # an escape json does not know
        pos = _ws_match(text, colon + 1).end()
        if pos >= len(text):
            break
        end = _value_end(text, pos)
        if end <= pos:
            break  # no value after the colon
        spans[key] = (pos, end)
        pos = _ws_match(text, end).end()
        if pos < len(text) and text[pos] == ",":
            pos = _ws_match(text, pos + 1).end()
    return spans


def element_spans(text: str, start: int) -> list[tuple[int, int]]:
    """Spans of an array's elements (strict JSON at ``start``, a ``[``)."""
    spans: list[tuple[int, int]] = []
    pos = _ws_match(text, start + 1).end()
    while pos < len(text) and text[pos] != "]":
        end = _value_end(text, pos)
        spans.append((pos, end))
        pos = _ws_match(text, end).end()
        if pos < len(text) and text[pos] == ",":
            pos = _ws_match(text, pos + 1).end()
    return spans


# -- what survives of a cut-off object -------------------------------------------------------

_scalar_end_match: Final = cast(_AlwaysMatch, re.compile(r"[^,}\]\s]*").match)


def partial_object(text: str, start: int) -> tuple[dict[str, Any], str | None, int]:
    """Members of the object at ``start`` whose values are complete before the text ends.

    Returns the complete members (strict JSON values only), and the key and value
    offset of the first member that is cut off or unreadable (None, -1 when there is
    none).  Nothing is guessed: a value counts only when its end is in the text.
    """
    members: dict[str, Any] = {}
    n = len(text)
    pos = _ws_match(text, start + 1).end()
    while pos < n and text[pos] != "}":
        if text[pos] != '"':
            return members, None, -1
        key_end = string_end(text, pos)
        if (key_end >= n and text[key_end - 1 : key_end] != '"') or key_end > n:
            return members, None, -1
        try:
            key = json.loads(text[pos:key_end])
        except ValueError:
            return members, None, -1
        pos = _ws_match(text, key_end).end()
        if pos >= n or text[pos] != ":":
            return members, None, -1
        vstart = _ws_match(text, pos + 1).end()
        if vstart >= n:
            return members, key, vstart
        vend = complete_value_end(text, vstart)
        if vend is None:
            return members, key, vstart
        try:
            members[key] = loads_strict(text[vstart:vend])
        except JsonValueError:
            return members, key, vstart
        pos = _ws_match(text, vend).end()
        if pos < n and text[pos] == ",":
            pos = _ws_match(text, pos + 1).end()
    return members, None, -1


def complete_value_end(text: str, pos: int) -> int | None:
    ch = text[pos]
    n = len(text)
    if ch == '"':
        end = string_end(text, pos)
        return end if end <= n and end > pos + 1 and text[end - 1] == '"' and not _escaped(text, end - 1) else None
    if ch in "{[":
        end = _value_end(text, pos)
        if end >= n and (depth_after(text, pos, end) != 0):
            return None
        return end
    end = _scalar_end_match(text, pos).end()
    return end if end < n else None  # a number at the very end may still be growing


def _escaped(text: str, i: int) -> bool:
    k = 0
    while i - 1 - k >= 0 and text[i - 1 - k] == "\\":
        k += 1
    return k % 2 == 1


def depth_after(text: str, start: int, end: int) -> int:
    """Bracket depth (outside strings) after reading ``text[start:end]``."""
    depth = 0
    i = start
    while True:
        m = _DEPTH_STOP.search(text, i, end)
        if m is None:
            return depth
        c = m.group()
        if c == '"':
            i = string_end(text, m.start())
            if i > end:
                return depth
            continue
        i = m.end()
        depth += 1 if c in "{[" else -1


# -- spans inside strict JSON, each value crossed in one step --------------------------------
# A payload's spans are looked for only in text json.loads read strictly (a payload that
# needed no repair), where json's own scanner finds where each value ends in C; the
# jsonscan walks, which also take text that is not strict, answer if it ever does not.

#: (value, end) of the JSON value at an offset (the scanner a decoder makes for itself)
_scan_value: Final[Callable[[str, int], tuple[Any, int]]] = vars(json.JSONDecoder())["scan_once"]


def member_span(text: str, start: int, key: str, known: Spans | None = None) -> tuple[int, int] | None:
    """``member_spans(text, start).get(key)``: the span of the value of member ``key`` of
    the object at ``start`` (its last, the one json.loads keeps).  ``known``: the spans of
    the object at 0, found as it was decoded (``strict_object_at``), which answer for it."""
    if known is not None and start == 0:
        return known.get(key)
    got = strict_object_at(text, start)
    return got[2].get(key) if got is not None else member_spans(text, start).get(key)


def strict_object_at(text: str, pos: int) -> tuple[dict[str, Any], int, Spans] | None:
    """``strict_value_at`` of the object at ``pos``, read member by member as ``json``'s
    scanner reads one (the same value, the same end) so that the span of each member's
    value is known from the one decode: ``(value, end, spans)``, a repeated key's span that
    of its last member, the one the value keeps.  None when ``text[pos]`` is no ``{`` or the
    object is not strict JSON: ``strict_value_at`` then says why."""
    if text[pos : pos + 1] != "{":
        return None
    value: dict[str, Any] = {}
    spans: Spans = {}
    try:
        i = pos + 1
        if text[i] in JSON_WS:
            i = skip_ws(text, i)
        if text[i] == "}":
            return value, i + 1, spans
        while True:
            if text[i] != '"':
                return None
            key, i = strict_value_at(text, i)
            if text[i] != ":":
                i = skip_ws(text, i)
                if text[i] != ":":
                    return None
            i += 1
            if text[i] in JSON_WS:
                i = skip_ws(text, i)
            start = i
            value[key], i = strict_value_at(text, i)
            spans[key] = (start, i)
            if text[i] in JSON_WS:
                i = skip_ws(text, i)
            if text[i] == "}":
                return value, i + 1, spans
            if text[i] != ",":
                return None
            i += 1
            if text[i] in JSON_WS:
                i = skip_ws(text, i)
    except (ValueError, RecursionError, IndexError):
        return None  # (not strict JSON, cut off, or a non-finite number: strict_value_at says which)


def strict_element_spans(text: str, start: int) -> list[tuple[int, int]]:
    """``element_spans(text, start)``: the spans of the elements of the array at ``start``."""
    try:
        spans = []
        pos = skip_ws(text, start + 1)
        while text[pos] != "]":
            end = _scan_value(text, pos)[1]
            spans.append((pos, end))
            pos = skip_ws(text, end)
            if pos < len(text) and text[pos] == ",":
                pos = skip_ws(text, pos + 1)
        return spans
    except (StopIteration, ValueError, RecursionError, IndexError):  # pragma: no cover - not strict JSON
        return element_spans(text, start)


def last_element(text: str) -> tuple[int, int]:
    """Offset and index of the element of a cut-off array that the cut fell in (offset
    -1 when unclear)."""
    _done, start, index = _elements(text)
    return start, index


def complete_elements_end(text: str) -> int:
    """Where the last complete element of a cut-off array ends (0 when none is complete)."""
    return _elements(text)[0]


def _elements(text: str) -> tuple[int, int, int]:
    """One walk over the elements of a cut-off array: where the last complete one ends (0
    when none is), and the offset (-1 when unclear) and index of the one the cut fell in."""
    pos, n, index, done = 1, len(text), 0, 0
    while True:
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if pos >= n:
            return done, -1, index
        end = complete_value_end(text, pos)
        if end is None:
            return done, pos, index
        done = pos = end
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if pos >= n or text[pos] != ",":
            return done, -1, index
        pos += 1
        index += 1
