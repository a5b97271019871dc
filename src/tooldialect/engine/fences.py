"""Fenced code and inline code spans: text that is shown as written, never read for calls
(a reasoning closer inside reasoning stays live)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Final

from .events import Sink
from .kinds import Mode
from .observe import Observer
from .prose import Prose
from .search import MAX_FENCE_LINE, RUNS
from .window import Held, Window

__all__ = ["MAX_RUN", "CodeSpan", "Fences"]

_INLINE_STOP: Final = re.compile(r"`+|\n[ \t]*\n")
_SPACES: Final = re.compile(r"[ \t]*")
#: A backtick or tilde run longer than this opens no fence and no code span: it is text.
#: Deciding that early keeps a run from being held (and read again) while it grows.
MAX_RUN: Final = 256


@functools.lru_cache(maxsize=64)
def _closer(ch: str, n: int) -> re.Pattern[str]:
    """A fence's closing line: its first ``n`` fence characters (the rest of the run is
    plain text, so a run still growing is never read twice)."""
    return re.compile(r"\n {0,3}" + re.escape(ch) + "{" + str(n) + "}")


@dataclass(slots=True)
class CodeSpan:
    """An inline code span opened by a backtick run, until its closing run (or a blank line)."""

    start: int  # where the opening run begins
    run: int  # its length
    search: int  # the closing run is looked for from here
    tail: str  # the four characters before ``start``
    blank: int | None = None  # a line break read so far followed only by spaces (a blank line may follow)
    in_run: bool = False  # inside a backtick run already longer than the opening one
    held: Held = field(init=False)

    def __post_init__(self) -> None:
        self.held = Held(self.start, self.tail)


class Fences:
    """Reads fenced code and code spans (owns ``fence``, ``span``, ``inline_floor``,
    ``long_run``).  Inside them a reasoning closer stays live: it asks prose where one is."""

    __slots__ = ("window", "sink", "prose", "observer", "fence", "span", "inline_floor", "long_run")

    def __init__(self, window: Window, sink: Sink, prose: Prose, observer: Observer | None) -> None:
        self.window = window
        self.sink = sink
        self.prose = prose
        self.observer = observer
        self.fence: tuple[str, int] | None = None  # an open fence: its character and run length
        self.span: CodeSpan | None = None  # an open inline code span
        self.inline_floor = 0  # a backtick before this opens no code span (its span ended at a blank line)
        self.long_run = ""  # inside a backtick or tilde run that is plain text (see MAX_RUN)

    def _text(self, s: str) -> None:
        self.sink.text(s, self.prose.channel)

    def step_run(self) -> Mode | None:
        """A backtick or tilde run too long to open anything: text to its end."""
        w = self.window
        win = w.win
        run = RUNS[self.long_run].match(win, w.cur)
        assert run is not None  # (a run: it matches, empty or not)
        end = run.end()
        self._text(win[w.cur : end])
        w.move(end)
        if end == len(win) and not w.eof:
            return None
        self.long_run = ""
        return Mode.PROSE

    def at_run(self) -> Mode | None:
        """A backtick or tilde at the reading position: a fence, a code span, or text."""
        obs = self.observer
        if obs is None:
            return self._at_run(self.window.cur)
        mark = obs.mark()
        got = self._at_run(self.window.cur)
        if got is Mode.FENCE:  # the fence's opening line is part of the example
            obs.examples_since(mark)
        return got

    def _line_lead_ok(self, q: int) -> bool:
        before = self.window.tail_at(q)
        nl = before.rfind("\n")
        if nl < 0:
            return False
        lead = before[nl + 1 :]
        return lead == " " * len(lead)

    def _at_run(self, q: int) -> Mode | None:
        win = self.window.win
        ch = win[q]
        run = RUNS[ch].match(win, q, min(len(win), q + MAX_RUN + 1))
        assert run is not None  # (a run: it matches, empty or not)
        run_end = run.end()
        if run_end - q > MAX_RUN:
            self.long_run = ch  # plain text to the end of the run (step_run)
            self.window.move(q)
            return Mode.RUN
        if run_end == len(win) and not self.window.eof:
            return None
        n = run_end - q
        if n >= 3 and self._line_lead_ok(q):
            nl = win.find("\n", run_end, run_end + MAX_FENCE_LINE)
            if nl < 0 and not self.window.eof and len(win) - run_end < MAX_FENCE_LINE:
                return None
            line_end = nl if nl >= 0 else min(len(win), run_end + MAX_FENCE_LINE)
            info = win[run_end:line_end].strip()
            if ch == "`" and "`" in info:
                info = ""  # not a fence line; treat the run as inline code below
            elif info:
                self._text(win[q:line_end])
                self.window.move(line_end)
                self.fence = (ch, n)
                return Mode.FENCE
            else:
                self._text(win[q:run_end])
                self.window.move(run_end)
                return Mode.PROSE
        if ch == "~":
            self._text(win[q:run_end])
            self.window.move(run_end)
            return Mode.PROSE
        if self.window.base + q < self.inline_floor:
            self._text(win[q:run_end])
            self.window.move(run_end)
            return Mode.PROSE
        self.span = span = CodeSpan(self.window.base + q, n, self.window.base + run_end, self.window.tail_at(q))
        self.window.hold(span.held)
        self.window.move(q)
        return Mode.CODE

    def step_fence(self) -> Mode | None:
        assert self.fence is not None
        ch, n = self.fence
        win = self.window.win
        closer = _closer(ch, n)
        m = closer.search(win, self.window.cur)
        rm = self.prose.reasoning_close_in(self.window.cur, m.start() if m else len(win))
        if rm is not None:
            self.fence = None
            self._text(win[self.window.cur : rm])
            self.window.move(rm)
            return Mode.PROSE
        if m is not None:
            # the fence is closed; the rest of the closing run is text (_step_prose reads
            # it, however long it grows)
            self._text(win[self.window.cur : m.end()])
            self.window.move(m.end())
            self.fence = None
            self.long_run = ch
            return Mode.RUN
        hold = len(win)
        if not self.window.eof:
            nl = win.rfind("\n", self.window.cur)
            if nl >= 0 and re.fullmatch(r"\n {0,3}" + re.escape(ch) + "*", win[nl:]):
                hold = nl
            p = self.prose.partial_reasoning_close(self.window.cur, hold)
            if p >= 0:
                hold = p
        self._text(win[self.window.cur : hold])
        self.window.move(hold)
        return None

    def step_code(self) -> Mode | None:
        span = self.span
        assert span is not None
        start, n, search, blank, in_run = span.start, span.run, span.search, span.blank, span.in_run
        win = self.window.win
        pos = search - self.window.base
        limit = len(win)
        rm = self.prose.reasoning_close_in(pos, limit)
        if in_run:
            # the rest of a backtick run already longer than the opening one: not a closer
            run = RUNS["`"].match(win, pos, rm if rm is not None else limit)
            assert run is not None  # (a run: it matches, empty or not)
            pos = run.end()
            if pos == limit and not self.window.eof:
                span.search = self.window.base + pos
                return None
            span.in_run = False
        if blank is not None:
            # a line break followed so far only by spaces and tabs (read already): a blank
            # line if the next other character is a line break
            run = _SPACES.match(win, pos, rm if rm is not None else limit)
            assert run is not None  # (a run: it matches, empty or not)
            q = run.end()
            if q < limit and q != rm:
                if win[q] == "\n":
                    return self._inline_done(start, blank, False)
                span.blank = None
                pos = q
            elif rm is None and not self.window.eof:
                span.search = self.window.base + q
                return None
        while True:
            m = _INLINE_STOP.search(win, pos, rm if rm is not None else limit)
            if m is None:
                break
            tok = m.group()
            if tok.startswith("`"):
                if m.end() == len(win) and not self.window.eof:
                    if len(tok) > n:  # too long to close the span, however it grows
                        span.search = self.window.base + m.end()
                        span.in_run = True
                    else:
                        span.search = self.window.base + m.start()
                    return None
                if len(tok) == n:
                    return self._inline_done(start, self.window.base + m.end(), True)
                pos = m.end()
                continue
            return self._inline_done(start, self.window.base + m.start(), False)
        if rm is not None or self.window.eof:
            return self._inline_done(start, self.window.base + (rm if rm is not None else limit), False)
        nl = win.rfind("\n", pos)
        run = _SPACES.match(win, nl + 1)
        assert run is not None  # (a run: it matches, empty or not)
        if nl >= 0 and run.end() == limit:
            # the text ends in a line break and white space: read on from the end, and
            # remember where the possible blank line began (never read that run again)
            span.search = self.window.base + limit
            span.blank = self.window.base + nl
            return None
        hold = limit
        p = self.prose.partial_reasoning_close(pos, hold)
        if p >= 0:
            hold = p
        span.search = self.window.base + hold
        return None

    def _inline_done(self, start: int, end: int, matched: bool) -> Mode:
        """The span ends at ``end``: matched, its text is code; else the backtick run is text
        and what followed it is read again as prose."""
        span = self.span
        assert span is not None
        self.span = None
        self.window.restore()  # the held text is read again, as what it turned out to be
        w = self.window
        q = start - w.base
        obs = self.observer
        if obs is not None:
            obs.in_code(matched)
        if matched:
            self._text(w.win[q : end - w.base])
            w.move(end - w.base)
        else:
            self.inline_floor = max(self.inline_floor, end)
            self._text(w.win[q : q + span.run])
            w.move(q + span.run)
        if obs is not None:
            obs.in_code(False)
        return Mode.PROSE
