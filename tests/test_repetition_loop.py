"""The reference repetition loop (DESIGN §9): 150 DSML openers that never close, ≈244 KB."""

from __future__ import annotations

from support import check_invariants, count_calls, run_stream

import tooldialect as td

UNIT = (
    '<｜DSML｜tool_calls><｜DSML｜invoke name="apply_patch"><｜DSML｜parameter name="edits" string="false">{"edits":"'
)
PROSE = ("The patch rewrites the parser so that the stream and the batch agree on every call; " * 20)[:1600]


def loop(n: int) -> str:
    return "".join(UNIT + PROSE for _ in range(n))


def test_the_reference_input_has_the_documented_size():
    assert 240_000 <= len(loop(150)) <= 260_000


def test_the_loop_is_one_diagnostic_and_nothing_is_dispatched():
    text = loop(150)
    result = td.parse(text)
    assert result.calls == [] and result.text == ""
    (diag,) = result.diagnostics
    assert diag.kind == "repetition_loop"
    assert diag.detail["count"] == 150 and diag.detail["max_repeats"] == 16
    assert diag.detail["marker"] == "<｜DSML｜tool_calls>" and diag.span == (0, len(text))


def test_sixteen_repeats_are_not_a_loop_seventeen_are():
    closed = '"}</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜tool_calls> after'
    sixteen = td.parse(loop(16) + closed)
    assert [c.name for c in sixteen.calls] == ["apply_patch"] and sixteen.text == " after"
    seventeen = td.parse(loop(17) + closed)
    assert seventeen.calls == [] and seventeen.text == " after"
    assert [(d.kind, d.detail["count"]) for d in seventeen.diagnostics] == [("repetition_loop", 17)]
    assert td.parse(loop(17) + closed, policy=td.Policy(max_repeats=17)).calls != []


def test_calls_before_the_loop_stand_and_text_after_it_is_seen():
    first = '<｜DSML｜tool_calls><｜DSML｜invoke name="shell"><｜DSML｜parameter name="command" string="true">ls</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜tool_calls>\n'
    text = "Before. " + first + loop(30) + "</｜DSML｜tool_calls> After."
    result = td.parse(text)
    assert [c.name for c in result.calls] == ["shell"]
    assert result.text == "Before. \n After."
    assert [d.kind for d in result.diagnostics] == ["repetition_loop"]
    for cuts in (range(1, len(text)), range(7, len(text), 7), [len(text) // 2]):
        check_invariants(text, run_stream(text, cuts), result)


def test_batch_work_grows_linearly():
    one = count_calls(lambda: td.parse(loop(150)))
    four = count_calls(lambda: td.parse(loop(600)))
    assert four <= 4.8 * one, (one, four)


def test_streaming_in_seven_character_deltas_is_linear_and_equals_batch():
    def stream(n: int) -> None:
        text = loop(n)
        s = td.ToolStream()
        for i in range(0, len(text), 7):
            s.feed(text[i : i + 7])
        s.close()

    quarter = count_calls(lambda: stream(37))
    whole = count_calls(lambda: stream(150))
    assert whole <= 4.8 * quarter, (quarter, whole)
    text = loop(150)
    check_invariants(text, run_stream(text, range(7, len(text), 7)), td.parse(text))


def test_a_closed_call_after_the_loop_is_not_taken_from_inside_it():
    text = loop(20) + '"}</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜tool_calls>'
    result = td.parse(text)
    # the only value that closes holds the whole loop: it is the loop, not a call
    assert result.calls == [] and result.text == ""
    assert [(d.kind, d.detail["count"]) for d in result.diagnostics] == [("repetition_loop", 20)]
    check_invariants(text, run_stream(text, range(1, len(text))), result)


def test_a_loop_found_after_a_closer_reports_the_block_from_its_start():
    """A candidate that reads on past a closer of its opener (a GLM value whose first
    `</arg_value>` is not followed by what may come next) and then meets the opener again
    and again: the loop's run begins after the closer, but what the block read before it is
    removed too, and the report covers it."""
    block = "<tool_call>write_note\n<arg_key>body</arg_key>\n<arg_value>x</arg_value>\nstray words\n</tool_call>\nafter w000 "
    text = "Checking. " + block + "<|tool_call|> w002\n <tool_call>echo/value> two </tool_call>"
    policy = td.Policy(max_repeats=1)
    result = td.parse(text, policy=policy)
    assert result.calls == [] and result.text == "Checking. "
    assert [(d.kind, d.span) for d in result.diagnostics] == [("repetition_loop", (10, len(text)))]
    for cuts in (range(1, len(text)), range(7, len(text), 7)):
        check_invariants(text, run_stream(text, cuts, policy=policy), result)
