"""The engine: text in, events out, no I/O, linear time.

It scans prose for the markers the grammars declare, holds back only what is still
undecided (a partial marker, an open block, an unmatched backtick, a reply that may
be one JSON call), and hands each block to the LALR parsers of the families whose
opener it found.  Every family gets its own candidate parse of the same text; the
body decides which one reads it.  A block's text is read once by each candidate;
text given back (a block that turned out not to be one) is read once more as prose.

The work is split into rooms (docs/engine.md has the picture): the window and the
sink own the text and the events; prose, fences, the candidate cursor, text values,
the loop watch, the ledger, the arbiter and recovery are each a class of their own
below, and ``Engine`` runs whichever reads the text at the reading position.
"""

from __future__ import annotations

from typing import Any

from ..binding import Binder
from ..catalog import Catalog
from ..compiled_grammar import CompiledGrammar
from ..models import Event, Policy
from ..transform import KEYED_RULE, Reader, reader_class
from .arbiter import Arbiter
from .cand import Block
from .cursor import Cursor
from .events import Sink
from .fences import CodeSpan, Fences
from .kinds import Channel, Phase
from .ledger import Ledger
from .loops import Loops
from .prose import SHORT, Prose, Skipping
from .recovery import Recovery
from .values import TextValues
from .whole import WholeBlocks
from .window import Held, SpecialTokens, Window

__all__ = ["Engine"]


class Engine(Prose, Fences, Cursor, WholeBlocks, TextValues, Loops, Ledger, Arbiter, Recovery):
    """The sans-IO core behind :class:`~tooldialect.ToolStream` and :func:`~tooldialect.parse`."""

    def __init__(self, catalog: Catalog, binder: Binder, policy: Policy) -> None:
        self.cat = catalog
        self.binder = binder
        self.policy = policy
        self.eof = False
        self.window = Window()
        self.sink = Sink()
        # reading token ids: where special tokens were written (None: reading text)
        self.specials: SpecialTokens | None = None
        self.block: Block | None = None
        # what depends only on a grammar and a parser state, shared by every stream over the catalog
        self._stop_cache: dict[Any, Any] = catalog.engine_cache
        self._accepted: dict[str, dict[Any, Any]] = catalog.engine_cache.setdefault("accepted", {})
        self._readers: dict[str, Reader] = {}
        # prose (prose.py)
        # every marker begins with one of first_rx; in a short text, where lead_rx finds
        self.marker_search = Skipping(catalog.prose, catalog.first_rx)
        self.marker_search_short = Skipping(catalog.prose, catalog.lead_rx)
        self.channel = Channel.REASONING if policy.start_in_reasoning else Channel.TEXT
        self.rclose: str | None = "*" if policy.start_in_reasoning else None
        self.reply_started = False
        self.settled = 0  # no marker can be arriving at a position before this (_partial_before)
        # fences and code spans (fences.py)
        self.fence: tuple[str, int] | None = None
        self.span: CodeSpan | None = None
        self.inline_floor = -1
        self.long_run = ""  # inside a backtick or tilde run that is plain text (see fences.MAX_RUN)
        # the ledger (ledger.py)
        self.call_index = 0
        self.calls_out = 0
        self.line_calls = 0  # calls returned from lines on their own (a grammar's `line` rule)
        self.line_tried = -1  # where a line start was last tried (prose.py, _line_start)
        self.nl_seen = (0, -1, 0)  # the last search for a line break (prose.py, _line_break)
        # the arbiter (arbiter.py): a tentative opener before this is text
        self.soft_floor = -1

    # -- public -----------------------------------------------------------------------------

    def feed(self, delta: str) -> list[Event]:
        if delta:
            if self.block is not None and self._string_run(delta):
                return self.sink.drain()
            if (
                not self.window.win
                and self.block is None
                and self.span is None
                and self.fence is None
                and not self.long_run
                and (self.reply_started or self.channel is not Channel.TEXT)
                and not (self.cat.lines and ("\n" in delta or not self.sink.line_prose) and self._line_may_begin(delta))
                and (
                    self.cat.first_rx.search(delta) is None
                    or (len(delta) <= SHORT and self.cat.lead_rx.search(delta) is None)
                )
            ):
                # prose, nothing held, and no character a marker (or fence) begins with:
                # the delta is text, as _step_prose and _compact would find it
                self.window.skip(delta)
                lone = self.sink.lone(delta, self.channel)  # the delta is the one event
                if lone is not None:
                    return lone
                self._text(delta)
                return self.sink.drain()
            self.window.win += delta
            self._run()
            self._compact()
        return self.sink.drain()

    def ordinary_tokens(self, special_texts: frozenset[str], spans: list[tuple[int, int]]) -> None:
        """The next delta was decoded from token ids: ``spans`` (offsets into it) came from
        ordinary tokens, and the tokenizer's special tokens have ``special_texts``."""
        sp = self.specials
        if sp is None:
            sp = self.specials = SpecialTokens(special_texts)
        b = self.block
        floor = self.window.base if b is None else min(b.start, self.window.base)
        sp.mark(self.window.end, spans, floor)

    def close(self) -> list[Event]:
        self.eof = True
        self._run()
        unmet = self.binder.unmet_choice(self.calls_out)  # tool_choice="required", and no call came
        if unmet is not None:
            self.sink.diag(unmet, None)
        return self.sink.drain()

    # -- the reading loop -----------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            if self.block is not None:
                if not self._step_block():
                    return
            elif self.span is not None:
                if not self._step_inline():
                    return
            elif self.fence is not None:
                if not self._step_fence():
                    return
            elif not self._step_prose():
                return

    def _step_block(self) -> bool:
        b = self.block
        assert b is not None
        phase = b.phase
        if phase is Phase.RECOVER:
            return self._recover(b)
        if phase is Phase.LOOP:
            return self._step_loop(b)
        if phase is Phase.INLINE:
            return self._step_quoted(b)
        # Phase.LEX: the candidates read what they can; the block is decided once none reads on
        for c in b.cands:
            if c.state.live:
                self._advance(b, c)
        if b.early is None:
            self._update_early(b)
        if b.loop is not None and self._loop_scan(b):
            return True
        if b.early and b.emitted < len(b.leader.items) and b.unheld():
            self._early(b)
        # the cap depends only on how far the candidates read, so every chunking agrees
        if self._over_limit(b):
            return True
        for c in b.cands:
            if c.state.live:
                return False
        self._decide(b)
        return True

    # -- text ------------------------------------------------------------------------------------

    def _text(self, s: str, channel: Channel | None = None) -> None:
        self.sink.text(s, channel or self.channel)

    def _held(self) -> Held | None:
        """The holder of text the window no longer keeps: the block, or an open code span."""
        if self.block is not None:
            return self.block.held
        if self.span is not None:
            return self.span.held
        return None

    def _slice(self, start: int, end: int) -> str:
        """Text between absolute offsets, wherever it is kept."""
        w = self.window
        if start >= w.base:  # in the window (asked per delta: no call)
            return w.win[start - w.base : end - w.base]
        return w.slice(start, end, self._held())

    def _rewind(self, pos: int) -> None:
        """Make ``pos`` the scan position again (text after it will be read as prose).

        Call it while the block that holds the text is still ``self.block``.
        """
        self.window.rewind(pos, self._held())

    def _compact(self) -> None:
        """Drop decided text from the window; text still held moves into the holder's pieces."""
        w = self.window
        b = self.block
        if b is not None:
            # the block's pieces keep everything from its start; win keeps only what a
            # candidate (or the recovery search) has yet to read
            # (a value's tentative end, where its candidate reads on if the text ends with
            # nothing better, stays in the block's pieces: _scan_text rewinds to it)
            look_from = w.base + len(w.win)
            for c in b.cands:
                if c.state.live and c.pos < look_from:
                    look_from = c.pos
            if b.phase is Phase.RECOVER or b.phase is Phase.INLINE:
                look_from = min(look_from, b.absorb if b.absorb >= 0 else b.rpos)
            elif b.loop is not None and b.loop.pos < look_from:
                look_from = b.loop.pos
            # a loop is removed whole: none of its text is kept
            keep_from = b.loop.pos if b.phase is Phase.LOOP else b.start
            w.compact(look_from, keep_from, b.held)
        elif self.span is not None:
            w.compact(self.span.search, self.span.start, self.span.held)
        else:
            w.compact(w.base + w.cur, w.base + w.cur, None)

    def _reader(self, g: CompiledGrammar) -> Reader:
        """The reader of ``g``'s nodes for this stream (a reader holds only its settings,
        so every candidate of the grammar shares one)."""
        got = self._readers.get(g.name)
        if got is None:
            got = self._readers[g.name] = self._new_reader(g)
        return got

    def _new_reader(self, g: CompiledGrammar) -> Reader:
        return reader_class(g.name)(
            g.name,
            self.binder.known,
            self.policy.max_depth,
            g.quotes,
            self.binder.tools,
            g.header.value_newlines == "strip",
            KEYED_RULE in g.nodes,
            # a kept cut-off call has whole members only: its stream sends no more
            self.policy.truncated == "keep",
        )
