"""The reference repetition loop (DESIGN §9): 150 DSML openers that never close, ≈244 KB."""

from __future__ import annotations

from support import check_invariants, count_calls, run_stream

import tooldialect as td

UNIT = (
    '<｜DSML｜tool_calls><｜DSML｜invoke name="apply_patch">'
    '<｜DSML｜parameter name="edits" string="false">{"edits":"'
)
PROSE = ("The patch rewrites the parser so that the stream and the batch agree on every call; " * 20)[:1600]


def loop(n: int) -> str:
    return "".join(UNIT + PROSE for _ in range(n))


def test_the_reference_input_has_the_documented_size():
    assert 240_000 <= len(loop(150)) <= 260_000


def test_nothing_is_dispatched_from_the_loop():
    result = td.parse(loop(150))
    assert result.calls == []
    assert [d.kind for d in result.diagnostics] == ["truncated"]
    assert result.diagnostics[0].detail["name"] == "apply_patch"


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
    # the only value that closes holds the whole loop: one call, whose edits are text
    assert len(result.calls) == 1
    assert result.calls[0].name == "apply_patch"
    assert isinstance(result.calls[0].arguments["edits"], str)
    assert result.calls[0].arguments["edits"].count("<｜DSML｜invoke") == 19
