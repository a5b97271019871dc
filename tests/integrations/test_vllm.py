"""tooldialect's vLLM parsers, driven by vLLM's own serving code: the ``Parser`` vLLM
composes for ``--tool-call-parser`` (``ParserManager``), fed by the chat stream processor
the OpenAI server runs per choice (``ChatStreamProcessor.step``), on the engine-based
path and on the legacy one (accumulated text, no end-of-stream call), and
``Parser.parse`` for whole replies.  Over every corpus case, at 1- and 4-character
deltas and at token granularity (o200k, special tokens whole), the calls a client puts
back together equal ``td.parse``'s."""

from __future__ import annotations

from typing import Any

import pytest
from server_loops import (
    CASES,
    MISSING,
    SIZES,
    FakeTokenizer,
    assembled,
    case_id,
    check_ids,
    expected_calls,
    pieces,
    reading,
)

import tooldialect as td

if MISSING.get("vllm") is not None:
    pytest.skip(str(MISSING["vllm"]), allow_module_level=True)

# the servers' modules load once server_loops has installed the stubs
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.entrypoints.openai.chat_completion.stream_processor import ChatStreamProcessor
from vllm.parser.parser_manager import ParserManager
from vllm.reasoning import ReasoningParserManager
from vllm.tool_parsers import ToolParserManager

from tooldialect.integrations import vllm as tdv

TOKENIZER = FakeTokenizer(())
PROMPT = [1000 + ord(c) for c in "hi"]


def server(opts: dict[str, Any], *, legacy: bool = False, reasoning: bool = False) -> type:
    """The Parser class vLLM composes for ``--tool-call-parser`` (and ``--reasoning-parser``)
    naming tooldialect, configured with the case's families and policy; ``legacy`` takes
    away ``engine_based_streaming``, as a serving layer that predates it ignores it."""
    tool_cls = tdv.ToolDialectToolParser.configured(opts.get("families"), opts.get("policy"))
    if legacy:
        tool_cls = type("LegacyToolDialect", (tool_cls,), {"engine_based_streaming": False})
    ToolParserManager.register_module("tooldialect-test", force=True, module=tool_cls)
    reasoning_name = None
    if reasoning:
        r_cls = tdv.ToolDialectReasoningParser.configured(opts.get("families"), opts.get("policy"))
        ReasoningParserManager.register_module("tooldialect-test", force=True, module=r_cls)
        reasoning_name = "tooldialect-test"
    return ParserManager.get_parser(
        tool_parser_name="tooldialect-test",
        reasoning_parser_name=reasoning_name,
        enable_auto_tools=True,
        model_name="test/model",
    )


def request(tools: list[dict[str, Any]] | None) -> Any:
    return ChatCompletionRequest(messages=[{"role": "user", "content": "hi"}], model="test/model", tools=tools)


def stream(
    text: str,
    size: int | str,
    tools: Any,
    opts: dict[str, Any],
    *,
    end_token: bool = True,
    prompt: list[int] = PROMPT,
    **how: Any,
) -> dict[str, Any]:
    """One streamed response as an OpenAI client puts it back together: content, reasoning,
    calls by index (aborted ones left out, docs/openai.md) and the finish reason."""
    parser_cls = server(opts, **how)
    req = request(tools)
    parser = parser_cls(TOKENIZER, req.tools)
    req = parser.adjust_request(req)
    proc = ChatStreamProcessor(req, parser, enable_auto_tools=True, parser_cls=parser_cls)
    steps = [(piece, TOKENIZER.encode(piece), None) for piece in pieces(text, size)]
    # the last chunk: the end-of-sequence token that stopped generation (its text is not output)
    steps.append(("", [TOKENIZER.eos_token_id] if end_token else [], "stop"))
    content, reasoning, calls, finish = [], [], {}, None
    for piece, ids, reason in steps:
        step = proc.step(piece, ids, reason, prompt)
        finish = step.finish_reason
        delta = step.delta
        if delta is None:
            continue
        content.append(delta.content or "")
        reasoning.append(delta.reasoning or "")
        for tc in delta.tool_calls:
            call = calls.setdefault(tc.index, {"arguments": "", "entries": 0})
            call["entries"] += 1
            if tc.id is not None:
                assert "id" not in call, "a call's id went out twice"
                call.update(id=tc.id, name=tc.function.name)
            elif tc.function is not None:
                assert tc.function.name is None, "a call's name went out twice"
            call["arguments"] += (tc.function.arguments if tc.function else None) or ""
            if (tc.model_extra or {}).get("aborted"):
                call["aborted"] = True
    tool_parser = parser.tool_parser
    # what the serving layer would top up at the end: nothing, every fragment went out
    assert tool_parser.get_remaining_unstreamed_args() == ""
    kept = [c for _, c in sorted(calls.items()) if not c.get("aborted")]
    assert list(calls) == sorted(calls) == list(range(len(calls)))
    return {
        "content": "".join(content),
        "reasoning": "".join(reasoning),
        "calls": kept,
        "finish": finish,
    }


@pytest.mark.parametrize("legacy", [False, True], ids=["engine", "legacy"])
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_streamed_calls_equal_parse(case, size, legacy):
    tools, opts, result = reading(case)
    got = stream(case.text, size, tools, opts, legacy=legacy)
    assert assembled(got["calls"]) == expected_calls(result)
    check_ids([c["id"] for c in got["calls"]], result, tdv.ID_PREFIX)
    # no reasoning parser: reasoning the tool parser reads goes out as content, in order
    assert got["reasoning"] == ""
    if tools is None and legacy:  # tool_choice "none": a legacy serving layer passes text by
        assert got["content"] == case.text
    else:
        assert len(got["content"]) == len(result.text) + len(result.reasoning)
    assert got["finish"] == ("tool_calls" if result.calls else "stop")


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_with_the_reasoning_parser_reasoning_has_its_field(case):
    tools, opts, result = reading(case)
    got = stream(case.text, 4, tools, opts, reasoning=True)
    assert got["reasoning"] == result.reasoning
    assert got["content"] == result.text
    assert assembled(got["calls"]) == expected_calls(result)
    parser_cls = server(opts, reasoning=True)
    req = request(tools)
    reasoning, content, calls = parser_cls(TOKENIZER, req.tools).parse(case.text, req, enable_auto_tools=True)
    assert (reasoning or "") == result.reasoning
    assert content == ((result.text if result.text.strip() or not result.calls else "") or None)
    assert [(c.name, c.arguments) for c in calls or []] == [(c.name, c.arguments_json) for c in result.calls]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_whole_reply_equals_parse(case):
    tools, opts, result = reading(case)
    parser_cls = server(opts)
    req = request(tools)
    reasoning, content, calls = parser_cls(TOKENIZER, req.tools).parse(case.text, req, enable_auto_tools=True)
    assert reasoning is None
    assert [(c.name, c.arguments) for c in calls or []] == [(c.name, c.arguments_json) for c in result.calls]
    check_ids([c.id for c in calls or []], result, tdv.ID_PREFIX)
    text = result.reasoning + result.text  # no reasoning parser: it is content
    if result.calls:
        expected_content = text if text.strip() else None
    else:
        expected_content = text or None
    assert (content is None) == (expected_content is None)
    assert len(content or "") == len(expected_content or "")


def test_the_legacy_path_ends_the_reply_at_the_end_token():
    """A call only the end of the reply confirms (a bare JSON object): a serving layer
    that never says the reply ended still gets it, from the last delta's end token."""
    text = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    opts = {"families": ["bare_json"]}
    for legacy in (False, True):
        got = stream(text, 1, tools, opts, legacy=legacy)
        assert assembled(got["calls"]) == [("get_weather", {"city": "Paris"})]
    # what the legacy path cannot do (docs/servers.md): without the end token in the last
    # delta the reply is never known to have ended; the engine path is told
    assert stream(text, 1, tools, opts, legacy=True, end_token=False)["calls"] == []
    got = stream(text, 1, tools, opts, end_token=False)
    assert assembled(got["calls"]) == [("get_weather", {"city": "Paris"})]


def test_the_parser_is_registered_under_its_name():
    assert ToolParserManager.get_tool_parser(tdv.NAME) is tdv.ToolDialectToolParser
    assert ReasoningParserManager.get_reasoning_parser(tdv.NAME) is tdv.ToolDialectReasoningParser
    assert tdv.ToolDialectToolParser.engine_based_streaming is True


def test_special_token_markers_keep_special_tokens_in_the_text():
    kimi = td.families.get("kimi_k2").grammar
    markers = tuple(t.pattern.literal for t in kimi.terminals.values() if t.pattern and t.pattern.literal)
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    cls = tdv.ToolDialectToolParser.configured(["kimi_k2"])
    with_specials = cls(FakeTokenizer(tuple(m for m in markers if m.startswith("<|"))), None)
    assert with_specials.adjust_request(request(tools)).skip_special_tokens is False
    plain = cls(FakeTokenizer(()), None)
    assert plain.adjust_request(request(tools)).skip_special_tokens is not False
    none_choice = request(tools)
    none_choice.tool_choice = "none"
    assert with_specials.adjust_request(none_choice).skip_special_tokens is not False


def test_families_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("TOOLDIALECT_FAMILIES", "hermes, kimi_k2")
    assert tdv.ToolDialectToolParser(TOKENIZER, None).setup.families == ("hermes", "kimi_k2")
    monkeypatch.setenv("TOOLDIALECT_FAMILIES", "no_such_family")
    with pytest.raises(td.UnknownFamilyError):
        tdv.ToolDialectToolParser(TOKENIZER, None)
    monkeypatch.delenv("TOOLDIALECT_FAMILIES")
    monkeypatch.setenv("TOOLDIALECT_MODEL", "moonshotai/Kimi-K2-Instruct")
    assert "kimi_k2" in tdv.ToolDialectToolParser(TOKENIZER, None).setup.families


# -- a request's tools, checked before generation --------------------------------------------

BAD_TOOLS = {
    "bad-schema": [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "strng"}}},
            },
        }
    ],
    "two-of-a-name": [
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
    ],
}


@pytest.mark.parametrize("tools", list(BAD_TOOLS.values()), ids=list(BAD_TOOLS))
def test_tools_the_toolset_refuses_are_a_400_while_vllm_renders_the_request(tools):
    from vllm.entrypoints.serve.exception_handling.error_response import create_error_response
    from vllm.exceptions import VLLMValidationError

    parser_cls = server({"families": ["hermes"]})
    req = request(tools)
    with pytest.raises(VLLMValidationError) as err:
        parser_cls(TOKENIZER, req.tools).adjust_request(req)
    answer = create_error_response(err.value)
    assert answer.error.code == 400 and answer.error.param == "tools"
    assert "get_weather" in answer.error.message
    # tool_choice "required": vLLM reads the calls itself, and the parser lets it
    req = request(tools)
    req.tool_choice = "required"
    parser_cls(TOKENIZER, req.tools).adjust_request(req)


# -- structured output waits for the end of the reasoning ------------------------------------


class _Grammar:
    """What vLLM's structured output feeds the grammar of a response_format."""

    def __init__(self) -> None:
        self.fed: list[int] = []

    def accept_tokens(self, request_id: str, tokens: list[int]) -> bool:
        self.fed += tokens
        return True

    def is_terminated(self) -> bool:
        return False


class _EngineRequest:
    """The fields of vLLM's engine-side Request its structured output reads."""

    def __init__(self, prompt: list[int], structured: Any) -> None:
        self.request_id = "req-0"
        self.prompt_token_ids = list(prompt)
        self._all_token_ids = list(prompt)
        self.use_structured_output = True
        self.structured_output_request = structured

    @property
    def all_token_ids(self) -> list[int]:
        return self._all_token_ids


def _structured_output(opts: dict[str, Any]) -> tuple[Any, Any]:
    """vLLM's StructuredOutputManager (its request-scoped reasoner, its constraint bounds and
    its accept_tokens, as they are), with tooldialect's reasoning parser configured."""
    from vllm.v1.structured_output import StructuredOutputManager
    from vllm.v1.structured_output.request import StructuredOutputRequest

    manager = object.__new__(StructuredOutputManager)
    manager.reasoner_cls = tdv.ToolDialectReasoningParser.configured(opts.get("families"), opts.get("policy"))
    manager.tokenizer = TOKENIZER
    manager.enable_in_reasoning = False
    return manager, StructuredOutputRequest


def test_structured_output_starts_after_the_reasoning_ends():
    manager, structured = _structured_output({"families": ["hermes"]})
    prompt = TOKENIZER.encode("<|im_start|>assistant\n<think>\n")
    reply = ["Let me", " think.", "</think>", "\n\n", '{"a": 1}']
    req = _EngineRequest(prompt, structured(params=None))
    req.structured_output_request.grammar = grammar = _Grammar()
    generated: list[int] = []
    for piece in reply:
        new = TOKENIZER.encode(piece)
        req._all_token_ids += new
        generated += new
        assert manager.accept_tokens(req, new)
    after = TOKENIZER.encode("Let me think.</think>")
    assert grammar.fed == generated[len(after) :]  # every token after the closer, none before
    # a template that switched thinking off: constrained from the first token
    req = _EngineRequest(TOKENIZER.encode("assistant\n<think>\n\n</think>\n\n"), structured(params=None))
    req.structured_output_request.grammar = grammar = _Grammar()
    req._all_token_ids += TOKENIZER.encode("{}")
    assert manager.accept_tokens(req, TOKENIZER.encode("{}")) and grammar.fed == TOKENIZER.encode("{}")


def test_speculative_tokens_are_constrained_from_the_one_after_the_closer():
    manager, structured = _structured_output({"families": ["hermes"]})
    req = _EngineRequest(TOKENIZER.encode("<think>\n"), structured(params=None))
    req.structured_output_request.grammar = _Grammar()
    spec = TOKENIZER.encode("ok</think>{")
    bounds = manager._get_constraint_bounds(req, spec)
    assert bounds.grammar_start == len(TOKENIZER.encode("ok</think>"))
    # proposed tokens that are not accepted leave the answer as it was
    assert manager._get_constraint_bounds(req, TOKENIZER.encode("no")).grammar_start == 3


@pytest.mark.parametrize("case", [c for c in CASES if "<think>" in c.text][:12], ids=case_id)
def test_a_prompt_that_opens_reasoning_streams_as_any_other(case):
    """The serving layer asks the same parser whether the prompt ended the reasoning; when it
    did not, vLLM starts the reply in its reasoning phase, and every character still reaches
    the tool parser."""
    tools, opts, result = reading(case)
    got = stream(case.text, 4, tools, opts, reasoning=True, prompt=TOKENIZER.encode("<think>\n"))
    assert got["reasoning"] == result.reasoning
    assert got["content"] == result.text
    assert assembled(got["calls"]) == expected_calls(result)


def test_gpt_oss_takes_only_vllms_own_parsers_as_docs_servers_md_says():
    """vLLM's Harmony path (gpt-oss) refuses tooldialect's parsers when the server starts, with
    the error docs/servers.md quotes ("gpt-oss under vLLM")."""
    from pathlib import Path

    servers = (Path(__file__).resolve().parents[2] / "docs" / "servers.md").read_text(encoding="utf-8")
    servers = " ".join(servers.split())
    ToolParserManager.register_module("tooldialect", force=True, module=tdv.ToolDialectToolParser)
    ReasoningParserManager.register_module("tooldialect", force=True, module=tdv.ToolDialectReasoningParser)
    for names, refusal in (
        ({"tool_parser_name": "tooldialect"}, "Harmony requires GptOssToolParser"),
        ({"reasoning_parser_name": "tooldialect"}, "Harmony requires GptOssReasoningParser"),
    ):
        with pytest.raises(TypeError, match=refusal) as err:  # the start-up check vLLM runs
            ParserManager.get_parser(
                **names,
                enable_auto_tools=True,
                model_name="openai/gpt-oss-20b",
                is_harmony=True,
                tokenizer=TOKENIZER,
            )
        assert refusal in servers
        if "tool_parser_name" in names:
            assert str(err.value) in servers
