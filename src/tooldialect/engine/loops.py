"""The repetition-loop watch: a block's opener met again and again inside it, with no
closer between, is a model stuck in a loop (DESIGN §9); it is removed whole and reported
once, whatever its length."""

from __future__ import annotations

import re
from collections.abc import Callable

from ..catalog import Marker
from ..markers import after_lead, required_runs
from ..records import Issue, excerpt
from .cand import Block, Cand, furthest
from .events import Sink
from .kinds import READING_RUN, READING_WAIT, Failure, Kind, Reading, Verdict, item_end
from .ledger import Ledger
from .search import Skipping
from .shared import Shared
from .window import Window

__all__ = ["Loops"]


def _loop_pattern(opens: list[str], closes: list[str]) -> tuple[re.Pattern[str], bool]:
    """``(opener|…)|(closer|…)``: group 1 an opener, group 2 a closer.  When every one of
    them begins with the same character written as itself (``<``), that character is
    written once before both groups, so that ``re`` finds where a match may begin in C
    and the pattern can be searched for directly: the same matches, the same group taken
    (only which group matched is read, never its span).  True with such a pattern."""
    split = [after_lead(p) for p in opens + closes]
    leads = {got[0] for got in split if got is not None}
    if not opens or None in split or len(leads) != 1:
        cl = "|".join(f"(?:{p})" for p in closes) or "(?!)"
        return re.compile("(" + "|".join(f"(?:{p})" for p in opens) + f")|({cl})"), False
    rests = [got[1] for got in split if got is not None]
    o = "|".join(f"(?:{r})" for r in rests[: len(opens)])
    c = "|".join(f"(?:{r})" for r in rests[len(opens) :]) or "(?!)"
    return re.compile(f"{re.escape(leads.pop())}(?:({o})|({c}))"), True


def _needle(sources: list[str], others: list[str]) -> str:
    """A text (three characters or more) every match of every one of ``sources`` holds, a
    piece of a run of literal characters each holds (``markers.required_runs``): of those,
    the one the fewest of ``others`` (the spellings of the grammar's markers) hold, the
    longest of these; "" when there is none.  (Kimi K2's section markers: ``_section_``,
    where ``<|tool_call`` begins every call marker too.)"""
    runs = [required_runs(s) for s in sources]
    pieces = {
        run[i:j] for run in (runs[0] if runs else ()) for i in range(len(run)) for j in range(i + 3, len(run) + 1)
    }
    held = [p for p in pieces if all(any(p in run for run in each) for each in runs[1:])]
    return min(held, key=lambda p: (sum(p in o for o in others), -len(p), p), default="")


class Loops:
    """Runs a block's loop watch, and swallows a loop once one is found."""

    __slots__ = ("cat", "limits", "cache", "window", "sink", "ledger")

    def __init__(self, shared: Shared, window: Window, sink: Sink, ledger: Ledger) -> None:
        self.cat = shared.cat
        self.limits = shared.limits
        self.cache = shared.cache
        self.window = window
        self.sink = sink
        self.ledger = ledger

    def loop_rx(self, openers: list[Marker], cands: list[Cand]) -> Skipping:
        """One pattern for the block's opener (group 1) and the closers that pair with it
        (group 2): ``X_OPEN`` pairs with ``X_CLOSE`` and ``FURNITURE_X_CLOSE``."""
        if len(openers) == 1 and len(cands) == 1:  # (most blocks: the same key, made directly)
            key: tuple[str, tuple[str, ...], tuple[str, ...]] = (
                "loop",
                (openers[0].terminal.name,),
                (cands[0].g.name,),
            )
        else:
            # (comprehensions: the compiled build reads a native attribute where attrgetter
            # would look each name up generically)
            key = ("loop", tuple([mk.terminal.name for mk in openers]), tuple([c.g.name for c in cands]))
        got = self.cache.get(key)
        if got is None:
            stems = {mk.terminal.stem for mk in openers}
            pats = [mk.terminal.marker for mk in openers if not mk.terminal.external]
            closers = [t.marker for c in cands for t in c.g.closers if not t.external and t.stem in stems]
            opens = sorted({p.search or p.source for p in pats})
            closes = sorted({p.search or p.source for p in closers})
            chars: set[str] | None = set()
            for p in pats + closers:
                if p.first is None or chars is None:
                    chars = None
                else:
                    chars |= p.first
            first = re.compile("[" + "".join(re.escape(c) for c in sorted(chars)) + "]") if chars else None
            # group 1: the opener, group 2: a closer (pats only with first: every
            # pattern's first characters are known)
            rx, direct = _loop_pattern(opens, closes)
            got = Skipping(rx, first, tuple(pats + closers) if first is not None else ())
            got.direct = direct
            # a text every match holds, found before the pattern is searched for
            spelled = [t.marker.literal or t.marker.likely for c in cands for t in c.g.terminals.values()]
            got.needle = _needle(opens + closes, [s for s in spelled if s])
            got.reach = max((p.max_width for p in pats + closers), default=0) - len(got.needle)
            self.cache[key] = got
        return got

    def scan(self, b: Block) -> bool:
        """Count the block's opener in the text every live candidate has read; more than
        ``max_repeats`` with no closer between is a repetition loop.  True when it is one."""
        cands = b.cands
        # (lead: the candidate that speaks for the block before a place; a block's only one, always)
        own: set[int] | Callable[[int], set[int]]
        if len(cands) == 1:
            c = cands[0]
            own = c.opened_at
            limit = c.pos if c.live else c.progress
        else:
            live = [c.pos for c in cands if c.state is READING_RUN or c.state is READING_WAIT]  # (Cand.live)
            limit = min(live) if live else furthest(cands)
            own = lambda at: self.lead(b, at).opened_at  # noqa: E731
        w = self.window
        watch = b.loop
        assert watch is not None  # (asked only of a block that has one)
        if watch.pos < w.base:  # pragma: no cover - the window keeps loop.pos (see _compact)
            self.window.rewind(watch.pos)
        end = min(limit - w.base, len(w.win))
        if w.base + end == watch.scanned:
            return False  # no text read since the last scan, which found no loop in it
        return watch.scan(w.win, w.base, end, self.cat.max_width, self.limits.max_repeats, own)

    def lead(self, b: Block, at: int) -> Cand:
        """The candidate that speaks for the block on the text before ``at``: among those
        still standing there (a failure seen only at or after it does not count), the
        same at every chunking."""
        rank = self.cat.rank
        alive = [c for c in b.cands if c.state is not Reading.FAILED or c.reach >= at]
        return alive[0] if len(alive) == 1 else min(alive or b.cands, key=lambda c: rank[c.g.name])

    def begin(self, b: Block) -> None:
        """A loop: what the block completed before the loop was found stands; the rest of
        the block, up to a closer of its opener or the end of the text, is the loop (the
        block goes on in ``Phase.LOOP``: :meth:`step`)."""
        loop = b.loop
        assert loop is not None and loop.at is not None
        at = loop.at
        c0 = self.lead(b, at)
        if b.leader is not None and b.leader is not c0:  # pragma: no cover - a leader stands alone
            b.emitted = 0
        while b.emitted < len(c0.items):
            item = c0.items[b.emitted]
            if (item.kind is Kind.CALL or item.kind is Kind.ISSUE) and item_end(item.obj) > at:
                break
            b.emitted += 1
            if item.kind is not Kind.TEXT:
                self.ledger.emit_item(b, item)
        # the rest of the block runs from the end of the last call that stands (or from the
        # block's start): the report covers all of it, also what comes before the run of
        # openers (a candidate reading on past a closer of the opener)
        stood = [item_end(item.obj) for item in c0.items[: b.emitted] if item.kind is Kind.CALL]
        loop.first = min(loop.first, max(stood, default=b.start))
        b.winner = c0
        self.ledger.abort_started(b, "repetition_loop")
        for c in b.cands:
            if c.live:
                c.fail(c.pos, Failure.LOOP, "inside a repetition loop")

    def step(self, b: Block) -> Verdict:
        """Swallow the loop up to a closer of its opener or the end of the text, counting the
        openers; then report it once.  ``Verdict.RECOVER`` at a closer: the closers right
        after it go with the block too (``Recovery.absorb``)."""
        loop = b.loop
        assert loop is not None  # (Phase.LOOP: the watch found it)
        w = self.window
        if loop.pos < w.base:
            self.window.rewind(loop.pos)
        win = w.win
        lp = loop.pos - w.base
        hold = 0 if self.window.eof else self.cat.max_width
        closer = None
        resume = lp
        while True:
            m = loop.rx.search(win, lp)
            if m is None:
                # nothing of the loop is kept but the last marker width (a marker may be arriving)
                resume = max(lp, len(win) - hold)
                break
            if m.end() > len(win) - hold:
                resume = m.start()  # a marker that may still grow: read it again with more text
                break
            lp = m.end()
            if m.group(1) is None:  # a closer
                closer = m
                break
            loop.repeats += 1
        if closer is None and not self.window.eof:
            loop.pos = w.base + resume
            w.move(resume)
            return Verdict.WAIT
        end = w.base + (lp if closer is not None else len(win))
        family = (b.winner or b.cands[0]).g.name
        self.sink.diag(
            Issue(
                "repetition_loop",
                {
                    "marker": excerpt(loop.marker),
                    "count": loop.repeats,
                    "max_repeats": self.limits.max_repeats,
                    "family": family,
                },
                (loop.first, end),
                f"the opener {excerpt(loop.marker)!r} repeats {loop.repeats} times without its closer; "
                "the loop is removed and nothing in it is dispatched",
            ),
            family,
        )
        if closer is not None:
            b.absorb = end
            return Verdict.RECOVER
        self.window.rewind(end)
        return Verdict.CLOSED
