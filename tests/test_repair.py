"""The JSON repair ladder: what it fixes, what it refuses, that it reports, and that it is linear."""

from __future__ import annotations

import json

import pytest
from support import count_calls, sweep

import tooldialect as td
from tooldialect.repair import RepairFailed, repair_json

SENTINELS = ('<|"|>', '<|">')


@pytest.mark.parametrize(
    "text,value,repairs",
    [
        ('{"a":1}', {"a": 1}, []),
        ("{'city':\"Paris\"}", {"city": "Paris"}, ["replaced single quotes"]),
        ("{'city':'Paris'}", {"city": "Paris"}, ["replaced single quotes"]),
        ("{'it\\'s': \"x\"}", {"it's": "x"}, ["replaced single quotes"]),
        ('{"it\'s fine":1,bare:2}', {"it's fine": 1, "bare": 2}, ["quoted keys"]),
        ('{query:"from:john,to:x",n:1}', {"query": "from:john,to:x", "n": 1}, ["quoted keys"]),
        ('{toolkits:[<|">discord<|">]}', {"toolkits": ["discord"]}, ["quoted keys", "replaced quote tokens"]),
        ('{label_ids:[<|"|>INBOX<|"|>]}', {"label_ids": ["INBOX"]}, ["quoted keys", "replaced quote tokens"]),
        ('{{{"a":1}}}', {"a": 1}, ["removed redundant braces"]),
        ('```json\n{"a":1}\n```', {"a": 1}, ["removed a code fence"]),
        ('{"a": [1, 2,],}', {"a": [1, 2]}, ["removed trailing commas"]),
        ('{"cmd":"ls\n-la\t"}', {"cmd": "ls\n-la\t"}, ["escaped control characters in strings"]),
        ('{"a": True, "b": None, "c": False}', {"a": True, "b": None, "c": False}, ["replaced Python literals"]),
        ('{"a": 1, // note\n "b": /* x */ 2}', {"a": 1, "b": 2}, ["removed comments"]),
        ('{"p": "C:\\\'x"}', {"p": "C:'x"}, ["fixed escapes"]),
    ],
)
def test_ladder(text, value, repairs):
    got, done = repair_json(text, quotes=SENTINELS)
    assert got == value and done == repairs


@pytest.mark.parametrize(
    "text",
    [
        '{"truncated": "val',  # never complete a cut-off value
        "not json at all",
        '{"a": NaN}',
        '{"a": Infinity}',
        '{"a": hello}',  # a bare word value is not guessed
        '{"a": 1e999}',
        '{"a": 1 /* open comment',
        "[1, 2",  # unclosed
        '{"a": 1}}',
    ],
)
def test_refuses_what_it_cannot_read_faithfully(text):
    with pytest.raises(RepairFailed):
        repair_json(text)


def test_depth_limit_applies_after_repair():
    with pytest.raises(RepairFailed):
        repair_json("{a: " + "[" * 70 + "]" * 70 + "}", max_depth=64)


def test_repairs_are_reported_on_the_call():
    """Seed crate gap 3: a repaired call is never silent."""
    r = td.parse("<tool_call>{'name': 'shell', 'arguments': {'command': 'ls', 'all': True,},}</tool_call>")
    (call,) = r.calls
    assert call.arguments == {"command": "ls", "all": True}
    assert json.loads(call.arguments_json) == call.arguments
    (diag,) = r.diagnostics
    assert diag.kind == "arguments_repaired"
    assert diag.detail == {
        "name": "shell",
        "repairs": ["replaced single quotes", "replaced Python literals", "removed trailing commas"],
    }
    assert diag.span == call.span


def test_repaired_arguments_string():
    r = td.parse('<tool_call>{"name": "f", "arguments": "```json\\n{\\"a\\": 1,}\\n```"}</tool_call>')
    assert r.calls[0].arguments == {"a": 1}
    assert r.diagnostics[0].detail["repairs"] == ["removed a code fence", "removed trailing commas"]


def test_quote_tokens_in_a_call_body():
    text = '<|tool_call>call:GMAIL_FETCH_EMAILS{label_ids:[<|"|>INBOX<|"|>],max_results:1,verbose:true}<tool_call|>'
    r = td.parse(text)
    assert [(c.name, c.arguments) for c in r.calls] == [
        ("GMAIL_FETCH_EMAILS", {"label_ids": ["INBOX"], "max_results": 1, "verbose": True})
    ]
    assert r.text == "" and [d.kind for d in r.diagnostics] == ["arguments_repaired"]


def test_quote_tokens_split_across_deltas():
    text = '<tool_call>{"name": "f", "arguments": {"k": <|"|>v "quoted"<|"|>}}</tool_call>'
    whole = td.parse(text)
    assert whole.calls[0].arguments == {"k": 'v "quoted"'}
    for step in range(1, 8):
        s = td.ToolStream()
        evs = []
        for i in range(0, len(text), step):
            evs += s.feed(text[i : i + step])
        evs += s.close()
        ends = [e.call.arguments for e in evs if isinstance(e, td.CallEnd)]
        assert ends == [{"k": 'v "quoted"'}]


# -- linear in the payload ---------------------------------------------------------------------


def ops(fn) -> int:
    return count_calls(fn)


def _payload(kind: str, size: int) -> str:
    unit = {
        "trailing commas": "[1, 2, 3,], ",
        "single quotes": "'a string', ",
        "Python literals": "True, None, False, ",
        "unquoted keys": "",
        "comments": "1, /* c */ 2, // d\n",
        "control characters": "",
        "quote tokens": '<|"|>v<|"|>, ',
        "code fence": "1, 2, 3, ",
    }[kind]
    if kind == "unquoted keys":
        n = size // 12
        return "{" + ", ".join(f"k{i}: {i}" for i in range(n)) + "}"
    if kind == "control characters":
        return '{"s": "' + "line\n\tmore " * (size // 11) + '"}'
    body = "[" + unit * (size // len(unit) + 1) + "0]"
    if kind == "code fence":
        body = "```json\n" + body + "\n```"
    return body


@pytest.mark.parametrize(
    "kind",
    [
        "trailing commas",
        "single quotes",
        "Python literals",
        "unquoted keys",
        "comments",
        "control characters",
        "quote tokens",
        "code fence",
    ],
)
def test_every_repair_is_linear_up_to_a_megabyte(kind):
    size = sweep(1_000_000, 250_000)  # a quarter of a megabyte in the quick tier
    small = _payload(kind, size // 4)
    large = _payload(kind, size)
    assert len(large) >= size
    value, repairs = repair_json(large, quotes=SENTINELS, max_depth=64)
    assert repairs and value is not None
    ratio = ops(lambda: repair_json(large, quotes=SENTINELS)) / ops(lambda: repair_json(small, quotes=SENTINELS))
    assert ratio < 4.8, ratio


def test_a_megabyte_repairable_payload_through_parse_is_linear():
    def text(n: int) -> str:
        return (
            "<tool_call>{'name': 'f', 'arguments': {" + ", ".join(f"'k{i}': True" for i in range(n)) + "}}</tool_call>"
        )

    small, large = text(10_000), text(40_000)
    assert len(large) > 500_000
    assert td.parse(large).calls[0].arguments["k39999"] is True
    ratio = ops(lambda: td.parse(large)) / ops(lambda: td.parse(small))
    assert ratio < 4.8, ratio
