"""A terminal's compiled pattern and what the tokenizer asks of it per character: whether
a match at a place may still change as text arrives (``MarkerPattern.needs_more``,
``Arriving``).  ``markers`` works the patterns out from their regular expressions; this
module is what the engine reads per marker and per character, kept apart so that the
compiled build compiles it (``markers`` reads the regex parser's internals, which differ
between Python versions)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

__all__ = ["NEAR", "NEVER_ARRIVING", "NO_MARKER", "SIMULATE", "Arriving", "Leads", "MarkerPattern", "lead_parts"]

#: ``markers.simulate``, which that module puts here when it is imported (it reads the
#: regex parser's internals; every pattern but ``NO_MARKER`` is made there): whether some
#: path of a pattern wants a character past the end of a text.
SIMULATE: list[Callable[[str, str], bool]] = []
#: The tails a pattern remembers the simulation's answer for.
MAX_SEEN = 1024


@dataclass(frozen=True)
class MarkerPattern:
    """A compiled terminal pattern with what the tokenizer needs to know about it."""

    source: str
    regex: re.Pattern[str]
    max_width: int  # longest possible match, in characters (may be huge when unbounded)
    first: frozenset[str] | None  # characters a match can start with; None = too many to list
    literal: str | None  # the exact text, when the pattern is one literal (case kept)
    ignorecase: bool  # only meaningful with ``literal``
    # what the simulation answered for a tail (a pure function of it: asked again as a
    # text grows by a delta at a time), up to MAX_SEEN tails
    _seen: dict[str, bool] = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)
    # ``literal`` when case counts: matched by comparing text, not by running the regex
    exact: str | None = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "exact", None if self.ignorecase else self.literal)

    def match_end(self, text: str, pos: int) -> int | None:
        exact = self.exact
        if exact is not None:
            end = pos + len(exact)
            return end if text[pos:end] == exact else None
        m = self.regex.match(text, pos)
        return m.end() if m else None

    def needs_more(self, text: str, pos: int) -> bool:
        """True when a match at ``pos`` could change if text were appended."""
        if pos + self.max_width < len(text):
            return False  # the pattern cannot reach the end of the buffer from here
        tail = text[pos:]
        if self.literal is not None:
            if len(tail) >= len(self.literal):
                return False
            lit = self.literal[: len(tail)]
            return tail.lower() == lit.lower() if self.ignorecase else tail == lit
        seen = self._seen
        got = seen.get(tail)
        if got is None:
            got = SIMULATE[0](self.source, tail)
            if len(seen) < MAX_SEEN:
                seen[tail] = got
        return got


class Arriving:
    """Whether one of a few patterns may match at a place once more text arrives (any
    one's :meth:`MarkerPattern.needs_more`), asked at the last few characters of a
    growing text again and again.  The answer depends only on the text from that place
    to the end, so it is remembered by that text: for a tail of at most ``MAX_TAIL``
    characters, and at most ``MAX_SEEN`` of them."""

    MAX_TAIL: ClassVar[int] = 64
    MAX_SEEN: ClassVar[int] = 1024
    __slots__ = ("pats", "_seen")

    def __init__(self, pats: tuple[MarkerPattern, ...]) -> None:
        self.pats = pats
        self._seen: dict[str, bool] = {}

    def at(self, text: str, pos: int) -> bool:
        if len(text) - pos > self.MAX_TAIL:
            return any(p.needs_more(text, pos) for p in self.pats)
        tail = text[pos:]
        got = self._seen.get(tail)
        if got is None:
            got = any(p.needs_more(text, pos) for p in self.pats)
            if len(self._seen) < self.MAX_SEEN:
                self._seen[tail] = got
        return got


#: No pattern: nothing is ever arriving (a watch with nothing to watch).
NEVER_ARRIVING = Arriving(())

#: What a scanned (external) terminal has as a marker pattern: nothing matches it, nothing
#: is arriving (``Terminal.marker``: code that reads markers never asks ``None``).
NO_MARKER = MarkerPattern("(?!)", re.compile("(?!)"), 0, frozenset(), None, False)


def lead_parts(pats: Sequence[MarkerPattern], skip: str = "") -> list[str] | None:
    """Where one of ``pats`` may begin, by two characters: per character a match can begin
    with, a regex for it followed by an ASCII character that can come second (as a match
    or the beginning of one), by any other character, or by the end of the text.  The
    second character is looked at, not read (a lookahead), so that no position is
    skipped.  None when some pattern can begin with too many characters to list; the
    characters in ``skip`` are left out (the caller finds them its own way)."""
    by_first: dict[str, list[MarkerPattern]] = {}
    for p in pats:
        if p.first is None:
            return None
        for ch in p.first:
            if ch not in skip:
                by_first.setdefault(ch, []).append(p)
    parts = []
    for ch, some in sorted(by_first.items()):
        seconds = "".join(
            re.escape(chr(x))
            for x in range(128)
            if any(p.needs_more(ch + chr(x), 0) or p.match_end(ch + chr(x), 0) is not None for p in some)
        )
        parts.append(re.escape(ch) + "(?=[" + seconds + "\\x80-\\U0010ffff]|\\Z)")
    return parts


#: How far from where a search begins a character class is tried at every position,
#: before ``str.find`` looks for each character (``Leads``).
NEAR = 512


class Leads:
    """Where a marker may begin in a text: the first of the characters markers begin
    with.  Near where a search begins it is found by a character class (``first``, one
    regex call); further on, where the class found none, by ``str.find`` for each
    character (:meth:`beyond`), whose scan runs at memory speed where a class is tried at
    every position, some fifty times slower over text with no marker in it.  Where such
    characters stand close together (``<``-heavy code) the one regex call costs less than
    a ``str.find`` per character: in the pure build the two cost the same over a gap of a
    few hundred characters.  Each character is looked for only before the nearest found
    so far, so a search costs at most their number times the distance to what it finds.

    When a marker may begin with a letter or a digit (``A`` of ``Action:``, ``f`` of
    ``functools[``: every family read together), prose has one every few characters and
    the class never looks further than ``NEAR`` without finding one: such leads search
    by the class alone (``far`` is False), as cheaply as the class itself."""

    __slots__ = ("first", "chars", "far")

    def __init__(self, chars: str) -> None:
        self.chars = tuple(sorted(set(chars)))
        self.first = re.compile("[" + "".join(re.escape(c) for c in self.chars) + "]" if chars else "(?!)")
        self.far = not any(c.isalnum() for c in self.chars)  # str.find past NEAR

    def find(self, text: str, pos: int, end: int) -> int:
        """The first position in ``text[pos:end]`` of a character a marker begins with, or
        -1."""
        lim = pos + NEAR if self.far else end
        f = self.first.search(text, pos, lim if lim < end else end)
        if f is not None:
            return f.start()
        return self.beyond(text, lim, end) if lim < end else -1

    def beyond(self, text: str, pos: int, end: int) -> int:
        """:meth:`find` by ``str.find`` alone."""
        best = end if end < len(text) else len(text)
        limit = best
        for ch in self.chars:
            p = text.find(ch, pos, best)
            if p >= 0:
                best = p
        return best if best < limit else -1
