"""The JSON repair ladder: what models get wrong about JSON, fixed in one linear pass.

:func:`repair_json` is tried only after strict parsing failed.  It rewrites the text
into strict JSON in a single left-to-right pass (regex jumps, no backtracking, no retry
per character) and names every repair it made, so that the caller can report it:

* a Markdown fence around the payload,
* redundant outer braces (``{{"a": 1}}``, at most 16 layers),
* ``//`` and ``/* */`` comments,
* single-quoted strings, and quote sentinels a grammar declares (``<|"|>``),
* unquoted keys,
* Python literals ``True``, ``False``, ``None``,
* trailing commas,
* raw control characters inside strings, and ``\\'`` escapes.

It never guesses content: a bare word in a value position (other than the Python
literals), ``NaN``/``Infinity``, or a string that is not closed make it give up.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any, cast

from .jsonscan import JsonValueError, depth_exceeds, loads_strict

__all__ = ["RepairFailed", "repair_json", "strip_fence"]

# the opening line of a fence: its run and an optional info word (one quantifier per
# character class, so a failing line is read once; the closing line is read from the end)
_FENCE_OPEN = re.compile(r"\s*(`{3,}|~{3,})[ \t]*(?:[A-Za-z0-9_+.-]+[ \t]*)?\r?\n")
#: ``match`` of a pattern that matches the empty string, so it finds a match at any offset
_AlwaysMatch = Callable[[str, int], "re.Match[str]"]
_ws_match = cast(_AlwaysMatch, re.compile(r"\s*").match)  # asked where a space is, where it reads as \s+
_WORD = re.compile(r"[A-Za-z_$][\w$.\-]*")
_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_DQ_BODY = re.compile(r'[^"\\\x00-\x1f]+')
_SQ_BODY = re.compile(r"[^'\\\x00-\x1f\"]+")
_line_match = cast(_AlwaysMatch, re.compile(r"[^\n]*").match)
_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}
_JSON_LITERALS = ("true", "false", "null")
_MAX_PEEL = 16


class RepairFailed(ValueError):
    """The text is not JSON and no repair on the ladder makes it JSON."""


def strip_fence(text: str) -> str | None:
    """The body of a text that is one Markdown code fence, else None.

    The fence closes with its opening run at the very end of the text (white space
    around it); the line break before the closing run is not part of the body.
    """
    m = _FENCE_OPEN.match(text)
    if m is None:
        return None
    run = m.group(1)
    end = len(text.rstrip(" \t"))
    if not text.endswith(run, m.end(), end):
        return None
    close = end - len(run)
    start = len(text[:close].rstrip(" \t"))  # a slice: no scan of the body
    if text.startswith("\n", start - 1):
        start -= 1
    if text.startswith("\r", start - 1):
        start -= 1
    return text[m.end() : max(start, m.end())]


def repair_json(text: str, *, quotes: Sequence[str] = (), max_depth: int = 64) -> tuple[Any, list[str]]:
    """Parse ``text`` as JSON after the repairs it needs; return the value and the repairs.

    ``quotes`` are quote sentinels a grammar declares (strings that stand for ``"``).
    Raises :class:`RepairFailed` when the text cannot be read.
    """
    repairs: list[str] = []
    body = strip_fence(text)
    if body is not None:
        repairs.append("removed a code fence")
        text = body
    normal = _Normaliser(text, quotes).run()
    repairs.extend(normal.repairs)
    candidate = normal.output
    for _ in range(_MAX_PEEL + 1):
        try:
            if depth_exceeds(candidate, max_depth):
                raise RepairFailed(f"nesting deeper than {max_depth}")
            return loads_strict(candidate), repairs
        except JsonValueError as exc:
            peeled = _peel(candidate)
            if peeled is None:
                raise RepairFailed(str(exc)) from None
            if "removed redundant braces" not in repairs:
                repairs.append("removed redundant braces")
            candidate = peeled
    raise RepairFailed("too many redundant braces")


def _peel(text: str) -> str | None:
    """``{ {…} }`` → ``{…}`` when the outer pair holds exactly one object."""
    s = text.strip()
    if len(s) < 4 or s[0] != "{" or s[-1] != "}":
        return None
    inner = s[1:-1].strip()
    if not (inner.startswith("{") and inner.endswith("}")):
        return None
    return inner


class _Normaliser:
    """One pass from lenient JSON to strict JSON (see the module docstring)."""

    __slots__ = ("text", "quotes", "out", "repairs", "stack", "expect", "pos")

    def __init__(self, text: str, quotes: Sequence[str]) -> None:
        self.text = text
        self.quotes = tuple(q for q in quotes if q)
        self.out: list[str] = []
        self.repairs: list[str] = []
        self.stack: list[str] = []
        self.expect = "value"  # key | colon | value | comma
        self.pos = 0

    @property
    def output(self) -> str:
        return "".join(self.out)

    def note(self, what: str) -> None:
        if what not in self.repairs:
            self.repairs.append(what)

    def run(self) -> _Normaliser:
        text = self.text
        n = len(text)
        while self.pos < n:
            pos = self.pos
            ch = text[pos]
            if ch.isspace():
                m = _ws_match(text, pos)
                self.out.append(m.group())
                self.pos = m.end()
                continue
            sentinel = self._sentinel_at(pos)
            if sentinel:
                self._sentinel_string(sentinel)
            elif ch == '"':
                self._double(pos)
            elif ch == "'":
                self._single(pos)
            elif ch == "/" and text.startswith("//", pos):
                self.note("removed comments")
                self.pos = _line_match(text, pos).end()
            elif ch == "/" and text.startswith("/*", pos):
                end = text.find("*/", pos + 2)
                if end < 0:
                    raise RepairFailed("unclosed comment")
                self.note("removed comments")
                self.pos = end + 2
            elif ch in "{[":
                self.stack.append(ch)
                self.out.append(ch)
                self.expect = "key" if ch == "{" else "value"
                self.pos += 1
            elif ch in "}]":
                self._close(ch)
            elif ch == ":":
                self.out.append(ch)
                self.expect = "value"
                self.pos += 1
            elif ch == ",":
                self.out.append(ch)
                self.expect = "key" if self.stack and self.stack[-1] == "{" else "value"
                self.pos += 1
            else:
                self._bare(pos)
        return self

    def _sentinel_at(self, pos: int) -> str:
        for q in self.quotes:
            if self.text.startswith(q, pos):
                return q
        return ""

    def _emit_string(self, value: str) -> None:
        self.out.append(json.dumps(value, ensure_ascii=False))
        self._after_value()

    def _after_value(self) -> None:
        if self.expect == "key":
            self.expect = "colon"
        else:
            self.expect = "comma"

    def _double(self, pos: int) -> None:
        text = self.text
        i = pos + 1
        n = len(text)
        parts = ['"']
        while True:
            m = _DQ_BODY.match(text, i)
            if m:
                parts.append(m.group())
                i = m.end()
            if i >= n:
                raise RepairFailed("unclosed string")
            ch = text[i]
            if ch == '"':
                parts.append('"')
                i += 1
                break
            if ch == "\\":
                nxt = text[i + 1 : i + 2]
                if nxt == "'":
                    self.note("fixed escapes")
                    parts.append("'")
                elif nxt and nxt in '"\\/bfnrtu':
                    parts.append(text[i : i + 2])
                else:
                    self.note("fixed escapes")
                    parts.append("\\\\" + nxt)
                i += 2
                continue
            self.note("escaped control characters in strings")
            parts.append(json.dumps(ch)[1:-1])
            i += 1
        self.out.append("".join(parts))
        self.pos = i
        self._after_value()

    def _single(self, pos: int) -> None:
        text = self.text
        i = pos + 1
        n = len(text)
        chars: list[str] = []
        while True:
            m = _SQ_BODY.match(text, i)
            if m:
                chars.append(m.group())
                i = m.end()
            if i >= n:
                raise RepairFailed("unclosed string")
            ch = text[i]
            if ch == "'":
                i += 1
                break
            if ch == "\\":
                nxt = text[i + 1 : i + 2]
                if nxt in ("'", '"'):
                    chars.append(nxt)
                elif nxt:
                    try:
                        chars.append(json.loads('"\\' + nxt + '"'))
                    except ValueError:
                        chars.append(nxt)
                i += 2
                continue
            chars.append(ch)  # a double quote or a control character
            i += 1
        self.note("replaced single quotes")
        self.pos = i
        self._emit_string("".join(chars))

    def _sentinel_string(self, quote: str) -> None:
        start = self.pos + len(quote)
        end = self.text.find(quote, start)
        if end < 0:
            raise RepairFailed("unclosed string")
        self.note("replaced quote tokens")
        self.pos = end + len(quote)
        self._emit_string(self.text[start:end])

    def _close(self, ch: str) -> None:
        want = "{" if ch == "}" else "["
        if not self.stack or self.stack[-1] != want:
            raise RepairFailed(f"unexpected {ch!r}")
        self.stack.pop()
        # a trailing comma before the closer (white space and comments between are fine)
        for k in range(len(self.out) - 1, -1, -1):
            piece = self.out[k]
            if piece.isspace():
                continue
            if piece == ",":
                del self.out[k]
                self.note("removed trailing commas")
            break
        self.out.append(ch)
        self.pos += 1
        self.expect = "comma"

    def _bare(self, pos: int) -> None:
        text = self.text
        if self.expect == "key":
            m = _WORD.match(text, pos)
            if m is None:
                raise RepairFailed(f"unexpected {text[pos]!r}")
            self.note("quoted keys")
            self.out.append(json.dumps(m.group()))
            self.pos = m.end()
            self.expect = "colon"
            return
        m = _NUMBER.match(text, pos)
        if m is not None and m.end() > pos:
            self.out.append(m.group())
            self.pos = m.end()
            self.expect = "comma"
            return
        m = _WORD.match(text, pos)
        if m is None:
            raise RepairFailed(f"unexpected {text[pos]!r}")
        word = m.group()
        if word in _JSON_LITERALS:
            self.out.append(word)
        elif word in _PY_LITERALS:
            self.note("replaced Python literals")
            self.out.append(_PY_LITERALS[word])
        else:
            raise RepairFailed(f"{word!r} is not a JSON value")
        self.pos = m.end()
        self.expect = "comma"
