"""Searching prose for markers and runs: one C-level scan where a match may begin, then the
pattern tried there."""

from __future__ import annotations

import re
from typing import Any, Final

from ..markerpattern import NEAR, NEVER_ARRIVING, Arriving, Leads
from .kinds import NEVER

__all__ = ["MAX_FENCE_LINE", "RUNS", "SHORT", "Skipping"]

#: Text this short (a delta, what is held at a window's end) is searched by where a
#: marker's first two characters can stand (Catalog.lead_rx): a cheap test on a few
#: characters that spares most per-position checks, and slower than first_rx over a
#: long text, which is searched by first character.
SHORT: Final = 64

#: A fence line longer than this is no fence line.
MAX_FENCE_LINE: Final = 256

#: A backtick or tilde run from where it begins (to its end).
RUNS: Final = {"`": re.compile(r"`*"), "~": re.compile(r"~*")}


class Skipping:
    """A pattern whose matches all begin with one of a few characters, searched by first
    finding such a character and trying the pattern from there: a long alternation of
    markers is slow to try at every position.  The characters are found by the character
    class ``first``; when ``leads`` (``markerpattern.Leads``, of the same characters) is
    given, past ``NEAR`` characters by ``str.find``, as ``Leads.find`` does."""

    __slots__ = ("rx", "first", "leads", "pats", "arriving", "direct", "needle", "reach")

    def __init__(
        self, rx: re.Pattern[str], first: re.Pattern[str] | None, pats: tuple[Any, ...] = (), leads: Leads | None = None
    ) -> None:
        self.rx = rx
        self.first = first  # a character class: where a match may begin (None: anywhere)
        self.leads = leads
        self.pats = pats  # the alternatives' MarkerPatterns, when known
        self.arriving = Arriving(pats) if pats else NEVER_ARRIVING  # whether one may still match at a place
        # the pattern begins with a literal ``re`` finds by itself, in C: searched directly
        self.direct = False
        # a text every match holds ("": none known), and how far before it a match may
        # begin: where it is not, no match is; where it first is, no match begins more
        # than ``reach`` characters before it (``str.find`` runs at memory speed)
        self.needle = ""
        self.reach = 0

    def search(self, text: str, pos: int, end: int = NEVER) -> re.Match[str] | None:
        first, rx = self.first, self.rx
        if self.needle:
            at = text.find(self.needle, pos, end)
            if at < 0:
                return None
            pos = max(pos, at - self.reach)
        if first is None or self.direct:
            return rx.search(text, pos, end)
        if self.leads is not None:
            return self._far(text, pos, end, first, self.leads)
        while True:
            f = first.search(text, pos, end)
            if f is None:
                return None
            m = rx.match(text, f.start(), end)
            if m is not None:
                return m  # the leftmost match: none can begin before this character
            pos = f.start() + 1

    def _far(self, text: str, pos: int, end: int, first: re.Pattern[str], leads: Leads) -> re.Match[str] | None:
        """:meth:`search` with the characters found as ``Leads.find`` finds them (spelled
        out: this runs once per character tried)."""
        rx = self.rx
        while True:
            lim = pos + NEAR
            if lim < end:
                f = first.search(text, pos, lim)
                p = f.start() if f is not None else leads.beyond(text, lim, end)
                if p < 0:
                    return None
            else:
                f = first.search(text, pos, end)
                if f is None:
                    return None
                p = f.start()
            m = rx.match(text, p, end)
            if m is not None:
                return m
            pos = p + 1
