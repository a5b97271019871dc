"""Text values: a value written as raw text (``<parameter=k>VALUE</parameter>``) runs to
the marker that ends it — a stop the grammar accepts next, where the grammar can go on
after it, unless the family refuses it.  Searched with one alternation of the stops, so
a long value costs one C-level scan."""

from __future__ import annotations

import re
from typing import Any

from ..compiled_grammar import LINE_RULE, Terminal
from ..lalr import END, Tok
from ..markers import Arriving
from .cand import Block, Cand
from .kinds import Failure, Reading, Stop
from .shared import Shared
from .window import Window

__all__ = ["ESCAPE_GROUP", "TEXT", "TextValues"]

TEXT = "TEXT"  # the raw-text scanner's terminal
ESCAPE_GROUP = "escaped"
_ESCAPE_PAIR = rf"(?P<{ESCAPE_GROUP}>\\[\s\S])"  # a backslash and the character it escapes


class TextValues:
    """Reads text values (writes a ``Cand``'s ``text_*`` fields)."""

    __slots__ = ("policy", "cache", "window")

    def __init__(self, shared: Shared, window: Window) -> None:
        self.policy = shared.policy
        self.cache = shared.cache
        self.window = window

    def stops(self, c: Cand) -> tuple[tuple[Terminal, ...], re.Pattern[str] | None, tuple[Any, int, Arriving]]:
        """The markers that can end a raw text value here: what the grammar accepts next."""
        key = (c.g.name, tuple(c.parser.stack))
        got = self.cache.get(key)
        if got is None:
            stops = tuple(
                t
                for t in c.g.terminals.values()
                if t.pattern is not None and t not in c.g.ignore and c.parser.accepts_seq([TEXT, t.name])
            )
            parts = [f"(?:{t.pattern.source})" for t in stops]
            if parts and c.g.header.text_escapes == "backslash":
                parts.insert(0, _ESCAPE_PAIR)  # a backslash takes the next character: no stop
            rx = re.compile("|".join(parts)) if parts else None
            firsts = [t.pattern.first for t in stops]
            first = None
            if stops and all(f is not None for f in firsts):
                first = re.compile("[" + "".join(re.escape(ch) for ch in sorted(set().union(*firsts))) + "]")
            reach = max((t.pattern.max_width for t in stops), default=0)
            got = (stops, rx, (first, reach, Arriving(tuple(t.pattern for t in stops))))
            self.cache[key] = got
        return got

    def scan_text(self, b: Block, c: Cand) -> bool:
        """Read a raw text value up to the marker that ends it.  False to stop for now."""
        win = self.window.win
        base = self.window.base
        n = len(win)
        end = min(n, b.start + self.policy.max_block_chars + 1 - base)
        lp = c.pos - base
        while True:
            q, verdict, lp = self.next_stop(c, lp, end)
            if q < 0:
                if self.window.eof and end == n:
                    if c.text_tentative is not None:
                        self.window.rewind(c.text_tentative)  # read on from there (once, at the end)
                        return self._end_text(c, c.text_tentative)
                    if self._line_value_ends(c) and self._cut_stop(c, lp, n, n) < 0:
                        return self._end_text(c, base + n)  # the end of the text ends a line
                    c.reach = base + n
                    c.fail(c.text_start, Failure.CUT, "value cut off by the end of the text")
                    return False
                hold = end
                rx = c.text_rx
                if rx is not None and ESCAPE_GROUP in rx.groupindex and lp < end and win[end - 1] == "\\":
                    hold = end - 1  # a backslash whose escaped character has not arrived yet
                if not self.window.eof:
                    cut = self._cut_stop(c, lp, end, hold)
                    if cut >= 0:
                        hold = cut
                c.pos = base + hold
                c.state = Reading.WAIT
                return False
            if verdict is None:  # undecided until more text arrives
                c.pos = base + q
                c.state = Reading.WAIT
                return False
            if verdict is Stop.YES:
                return self._end_text(c, base + q)
            if c.text_tentative is None:
                c.text_tentative = base + q  # Stop.MAYBE
            lp = q + 1

    def next_stop(self, c: Cand, lp: int, end: int, blind: bool = False) -> tuple[int, Stop | None, int]:
        """The first stop of ``c``'s text value in ``win[lp:end]`` that may end it, past
        escaped characters and stops that cannot (``Stop.NO``): ``(where it begins, Stop.YES
        or Stop.MAYBE, lp)``, or None in place of the verdict when more text is needed (a
        longer stop may still match there, or the stop is undecided); ``(-1, None, lp)``
        when none is found, ``lp`` where the last search began.  ``blind``: the tool being
        called is not known (a whole block read in one step), so a stop whose verdict
        depends on it (``Reader.tool_stops``) is undecided too."""
        win = self.window.win
        rx = c.text_rx
        while True:
            m = rx.search(win, lp, end) if rx is not None else None
            if m is None:
                return -1, None, lp
            if m.lastgroup == ESCAPE_GROUP:
                lp = m.end()  # an escaped character is the value's, whatever it is
                continue
            q = m.start()
            term, stop_end = c.text_stops[0], q  # the longest stop matching here (the first on a tie)
            for t in c.text_stops:
                m = t.pattern.regex.match(win, q)
                if m is not None and m.end() > stop_end:
                    term, stop_end = t, m.end()
            near_end = not self.window.eof and q + c.text_first[1] >= len(win)  # (no stop reaches further)
            if near_end and any(t is not term and t.pattern.needs_more(win, q) for t in c.text_stops):
                return q, None, lp  # a longer stop may still match here (`NS<` arrived, `NS</x>` may be arriving)
            if blind and term.name in c.reader.tool_stops:
                return q, None, lp
            verdict = self._stop_valid(c, term, q, stop_end)
            if verdict is not Stop.NO:
                return q, verdict, lp
            lp = q + 1

    def _end_text(self, c: Cand, at: int) -> bool:
        value = self.window.slice(c.text_start, at)
        c.shift(Tok(TEXT, value, c.text_start, at), None)
        c.pos = c.last_end = at
        c.text_start = -1
        c.text_tentative = None
        c.state = Reading.RUN
        return True

    def _stop_valid(self, c: Cand, term: Terminal, q: int, e: int) -> Stop | None:
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
                m = ig.pattern.regex.match(win, f)
                if m is not None and m.end() > f:
                    f = m.end()
                    skipped = True
                elif not self.window.eof and ig.pattern.literal is not None and ig.pattern.needs_more(win, f):
                    return None  # an ignored marker may be arriving (a split "\\n")
        if f >= len(win):
            return Stop.YES if self.window.eof else None
        follow = self._follow(c, term)
        if follow is None:  # another raw text value may begin there: anything can follow
            return Stop.YES
        for t in follow:
            if not self.window.eof and t.pattern.needs_more(win, f):
                return None
            end = t.pattern.match_end(win, f)
            if end is not None and end > f:
                return Stop.YES
        if self._closes_line_value(c, term):
            return Stop.YES
        return Stop.MAYBE

    def _line_value_ends(self, c: Cand) -> bool:
        """Whether the end of the text completes the value (only asked there): a one-line
        value (a line break ends it) of a line on its own, after which the grammar may end:
        `shell/command>ls` at the very end is a call (decisions.md, "GLM lines at the end of
        the text")."""
        if c.rule != LINE_RULE:
            return False
        key = (c.g.name, tuple(c.parser.stack), "line_eof")
        got = self.cache.get(key)
        if got is None:
            got = any(t.pattern.match_end("\n", 0) for t in c.text_stops) and c.parser.accepts_seq([TEXT, END])
            self.cache[key] = got
        return got

    def _cut_stop(self, c: Cand, lp: int, end: int, hold: int) -> int:
        """The first place in ``[lp, hold)`` where one of the value's stops begins and is
        cut off by ``end`` (-1: none). Such a stop begins with one of its first characters,
        no further back than the longest stop: `ls<|im_e` or a lone `\r` at the end."""
        first, reach, arriving = c.text_first
        win = self.window.win
        lo = max(lp, end - reach)
        at = (m.start() for m in first.finditer(win, lo, hold)) if first is not None else range(lo, hold)
        for p in at:
            if arriving.at(win, p):
                return p
        return -1

    def _closes_line_value(self, c: Cand, term: Terminal) -> bool:
        """Whether ``term`` is the block's closer, the block may end after it, and the value
        is one line (a line break also ends it): `shell/command>ls</tool_call>` then prose
        is `ls`, never a value that takes the closer in (a longer value could not reach past
        the line anyway)."""
        key = (c.g.name, tuple(c.parser.stack), term.name, "closes")
        got = self.cache.get(key)
        if got is None:
            got = (
                term in c.g.closers
                and any(t.pattern.match_end("\n", 0) for t in c.text_stops)
                and c.parser.accepts_seq([TEXT, term.name, END])
            )
            self.cache[key] = got
        return got

    def _follow(self, c: Cand, term: Terminal) -> tuple[Terminal, ...] | None:
        """The markers that may come after ``term`` ends a raw text value here (None when a
        raw text value may come right after it, so that anything may follow)."""
        key = (c.g.name, tuple(c.parser.stack), term.name, "follow")
        if key in self.cache:
            return self.cache[key]
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
