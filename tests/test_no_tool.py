"""A family's "no tool" names (`// no tool:` header): the model's way of calling no tool.

Command R's template offers `directly_answer` among the tools; a call to it is the model
saying it answers without one. It is never returned (nor announced) unless the toolset
offers it, and it never vanishes: an `unknown_tool` diagnostic records it
(docs/decisions.md, 135).
"""

from __future__ import annotations

import pytest

import tooldialect as td
from tooldialect.grammar import read_header

WEATHER = {
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
ANSWER = {"name": "directly_answer", "parameters": {"type": "object", "properties": {}}}


def action(*names: str) -> str:
    calls = ", ".join(
        f'{{"tool_name": "{n}", "parameters": {{"city": "Paris"}}}}'
        if n == "get_weather"
        else f'{{"tool_name": "{n}", "parameters": {{}}}}'
        for n in names
    )
    return f"Plan: answer it.\nAction:\n```json\n[{calls}]\n```"


def test_the_header_lists_the_names():
    header = read_header("// family: x\n// no tool: directly_answer, directly-answer\nstart: A\n", "x")
    assert header.no_tool == ("directly_answer", "directly-answer")
    assert not any(n.startswith("no tool") for n in header.notes)
    assert td.families.get("command_r").header.no_tool == ("directly_answer", "directly-answer")


@pytest.mark.parametrize("value", [",", "see the `no tool` key in the guide."])
def test_a_header_without_tool_names_is_refused(value):
    with pytest.raises(td.GrammarError, match="no tool needs"):
        read_header(f"// family: x\n// no tool: {value}\nstart: A\n", "x")


@pytest.mark.parametrize("tools", [None, [WEATHER]])
@pytest.mark.parametrize("unknown", ["keep", "drop", "error"])
def test_the_no_tool_name_is_never_returned_whatever_the_policy(tools, unknown):
    r = td.parse(action("directly_answer", "get_weather"), tools=tools, policy=td.Policy(unknown_tool=unknown))
    assert [c.name for c in r.calls] == ["get_weather"]
    assert r.text == "Plan: answer it.\n"
    (diag,) = r.diagnostics
    assert diag.kind == "unknown_tool" and diag.family == "command_r"
    assert diag.detail == {"name": "directly_answer", "policy": "drop", "reason": "no tool"}


def test_a_toolset_that_offers_the_name_makes_it_an_ordinary_call():
    r = td.parse(action("directly_answer"), tools=[WEATHER, ANSWER])
    assert [c.name for c in r.calls] == ["directly_answer"] and r.diagnostics == []
    # the other spelling resolves to the offered tool, reported as any repaired name is
    r = td.parse(action("directly-answer"), tools=[WEATHER, ANSWER])
    assert [c.name for c in r.calls] == ["directly_answer"]
    assert [d.kind for d in r.diagnostics] == ["name_repaired"]


def test_the_name_is_no_tool_only_in_its_own_family():
    text = '<tool_call>{"name": "directly_answer", "arguments": {}}</tool_call>'
    r = td.parse(text)
    assert [(c.name, c.family) for c in r.calls] == [("directly_answer", "hermes")]


@pytest.mark.parametrize("size", [1, 3, 1000])
def test_a_stream_never_announces_it(size):
    text = action("directly_answer", "get_weather")
    stream = td.ToolStream(tools=[WEATHER])
    events = []
    for i in range(0, len(text), size):
        events += stream.feed(text[i : i + size])
    events += stream.close()
    starts = [e.name for e in events if isinstance(e, td.CallStart)]
    assert starts == ["get_weather"]
    assert not any(isinstance(e, td.CallAbort) for e in events)
    kinds = [e.diagnostic.kind for e in events if isinstance(e, td.DiagnosticEvent)]
    assert kinds == ["unknown_tool"]
