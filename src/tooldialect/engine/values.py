"""Text values: a value written as raw text (``<parameter=k>VALUE</parameter>``) runs to
the marker that ends it — a stop the grammar accepts next, where the grammar can go on
after it, unless the family refuses it.  Searched with one alternation of the stops, so
a long value costs one C-level scan."""

from __future__ import annotations

import re
from typing import Final, cast

from ..compiled_grammar import LINE_RULE, Terminal
from ..lalr import END, Tok
from ..markerpattern import Arriving
from .cand import Block, Cand, TextValue
from .kinds import READING_WAIT, STOP_NO, Failure, Reading, Stop
from .shared import Shared
from .window import Window

__all__ = ["ESCAPE_GROUP", "TEXT", "Stops", "TextValues"]

TEXT: Final = "TEXT"  # the raw-text scanner's terminal
ESCAPE_GROUP: Final = "escaped"
_ESCAPE_PAIR: Final = rf"(?P<{ESCAPE_GROUP}>\\[\s\S])"  # a backslash and the character it escapes
#: The stops of a text value at a parser state: the terminals, one alternation of them, and
#: (where a stop may begin, the longest stop, which may still be arriving).
Stops = tuple[tuple[Terminal, ...], re.Pattern[str] | None, tuple[re.Pattern[str] | None, int, Arriving]]
#: What may follow each stop (by name) at one parser stack: None where anything may.
Follows = dict[str, "tuple[Terminal, ...] | None"]


class TextValues:
    """Reads text values (a ``Cand``'s ``text``: :class:`TextValue`)."""

    __slots__ = ("limits", "cache", "window")

    def __init__(self, shared: Shared, window: Window) -> None:
        self.limits = shared.limits
        self.cache = shared.cache
        self.window = window

    def begin(self, c: Cand, start: int, known: Stops | None = None) -> TextValue:
        """A text value ``c`` begins reading at ``start`` (``known``: its stops, when the
        caller keeps them for ``c``'s parser stack)."""
        stops, rx, first = self.stops(c) if known is None else known
        return TextValue(start, stops, rx, first)

    def stops(self, c: Cand) -> Stops:
        """The markers that can end a raw text value here: what the grammar accepts next."""
        key = (c.g.name, tuple(c.parser.stack))
        got = self.cache.get(key)
        if got is None:
            stops = tuple(
                t
                for t in c.g.terminals.values()
                if t.pattern is not None and t not in c.g.ignore and c.parser.accepts_seq([TEXT, t.name])
            )
            # (written to be searched: re finds where a stop may begin in C, markerpattern.search)
            parts = [f"(?:{t.marker.search or t.marker.source})" for t in stops]
            if parts and c.g.header.text_escapes == "backslash":
                parts.insert(0, _ESCAPE_PAIR)  # a backslash takes the next character: no stop
            rx = re.compile("|".join(parts)) if parts else None
            chars: set[str] = set()
            first = None
            if stops and all(t.marker.first is not None for t in stops):
                for t in stops:
                    chars |= t.marker.first or frozenset()
                first = re.compile("[" + "".join(re.escape(ch) for ch in sorted(chars)) + "]")
            reach = max((t.marker.max_width for t in stops), default=0)
            got = (stops, rx, (first, reach, Arriving(tuple(t.marker for t in stops))))
            self.cache[key] = got
        return cast(Stops, got)  # (the cache holds what this builds)

    def scan_text(self, b: Block, c: Cand) -> bool:
        """Read a raw text value up to the marker that ends it.  False to stop for now."""
        win = self.window.win
        base = self.window.base
        n = len(win)
        end = min(n, b.start + self.limits.max_block_chars + 1 - base)
        lp = c.pos - base
        t = c.text
        assert t is not None
        while True:
            q, verdict, lp = self.next_stop(c, t, lp, end)
            if q < 0:
                if self.window.eof and end == n:
                    if t.tentative is not None:
                        self.window.rewind(t.tentative)  # read on from there (once, at the end)
                        return self._end_text(c, t, t.tentative)
                    if self._line_value_ends(c, t) and self._cut_stop(t, lp, n, n) < 0:
                        return self._end_text(c, t, base + n)  # the end of the text ends a line
                    c.reach = base + n
                    c.fail(t.start, Failure.CUT, "value cut off by the end of the text")
                    return False
                hold = end
                rx = t.rx
                if rx is not None and ESCAPE_GROUP in rx.groupindex and lp < end and win[end - 1] == "\\":
                    hold = end - 1  # a backslash whose escaped character has not arrived yet
                if not self.window.eof:
                    cut = self._cut_stop(t, lp, end, hold)
                    if cut >= 0:
                        hold = cut
                c.pos = base + hold
                c.state = READING_WAIT
                return False
            if verdict is None:  # undecided until more text arrives
                c.pos = base + q
                c.state = READING_WAIT
                return False
            if verdict is Stop.YES:
                return self._end_text(c, t, base + q)
            if t.tentative is None:
                t.tentative = base + q  # Stop.MAYBE
            lp = q + 1

    def next_stop(
        self, c: Cand, t: TextValue, lp: int, end: int, blind: bool = False, follows: Follows | None = None
    ) -> tuple[int, Stop | None, int]:
        """The first stop of ``c``'s text value ``t`` in ``win[lp:end]`` that may end it, past
        escaped characters and stops that cannot (``Stop.NO``): ``(where it begins, Stop.YES
        or Stop.MAYBE, lp)``, or None in place of the verdict when more text is needed (a
        longer stop may still match there, or the stop is undecided); ``(-1, None, lp)``
        when none is found, ``lp`` where the last search began.  ``blind``: the tool being
        called is not known (a whole block read in one step), so a stop whose verdict
        depends on it (``Reader.tool_stops``) is undecided too.  ``follows``: what may
        follow each stop, kept by the caller for ``c``'s parser stack (``_follow``)."""
        win = self.window.win
        rx = t.rx
        stops = t.stops
        while True:
            m = rx.search(win, lp, end) if rx is not None else None
            if m is None:
                return -1, None, lp
            if m.lastgroup == ESCAPE_GROUP:
                lp = m.end()  # an escaped character is the value's, whatever it is
                continue
            q = m.start()
            term, stop_end = stops[0], q  # the longest stop matching here (the first on a tie)
            for stop in stops:
                probe = stop.probe
                if probe is not None and q + probe[0] < len(win) and win[q + probe[0]] in probe[1]:
                    continue  # (no match: a character it cannot hold there)
                exact = stop.marker.exact
                if exact is not None:
                    e = q + len(exact)
                    e = e if win[q:e] == exact else q
                elif (likely := stop.marker.likely) is not None and win[q : q + len(likely)] == likely:
                    e = q + len(likely)
                else:
                    m = stop.marker.regex.match(win, q)
                    e = q if m is None else m.end()
                if e > stop_end:
                    term, stop_end = stop, e
            near_end = not self.window.eof and q + t.first[1] >= len(win)  # (no stop reaches further)
            if near_end and any(stop is not term and stop.marker.needs_more(win, q) for stop in stops):
                return q, None, lp  # a longer stop may still match here (`NS<` arrived, `NS</x>` may be arriving)
            if blind and term.name in c.reader.tool_stops:
                return q, None, lp
            verdict = self._stop_valid(c, t, term, q, stop_end, follows)
            if verdict is not STOP_NO:
                return q, verdict, lp
            lp = q + 1

    def _end_text(self, c: Cand, t: TextValue, at: int) -> bool:
        value = self.window.slice(t.start, at)
        c.text = None
        c.shift(Tok(TEXT, value, t.start, at), None)
        c.pos = c.last_end = at
        c.state = Reading.RUN
        return True

    def _stop_valid(
        self, c: Cand, value: TextValue, term: Terminal, q: int, e: int, follows: Follows | None = None
    ) -> Stop | None:
        """Whether a marker ends the value (``Stop``), or None (undecided: more text is
        needed).

        The family may refuse a stop (a ``<parameter=NAME>`` whose NAME is not a parameter
        of the tool); otherwise a stop counts where the grammar can go on after it.
        """
        win = self.window.win
        if self.window.eof and e >= len(win) and term.bare and win[e - 1 : e].isalnum():
            # a name-like token that runs to the end of the text may be cut off (`<esc`): it
            # says nothing about where the value before it ends
            return Stop.NO
        hook = c.reader.stop_ok(term.name, win, e, c.current_name, self.window.eof)
        if hook is None:
            return None
        if hook is False:
            return Stop.NO
        if c.rule == LINE_RULE and c.parser.accepts_seq([TEXT, term.name, END]):
            return Stop.YES  # a line on its own ends at its line break, whatever follows
        f = e
        skipped = True
        while skipped:
            skipped = False
            for ig in c.g.ignore:
                got = ig.marker.match_end(win, f)
                e = f if got is None else got
                if e > f:
                    f = e
                    skipped = True
                elif not self.window.eof and ig.marker.literal is not None and ig.marker.needs_more(win, f):
                    return None  # an ignored marker may be arriving (a split "\\n")
        if f >= len(win):
            return Stop.YES if self.window.eof else None
        if follows is None:
            follow = self._follow(c, term)
        elif term.name in follows:
            follow = follows[term.name]
        else:
            follow = follows[term.name] = self._follow(c, term)
        if follow is None:  # another raw text value may begin there: anything can follow
            return Stop.YES
        for t in follow:
            if not self.window.eof and t.marker.needs_more(win, f):
                return None
            probe = t.probe
            if probe is not None and f + probe[0] < len(win) and win[f + probe[0]] in probe[1]:
                continue  # (no match)
            end = t.marker.match_end(win, f)
            if end is not None and end > f:
                return Stop.YES
        if self._closes_line_value(c, value, term):
            return Stop.YES
        return Stop.MAYBE

    def _line_value_ends(self, c: Cand, t: TextValue) -> bool:
        """Whether the end of the text completes the value (only asked there): a one-line
        value (a line break ends it) of a line on its own, after which the grammar may end:
        `shell/command>ls` at the very end is a call (decisions.md, "GLM lines at the end of
        the text")."""
        if c.rule != LINE_RULE:
            return False
        key = (c.g.name, tuple(c.parser.stack), "line_eof")
        got = self.cache.get(key)
        if got is None:
            got = any(stop.marker.match_end("\n", 0) for stop in t.stops) and c.parser.accepts_seq([TEXT, END])
            self.cache[key] = got
        return got

    def _cut_stop(self, t: TextValue, lp: int, end: int, hold: int) -> int:
        """The first place in ``[lp, hold)`` where one of the value's stops begins and is
        cut off by ``end`` (-1: none). Such a stop begins with one of its first characters,
        no further back than the longest stop: `ls<|im_e` or a lone `\r` at the end."""
        first, reach, arriving = t.first
        win = self.window.win
        lo = max(lp, end - reach)
        at = (m.start() for m in first.finditer(win, lo, hold)) if first is not None else range(lo, hold)
        for p in at:
            if arriving.at(win, p):
                return p
        return -1

    def _closes_line_value(self, c: Cand, t: TextValue, term: Terminal) -> bool:
        """Whether ``term`` is the block's closer, the block may end after it, and the value
        is one line (a line break also ends it): `shell/command>ls</tool_call>` then prose
        is `ls`, never a value that takes the closer in (a longer value could not reach past
        the line anyway)."""
        key = (c.g.name, tuple(c.parser.stack), term.name, "closes")
        got = self.cache.get(key)
        if got is None:
            got = (
                term in c.g.closers
                and any(stop.marker.match_end("\n", 0) for stop in t.stops)
                and c.parser.accepts_seq([TEXT, term.name, END])
            )
            self.cache[key] = got
        return got

    def _follow(self, c: Cand, term: Terminal) -> tuple[Terminal, ...] | None:
        """The markers that may come after ``term`` ends a raw text value here (None when a
        raw text value may come right after it, so that anything may follow)."""
        key = (c.g.name, tuple(c.parser.stack), term.name, "follow")
        if key in self.cache:
            return cast("tuple[Terminal, ...] | None", self.cache[key])
        if c.parser.accepts_seq([TEXT, term.name, TEXT]):
            got = None
        else:
            got = tuple(
                t
                for t in c.g.terminals.values()
                if t.pattern is not None and t not in c.g.ignore and c.parser.accepts_seq([TEXT, term.name, t.name])
            )
        self.cache[key] = got
        return got
