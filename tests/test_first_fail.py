"""Candidates that fail at their first body token fail cheaply, and still decide what they did.

With every family on, an opener several grammars share (``<tool_call>`` opens Hermes,
Qwen3-Coder, GLM, GLM lines, P-Format and code calls) makes a candidate per family, and all
but one fail at the body's first token.  Their failure is cheap: where the parser accepts
nothing that can begin with the character at hand, ``Cursor._read_token`` fails the
candidate without a longest-match search, and ``Cursor.skip_ignored`` tries an ignored
token only where it can begin.  The candidates are still made and kept: a block no family
reads is decided by one of them (reported for the best-ranked, as before), so their
failures must read the same at every chunking.
"""

from __future__ import annotations

from typing import Any

import pytest
from contract import CHUNKINGS, cuts
from support import run_stream, stream_problem

import tooldialect as td
from tooldialect.engine import cursor as cursor_module
from tooldialect.engine.cand import Cand
from tooldialect.engine.cursor import Cursor

HERMES = 'Hi <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}}
#: With a toolset, the registry-gated bodies (P-Format, code calls) are candidates too.
TOOLS = td.Toolset.from_openai([{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}])


def _count(mp: pytest.MonkeyPatch, owner: Any, name: str, seen: list[tuple[Any, ...]]) -> None:
    """Record the arguments of every call of ``owner.name``."""
    real = getattr(owner, name)
    if isinstance(owner, type):

        def spy(self: Any, *args: Any) -> Any:
            seen.append(args)
            return real(self, *args)

    else:

        def spy(*args: Any) -> Any:  # type: ignore[misc]
            seen.append(args)
            return real(*args)

    mp.setattr(owner, name, spy)


def test_a_candidate_that_cannot_begin_its_body_is_not_searched_for_a_token():
    """A Hermes block with every family on: the families whose parser accepts nothing that
    begins with ``{`` fail there with no longest-match search (it is never asked with no
    terminal to try), and the block is Hermes's."""
    asked: list[tuple[Any, ...]] = []
    failed: list[tuple[Any, ...]] = []
    with pytest.MonkeyPatch.context() as mp:
        _count(mp, Cursor, "longest", asked)
        _count(mp, Cand, "fail", failed)
        result = td.parse(HERMES, tools=TOOLS)
    assert [(c.name, c.family) for c in result.calls] == [("get_weather", "hermes")]
    assert not result.diagnostics
    assert asked and all(terms for terms, _win, _lp in asked)
    # the five other families sharing the opener were still made, and failed at "{"
    assert [args[2] for args in failed].count("unexpected '{'") == 5


def test_an_ignored_token_is_tried_only_where_it_can_begin():
    """Skipping what a grammar ignores asks whether an ignored token may still be arriving
    only where one can begin (code calls ignore comments beginning with ``#`` and ``/``)."""
    asked: list[tuple[Any, ...]] = []
    with pytest.MonkeyPatch.context() as mp:
        _count(mp, cursor_module, "resumed", asked)
        td.parse(HERMES, tools=TOOLS)
        td.parse(HERMES.replace("\n{", "\n  # note\n{"), tools=TOOLS)
    for ig, text, pos in asked:
        assert pos >= len(text) or ig.pattern.first is None or text[pos] in ig.pattern.first


#: Blocks opened by a marker several families share, with every family on, and what they
#: read: (text, text left, calls as (name, family), diagnostics as (kind, family, reason)).
SHARED = [
    # no family reads the body: the best-ranked candidate that failed reports it
    ("<tool_call>\n@@@\n</tool_call>", "", [], [("malformed_block", "qwen3_coder", "unexpected '@'")]),
    # two families could read a name first (GLM, P-Format, code calls): GLM's arguments decide
    (
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>",
        "",
        [("get_weather", "glm")],
        [],
    ),
    (HERMES, "Hi ", [("get_weather", "hermes")], []),
    # cut off after the opener, and inside the payload
    ("<tool_call>\n", "", [], [("truncated", "qwen3_coder", "end of text")]),
    ('<tool_call>\n{"na', "", [], [("truncated", "hermes", "payload cut off by the end of the text")]),
]


@pytest.mark.parametrize(("text", "left", "calls", "diags"), SHARED)
def test_a_shared_opener_reads_the_same_at_every_chunking(text, left, calls, diags):
    result = td.parse(text)
    assert result.text == left
    assert [(c.name, c.family) for c in result.calls] == calls
    assert [(d.kind, d.family, d.detail.get("reason")) for d in result.diagnostics] == diags
    for chunking in CHUNKINGS:
        events = run_stream(text, cuts(text, chunking, seed=len(text)))
        problem = stream_problem(text, events, result)
        assert problem is None, f"{chunking}: {problem}"


# -- a stream's string run once the other candidates have failed ---------------------------------

_LONG = "Paris, then Lyon and Marseille; " * 6
#: Values streamed delta by delta in blocks several families open, every family on, and
#: whether every other candidate fails where the body begins (else the block announces
#: nothing early, and the run is not taken).
_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "'
RUNS = [
    (f'Sure.\n{_CALL}{_LONG}"}}}}\n</tool_call>\nDone.', True),
    (_CALL + 'a \\"b\\" \\\\n \\u00e9 ' + _LONG + '"}}\n</tool_call>', True),
    (f'{_CALL}{_LONG} <tool_call> {_LONG}"}}}}\n</tool_call>', True),
    (_CALL + _LONG, True),
    (f"<tool_call>\n<function=get_weather>\n<parameter=city>\n{_LONG}\n</parameter>\n</function>\n</tool_call>", True),
    # GLM, GLM lines, P-Format and code calls all read the name first
    (f"<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>{_LONG}</arg_value>\n</tool_call>", False),
]


def _events(text: str, chunking: str) -> list[list[Any]]:
    events = run_stream(text, cuts(text, chunking, seed=len(text)), tools=TOOLS)
    return [[type(e).__name__, e.model_dump()] for e in events]


@pytest.mark.parametrize(("text", "run"), RUNS)
def test_the_leader_reads_a_value_run_once_the_others_have_failed(text, run):
    """With every family on, the candidates that failed at the body's first token no longer
    keep the one left from taking a delta that only continues its value in one step
    (``Cursor.string_run``), and the events are those of reading each delta."""
    taken: list[bool] = []
    real = Cursor.string_run

    def spy(self: Any, b: Any, delta: str) -> bool:
        got = real(self, b, delta)
        taken.append(got and len(b.cands) > 1)
        return got

    for chunking in ("chars", "threes", "random"):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(Cursor, "string_run", spy)
            fast = _events(text, chunking)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(Cursor, "string_run", lambda self, b, delta: False)
            slow = _events(text, chunking)
        assert fast == slow, chunking
    assert any(taken) is run  # taken in a block of several candidates


def test_a_failure_at_an_unexpected_character_names_it_whatever_was_met_before() -> None:
    """The reason a candidate fails at a character is kept per ASCII character (every
    block of a shared opener fails so); a character outside ASCII is named too, and kept
    nowhere."""
    from tooldialect.engine import cursor

    text = "<tool_call>? one</tool_call> <tool_call>é two</tool_call> <tool_call>? three</tool_call>"
    reasons = [d.detail["reason"] for d in td.parse(text, families=["hermes"]).diagnostics]
    assert reasons == ["unexpected '?'", "unexpected 'é'", "unexpected '?'"]
    assert all(ch < "\x80" for ch in cursor._UNEXPECTED)


@pytest.mark.parametrize(
    ("text", "made"),
    [
        ("The build finished.\nMore prose.", []),  # no first line a reply-start grammar reads
        ('get_weather\n{"city": "Paris"}', ["functionary"]),  # Functionary v3.2's NAME\n{…}
        ("get_weath", ["functionary"]),  # (a name that may still grow: read as the text comes)
    ],
)
def test_a_reply_start_candidate_is_made_where_its_first_token_may_match(monkeypatch, text, made):
    """A reply-anchored grammar gets a candidate where the reply's first token may be one of
    its first terminals, not wherever its first character could begin one: a reply that
    opens with prose makes none. The streams read it as before at every chunking."""
    from tooldialect.engine.shared import Shared

    got: list[str] = []
    original = Shared.cand

    def counted(self, g, rule, pos, soft):
        if rule == "reply":
            got.append(g.name)
        return original(self, g, rule, pos, soft)

    monkeypatch.setattr(Shared, "cand", counted)
    result = td.parse(text, tools=TOOLS)
    assert [name for name in got if name == "functionary"] == made
    monkeypatch.undo()
    assert [c.name for c in result.calls] == (["get_weather"] if "{" in text else [])
    for chunking in CHUNKINGS:
        events = run_stream(text, cuts(text, chunking, seed=len(text)), tools=TOOLS)
        assert stream_problem(text, events, result) is None, chunking
