"""GLM lines on their own: a visible ``TOOL/PARAM>VALUE`` line, outside any block, read by
the ``line`` rule of ``grammars/glm_lines.lark`` while the reply has returned no call of
another family (decisions.md, "GLM lines on their own")."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import budget

import tooldialect as td
from tooldialect import CallEnd, CallStart, TextDelta
from tooldialect.corpus import cuts_for, run_stream, stream_problem
from tooldialect.grammar import compile_grammar, read_header

TOOLS = td.Toolset(
    [
        td.Tool(name="shell", parameters={"type": "object", "properties": {"command": {"type": "string"}}}),
        td.Tool(name="custom", parameters={"type": "object", "properties": {"answer": {"type": "integer"}}}),
        td.Tool(name="echo", parameters={"type": "object", "properties": {"value": {"type": "string"}}}),
    ]
)


def _calls(result: td.ParseResult) -> list[tuple[str, dict]]:
    return [(c.name, c.arguments) for c in result.calls]


def test_crlf_lines_leave_the_text_with_their_line_break():
    got = td.parse("Running:\r\nshell/command>ls -la\r\nDone.", tools=TOOLS)
    assert _calls(got) == [("shell", {"command": "ls -la"})]
    assert got.text == "Running:\r\nDone."
    assert [c.family for c in got.calls] == ["glm_lines"]


def test_a_line_is_decided_when_it_ends():
    """Nothing of a line that may be a call is sent before its line break (or the end)."""
    stream = td.ToolStream(tools=TOOLS)
    before = stream.feed("Let me look.\nshell/command>ls")
    assert "".join(e.text for e in before if isinstance(e, TextDelta)) == "Let me look.\n"
    assert not any(isinstance(e, CallStart) for e in before)
    after = stream.feed("\nDone")
    assert [e.call.name for e in after if isinstance(e, CallEnd)] == ["shell"]  # decided at its line break
    rest = stream.close()
    assert "".join(e.text for e in after + rest if isinstance(e, TextDelta)) == "Done"


def test_prose_lines_are_not_held():
    """A line whose first word is not an offered tool goes out as it arrives."""
    stream = td.ToolStream(tools=TOOLS)
    events = stream.feed("Hello there\nshells are ")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello there\nshells are "


def test_a_line_no_tool_name_begins_is_prose_at_its_first_character():
    """Where prose stops at a line start (the delta holds a marker's first character), a
    line whose first character begins no offered name goes out at once, even while its
    first word is still arriving: no name it could grow into is offered."""
    stream = td.ToolStream(tools=TOOLS)
    events = stream.feed("Look <b>here</b>\nHello")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Look <b>here</b>\nHello"
    # a first character some name begins with still waits for the word
    stream = td.ToolStream(tools=TOOLS)
    events = stream.feed("Look <b>here</b>\nsh")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Look <b>here</b>\n"


def test_lines_no_tool_name_begins_go_out_without_the_reading_loop(monkeypatch):
    """A delta with nothing a marker begins with is text at once, also with lines read
    against a toolset, when no line in it may begin a call: a line whose first word begins
    with a character no offered name begins with is prose, known from that character."""
    from tooldialect.engine.core import Engine

    runs = 0
    real = Engine._run

    def counted(self: Engine) -> None:
        nonlocal runs
        runs += 1
        real(self)

    monkeypatch.setattr(Engine, "_run", counted)
    stream = td.ToolStream(tools=TOOLS)
    deltas = ["Here is the plan:"] + [f"\n  return value{i} + 1;" for i in range(50)]
    text = "".join(ev.text for d in deltas for ev in stream.feed(d) if isinstance(ev, TextDelta))
    assert text == "".join(deltas)
    assert runs <= 1  # (the reply's first characters are looked at once)
    # a line that may begin a call still waits for its first word
    assert stream.feed("\n  sh") == [TextDelta(text="\n")]
    assert runs > 1
    got = stream.feed("ell/command>ls\n") + stream.close()
    assert [e.call.name for e in got if isinstance(e, CallEnd)] == ["shell"]


def test_the_call_span_is_the_line():
    text = "a\nshell/command>ls\nb"
    (call,) = td.parse(text, tools=TOOLS).calls
    assert text[call.span[0] : call.span[1]].startswith("shell/command>ls")


def test_lines_are_off_with_families_that_exclude_them():
    got = td.parse("shell/command>ls", tools=TOOLS, families=["hermes"])
    assert got.calls == [] and got.text == "shell/command>ls"


def test_a_line_rule_must_be_gated(tmp_path: Path):
    path = tmp_path / "loose_lines.lark"
    path.write_text(
        "// family: loose_lines\n// title: t\n// models: *\n// checked against: nothing\n"
        '%import ._tagged (BARE_NAME)\n%import ._json (JSON_OBJECT)\nline: name "/" arguments\n'
        'name: BARE_NAME\narguments: JSON_OBJECT\nstart: "<<x>>" line\n',
        encoding="utf-8",
    )
    grammars = Path(td.__file__).parent / "grammars"
    if not grammars.is_dir():
        grammars = Path(__file__).resolve().parents[1] / "grammars"
    with pytest.raises(td.GrammarError, match="gated: toolset"):
        compile_grammar(path, read_header(path.read_text(encoding="utf-8"), "loose_lines"), grammars)


# -- the seed reference's vectors (shared/reference, §4.8) ------------------------------------------


def test_seed_vector_a_whole_reply_line():
    """The seed's vector: a line at the very end of the text, with no line break after it,
    is a call — the end of the text ends the line (decisions.md 166), in batch and in a
    stream, where it is decided at ``close()``."""
    for text in ("shell/command>ls -la\n", "shell/command>ls -la"):
        got = td.parse(text, tools=TOOLS)
        assert got.text == "" and _calls(got) == [("shell", {"command": "ls -la"})] and got.diagnostics == []
    stream = td.ToolStream(tools=TOOLS)
    fed = stream.feed("Running.\nshell/command>ls -la")
    assert not any(isinstance(e, CallStart) for e in fed)  # the line may still go on
    closed = stream.close()
    assert [(e.call.name, e.call.arguments) for e in closed if isinstance(e, CallEnd)] == [
        ("shell", {"command": "ls -la"})
    ]


def test_a_line_cut_inside_a_marker_or_before_its_value_is_truncated():
    """The end of the text completes a line only where it could end it: not right after the
    ``>`` (no value written yet), nor inside a stop token that would have ended the line."""
    for text in ("shell/command>", "shell/command>ls<|im_e", "shell/command>ls\r"):
        got = td.parse(text, tools=TOOLS)
        assert got.calls == [] and [d.kind for d in got.diagnostics] == ["truncated"], text


def test_a_stop_token_ends_a_line():
    """A stop token the server left right after the last line ends it (a stop token after
    calls is furniture): it is not part of the value."""
    for text in (
        "shell/command>ls<|im_end|>",
        "shell/command>ls<|eot_id|>",
        "<tool_call>shell/command>ls<|endoftext|>",
    ):
        got = td.parse(text, tools=TOOLS)
        assert _calls(got) == [("shell", {"command": "ls"})] and got.text == "" and got.diagnostics == [], text


def test_seed_vector_mixed_lines():
    """The seed drops ``shell/url>not-a-url`` (its curl rewrite refuses it); here the line
    is the call the model wrote, as written (schema validation judges the arguments)."""
    text = (
        '\ncustom/{"answer":42}\nshell/url>not-a-url\nshell/command>https://example.com/has space\n'
        "shell/command>echo hi\nnot a url"
    )
    got = td.parse(text, tools=TOOLS)
    assert _calls(got) == [
        ("custom", {"answer": 42}),
        ("shell", {"url": "not-a-url"}),
        ("shell", {"command": "https://example.com/has space"}),
        ("shell", {"command": "echo hi"}),
    ]
    assert got.text == "\nnot a url"


def test_seed_vector_aliases_are_not_applied():
    """The seed maps browser_open to shell with a curl command and adds method GET to
    http_request; registry-gated lines bind the offered name exactly and never invent
    arguments."""
    tools = td.Toolset([td.Tool(name="browser_open"), td.Tool(name="http_request")])
    text = "browser_open/url>https://example.com\nhttp_request/url>https://api.example.com\nplain text\nhttps://rust-lang.org"
    got = td.parse(text, tools=tools)
    assert _calls(got) == [
        ("browser_open", {"url": "https://example.com"}),
        ("http_request", {"url": "https://api.example.com"}),
    ]
    assert got.text == "plain text\nhttps://rust-lang.org"


def test_seed_vector_fenced_line_is_no_markup():
    assert td.parse("```text\nshell/command>ls\n```", tools=TOOLS).calls == []


# -- every chunking reads the same -----------------------------------------------------------------

PIECES = (
    "shell/command>ls -la",
    "echo/value>  spaced ",
    'custom/{"answer": 42}',
    'custom/{"answer": 4',
    "shell/bin is a folder",
    "yes/no>maybe",
    "  shell/command>pwd",
    "Some prose.",
    "",
    "```text\nshell/command>ls\n```",
    "`echo/value>x`",
    '<tool_call>{"name": "echo", "arguments": {"value": "x"}}</tool_call>',
    "<tool_call>\nshell/command>make\n</tool_call>",
    "<think>shell/command>ls</think>",
    "shell/",
    "shell",
    '    <div className="row">',
    "  return echo;",
    "\t  s",
    "   ",
)


@budget(300)
@given(
    lines=st.lists(st.sampled_from(PIECES), min_size=1, max_size=6),
    crlf=st.booleans(),
    seed=st.integers(0, 2**16),
    mode=st.sampled_from(("chars", "random")),
)
def test_lines_read_the_same_at_every_chunking(lines, crlf, seed, mode):
    text = ("\r\n" if crlf else "\n").join(lines)
    batch = td.parse(text, tools=TOOLS)
    for cuts in ([], cuts_for(text, mode, seed)):
        problem = stream_problem(text, run_stream(text, cuts, tools=TOOLS), batch)
        assert problem is None, f"{problem}: {text!r} cut at {cuts}"
