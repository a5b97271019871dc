"""The per-call shortcuts after parsing find exactly what the general path finds.

* The engine's own constructors (``construct.constructor``) build what ``model_construct``
  builds: the same ``__dict__`` in the same order, the same fields set, no extra, no
  private state, so dumps, equality and copies cannot tell them apart.
* The reader's spans inside strict JSON (json's scanner crossing each value) are
  jsonscan's (a walk of the text), on any JSON text, duplicate keys and escapes included.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

import tooldialect as td
from tooldialect import binding, jsonspans
from tooldialect.construct import constructor
from tooldialect.engine import events
from tooldialect.jsonscan import strict_value_at
from tooldialect.jsonspans import element_spans, member_spans
from tooldialect.records import Issue

CALL = td.ToolCall.model_construct(
    name="get_weather",
    arguments={"city": "Paris"},
    arguments_json='{"city": "Paris"}',
    id=None,
    family="hermes",
    span=(0, 9),
)
DIAG = td.Diagnostic.model_construct(
    kind="truncated", family="hermes", detail={"name": "x"}, span=(1, 4), message="cut"
)

CASES: list[tuple[Any, type, dict[str, Any]]] = [
    (events.text_delta, td.TextDelta, {"text": "hello"}),
    (events.reasoning_delta, td.ReasoningDelta, {"text": "hmm"}),
    (events.arguments_delta, td.ArgumentsDelta, {"index": 2, "fragment": '{"a": 1'}),
    (events.call_start, td.CallStart, {"index": 0, "name": "get_weather", "id": None}),
    (events.call_start, td.CallStart, {"index": 3, "name": "get_weather", "id": "functions.get_weather:3"}),
    (events.call_end, td.CallEnd, {"index": 1, "call": CALL}),
    (events.call_abort, td.CallAbort, {"index": 4, "reason": "truncated"}),
    (events.diagnostic_event, td.DiagnosticEvent, {"diagnostic": DIAG}),
    (binding._tool_call, td.ToolCall, CALL.__dict__),
    (binding._diagnostic, td.Diagnostic, DIAG.__dict__),
    (binding._diagnostic, td.Diagnostic, {**DIAG.__dict__, "family": None, "span": None, "detail": {}}),
    (events.parse_result, td.ParseResult, {"text": "Hi.", "reasoning": "", "calls": [CALL], "diagnostics": [DIAG]}),
]


def state(m: Any) -> tuple[Any, ...]:
    return (
        type(m),
        list(m.__dict__.items()),
        m.model_fields_set,
        type(m.__pydantic_fields_set__),
        m.__pydantic_extra__,
        m.__pydantic_private__,
    )


@pytest.mark.parametrize(("build", "cls", "values"), CASES)
def test_built_like_model_construct(build: Any, cls: type, values: dict[str, Any]) -> None:
    built = build(*values.values())
    ref = cls.model_construct(**values)
    assert state(built) == state(ref)
    for name in cls.model_fields:
        assert getattr(built, name) is getattr(ref, name)
    assert built == ref
    assert built.model_dump() == ref.model_dump()
    assert built.model_dump_json() == ref.model_dump_json()
    assert repr(built) == repr(ref)
    if hasattr(ref, "to_json"):
        assert built.to_json() == ref.to_json()
    assert state(built.model_copy()) == state(ref.model_copy())
    # each instance has a fields set of its own
    assert build(*values.values()).__pydantic_fields_set__ is not built.__pydantic_fields_set__
    with pytest.raises(ValidationError):
        built.__setattr__(next(iter(cls.model_fields)), None)  # frozen, as the reference


def test_every_field_in_order() -> None:
    # the constructors name every field of their model, in declaration order: a field added
    # to a model without its constructor changing falls back to model_construct
    for _build, cls, values in CASES:
        assert list(values) == list(cls.model_fields), cls


def test_a_model_with_a_hook_gets_model_construct() -> None:
    class Hooked(td.TextDelta):
        def model_post_init(self, context: Any) -> None:
            object.__setattr__(self, "__pydantic_private__", None)

    build = constructor(Hooked, "text")
    assert build("x") == Hooked.model_construct(text="x")


def test_sink_diagnostic_event_matches() -> None:
    sink = events.Sink()
    sink.diag(Issue("truncated", {"name": "x"}, (1, 4), "cut"), "hermes")
    (ev,) = sink.drain()
    ref = td.DiagnosticEvent.model_construct(diagnostic=DIAG)
    assert state(ev) == state(ref)
    assert state(ev.diagnostic) == state(DIAG)


# -- spans inside strict JSON -------------------------------------------------------------------

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
KEYS = st.sampled_from(["name", "arguments", "function", "tool_calls", 'a"b', "é", "\u2028", ""]) | st.text(max_size=4)
SPACE = st.sampled_from(["", " ", "\n", " \t\r\n "])


def _dump(value: Any, ascii_only: bool) -> str:
    return json.dumps(value, ensure_ascii=ascii_only)


@st.composite
def objects(draw: Any) -> tuple[str, list[str]]:
    """The text of a JSON object written with any white space, keys repeated and escaped."""
    members = draw(st.lists(st.tuples(KEYS, VALUES), max_size=6))
    ascii_only = draw(st.booleans())
    parts = [
        draw(SPACE) + _dump(k, ascii_only) + draw(SPACE) + ":" + draw(SPACE) + _dump(v, ascii_only) + draw(SPACE)
        for k, v in members
    ]
    return "{" + draw(SPACE) + ",".join(parts) + "}", [k for k, _ in members]


@given(objects(), st.text(max_size=3), KEYS)
def test_member_span_is_jsonscans(obj: tuple[str, list[str]], lead: str, other: str) -> None:
    text, keys = obj
    lead = "".join(c for c in lead if c in " \n")  # an object inside a payload
    payload = "[" + lead + text + "]"
    json.loads(payload)
    start = 1 + len(lead)
    spans = member_spans(payload, start)
    for key in [*keys, other]:
        assert jsonspans.member_span(payload, start, key) == spans.get(key)


def test_member_span_of_text_that_is_not_strict_is_the_walks() -> None:
    # a key without its colon: json's scanner cannot cross it, the walk answers
    for text in ('{"a" 1}', '{"b": 2, "a" 1}', '{"a"  [1]}'):
        assert jsonspans.member_span(text, 0, "a") == member_spans(text, 0).get("a"), text


@pytest.mark.parametrize("text", ['{"a"}', '{"a":', '{"a": 1, "b"', '{"a', '{"a\\x": 1}', '{"a" ', '{"a": 1, "b": }'])
def test_member_spans_of_text_that_is_not_an_object_are_those_before_it(text: str) -> None:
    spans = member_spans(text, 0)  # (raised IndexError or ValueError)
    assert spans == ({"a": (6, 7)} if text.startswith('{"a": 1') else {}), text
    assert jsonspans.member_span(text, 0, "a") == spans.get("a")


@given(st.text(alphabet='{}[]":, 1a\\ \n', max_size=24))
def test_member_spans_take_any_text(tail: str) -> None:
    text = "{" + tail
    for start, end in member_spans(text, 0).values():  # (no IndexError, no ValueError)
        assert 0 < start < end <= len(text)


@given(objects(), st.text(alphabet=' ]},"x', max_size=3))
def test_an_object_decoded_member_by_member_is_the_one_decode(obj: tuple[str, list[str]], after: str) -> None:
    """``strict_object_at`` gives what the strict decoder gives (the value, key order and a
    repeated key's last value included, and where the object ends), and the span of each
    member's value that ``member_span`` finds by decoding the members again."""
    text, keys = obj
    payload = "[" + text + after
    got = jsonspans.strict_object_at(payload, 1)
    assert got is not None
    value, end, spans = got
    want, want_end = strict_value_at(payload, 1)
    assert (value, list(value), end) == (want, list(want), want_end)
    assert set(spans) == set(keys)
    for key in keys:
        assert spans[key] == jsonspans.member_span(payload, 1, key)


@pytest.mark.parametrize(
    "text",
    ['{"a": 1', '{"a": NaN}', '{"a": 1e999}', '{"a": 1,}', '{"a" 1}', "{'a': 1}", '{"a": 1 "b": 2}', "", '{"a\\x": 1}'],
)
def test_an_object_that_is_not_strict_json_is_left_to_the_one_decode(text: str) -> None:
    """Cut off, a constant or a number strict JSON refuses, a trailing comma, a missing
    colon or comma, no object at all: None, and ``strict_value_at`` says why."""
    assert jsonspans.strict_object_at(text, 0) is None
    with pytest.raises(ValueError):
        strict_value_at(text, 0)
    assert jsonspans.strict_object_at("[" + text + "]", 0) is None  # (an array: no object's members)


def test_a_call_object_payload_is_decoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Hermes payload whose end the whole-block reader found is read with the spans found
    as it was decoded: its arguments' text is not looked for by decoding them again."""
    asked: list[int] = []
    real = jsonspans.strict_object_at  # (what member_span decodes the members with)
    monkeypatch.setattr(jsonspans, "strict_object_at", lambda text, pos: asked.append(pos) or real(text, pos))
    reply = 'Sure. <tool_call>\n{"name": "f", "arguments": {"a": [1, {"b": "x"}]}, "id": "c1"}\n</tool_call>'
    (call,) = td.parse(reply).calls
    assert (call.name, call.arguments_json, call.id) == ("f", '{"a": [1, {"b": "x"}]}', "c1")
    assert asked == []
    # arguments first: decoded whole, their place looked for by decoding the members again
    turned = '<tool_call>\n{"arguments": {"a": 1}, "name": "f"}\n</tool_call>'
    assert [c.arguments_json for c in td.parse(turned).calls] == ['{"a": 1}']
    assert asked


@given(st.lists(VALUES, max_size=6), SPACE, st.booleans())
def test_element_spans_are_jsonscans(values: list[Any], space: str, ascii_only: bool) -> None:
    text = "[" + space + ("," + space).join(_dump(v, ascii_only) + space for v in values) + "]"
    assert jsonspans.strict_element_spans(text, 0) == element_spans(text, 0)


def test_a_toolset_indexes_its_names_and_types_its_values_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """What binding needs of a toolset (the name index, each parameter's typing) is built
    the first time a parse needs it and reused by every later parse with that toolset."""
    from tooldialect import names

    built: list[int] = []
    real = names.NameIndex.__init__

    def counting(self: Any, *args: Any) -> None:
        built.append(1)
        real(self, *args)

    monkeypatch.setattr(names.NameIndex, "__init__", counting)
    tools = td.Toolset.from_openai(
        [{"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"days": {"type": "integer"}}}}}]
    )  # fmt: skip
    text = "<tool_call>\n<function=get_weather>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"
    for _ in range(3):
        result = td.parse(text, tools=tools, families=["qwen3_coder"])
        assert [c.arguments for c in result.calls] == [{"days": 3}]
    assert len(built) == 1
    assert list(tools.typings) == [("get_weather", "days")]
    # a misspelt name still resolves through the shared index
    assert (
        td.parse(text.replace("get_weather", "getWeather"), tools=tools, families=["qwen3_coder"]).calls[0].name
        == "get_weather"
    )
    assert len(built) == 1


def test_a_cached_toolset_is_built_once_per_distinct_tools() -> None:
    from tooldialect import toolset as toolset_module

    toolset_module.clear_caches()

    def tools(city: str = "string") -> list[dict[str, Any]]:
        return [
            {"type": "function", "function": {"name": "get_weather", "parameters": {
                "type": "object", "properties": {"city": {"type": city}}}}},
            {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}},
        ]  # fmt: skip

    first = td.Toolset.cached(tools())
    assert td.Toolset.cached(tools()) is first  # decoded afresh, the same JSON: the same toolset
    assert td.Toolset.cached(first) is first
    assert td.Toolset.cached(tools("integer")) is not first
    assert td.Toolset.cached(list(reversed(tools()))) is not first  # order is part of a toolset
    # its own copy: changing the caller's dicts afterwards changes nothing
    mine = tools()
    got = td.Toolset.cached(mine)
    mine[0]["function"]["parameters"]["properties"]["city"]["type"] = "integer"
    assert got.get("get_weather").parameters["properties"]["city"] == {"type": "string"}
    # a bad list is still a caller error, and is not kept
    with pytest.raises(td.ToolsetError):
        td.Toolset.cached([{"type": "function", "function": {"name": ""}}])
    with pytest.raises(td.ToolsetError):
        td.Toolset.cached([{"type": "function", "function": {"name": ""}}])
    # not JSON data: built each time
    odd = [td.Tool(name="f")]
    assert td.Toolset.cached(odd) is not td.Toolset.cached(odd)
    assert len(toolset_module._TOOLSETS) == 3
