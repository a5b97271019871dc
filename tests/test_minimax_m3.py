"""MiniMax-M3: the text behind the ]<]minimax[>[ token is the minimax_m3 family's."""

from __future__ import annotations

import tooldialect as td

NS = "]<]minimax[>["
WEATHER = td.Toolset(
    [
        td.Tool(
            name="get_weather",
            description="Current weather.",
            parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        )
    ]
)
CALL = f'{NS}<tool_call>\n{NS}<invoke name="get_weather">{NS}<city>Paris{NS}</city>{NS}</invoke>\n{NS}</tool_call>'


def test_a_call_keeps_its_arguments_and_invoke_xml_reads_no_empty_call():
    # the <invoke> behind the token once read as invoke_xml's get_weather({}), reported
    # arguments_invalid and kept: a harness would have run it without its city
    r = td.parse("Checking.\n" + CALL, tools=WEATHER)
    assert [(c.family, c.name, c.arguments) for c in r.calls] == [("minimax_m3", "get_weather", {"city": "Paris"})]
    assert r.diagnostics == [] and r.text == "Checking.\n"


def test_a_broken_block_is_reported_never_read_as_an_empty_invoke():
    broken = CALL.replace('name="get_weather"', "name=get_weather")
    r = td.parse(broken, tools=WEATHER)
    assert r.calls == []
    assert [d.kind for d in r.diagnostics] == ["malformed_block"]
    assert all(d.family != "invoke_xml" for d in r.diagnostics)


def test_a_stream_announces_the_call_once_its_name_is_read():
    stream = td.ToolStream(tools=WEATHER)
    events = []
    for ch in CALL:
        events.extend(stream.feed(ch))
    events.extend(stream.close())
    starts = [e for e in events if type(e).__name__ == "CallStart"]
    fragments = "".join(e.fragment for e in events if type(e).__name__ == "ArgumentsDelta")
    assert [s.name for s in starts] == ["get_weather"] and fragments == '{"city": "Paris"}'


def test_a_closer_of_another_name_is_reported_with_both_names():
    text = CALL.replace(f"Paris{NS}</city>", f"Paris{NS}</town>")
    r = td.parse(text, tools=WEATHER)
    assert r.calls[0].arguments == {"city": "Paris"}
    (d,) = r.diagnostics
    assert d.kind == "arguments_repaired" and d.detail["repairs"] == [
        "closing element </town> read as the end of <city>"
    ]


def test_nesting_past_the_parser_cap_removes_the_block_and_keeps_the_prose():
    # the token's own brackets ("]<]…[>[") must not be counted as the payload's nesting: the
    # block once ended at its first "]" and invoke_xml then read the <invoke> as f({})
    depth = 500
    value = f"{NS}<a>" * depth + "x" + f"{NS}</a>" * depth
    text = (
        f'Before.\n{NS}<tool_call>\n{NS}<invoke name="f">{NS}<p>{value}{NS}</p>{NS}</invoke>\n{NS}</tool_call>\nAfter.'
    )
    r = td.parse(text)
    assert r.calls == [] and [d.kind for d in r.diagnostics] == ["limit_exceeded"]
    assert r.text == "Before.\n\nAfter."


def test_nesting_deeper_than_max_depth_within_the_parser_cap_is_refused():
    value = f"{NS}<a>" * 6 + "x" + f"{NS}</a>" * 6
    text = f'{NS}<invoke name="f">{NS}<p>{value}{NS}</p>{NS}</invoke>'
    assert td.parse(text).calls[0].arguments == {"p": {"a": {"a": {"a": {"a": {"a": {"a": "x"}}}}}}}
    r = td.parse(text, policy=td.Policy(max_depth=4))
    assert r.calls == [] and [d.kind for d in r.diagnostics] == ["limit_exceeded"]


def test_the_family_is_suggested_for_minimax_m3_models():
    assert "minimax_m3" in td.families.for_model("MiniMaxAI/MiniMax-M3").families
    assert "invoke_xml" not in td.families.for_model("MiniMaxAI/MiniMax-M3").families
