"""Native tool calling: specs and calls travel in the provider's structured channel."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from ..detect import DetectResult, scan
from ..errors import PolicyError
from ..models import Policy, ToolCall
from ..render import protocol
from ..toolset import Toolset
from ..transcript import AssistantCall, AssistantToolCalls, Chat, Entry, ToolResult, ToolResults, pair_tool_cycles
from ._base import Dialect, as_call, chat_message

__all__ = ["Native"]


@dataclass(frozen=True, repr=False)
class Native(Dialect):
    """The request carries the tool specs and ``tool_choice``; the prompt gets only a short
    behavioural block.  Replay is OpenAI-style messages, byte for byte where it matters."""

    name: ClassVar[str] = "native"
    style: ClassVar[str] = "native"
    sends_tool_specs: ClassVar[bool] = True

    def catalogue(self, tools: Any) -> str:
        """Nothing in the prompt: the specs go in the request (``request_fields``)."""
        Toolset.coerce(tools)
        return ""

    def request_fields(self, tools: Any, *, tool_choice: Any = "auto") -> dict[str, Any]:
        """``{"tools": […], "tool_choice": …}`` for an OpenAI-style request; ``{}`` without tools."""
        toolset = Toolset.coerce(tools)
        choice = protocol.check_tool_choice(tool_choice, toolset.names)
        if not len(toolset):
            return {}
        specs = []
        for tool in toolset:
            function: dict[str, Any] = {"name": tool.name}
            if tool.description:
                function["description"] = tool.description
            function["parameters"] = tool.parameters
            specs.append({"type": "function", "function": function})
        wire = {"type": "function", "function": {"name": choice["name"]}} if isinstance(choice, dict) else choice
        return {"tools": specs, "tool_choice": wire}

    def render_call(self, call: Any, tools: Any = None) -> dict[str, Any]:
        """An OpenAI-style tool call object.  It needs an id: a ``td.transcript.AssistantCall``,
        or a ``td.ToolCall`` the model gave an id."""
        if isinstance(call, AssistantCall):
            return _wire_call(call)
        if isinstance(call, ToolCall) and call.id is not None:
            return _wire_call(AssistantCall.from_call(call))
        as_call(call)  # a shape error says what a call is
        raise PolicyError("a native call needs an id: pass a td.transcript.AssistantCall (or a td.ToolCall with an id)")

    def render_results(self, results: Iterable[ToolResult]) -> list[dict[str, Any]]:
        """One ``tool`` message per result, its output as is (the channel has no status)."""
        items = list(results) if not isinstance(results, (str, bytes, ToolResult)) else None
        if items is None or not all(isinstance(r, ToolResult) for r in items):
            raise PolicyError("render_results() takes a list of td.ToolResult")
        return [{"role": "tool", "tool_call_id": r.tool_call_id, "content": r.output} for r in items]

    def parse(
        self, text: str, tools: Any = None, *, native_calls: Any = (), policy: Policy | None = None
    ) -> DetectResult:
        """The content of a native response.  Text calls there are intents, never calls to
        run (``td.detect.scan``): the content shown, the markup reported."""
        return scan(text, native_calls=native_calls, tools=tools, policy=policy)

    def replay(self, transcript: Iterable[Entry], *, tools: Any = None) -> list[dict[str, Any]]:
        """OpenAI-style messages after ``pair_tool_cycles``: calls with their ids, exact
        ``arguments`` strings and ``extra_content``; ``reasoning_content`` as it was."""
        messages: list[dict[str, Any]] = []
        for entry in pair_tool_cycles(transcript):
            if isinstance(entry, Chat):
                messages.append(chat_message(entry))
            elif isinstance(entry, AssistantToolCalls):
                messages.append(_assistant(entry))
            else:
                assert isinstance(entry, ToolResults)
                messages += self.render_results(entry.results)
        return messages


def _wire_call(call: AssistantCall) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }
    if call.extra_content is not None:
        out["extra_content"] = call.extra_content
    return out


def _assistant(entry: AssistantToolCalls) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": entry.content}
    if entry.reasoning_content is not None:
        message["reasoning_content"] = entry.reasoning_content
    message["tool_calls"] = [_wire_call(c) for c in entry.tool_calls]
    message.update(entry.extra or {})
    return message
