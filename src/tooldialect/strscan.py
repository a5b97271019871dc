"""Quoted string literals inside model text: an incremental scanner for ``PY_STRING``.

A marker regex is capped at 512 characters, and a string argument may hold a whole
file, so a grammar declares its string literals (``%declare PY_STRING``) and the engine
finds where each one ends while the text is still arriving: ``'…'`` or ``"…"``, tripled
or not, or a backtick template (never tripled), where a backslash always takes the
character after it (an escaped quote never ends a string, in raw strings too, as in
Python).  The scanner only finds the end; what the literal means (its escapes, its
prefix, a raw newline in a one-line string) is for the reader to decide
(:mod:`tooldialect.pyliteral`).  Each character is read once, runs
of plain characters at C speed; a quote that may begin a closing triple is re-read at
most twice when the text arrives in pieces.
"""

from __future__ import annotations

import re
from typing import Final

from .jsonscan import CUT, DONE, MORE, quoted_end

__all__ = ["STRING_STARTS", "StringScanner"]

#: The characters a string literal begins with.
STRING_STARTS: Final = "'\"`"

_PLAIN: Final = {"'": re.compile(r"[^'\\]+"), '"': re.compile(r'[^"\\]+')}  # inside a triple-quoted string
_TRIPLES: Final = "'\""  # the quotes that may be tripled (a backtick never is)


class StringScanner:
    """Finds the end of one quoted string literal, one delta at a time.

    ``scan(text, pos, eof, end, origin)`` has :class:`~tooldialect.jsonscan.JsonScanner`'s
    contract: it continues from ``pos`` and returns ``(DONE, end offset)``, ``(MORE,
    where to continue)`` or ``(CUT, pos)`` when the text ended inside the string.  It
    never fails: any character may be inside a string.
    """

    __slots__ = ("quote", "escape", "names", "stack", "error")

    def __init__(self) -> None:
        self.quote = ""  # the opening quote (' " ''' or \"\"\"), "" until it is read
        self.escape = False  # the last character read was a backslash
        self.names: tuple[tuple[int, str], ...] = ()  # a string names no call
        self.stack: list[str] = []
        self.error = ""

    def string_run(self, piece: str) -> int:
        """Whether ``piece`` only continues the one-quote string being read, as ``scan``
        would read it: no closing quote, and no backslash but perhaps the last character
        (it escapes the next piece's first).  -1 if not; else 1 when ``piece`` ends with
        that backslash, 0 when nothing is pending.  Reads nothing: :meth:`read_run` does."""
        q = self.quote
        if len(q) != 1:
            return -1
        body = piece
        if self.escape:
            if not piece:
                return -1
            body = piece[1:]  # the character the last piece's backslash escapes
        if q in body:
            return -1
        slash = body.find("\\")
        if slash < 0:
            return 0
        return 1 if slash == len(body) - 1 else -1

    def read_run(self, piece: str, pending: int) -> None:
        """Read ``piece``, for which :meth:`string_run` said ``pending``."""
        self.escape = bool(pending)

    def scan(self, text: str, pos: int, eof: bool, end: int | None = None, origin: int = 0) -> tuple[str, int]:
        n = len(text) if end is None else min(end, len(text))
        # more text may arrive right at n (not when n is a cap inside text already read)
        growing = not eof and n == len(text)
        if not self.quote:
            if pos >= n:
                return (CUT, pos) if eof else (MORE, pos)
            q = text[pos]
            if q not in _TRIPLES:
                self.quote = q
                pos += 1
            elif text.startswith(q * 3, pos, n):
                self.quote = q * 3
                pos += 3
            elif growing and n - pos < 3 and (q * 3).startswith(text[pos:n]):
                return MORE, pos  # ' or '' may be the start of '''
            else:
                self.quote = q
                pos += 1
        q = self.quote[0]
        if len(self.quote) == 1:
            if pos < n:
                # after a backslash that ended the last piece, the string goes on past its escape
                end, self.escape = quoted_end(text, pos + 1 if self.escape else pos, n, q)
                if end >= 0:
                    return DONE, end + 1
                pos = n
            return (CUT, pos) if eof else (MORE, pos)
        plain = _PLAIN[q]
        while pos < n:
            if self.escape:
                self.escape = False
                pos += 1
                continue
            m = plain.match(text, pos, n)
            if m is not None:
                pos = m.end()
                if pos >= n:
                    break
            if text[pos] == "\\":
                if pos + 1 < n:
                    pos += 2  # the backslash and the character it escapes
                else:
                    self.escape = True
                    pos += 1
                continue
            if text.startswith(self.quote, pos, n):
                return DONE, pos + 3
            if growing and self.quote.startswith(text[pos:n]):
                return MORE, pos  # the closing triple may be arriving
            pos += 1  # a lone quote inside a triple-quoted string
        return (CUT, pos) if eof else (MORE, pos)
