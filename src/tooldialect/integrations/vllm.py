"""tooldialect as vLLM's tool-call parser (and reasoning parser).

    vllm serve MODEL --enable-auto-tool-choice \\
        --tool-parser-plugin tooldialect.integrations.vllm --tool-call-parser tooldialect \\
        [--reasoning-parser-plugin tooldialect.integrations.vllm --reasoning-parser tooldialect]

Importing this module registers ``tooldialect`` with vLLM's ``ToolParserManager`` (and
``ReasoningParserManager``).  The families come from ``TOOLDIALECT_FAMILIES``, else from
the tokenizer's chat template, else from the model id (``TOOLDIALECT_MODEL``, else the
tokenizer's), through :func:`tooldialect.integrations.setup_for`; ``parser.profile`` is
what the template showed.

Each reply is read by one :class:`tooldialect.openai.ChatStream`, whose delta dicts
become vLLM's ``DeltaMessage`` / ``DeltaToolCall``: a call's id, type and name once, in
its first entry, then argument fragments; ``index`` is the call's position in the reply.
vLLM's serving layer reads ``prev_tool_call_arr`` / ``streamed_args_for_tool`` at the end
of a stream and sends whatever arguments they say were not streamed; here both hold the
argument text already sent, so it never sends a fragment twice.

Two ways vLLM drives a parser (docs/servers.md): with ``engine_based_streaming`` each call
gets only the new text and ``finish_streaming()`` ends the reply; a serving layer without
it hands over the accumulated text and never says the reply ended, so the parser ends
the reply itself at the first end-of-sequence token id in a delta's token ids, where vLLM
puts the token that stopped generation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .. import openai as _openai
from ..errors import ToolDialectError
from ..stream import parse
from ._gate import ReasoningGate
from ._setup import (
    Setup,
    end_token_ids,
    fixed,
    lenient_toolset,
    record_entry,
    setup_for,
    special_markers,
    toolset_of,
)

try:  # vLLM with entrypoints/generate (the protocol shared by chat and responses)
    from vllm.entrypoints.generate.base.protocol import (
        DeltaFunctionCall,
        DeltaMessage,
        DeltaToolCall,
        ExtractedToolCallInformation,
        FunctionCall,
        ToolCall,
    )
except ImportError:  # older vLLM: one protocol module for the OpenAI server
    from vllm.entrypoints.openai.protocol import (
        DeltaFunctionCall,
        DeltaMessage,
        DeltaToolCall,
        ExtractedToolCallInformation,
        FunctionCall,
        ToolCall,
    )
try:
    from vllm.tool_parsers import ToolParser, ToolParserManager
except ImportError:  # older vLLM
    from vllm.entrypoints.openai.tool_parsers import ToolParser, ToolParserManager
try:
    from vllm.reasoning import ReasoningParser, ReasoningParserManager
except ImportError:  # a vLLM without pluggable reasoning parsers
    ReasoningParser = None
    ReasoningParserManager = None
try:  # what vLLM's server answers with 400 Bad Request, naming the parameter
    from vllm.exceptions import VLLMValidationError
except ImportError:  # older vLLM: a ValueError is a 400 there
    VLLMValidationError = None

__all__ = ["NAME", "ToolDialectReasoningParser", "ToolDialectToolParser"]

#: The name both parsers are registered under.
NAME = "tooldialect"
#: vLLM's own prefix for the ids it mints.
ID_PREFIX = "chatcmpl-tool-"


class ToolDialectToolParser(ToolParser):
    """vLLM ``ToolParser`` reading every family tooldialect knows (or those configured)."""

    # vLLM reads these as class attributes: engine-based streaming (delta in, finish at
    # the end), and, set by vLLM when no reasoning parser is configured, that reasoning
    # this parser reads goes to the content
    engine_based_streaming = True
    skip_reasoning_parsing = False
    #: set by :meth:`configured`: the families and policy, instead of the environment's
    fixed_setup: Setup | None = None

    @classmethod
    def configured(cls, families: Any = None, policy: Any = None) -> type[ToolDialectToolParser]:
        """A subclass that reads with these families and policy, for a program that registers
        it itself: ``ToolParserManager.register_module("mine", module=ToolDialectToolParser.configured(["hermes"]))``."""
        return type(cls.__name__, (cls,), {"fixed_setup": fixed(families, policy)})

    def __init__(self, tokenizer: Any, tools: Any = None, *args: Any, **kwargs: Any) -> None:
        try:
            super().__init__(tokenizer, tools)
        except TypeError:  # older vLLM: ToolParser(tokenizer)
            super().__init__(tokenizer)
        self.setup = self.fixed_setup or setup_for(tokenizer)
        self.profile = self.setup.profile  # what the chat template showed (None: families configured)
        self._end_ids = end_token_ids(tokenizer)
        self._specials = special_markers(tokenizer, self.setup.families)
        self._chat: _openai.ChatStream | None = None
        self._closed = False

    # request ---------------------------------------------------------------------------

    def adjust_request(self, request: Any) -> Any:
        request = super().adjust_request(request)
        if request.tools and request.tool_choice in (None, "auto"):
            # tools this parser will read with: refused here, while vLLM renders the request
            # (a 400 naming the tool), not at the first delta after the client got a 200
            try:
                toolset_of(request.tools)
            except ToolDialectError as exc:
                if VLLMValidationError is None:
                    raise
                raise VLLMValidationError(f"tools: {exc}", parameter="tools") from exc
        # a family whose markers are special tokens is unreadable once the server drops
        # them from the text; a tokenizer that does not say which tokens are special keeps all
        if request.tools and request.tool_choice != "none" and (self._specials is None or self._specials):
            request.skip_special_tokens = False
        return request

    def _new_chat(self, request: Any) -> _openai.ChatStream:
        # a request whose tools adjust_request did not see (a serving path that skips it):
        # read with what the toolset accepts, and a warning, never an error mid-stream
        tools = lenient_toolset(getattr(request, "tools", None) or self.tools)
        return _openai.ChatStream(
            tools,
            families=self.setup.families,
            policy=self.setup.policy,
            ids=_openai.Ids(prefix=ID_PREFIX),
        )

    # whole replies ---------------------------------------------------------------------

    def extract_tool_calls(self, model_output: str, request: Any) -> Any:
        chat = self._new_chat(request)
        message = _Message(self.skip_reasoning_parsing)
        for delta in chat.feed(model_output) + chat.close():
            message.add(delta)
        calls = [
            ToolCall(id=c["id"], type="function", function=FunctionCall(name=c["name"], arguments=c["arguments"]))
            for c in message.calls()
        ]
        return ExtractedToolCallInformation(tools_called=bool(calls), tool_calls=calls, content=message.content or None)

    # streaming -------------------------------------------------------------------------

    def extract_tool_calls_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
        request: Any,
    ) -> Any:
        if self._closed:  # text after the end token (ignore_eos): as written
            return DeltaMessage(content=delta_text) if delta_text else None
        if self._chat is None:
            self._chat = self._new_chat(request)
        deltas = self._chat.feed(delta_text) if delta_text else []
        if self._end_ids and any(i in self._end_ids for i in delta_token_ids or ()):
            # the token that stopped generation: the reply ends here, on either path
            deltas += self._close()
        return self._message(deltas)

    def finish_streaming(self) -> Any:
        """The end of the reply (vLLM's engine-based serving calls it once)."""
        if self._chat is None or self._closed:
            return None
        return self._message(self._close())

    def _close(self) -> list[dict[str, Any]]:
        self._closed = True
        return self._chat.close() if self._chat is not None else []

    def _message(self, deltas: list[dict[str, Any]]) -> Any:
        """One DeltaMessage for the deltas one step decided (None when there are none), with
        the serving layer's record of each call's name and streamed arguments kept."""
        content: list[str] = []
        reasoning: list[str] = []
        entries: list[Any] = []
        for delta in deltas:
            text = delta.get("reasoning_content")
            if text:
                (content if self.skip_reasoning_parsing else reasoning).append(text)
            if delta.get("content"):
                content.append(delta["content"])
            for entry in delta.get("tool_calls", ()):
                entries.append(self._entry(entry))
        if not (content or reasoning or entries):
            return None
        return DeltaMessage(
            content="".join(content) or None,
            reasoning="".join(reasoning) or None,
            tool_calls=entries,
        )

    def _entry(self, entry: dict[str, Any]) -> Any:
        slot = entry["index"]
        function = entry["function"]
        fragment = record_entry(self, entry)
        fields: dict[str, Any] = {"index": slot}
        if "id" in entry:
            fields.update(id=entry["id"], type="function")
            fields["function"] = DeltaFunctionCall(name=function["name"], arguments=fragment)
        else:
            fields["function"] = DeltaFunctionCall(arguments=fragment)
        if "aborted" in entry:  # the call will not complete (docs/openai.md)
            fields["aborted"] = entry["aborted"]
        return DeltaToolCall(**fields)


class _Message:
    """A whole reply's deltas put back together: content, and each call by position
    (calls marked aborted left out, as docs/openai.md says a client does)."""

    def __init__(self, reasoning_as_content: bool) -> None:
        self.reasoning_as_content = reasoning_as_content
        self.parts: list[str] = []
        self.by_slot: dict[int, dict[str, Any]] = {}

    def add(self, delta: dict[str, Any]) -> None:
        if self.reasoning_as_content and delta.get("reasoning_content"):
            self.parts.append(delta["reasoning_content"])
        if delta.get("content"):
            self.parts.append(delta["content"])
        for entry in delta.get("tool_calls", ()):
            call = self.by_slot.setdefault(entry["index"], {"arguments": ""})
            if "id" in entry:
                call.update(id=entry["id"], name=entry["function"]["name"])
            call["arguments"] += entry["function"].get("arguments", "")
            if "aborted" in entry:
                call["aborted"] = entry["aborted"]

    @property
    def content(self) -> str:
        return "".join(self.parts)

    def calls(self) -> list[dict[str, Any]]:
        return [c for _, c in sorted(self.by_slot.items()) if "aborted" not in c and "name" in c]


ToolParserManager.register_module(NAME, force=True, module=ToolDialectToolParser)


if ReasoningParser is not None:

    class ToolDialectReasoningParser(ReasoningParser):
        """vLLM ``ReasoningParser`` to pair with the tool parser: it hands every character
        to the tool parser, which reads reasoning, text and calls in one pass and streams
        the reasoning in the ``reasoning`` field; for a whole reply it reports the
        reasoning the same reading finds (the tool parser leaves it out of the content)."""

        engine_based_streaming = True
        fixed_setup: Setup | None = None

        @classmethod
        def configured(cls, families: Any = None, policy: Any = None) -> type:
            """A subclass that reads with these families and policy (as the tool parser's)."""
            return type(cls.__name__, (cls,), {"fixed_setup": fixed(families, policy)})

        def __init__(self, tokenizer: Any, *args: Any, **kwargs: Any) -> None:
            super().__init__(tokenizer, *args, **kwargs)
            self.setup = self.fixed_setup or setup_for(tokenizer)
            self.profile = self.setup.profile  # what the chat template showed (None: families configured)
            self._gate = ReasoningGate(tokenizer, self.setup.policy)

        # vLLM's structured output (a response_format, tool_choice "required" or a named
        # tool) constrains the reply from where these say its reasoning ended: asked once
        # with the prompt, then at every step with the whole sequence and the newest tokens

        def is_reasoning_end(self, input_ids: Sequence[int]) -> bool:
            return self._gate.ended(input_ids)

        def is_reasoning_end_streaming(self, input_ids: Sequence[int], delta_ids: Iterable[int]) -> bool:
            return self._gate.ended(input_ids, list(delta_ids))

        # the serving layer: the tool parser reads reasoning, text and calls in one pass, so
        # every character and token goes to it, whatever the gate says

        def has_engine_confirmed_reasoning_end(self) -> bool:
            return True

        def extract_content_ids(self, input_ids: list[int]) -> list[int]:
            return list(input_ids)

        def extract_reasoning(self, model_output: str, request: Any) -> tuple[str | None, str | None]:
            result = parse(model_output, families=self.setup.families, policy=self.setup.policy)
            return result.reasoning or None, model_output

        def extract_reasoning_streaming(
            self,
            previous_text: str,
            current_text: str,
            delta_text: str,
            previous_token_ids: Sequence[int],
            current_token_ids: Sequence[int],
            delta_token_ids: Sequence[int],
        ) -> Any:
            # reached only if vLLM did not ask is_reasoning_end first: the text is the
            # tool parser's to read
            return DeltaMessage(content=delta_text) if delta_text else None

        def finish_streaming(self) -> Any:
            return None

    ReasoningParserManager.register_module(NAME, force=True, module=ToolDialectReasoningParser)
else:  # pragma: no cover - a vLLM without reasoning parsers
    ToolDialectReasoningParser = None  # type: ignore[assignment, misc]  # the class name, bound to None: no class here
