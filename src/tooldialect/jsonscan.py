"""JSON inside model text: an incremental scanner for the ``JSON`` terminal, and strict reading.

The scanner decides where a JSON object or array ends while the text is still
arriving.  It is lenient about what repair can fix later (single-quoted strings,
unquoted keys, comments, raw newlines in strings) and strict about structure: a
closing bracket that does not match, or a character JSON never has outside a string
(``<``, ``|``, ``=`` …), ends the scan with a failure at once.  It never looks at a
character twice, skips plain runs with C-speed regexes, and caps nesting depth.

While it scans it can also notice a call's name (``"name": "…"`` at the top of a call
object) as soon as that string is complete, so a stream can announce the call before
its arguments arrive.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = [
    "CUT",
    "DONE",
    "FAIL",
    "MORE",
    "JsonScanner",
    "JsonValueError",
    "element_spans",
    "depth_exceeds",
    "loads_strict",
    "member_spans",
    "string_end",
]

DONE, MORE, FAIL, CUT = "done", "more", "fail", "cut"

_PLAIN = re.compile(r"[ \t\r\n\w.+\-:,]+")  # outside strings: nothing that changes structure
_IN_DQ = re.compile(r'[^"\\]+')
_IN_SQ = re.compile(r"[^'\\]+")
_TO_NEWLINE = re.compile(r"[^\n]+")
_IN_BLOCK_COMMENT = re.compile(r"[^*]+")
_VALUE_START = "{[,:"
_NAME_KEYS = ("name", "tool_name")


class JsonScanner:
    """Finds the end of one JSON object or array, one delta at a time.

    ``scan(text, pos, eof)`` continues from ``pos`` (where the previous call stopped)
    and returns ``(status, pos)``: ``DONE`` with the end offset, ``MORE`` having
    consumed everything, ``FAIL`` at the offending offset, or ``CUT`` when the text
    ended inside the value.
    """

    __slots__ = (
        "max_depth",
        "stack",
        "quote",
        "escape",
        "comment",
        "prev",
        "error",
        "names",
        "_key",
        "_strstart",
        "_expect",
        "_elem",
        "_fn_depth",
        "_str_is_key",
    )

    def __init__(self, max_depth: int = 64) -> None:
        self.max_depth = max_depth
        self.stack: list[str] = []
        self.quote = ""  # the open string's quote character, "" outside strings
        self.escape = False
        self.comment = ""  # "", "//", "/*", "/", "/**"
        self.prev = "{"  # last significant character outside strings
        self.error = ""
        self.names: list[tuple[int, str]] = []  # (call ordinal, name) noticed so far
        self._key: list[str | None] = []  # per level: the member key being read
        self._expect: list[str] = []  # per level: "key" or "value"
        self._strstart = 0
        self._elem = 0  # element ordinal inside a top-level array
        self._fn_depth = 0
        self._str_is_key = False

    # -- scanning ---------------------------------------------------------------------

    def scan(self, text: str, pos: int, eof: bool) -> tuple[str, int]:
        n = len(text)
        while pos < n:
            if self.quote:
                pos = self._in_string(text, pos, n)
                continue
            if self.comment:
                pos = self._in_comment(text, pos, n)
                if self.comment == "!":
                    return FAIL, pos
                continue
            m = _PLAIN.match(text, pos)
            if m:
                run = m.group().rstrip(" \t\r\n")
                if run:
                    self.prev = run[-1]
                    self._note_plain(run)
                pos = m.end()
                continue
            ch = text[pos]
            if ch == "{" or ch == "[":
                if len(self.stack) >= self.max_depth:
                    self.error = f"nesting deeper than {self.max_depth}"
                    return FAIL, pos
                self._open(ch)
                pos += 1
            elif ch == "}" or ch == "]":
                if not self.stack or self.stack[-1] != ("{" if ch == "}" else "["):
                    self.error = f"unexpected {ch!r}"
                    return FAIL, pos
                self._close()
                pos += 1
                if not self.stack:
                    return DONE, pos
            elif ch == '"' or (ch == "'" and self.prev in _VALUE_START):
                self.quote = ch
                self._strstart = pos
                self._str_is_key = bool(self._expect) and self._expect[-1] == "key"
                pos += 1
            elif ch == "/":
                self.comment = "/"
                pos += 1
            else:
                self.error = f"unexpected character {ch!r}"
                return FAIL, pos
        if self.comment == "/" and not eof:
            return MORE, pos
        return (CUT, pos) if eof else (MORE, pos)

    def _in_string(self, text: str, pos: int, n: int) -> int:
        if self.escape:
            self.escape = False
            return pos + 1
        m = (_IN_DQ if self.quote == '"' else _IN_SQ).match(text, pos)
        if m:
            return m.end()
        ch = text[pos]
        if ch == "\\":
            self.escape = True
            return pos + 1
        # the closing quote
        self.quote = ""
        self.prev = '"'
        self._string_done(text, self._strstart, pos + 1)
        return pos + 1

    def _in_comment(self, text: str, pos: int, n: int) -> int:
        c = self.comment
        if c == "/":
            ch = text[pos]
            if ch == "/":
                self.comment = "//"
            elif ch == "*":
                self.comment = "/*"
            else:
                self.error = "unexpected character '/'"
                self.comment = "!"
                return pos
            return pos + 1
        if c == "//":
            m = _TO_NEWLINE.match(text, pos)
            if m:
                return m.end()
            self.comment = ""
            return pos + 1
        if c == "/*":
            m = _IN_BLOCK_COMMENT.match(text, pos)
            if m:
                return m.end()
            self.comment = "/**"
            return pos + 1
        # "/**": just saw a star inside a block comment
        ch = text[pos]
        if ch == "/":
            self.comment = ""
        elif ch != "*":
            self.comment = "/*"
        return pos + 1

    # -- noticing names ---------------------------------------------------------------

    def _open(self, ch: str) -> None:
        self.stack.append(ch)
        self._key.append(None)
        self._expect.append("key" if ch == "{" else "value")
        self.prev = ch

    def _close(self) -> None:
        depth = len(self.stack)
        self.stack.pop()
        self._key.pop()
        self._expect.pop()
        self.prev = "}"
        if self.stack and self.stack[0] == "[" and depth == 2:
            self._elem += 1
        self._after_value()

    def _after_value(self) -> None:
        if self._expect:
            self._expect[-1] = "comma"

    def _note_plain(self, run: str) -> None:
        """Track key/value position through punctuation in a plain run."""
        if not self._expect:
            return
        for ch in run:
            if ch == ":":
                self._expect[-1] = "value"
            elif ch == ",":
                self._expect[-1] = "key" if self.stack[-1] == "{" else "value"
                self._key[-1] = None if self.stack[-1] == "{" else self._key[-1]
            elif not ch.isspace() and self._expect[-1] == "key":
                self._expect[-1] = "barekey"

    def _string_done(self, text: str, start: int, end: int) -> None:
        if not self._expect:
            return
        raw = text[start:end]
        if self._str_is_key:
            self._key[-1] = _decode_simple(raw)
            self._expect[-1] = "colon"
            return
        self._after_value()
        depth = len(self.stack)
        root = self.stack[0]
        call_depth = 1 if root == "{" else 2
        if depth != call_depth or self._key[-1] not in _NAME_KEYS:
            return
        name = _decode_simple(raw)
        if name is not None:
            self.names.append((0 if root == "{" else self._elem, name))


def _decode_simple(raw: str) -> str | None:
    if raw.startswith('"'):
        try:
            value = json.loads(raw)
        except ValueError:
            return None
        return value if isinstance(value, str) else None
    inner = raw[1:-1]
    return None if "\\" in inner else inner


# -- strict reading -------------------------------------------------------------------


class JsonValueError(ValueError):
    """Text that is not strict JSON (or holds a non-finite number)."""


def _reject_constant(name: str) -> Any:
    raise JsonValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value) or math.isnan(value):
        raise JsonValueError(f"{text} is not a finite number")
    return value


def loads_strict(text: str) -> Any:
    """``json.loads`` without NaN/Infinity and without numbers that overflow to infinity."""
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite)
    except JsonValueError:
        raise
    except (ValueError, RecursionError) as exc:
        raise JsonValueError(str(exc)) from None


def string_end(text: str, pos: int) -> int:
    """End of the double-quoted string starting at ``pos`` (or the end of the text)."""
    i = pos + 1
    n = len(text)
    while True:
        m = _IN_DQ.match(text, i)
        if m:
            i = m.end()
        if i >= n:
            return n
        if text[i] == "\\":
            i += 2
            continue
        return i + 1


_DEPTH_STOP = re.compile(r'["\[\]{}]')


def depth_exceeds(text: str, limit: int) -> bool:
    """Whether JSON text nests brackets (outside strings) deeper than ``limit``."""
    depth = 0
    i = 0
    while True:
        m = _DEPTH_STOP.search(text, i)
        if m is None:
            return False
        c = m.group()
        if c == '"':
            i = string_end(text, m.start())
            continue
        i = m.end()
        if c in "{[":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1


# -- spans inside strict JSON ------------------------------------------------------------

_WS = re.compile(r"[ \t\r\n]*")
_SCALAR = re.compile(r"[^,}\]\s]+")
_STRUCT = re.compile(r'["{}\[\]]')


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
    """Spans of the values of an object's members (strict JSON at ``start``, a ``{``)."""
    spans: dict[str, tuple[int, int]] = {}
    pos = _WS.match(text, start + 1).end()
    while pos < len(text) and text[pos] != "}":
        if text[pos] != '"':
            break
        key_end = string_end(text, pos)
        key = json.loads(text[pos:key_end])
        pos = _WS.match(text, key_end).end() + 1  # the colon
        pos = _WS.match(text, pos).end()
        end = _value_end(text, pos)
        spans[key] = (pos, end)
        pos = _WS.match(text, end).end()
        if pos < len(text) and text[pos] == ",":
            pos = _WS.match(text, pos + 1).end()
    return spans


def element_spans(text: str, start: int) -> list[tuple[int, int]]:
    """Spans of an array's elements (strict JSON at ``start``, a ``[``)."""
    spans: list[tuple[int, int]] = []
    pos = _WS.match(text, start + 1).end()
    while pos < len(text) and text[pos] != "]":
        end = _value_end(text, pos)
        spans.append((pos, end))
        pos = _WS.match(text, end).end()
        if pos < len(text) and text[pos] == ",":
            pos = _WS.match(text, pos + 1).end()
    return spans
