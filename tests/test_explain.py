"""``td.explain``: the reply cut into regions (each character in exactly one), each block's
verdict, and the views the CLI renders.  Every corpus case of every family is explained."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import all_cases, budget, options, run_stream

import tooldialect as td
from tooldialect import cli
from tooldialect.explain import REGION_KINDS
from tooldialect.stream import collect

CASES = all_cases()
VISIBLE = ("text", "example")


def check_regions(text: str, ex: td.Explanation, result: td.ParseResult) -> None:
    """Every character in exactly one region; the regions agree with ``parse()``."""
    regions = ex.regions
    assert [r.start for r in regions[1:]] == [r.end for r in regions[:-1]], "regions leave a gap or overlap"
    assert (regions[0].start if regions else 0) == 0 and (regions[-1].end if regions else 0) == len(text)
    assert all(r.end > r.start and r.kind in REGION_KINDS for r in regions)
    # what parse() returns, from the regions alone
    assert "".join(text[r.start : r.end] for r in regions if r.kind in VISIBLE) == result.text
    assert "".join(text[r.start : r.end] for r in regions if r.kind == "reasoning") == result.reasoning
    assert ex.result == result
    for i, call in enumerate(result.calls):
        own = [r for r in regions if r.call == i]
        assert own, f"call {i} has no region"
        assert (own[0].start, own[-1].end) == call.span, f"call {i}: regions do not cover its span"
        # inside its span, what is not the call's own is text the model wrote there (kept visible)
        inside = [r for r in regions if call.span[0] <= r.start < call.span[1]]
        assert all(r.call == i or r.kind in VISIBLE for r in inside), f"call {i}: its span holds {inside}"
        assert {r.kind for r in own} <= {"call", "call_name", "call_arguments"}
    assert all(r.call is not None for r in regions if r.kind.startswith("call"))
    for b in ex.blocks:
        assert sum(c.won for c in b.candidates) <= 1
        assert all(0 <= k < len(result.calls) for k in b.calls)


@pytest.mark.exhaustive
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_corpus_case_is_explained_character_by_character(case):
    opts = options(case)
    result = td.parse(case.text, **opts)
    ex = td.explain(case.text, **opts)
    check_regions(case.text, ex, result)
    # every call belongs to the block that read it, and that block names its family
    for k, call in enumerate(result.calls):
        owners = [b for b in ex.blocks if k in b.calls]
        assert len(owners) <= 1
        if owners:
            assert owners[0].family == call.family and owners[0].outcome == "calls"
    # every malformed_block says where its grammar stopped, inside what it removed
    for d in result.diagnostics:
        if d.kind == "malformed_block":
            assert isinstance(d.detail.get("at"), int) and d.span[0] <= d.detail["at"] <= d.span[1], d


# -- the verdicts ------------------------------------------------------------------------------------

REPLY = (
    "<think>Let me call it.</think>Sure. "
    '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris",}}</tool_call>\n'
    '<tool_call>{"name": "get_time", "arguments": {"tz": "Europe/Par'
)


def test_a_block_names_the_family_that_read_it_and_why_the_others_lost():
    ex = td.explain(REPLY)
    first, second = ex.blocks
    assert first.outcome == "calls" and first.family == "hermes" and first.calls == [0]
    won = [c for c in first.candidates if c.won]
    assert [c.family for c in won] == ["hermes"]
    lost = {c.family: c.reason for c in first.candidates if not c.won}
    assert "qwen3_coder" in lost and "could not read the block (syntax at offset 47)" in lost["qwen3_coder"]
    assert second.outcome == "truncated" and second.calls == []
    assert [ex.result.diagnostics[i].kind for i in second.diagnostics] == ["truncated"]
    kinds = [(r.kind, REPLY[r.start : r.end]) for r in ex.regions]
    assert kinds[:4] == [
        ("furniture", "<think>"),
        ("reasoning", "Let me call it."),
        ("furniture", "</think>"),
        ("text", "Sure. "),
    ]
    assert ("call_name", "get_weather") in kinds and ("call_arguments", '{"city": "Paris",}') in kinds
    assert kinds[-1] == ("dropped", '<tool_call>{"name": "get_time", "arguments": {"tz": "Europe/Par')


BROKEN = 'Before. <tool_call>{"name": "f" "arguments": {}}</tool_call> After.'


def test_a_malformed_block_says_where_its_grammar_stopped():
    """``detail["at"]``: the first character the grammar could not take (the quote of
    ``"arguments"``, a comma missing before it), the same in batch and at every chunking;
    explain shows it, and the winner's line agrees with the verdict."""
    (d,) = td.parse(BROKEN).diagnostics
    assert d.kind == "malformed_block" and d.detail["at"] == 32 == BROKEN.index('"arguments"')
    for cuts in (range(1, len(BROKEN)), range(3, len(BROKEN), 3), [20, 33, 45]):
        streamed = collect(run_stream(BROKEN, list(cuts))).diagnostics
        assert [x.model_dump() for x in streamed] == [d.model_dump()]
    (block,) = td.explain(BROKEN).blocks
    assert block.outcome == "malformed_block" and "stopped at offset 32" in block.summary
    (won,) = [c for c in block.candidates if c.won]
    assert "offset 32" in won.reason and "found no call" not in won.reason
    # a block the grammar reads whole but that holds no call object: the winner says so
    (block,) = td.explain('<tool_call>{"city": "Paris"}</tool_call>').blocks
    (won,) = [c for c in block.candidates if c.won]
    assert block.outcome == "malformed_block" and "holds no valid call" in block.summary
    assert "holds no valid call: the payload holds no call (at offset 11)" in won.reason


def test_candidates_that_found_calls_lose_in_the_arbitration_order():
    # <|tool_call|> is Granite's marker and a leaked-pipe Hermes tag: both read a call
    text = '<|tool_call|>[{"name": "f", "arguments": {"a": 1}}]'
    ex = td.explain(text)
    (block,) = ex.blocks
    assert block.outcome == "calls"
    assert [c.family for c in block.candidates if c.won] == [ex.result.calls[0].family]
    for c in block.candidates:
        if not c.won and c.calls:
            assert "lost:" in c.reason


def test_an_opener_no_family_takes_and_an_example_are_text():
    text = 'Use `<tool_call>` tags.\n```json\n{"name": "f", "arguments": {}}\n```\nDone <tools> here'
    ex = td.explain(text)
    assert ex.result.calls == []
    kinds = {text[r.start : r.end]: r.kind for r in ex.regions}
    assert kinds["`<tool_call>`"] == "example"
    assert any(k == "example" and "```json" in s for s, k in kinds.items())
    check_regions(text, ex, td.parse(text))


def test_fast_prose_is_located():
    ex = td.explain("just words")
    assert [(r.kind, r.start, r.end) for r in ex.regions] == [("text", 0, 10)]


def test_the_stream_steps_are_the_streams_events():
    ex = td.explain(REPLY, chunk=7)
    assert ex.chunk == 7 and ex.stream[-1].delta == -1
    assert [s.start for s in ex.stream[:-1]] == list(range(0, len(REPLY), 7))
    stream = td.ToolStream()
    expected = [[e.to_json() for e in stream.feed(REPLY[i : i + 7])] for i in range(0, len(REPLY), 7)]
    expected.append([e.to_json() for e in stream.close()])
    assert [s.events for s in ex.stream] == expected


def test_model_picks_families_and_bad_options_raise():
    ex = td.explain(
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}', model="mistralai/Mistral-Small-3.2-24B-Instruct-2506"
    )
    assert ex.result.calls[0].family == "mistral"
    with pytest.raises(td.PolicyError):
        td.explain("x", chunk=0)
    with pytest.raises(td.PolicyError):
        td.explain(b"x")  # type: ignore[arg-type]


def test_the_explanation_is_json_data():
    import json

    data = td.explain(REPLY, chunk=64).to_json()
    assert json.loads(json.dumps(data)) == data
    assert {"source", "result", "regions", "blocks", "stream", "chunk"} <= set(data)


def test_explaining_does_not_change_the_plain_engine():
    """Only ``td.explain`` gives the engine an observer: a plain stream's rooms hold none, so
    each place that would tell one costs a test of None, and the recorder answers every
    hook the protocol names."""
    from tooldialect.engine import Engine
    from tooldialect.engine.observe import Observer, Recorder

    engine = td.ToolStream()._engine
    assert type(engine) is Engine
    holders = [engine, engine.sink, engine.ledger, engine.arbiter, engine.fences]
    assert all(h.observer is None for h in holders)
    hooks = {name for name in vars(Observer) if not name.startswith("_")}
    assert {"text", "step", "deciding", "accepted", "given_back"} <= hooks
    assert all(callable(getattr(Recorder, name)) for name in hooks)


# -- the command ---------------------------------------------------------------------------------------

GOLDEN = Path(__file__).resolve().parent / "explain"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
# each golden reply's extra arguments (tests/explain/NAME.reply → NAME.out)
GOLDEN_ARGS = {
    "repaired_and_cut": ["--chunk", "32"],
    "call_in_reasoning": ["--tools", str(EXAMPLES / "tools.json")],
    "fenced_example": [],
    "harmony": ["--model", "openai/gpt-oss-20b", "--chunk", "64"],
}


def _run_cli(argv: list[str], capsys, monkeypatch) -> tuple[int, str, str]:
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("TERM", "dumb")
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", sorted(GOLDEN_ARGS))
def test_cli_explain_golden(name, capsys, monkeypatch, request):
    code, out, err = _run_cli(["explain", str(GOLDEN / f"{name}.reply"), *GOLDEN_ARGS[name]], capsys, monkeypatch)
    assert code == 0 and err == ""
    path = GOLDEN / f"{name}.out"
    if request.config.getoption("--update-goldens"):
        path.write_text(out, encoding="utf-8")
    assert out == path.read_text(encoding="utf-8")


def test_cli_explain_marks_regions_without_colour(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(REPLY.encode())))
    code, out, _ = _run_cli(["explain", "-"], capsys, monkeypatch)
    assert code == 0
    assert "⟦F:<think>⟧⟦R:Let me call it.⟧⟦F:</think>⟧Sure. ⟦M:<tool_call>⟧" in out
    assert "✓ hermes: won: read 1 call" in out and "✗ qwen3_coder: could not read the block" in out
    assert 'covers "<tool_call>{\\"name\\": \\"get_time\\"' in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["explain", "/no/such/reply.txt"], "cannot read /no/such/reply.txt"),
        (["explain", "-", "--chunk", "0"], "--chunk must be at least 1"),
        (["explain", "-", "--family", "nope"], "nope"),
        (["explain", "-", "--policy", "truncated=maybe"], "invalid Policy"),
        (["explain", "-", "--html", "/no/such/dir/out.html"], "cannot write /no/such/dir/out.html"),
    ],
)
def test_cli_explain_errors_exit_2_with_one_line(argv, message, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"hello")))
    code, out, err = _run_cli(argv, capsys, monkeypatch)
    assert code == 2 and out == ""
    assert err.startswith("tooldialect: error: ") and message in err and err.count("\n") == 1


def test_cli_explain_json_and_html(tmp_path, capsys, monkeypatch):
    reply = tmp_path / "reply.txt"
    reply.write_text(REPLY, encoding="utf-8")
    code, out, _ = _run_cli(["explain", str(reply), "--json", "--chunk", "16"], capsys, monkeypatch)
    data = json.loads(out)
    assert code == 0 and data == td.explain(REPLY, chunk=16).to_json()
    page = tmp_path / "out.html"
    code, out, _ = _run_cli(["explain", str(reply), "--html", str(page), "--chunk", "16"], capsys, monkeypatch)
    assert code == 0 and out == f"wrote {page}\n"
    _check_page(page.read_text(encoding="utf-8"), td.explain(REPLY, chunk=16))


def _check_page(page: str, ex: td.Explanation) -> None:
    """Self-contained: no URL is fetched; every region kind in the legend; each call's span marked."""
    assert page.startswith("<!DOCTYPE html>")
    for fetch in ("src=", "href=", "@import", "url(", "http://", "https://"):
        assert fetch not in page, fetch
    for kind in REGION_KINDS:
        assert f'<li class="k-{kind}"' in page
    for k in range(len(ex.result.calls)):
        assert f'data-c="{k}"' in page
    assert 'id="timeline"' in page


def test_the_guide_walks_through_a_real_failure(tmp_path, capsys, monkeypatch):
    """docs/guide.md's "Why was my call not parsed?" shows what the command prints."""
    guide = (Path(__file__).resolve().parent.parent / "docs" / "guide.md").read_text(encoding="utf-8")
    section = guide.split("## Why was my call not parsed?\n", 1)[1].split("\n## ", 1)[0]
    reply = section.split("```text\n", 1)[1].split("```\n", 1)[0]
    console = section.split("```console\n", 1)[1].split("```\n", 1)[0]
    command, shown = console.split("\n", 1)
    argv = command.removeprefix("$ tooldialect ").split()
    (tmp_path / "reply.txt").write_text(reply.rstrip("\n"), encoding="utf-8")
    argv = [
        str(tmp_path / "reply.txt") if a == "reply.txt" else str(EXAMPLES / "tools.json") if a == "tools.json" else a
        for a in argv
    ]
    monkeypatch.setenv("COLUMNS", "88")
    monkeypatch.setenv("NO_COLOR", "1")
    code = cli.main(argv)
    out = capsys.readouterr().out
    assert code == 0
    assert [line.rstrip() for line in out.splitlines()] == shown.splitlines()
    assert "call_in_reasoning" in shown


def test_the_terminal_view_colours_regions_and_keeps_to_its_width():
    from rich.console import Console

    from tooldialect.explain_view import print_explanation

    ex = td.explain(REPLY * 3)
    coloured = io.StringIO()
    print_explanation(ex, Console(file=coloured, force_terminal=True, color_system="standard", width=60))
    out = coloured.getvalue()
    assert "\x1b[" in out and "⟦" not in out  # colours instead of tags
    plain = io.StringIO()
    print_explanation(ex, Console(file=plain, force_terminal=True, no_color=True, width=60))
    text = re.sub(r"\x1b\[[0-9;]*m", "", plain.getvalue())  # bold and italic stay without colour
    assert "⟦M:<tool_call>⟧" in text  # no colour: the regions are tagged
    assert max(len(line) for line in text.splitlines()) <= 60


# -- whatever the model wrote --------------------------------------------------------------------------

PIECES = [
    "<tool_call>",
    "</tool_call>",
    "<think>",
    "</think>",
    '{"name": "f", "arguments": {"a": 1}}',
    "```json\n",
    "```",
    "`",
    "\n",
    " text ",
    "<function=f>",
    "<parameter=a>",
    "</parameter>",
    "</function>",
    "[TOOL_CALLS]",
    "<|channel|>analysis<|message|>",
    "<|end|>",
    "<|start|>assistant<|channel|>final<|message|>",
    '{"a": "x',
    '<｜DSML｜invoke name="f">',
    "<function_calls>",
    '<invoke name="f">',
    "</invoke>",
    "[f(a=1)]",
]


@budget(200)
@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=6), max_size=12), st.sampled_from([None, 1, 5]))
def test_any_reply_is_explained_and_its_regions_agree_with_parse(pieces, chunk):
    text = "".join(pieces)
    ex = td.explain(text, chunk=chunk)
    check_regions(text, ex, td.parse(text))


def test_a_repetition_loop_and_a_cap_are_explained():
    loop = (
        '<｜DSML｜tool_calls><｜DSML｜invoke name="apply_patch"><｜DSML｜parameter name="edits" string="false">{"edits":"'
        + "prose " * 20
    ) * 30
    ex = td.explain(loop)
    check_regions(loop, ex, td.parse(loop))
    assert any(b.outcome == "repetition_loop" for b in ex.blocks)
    big = '<tool_call>{"name": "f", "arguments": {"a": "' + "x" * 400 + '"}}</tool_call>'
    policy = td.Policy(max_block_chars=256)
    ex = td.explain(big, policy=policy)
    check_regions(big, ex, td.parse(big, policy=policy))
    assert "limit_exceeded" in [d.kind for d in ex.result.diagnostics]


def test_prose_a_block_read_between_its_parts_is_placed_inside_the_block():
    # the stray "<" before </invoke> is visible text inside the call's span, not the
    # opener's "<" at the reading position
    text = ' \n\n<｜DSML｜invoke name="f"><</invoke></tool_call>'
    ex = td.explain(text)
    check_regions(text, ex, td.parse(text))
    stray = text.index("><</invoke>") + 1
    assert [r.kind for r in ex.regions if r.start <= stray < r.end] == ["text"]
