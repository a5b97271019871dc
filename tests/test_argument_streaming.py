"""Arguments sent as they arrive: fragments that are never taken back (DESIGN §4).

JSON arguments stream as the model's own text up to the last place strict JSON can still
be finished; text-valued parameters stream as JSON members, one per complete parameter.
For every call, the fragments concatenate to ``call.arguments_json`` at every chunking.
"""

from __future__ import annotations

import json

import pytest

import tooldialect as td
from tooldialect import argstream
from tooldialect.argstream import StrictPrefix, finish_json


def stream(text: str, step: int, **kw) -> list[td.Event]:
    s = td.ToolStream(**kw)
    events: list[td.Event] = []
    for i in range(0, len(text), step):
        events += s.feed(text[i : i + step])
    return events + s.close()


def fragments(events: list[td.Event], index: int = 0) -> list[str]:
    return [e.fragment for e in events if isinstance(e, td.ArgumentsDelta) and e.index == index]


def ends(events: list[td.Event]) -> list[td.ToolCall]:
    return [e.call for e in events if isinstance(e, td.CallEnd)]


HERMES = '<tool_call>{"name": "write", "arguments": {"path": "a.txt", "content": "héllo \\"world\\"\\n", "n": [1, 2.5e3, true, null]}}</tool_call>'
ARGS = HERMES[HERMES.index('{"path"') : HERMES.rindex("}}") + 1]


@pytest.mark.parametrize("step", [1, 2, 3, 7, 1000])
def test_json_arguments_stream_as_the_models_own_text(step):
    events = stream(HERMES, step)
    (call,) = ends(events)
    frags = fragments(events)
    assert "".join(frags) == call.arguments_json == ARGS
    assert all(frags)
    if step == 1:
        assert len(frags) > 25  # character by character inside strings, not one piece at the end
        # every fragment ends at a place where strict JSON can still be finished
        sent = ""
        for f in frags[:-1]:
            sent += f
            assert json.loads(sent + finish_json(sent, call.arguments)) == call.arguments


def test_arguments_of_a_grammar_spelled_call_stream_too():
    text = (
        '<|tool_calls_section_begin|><|tool_call_begin|>functions.write:0<|tool_call_argument_begin|>{"content": "'
        + "abc" * 50
        + '"}<|tool_call_end|><|tool_calls_section_end|>'
    )
    events = stream(text, 4)
    (call,) = ends(events)
    assert len(fragments(events)) > 20
    assert "".join(fragments(events)) == call.arguments_json


@pytest.mark.parametrize("step", [1, 5, 1000])
def test_repaired_arguments_keep_the_models_strict_prefix(step):
    text = '<tool_call>{"name": "write", "arguments": {"path": "a.txt", \'content\': \'x\', "n": 1,}}</tool_call>'
    events = stream(text, step)
    (call,) = ends(events)
    assert call.arguments == {"path": "a.txt", "content": "x", "n": 1}
    assert call.arguments_json.startswith('{"path": "a.txt"')  # the model's text, then a canonical tail
    assert json.loads(call.arguments_json) == call.arguments
    assert "".join(fragments(events)) == call.arguments_json
    assert call.arguments_json == td.parse(text).calls[0].arguments_json  # not how it was cut
    kinds = [e.diagnostic.kind for e in events if isinstance(e, td.DiagnosticEvent)]
    assert kinds == ["arguments_repaired"]


def test_a_cut_off_call_ends_with_an_abort_after_its_fragments():
    text = '<tool_call>{"name": "write", "arguments": {"path": "a.txt", "content": "hel'
    events = stream(text, 3)
    assert "".join(fragments(events)) == '{"path": "a.txt", "content": "hel'
    aborts = [e for e in events if isinstance(e, td.CallAbort)]
    assert [a.reason for a in aborts] == ["truncated"] and not ends(events)


@pytest.mark.parametrize("step", [1, 4])
def test_truncated_keep_streams_whole_members_only(step):
    # a kept call has only its complete members, so only they may have been sent
    keep = td.Policy(truncated="keep")
    text = '<tool_call>{"name": "write", "arguments": {"path": "a.txt", "opts": {"x": [1, 2]}, "content": "hel'
    events = stream(text, step, policy=keep)
    (call,) = ends(events)
    assert call.arguments == {"path": "a.txt", "opts": {"x": [1, 2]}}
    frags = fragments(events)
    assert "".join(frags) == call.arguments_json == '{"path": "a.txt", "opts": {"x": [1, 2]}}'
    assert frags[:3] == ["{", '"path": "a.txt"', ', "opts": {"x": [1, 2]}']


def test_an_envelope_the_toolset_may_unwrap_is_held_until_the_end():
    tools = [{"name": "write", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}]
    text = '<tool_call>{"name": "write", "arguments": {"arguments": {"a": 1}}}</tool_call>'
    events = stream(text, 2, tools=tools)
    (call,) = ends(events)
    assert call.arguments == {"a": 1}
    assert fragments(events) == ["{", '"a": 1}']


@pytest.mark.parametrize("step", [1, 6, 1000])
def test_text_valued_parameters_stream_one_json_member_each(step):
    tools = [
        {
            "name": "edit",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "line": {"type": "integer"}, "text": {"type": "string"}},
            },
        }
    ]
    text = '<tool_call>\n<function=edit>\n<parameter=path>\nsrc/a.py\n</parameter>\n<parameter=line>\n42\n</parameter>\n<parameter=text>\nsay "hi"\n</parameter>\n</function>\n</tool_call>'
    events = stream(text, step, tools=tools)
    (call,) = ends(events)
    assert call.arguments == {"path": "src/a.py", "line": 42, "text": 'say "hi"'}
    frags = fragments(events)
    assert "".join(frags) == call.arguments_json == json.dumps(call.arguments, ensure_ascii=False)
    if step == 1:
        assert frags == ['{"path": "src/a.py"', ', "line": 42', ', "text": "say \\"hi\\""', "}"]


def test_a_repeated_parameter_is_written_again_and_the_last_one_wins():
    text = "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n<parameter=a>\n2\n</parameter>\n</function>\n</tool_call>"
    events = stream(text, 1)
    (call,) = ends(events)
    assert call.arguments == {"a": 2}
    assert call.arguments_json == '{"a": 1, "a": 2}'
    assert json.loads(call.arguments_json) == call.arguments
    assert "".join(fragments(events)) == call.arguments_json


def test_strict_prefix_reads_each_character_once(monkeypatch):
    fed: dict[int, int] = {}
    original = StrictPrefix.feed

    def counting(self, piece):
        fed[id(self)] = fed.get(id(self), 0) + len(piece)
        return original(self, piece)

    monkeypatch.setattr(argstream.StrictPrefix, "feed", counting)
    body = '{"name": "write", "arguments": {"content": "' + "ab" * 20_000 + '"}}'
    stream("<tool_call>" + body + "</tool_call>", 4)
    # each reader (one per family that reads the block) follows the payload once, in the
    # deltas it arrived in: never the text again from its start
    assert fed and max(fed.values()) == len(body)
    assert len(fed) <= len(td.families.names())


@pytest.mark.parametrize(
    "prefix, value, tail",
    [
        ("", {"a": 1}, '{"a": 1}'),
        ('{"a": 1', {"a": 1, "b": 2}, ', "b": 2}'),
        ('{"a": 1', {"a": 3}, ', "a": 3}'),  # a member said again: the last one wins
        ('{"a": "he', {"a": "hello\n"}, 'llo\\n"}'),
        ('{"a": [1', {"a": [1, 2], "b": {}}, ', 2], "b": {}}'),
        ('{"a": {', {"a": {"x": True}}, '"x": true}}'),
        ('{"a": "he', {"a": "no"}, None),  # the prefix says something the value does not
        ('{"a": 1', {"b": 1}, None),
        ('{"a": 1', {"a": 1.0}, ', "a": 1.0}'),  # 1 and 1.0 are not written the same
    ],
)
def test_finish_json(prefix, value, tail):
    got = finish_json(prefix, value)
    assert got == tail
    if tail is not None:
        assert json.loads(prefix + got) == value


@pytest.mark.parametrize(
    "text, safe",
    [
        ('{"a": 1, ', 7),
        ('{"a": tru', 1),
        ('{"a": "x\\u00', 8),
        ("{'a'", 1),
        ('{"a": 01}', 1),
        ('{"a": "x\ny"}', 8),
    ],
)
def test_strict_prefix_safe_points(text, safe):
    sp = StrictPrefix()
    sp.feed(text)
    assert sp.safe == safe


@pytest.mark.parametrize("step", [1, 3])
def test_each_call_object_of_an_array_is_announced_and_streams(step):
    text = (
        '[TOOL_CALLS] [{"name": "a", "arguments": {"x": "'
        + "h" * 40
        + '"}, "id": "a1b2c3d4e"}, 7, {"name": "b", "arguments": {"y": [1, 2]}, "id": "b1c2d3e4f"}]'
    )
    events = stream(text, step)
    kinds = [type(e).__name__ for e in events if not isinstance(e, (td.ArgumentsDelta, td.TextDelta))]
    # each is announced at its name and streams; they end with the array, in order, the
    # 7 between them reported
    assert kinds == ["CallStart", "CallStart", "CallEnd", "DiagnosticEvent", "CallEnd"]
    calls = ends(events)
    assert [(c.name, c.id) for c in calls] == [("a", "a1b2c3d4e"), ("b", "b1c2d3e4f")]
    for i, call in enumerate(calls):
        assert "".join(fragments(events, i)) == call.arguments_json
    assert len(fragments(events, 0)) > 5


def test_a_cut_off_array_aborts_the_call_it_was_sending():
    text = '[TOOL_CALLS] [{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {"y": "hel'
    events = stream(text, 2)
    starts = [e for e in events if isinstance(e, td.CallStart)]
    aborts = [e for e in events if isinstance(e, td.CallAbort)]
    assert [s.name for s in starts] == ["a", "b"]
    # the call complete before the cut stands; nothing of the cut one is dispatched
    assert [a.index for a in aborts] == [starts[1].index]
    assert [(c.name, c.arguments) for c in ends(events)] == [("a", {"x": 1})]
    kept = stream(text, 2, policy=td.Policy(truncated="keep"))
    first, call = ends(kept)
    assert first.name == "a" and call.name == "b" and call.arguments == {}
    assert "".join(fragments(kept, 1)) == call.arguments_json == "{}"


def test_python_keyword_arguments_stream_one_member_each():
    text = "<|python_start|>[get_weather(city='Paris', days=[1, 2], opts={'a': None}), f(x=g(y=1))]<|python_end|>"
    events = stream(text, 1)
    (call,) = ends(events)
    assert fragments(events, 0) == ['{"city": "Paris"', ', "days": [1, 2]', ', "opts": {"a": null}', "}"]
    assert "".join(fragments(events, 0)) == call.arguments_json
    # a keyword of a call nested in a value is not the outer call's: nothing is sent, and
    # the refused call is aborted
    assert fragments(events, 1) == []
    assert [e.reason for e in events if isinstance(e, td.CallAbort)] == ["arguments_invalid"]


def test_a_broken_payload_ends_its_announced_call_before_the_next_payload():
    text = (
        '<tool_calls>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
        '{"name": "get_time", "arguments": {broken}\n'
        '{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_calls>'
    )
    events = stream(text, 1)
    shape = [
        (type(e).__name__, getattr(e, "index", None))
        for e in events
        if not isinstance(e, (td.TextDelta, td.ArgumentsDelta))
    ]
    assert shape == [
        ("CallStart", 0),
        ("CallStart", 1),
        ("CallStart", 2),
        ("CallEnd", 0),
        ("CallAbort", 1),
        ("DiagnosticEvent", None),
        ("CallEnd", 2),
    ]
    assert [(c.name, c.arguments) for c in ends(events)] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Rome"}),
    ]


def test_one_marker_per_call_is_not_a_repetition_loop():
    text = "".join(f'[TOOL_CALLS]f{i}[ARGS]{{"a": {i}}}' for i in range(40))
    for step in (3, len(text)):
        events = stream(text, step)
        assert len(ends(events)) == 40
        assert not [e for e in events if isinstance(e, td.DiagnosticEvent)]


def test_a_kimi_call_is_announced_with_its_id():
    text = '<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>'
    events = stream(text, 3)
    (start,) = [e for e in events if isinstance(e, td.CallStart)]
    assert start.id == "functions.get_weather:0" == ends(events)[0].id


ESCAPES = 'a\\nb\\"c\\\\d\\/e\\tf\\u00e9g' * 40 + '\\\\\\"' + "x" * 600


@pytest.mark.parametrize("tools", [None, "write"])
@pytest.mark.parametrize("step", [1, 2, 3, 4, 5, 7])
def test_escapes_split_across_deltas_read_as_in_one_piece(step, tools):
    """A long string whose escapes fall on delta boundaries at every offset: the fast read
    of a delta that only continues a string (an escape begun in one delta and ended in the
    next, a string still short enough to be kept) gives what batch gives."""
    from support import check_invariants

    text = '<tool_call>{"name": "write", "arguments": {"note": "' + ESCAPES + '", "k": "v"}}</tool_call> after'
    toolset = None
    if tools:
        toolset = td.Toolset(
            [
                td.Tool(
                    name="write",
                    parameters={"type": "object", "properties": {"note": {"type": "string"}, "k": {"type": "string"}}},
                )
            ]
        )
    batch = td.parse(text, tools=toolset, families=["hermes"])
    assert batch.calls[0].arguments["note"] == json.loads('"' + ESCAPES + '"')
    for offset in range(step):
        s = td.ToolStream(tools=toolset, families=["hermes"])
        events = s.feed(text[:offset])
        for i in range(offset, len(text), step):
            events += s.feed(text[i : i + step])
        events += s.close()
        check_invariants(text, events, batch)


@pytest.mark.parametrize(
    "value",
    ['a "quoted" é\n\x01', 3, -(10**30), True, False, None, 1.5, float("nan"), [1, "x"], {"a": None}, 2**70 + 0.5],
)
def test_a_member_is_written_as_json_dumps_writes_it(value):
    # strings, ints, booleans and null are written without the encoder; every other value by it
    assert argstream.member("ké", value, True) == json.dumps("ké", ensure_ascii=False) + ": " + json.dumps(
        value, ensure_ascii=False
    )
    assert argstream.member("k", value, False).startswith(', "k": ')
