"""Detect and surface: text-dialect calls leaked into a native-mode response.

A model served behind a native tool-calling API sometimes falls back to its own
template's markup in the content of a response.  Parsing that content into calls would
let any page or file the model read manufacture calls, so this module never does: it
finds the calls, strips their markup from what the user sees, and returns them as
*intents* — records that are not :class:`~tooldialect.ToolCall` and carry nothing an
executor accepts — with an audit record and a suggested message for the harness.

    result = td.detect.scan(content, native_calls=message.tool_calls)
    result.visible, result.intents, result.mixed, result.audit.to_json()
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from .errors import PolicyError
from .models import CallEnd, Diagnostic, DiagnosticEvent, Event, Policy, ReasoningDelta, TextDelta, ToolCall, json_data
from .stream import ToolStream
from .toolset import Toolset

__all__ = ["AuditRecord", "DetectResult", "DetectStream", "Intent", "IntentFound", "scan", "suggest"]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class Intent(BaseModel):
    """A call written as text in the content of a response: what the model meant to do.

    It is deliberately not a :class:`~tooldialect.ToolCall` (no ``arguments_json``, a
    different type): it reports, it does not run.
    """

    model_config = _FROZEN

    name: str
    arguments: dict[str, Any]
    family: str
    span: tuple[int, int]


class AuditRecord(BaseModel):
    """What a scan found, JSON-serialisable: counts, families, tool names, offsets.  No
    argument values unless the scan was asked for them."""

    model_config = _FROZEN

    content_chars: int
    native_calls: int
    intents: int
    mixed: bool
    families: dict[str, int]
    tools: dict[str, int]
    offsets: list[tuple[int, int]]
    repetition_loops: int
    truncated: int
    arguments: list[dict[str, Any]] | None = None

    @property
    def leaked(self) -> bool:
        """Whether the content carried call markup (a call, a cut-off one, or a loop)."""
        return bool(self.intents or self.truncated or self.repetition_loops)

    def to_json(self) -> dict[str, Any]:
        out = json_data(self)
        if out["arguments"] is None:
            del out["arguments"]
        out["leaked"] = self.leaked
        return out


class DetectResult(BaseModel):
    """The content as the user should see it, and what was taken out of it."""

    model_config = _FROZEN

    visible: str
    reasoning: str
    intents: tuple[Intent, ...]
    mixed: bool
    diagnostics: tuple[Diagnostic, ...]
    audit: AuditRecord


class IntentFound(BaseModel):
    """Stream event: a call written as text was found (and not dispatched)."""

    model_config = _FROZEN
    type: ClassVar[str] = "intent"

    intent: Intent

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, **json_data(self)}


DetectEvent = TextDelta | ReasoningDelta | IntentFound | DiagnosticEvent


def _count_native(native_calls: Any) -> int:
    if native_calls is None:
        return 0
    if isinstance(native_calls, (str, bytes, dict)) or not isinstance(native_calls, Iterable):
        raise PolicyError("native_calls must be a sequence of the calls the provider returned (or empty)")
    return sum(1 for _ in native_calls)


def _intent(call: ToolCall) -> Intent:
    return Intent(name=call.name, arguments=dict(call.arguments), family=call.family, span=call.span)


class DetectStream:
    """The streaming form of :func:`scan`: feed content deltas, get visible text,
    reasoning, intents and diagnostics; ``result()`` after ``close()``.

    Calls are never announced before they complete and never returned as calls: the
    stream yields :class:`IntentFound` instead.
    """

    __slots__ = ("_stream", "_native", "_include_arguments", "_text", "_reasoning", "_intents", "_diags", "_size")

    def __init__(
        self,
        *,
        native_calls: Sequence[Any] | None = (),
        tools: Toolset | Iterable[Any] | None = None,
        families: Iterable[str] | None = None,
        policy: Policy | None = None,
        include_arguments: bool = False,
    ) -> None:
        self._native = _count_native(native_calls)
        self._stream = ToolStream(tools, families=families, policy=policy)
        self._include_arguments = include_arguments
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._intents: list[Intent] = []
        self._diags: list[Diagnostic] = []
        self._size = 0

    def feed(self, delta: str) -> list[DetectEvent]:
        events = self._stream.feed(delta)
        self._size += len(delta)
        return self._convert(events)

    def close(self) -> list[DetectEvent]:
        return self._convert(self._stream.close())

    def _convert(self, events: list[Event]) -> list[DetectEvent]:
        out: list[DetectEvent] = []
        for ev in events:
            if isinstance(ev, TextDelta):
                self._text.append(ev.text)
                out.append(ev)
            elif isinstance(ev, ReasoningDelta):
                self._reasoning.append(ev.text)
                out.append(ev)
            elif isinstance(ev, DiagnosticEvent):
                self._diags.append(ev.diagnostic)
                out.append(ev)
            elif isinstance(ev, CallEnd):
                intent = _intent(ev.call)
                self._intents.append(intent)
                out.append(IntentFound(intent=intent))
            # call_start, arguments and call_abort belong to dispatching: not reported here
        return out

    def result(self) -> DetectResult:
        if not self._stream.closed:
            raise PolicyError("result() before close(): the content is not complete yet")
        intents = tuple(self._intents)
        mixed = bool(intents) and self._native > 0
        kinds = Counter(d.kind for d in self._diags)
        audit = AuditRecord(
            content_chars=self._size,
            native_calls=self._native,
            intents=len(intents),
            mixed=mixed,
            families=dict(sorted(Counter(i.family for i in intents).items())),
            tools=dict(sorted(Counter(i.name for i in intents).items())),
            offsets=[i.span for i in intents],
            repetition_loops=kinds["repetition_loop"],
            truncated=kinds["truncated"],
            arguments=[{"name": i.name, "arguments": i.arguments} for i in intents]
            if self._include_arguments
            else None,
        )
        return DetectResult(
            visible="".join(self._text),
            reasoning="".join(self._reasoning),
            intents=intents,
            mixed=mixed,
            diagnostics=tuple(self._diags),
            audit=audit,
        )


def scan(
    content: str,
    *,
    native_calls: Sequence[Any] | None = (),
    tools: Toolset | Iterable[Any] | None = None,
    families: Iterable[str] | None = None,
    policy: Policy | None = None,
    include_arguments: bool = False,
) -> DetectResult:
    """Find text-dialect calls in ``content`` (a response whose calls came through the
    provider's structured channel, ``native_calls``).  Nothing found is dispatched."""
    if not isinstance(content, str):
        raise PolicyError(f"scan() takes the response content as str, got {type(content).__name__}")
    stream = DetectStream(
        native_calls=native_calls, tools=tools, families=families, policy=policy, include_arguments=include_arguments
    )
    stream.feed(content)
    stream.close()
    return stream.result()


def suggest(result: DetectResult, *, tools_available: bool) -> str | None:
    """A message the harness may show the model (or log) about what was not run.

    ``tools_available``: whether the model can still call tools natively this turn.  When
    it can, the message asks it to re-issue the calls natively; when the tools were
    withdrawn (the turn's last call), asking for a re-issue cannot be honoured, so the
    message says the action was not performed and the turn has ended.  None when the
    content held no call markup.
    """
    names = sorted({i.name for i in result.intents})
    loops = result.audit.repetition_loops
    cut = result.audit.truncated
    if not names and not loops and not cut:
        return None
    if names:
        listed = ", ".join(names)
        what = f"Your reply contained {len(result.intents)} tool call(s) written as text ({listed}); they were not run."
    elif loops:
        what = "Your reply repeated tool-call markup in a loop; nothing in it was run."
    else:
        what = "Your reply contained tool-call markup that was cut off; it was not run."
    if tools_available:
        return what + " Call tools only through the native tool-calling interface: re-issue any call you still need."
    return what + " No tools are available now: the action was not performed and the turn has ended."
