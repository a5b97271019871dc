"""An engine that reports where its text went and how it decided each block.

``td.explain`` needs facts a parse does not keep: where in the input each piece of text
or reasoning was read, which candidates a block had and why each lost, which events a
block produced.  :class:`ObservedEngine` is the engine itself with a few of its steps
wrapped to tell an :class:`Observer`; nothing in :class:`Engine` changes, so a parse that
does not ask for an explanation does exactly the work it did before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..binding import Binder
from ..catalog import Catalog
from ..models import Event, Policy
from .cand import Block
from .core import Engine
from .kinds import Channel, Kind, Phase

__all__ = ["BlockNote", "CandidateNote", "ObservedEngine", "Observer", "TextNote"]


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
    skip_at: int
    failure: str | None
    fail_pos: int
    reason: str
    progress: int
    at: int = -1  # where its grammar stopped (Cand.fail)


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
    accepted_to: int = -1  # where the block ended when a candidate's reading was accepted
    quoted: bool = False  # prose quoting the format (decisions, "Prose that quotes the format")
    events: list[Event] = field(default_factory=list)
    block: Any = field(default=None, repr=False, compare=False)  # the engine's Block, while it reads


class Observer:
    """What an :class:`ObservedEngine` tells.  The defaults keep everything it is told."""

    def __init__(self, text: str) -> None:
        self.source = text
        self.texts: list[TextNote] = []
        self.blocks: list[BlockNote] = []
        self.loose: list[Event] = []  # events said outside any block
        self._end = 0  # where the last piece of text ended (text comes in source order)

    def locate(self, s: str, hint: int, floor: int = 0) -> int:
        """Where ``s``, released now, was in the input: at the reading position ``hint`` when
        it is there, else its first place after what was released before (and ``floor``)."""
        src = self.source
        if hint >= self._end and src.startswith(s, hint):
            return hint
        at = src.find(s, max(self._end, floor))
        return at if at >= 0 else self._end

    def text(self, s: str, start: int, channel: Channel, example: bool) -> None:
        end = start + len(s)
        self.texts.append(TextNote(start, end, channel is Channel.REASONING, example))
        self._end = max(self._end, end)

    def moved_past(self, pos: int) -> None:
        """Text before ``pos`` is decided without being released (a call's own text)."""
        self._end = max(self._end, pos)


class ObservedEngine(Engine):
    """:class:`Engine`, telling ``observer`` what it does (only ``td.explain`` builds one)."""

    def __init__(self, catalog: Catalog, binder: Binder, policy: Policy, observer: Observer) -> None:
        super().__init__(catalog, binder, policy)
        self.observer = observer
        self._in_code = False
        self._stepping: Block | None = None  # the block a reading step began with
        self._inside: Block | None = None  # the block whose prose item is being released
        self._seen: tuple[list[Event], int] = (self.sink.out, 0)

    # text: where each piece was
    def _text(self, s: str, channel: Channel | None = None) -> None:
        if s:
            self._note_events(self.block or self._stepping)
            obs = self.observer
            w = self.window
            inside = self._inside
            # prose a block read between its parts is after the block's opener, not at the
            # reading position (which is still the block's start)
            start = obs.locate(s, w.base + w.cur) if inside is None else obs.locate(s, -1, inside.opener_end)
            obs.text(s, start, channel or self.channel, self._in_code or self.fence is not None)
        super()._text(s, channel)

    def _emit_item(self, b: Block, item: Any) -> None:
        if item.kind is not Kind.TEXT:
            super()._emit_item(b, item)
            return
        self._inside = b
        try:
            super()._emit_item(b, item)
        finally:
            self._inside = None

    def _at_fence_char(self, q: int) -> bool:
        before = len(self.observer.texts)
        fenced = self.fence is not None
        got = super()._at_fence_char(q)
        if not fenced and self.fence is not None:  # the fence's opening line is part of the example
            for note in self.observer.texts[before:]:
                note.example = True
        return got

    def _inline_done(self, start: int, end: int, matched: bool) -> bool:
        self._in_code = matched
        try:
            return super()._inline_done(start, end, matched)
        finally:
            self._in_code = False

    # blocks: what each one was and how it was decided
    def _step_block(self) -> bool:
        b = self.block
        if b is not None and self._note_of(b) is None:
            self._remember(b)
        self._stepping = b
        try:
            return super()._step_block()
        finally:
            self._note_events(b)
            self._stepping = None

    def _decide(self, b: Block) -> None:
        note = self._note_of(b)
        rank = self.cat.rank
        if note is not None:
            note.candidates = [
                CandidateNote(
                    c.g.name,
                    rank[c.g.name],
                    c.state.label,
                    c.calls,
                    c.soft,
                    c.trail,
                    c.junk,
                    c.skip_at,
                    c.fail_kind.value if c.fail_kind is not None else None,
                    c.fail_pos,
                    c.fail_reason,
                    c.progress,
                    c.at,
                )
                for c in b.cands
            ]
        super()._decide(b)
        if note is not None:
            note.decided = True
            note.winner = b.winner.g.name if b.winner is not None else None

    def _accept(self, b: Block, c: Any, end: int) -> None:
        note = self._note_of(b)
        if note is not None:
            note.accepted_to = end
        super()._accept(b, c, end)

    def _give_back(self, b: Block, resume: int, release_from: int | None = None) -> None:
        note = self._note_of(b)
        if note is not None and b.phase is Phase.INLINE:
            note.quoted = True
        super()._give_back(b, resume, release_from)

    # events: which block said what
    def _remember(self, b: Block) -> None:
        opener = self._slice(b.start, b.opener_end)
        self.observer.blocks.append(BlockNote(b.start, b.opener_end, opener, b.channel.value, bool(b.reply), block=b))

    def _note_of(self, b: Block | None) -> BlockNote | None:
        if b is None:
            return None
        for note in reversed(self.observer.blocks):
            if note.block is b:
                return note
            if note.start < b.start:
                return None
        return None

    def _note_events(self, b: Block | None) -> None:
        """Give the events said since the last look to ``b`` (or to no block)."""
        out, seen = self._seen
        if out is not self.sink.out:  # drained: the list was handed out
            out, seen = self.sink.out, 0
        new = out[seen:]
        self._seen = (out, len(out))
        if not new:
            return
        note = self._note_of(b)
        for ev in new:
            call = getattr(ev, "call", None)
            if call is not None:
                self.observer.moved_past(call.span[1])
        (note.events if note is not None else self.observer.loose).extend(new)

    def feed(self, delta: str) -> list[Event]:
        w = self.window
        at, noted = w.end, len(self.observer.texts)
        events = super().feed(delta)
        if delta and len(self.observer.texts) == noted and events and w.base == at + len(delta):
            # plain prose with nothing held, released whole without a reading step
            only = events[0]
            if len(events) == 1 and getattr(only, "text", None) == delta:
                self.observer.text(delta, at, self.channel, False)
        return self._handed_out(events)

    def close(self) -> list[Event]:
        return self._handed_out(super().close())

    def _handed_out(self, events: list[Event]) -> list[Event]:
        """Events said after the last look (the end of a step, the end of the text)."""
        out, seen = self._seen
        if events is out and seen < len(events):
            note = self._note_of(self.block)
            (note.events if note is not None else self.observer.loose).extend(events[seen:])
        self._seen = (self.sink.out, 0)
        return events
