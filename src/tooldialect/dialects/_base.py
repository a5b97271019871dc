"""A dialect: catalogue, call syntax, result envelope and replay, chosen together.

A catalogue that advertises one syntax next to a parser that expects another fails a
whole turn with no error anywhere, so the four live on one object.  ``TextDialect`` is
what the four text dialects share; each of them only says which style it writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import PolicyError
from ..models import ParseResult, Policy
from ..render import protocol
from ..render.calls import as_call, check_nesting, too_deep
from ..render.calls import render_call as _render_body
from ..render.signatures import MAX_NESTING, nesting
from ..render.tool_results import results as result_turns
from ..stream import parse as _parse
from ..toolset import Toolset
from ..transcript import AssistantToolCalls, Chat, Entry, ToolResult, ToolResults, pair_tool_cycles

__all__ = ["CONTINUATION", "MAX_NESTING", "Dialect", "TextDialect", "as_call", "nesting"]

#: The user turn a text replay adds when the transcript holds no user message.
CONTINUATION = "Continue."


@dataclass(frozen=True)
class Dialect:
    """One way of speaking tools.  ``host_renders_catalogue=True`` when the host's own
    system prompt already holds this dialect's block and catalogue (see ``instructions``)."""

    host_renders_catalogue: bool = False

    name: ClassVar[str] = ""
    style: ClassVar[str] = ""
    #: Whether tool specs go in the request (native) rather than in the prompt.
    sends_tool_specs: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if not isinstance(self.host_renders_catalogue, bool):
            raise PolicyError("host_renders_catalogue must be True or False")

    def instructions(self, tools: Any, *, tool_choice: Any = "auto", turn_tools: Any = ()) -> str:
        """The tool section of the system prompt (``td.render.instructions``)."""
        return protocol.instructions(
            tools,
            style=self.style,
            tool_choice=tool_choice,
            host_renders_catalogue=self.host_renders_catalogue,
            turn_tools=turn_tools,
        )

    def request_fields(self, tools: Any, *, tool_choice: Any = "auto") -> dict[str, Any]:
        """Members to add to the request body: none for a text dialect (no specs on the wire)."""
        protocol.check_tool_choice(tool_choice, Toolset.coerce(tools).names)
        return {}

    def __repr__(self) -> str:
        flag = ", host_renders_catalogue=True" if self.host_renders_catalogue else ""
        return f"td.dialects.get({self.name!r}{flag})"


@dataclass(frozen=True, repr=False)
class TextDialect(Dialect):
    """Calls written as text inside the tool-call tag, results in ``<tool_result>`` envelopes,
    replay folded into user and assistant turns."""

    def catalogue(self, tools: Any) -> str:
        """The catalogue alone: JSON schemas (xml) or signatures in the dialect's style."""
        return protocol.catalogue_for(Toolset.coerce(tools), self.style)

    def render_call(self, call: Any, tools: Any = None) -> str:
        """A call written as the model writes it in this dialect, tags included.  P-Format and
        code calls are written against the tool's schema, so ``tools`` must offer it."""
        name, arguments, exact = as_call(call)
        if arguments is None:
            raise PolicyError(f"the arguments of {name!r} are not one JSON object; a call can only be written with one")
        check_nesting(name, arguments)
        return protocol.tagged(self._body(name, arguments, exact, _toolset(tools), strict=True))

    def _body(
        self, name: str, arguments: dict[str, Any], exact: str | None, tools: Toolset | None, strict: bool
    ) -> str:
        tool = tools.get(name) if tools is not None else None
        if tool is None:
            if strict:
                raise PolicyError(f"{self.name} writes a call against its tool's schema: pass tools= offering {name!r}")
            return _json_body(name, arguments, exact)
        try:
            return _render_body(tool, arguments, self.style)
        except PolicyError:
            if strict:
                raise
            return _json_body(name, arguments, exact)  # what the style cannot say, JSON can

    def render_results(self, results: Iterable[ToolResult]) -> list[dict[str, Any]]:
        """User turns handing ``results`` back (``td.render.results``): one framed turn, and
        one raw turn per verbatim result."""
        return [{"role": "user", "content": turn} for turn in result_turns(results)]

    def parse(self, text: str, tools: Any = None, *, policy: Policy | None = None) -> ParseResult:
        """A reply read with every family: a model told one syntax may still answer in another."""
        return _parse(text, tools, policy=policy)

    def replay(self, transcript: Iterable[Entry], *, tools: Any = None) -> list[dict[str, Any]]:
        """The transcript as chat messages for a model that speaks this dialect in text.

        Incomplete cycles are dropped first (``pair_tool_cycles``).  An assistant turn's calls
        are written after its content in this dialect's syntax (in the JSON form every text
        dialect reads when ``tools`` does not offer the tool, or the style cannot write the
        arguments); consecutive results become one results turn; a transcript with no user
        message gets a continuation user turn after its leading system messages.
        """
        toolset = _toolset(tools)
        messages: list[dict[str, Any]] = []
        pending: list[ToolResult] = []
        asked = False  # a user message of the transcript's own (not a results turn)
        for entry in pair_tool_cycles(transcript):
            if isinstance(entry, ToolResults):
                pending.extend(entry.results)
                continue
            messages += self.render_results(pending) if pending else []
            pending = []
            if isinstance(entry, Chat):
                messages.append(chat_message(entry))
                asked = asked or entry.role == "user"
            else:
                messages.append(self._assistant(entry, toolset))
        messages += self.render_results(pending) if pending else []
        return messages if asked or not messages else _with_user_turn(messages)

    def _assistant(self, entry: AssistantToolCalls, tools: Toolset | None) -> dict[str, Any]:
        calls = []
        for call in entry.tool_calls:
            name, arguments, exact = as_call(call)
            if arguments is None:
                calls.append(protocol.tagged(protocol.json_call(name, protocol.json_dumps(call.arguments))))
            elif too_deep(arguments):
                calls.append(protocol.tagged(protocol.json_call(name, call.arguments)))  # as written, not walked
            else:
                calls.append(protocol.tagged(self._body(name, arguments, exact, tools, strict=False)))
        text = entry.content or ""
        if text and not text.endswith("\n"):
            text += "\n"
        message: dict[str, Any] = {"role": "assistant", "content": text + "\n".join(calls)}
        if entry.reasoning_content is not None:
            message["reasoning_content"] = entry.reasoning_content
        message.update(entry.extra or {})
        return message


def _json_body(name: str, arguments: dict[str, Any], exact: str | None) -> str:
    if exact is None:
        try:
            exact = protocol.json_dumps(arguments)
        except (TypeError, ValueError) as exc:
            raise PolicyError(f"the arguments of {name!r} are not JSON: {exc}") from None
    return protocol.json_call(name, exact)


def _toolset(tools: Any) -> Toolset | None:
    return None if tools is None else Toolset.coerce(tools)


def chat_message(entry: Chat) -> dict[str, Any]:
    message: dict[str, Any] = {"role": entry.role, "content": entry.content}
    message.update(entry.extra or {})
    return message


def _with_user_turn(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat templates look for the user's query; a history that lost it (compaction, a
    restored cycle) gets a continuation turn where the conversation starts."""
    at = 0
    while at < len(messages) and messages[at]["role"] in ("system", "developer"):
        at += 1
    return [*messages[:at], {"role": "user", "content": CONTINUATION}, *messages[at:]]
