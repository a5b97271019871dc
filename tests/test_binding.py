"""Binding: argument shapes, envelopes, validation, and the seed crate's gaps that concern it."""

from __future__ import annotations

import json

import pytest

import tooldialect as td

WEATHER = {
    "name": "get_weather",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city"],
    },
}
WRAPPED = {"name": "run", "parameters": {"type": "object", "properties": {"input": {"type": "object"}}}}


def call(args) -> str:
    return "<tool_call>" + json.dumps({"name": "get_weather", "arguments": args}) + "</tool_call>"


@pytest.mark.parametrize("args", [None, [1, 2], 5, True, "hello", '"hi"', "[1, 2]"])
def test_arguments_that_are_not_an_object_are_reported_never_a_silent_empty_object(args):
    """Seed crate gap 4: arguments are always an object; anything else is a diagnostic."""
    r = td.parse(call(args))
    assert r.calls == []
    (diag,) = r.diagnostics
    assert diag.kind == "arguments_invalid" and "not a JSON object" in diag.detail["reason"]
    assert diag.detail["name"] == "get_weather"


def test_a_json_string_holding_an_object_is_decoded_once():
    r = td.parse(call(json.dumps({"city": "Paris"})))
    assert r.calls[0].arguments == {"city": "Paris"} and r.diagnostics == []
    twice = td.parse(call(json.dumps(json.dumps({"city": "Paris"}))))
    assert twice.calls == []
    assert twice.diagnostics[0].kind == "arguments_invalid"
    assert "encoded twice" in twice.diagnostics[0].detail["reason"]


def test_an_empty_arguments_string_is_an_empty_object():
    assert td.parse(call("")).calls[0].arguments == {}


def test_envelope_is_unwrapped_when_the_schema_does_not_expect_it():
    r = td.parse(call({"arguments": {"city": "Paris"}}), tools=[WEATHER])
    assert r.calls[0].arguments == {"city": "Paris"}
    assert json.loads(r.calls[0].arguments_json) == {"city": "Paris"}
    assert [d.kind for d in r.diagnostics] == ["arguments_repaired"]
    assert r.diagnostics[0].detail["repairs"] == ["unwrapped the 'arguments' envelope"]


def test_envelope_is_kept_when_the_schema_has_that_property():
    text = '<tool_call>{"name": "run", "arguments": {"input": {"x": 1}}}</tool_call>'
    r = td.parse(text, tools=[WRAPPED])
    assert r.calls[0].arguments == {"input": {"x": 1}} and r.diagnostics == []


def test_envelope_is_kept_without_a_toolset():
    r = td.parse(call({"parameters": {"city": "Paris"}}))
    assert r.calls[0].arguments == {"parameters": {"city": "Paris"}} and r.diagnostics == []


def test_validation_reports_each_failure_with_its_path():
    r = td.parse(call({"days": 0, "extra": 1}), tools=[WEATHER])
    assert [c.name for c in r.calls] == ["get_weather"]
    details = sorted((d.detail["path"], d.detail["reason"]) for d in r.diagnostics)
    assert details[0][0] == "$" and "'city' is a required property" in details[0][1]
    assert details[1][0] == "$.days" and "minimum" in details[1][1]


@pytest.mark.parametrize(
    "dialect",
    ["https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-07/schema#"],
)
def test_validation_follows_the_schema_draft(dialect):
    tool = {
        "name": "f",
        "parameters": {"$schema": dialect, "type": "object", "properties": {"n": {"type": "integer"}}},
    }
    r = td.parse('<tool_call>{"name": "f", "arguments": {"n": "x"}}</tool_call>', tools=[tool])
    assert [d.detail["path"] for d in r.diagnostics] == ["$.n"]


NULLABLE = {
    "name": "f",
    "parameters": {
        "type": "object",
        "properties": {
            "note": {"type": "string", "nullable": True},
            "mode": {"type": "string", "enum": ["a", "b"], "nullable": True},
            "size": {"minimum": 3, "nullable": True},
            "tags": {"type": "array", "items": {"type": "integer", "nullable": True}},
        },
    },
}


@pytest.mark.parametrize(
    ("args", "paths"),
    [
        ({"note": None, "mode": None, "size": None, "tags": [1, None]}, []),
        ({"note": 3}, ["$.note"]),
        ({"mode": "c"}, ["$.mode"]),
        ({"size": 1}, ["$.size"]),
        ({"tags": ["x"]}, ["$.tags[0]"]),
    ],
)
def test_openapi_nullable_admits_null_and_nothing_else(args, paths):
    r = td.parse(f'<tool_call>{{"name": "f", "arguments": {json.dumps(args)}}}</tool_call>', tools=[NULLABLE])
    assert [c.arguments for c in r.calls] == [args]
    assert sorted(d.detail["path"] for d in r.diagnostics if d.kind == "arguments_invalid") == paths


def test_validators_are_compiled_once_per_toolset():
    tools = td.Toolset.coerce([WEATHER])
    first = tools.validator("get_weather")
    td.parse(call({"city": "x"}), tools=tools)
    assert tools.validator("get_weather") is first


def test_malformed_schema_names_the_tool():
    with pytest.raises(td.ToolsetError, match="'broken'"):
        td.Toolset.coerce([{"name": "broken", "parameters": {"type": "object", "required": "city"}}])


def test_prose_shaped_like_glm_lines_is_not_a_call():
    """Seed crate gap 1: a line such as yes/no>maybe in prose is never read as a call."""
    for text in ["yes/no>maybe", "input/output>x\nshell/command>ls -la", 'custom/{"answer": 42}']:
        r = td.parse(text)
        assert r.calls == [] and r.text == text and r.diagnostics == []


def test_diagnostics_carry_only_bounded_excerpts():
    big = "x" * 10_000
    r = td.parse('<tool_call>{"name": "f", "arguments": "' + big + '"}</tool_call><tool_call>' + big + "</tool_call>")
    assert r.diagnostics
    for d in r.diagnostics:
        assert len(json.dumps(d.detail)) < 400
        assert len(d.message) < 400


def test_every_diagnostic_kind_is_produced_by_some_input():
    """A kind that no input produces any more is a regression (or a stale docs entry)."""
    tools = [WEATHER]
    inputs = [
        ("<tool_call>not json</tool_call>", {}),
        ("Wrap calls in <tool_call> tags, like this.", {}),
        ('<tool_call>{"name": "f", "arguments": {"a": "b', {}),
        ('<tool_call>{"name": "nope", "arguments": {}}</tool_call>', {"tools": tools}),
        ('<tool_call>{"name": "GetWeather", "arguments": {"city": "x"}}</tool_call>', {"tools": tools}),
        ("<tool_call>{'name': 'f', 'arguments': {'a': 1}}</tool_call>", {}),
        ('<tool_call>{"name": "f", "arguments": [1]}</tool_call>', {}),
        ('<think><tool_call>{"name": "f", "arguments": {}}</tool_call></think>', {}),
        ('<tool_call>{"name": "f", "arguments": {}}</tool_call>' * 3, {"policy": td.Policy(max_calls=2)}),
        ('<function_calls><invoke name="f"><parameter name="a">' + "<function_calls>x" * 17, {}),
        ('<tool_call>{"name": "f", "arguments": {}}</tool_call>', {"policy": td.Policy(tool_choice="none")}),
    ]
    seen = set()
    for text, opts in inputs:
        seen.update(d.kind for d in td.parse(text, **opts).diagnostics)
    assert seen == set(td.DIAGNOSTIC_KINDS)


def test_a_call_in_reasoning_is_reported_with_typed_arguments():
    text = (
        "<think>maybe <tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call></think>ok"
    )
    for tools in (None, [WEATHER]):
        r = td.parse(text, tools=tools)
        assert r.calls == [] and r.text == "ok"
        (diag,) = r.diagnostics
        assert diag.kind == "call_in_reasoning" and diag.detail["name"] == "get_weather"
        assert json.loads(diag.detail["excerpt"]) == {"city": "Paris", "days": 3}
