"""What the engine tells an observer: where its text went and how it decided each block.

``td.explain`` needs facts a parse does not keep: where in the input each piece of text or
reasoning was read, which candidates a block had and why each lost, which events a block
produced.  The rooms tell an :class:`Observer` at the few places those facts arise, only
when one is given (``Engine(..., observer=...)``); a stream that asks for no explanation has
none, and each of those places costs it one test of ``None``.  :class:`Recorder` is the
observer ``td.explain`` uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ..models import Event
from .cand import Block
from .kinds import Channel, Phase

__all__ = ["BlockNote", "CandidateNote", "EngineView", "Observer", "Recorder", "TextNote"]


class Observer(Protocol):
    """The places the engine tells an observer of (each before the step it names, unless
    it says after)."""

    def text(self, s: str, channel: Channel) -> None:
        """``s`` goes out as text or reasoning (the events sink is about to hold it)."""

    def plain(self, delta: str, at: int, channel: Channel) -> None:
        """A delta of plain prose went out whole from ``at``, without a reading step."""

    def inside(self, b: Block | None) -> None:
        """Prose ``b`` read between its parts goes out now (None: that is over)."""

    def mark(self) -> int:
        """A mark in what was told so far (see :meth:`examples_since`)."""

    def examples_since(self, mark: int) -> None:
        """The text told since ``mark`` opened a fence: it is part of the example."""

    def in_code(self, on: bool) -> None:
        """The text told while ``on`` is an inline code span's."""

    def step(self, b: Block | None, begin: bool) -> None:
        """A reading step of block ``b`` begins (``begin``) or ends."""

    def deciding(self, b: Block) -> None:
        """No candidate of ``b`` reads on: the arbiter decides it now."""

    def decided(self, b: Block) -> None:
        """The arbiter decided ``b`` (after)."""

    def accepted(self, b: Block, end: int) -> None:
        """A candidate's reading of ``b`` stands, to ``end``."""

    def given_back(self, b: Block) -> None:
        """``b``'s text is released as text."""


class EngineView(Protocol):
    """What :class:`Recorder` reads of the engine it watches."""

    @property
    def sink_out(self) -> list[Event]: ...

    def reading_at(self) -> int: ...

    def channel(self) -> Channel: ...

    def in_fence(self) -> bool: ...

    def open_block(self) -> Block | None: ...

    def opener_text(self, b: Block) -> str: ...

    def rank(self, family: str) -> int: ...


@dataclass
class TextNote:
    """A piece of text or reasoning the engine released, and where it was in the input."""

    start: int
    end: int
    reasoning: bool
    example: bool  # inside a fenced code block or an inline code span


@dataclass
class CandidateNote:
    """One family's reading of a block when the block was decided."""

    family: str
    rank: int
    state: str  # "done" | "failed" | …
    calls: int
    tentative: bool
    trail: bool  # stopped at text it could not read before any closer
    junk: int  # issues and stray text it read
    skip_at: int | None  # where it first passed over text it could not read
    failure: str | None
    fail_pos: int | None
    reason: str
    progress: int
    at: int | None = None  # where its grammar stopped (Cand.fail)


@dataclass
class BlockNote:
    """A block the engine opened: its opener, its candidates, what it became."""

    start: int
    opener_end: int
    opener: str
    channel: str
    reply: bool  # opened at the start of the reply without a marker (bare JSON, a name line)
    candidates: list[CandidateNote] = field(default_factory=list)
    winner: str | None = None
    decided: bool = False
    accepted_to: int | None = None  # where the block ended when a candidate's reading was accepted
    quoted: bool = False  # prose quoting the format (decisions, "Prose that quotes the format")
    events: list[Event] = field(default_factory=list)
    block: Any = field(default=None, repr=False, compare=False)  # the engine's Block, while it reads


class Recorder:
    """Keeps what the engine tells: each piece of text with where it was in the input, each
    block with its candidates, its verdict and its events, and the events said outside any
    block."""

    def __init__(self, text: str) -> None:
        self.source = text
        self.texts: list[TextNote] = []
        self.blocks: list[BlockNote] = []
        self.loose: list[Event] = []  # events said outside any block
        self._end = 0  # where the last piece of text ended (text comes in source order)
        self.engine: EngineView | None = None
        self._code = False
        self._stepping: Block | None = None  # the block a reading step began with
        self._inside: Block | None = None  # the block whose prose item is being released
        self._seen: tuple[list[Event], int] = ([], 0)

    def watch(self, engine: EngineView) -> None:
        """Start telling what ``engine`` does (it holds this recorder as its observer)."""
        self.engine = engine
        self._seen = (engine.sink_out, 0)

    def unwatch(self) -> None:
        """The engine has read its text to the end: let it go (it holds this recorder as its
        observer, and keeping it would tie the two into a reference cycle)."""
        self.engine = None
        self._seen = ([], 0)

    def _view(self) -> EngineView:
        assert self.engine is not None, "watch() the engine first"
        return self.engine

    # -- where the text went -----------------------------------------------------------------------

    def locate(self, s: str, hint: int, floor: int = 0) -> int:
        """Where ``s``, released now, was in the input: at the reading position ``hint`` when
        it is there, else its first place after what was released before (and ``floor``)."""
        src = self.source
        if hint >= self._end and src.startswith(s, hint):
            return hint
        at = src.find(s, max(self._end, floor))
        return at if at >= 0 else self._end

    def note_text(self, s: str, start: int, channel: Channel, example: bool) -> None:
        end = start + len(s)
        self.texts.append(TextNote(start, end, channel is Channel.REASONING, example))
        self._end = max(self._end, end)

    def moved_past(self, pos: int) -> None:
        """Text before ``pos`` is decided without being released (a call's own text)."""
        self._end = max(self._end, pos)

    def text(self, s: str, channel: Channel) -> None:
        if not s:
            return
        view = self._view()
        self._note_events(view.open_block() or self._stepping)
        inside = self._inside
        # prose a block read between its parts is after the block's opener, not at the
        # reading position (which is still the block's start)
        start = self.locate(s, view.reading_at()) if inside is None else self.locate(s, -1, inside.opener_end)
        self.note_text(s, start, channel, self._code or view.in_fence())

    def inside(self, b: Block | None) -> None:
        self._inside = b

    def mark(self) -> int:
        return len(self.texts)

    def examples_since(self, mark: int) -> None:
        for note in self.texts[mark:]:
            note.example = True

    def in_code(self, on: bool) -> None:
        self._code = on

    def plain(self, delta: str, at: int, channel: Channel) -> None:
        """A delta of plain prose released whole, without a reading step, from ``at``."""
        self.note_text(delta, at, channel, False)

    # -- blocks: what each one was and how it was decided ----------------------------------------

    def step(self, b: Block | None, begin: bool) -> None:
        if begin:
            if b is not None and self._note_of(b) is None:
                view = self._view()
                self.blocks.append(
                    BlockNote(b.start, b.opener_end, view.opener_text(b), b.channel.value, bool(b.reply), block=b)
                )
            self._stepping = b
        else:
            self._note_events(b)
            self._stepping = None

    def deciding(self, b: Block) -> None:
        note = self._note_of(b)
        if note is None:
            return
        view = self._view()
        note.candidates = [
            CandidateNote(
                c.g.name,
                view.rank(c.g.name),
                c.state.value,
                c.calls,
                c.soft,
                c.trail,
                c.junk,
                c.skip_at,
                c.failed.kind.value if c.failed is not None else None,
                c.failed.pos if c.failed is not None else None,
                c.failed.reason if c.failed is not None else "",
                c.progress,
                c.failed.at if c.failed is not None else None,
            )
            for c in b.cands
        ]

    def decided(self, b: Block) -> None:
        note = self._note_of(b)
        if note is not None:
            note.decided = True
            note.winner = b.winner.g.name if b.winner is not None else None

    def accepted(self, b: Block, end: int) -> None:
        note = self._note_of(b)
        if note is not None:
            note.accepted_to = end

    def given_back(self, b: Block) -> None:
        note = self._note_of(b)
        if note is not None and b.phase is Phase.INLINE:
            note.quoted = True

    # -- events: which block said what --------------------------------------------------------------

    def _note_of(self, b: Block | None) -> BlockNote | None:
        if b is None:
            return None
        blocks = self.blocks
        for i in range(len(blocks) - 1, -1, -1):  # (the newest first)
            note = blocks[i]
            if note.block is b:
                return note
            if note.start < b.start:
                return None
        return None

    def _note_events(self, b: Block | None) -> None:
        """Give the events said since the last look to ``b`` (or to no block)."""
        out, seen = self._seen
        current = self._view().sink_out
        if out is not current:  # drained: the list was handed out
            out, seen = current, 0
        new = out[seen:]
        self._seen = (out, len(out))
        if not new:
            return
        note = self._note_of(b)
        for ev in new:
            call = getattr(ev, "call", None)
            if call is not None:
                self.moved_past(call.span[1])
        (note.events if note is not None else self.loose).extend(new)

    def handed_out(self, events: list[Event]) -> list[Event]:
        """Events said after the last look (the end of a step, the end of the text)."""
        out, seen = self._seen
        if events is out and seen < len(events):
            note = self._note_of(self._view().open_block())
            (note.events if note is not None else self.loose).extend(events[seen:])
        self._seen = (self._view().sink_out, 0)
        return events
