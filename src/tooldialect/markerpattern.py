"""A terminal's compiled pattern and what the tokenizer asks of it per character: whether
a match at a place may still change as text arrives (``MarkerPattern.needs_more``,
``Arriving``).  ``markers`` works the patterns out from their regular expressions; this
module is what the engine reads per marker and per character, kept apart so that the
compiled build compiles it (``markers`` reads the regex parser's internals, which differ
between Python versions)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Final

__all__ = [
    "ASCII",
    "NEAR",
    "NEVER_ARRIVING",
    "NO_MARKER",
    "SIMULATE",
    "Arriving",
    "Leads",
    "MarkerPattern",
    "lead_parts",
    "lead_seconds",
]

#: ``markers.simulate``, which that module puts here when it is imported (it reads the
#: regex parser's internals; every pattern but ``NO_MARKER`` is made there): whether some
#: path of a pattern wants a character past the end of a text.
SIMULATE: Final[list[Callable[[str, str], bool]]] = []
#: The tails a pattern remembers the simulation's answer for.
MAX_SEEN: Final = 1024
#: The characters ``MarkerPattern.places`` lists (and a terminal's probe may rule out).
ASCII: Final = frozenset(chr(code) for code in range(128))


#: How many characters of a run (``MarkerPattern.run``) are stepped over one by one.
_SHORT_RUN: Final = 4


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
    # the characters of a pattern that is a run of one or more of them (``[ \t\r\n]+``):
    # matched by stepping over them, not by running the regex
    run: frozenset[str] | None = field(default=None, repr=False, compare=False, hash=False)
    # the same pattern written so that a search finds it fast (``markers.searchable``: a
    # first character that case cannot change written before the ``(?i:…)`` group, where
    # ``re`` can find it without trying the pattern at every place); None: ``source``
    search: str | None = field(default=None, repr=False, compare=False, hash=False)
    # the characters a match may hold at each of its first places, as far as every match
    # has those places (``markers.places``; None at a place: any character, or unknown)
    places: tuple[frozenset[str] | None, ...] = field(default=(), repr=False, compare=False, hash=False)
    # the pattern's ASCII spelling when it is a run of single characters each of which has
    # one (``markers._likely``): text that begins with it is a match of its length, compared
    # before the regex is run; None: the regex decides
    likely: str | None = field(default=None, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "exact", None if self.ignorecase else self.literal)

    def match_end(self, text: str, pos: int) -> int | None:
        run = self.run
        if run is not None:
            end, n = pos, len(text)
            while end < n and text[end] in run:
                end += 1
                if end - pos > _SHORT_RUN:  # a long run: the regex crosses the rest in one step
                    m = self.regex.match(text, pos)
                    return m.end() if m else None
            return end if end > pos else None
        exact = self.exact
        if exact is not None:
            end = pos + len(exact)
            return end if text[pos:end] == exact else None
        likely = self.likely
        if likely is not None and text[pos : pos + len(likely)] == likely:
            return pos + len(likely)
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
NEVER_ARRIVING: Final = Arriving(())

#: What a scanned (external) terminal has as a marker pattern: nothing matches it, nothing
#: is arriving (``Terminal.marker``: code that reads markers never asks ``None``).
NO_MARKER: Final = MarkerPattern("(?!)", re.compile("(?!)"), 0, frozenset(), None, False)


def lead_seconds(pats: Sequence[MarkerPattern], skip: str = "") -> dict[str, str] | None:
    """Where one of ``pats`` may begin, by two characters: per character a match can begin
    with, the ASCII characters that can come second (as a match or the beginning of one);
    any other character may come second too, and so may the end of the text.  None when
    some pattern can begin with too many characters to list; the characters in ``skip``
    are left out (the caller finds them its own way)."""
    by_first: dict[str, list[MarkerPattern]] = {}
    for p in pats:
        if p.first is None:
            return None
        for ch in p.first:
            if ch not in skip:
                by_first.setdefault(ch, []).append(p)
    return {
        ch: "".join(
            chr(x)
            for x in range(128)
            if any(p.needs_more(ch + chr(x), 0) or p.match_end(ch + chr(x), 0) is not None for p in some)
        )
        for ch, some in sorted(by_first.items())
    }


def lead_parts(pats: Sequence[MarkerPattern], skip: str = "") -> list[str] | None:
    """:func:`lead_seconds` as regexes, one per first character: the character followed by
    one of its second characters, by any other character, or by the end of the text.  The
    second character is looked at, not read (a lookahead), so that no position is
    skipped."""
    seconds = lead_seconds(pats, skip)
    if seconds is None:
        return None
    return [
        re.escape(ch) + "(?=[" + "".join(re.escape(x) for x in after) + "\\x80-\\U0010ffff]|\\Z)"
        for ch, after in seconds.items()
    ]


#: How far from where a search begins a character class is tried at every position,
#: before ``str.find`` looks for each character (``Leads``).
NEAR: Final = 512
#: A letter a marker begins with is looked for with each character that may follow it
#: when there are at most this many (``Leads``).
MAX_PAIRS: Final = 3


def _char_class(chars: Sequence[str]) -> re.Pattern[str]:
    return re.compile("[" + "".join(re.escape(c) for c in chars) + "]" if chars else "(?!)")


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
    the class finds it within ``NEAR`` (``far`` is False: the marker search tries the
    class alone).  Where each such letter can be followed by only a few ASCII characters
    (``seconds``), :meth:`find` looks in text that is all ASCII for the other characters
    as above and for each letter with each of its followers (a *pair*, ``fu``, ``Ac``),
    before the nearest other found: a two-character ``str.find`` is ten times slower than
    a one-character one, and far faster than a stop at every ``f``."""

    __slots__ = ("first", "chars", "far", "bare", "singles", "pairs", "ends")

    def __init__(self, chars: str, seconds: Mapping[str, str] | None = None) -> None:
        """``seconds``: per character a marker may begin with, the ASCII characters that
        may follow it (:func:`lead_seconds`), where known."""
        self.chars = tuple(sorted(set(chars)))
        self.first = _char_class(self.chars)
        letters = [c for c in self.chars if c.isalnum()]
        self.far = not letters  # the marker search looks past NEAR by str.find
        paired = {c: seconds[c] for c in letters if seconds and c in seconds and len(seconds[c]) <= MAX_PAIRS}
        if len(paired) < len(letters):
            paired = {}  # (a letter looked for alone stops the search as often as the class)
        self.singles = tuple(c for c in self.chars if c not in paired)
        self.pairs = tuple(c + x for c, after in paired.items() for x in after)
        self.ends = "".join(paired)  # a letter that may begin a marker the end of the text cuts off
        self.bare = _char_class(self.singles)

    def find(self, text: str, pos: int, end: int) -> int:
        """The first position in ``text[pos:end]`` where a marker may begin: a character
        one begins with, or where pairs are known, a pair or a paired letter the end cuts
        off; -1 when there is none."""
        if self.pairs and text.isascii():
            return self._paired(text, pos, end)
        lim = pos + NEAR if self.far else end
        f = self.first.search(text, pos, lim if lim < end else end)
        if f is not None:
            return f.start()
        return self.beyond(text, lim, end) if lim < end else -1

    def beyond(self, text: str, pos: int, end: int) -> int:
        """:meth:`find` by ``str.find`` alone (``far``)."""
        return _found(text, pos, end, self.chars)

    def _paired(self, text: str, pos: int, end: int) -> int:
        if end > len(text):
            end = len(text)
        lim = pos + NEAR
        f = self.bare.search(text, pos, lim if lim < end else end)
        if f is not None:
            best = f.start()
        else:
            best = _found(text, lim, end, self.singles) if lim < end else -1
            if best < 0:
                best = end
        stop = best + 1 if best < end else end  # (a pair may end on the nearest other)
        for pair in self.pairs:
            p = text.find(pair, pos, stop)
            if p >= 0:
                best = p
                stop = p + 1
        if best < end:
            return best
        return end - 1 if pos < end and text[end - 1] in self.ends else -1


def _found(text: str, pos: int, end: int, chars: Sequence[str]) -> int:
    """The first position in ``text[pos:end]`` of one of ``chars``, each looked for only
    before the nearest found so far; -1 when there is none."""
    best = end if end < len(text) else len(text)
    limit = best
    for ch in chars:
        p = text.find(ch, pos, best)
        if p >= 0:
            best = p
    return best if best < limit else -1
