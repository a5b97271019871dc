"""tooldialect's SGLang detector, driven through SGLang's own ``FunctionCallParser`` the
way its OpenAI server drives it: ``parse_stream_chunk`` per delta, ``parse_stream_end``
at the end, then its check for arguments left unstreamed; ``has_tool_call`` and
``parse_non_stream`` for whole replies.  Over every corpus case, at 1- and 4-character
deltas and at token granularity (o200k, special tokens whole), the calls a client puts
back together equal ``td.parse``'s."""

from __future__ import annotations

import json
from typing import Any

import pytest
from server_loops import CASES, MISSING, SIZES, assembled, case_id, expected_calls, pieces, reading

import tooldialect as td

if MISSING.get("sglang") is not None:
    pytest.skip(str(MISSING["sglang"]), allow_module_level=True)

# the servers' modules load once server_loops has installed the stubs
from sglang.srt.entrypoints.openai.protocol import Tool
from sglang.srt.function_call.function_call_parser import FunctionCallParser

from tooldialect.integrations import sglang as tds


def parser(tools: list[dict[str, Any]], opts: dict[str, Any]) -> Any:
    """The FunctionCallParser SGLang builds per choice for ``--tool-call-parser``, with the
    detector configured for the case's families and policy."""
    detector = tds.ToolDialectDetector.configured(opts.get("families"), opts.get("policy"))
    FunctionCallParser.ToolCallParserEnum["tooldialect-test"] = detector
    return FunctionCallParser(tools=[Tool(**t) for t in tools], tool_call_parser="tooldialect-test")


def unstreamed(detector: Any) -> str:
    """What SGLang's server sends after the end for the last call's arguments (its
    ``_check_for_unstreamed_tool_args``): nothing, when every fragment went out."""
    if not detector.prev_tool_call_arr or not detector.streamed_args_for_tool:
        return ""
    expected = detector.prev_tool_call_arr[-1].get("arguments", {})
    expected = expected if isinstance(expected, str) else json.dumps(expected, ensure_ascii=False)
    actual = detector.streamed_args_for_tool[len(detector.prev_tool_call_arr) - 1]
    return expected[len(actual) :] if expected.startswith(actual) else ""


def stream(text: str, size: int | str, tools: list[dict[str, Any]], opts: dict[str, Any]) -> dict[str, Any]:
    fcp = parser(tools, opts)
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    steps = [fcp.parse_stream_chunk(piece) for piece in pieces(text, size)]
    steps.append(fcp.parse_stream_end())
    for normal, items in steps:
        content.append(normal or "")
        for item in items:
            if item.name:  # SGLang mints the id here and sends the name
                assert item.tool_index not in calls, "a call's name went out twice"
                calls[item.tool_index] = {"name": item.name, "arguments": ""}
            calls[item.tool_index]["arguments"] += item.parameters
    assert unstreamed(fcp.detector) == ""
    assert sorted(calls) == list(range(len(calls)))
    # an aborted call stops where it was cut: its arguments never parse (docs/openai.md)
    kept = []
    for _, call in sorted(calls.items()):
        try:
            json.loads(call["arguments"])
        except ValueError:
            continue
        kept.append(call)
    return {"content": "".join(content), "calls": kept}


def _with_tools(case: Any) -> tuple[list[dict[str, Any]], dict[str, Any], td.ParseResult]:
    tools, opts, result = reading(case)
    if tools is None:
        pytest.skip("a request without tools: SGLang's server does not run the detector")
    return tools, opts, result


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_streamed_calls_equal_parse(case, size):
    tools, opts, result = _with_tools(case)
    got = stream(case.text, size, tools, opts)
    assert assembled(got["calls"]) == expected_calls(result)
    # reasoning the detector reads is content (SGLang's reasoning parser runs before it)
    assert len(got["content"]) == len(result.text) + len(result.reasoning)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_whole_reply_equals_parse(case):
    tools, opts, result = _with_tools(case)
    fcp = parser(tools, opts)
    if not fcp.has_tool_call(case.text):
        assert not result.calls and not result.reasoning and not set("{[(</") & set(case.text)
        return
    normal, calls = fcp.parse_non_stream(case.text)
    assert [(c.name, json.loads(c.parameters)) for c in calls] == expected_calls(result)
    positions = {t["function"]["name"]: i for i, t in enumerate(tools)}
    assert [c.tool_index for c in calls] == [positions.get(c.name, -1) for c in calls]
    assert len(normal) == len(result.text) + len(result.reasoning)


def test_the_detector_is_in_sglangs_table():
    assert FunctionCallParser.ToolCallParserEnum[tds.NAME] is tds.ToolDialectDetector
    tds.register()
    assert FunctionCallParser.ToolCallParserEnum[tds.NAME] is tds.ToolDialectDetector


def test_finish_is_called_with_the_tools_and_ends_the_reply():
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    fcp = parser(tools, {"families": ["bare_json"]})
    normal, calls = fcp.parse_stream_chunk('{"name": "get_weather", "arguments": {"city": "Paris"}}')
    assert not calls and normal == ""  # a bare object is a call only once the reply ends there
    end = fcp.detector.finish([Tool(**t) for t in tools])
    assert [(c.name, c.parameters) for c in end.calls] == [("get_weather", '{"city": "Paris"}')]
    assert fcp.detector.finish([Tool(**t) for t in tools]).calls == []


def test_a_single_family_exports_its_structural_tag():
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    fcp = parser(tools, {"families": ["hermes"]})
    detector = fcp.detector
    assert detector.supports_structural_tag()
    expected = td.export.structural_tag("hermes", td.Toolset.coerce(tools), mode="required")
    assert detector.structural_tag_dict([Tool(**t) for t in tools], "required") == expected
    info = detector.structure_info()("get_weather")
    assert info.begin.endswith('"get_weather", "arguments": ') and info.trigger in info.begin
    several = parser(tools, {}).detector
    assert not several.supports_structural_tag() and several.structural_tag_dict(tools) is None


@pytest.mark.parametrize(
    "tools",
    [
        [
            {
                "type": "function",
                "function": {"name": "get_weather", "parameters": {"properties": {"city": {"type": "strng"}}}},
            }
        ],
        [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}] * 2,
    ],
    ids=["bad-schema", "two-of-a-name"],
)
def test_tools_the_toolset_refuses_are_read_with_a_warning_before_generation(tools, caplog):
    """SGLang gives a detector no way to refuse a request: the tools are read leniently, and
    the warning comes when SGLang asks for the request's constraint, before it generates."""
    import logging

    fcp = parser(tools, {"families": ["hermes"]})
    with caplog.at_level(logging.WARNING, logger="tooldialect.integrations"):
        assert fcp.get_structure_constraint("auto") is None
    assert any("get_weather" in r.getMessage() for r in caplog.records)
    got = stream('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>', 4, tools, {})
    assert assembled(got["calls"]) == [("get_weather", {"city": "Paris"})]
