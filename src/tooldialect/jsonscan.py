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
from collections.abc import Callable
from typing import Any, Final

from .records import NAME_KEYS

__all__ = [
    "CUT",
    "DONE",
    "FAIL",
    "JSON_WS",
    "MORE",
    "JsonScanner",
    "JsonValueError",
    "Resume",
    "depth_exceeds",
    "loads_strict",
    "quoted_end",
    "skip_ws",
    "strict_value_at",
    "string_end",
]

DONE: Final = "done"
MORE: Final = "more"
FAIL: Final = "fail"
CUT: Final = "cut"

_PLAIN: Final = re.compile(r"[ \t\r\n\w.+\-:,]+")  # outside strings: nothing that changes structure
# inside a double-quoted string: plain characters and whole two-character escapes
_STRING_RUN: Final = re.compile(r'(?:[^"\\\x00-\x1f]|\\["\\/bfnrt])*')
_ESCAPED: Final = frozenset('"\\/bfnrt')
_TO_NEWLINE: Final = re.compile(r"[^\n]+")
_IN_BLOCK_COMMENT: Final = re.compile(r"[^*]+")
_VALUE_START: Final = "{[,:"
_KEEP_LIMIT: Final = 512  # keys and names longer than this are not remembered


class JsonScanner:
    """Finds the end of one JSON object or array, one delta at a time.

    ``scan(text, pos, eof)`` continues from ``pos`` (where the previous call stopped)
    and returns ``(status, pos)``: ``DONE`` with the end offset, ``MORE`` having
    consumed everything, ``FAIL`` at the offending offset, or ``CUT`` when the text
    ended inside the value.
    """

    __slots__ = (
        "max_depth",
        "quotes",
        "stack",
        "quote",
        "escape",
        "comment",
        "prev",
        "error",
        "names",
        "_key",
        "_parts",
        "_plen",
        "_collect",
        "_expect",
        "_elem",
        "_fn_depth",
        "_str_is_key",
        "lit_at",
    )

    def __init__(self, max_depth: int = 64, quotes: tuple[str, ...] = ()) -> None:
        self.max_depth = max_depth
        self.quotes = quotes  # quote sentinels a grammar declares, e.g. <|"|>
        self.stack: list[str] = []
        self.quote = ""  # the open string's quote character, "" outside strings
        self.escape = False
        self.comment = ""  # "", "//", "/*", "/", "/**"
        self.prev = "{"  # last significant character outside strings
        self.error = ""
        self.names: list[tuple[int, str]] = []  # (call ordinal, name) noticed so far
        self._key: list[str | None] = []  # per level: the member key being read
        self._expect: list[str] = []  # per level: "key" or "value"
        self._parts: list[str] = []
        self._plen = 0
        self._collect = False
        self._elem = 0  # element ordinal inside a top-level array
        self._fn_depth = 0
        self._str_is_key = False
        self.lit_at = -1  # where the last string or comment began, in the input (see scan's origin)

    def string_run(self, piece: str) -> int:
        """Whether ``piece`` only continues the double-quoted string being read, as ``scan``
        would read it with nothing to note: plain characters and whole two-character
        escapes (the first may complete an escape begun before it), perhaps ending with the
        backslash that begins the next.  -1 if not; else 1 when that backslash ends it, 0
        when nothing is pending.  Reads nothing: :meth:`read_run` does."""
        if self.quote != '"':
            return -1
        body = piece
        if self.escape:
            if not piece or piece[0] not in _ESCAPED:
                return -1
            body = piece[1:]
        if _STRING_RUN.fullmatch(body) is not None:
            return 0
        if body.endswith("\\") and _STRING_RUN.fullmatch(body, 0, len(body) - 1) is not None:
            return 1
        return -1

    def read_run(self, piece: str, pending: int) -> None:
        """Read ``piece``, for which :meth:`string_run` said ``pending``."""
        if self._collect:
            self._keep(piece)
        self.escape = bool(pending)

    # -- scanning ---------------------------------------------------------------------

    def scan(self, text: str, pos: int, eof: bool, end: int | None = None, origin: int = 0) -> tuple[str, int]:
        """Continue scanning ``text[pos:end]`` (which begins at ``origin``); ``eof``: nothing follows."""
        n = len(text) if end is None else min(end, len(text))
        while pos < n:
            if self.quote:
                if len(self.quote) > 1:
                    pos = self._in_sentinel(text, pos, n, eof)
                    if pos < 0:  # the text ended inside the string
                        return (CUT if eof else MORE), -pos - 1
                    continue
                pos = self._in_string(text, pos, n)
                continue
            if self.comment:
                pos = self._in_comment(text, pos, n)
                if self.comment == "!":
                    return FAIL, pos
                continue
            m = _PLAIN.match(text, pos, n)
            if m:
                run = m.group()
                bad = self._note_plain(run)
                if bad >= 0:
                    self.error = f"unexpected {run[bad]!r}"
                    return FAIL, pos + bad
                stripped = run.rstrip(" \t\r\n")
                if stripped:
                    self.prev = stripped[-1]
                pos = m.end()
                continue
            ch = text[pos]
            expect = self._expect[-1] if self._expect else "value"
            if ch == "{" or ch == "[":
                if len(self.stack) >= self.max_depth:
                    self.error = f"nesting deeper than {self.max_depth}"
                    return FAIL, pos
                if expect != "value" and not (ch == "{" and expect == "key"):
                    self.error = f"unexpected {ch!r}"
                    return FAIL, pos
                self._open(ch)
                pos += 1
            elif ch == "}" or ch == "]":
                allowed = ("key", "comma", "scalar") if ch == "}" else ("value", "comma", "scalar")
                if not self.stack or self.stack[-1] != ("{" if ch == "}" else "[") or expect not in allowed:
                    self.error = f"unexpected {ch!r}"
                    return FAIL, pos
                self._close()
                pos += 1
                if not self.stack:
                    return DONE, pos
            elif ch == '"' or (ch == "'" and self.prev in _VALUE_START):
                if expect not in ("key", "value"):
                    self.error = f"unexpected {ch!r}"
                    return FAIL, pos
                self.quote = ch
                self.lit_at = origin + pos
                self._str_is_key = bool(self._expect) and self._expect[-1] == "key"
                self._collect = len(self.stack) <= 2
                self._plen = 0
                pos += 1
            elif ch == "/":
                self.comment = "/"
                self.lit_at = origin + pos
                pos += 1
            else:
                sentinel, partial = self._sentinel(text, pos, n)
                if partial and not eof:
                    return MORE, pos
                if sentinel and expect in ("key", "value"):
                    self.quote = sentinel
                    self.lit_at = origin + pos
                    self._str_is_key = bool(self._expect) and self._expect[-1] == "key"
                    self._collect = len(self.stack) <= 2
                    self._plen = 0
                    pos += len(sentinel)
                    continue
                self.error = f"unexpected character {ch!r}"
                return FAIL, pos
        if self.comment == "/" and not eof:
            return MORE, pos
        return (CUT, pos) if eof else (MORE, pos)

    def _in_string(self, text: str, pos: int, n: int) -> int:
        """Read a quoted string up to its closing quote, or to ``n`` (noting whether a
        backslash there escapes the next piece's first character), in one step."""
        quote = self.quote
        # after a backslash that ended the last piece, the string goes on past its escape
        body = pos + 1 if self.escape else pos
        end = text.find(quote, body, n)
        if end < 0 or (end > body and text[end - 1] == "\\"):  # perhaps escaped: look closer
            end, self.escape = quoted_end(text, body, n, quote)
        else:
            self.escape = False
        if end < 0:
            if self._collect:  # a long value's text is not copied out
                self._keep(text[pos:n])
            return n
        if self._collect:
            self._keep(text[pos:end])
        self.quote = ""
        self.prev = '"'
        raw = quote + "".join(self._parts) + quote if self._collect else None
        self._parts = []
        self._string_done(raw)
        return end + 1

    def _sentinel(self, text: str, pos: int, n: int) -> tuple[str, bool]:
        """A quote sentinel at ``pos``, or whether the text ends inside one."""
        for q in self.quotes:
            if text.startswith(q, pos) and pos + len(q) <= n:
                return q, False
            if q.startswith(text[pos:n]):
                return "", True
        return "", False

    def _in_sentinel(self, text: str, pos: int, n: int, eof: bool) -> int:
        """Inside a sentinel-quoted string: the position after it, or ``-(stop + 1)`` when
        the text ends first (the stop keeps a possibly cut-off closing sentinel)."""
        q = self.quote
        idx = text.find(q, pos, n)
        if idx >= 0:
            self._keep(text[pos:idx])
            self.quote = ""
            self.prev = '"'
            body = "".join(self._parts) if self._collect else None
            self._parts = []
            raw = '"' + body + '"' if body is not None and '"' not in body and "\\" not in body else None
            self._string_done(raw)
            return idx + len(q)
        stop = n if eof else max(pos, n - len(q) + 1)
        self._keep(text[pos:stop])
        return -(stop + 1)

    def _keep(self, piece: str) -> None:
        """Collect a short string's text (keys and names); long strings are not kept."""
        if self._collect:
            self._plen += len(piece)
            if self._plen > _KEEP_LIMIT:
                self._collect = False
                self._parts = []
            else:
                self._parts.append(piece)

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
            m = _TO_NEWLINE.match(text, pos, n)
            if m:
                return m.end()
            self.comment = ""
            return pos + 1
        if c == "/*":
            m = _IN_BLOCK_COMMENT.match(text, pos, n)
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
        self.stack.pop()
        self._key.pop()
        self._expect.pop()
        self.prev = "}"
        self._after_value()

    def _after_value(self) -> None:
        if self._expect:
            self._expect[-1] = "comma"

    def _note_plain(self, run: str) -> int:
        """Follow key/value structure through a plain run; the offset of a misplaced
        ``:`` or ``,`` or scalar (a structural error), else -1."""
        if not self._expect:
            return -1
        expect = self._expect
        obj = self.stack[-1] == "{"
        for i, ch in enumerate(run):
            if ch in " \t\r\n":
                continue
            state = expect[-1]
            if ch == ":":
                if state not in ("colon", "barekey"):
                    return i
                expect[-1] = "value"
            elif ch == ",":
                if state not in ("comma", "scalar"):
                    return i
                expect[-1] = "key" if obj else "value"
                if obj:
                    self._key[-1] = None
                elif len(self.stack) == 1:
                    self._elem += 1  # the next element of a root array
            elif state == "key":
                expect[-1] = "barekey"
            elif state == "value":
                expect[-1] = "scalar"
            elif state not in ("barekey", "scalar"):
                return i
        return -1

    def _string_done(self, raw: str | None) -> None:
        if not self._expect:
            return
        if self._str_is_key:
            self._key[-1] = _decode_simple(raw) if raw is not None else None
            self._expect[-1] = "colon"
            return
        self._after_value()
        depth = len(self.stack)
        root = self.stack[0]
        call_depth = 1 if root == "{" else 2
        if depth != call_depth or self._key[-1] not in NAME_KEYS or raw is None:
            return
        name = _decode_simple(raw)
        if name is not None:
            self.names.append((0 if root == "{" else self._elem, name))


_NEST_PLAIN: Final = re.compile(r'[^\[\]{}"\n]+')
_NEST_STRING: Final = re.compile(r'[^"\\\n]+')
_NOT_BLANK: Final = re.compile(r"[^ \t\r]")


class Resume:
    """After a payload the scanner could not read: where the next payload may begin.

    An opening bracket is the next payload's first character once the brackets the broken
    payload left open are closed, or where it is the first character of its line (one payload
    per line); until then it opens a level of the broken payload, so that
    ``{"name": "f" "arguments": {}}`` is one broken payload, not a broken one and ``{}``.
    Brackets in double-quoted strings are not counted; a string ends at the end of its line,
    so a stray quote misleads one line at most.  Linear: each character is looked at once,
    runs of plain characters in one regex step.
    """

    __slots__ = ("depth", "quote", "escape", "blank", "pos")

    def __init__(self, pos: int, depth: int, blank: bool) -> None:
        self.depth = depth  # levels of the broken payload still open
        self.quote = False
        self.escape = False
        self.blank = blank  # only white space since the last line break
        self.pos = pos  # in the input: everything before it was looked at

    def scan(self, text: str, origin: int, starts: str, n: int) -> int:
        """Look on in ``text[:n]`` (``text`` begins at ``origin`` in the input): where the
        next payload begins (one of ``starts``), in the input; -1 when it is not there."""
        i = self.pos - origin
        while i < n:
            if self.quote:
                m = None if self.escape else _NEST_STRING.match(text, i, n)
                if m is not None:
                    i = m.end()
                    continue
                ch = text[i]
                if self.escape:
                    self.escape = False
                elif ch == "\\":
                    self.escape = True
                else:  # the closing quote, or a line break
                    self.quote = False
                    self.blank = ch == "\n"
                i += 1
                continue
            m = _NEST_PLAIN.match(text, i, n)
            if m is not None:
                if self.blank and _NOT_BLANK.search(text, i, m.end()) is not None:
                    self.blank = False
                i = m.end()
                continue
            ch = text[i]
            if ch in starts and (self.depth <= 0 or self.blank):
                self.pos = origin + i  # (asked again, the same answer)
                return self.pos
            if ch == "\n":
                self.blank = True
            else:
                self.blank = False
                if ch == '"':
                    self.quote = True
                elif ch in "{[":
                    self.depth += 1
                else:
                    self.depth -= 1
            i += 1
        self.pos = origin + i
        return -1


def _decode_simple(raw: str) -> str | None:
    if "\\" not in raw:
        return raw[1:-1]
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
    """Text that is not strict JSON (or holds a non-finite number); ``pos`` is where the
    decoder stopped in it, when it says (-1 otherwise)."""

    def __init__(self, message: str, pos: int = -1) -> None:
        super().__init__(message)
        self.pos = pos


def _reject_constant(name: str) -> Any:
    raise JsonValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value) or math.isnan(value):
        raise JsonValueError(f"{text} is not a finite number")
    return value


#: one decoder for every strict load (json.loads with keywords builds a new one per call)
_STRICT: Final = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite)


#: (value, end) of the strict JSON value at an offset, as ``loads_strict`` reads it: the C
#: scanner of the strict decoder, without ``raw_decode``'s Python frame around it
_scan_strict: Final[Callable[[str, int], tuple[Any, int]]] = vars(_STRICT)["scan_once"]


def strict_value_at(text: str, pos: int) -> tuple[Any, int]:
    """The strict JSON value that begins at ``pos`` (no white space before it) and where it
    ends, as ``loads_strict`` reads it; ``json.JSONDecodeError`` (``pos`` where the decoder
    stopped) when there is none there, ``JsonValueError`` for a non-finite number."""
    try:
        return _scan_strict(text, pos)
    except StopIteration as stop:
        raise json.JSONDecodeError("Expecting value", text, stop.value) from None


def loads_strict(text: str) -> Any:
    """``json.loads`` without NaN/Infinity and without numbers that overflow to infinity."""
    try:
        if text.startswith("\ufeff"):
            return json.loads(text)  # refused as json.loads refuses it, with its words
        return _decode(text)
    except JsonValueError:
        raise
    except (ValueError, RecursionError) as exc:
        raise JsonValueError(str(exc), getattr(exc, "pos", -1)) from None


def _decode(text: str) -> Any:
    """``_STRICT.decode(text)`` without the two Python frames around its C scanner: white
    space, the value, white space to the end, and the same errors where they fail."""
    n = len(text)
    i = 0
    while i < n and text[i] in JSON_WS:  # (skip_ws spelled out: a call per value typed from text)
        i += 1
    try:
        value, end = _scan_strict(text, i)
    except StopIteration as stop:
        raise json.JSONDecodeError("Expecting value", text, stop.value) from None
    while end < n and text[end] in JSON_WS:
        end += 1
    if end != n:
        raise json.JSONDecodeError("Extra data", text, end)
    return value


#: What JSON counts as white space.
JSON_WS: Final = " \t\n\r"


def skip_ws(text: str, pos: int) -> int:
    """The first offset from ``pos`` that is not JSON white space (a few characters at most,
    where a regex match would cost more than the loop)."""
    n = len(text)
    while pos < n and text[pos] in JSON_WS:
        pos += 1
    return pos


def quoted_end(text: str, pos: int, n: int, quote: str) -> tuple[int, bool]:
    """Where the body of a string quoted by ``quote``, read from ``pos`` (no escape
    pending there) up to ``n``, ends: ``(offset of the closing quote, False)``, the first
    ``quote`` after an even run of backslashes (a backslash escapes the character after
    it); else ``(-1, whether a backslash at the end escapes the character at n)``."""
    while True:
        q = text.find(quote, pos, n)
        if q < 0:
            # (the backslash count only where a backslash stands last: most pieces end without one)
            return -1, n > pos and text[n - 1] == "\\" and _odd_backslashes_before(text, pos, n)
        if q == pos or text[q - 1] != "\\" or not _odd_backslashes_before(text, pos, q):
            return q, False
        pos = q + 1


def _odd_backslashes_before(text: str, pos: int, end: int) -> bool:
    """Whether ``text[pos:end]`` ends with an odd run of backslashes: one escapes ``text[end]``."""
    if end <= pos or text[end - 1] != "\\":
        return False
    body = text[pos:end]
    return (len(body) - len(body.rstrip("\\"))) % 2 == 1


def string_end(text: str, pos: int) -> int:
    """End of the double-quoted string starting at ``pos`` (or the end of the text)."""
    n = len(text)
    q = quoted_end(text, pos + 1, n, '"')[0]
    return n if q < 0 else q + 1


_DEPTH_STOP: Final = re.compile(r'["\[\]{}]')


def depth_exceeds(text: str, limit: int) -> bool:
    """Whether JSON text nests brackets (outside strings) deeper than ``limit``."""
    if len(text) <= limit or text.count("{") + text.count("[") <= limit:
        return False  # too few brackets to nest that deep, in strings or not
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
