"""The engine: text in, events out, no I/O, linear time.

It scans prose for the markers the grammars declare, holds back only what is still
undecided (a partial marker, an open block, an unmatched backtick, a reply that may
be one JSON call), and hands each block to the LALR parsers of the families whose
opener it found.  Every family gets its own candidate parse of the same text; the
body decides which one reads it.  A block's text is read once by each candidate;
text given back (a block that turned out not to be one) is read once more as prose.

The work is split into rooms (docs/engine.md has the picture), each an object that owns
its state: the window and the sink own the text and the events; prose, the fences, the
candidate cursor, the text values, the whole-block reader, the loop watch, the ledger,
recovery and the arbiter each read their part.  ``Engine`` composes them and runs the
reader of the current :class:`Mode` from a table until one waits for more text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from ..binding import Binder
from ..catalog import Catalog
from ..models import Event, ParseResult, Policy
from .arbiter import Arbiter
from .cand import Block
from .cursor import Cursor
from .events import Sink
from .fences import Fences
from .kinds import (
    CHANNEL_TEXT,
    MODE_BLOCK,
    MODE_PROSE,
    PHASE_INLINE,
    PHASE_LOOP,
    PHASE_RECOVER,
    READING_RUN,
    READING_WAIT,
    VERDICT_CLOSED,
    VERDICT_WAIT,
    Channel,
    Mode,
    Phase,
    Verdict,
)
from .ledger import Ledger
from .loops import Loops
from .observe import Observer
from .prose import Prose
from .recovery import Recovery
from .search import SHORT
from .shared import Shared
from .values import TextValues
from .whole import WholeBlocks
from .window import Window

__all__ = ["Engine"]


class Engine:
    """The sans-IO core behind :class:`~tooldialect.ToolStream` and :func:`~tooldialect.parse`."""

    __slots__ = (
        "shared", "cat", "binder", "window", "sink", "observer", "ledger", "values", "cursor", "whole",
        "loops", "recovery", "arbiter", "prose", "fences", "blocks", "mode",
    )  # fmt: skip

    def __init__(self, catalog: Catalog, binder: Binder, policy: Policy, observer: Observer | None = None) -> None:
        self.shared = shared = Shared(catalog, binder, policy)
        self.cat = catalog
        self.binder = binder
        self.observer = observer
        self.window = window = Window()
        self.sink = sink = Sink(observer)
        self.ledger = ledger = Ledger(shared, window, sink, observer)
        self.values = values = TextValues(shared, window)
        self.cursor = cursor = Cursor(shared, window, ledger, values)
        self.whole = whole = WholeBlocks(shared, window, cursor, values)
        self.loops = loops = Loops(shared, window, sink, ledger)
        self.recovery = recovery = Recovery(shared, window, sink, ledger, cursor)
        self.arbiter = arbiter = Arbiter(shared, window, sink, ledger, whole, loops, recovery, observer)
        self.prose = prose = Prose(shared, window, sink, ledger, arbiter)
        self.fences = Fences(window, sink, prose, observer)
        self.mode = Mode.PROSE
        self.blocks = BlockStep(arbiter, observer, Lexing(cursor, ledger, loops, arbiter), recovery, loops)

    # -- public -----------------------------------------------------------------------------

    def feed(self, delta: str) -> list[Event]:
        if not delta:
            return self.sink.drain()
        mode = self.mode
        w = self.window
        if mode is MODE_PROSE:
            if not w.win:
                prose = self.prose
                channel = prose.channel
                cat = self.cat
                sink = self.sink
                if (
                    (prose.reply_started or channel is not CHANNEL_TEXT)
                    and not (cat.lines and ("\n" in delta or not sink.line_prose) and prose.line_may_begin(delta))
                    and (
                        cat.first_rx.search(delta) is None
                        or (len(delta) <= SHORT and cat.lead_rx.search(delta) is None)
                    )
                ):
                    # prose, nothing held, and no character a marker (or fence) begins with:
                    # the delta is text, as prose.step and _compact would find it
                    w.skip(delta)
                    lone = sink.lone(delta, channel)  # the delta is the one event
                    if lone is not None:
                        if self.observer is not None:
                            self.observer.plain(delta, w.base - len(delta), channel)
                        return lone
                    prose.text(delta)
                    return sink.drain()
        elif mode is MODE_BLOCK:
            b = self.arbiter.block
            assert b is not None
            if self.cursor.string_run(b, delta):
                return self.sink.drain()
        w.append(delta)
        self._run()
        self._compact()
        return self.sink.drain()

    def fold(self) -> None:
        """The events are only folded into a result (``parse()``): make none, only what the
        result keeps (decisions 229 and 234), and :meth:`result` returns it once closed."""
        self.ledger.folded = True
        self.sink.folded = True

    def result(self) -> ParseResult:
        """What a folded engine kept, once closed."""
        return self.sink.result()

    def ordinary_tokens(self, special_texts: frozenset[str], spans: list[tuple[int, int]]) -> None:
        """The next delta was decoded from token ids: ``spans`` (offsets into it) came from
        ordinary tokens, and the tokenizer's special tokens have ``special_texts``."""
        w = self.window
        sp = w.read_tokens(special_texts)
        b = self.arbiter.block
        floor = w.base if b is None else min(b.start, w.base)
        sp.mark(w.end, spans, floor)

    def close(self) -> list[Event]:
        self.window.end_text()
        self._run()
        unmet = self.binder.unmet_choice(self.ledger.calls_out)  # tool_choice="required", and no call came
        if unmet is not None:
            self.sink.diag(unmet, None)
        return self.sink.drain()

    # -- the reading loop -----------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            got = _READERS[self.mode](self)
            if got is None:
                return
            self.mode = got

    # -- text ------------------------------------------------------------------------------------

    def _compact(self) -> None:
        """Drop decided text from the window; text still held moves into the holder's pieces."""
        w = self.window
        b = self.arbiter.block
        if b is not None:
            # the block's pieces keep everything from its start; win keeps only what a
            # candidate (or the recovery search) has yet to read
            # (a value's tentative end, where its candidate reads on if the text ends with
            # nothing better, stays in the block's pieces: values.scan_text rewinds to it)
            look_from = w.base + len(w.win)
            for c in b.cands:
                if (c.state is READING_RUN or c.state is READING_WAIT) and c.pos < look_from:  # (Cand.live)
                    look_from = c.pos
            if b.phase is PHASE_RECOVER or b.phase is PHASE_INLINE:
                look_from = min(look_from, b.absorb if b.absorb is not None else b.rpos)
            elif b.loop is not None and b.loop.pos < look_from:
                look_from = b.loop.pos
            # a loop is removed whole: none of its text is kept
            keep_from = b.loop.pos if b.phase is PHASE_LOOP and b.loop is not None else b.start
            w.compact(look_from, keep_from)
        elif self.fences.span is not None:
            span = self.fences.span
            w.compact(span.search, span.start)
        else:
            w.compact(w.base + w.cur, w.base + w.cur)

    # -- what an observer reads (engine/observe.py, EngineView) ---------------------------------

    @property
    def sink_out(self) -> list[Event]:
        return self.sink.out

    def reading_at(self) -> int:
        return self.window.base + self.window.cur

    def channel(self) -> Channel:
        return self.prose.channel

    def in_fence(self) -> bool:
        return self.fences.fence is not None

    def open_block(self) -> Block | None:
        return self.arbiter.block

    def opener_text(self, b: Block) -> str:
        return self.window.slice(b.start, b.opener_end)

    def rank(self, family: str) -> int:
        return self.cat.rank[family]


class BlockStep:
    """Reads the open block one step: the reader of its phase, then the arbiter's verdict."""

    __slots__ = ("arbiter", "observer", "lexing", "recovery", "loops")

    def __init__(
        self, arbiter: Arbiter, observer: Observer | None, lexing: Lexing, recovery: Recovery, loops: Loops
    ) -> None:
        self.arbiter = arbiter
        self.observer = observer
        self.lexing = lexing
        self.recovery = recovery
        self.loops = loops

    def step(self) -> Mode | None:
        b = self.arbiter.block
        assert b is not None
        obs = self.observer
        if obs is not None:
            obs.step(b, True)
        verdict = _PHASES[b.phase](self, b)
        if obs is not None:
            obs.step(b, False)
        if verdict is VERDICT_WAIT:
            return None
        return MODE_BLOCK if self.arbiter.step(verdict) else MODE_PROSE


class Lexing:
    """``Phase.LEX``: the block's candidates read what they can; the block is decided once none reads on."""

    __slots__ = ("cursor", "ledger", "loops", "arbiter")

    def __init__(self, cursor: Cursor, ledger: Ledger, loops: Loops, arbiter: Arbiter) -> None:
        self.cursor = cursor
        self.ledger = ledger
        self.loops = loops
        self.arbiter = arbiter

    def step(self, b: Block) -> Verdict:
        cursor = self.cursor
        # (Cand.live spelled out: asked of every candidate at every step, where the pure
        # build would pay a call for the property)
        for c in b.cands:
            if c.state is READING_RUN or c.state is READING_WAIT:
                cursor.advance(b, c)
        if b.early is None:
            self.ledger.update_early(b)
        if b.loop is not None and self.loops.scan(b):
            return Verdict.LOOP
        leader = b.leader
        if b.early and leader is not None and b.emitted < len(leader.items) and b.unheld():
            self.ledger.early(b)
        # the cap depends only on how far the candidates read, so every chunking agrees
        if self.arbiter.over_limit(b) is VERDICT_CLOSED:
            return Verdict.CLOSED
        for c in b.cands:
            if c.state is READING_RUN or c.state is READING_WAIT:
                return VERDICT_WAIT
        return self.arbiter.decide(b)


# Which room reads in each mode (None: wait for more text; else the mode that reads next),
# and which reads a block in each phase (its candidates read in Phase.LEX).  Functions of
# the engine (of the block step) rather than each engine's own table of bound methods: one
# table for every engine, and nothing that ties an engine into a reference cycle.


def _prose(e: Engine) -> Mode | None:
    return e.prose.step()


def _block(e: Engine) -> Mode | None:
    return e.blocks.step()


def _ticks(e: Engine) -> Mode | None:
    return e.fences.at_run()


def _fence(e: Engine) -> Mode | None:
    return e.fences.step_fence()


def _code(e: Engine) -> Mode | None:
    return e.fences.step_code()


def _run_of_ticks(e: Engine) -> Mode | None:
    return e.fences.step_run()


_READERS: Final[dict[Mode, Callable[[Engine], Mode | None]]] = {
    Mode.PROSE: _prose,
    Mode.BLOCK: _block,
    Mode.TICKS: _ticks,
    Mode.FENCE: _fence,
    Mode.CODE: _code,
    Mode.RUN: _run_of_ticks,
}


def _lex(s: BlockStep, b: Block) -> Verdict:
    return s.lexing.step(b)


def _recover(s: BlockStep, b: Block) -> Verdict:
    return s.recovery.recover(b)


def _loop(s: BlockStep, b: Block) -> Verdict:
    return s.loops.step(b)


def _inline(s: BlockStep, b: Block) -> Verdict:
    return s.arbiter.step_quoted(b)


_PHASES: Final[dict[Phase, Callable[[BlockStep, Block], Verdict]]] = {
    Phase.LEX: _lex,
    Phase.RECOVER: _recover,
    Phase.LOOP: _loop,
    Phase.INLINE: _inline,
}
