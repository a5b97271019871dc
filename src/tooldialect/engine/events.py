"""The event sink: what the engine has to say, in order, with adjacent prose merged."""

from __future__ import annotations

from typing import Final

from ..binding import Binder
from ..construct import constructor
from ..models import (
    ArgumentsDelta,
    CallAbort,
    CallEnd,
    CallStart,
    Diagnostic,
    DiagnosticEvent,
    Event,
    ParseResult,
    ReasoningDelta,
    TextDelta,
    ToolCall,
)
from ..records import Issue
from .kinds import CHANNEL_TEXT, Channel
from .observe import Observer

__all__ = [
    "Sink",
    "arguments_delta",
    "call_abort",
    "call_end",
    "call_start",
    "diagnostic_event",
    "parse_result",
    "reasoning_delta",
    "text_delta",
]

# the events, built from values the engine has checked (models.constructor)
text_delta: Final = constructor(TextDelta, "text")
reasoning_delta: Final = constructor(ReasoningDelta, "text")
arguments_delta: Final = constructor(ArgumentsDelta, "index", "fragment")
call_start: Final = constructor(CallStart, "index", "name", "id")
call_end: Final = constructor(CallEnd, "index", "call")
call_abort: Final = constructor(CallAbort, "index", "reason")
diagnostic_event = constructor(DiagnosticEvent, "diagnostic")
parse_result: Final = constructor(ParseResult, "text", "reasoning", "calls", "diagnostics")


class Sink:
    """Events waiting to be handed out.  Prose is merged until something else is said (or
    the channel changes), so a delta's text is one event however it was read.

    Folded (``parse()``), the sink keeps what the result holds instead of events: the
    text and reasoning pieces, the calls and the diagnostics, in the order the events
    would have carried them (``collect`` of the same stream's events is the same result)."""

    __slots__ = (
        "out",
        "_pend",
        "_pend_kind",
        "line_prose",
        "observer",
        "folded",
        "_text",
        "_reasoning",
        "_calls",
        "_diags",
    )

    def __init__(self, observer: Observer | None = None) -> None:
        self.observer = observer  # told of every piece of text (td.explain)
        self.out: list[Event] = []
        self._pend: list[str] = []
        self._pend_kind = Channel.TEXT
        # the visible line being written has prose on it so far (a block opened after it
        # may be that prose quoting the format)
        self.line_prose = False
        # the events are folded into a result (parse()): no event is made, and text is cut
        # only where the channel changes (the fold joins it)
        self.folded = False
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[ToolCall] = []
        self._diags: list[Diagnostic] = []

    def lone(self, s: str, kind: Channel) -> list[Event] | None:
        """``s`` as the only event, when nothing is waiting; None (having done nothing)
        when something is, and ``s`` is added with :meth:`text`."""
        if self._pend or self.out or self.folded:
            return None
        if kind is not CHANNEL_TEXT:
            return [reasoning_delta(s)]
        if not self.line_prose or "\n" in s:  # (else the line it goes on already holds prose)
            self.note_line(s)
        return [text_delta(s)]

    def text(self, s: str, kind: Channel) -> None:
        if self.observer is not None:
            self.observer.text(s, kind)
        if not s:
            return
        if kind is Channel.TEXT and (not self.line_prose or "\n" in s):
            self.note_line(s)
        if self._pend and kind is not self._pend_kind:
            self.flush()
        self._pend_kind = kind
        self._pend.append(s)

    def note_line(self, s: str) -> None:
        """Follow whether the visible line being written holds prose."""
        nl = s.rfind("\n")
        if nl >= 0:
            self.line_prose = not s[nl + 1 :].isspace() and nl + 1 < len(s)
        elif not self.line_prose and s and not s.isspace():
            self.line_prose = True

    def flush(self) -> None:
        if self._pend:
            s = "".join(self._pend)
            self._pend.clear()
            if self.folded:
                (self._text if self._pend_kind is Channel.TEXT else self._reasoning).append(s)
            else:
                self.out.append(text_delta(s) if self._pend_kind is Channel.TEXT else reasoning_delta(s))

    def event(self, ev: Event) -> None:
        if self._pend and not self.folded:
            self.flush()
        self.out.append(ev)

    def call(self, index: int, call: ToolCall) -> None:
        """A call's end."""
        if self.folded:
            self._calls.append(call)
        else:
            self.event(call_end(index, call))

    def diag(self, issue: Issue, family: str | None) -> None:
        self.diag_obj(Binder.diagnostic(issue, family))

    def diag_obj(self, d: Diagnostic) -> None:
        if self.folded:
            self._diags.append(d)
        else:
            self.event(diagnostic_event(d))

    def result(self) -> ParseResult:
        """What a folded sink kept, as ``parse()`` returns it (the stream closed)."""
        self.flush()
        return parse_result("".join(self._text), "".join(self._reasoning), self._calls, self._diags)

    def drain(self) -> list[Event]:
        if self._pend:
            self.flush()
        out, self.out = self.out, []
        return out
