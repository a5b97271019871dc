"""The public API of DESIGN §4: types, toolsets, policy, errors, the stream protocol."""

from __future__ import annotations

import json

import pydantic
import pytest

import tooldialect as td

HERMES = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def test_public_names():
    for name in [
        "parse",
        "ToolStream",
        "Tool",
        "Toolset",
        "ToolCall",
        "Diagnostic",
        "ParseResult",
        "Policy",
        "TextDelta",
        "ReasoningDelta",
        "CallStart",
        "ArgumentsDelta",
        "CallEnd",
        "CallAbort",
        "DiagnosticEvent",
        "ToolDialectError",
        "UnknownFamilyError",
        "ToolsetError",
        "PolicyError",
        "GrammarError",
        "StreamClosedError",
        "families",
    ]:
        assert hasattr(td, name), name
    assert set(td.__all__) >= {"parse", "ToolStream", "Policy"}


def test_parse_result_shape():
    r = td.parse("Sure. " + HERMES + " Done.")
    assert isinstance(r, td.ParseResult)
    assert r.text == "Sure.  Done."
    assert r.reasoning == ""
    (call,) = r.calls
    assert isinstance(call, td.ToolCall)
    assert call.name == "get_weather" and call.arguments == {"city": "Paris"}
    assert call.arguments_json == '{"city": "Paris"}'
    assert call.id is None and call.family == "hermes"
    start, end = call.span
    assert ("Sure. " + HERMES)[start:end].startswith("{") and ("Sure. " + HERMES)[end - 1] == "}"
    assert r.diagnostics == []


def test_models_are_frozen():
    call = td.parse(HERMES).calls[0]
    with pytest.raises(pydantic.ValidationError):
        call.name = "x"  # type: ignore[misc]


def test_arguments_json_keeps_the_models_bytes_and_order():
    text = '<tool_call>{"name": "f", "arguments": {"z": 1,  "a": [1, 2.50], "m": "\\u00e9"}}</tool_call>'
    call = td.parse(text).calls[0]
    assert call.arguments_json == '{"z": 1,  "a": [1, 2.50], "m": "\\u00e9"}'
    assert list(call.arguments) == ["z", "a", "m"]
    assert json.loads(call.arguments_json) == call.arguments


def test_arguments_json_for_decoded_string_arguments():
    text = '<tool_call>{"name": "f", "arguments": "{\\"b\\": 2, \\"a\\": 1}"}</tool_call>'
    call = td.parse(text).calls[0]
    assert call.arguments == {"b": 2, "a": 1}
    assert json.loads(call.arguments_json) == call.arguments


# -- toolsets ---------------------------------------------------------------------------------


def test_toolset_shapes():
    openai = td.Toolset.from_openai([WEATHER])
    anthropic = td.Toolset.from_anthropic(
        [{"name": "get_weather", "description": "d", "input_schema": {"type": "object"}}]
    )
    mcp = td.Toolset.from_mcp([{"name": "get_weather", "inputSchema": {"type": "object"}}])
    bare = td.Toolset([td.Tool(name="get_weather", description="d", parameters={"type": "object"})])
    for ts in (openai, anthropic, mcp, bare):
        assert ts.names == ("get_weather",) and "get_weather" in ts and len(ts) == 1
    assert openai.get("get_weather").parameters["required"] == ["city"]
    mixed = td.Toolset.coerce([WEATHER, {"name": "b", "inputSchema": {}}, {"name": "c", "parameters": {}}])
    assert mixed.names == ("get_weather", "b", "c")


@pytest.mark.parametrize(
    "tools,match",
    [
        ([WEATHER, WEATHER], "duplicate tool name 'get_weather'"),
        ([{"name": "x", "parameters": {"type": "objekt"}}], "invalid JSON Schema"),
        ([{"description": "no name"}], "not a tool object"),
        ([{"name": ""}], "non-empty"),
        ([42], "expected a JSON object"),
        ({"name": "x"}, "list of tool objects"),
        ("tools", "list of tool objects"),
        ([{"name": "x", "parameters": [1]}], "not a JSON Schema object"),
    ],
)
def test_bad_toolsets(tools, match):
    with pytest.raises(td.ToolsetError, match=match):
        td.Toolset.coerce(tools)
    with pytest.raises(td.ToolDialectError):
        td.parse("x", tools=tools)


def test_tools_argument_accepts_plain_lists():
    r = td.parse('<tool_call>{"name": "nope", "arguments": {}}</tool_call>', tools=[WEATHER])
    assert [d.kind for d in r.diagnostics] == ["unknown_tool"]
    assert r.diagnostics[0].detail["name"] == "nope"


# -- policy ------------------------------------------------------------------------------------


def test_policy_defaults():
    p = td.Policy()
    assert p.unknown_tool == "keep" and p.truncated == "drop" and p.calls_in_reasoning == "report"
    assert p.start_in_reasoning is False and p.bare_json is True
    assert p.max_depth == 64 and p.max_block_chars == 1 << 20 and p.max_calls == 1024


@pytest.mark.parametrize(
    "fields",
    [{"unknown_tool": "ignore"}, {"truncated": "complete"}, {"max_depth": 0}, {"max_calls": -1}, {"colour": "red"}],
)
def test_bad_policy_raises_policy_error(fields):
    with pytest.raises(td.PolicyError) as err:
        td.Policy(**fields)
    assert not isinstance(err.value, pydantic.ValidationError)
    assert "invalid Policy" in str(err.value)


def test_policy_must_be_a_policy():
    with pytest.raises(td.PolicyError):
        td.ToolStream(policy={"unknown_tool": "drop"})  # type: ignore[arg-type]


def test_unknown_tool_policies():
    text = '<tool_call>{"name": "nope", "arguments": {"a": 1}}</tool_call>'
    keep = td.parse(text, tools=[WEATHER])
    drop = td.parse(text, tools=[WEATHER], policy=td.Policy(unknown_tool="drop"))
    error = td.parse(text, tools=[WEATHER], policy=td.Policy(unknown_tool="error"))
    assert [c.name for c in keep.calls] == ["nope"]
    assert drop.calls == [] and error.calls == []
    assert [d.kind for d in drop.diagnostics] == ["unknown_tool"] == [d.kind for d in error.diagnostics]
    assert error.diagnostics[0].detail["arguments"] == {"a": 1}
    assert "arguments" not in drop.diagnostics[0].detail


def test_names_pass_through_without_a_toolset():
    for name in [" Any Name ", 'terminal" parameter="x', "functions.read_file:0"]:
        text = "<tool_call>" + json.dumps({"name": name, "arguments": {}}) + "</tool_call>"
        r = td.parse(text)
        assert r.calls[0].name == name and r.diagnostics == []


def test_schema_validation_reports_path_and_keeps_call():
    r = td.parse('<tool_call>{"name": "get_weather", "arguments": {"city": 5}}</tool_call>', tools=[WEATHER])
    assert [c.name for c in r.calls] == ["get_weather"]
    (diag,) = r.diagnostics
    assert diag.kind == "arguments_invalid" and diag.detail["path"] == "$.city"
    assert diag.family == "hermes" and diag.span == r.calls[0].span


def test_calls_in_reasoning_policy():
    text = "<think>" + HERMES + "</think>ok"
    reported = td.parse(text)
    assert reported.calls == [] and [d.kind for d in reported.diagnostics] == ["call_in_reasoning"]
    assert reported.reasoning == HERMES and reported.text == "ok"
    accepted = td.parse(text, policy=td.Policy(calls_in_reasoning="accept"))
    assert [c.name for c in accepted.calls] == ["get_weather"] and accepted.reasoning == ""


def test_start_in_reasoning():
    text = "thinking hard</think>answer"
    assert td.parse(text).text == "thinking hardanswer"
    forced = td.parse(text, policy=td.Policy(start_in_reasoning=True))
    assert forced.reasoning == "thinking hard" and forced.text == "answer"


def test_bare_json_policy():
    text = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
    assert [c.family for c in td.parse(text).calls] == ["bare_json"]
    off = td.parse(text, policy=td.Policy(bare_json=False))
    assert off.calls == [] and off.text == text
    # a reply form that opens with a marker, not a payload, is not bare JSON: it stays on
    header = ' to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}'
    (call,) = td.parse(header, policy=td.Policy(bare_json=False)).calls
    assert (call.name, call.arguments) == ("get_weather", {"city": "Paris"})


def test_truncated_policy():
    text = 'Now <tool_call>{"name": "write_file", "arguments": {"path": "a.txt", "content": "hel'
    drop = td.parse(text)
    assert drop.calls == [] and drop.text == "Now "
    (diag,) = drop.diagnostics
    assert diag.kind == "truncated" and diag.detail["name"] == "write_file"
    keep = td.parse(text, policy=td.Policy(truncated="keep"))
    (call,) = keep.calls
    assert call.name == "write_file" and call.arguments == {"path": "a.txt"}
    assert keep.diagnostics[0].kind == "truncated" and keep.diagnostics[0].span == call.span


# -- families selection --------------------------------------------------------------------------


def test_families_selection():
    granite = '<|tool_call|>[{"name": "f", "arguments": {}}]'
    assert [c.family for c in td.parse(granite).calls] == ["json_array"]
    assert [c.family for c in td.parse(granite, families=["hermes"]).calls] == ["hermes"]
    assert td.parse(granite, families=["llama_json"]).calls == []
    with pytest.raises(td.PolicyError):
        td.parse(granite, families=[])


# -- stream protocol -------------------------------------------------------------------------------


def test_stream_events_and_protocol():
    s = td.ToolStream()
    assert s.feed("") == []
    events = s.feed('Hi <tool_call>{"name": "f", ')
    assert [type(e) for e in events] == [td.TextDelta, td.CallStart]
    assert events[0].text == "Hi " and events[1].name == "f" and events[1].index == 0
    events = s.feed('"arguments": {"a": 1}}</tool_call>')
    kinds = [type(e) for e in events]
    assert kinds[:2] == [td.ArgumentsDelta, td.CallEnd]
    assert events[0].fragment == '{"a": 1}' and events[1].call.arguments == {"a": 1}
    assert s.close() == []
    with pytest.raises(td.StreamClosedError):
        s.feed("x")
    with pytest.raises(td.StreamClosedError):
        s.close()


def test_stream_rejects_non_text():
    with pytest.raises(td.PolicyError):
        td.ToolStream().feed(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(td.PolicyError):
        td.parse(None)  # type: ignore[arg-type]


def test_cut_off_started_call_ends_with_abort_then_diagnostic():
    s = td.ToolStream()
    events = s.feed('<tool_call>{"name": "f", "arguments": {"a": "x')
    events += s.close()
    kinds = [type(e).__name__ for e in events]
    # the arguments sent so far, then the abort: the call never ends
    assert kinds == ["CallStart", "ArgumentsDelta", "CallAbort", "DiagnosticEvent"]
    assert events[1].fragment == '{"a": "x'
    assert events[2].index == events[0].index and events[2].reason == "truncated"
    assert events[3].diagnostic.kind == "truncated"


def test_event_json_shapes():
    s = td.ToolStream()
    evs = s.feed("a" + HERMES) + s.close()
    dumped = [e.to_json() for e in evs]
    assert [d["type"] for d in dumped] == ["text", "call_start", "arguments", "call_end"]
    assert dumped[3]["call"]["name"] == "get_weather"
    assert all(d == {"type": e.type, **e.model_dump(mode="json")} for d, e in zip(dumped, evs))


def test_event_json_of_a_call_as_deep_as_the_policy_allows():
    # pydantic's own JSON mode stops at about 255 levels; Policy.max_depth goes to 512
    deep = "[" * 500 + "]" * 500
    s = td.ToolStream(policy=td.Policy(max_depth=512))
    evs = s.feed(f'<tool_call>{{"name": "f", "arguments": {{"a": {deep}}}}}</tool_call>') + s.close()
    end = [e.to_json() for e in evs if isinstance(e, td.CallEnd)]
    assert [json.dumps(d["call"]["arguments"]) for d in end] == [f'{{"a": {deep}}}']
    assert end[0]["call"]["span"] == list(evs[-1].call.span)


def test_indexes_count_calls_in_this_response():
    s = td.ToolStream()
    evs = s.feed(HERMES + HERMES.replace("Paris", "Rome")) + s.close()
    ends = [e for e in evs if isinstance(e, td.CallEnd)]
    assert [e.index for e in ends] == [0, 1]


def test_model_ids_are_kept_and_never_minted():
    r = td.parse('<|START_ACTION|>[{"tool_call_id": "7", "tool_name": "f", "parameters": {}}]<|END_ACTION|>')
    assert r.calls[0].id == "7"
    assert td.parse(HERMES).calls[0].id is None


def test_diagnostics_are_documented():
    r = td.parse("<tool_call>nope</tool_call> <tool_call>")
    for d in r.diagnostics:
        assert d.kind in td.DIAGNOSTIC_KINDS and d.message
        json.dumps(d.detail)
        assert all(len(str(v)) <= 200 for v in d.detail.values())


def test_keyed_json_calls_rule_reads_objects_keyed_by_the_tool_name():
    # the conventional rule keyed_json_calls (docs/authoring.md): {"NAME": {…arguments…}}
    from tooldialect.transform import Reader

    reader = Reader("fam", frozenset(), 64, keyed=True)
    text = '[{"f": {"a": 1}}, {"name": "g", "arguments": {}}, {"h": "{\\"b\\": 2}"}, {"x": {}, "y": {}}]'
    calls, issues = reader.read_payload(text, 10, bare=False, keyed=True)
    assert [(c.name, c.arguments, c.arguments_json) for c in calls] == [
        ("f", {"a": 1}, '{"a": 1}'),
        ("g", {}, "{}"),
        ("h", {"b": 2}, '{"b": 2}'),
    ]
    assert calls[0].span == (11, 26)
    assert [i.kind for i in issues] == ["malformed_block"]  # the two-member element
    # a payload cut off inside a keyed object: its name, and its complete arguments
    name, raw = reader.cut_call('[{"f": {"a": 1, "b": "x', 0, bare=False)
    assert name == "f" and raw is not None and raw.arguments == {"a": 1}
    # the same payload without the rule is not a call
    plain = Reader("fam", frozenset(), 64)
    assert plain.read_payload('[{"f": {"a": 1}}]', 0, bare=False) == ([], [])
    assert plain.cut_call('[{"f": {"a": 1, "b": "x', 0, bare=False) == (None, None)


def test_a_call_object_without_arguments_is_a_zero_argument_call():
    # decisions.md, "A call object with a name and no arguments"
    text = '<tool_calls>\n{"name": "a", "arguments": {"x": 1}}\n{"name": "get_time"}\n{"arguments": {"x": 2}}\n</tool_calls>'
    r = td.parse(text)
    assert [(c.name, c.arguments) for c in r.calls] == [("a", {"x": 1}), ("get_time", {})]
    assert [d.kind for d in r.diagnostics] == ["malformed_block"]
    tools = [
        {
            "name": "get_time",
            "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]},
        }
    ]
    r = td.parse('<tool_call>{"name": "get_time"}</tool_call>', tools=tools)
    assert [c.name for c in r.calls] == ["get_time"] and [d.kind for d in r.diagnostics] == ["arguments_invalid"]
