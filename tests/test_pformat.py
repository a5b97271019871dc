"""P-Format slots and GLM lines, and the engine pieces the registry-gated bodies needed:
backslash escapes in raw text values, the backtick string scanner, the shared literal
reader's Python/TypeScript split, and typing of literal values."""

from __future__ import annotations

import pytest
from support import check_invariants, cuts_for, run_stream

import tooldialect as td
from tooldialect.coerce import type_literal
from tooldialect.families.pformat import unescape
from tooldialect.jsonscan import CUT, DONE
from tooldialect.strscan import StringScanner

TOOLS = td.Toolset(
    [
        td.Tool(
            name="get_weather",
            parameters={
                "type": "object",
                "properties": {"location": {"type": "string"}, "unit": {"type": "string"}},
                "required": ["location"],
            },
        ),
        td.Tool(name="shell", parameters={"type": "object", "properties": {"command": {"type": "string"}}}),
        td.Tool(
            name="math",
            parameters={
                "type": "object",
                "properties": {"x": {"type": "integer"}, "y": {"type": "number"}, "verbose": {"type": "boolean"}},
            },
        ),
        td.Tool(name="ping", parameters={"type": "object", "properties": {}}),
    ]
)


def parse_checked(text: str, **opts) -> td.ParseResult:
    opts.setdefault("tools", TOOLS)
    result = td.parse(text, **opts)
    for mode in ("whole", "chars", "random"):
        check_invariants(text, run_stream(text, cuts_for(text, mode), **opts), result)
    return result


def args(body: str) -> dict | None:
    r = parse_checked(f"<tool_call>{body}</tool_call>")
    got = [c for c in r.calls if c.family == "pformat"]
    return got[0].arguments if got else None


# -- P-Format ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body,want",
    [
        ("get_weather[0|London|1|metric]", {"location": "London", "unit": "metric"}),
        ("ping[]", {}),
        ("get_weather[]", {}),
        ("shell[0|ls -la /tmp]", {"command": "ls -la /tmp"}),
        ("shell[0|cat foo \\| grep bar]", {"command": "cat foo | grep bar"}),
        ("shell[0|echo \\]done\\]]", {"command": "echo ]done]"}),
        ("shell[0|C:\\\\Users\\\\bob]", {"command": "C:\\Users\\bob"}),
        ("shell[0|a\\nb\\tc]", {"command": "a\\nb\\tc"}),
        ("math[0|true|1|42|2|2.75]", {"verbose": True, "x": 42, "y": 2.75}),
        ("get_weather[0|London|1|]", {"location": "London"}),
        ("get_weather[0|London|0|Berlin]", {"location": "Berlin"}),
        ("get_weather[0|London|0|]", {}),
        ("get_weather[0|London|1|metric|0|]", {"unit": "metric"}),
        ("shell[0|  two  ]", {"command": "  two  "}),
        ("shell[0|a | b]", {"command": "a | b"}),
    ],
)
def test_seed_vectors(body, want):
    assert args(body) == want


@pytest.mark.parametrize(
    "body",
    [
        "nope[arg]",
        "get_weather London metric",
        "get_weather[0|London|1|metric] // comment",
        "get_weather[0|London|1|metric|2|extra]",
        "get_weather[|||from:alice]",
        "get_weather[London|metric]",
        "get_weather[0|London|1]",
        "get_weather[location|London]",
        "get_weather[+0|London]",
    ],
)
def test_refused_bodies_return_no_call(body):
    r = parse_checked(f"<tool_call>{body}</tool_call>")
    assert r.calls == [] and r.diagnostics and r.text == ""


def test_an_escape_split_between_deltas_is_read_whole():
    text = "<tool_call>shell[0|a\\|1|b\\\\|c\\]]</tool_call>"
    r = parse_checked(text)  # every cut, one character at a time included
    assert [c.arguments for c in r.calls] == [{"command": "a|1|b\\|c]"}]


def test_unescape():
    assert unescape("a\\|b\\]c\\\\d\\e") == "a|b]c\\d\\e"


def test_no_toolset_no_pformat():
    r = td.parse("<tool_call>get_weather[0|London]</tool_call>")
    assert r.calls == [] and all(d.family != "pformat" for d in r.diagnostics)


def test_cut_off_keeps_nothing_whatever_the_policy():
    for policy in ("drop", "keep"):
        r = parse_checked("<tool_call>get_weather[0|Lon", policy=td.Policy(truncated=policy))
        assert r.calls == [] and [d.kind for d in r.diagnostics] == ["truncated"]
        assert r.diagnostics[0].detail["name"] == "get_weather"


# -- GLM lines ------------------------------------------------------------------------------------


def test_glm_lines_read_only_offered_tools():
    r = parse_checked("<tool_call>\nshell/command>ls -la\nmath/x>42\n</tool_call>")
    assert [(c.name, c.arguments, c.family) for c in r.calls] == [
        ("shell", {"command": "ls -la"}, "glm_lines"),
        ("math", {"x": 42}, "glm_lines"),
    ]
    # on its own line, outside a tag, an offered tool's line is a call too (the fallback
    # for replies with no other call); a line naming no offered tool stays text
    prose = "yes/no>maybe\nshell/command>ls\n"
    got = parse_checked(prose)
    assert [(c.name, c.arguments) for c in got.calls] == [("shell", {"command": "ls"})]
    assert got.text == "yes/no>maybe\n"
    assert parse_checked("<tool_call>yes/no>maybe</tool_call>").calls == []


def test_glm_lines_are_all_or_nothing():
    r = parse_checked("<tool_call>\nshell/command>ls\nnot a line\n</tool_call>")
    assert r.calls == [] and [d.kind for d in r.diagnostics] == ["malformed_block"]


# -- engine pieces ----------------------------------------------------------------------------------


@pytest.mark.parametrize("text,end", [("`a` x", 3), ("`` x", 2), ("```", 2), ("`a\\`b` x", 6), ("`a\nb`", 5)])
def test_backtick_scanner_is_never_tripled(text, end):
    assert StringScanner().scan(text, 0, True) == (DONE, end)
    for cut in range(1, len(text)):
        sc = StringScanner()
        status, pos = sc.scan(text[:cut], 0, False)
        if status == DONE:
            assert pos == end
            continue
        assert sc.scan(text, pos, True) == (DONE, end)
    assert StringScanner().scan("`abc", 0, True)[0] == CUT


def test_pythonic_refuses_typescript_spellings_through_the_shared_reader():
    r = td.parse("[f(x=`a`), g(y=1), h($z=1)]")
    assert [c.name for c in r.calls] == ["g"]
    reasons = [d.detail["reason"] for d in r.diagnostics]
    assert "TypeScript" in reasons[0] and "not a Python identifier" in reasons[1]


def test_type_literal():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}}}
    assert type_literal("5", {"type": "integer"}) == 5
    assert type_literal("5", {"type": ["string", "integer"]}) == "5"  # a string is admitted
    assert type_literal("yes", {"type": "boolean"}) == "yes"
    assert type_literal({"n": "7", "s": "7"}, schema) == {"n": 7, "s": "7"}
    assert type_literal(5, {"type": "string"}) == 5  # not retyped: validation reports it
    assert type_literal("x", None) == "x"
