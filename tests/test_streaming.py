"""Streaming behaviour: bounded hold-back, linear work, limits, and the awkward cuts."""

from __future__ import annotations

import pytest
from support import check_invariants, count_calls, run_stream
from test_emit_counts import TOOLS

import tooldialect as td
from tooldialect.catalog import catalog_for
from tooldialect.stream import collect

WIDTH = catalog_for(None).max_width


def call(name: str, **args) -> str:
    import json

    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>"


def released_lag(text: str, step: int = 1) -> int:
    """The most text ever held back while no block was open."""
    s = td.ToolStream()
    released = 0
    worst = 0
    for i in range(0, len(text), step):
        for ev in s.feed(text[i : i + step]):
            if isinstance(ev, td.TextDelta):
                released += len(ev.text)
        if s._engine.arbiter.block is None and s._engine.fences.span is None:
            worst = max(worst, i + step - released)
    return worst


def test_holdback_outside_blocks_is_at_most_the_longest_marker():
    prose = (
        "Compare a < b and b > c; arrays [1, 2] and {sets}; pipes | and <|odd|> tokens, "
        "html <div class='x'>y</div>, a <tool_calls> plural, [TOOLS] and functionally done. "
    ) * 20
    assert released_lag(prose) <= WIDTH
    assert released_lag(prose, 7) <= WIDTH + 7


def test_plain_prose_is_released_immediately():
    s = td.ToolStream()
    assert [e.text for e in s.feed("Hello there, ")] == ["Hello there, "]
    assert [e.text for e in s.feed("how are you? ")] == ["how are you? "]


def test_partial_marker_is_held_then_released_as_text():
    s = td.ToolStream()
    assert [e.text for e in s.feed("value <tool")] == ["value "]
    assert [e.text for e in s.feed("box> done")] == ["<toolbox> done"]


def test_protected_fence_streams_without_waiting_for_its_end():
    s = td.ToolStream()
    out = s.feed('Example:\n```bash\necho <tool_call>{"name": "x"}</tool_call>\n')
    text = "".join(e.text for e in out if isinstance(e, td.TextDelta))
    assert "echo <tool_call>" in text
    out = s.feed("```\nafter") + s.close()
    assert not [e for e in out if isinstance(e, td.CallEnd)]


def test_several_complete_calls_in_one_delta():
    text = "a" + call("one") + "b" + call("two", x=1) + "c" + call("three") + "d"
    s = td.ToolStream()
    events = s.feed(text) + s.close()
    assert [e.call.name for e in events if isinstance(e, td.CallEnd)] == ["one", "two", "three"]
    assert "".join(e.text for e in events if isinstance(e, td.TextDelta)) == "abcd"
    check_invariants(text, events, td.parse(text))


def test_call_completed_in_the_last_delta():
    text = 'Let me look. <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}'
    s = td.ToolStream()
    events = s.feed(text[:-3])
    assert not [e for e in events if isinstance(e, td.CallEnd)]
    events += s.feed(text[-3:])
    events += s.close()
    ends = [e for e in events if isinstance(e, td.CallEnd)]
    assert len(ends) == 1 and ends[0].call.arguments == {"city": "Paris"}
    check_invariants(text, events, td.parse(text))


def test_zero_argument_calls_stream_their_empty_object():
    for text in ['<tool_call>{"name": "now"}</tool_call>', '<tool_call>{"name": "now", "arguments": {}}</tool_call>']:
        for step in (1, 3, len(text)):
            events = run_stream(text, range(step, len(text), step))
            frags = "".join(e.fragment for e in events if isinstance(e, td.ArgumentsDelta))
            (end,) = [e for e in events if isinstance(e, td.CallEnd)]
            assert frags == "{}" == end.call.arguments_json and end.call.arguments == {}


def _fragments(events: list[td.Event]) -> str:
    return "".join(e.fragment for e in events if isinstance(e, td.ArgumentsDelta))


def test_call_start_comes_before_the_arguments_arrive_and_they_stream_as_they_come():
    s = td.ToolStream()
    events = s.feed('<tool_call>{"name": "write_file", "arguments": {"content": "')
    assert [type(e) for e in events][:1] == [td.CallStart]
    assert events[0].name == "write_file"
    sent = _fragments(events)
    assert sent == '{"content": "'
    for _ in range(10):
        events = s.feed("x" * 100)
        assert [type(e) for e in events] == [td.ArgumentsDelta]  # each delta's text, at once
        sent += _fragments(events)
    assert sent == '{"content": "' + "x" * 1000
    events = s.feed('"}}</tool_call>') + s.close()
    (end,) = [e for e in events if isinstance(e, td.CallEnd)]
    assert sent + _fragments(events) == end.call.arguments_json == '{"content": "' + "x" * 1000 + '"}'


def test_unknown_tool_is_not_announced_when_it_will_be_dropped():
    s = td.ToolStream(tools=[{"name": "a", "parameters": {"type": "object"}}], policy=td.Policy(unknown_tool="drop"))
    events = s.feed('<tool_call>{"name": "b", "arguments": {')
    assert not [e for e in events if isinstance(e, td.CallStart)]


# -- limits ----------------------------------------------------------------------------------


def test_block_over_the_cap_is_released_as_text():
    policy = td.Policy(max_block_chars=300)
    text = 'A <tool_call>{"name": "f", "arguments": {"x": "' + "y" * 1000 + '"}}</tool_call> B'
    r = td.parse(text, policy=policy)
    assert r.calls == []
    assert next(d.kind for d in r.diagnostics) == "limit_exceeded"
    assert r.text == text  # nothing lost
    events = run_stream(text, range(5, len(text), 5), policy=policy)
    check_invariants(text, events, r)


def test_stream_that_never_closes_holds_at_most_the_cap():
    policy = td.Policy(max_block_chars=1000)
    s = td.ToolStream(policy=policy)
    s.feed('<tool_call>{"name": "f", "arguments": {"x": "')
    for _ in range(300):
        s.feed("z" * 10)
        eng = s._engine
        block = eng.arbiter.block
        held = len(eng.window.win) + sum(len(p) for p in (block.held.pieces if block else []))
        assert held <= policy.max_block_chars + 64


def test_max_calls():
    text = "".join(call("f", i=i) for i in range(5))
    r = td.parse(text, policy=td.Policy(max_calls=3))
    assert len(r.calls) == 3
    # each dropped call is reported over its own text (nothing removed goes unreported)
    assert [d.kind for d in r.diagnostics] == ["limit_exceeded", "limit_exceeded"]
    assert all(d.detail["limit"] == "max_calls" and d.detail["name"] == "f" for d in r.diagnostics)


def test_max_depth():
    deep = "[" * 70 + "]" * 70
    text = '<tool_call>{"name": "f", "arguments": {"x": ' + deep + "}}</tool_call>"
    r = td.parse(text)
    assert r.calls == [] and r.diagnostics
    assert td.parse(text, policy=td.Policy(max_depth=100)).calls[0].name == "f"


# -- linear work -------------------------------------------------------------------------------


def count_ops(text: str, step: int) -> int:
    def run() -> None:
        s = td.ToolStream()
        for i in range(0, len(text), step):
            s.feed(text[i : i + step])
        s.close()

    return count_calls(run)


def _response(size: int) -> str:
    """About ``size`` characters: prose and five calls with long arguments."""
    part = max(1, size // 10)
    out = []
    for i in range(5):
        out.append("Some prose before the call. " * (part // 28))
        out.append(call("write_file", path=f"f{i}.txt", content="line of text\n" * (part // 13)))
    return "".join(out)


@pytest.mark.parametrize("step", [4, 64])
def test_work_grows_linearly_with_output(step):
    small = count_ops(_response(5_000), step)
    large = count_ops(_response(20_000), step)
    assert large / small < 4.8, (small, large)


def test_work_inside_one_long_argument_is_linear():
    def text(n: int) -> str:
        return '<tool_call>{"name": "write_file", "arguments": {"content": "' + "ab\\n" * n + '"}}</tool_call>'

    small = count_ops(text(2_000), 3)
    large = count_ops(text(8_000), 3)
    assert large / small < 4.8, (small, large)


def test_work_inside_one_long_argument_is_linear_with_a_toolset():
    tools = [{"name": "write_file", "parameters": {"type": "object", "properties": {"content": {"type": "string"}}}}]

    def ops(n: int) -> int:
        text = '<tool_call>{"name": "write_file", "arguments": {"content": "' + "ab\\n" * n + '"}}</tool_call>'

        def run() -> None:
            s = td.ToolStream(tools=tools)
            for i in range(0, len(text), 3):
                s.feed(text[i : i + 3])
            s.close()

        return count_calls(run)

    small, large = ops(2_000), ops(8_000)
    assert large / small < 4.8, (small, large)


def test_buffer_stays_small_inside_a_long_block():
    s = td.ToolStream()
    s.feed('<tool_call>{"name": "write_file", "arguments": {"content": "')
    worst = 0
    for _ in range(2_000):
        s.feed("abcd")
        worst = max(worst, len(s._engine.window.win))
    assert worst <= WIDTH + 8


def test_unclosed_openers_stay_linear():
    def text(n: int) -> str:
        return ("<tool_call>x " * n) + "end"

    small = count_ops(text(300), 5)
    large = count_ops(text(1_200), 5)
    assert large / small < 4.8, (small, large)


def test_repeated_soft_wrappers_stay_linear():
    def text(n: int) -> str:
        return ('<json>{"a": "' + "x" * 40 + '"} ') * n

    small = count_ops(text(100), 4)
    large = count_ops(text(400), 4)
    assert large / small < 4.8, (small, large)


@pytest.mark.parametrize("step", [1, 2, 3, 5, 8, 13])
def test_call_is_announced_before_its_payload_completes_at_any_chunking(step):
    text = '<tool_call>{"name": "write_file", "arguments": {"content": "' + "z" * 40 + '"}}</tool_call>'
    done_at = text.index('"}}') + 3
    s = td.ToolStream()
    started_at = None
    for i in range(0, len(text), step):
        for ev in s.feed(text[i : i + step]):
            if isinstance(ev, td.CallStart) and started_at is None:
                started_at = i + step
    s.close()
    assert started_at is not None and started_at < done_at


def _events(text: str, step: int = 1, **opts) -> list:
    s = td.ToolStream(**opts)
    out = []
    for i in range(0, len(text), step):
        out += s.feed(text[i : i + step])
    return out + s.close()


@pytest.mark.parametrize("step", [1, 3, 1000])
def test_prose_after_the_calls_that_begins_like_a_name_is_text(step):
    # the block could end after its call; a bare word it cannot go on from is prose,
    # never announced as a call and never swallowed (decisions.md, "Prose after the calls")
    for tail in (" Done. Bye", " ok", "\nok then"):
        text = '[TOOL_CALLS]f[ARGS]{"a": 1}' + tail
        events = _events(text, step)
        assert "".join(e.text for e in events if isinstance(e, td.TextDelta)) == tail
        assert [e.name for e in events if isinstance(e, td.CallStart)] == ["f"]
        assert not [e for e in events if isinstance(e, (td.CallAbort, td.DiagnosticEvent))]
    # a name followed by a marker belongs to the block: cut off there, it is truncated
    r = td.parse('[TOOL_CALLS]f[ARGS]{"a": 1}g[ARGS]')
    assert [c.name for c in r.calls] == ["f"] and [d.kind for d in r.diagnostics] == ["truncated"]


def test_call_start_id_is_the_id_known_when_the_call_is_announced():
    # decisions.md, "A call's id is in CallStart.id": a v2-v7 call object is announced at
    # its name, before its id (written after the arguments) arrives; read whole in one
    # delta, the id is known when the call is announced
    text = '[TOOL_CALLS] [{"name": "f", "arguments": {}, "id": "a1b2c3d4e"}]'
    for step, announced in ((1, None), (len(text), "a1b2c3d4e")):
        events = _events(text, step)
        start = next(e for e in events if isinstance(e, td.CallStart))
        end = next(e for e in events if isinstance(e, td.CallEnd))
        assert start.id == announced and end.call.id == "a1b2c3d4e"
    events = _events('[TOOL_CALLS]f[CALL_ID]a1b2c3d4e[ARGS]{"x": 1}')
    start = next(e for e in events if isinstance(e, td.CallStart))
    end = next(e for e in events if isinstance(e, td.CallEnd))
    assert start.id is None and end.call.id == "a1b2c3d4e"


_WEATHER = TOOLS  # get_weather(city, days): the toolset the per-call counts read against


@pytest.mark.parametrize("families", [["hermes"], None])
def test_what_may_be_a_wide_marker_or_a_fence_is_held_far_from_the_end(families):
    """A marker wider than most (an opener with attributes) or a run of backticks may be
    cut off by the end of the text from further back than the other markers reach: it is
    held, not sent as text, and read whole once the rest arrives."""
    s = td.ToolStream(_WEATHER, families=families)
    sent = s.feed("Let me check. <tool_call " + "x" * 80)
    assert [e.text for e in sent] == ["Let me check. "]
    rest = s.feed('>\n{"name": "get_weather", "arguments": {}}\n</tool_call>') + s.close()
    assert [e.call.name for e in rest if isinstance(e, td.CallEnd)] == ["get_weather"]
    s = td.ToolStream(_WEATHER, families=families)
    assert [e.text for e in s.feed("Some code: " + "`" * 45)] == ["Some code: "]
    later = s.feed("python\nx = 1\n" + "`" * 45 + "\ndone") + s.close()
    assert "".join(e.text for e in later if isinstance(e, td.TextDelta)).startswith("`" * 45 + "python")
    s = td.ToolStream(_WEATHER, families=families)
    assert [e.text for e in s.feed("Note ~~")] == ["Note "]  # (two tildes may become a fence's three)
    assert [e.text for e in s.feed("x") + s.close()] == ["~~x"]


FOLDED_REPLIES = {
    "qwen3_coder": (
        "Let me check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>\nAnd then:\n<tool_call>\n"
        "<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n</function>\n</tool_call>\n"
    ),
    "hermes": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>',
    "kimi_k2": (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
        '{"city": "Paris", "days": 3}<|tool_call_end|><|tool_calls_section_end|>'
    ),
}


@pytest.mark.parametrize("family", sorted(FOLDED_REPLIES))
@pytest.mark.parametrize("cut", [None, -40])
def test_parse_keeps_only_what_its_result_holds(monkeypatch, family, cut):
    """parse() folds the stream into a result as it reads: it makes no event at all (the
    result holds the calls, the text and the diagnostics themselves), and its result is
    what the same stream's events fold into, a call cut off by the end of the text
    included (its diagnostic names the call the stream announced)."""
    from tooldialect.engine import events as events_module

    text = FOLDED_REPLIES[family][:cut]
    made = []
    for name in ("text_delta", "reasoning_delta", "call_start", "arguments_delta", "call_end", "call_abort"):
        monkeypatch.setattr(events_module, name, lambda *a, _name=name: made.append(_name))
    monkeypatch.setattr(events_module, "diagnostic_event", lambda d: made.append("diagnostic_event"))
    got = td.parse(text, tools=_WEATHER, families=[family])
    monkeypatch.undo()
    assert made == []
    s = td.ToolStream(_WEATHER, families=[family])
    events = [ev for i in range(0, len(text), 5) for ev in s.feed(text[i : i + 5])] + s.close()
    assert got == collect(events)
    assert got.calls if cut is None else got.diagnostics
    assert any(isinstance(ev, td.CallStart) for ev in events)  # (the stream announced the call)
    if cut is not None:
        assert [d.detail.get("name") for d in got.diagnostics if d.kind == "truncated"] == ["get_weather"]
