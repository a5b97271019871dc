"""td.transcript: the entries, and pair_tool_cycles dropping incomplete cycles by id
coverage, symmetrically (DESIGN §8)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tooldialect as td
from tooldialect.transcript import AssistantCall, AssistantToolCalls, Chat, ToolResults, from_openai, pair_tool_cycles


def calls(*ids: str, text: str | None = None) -> AssistantToolCalls:
    return AssistantToolCalls(
        content=text, tool_calls=[AssistantCall(id=i, name="get_weather", arguments="{}") for i in ids]
    )


def results(*ids: str) -> ToolResults:
    return ToolResults([td.ToolResult(i, "get_weather", f"out {i}") for i in ids])


USER = Chat("user", "weather?")
LATER = Chat("user", "and tomorrow?")


def test_orphan_calls_are_dropped():
    assert pair_tool_cycles([USER, calls("call_1"), LATER]) == [USER, LATER]
    assert pair_tool_cycles([USER, calls("call_1")]) == [USER]  # the transcript ends mid-cycle


def test_orphan_results_are_dropped():
    assert pair_tool_cycles([results("call_1")]) == []
    assert pair_tool_cycles([USER, results("call_1"), LATER]) == [USER, LATER]
    # results separated from their calls by a chat message answer nothing the model sees next
    assert pair_tool_cycles([calls("a"), USER, results("a")]) == [USER]


def test_partial_coverage_drops_both_halves():
    assert pair_tool_cycles([USER, calls("call_1", "call_2"), results("call_1")]) == [USER]
    assert pair_tool_cycles([calls("call_1"), results("call_1", "call_2")]) == []  # an extra answer
    assert pair_tool_cycles([calls("call_1"), results("call_9")]) == []  # adjacency is not coverage


def test_ids_match_as_sets():
    cycle = [calls("a", "b", "c"), results("c", "a", "b")]
    assert pair_tool_cycles(cycle) == cycle
    split = [calls("a", "b"), results("b"), results("a")]  # answered over consecutive entries
    assert pair_tool_cycles(split) == split
    twice = [calls("a", "a"), results("a")]  # duplicates collapse
    assert pair_tool_cycles(twice) == twice


def test_already_paired_transcripts_come_back_unchanged():
    transcript = [
        Chat("system", "be brief"),
        USER,
        calls("call_1", text="checking"),
        results("call_1"),
        Chat("assistant", "18C in Paris."),
        LATER,
        calls("call_2", "call_3"),
        results("call_2", "call_3"),
    ]
    got = pair_tool_cycles(transcript)
    assert got == transcript
    assert all(a is b for a, b in zip(got, transcript))
    assert got is not transcript  # a new list; the caller's is untouched


def test_only_the_broken_cycle_goes():
    good = [calls("a"), results("a")]
    bad = [calls("b", "c"), results("b")]
    assert pair_tool_cycles([USER, *bad, *good, LATER]) == [USER, *good, LATER]
    assert pair_tool_cycles([USER, *good, *bad, LATER]) == [USER, *good, LATER]


def test_entries_check_what_they_hold():
    with pytest.raises(td.PolicyError, match="tool_calls"):
        AssistantToolCalls(tool_calls=[])
    with pytest.raises(td.PolicyError, match="AssistantCall"):
        AssistantToolCalls(tool_calls=[{"id": "a", "name": "f", "arguments": "{}"}])  # type: ignore[list-item]
    with pytest.raises(td.PolicyError, match="results"):
        ToolResults([])
    with pytest.raises(td.PolicyError, match="ToolResult"):
        ToolResults(["18C"])  # type: ignore[list-item]
    with pytest.raises(td.PolicyError, match="role"):
        Chat("tool", "x")
    with pytest.raises(td.PolicyError, match="extra may not set content"):
        Chat("user", "x", extra={"content": "y"})
    with pytest.raises(td.PolicyError, match="id"):
        AssistantCall(id="", name="f")
    with pytest.raises(td.PolicyError, match="arguments"):
        AssistantCall(id="a", name="f", arguments={"x": 1})  # type: ignore[arg-type]
    with pytest.raises(td.PolicyError, match="entry #1"):
        pair_tool_cycles([USER, {"role": "user", "content": "hi"}])  # type: ignore[list-item]
    with pytest.raises(td.PolicyError):
        pair_tool_cycles("not a transcript")  # type: ignore[arg-type]


def test_a_parsed_call_becomes_a_record_byte_for_byte():
    reply = '<tool_call>{"name": "get_weather", "arguments": {"unit": "c",  "city": "Paris"}}</tool_call>'
    (call,) = td.parse(reply).calls
    record = AssistantCall.from_call(call, id="call_7", extra_content={"google": {"thought_signature": "s1"}})
    assert record.arguments == call.arguments_json == '{"unit": "c",  "city": "Paris"}'
    assert (record.id, record.name) == ("call_7", "get_weather")
    with pytest.raises(td.PolicyError, match="id"):
        AssistantCall.from_call(call)  # td.parse never mints ids
    kimi = td.parse(
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{}"
        "<|tool_call_end|><|tool_calls_section_end|>"
    ).calls[0]
    assert AssistantCall.from_call(kimi).id == "functions.f:0"


# -- properties --------------------------------------------------------------------------------

IDS = st.sampled_from(["a", "b", "c", "d"])
ENTRIES = st.one_of(
    st.sampled_from([USER, LATER, Chat("assistant", "ok")]),
    st.lists(IDS, min_size=1, max_size=3).map(lambda ids: calls(*ids)),
    st.lists(IDS, min_size=1, max_size=3).map(lambda ids: results(*ids)),
)


@given(st.lists(ENTRIES, max_size=12))
def test_what_is_kept_is_complete_and_nothing_complete_is_lost(transcript):
    kept = pair_tool_cycles(transcript)
    # a subsequence of the input, every Chat kept
    it = iter(transcript)
    assert all(any(e is x for x in it) for e in kept)
    assert [e for e in kept if isinstance(e, Chat)] == [e for e in transcript if isinstance(e, Chat)]
    # every kept cycle is complete: calls, then results covering exactly their ids
    i = 0
    while i < len(kept):
        if isinstance(kept[i], ToolResults):
            pytest.fail("results kept without their calls right before them")
        if isinstance(kept[i], AssistantToolCalls):
            j = i + 1
            answered: set[str] = set()
            while j < len(kept) and isinstance(kept[j], ToolResults):
                answered |= kept[j].ids
                j += 1
            assert answered == set(kept[i].ids)
            i = j
        else:
            i += 1
    assert pair_tool_cycles(kept) == kept  # nothing left to repair
    # every complete cycle of the input survives
    for i, entry in enumerate(transcript):
        if isinstance(entry, AssistantToolCalls):
            j = i + 1
            while j < len(transcript) and isinstance(transcript[j], ToolResults):
                j += 1
            if j > i + 1 and set().union(*(r.ids for r in transcript[i + 1 : j])) == set(entry.ids):
                assert any(entry is e for e in kept)


def test_openai_messages_read_as_entries():
    got = from_openai(
        [
            {"role": "user", "content": [{"type": "text", "text": "Weather "}, {"type": "text", "text": "in Paris?"}]},
            {
                "role": "assistant",
                "content": None,
                "reasoning_content": "look it up",
                "tool_calls": [
                    {"id": "c1", "function": {"name": "get_weather", "arguments": {"city": "Paris", "a": 1}}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "18C"},
            {"role": "assistant", "content": "It is 18C."},
        ]
    )
    assert got[0] == Chat("user", "Weather in Paris?")
    assert got[1].reasoning_content == "look it up" and got[1].content is None
    assert [(c.id, c.name, c.arguments) for c in got[1].tool_calls] == [("c1", "get_weather", '{"a":1,"city":"Paris"}')]
    assert [(r.tool_call_id, r.name, r.output) for r in got[2].results] == [("c1", "get_weather", "18C")]
    assert got[3] == Chat("assistant", "It is 18C.")
    with pytest.raises(td.PolicyError, match="message #0"):
        from_openai(["hi"])
    with pytest.raises(td.PolicyError, match="not text"):
        from_openai([{"role": "user", "content": 3}])


@pytest.mark.parametrize(
    ("tool_calls", "says"),
    [
        (["x"], "tool call #0 is str, not an object"),
        ([{"id": "c1", "function": {"name": "f", "arguments": "{}"}}, None], "tool call #1 is NoneType, not an object"),
        ([{"id": "c1", "function": "f"}], "tool call #0's function is str, not an object"),
        ("x", "tool_calls is str, not a list of tool calls"),
        ({"id": "c1"}, "tool_calls is dict, not a list of tool calls"),
        (3, "tool_calls is int, not a list of tool calls"),
    ],
)
def test_a_tool_call_that_is_not_an_object_is_a_policy_error_saying_what_one_is(tool_calls, says):
    message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
    with pytest.raises(td.PolicyError, match=re.escape(f"message #1: {says}")) as err:
        from_openai([{"role": "user", "content": "hi"}, message])
    assert '"function": {"name": …, "arguments": …}' in str(err.value)
