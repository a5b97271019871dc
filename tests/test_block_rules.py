"""Engine rules that grammars opt into by naming (docs/authoring.md), each pinned on the
family that needs it and checked streamed one character at a time as well as in batch."""

from __future__ import annotations

from support import check_invariants, run_stream

import tooldialect as td

WEATHER = td.Toolset.coerce(
    [
        {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
        {"name": "get_time", "parameters": {"type": "object", "properties": {}}},
    ]
)


def parse(text: str, **opts) -> td.ParseResult:
    result = td.parse(text, **opts)
    check_invariants(text, run_stream(text, list(range(1, len(text))), **opts), result)
    return result


def calls(result: td.ParseResult) -> list[tuple[str, dict, str]]:
    return [(c.name, c.arguments, c.family) for c in result.calls]


def kinds(result: td.ParseResult) -> list[str]:
    return [d.kind for d in result.diagnostics]


# FURNITURE_REPLY_…: framing only at the first visible character of the reply


def test_reply_furniture_only_where_the_reply_begins():
    assert parse("all\nHello").text == "Hello"
    assert parse("  <think>hm</think>all\nHello").text == "  Hello"
    assert parse("Give it all\nyou have").text == "Give it all\nyou have"
    assert parse("all\nHello", policy=td.Policy(bare_json=False)).text == "all\nHello"
    assert parse("all\nHello", families=["hermes"]).text == "all\nHello"


# bare_call: a reply-start call with no marker, gated by the toolset


def test_bare_call_needs_a_name_the_toolset_offers():
    assert calls(parse('get_weather\n{"city": "Paris"}', tools=WEATHER)) == [
        ("get_weather", {"city": "Paris"}, "functionary")
    ]
    shown = parse('Example\n{"city": "Paris"}', tools=WEATHER)
    assert not shown.calls and not shown.diagnostics and shown.text == 'Example\n{"city": "Paris"}'
    cut = parse('Example\n{"city": "Pa', tools=WEATHER)
    assert not cut.diagnostics and cut.text == 'Example\n{"city": "Pa'
    assert kinds(parse('get_weather\n{"city": "Pa', tools=WEATHER)) == ["truncated"]


def test_whole_reply_may_end_at_its_own_furniture():
    got = parse('get_weather\n{"city": "Paris"}>>>all\nDone.')
    assert calls(got) == [("get_weather", {"city": "Paris"}, "functionary")] and got.text == "Done."
    prose = parse('Example\n{"a": 1}\nThat is the format.')
    assert not prose.calls and prose.text == 'Example\n{"a": 1}\nThat is the format.'


# SOFT_ openers commit once the grammar has read a call's name


def test_tentative_opener_commits_after_a_name():
    repl = parse(">>> import math\n>>> math.pi")
    assert repl.text == ">>> import math\n>>> math.pi" and not repl.diagnostics
    cut = parse('Hi >>>get_weather\n{"city": "Pa')
    assert kinds(cut) == ["truncated"] and cut.diagnostics[0].detail["name"] == "get_weather"
    assert cut.text == "Hi "


# decisions.md 19: a call found by skipping text loses to a reading of that text


def test_call_found_by_skipping_text_loses_to_a_reading_of_it():
    cut = parse('<function=get_weather>{"city": "Par')
    assert not cut.calls and kinds(cut) == ["truncated"] and cut.diagnostics[0].family == "functionary"
    broken = parse('<function=get_weather>{"city": Paris}</function> ok')
    assert not broken.calls and kinds(broken) == ["malformed_block"] and broken.text == " ok"
    # alone, Qwen3-Coder reads the tag as a call with no parameters and the JSON as text
    alone = parse('<function=get_weather>{"city": Paris}</function> ok', families=["qwen3_coder"])
    assert calls(alone) == [("get_weather", {}, "qwen3_coder")]
    xml = parse("<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>")
    assert calls(xml) == [("get_weather", {"city": "Paris"}, "qwen3_coder")]


# a raw text value ends at a separator after which another one may begin


def test_text_value_ends_where_another_may_begin():
    got = parse("<start_function_call>call:f{xs:[1,2,x y],n:3}<end_function_call>")
    assert calls(got) == [("f", {"xs": [1, 2, "x y"], "n": 3}, "functiongemma")]
