"""tooldialect's vLLM parsers without vLLM installed: the plugin module loaded over a stand-in
for the few names it imports from vLLM (the tool and reasoning parser bases, their registries,
the delta models and the 400 error), so the main suite drives the plugin's own classes the way
vLLM's server does.  tests/integrations/test_vllm.py drives them with vLLM's real classes.

- A request whose tools the Toolset refuses is refused while vLLM renders it (``adjust_request``:
  a 400 naming the tool), never at the first delta of a stream that already answered 200.
- vLLM's structured output asks the reasoning parser, once with the prompt and then at every
  step with the whole sequence and the newest tokens, whether the reasoning has ended; the
  answers follow the reply's reasoning markers, so a constraint starts after ``</think>``.
"""

from __future__ import annotations

import importlib
import logging
import sys
import types
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ConfigDict, Field

import tooldialect as td

# -- the stand-in: what tooldialect.integrations.vllm imports from vLLM ------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class DeltaFunctionCall(_Model):
    name: str | None = None
    arguments: str | None = None


class DeltaToolCall(_Model):
    id: str | None = None
    type: str | None = None
    index: int
    function: DeltaFunctionCall | None = None


class DeltaMessage(_Model):
    content: str | None = None
    reasoning: str | None = None
    tool_calls: list[DeltaToolCall] = Field(default_factory=list)


class FunctionCall(_Model):
    name: str
    arguments: str


class ToolCall(_Model):
    id: str
    type: str = "function"
    function: FunctionCall


class ExtractedToolCallInformation(_Model):
    tools_called: bool
    tool_calls: list[ToolCall]
    content: str | None = None


class ToolParser:
    def __init__(self, tokenizer: Any, tools: Any = None) -> None:
        self.model_tokenizer = tokenizer
        self.tools = tools or []
        self.prev_tool_call_arr: list[dict[str, Any]] = []
        self.streamed_args_for_tool: list[str] = []
        self.current_tool_id = -1
        self.current_tool_name_sent = False

    def adjust_request(self, request: Any) -> Any:
        return request


class ReasoningParser:
    def __init__(self, tokenizer: Any, *args: Any, **kwargs: Any) -> None:
        self.model_tokenizer = tokenizer


class _Manager:
    registered: ClassVar[dict[str, type]] = {}

    @classmethod
    def register_module(cls, name: str, force: bool = True, module: Any = None) -> None:
        cls.registered[name] = module


class VLLMValidationError(ValueError):
    def __init__(self, message: str, *, parameter: str | None = None) -> None:
        super().__init__(message)
        self.parameter = parameter


@pytest.fixture
def tdv(monkeypatch: pytest.MonkeyPatch) -> Any:
    """tooldialect.integrations.vllm, loaded over the stand-in (both taken away afterwards)."""
    names = {
        "vllm": {},
        "vllm.entrypoints": {},
        "vllm.entrypoints.generate": {},
        "vllm.entrypoints.generate.base": {},
        "vllm.entrypoints.generate.base.protocol": {
            "DeltaFunctionCall": DeltaFunctionCall,
            "DeltaMessage": DeltaMessage,
            "DeltaToolCall": DeltaToolCall,
            "ExtractedToolCallInformation": ExtractedToolCallInformation,
            "FunctionCall": FunctionCall,
            "ToolCall": ToolCall,
        },
        "vllm.tool_parsers": {"ToolParser": ToolParser, "ToolParserManager": _Manager},
        "vllm.reasoning": {"ReasoningParser": ReasoningParser, "ReasoningParserManager": _Manager},
        "vllm.exceptions": {"VLLMValidationError": VLLMValidationError},
    }
    for name, attrs in names.items():
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        module.__path__ = []  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, name, module)
    # the plugin module and the package's attribute for it, put back as they were afterwards
    import tooldialect.integrations as package

    monkeypatch.setitem(sys.modules, "tooldialect.integrations.vllm", None)
    monkeypatch.setattr(package, "vllm", None, raising=False)
    del sys.modules["tooldialect.integrations.vllm"]
    return importlib.import_module("tooldialect.integrations.vllm")


class CharTokenizer:
    """A Hugging Face-shaped tokenizer: each special token one id, every other character
    ``1000 + code point``."""

    def __init__(self, specials: tuple[str, ...] = ("<think>", "</think>", "<tool_call>", "</tool_call>")) -> None:
        self.ids = {s: i + 1 for i, s in enumerate(specials)}
        self.by_id = {i: s for s, i in self.ids.items()}
        self.all_special_ids = list(self.by_id)
        self.all_special_tokens = list(self.ids)
        self.eos_token_id = 0
        self.name_or_path = "test/model"

    def encode(self, text: str) -> list[int]:
        out, i = [], 0
        while i < len(text):
            special = next((s for s in self.ids if text.startswith(s, i)), None)
            if special is not None:
                out.append(self.ids[special])
                i += len(special)
            else:
                out.append(1000 + ord(text[i]))
                i += 1
        return out

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return "".join(self.by_id.get(i, "") if i < 1000 else chr(i - 1000) for i in ids)

    def convert_ids_to_tokens(self, ids: Any) -> Any:
        return self.decode([ids]) if isinstance(ids, int) else [self.decode([i]) for i in ids]


class Request:
    def __init__(self, tools: list[dict[str, Any]] | None, tool_choice: Any = "auto") -> None:
        self.tools = tools
        self.tool_choice = tool_choice
        self.skip_special_tokens = True


def tool(name: str, properties: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": properties or {}}},
    }


BAD_TYPE = [tool("get_weather", {"city": {"type": "strng"}})]
TWO_OF_A_NAME = [tool("get_weather"), tool("get_weather", {"city": {"type": "string"}})]
REPLY = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'


# -- item: bad request tools are refused before generation ------------------------------------


@pytest.mark.parametrize("tools", [BAD_TYPE, TWO_OF_A_NAME], ids=["bad-schema", "two-of-a-name"])
def test_tools_the_toolset_refuses_are_refused_while_the_request_is_rendered(tdv, tools):
    parser = tdv.ToolDialectToolParser.configured(["hermes"])(CharTokenizer(), tools)
    with pytest.raises(ValueError, match="get_weather") as err:
        parser.adjust_request(Request(tools))
    assert isinstance(err.value, VLLMValidationError) and err.value.parameter == "tools"
    assert str(err.value).startswith("tools: ")
    # the same tools with tool_choice "required" or a named tool: vLLM reads the calls itself
    assert parser.adjust_request(Request(tools, "required")).tools == tools
    # good tools go through as before
    assert parser.adjust_request(Request([tool("get_weather")])).tools == [tool("get_weather")]


@pytest.mark.parametrize("tools", [BAD_TYPE, TWO_OF_A_NAME], ids=["bad-schema", "two-of-a-name"])
def test_a_stream_whose_tools_were_not_checked_never_fails_mid_reply(tdv, tools, caplog):
    parser = tdv.ToolDialectToolParser.configured(["hermes"])(CharTokenizer(), tools)
    calls: dict[int, dict[str, str]] = {}
    with caplog.at_level(logging.WARNING, logger="tooldialect.integrations"):
        deltas = [
            parser.extract_tool_calls_streaming("", "", REPLY[i : i + 5], [], [], [], Request(tools))
            for i in range(0, len(REPLY), 5)
        ]
        deltas.append(parser.finish_streaming())
    for delta in deltas:
        for tc in delta.tool_calls if delta is not None else ():
            call = calls.setdefault(tc.index, {"name": "", "arguments": ""})
            call["name"] += tc.function.name or ""
            call["arguments"] += tc.function.arguments or ""
    assert calls == {0: {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    assert any("get_weather" in r.getMessage() for r in caplog.records)


# -- item: the reasoning parser answers is_reasoning_end from the reply ----------------------


def gate(tdv: Any, policy: td.Policy | None = None) -> Any:
    """A reasoning parser as vLLM's structured output builds one per request."""
    return tdv.ToolDialectReasoningParser.configured(["hermes"], policy)(CharTokenizer())


def constrained_from(parser: Any, prompt: str, steps: list[str]) -> int | None:
    """Where vLLM's structured output would start constraining a reply generated in
    ``steps`` (each step's text is one or more tokens the engine accepts at once): the
    prompt first (``is_reasoning_end``), then each step with the whole sequence and the
    newest tokens (``is_reasoning_end_streaming``), and, in the step where it ended, the
    step's tokens taken off one by one until it had not, as vLLM finds the first token
    after the end.  The index, in the reply's tokens, of the first constrained token
    (0: from the start; None: never)."""
    tok = parser.model_tokenizer
    ids = tok.encode(prompt)
    if parser.is_reasoning_end(ids):
        return 0
    for text in steps:
        new = tok.encode(text)
        ids = ids + new
        if not parser.is_reasoning_end_streaming(ids, new):
            continue
        first = len(new)
        for cut in range(len(new) - 1, 0, -1):
            if not parser.is_reasoning_end_streaming(ids[: len(ids) - len(new) + cut], new[:cut]):
                break
            first = cut
        return len(ids) - len(tok.encode(prompt)) - len(new) + first
    return None


THINKING = "<|im_start|>assistant\n<think>\n"


def test_a_template_that_opens_reasoning_constrains_after_its_closer(tdv):
    steps = ["Let", " me", " think", ".", "</think>", "\n\n", '{"a"', ": 1}"]
    at = constrained_from(gate(tdv), THINKING, steps)
    assert at == len("Let me think.") + 1  # the token after </think>
    # several tokens accepted in one step (speculative decoding): the same token
    assert constrained_from(gate(tdv), THINKING, ["Let me think.", "</think>\n\n{", '"a": 1}']) == at
    # the closer written in ordinary characters, cut between two steps
    plain = tdv.ToolDialectReasoningParser.configured(["hermes"])(CharTokenizer(specials=()))
    assert constrained_from(plain, THINKING, ["Let me think.", "</th", "ink>", "\n{}"]) == len("Let me think.</think>")


def test_where_the_prompt_leaves_the_reply_decides_where_it_starts(tdv):
    off = "<|im_start|>assistant\n<think>\n\n</think>\n\n"  # thinking switched off by the template
    assert constrained_from(gate(tdv), off, ["{}"]) == 0
    # no marker in the prompt: where the policy says a reply starts
    assert constrained_from(gate(tdv), "<|im_start|>assistant\n", ["{}"]) == 0
    opened = td.Policy(start_in_reasoning=True)
    assert constrained_from(gate(tdv, opened), "<|im_start|>assistant\n", ["Hm.", "</think>", "{}"]) == 4
    # a reasoning marker of an earlier turn, far back in the prompt, is not the template's
    far = "<think>old</think>" + "x" * 40 + THINKING
    assert constrained_from(gate(tdv), far, ["a", "</think>", "{}"]) == 2
    # reasoning that never ends: never constrained
    assert constrained_from(gate(tdv), THINKING, ["still", " thinking"]) is None


def test_tokens_the_engine_may_reject_are_read_on_a_copy(tdv):
    parser = gate(tdv)
    tok = parser.model_tokenizer
    ids = tok.encode(THINKING)
    assert not parser.is_reasoning_end(ids)
    ids += tok.encode("ok")
    assert parser.is_reasoning_end_streaming(ids + tok.encode("</think>"), tok.encode("</think>"))  # proposed
    ids += tok.encode("x")  # the proposal was rejected: "x" was accepted instead
    assert not parser.is_reasoning_end_streaming(ids, tok.encode("x"))
    ids += tok.encode("</think>")
    assert parser.is_reasoning_end_streaming(ids, tok.encode("</think>"))


def test_every_token_goes_to_the_tool_parser_whatever_the_answer(tdv):
    parser = gate(tdv)
    assert parser.extract_content_ids([5, 6, 7]) == [5, 6, 7]
    assert parser.has_engine_confirmed_reasoning_end() is True
