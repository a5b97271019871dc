"""Policy.tool_choice: the request's tool_choice applied to the calls the model wrote."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support import ROOT

import tooldialect as td
from tooldialect.stream import collect

TOOLS = td.Toolset.from_openai(
    [
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}},
    ]
)
TWO = (
    'Sure. <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    '<tool_call>{"name": "get_time", "arguments": {"tz": "UTC"}}</tool_call> Done.'
)


def streamed(text: str, size: int, **opts) -> tuple[list[td.Event], td.ParseResult]:
    stream = td.ToolStream(**opts)
    events = [ev for i in range(0, len(text), size) for ev in stream.feed(text[i : i + size])] + stream.close()
    return events, collect(events)


@pytest.mark.parametrize("size", [1, 4, 1000])
@pytest.mark.parametrize(
    ("choice", "kept", "left_out"),
    [
        ("auto", ["get_weather", "get_time"], []),
        ("required", ["get_weather", "get_time"], []),
        ("none", [], ["get_weather", "get_time"]),
        ("get_time", ["get_time"], ["get_weather"]),
        (td.ToolChoice(name="get_weather"), ["get_weather"], ["get_time"]),
        ({"type": "function", "function": {"name": "get_time"}}, ["get_time"], ["get_weather"]),
        ({"type": "tool", "name": "get_time"}, ["get_time"], ["get_weather"]),
        ({"type": "any"}, ["get_weather", "get_time"], []),
    ],
)
def test_calls_the_choice_allows_are_returned_and_the_rest_reported(choice, kept, left_out, size):
    opts = {"tools": TOOLS, "policy": td.Policy(tool_choice=choice)}
    batch = td.parse(TWO, **opts)
    assert [c.name for c in batch.calls] == kept
    notes = [d for d in batch.diagnostics if d.kind == "tool_choice"]
    assert [d.detail["name"] for d in notes] == left_out
    for d in notes:  # nothing the model wrote is lost: the arguments are in the detail
        assert d.detail["arguments"] == {"get_weather": {"city": "Paris"}, "get_time": {"tz": "UTC"}}[d.detail["name"]]
        assert TWO[d.span[0] : d.span[1]].count(d.detail["name"]) == 1
    assert batch.text == "Sure.  Done."
    events, result = streamed(TWO, size, **opts)
    assert result == batch
    # a call that will not be returned is never announced
    assert [e.name for e in events if isinstance(e, td.CallStart)] == kept
    assert not any(isinstance(e, td.CallAbort) for e in events)


@pytest.mark.parametrize("size", [1, 3, 1000])
def test_required_with_no_call_is_reported_at_the_end(size):
    opts = {"tools": TOOLS, "policy": td.Policy(tool_choice="required")}
    batch = td.parse("It is sunny.", **opts)
    assert batch.calls == [] and batch.text == "It is sunny."
    (note,) = batch.diagnostics
    assert note.kind == "tool_choice" and note.detail == {
        "tool_choice": "required",
        "reason": "the reply holds no call",
    }
    events, result = streamed("It is sunny.", size, **opts)
    assert result == batch and isinstance(events[-1], td.DiagnosticEvent)
    # a call only in reasoning is not a call of the reply
    thought = '<think><tool_call>{"name": "get_time", "arguments": {}}</tool_call></think>Fine.'
    kinds = [d.kind for d in td.parse(thought, **opts).diagnostics]
    assert kinds == ["call_in_reasoning", "tool_choice"]


def test_caller_mistakes_are_policy_errors():
    with pytest.raises(td.PolicyError, match=r"tool_choice names 'get_wether'.*get_weather"):
        td.parse(TWO, tools=TOOLS, policy=td.Policy(tool_choice="get_wether"))
    with pytest.raises(td.PolicyError, match="tool_choice"):
        td.Policy(tool_choice=3)
    with pytest.raises(td.PolicyError, match="tool_choice"):
        td.Policy(tool_choice={"type": "function", "function": {}})
    # without a toolset a named choice is taken as written
    assert [c.name for c in td.parse(TWO, policy=td.Policy(tool_choice="get_time")).calls] == ["get_time"]
    # a tool literally named like a mode is named with ToolChoice
    assert td.Policy(tool_choice=td.ToolChoice(name="none")).tool_choice == td.ToolChoice(name="none")


def test_the_openai_adapter_follows_the_choice():
    policy = td.Policy(tool_choice="none")
    chat = td.openai.ChatStream(tools=TOOLS, families=["hermes"], policy=policy)
    deltas = [d for ch in TWO for d in chat.feed(ch)] + chat.close()
    assert not any("tool_calls" in d for d in deltas) and chat.finish_reason == "stop"
    assert td.openai.message(td.parse(TWO, tools=TOOLS, policy=policy)) == {
        "role": "assistant",
        "content": "Sure.  Done.",
    }


def test_the_cli_takes_the_choice_as_a_policy(tmp_path):
    reply = tmp_path / "reply.txt"
    reply.write_text(TWO, encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-m", "tooldialect", "parse", str(reply), "--policy", "tool_choice=get_time"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    got = json.loads(out.stdout)
    assert [c["name"] for c in got["calls"]] == ["get_time"]
    assert [d["kind"] for d in got["diagnostics"]] == ["tool_choice"]


def test_streams_over_one_toolset_share_a_binder_made_for_their_policy():
    """A stream takes the binder the last stream over its toolset made when the policy
    is the same object; another policy gets its own, and reads as that policy says."""
    from tooldialect.binding import binder_for

    tools = td.Toolset.from_openai([{"type": "function", "function": {"name": n, "parameters": {}}} for n in "ab"])
    only_b = td.Policy(tool_choice={"name": "b"})
    default = td.Policy()
    no_tool: dict[str, frozenset[str]] = {}
    first = binder_for(tools, default, no_tool)
    assert binder_for(tools, default, no_tool) is first
    assert binder_for(tools, default, {"hermes": frozenset({"none"})}) is not first
    other = binder_for(tools, only_b, no_tool)
    assert other is not first and other._only == "b"
    assert binder_for(tools, default, no_tool) is not other
    text = '<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": "b", "arguments": {}}</tool_call>'
    for _ in range(2):
        assert [c.name for c in td.parse(text, tools, families=["hermes"]).calls] == ["a", "b"]
        assert [c.name for c in td.parse(text, tools, families=["hermes"], policy=only_b).calls] == ["b"]
