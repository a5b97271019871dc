"""The event sink: what the engine has to say, in order, with adjacent prose merged."""

from __future__ import annotations

from typing import Any

from ..binding import Binder
from ..models import ArgumentsDelta, Diagnostic, DiagnosticEvent, Event, ReasoningDelta, TextDelta
from ..records import Issue
from .kinds import Channel

__all__ = ["Sink", "arguments_delta", "reasoning_delta", "text_delta"]

_new = object.__new__
_set = object.__setattr__


def _builder(cls: Any, *names: str) -> Any:
    """A constructor for a per-delta event that skips ``model_construct``'s generic field
    walk: the same four slots set to the same values, for a model with only required
    fields, no private attributes and no post-init hook (checked here, once)."""
    plain = (
        set(cls.model_fields) == set(names)
        and all(f.is_required() and f.alias is None and f.validation_alias is None for f in cls.model_fields.values())
        and not cls.__private_attributes__
        and not cls.__pydantic_post_init__
        and cls.model_config.get("extra") != "allow"
    )
    if not plain:  # pragma: no cover - a model that grew a default or a hook
        return lambda *values: cls.model_construct(**dict(zip(names, values)))
    if len(names) == 1:
        (a,) = names

        def build1(x: Any) -> Any:
            m = _new(cls)
            _set(m, "__dict__", {a: x})
            _set(m, "__pydantic_fields_set__", {a})
            _set(m, "__pydantic_extra__", None)
            _set(m, "__pydantic_private__", None)
            return m

        return build1
    a, b = names  # two fields: all the per-delta events have

    def build2(x: Any, y: Any) -> Any:
        m = _new(cls)
        _set(m, "__dict__", {a: x, b: y})
        _set(m, "__pydantic_fields_set__", {a, b})
        _set(m, "__pydantic_extra__", None)
        _set(m, "__pydantic_private__", None)
        return m

    return build2


text_delta = _builder(TextDelta, "text")
reasoning_delta = _builder(ReasoningDelta, "text")
arguments_delta = _builder(ArgumentsDelta, "index", "fragment")


class Sink:
    """Events waiting to be handed out.  Prose is merged until something else is said (or
    the channel changes), so a delta's text is one event however it was read."""

    __slots__ = ("out", "_pend", "_pend_kind", "line_prose")

    def __init__(self) -> None:
        self.out: list[Event] = []
        self._pend: list[str] = []
        self._pend_kind = Channel.TEXT
        # the visible line being written has prose on it so far (a block opened after it
        # may be that prose quoting the format)
        self.line_prose = False

    def idle(self) -> bool:
        """Nothing is waiting: an event made now would be the only one."""
        return not self._pend and not self.out

    def text(self, s: str, kind: Channel) -> None:
        if not s:
            return
        if kind is Channel.TEXT:
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
            self.out.append(text_delta(s) if self._pend_kind is Channel.TEXT else reasoning_delta(s))

    def event(self, ev: Event) -> None:
        self.flush()
        self.out.append(ev)

    def diag(self, issue: Issue, family: str | None) -> None:
        self.event(DiagnosticEvent.model_construct(diagnostic=Binder.diagnostic(issue, family)))

    def diag_obj(self, d: Diagnostic) -> None:
        self.event(DiagnosticEvent.model_construct(diagnostic=d))

    def drain(self) -> list[Event]:
        self.flush()
        out, self.out = self.out, []
        return out
