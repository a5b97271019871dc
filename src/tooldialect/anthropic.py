"""Anthropic Messages shapes: content blocks, ``stop_reason`` and stream events.

    chat = td.anthropic.MessageStream(tools=tools, families=["hermes"], id=msg_id, model=model)
    for text in model_deltas:
        for event in chat.feed(text):          # dicts: message_start, content_block_start, …
            send(event)
    for event in chat.close():                 # … content_block_stop, message_delta, message_stop
        send(event)

    td.anthropic.message(td.parse(text, tools=tools), id=msg_id, model=model)   # non-streaming

A streamed message's blocks follow the reply (a thinking block, text, a tool_use, more
text …); the non-streaming message puts thinking, then text, then the tool_use blocks, as
Claude's own replies are ordered. Both hold the same text, reasoning and calls.  A call
goes out whole when it ends — its ``content_block_start`` then one ``input_json_delta``
with its whole input — since an Anthropic client parses partial input as it arrives and
has no way to take a started tool_use back.  Ids are ``toolu_`` and 24 letters and digits
unless the model wrote one Anthropic accepts (``^[a-zA-Z0-9_-]+$``).  docs/anthropic.md has
the contract.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from .errors import PolicyError, StreamClosedError
from .models import (
    CallEnd,
    DiagnosticEvent,
    Event,
    ParseResult,
    Policy,
    ReasoningDelta,
    TextDelta,
    ToolCall,
)
from .openai import Ids, _model_id
from .stream import ToolStream, Translator
from .toolset import Toolset

__all__ = ["MessageStream", "ids", "message", "stop_reason"]

#: the form Anthropic's API requires of a tool_use id
ID_FORM = r"[a-zA-Z0-9_-]{1,256}"


def ids(*, seed: int | str | None = None) -> Ids:
    """Anthropic-style ids: ``toolu_`` and 24 letters and digits, and the model's own id
    only when Anthropic would accept it."""
    return Ids(prefix="toolu_", length=24, valid=ID_FORM, seed=seed)


def _ids(given: Ids | str | Callable[[], str] | None) -> Ids:
    if given is None:
        return ids()
    if isinstance(given, Ids):
        return given
    if isinstance(given, str):
        return Ids(prefix=given, valid=ID_FORM)
    if callable(given):
        return Ids(mint=given, valid=ID_FORM)
    raise PolicyError(f"ids must be a td.openai.Ids, a prefix str or a minting function, got {type(given).__name__}")


def stop_reason(result: ParseResult) -> str:
    """``max_tokens`` when the text was cut off (a ``truncated`` diagnostic), else
    ``tool_use`` when there are calls, else ``end_turn``."""
    if any(d.kind == "truncated" for d in result.diagnostics):
        return "max_tokens"
    return "tool_use" if result.calls else "end_turn"


def _input(call: ToolCall) -> Any:
    return json.loads(call.arguments_json) if call.arguments_json else {}


def _tool_use(call: ToolCall, call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": call.name, "input": _input(call)}


def _thinking(text: str) -> dict[str, Any]:
    # an open model's reasoning carries no signature
    return {"type": "thinking", "thinking": text, "signature": ""}


def _envelope(id: str, model: str, content: list[dict[str, Any]], reason: str | None) -> dict[str, Any]:
    return {
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }


def message(
    result: ParseResult, *, id: str, model: str, ids: Ids | str | Callable[[], str] | None = None
) -> dict[str, Any]:
    """A non-streaming Messages API response: thinking, text and tool_use blocks, in that
    order (empty ones left out), and its ``stop_reason``."""
    minter = _ids(ids)
    used: set[str] = set()
    content: list[dict[str, Any]] = []
    if result.reasoning:
        content.append(_thinking(result.reasoning))
    if result.text:
        content.append({"type": "text", "text": result.text})
    content.extend(_tool_use(c, minter.keep_or_new(_model_id(c), used)) for c in result.calls)
    return _envelope(id, model, content, stop_reason(result))


class MessageStream(Translator):
    """A :class:`~tooldialect.ToolStream` whose output is Anthropic stream events (dicts,
    one per server-sent event).  ``feed`` and ``close`` return the events the text decided;
    the first call sends ``message_start`` and ``close`` ends with ``message_delta`` (the
    ``stop_reason``) and ``message_stop``.  A caller driving its own ``ToolStream`` passes it
    as ``stream=`` and hands its events to :meth:`translate`, then calls :meth:`finish`."""

    def __init__(
        self,
        tools: Toolset | Iterable[Any] | None = None,
        *,
        id: str,
        model: str,
        families: Iterable[str] | None = None,
        policy: Policy | None = None,
        ids: Ids | str | Callable[[], str] | None = None,
        stream: ToolStream | None = None,
    ) -> None:
        self._adopt(stream, tools, families, policy)
        self.id = id
        self.model = model
        self.ids = _ids(ids)
        self.stop_reason: str | None = None
        self._used: set[str] = set()
        self._started = False
        self._open: str | None = None  # the kind of the block being written: "text" / "thinking"
        self._blocks = 0
        self._calls = 0
        self._truncated = False
        self._finished = False

    def translate(self, events: Iterable[Event]) -> list[dict[str, Any]]:
        """The stream events for a batch of parser events, in order."""
        if self._finished:
            raise StreamClosedError("translate() after finish(): start a new MessageStream for a new response")
        out: list[dict[str, Any]] = []
        self._begin(out)
        for ev in events:
            if isinstance(ev, TextDelta):
                self._write(out, "text", ev.text)
            elif isinstance(ev, ReasoningDelta):
                self._write(out, "thinking", ev.text)
            elif isinstance(ev, CallEnd):
                self._call(out, ev.call)
            elif isinstance(ev, DiagnosticEvent) and ev.diagnostic.kind == "truncated":
                self._truncated = True
            # CallStart, ArgumentsDelta, CallAbort: a call goes out whole at its end, so an
            # abort has nothing to take back
        return out

    def finish(self) -> list[dict[str, Any]]:
        """End of the response: the open block closes and ``stop_reason`` is set."""
        if self._finished:
            return []
        out: list[dict[str, Any]] = []
        self._begin(out)
        self._close_block(out)
        self._finished = True
        self.stop_reason = "max_tokens" if self._truncated else "tool_use" if self._calls else "end_turn"
        out.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": self.stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": 0},
            }
        )
        out.append({"type": "message_stop"})
        return out

    # blocks ------------------------------------------------------------------------------

    def _begin(self, out: list[dict[str, Any]]) -> None:
        if not self._started:
            self._started = True
            out.append({"type": "message_start", "message": _envelope(self.id, self.model, [], None)})

    def _write(self, out: list[dict[str, Any]], kind: str, text: str) -> None:
        if not text:
            return
        if self._open != kind:
            self._close_block(out)
            block = {"type": "text", "text": ""} if kind == "text" else _thinking("")
            out.append({"type": "content_block_start", "index": self._blocks, "content_block": block})
            self._open = kind
        index = self._blocks
        delta = {"type": "text_delta", "text": text} if kind == "text" else {"type": "thinking_delta", "thinking": text}
        last = out[-1] if out else None
        if last is not None and last["type"] == "content_block_delta" and last["index"] == index:
            key = "text" if kind == "text" else "thinking"
            last["delta"][key] += text  # adjacent pieces one call decided: one event
            return
        out.append({"type": "content_block_delta", "index": index, "delta": delta})

    def _close_block(self, out: list[dict[str, Any]]) -> None:
        if self._open is not None:
            out.append({"type": "content_block_stop", "index": self._blocks})
            self._blocks += 1
            self._open = None

    def _call(self, out: list[dict[str, Any]], call: ToolCall) -> None:
        self._close_block(out)
        index = self._blocks
        call_id = self.ids.keep_or_new(_model_id(call), self._used)
        block = {"type": "tool_use", "id": call_id, "name": call.name, "input": {}}
        out.append({"type": "content_block_start", "index": index, "content_block": block})
        out.append(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": call.arguments_json},
            }
        )
        out.append({"type": "content_block_stop", "index": index})
        self._blocks += 1
        self._calls += 1
