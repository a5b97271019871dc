"""Python calls: the string scanner, the strict literal reader, depth limits, long strings,
shared markers and the engine changes they needed."""

from __future__ import annotations

import pytest
from support import check_invariants, count_calls, cuts_for, run_stream

import tooldialect as td
from tooldialect.jsonscan import CUT, DONE, MORE
from tooldialect.pyliteral import Refused, decode_string, number
from tooldialect.strscan import StringScanner


def parse_checked(text: str, **opts):
    """parse(), and the stream invariants at every chunking the corpus uses."""
    result = td.parse(text, **opts)
    for mode in ("whole", "chars", "random"):
        check_invariants(text, run_stream(text, cuts_for(text, mode), **opts), result)
    return result


# -- the string scanner ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,end",
    [
        ("'abc', x", 5),
        ('"a\\"b" rest', 6),
        ("'it\\'s'", 7),
        ("''", 2),
        ("'', x", 2),
        ("'''a ' '' b''' z", 14),
        ('"""x\n"y"\n""" z', 12),
        ("'''''' z", 6),
        ("'a\nb'", 5),  # found whole; the reader decides what the raw line break is
    ],
)
def test_scanner_finds_the_end_whole_and_at_every_cut(text, end):
    status, got = StringScanner().scan(text, 0, True)
    assert (status, got) == (DONE, end)
    for cut in range(1, len(text)):
        sc = StringScanner()
        status, pos = sc.scan(text[:cut], 0, False)
        if status == DONE:
            assert pos == end and cut >= end
            continue
        assert status == MORE and pos <= cut
        assert sc.scan(text, pos, True) == (DONE, end), cut


@pytest.mark.parametrize("text", ["'abc", "'''abc''", '"a\\', "'", "''' '' "])
def test_scanner_reports_a_cut_at_the_end_of_the_text(text):
    assert StringScanner().scan(text, 0, True)[0] == CUT


def test_scanner_stops_at_a_cap_inside_text_already_read():
    sc = StringScanner()
    status, pos = sc.scan("'" + "x" * 100 + "'", 0, False, end=50)
    assert (status, pos) == (MORE, 50)


def test_scanner_work_is_linear_in_the_string():
    def work(n: int) -> int:
        text = "'" + ("abc\\'def " * (n // 9)) + "'"

        def run() -> None:
            sc = StringScanner()
            pos = 0
            for i in range(64, len(text) + 64, 64):
                status, pos = sc.scan(text[:i], pos, i >= len(text))
                if status == DONE:
                    return
            raise AssertionError("no end found")

        return count_calls(run)

    assert work(400_000) / work(100_000) < 4.8


def test_a_string_longer_than_any_marker_is_one_value():
    body = "line\n" * 60_000 + "end"  # 300 KB, far past the 512-character marker cap
    text = "<|python_start|>[write_file(path='a.txt', content='''" + body + "''')]<|python_end|> done"
    r = td.parse(text)
    assert [c.arguments for c in r.calls] == [{"path": "a.txt", "content": body}]
    assert r.text == " done" and not r.diagnostics
    chunked = run_stream(text, range(4096, len(text), 4096))
    check_invariants(text, chunked, r)


# -- the strict literal reader ----------------------------------------------------------------


@pytest.mark.parametrize(
    "token,raw,expected",
    [
        ("'plain'", False, "plain"),
        ("'a\\nb\\tc\\\\d'", False, "a\nb\tc\\d"),
        ("'\\x41\\u00e9\\U0001F600\\101\\0'", False, "Aé😀A\x00"),
        ("'C:\\dir\\sub'", False, "C:\\dir\\sub"),  # unknown escapes keep their backslash
        ("'C:\\new\\table'", True, "C:\\new\\table"),
        ("'it\\'s'", True, "it\\'s"),  # a raw string keeps the backslash that hid the quote
        ("'one\\\ntwo'", False, "onetwo"),  # a backslash before a line break joins the lines
        ('"""a\nb"""', False, "a\nb"),
        ("'\\ud83d\\ude00'", False, "😀"),  # JSON-style surrogate pairs are joined
        ("'\\N{EM DASH}'", False, "—"),
    ],
)
def test_strings_read_as_python_reads_them(token, raw, expected):
    assert decode_string(token, raw=raw) == expected


@pytest.mark.parametrize("token", ["'a\nb'", "'\\x4'", "'\\u12'", "'\\U00110000'", "'\\ud83d'", "'\\N{NO SUCH}'"])
def test_malformed_strings_are_refused(token):
    with pytest.raises(Refused):
        decode_string(token)


@pytest.mark.parametrize(
    "text,value",
    [
        ("1_000", 1000),
        ("0x1F", 31),
        ("0o17", 15),
        ("0b101", 5),
        ("-2.5", -2.5),
        (".5", 0.5),
        ("5.", 5.0),
        ("1e3", 1000.0),
        ("00", 0),
    ],
)
def test_numbers_in_python_spellings(text, value):
    got = number(text)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("text", ["01", "0_1", "1__0", "1_", "1._5", "1e999", "-1e999"])
def test_numbers_python_refuses_are_refused(text):
    with pytest.raises(Refused):
        number(text)


@pytest.mark.parametrize(
    "value,reason",
    [
        ("paris", "name"),
        ("undefined", "name"),
        ("1+2", "expression"),
        ("-x", "expression"),
        ("g(1)", "call"),
        ("os.getcwd()", "call"),
        ("b'z'", "bytes"),
        ("rb'z'", "bytes"),
        ("f'{x}'", "f-string"),
        ("{1, 2}", "set"),
        ("{1: 'a'}", "key"),
        ("[x=1]", "keyword"),
        ("'a' b", "side by side"),
    ],
)
def test_non_literals_refuse_their_call_and_only_it(value, reason):
    text = f"<|python_start|>[bad(x={value}), good(y=1)]<|python_end|>"
    r = parse_checked(text)
    assert [(c.name, c.arguments) for c in r.calls] == [("good", {"y": 1})]
    assert [d.kind for d in r.diagnostics] == ["arguments_invalid"]
    assert r.diagnostics[0].detail["name"] == "bad" and reason in r.diagnostics[0].detail["reason"]


def test_positional_arguments_are_refused():
    r = parse_checked("<function_calls>f('a')\ng(a='a')</function_calls>")
    assert [c.name for c in r.calls] == ["g"]
    assert "positional" in r.diagnostics[0].detail["reason"]


def test_a_refused_call_announced_early_is_aborted():
    events = run_stream("<|python_start|>[bad(x=y), good(y=1)]<|python_end|>", [])
    kinds = [type(e).__name__ for e in events]
    assert kinds[:2] == ["CallStart", "CallAbort"] and "CallEnd" in kinds


# -- depth ------------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [65, 300, 5_000, 100_000])
@pytest.mark.parametrize("shape", ["[{}]", "({},)", "{{'k': {}}}"])
def test_a_deeply_nested_literal_is_limit_exceeded_never_a_recursion_error(depth, shape):
    value = "1"
    for _ in range(depth):
        value = shape.format(value)
    text = f"<|python_start|>[f(a={value})]<|python_end|> after"
    r = td.parse(text)
    assert r.calls == [] and r.text == " after"
    assert [d.kind for d in r.diagnostics] == ["limit_exceeded"]
    assert r.diagnostics[0].detail["limit"] == "max_depth"


def test_the_deepest_nesting_a_policy_allows_is_read_without_recursion():
    value = "1"
    for i in range(512):
        value = ("[{}]", "{{'k': {}}}", "({},)")[i % 3].format(value)
    policy = td.Policy(max_depth=512)
    r = parse_checked(f"<|python_start|>[f(a={value})]<|python_end|>", policy=policy)
    assert [c.name for c in r.calls] == ["f"] and not r.diagnostics
    deeper = td.parse(f"<|python_start|>[f(a=[{value}])]<|python_end|>", policy=policy)
    assert [d.kind for d in deeper.diagnostics] == ["limit_exceeded"]


def test_nesting_up_to_max_depth_is_read():
    value = "[" * 64 + "1" + "]" * 64
    r = parse_checked(f"<|python_start|>[f(a={value}), g()]<|python_end|>")
    assert [c.name for c in r.calls] == ["f", "g"] and not r.diagnostics
    deeper = "[" * 80 + "1" + "]" * 80
    assert td.parse(f"<|python_start|>[f(a={deeper})]<|python_end|>", policy=td.Policy(max_depth=100)).calls


def test_a_limit_failure_with_a_closer_is_limit_exceeded_for_json_too():
    deep = "[" * 70 + "]" * 70
    r = td.parse('<tool_call>{"name": "f", "arguments": {"x": ' + deep + "}}</tool_call> after")
    assert [d.kind for d in r.diagnostics] == ["limit_exceeded"] and r.text == " after"


# -- replies, cuts and the engine's reply rule ---------------------------------------------------


def test_a_reply_cut_inside_the_arguments_is_truncated_wherever_the_cut_falls():
    for text in ("[get_weather(", "[get_weather(city=", "[get_weather(city='Pa", "[get_weather(a=1, city="):
        r = parse_checked(text)
        assert r.calls == [] and r.text == "", text
        assert [d.kind for d in r.diagnostics] == ["truncated"] and r.diagnostics[0].detail["name"] == "get_weather"


def test_truncated_keep_returns_the_complete_keyword_arguments_only():
    text = "<|python_start|>[f(a=1, b=[1, 2], c=g(x=1), d='cut"
    r = parse_checked(text, policy=td.Policy(truncated="keep"))
    assert [(c.name, c.arguments) for c in r.calls] == [("f", {"a": 1, "b": [1, 2]})]


def test_bare_lists_only_at_the_start_of_the_reply_and_not_with_bare_json_off():
    assert td.parse("[f(a=1)] then [g(b=2)]").calls[0].name == "f"
    assert [c.name for c in td.parse("[f(a=1)] then [g(b=2)]").calls] == ["f"]
    assert td.parse("[f(a=1)]", policy=td.Policy(bare_json=False)).calls == []


# -- shared markers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "terminal,families",
    [
        ("FUNCTION_CALLS_OPEN", {"invoke_xml", "pythonic"}),
        ("PYTHON_TAG", {"llama_json", "pythonic"}),
        ("CALL_START_OPEN", {"json_array", "pythonic"}),
    ],
)
def test_a_shared_opener_is_declared_once_and_opens_each_body(terminal, families):
    openers = {
        name
        for name in td.families.names()
        if terminal in {t.name for t in td.families.get(name).grammar.openers.get("start", ())}
    }
    assert families <= openers
    grammars = {t.grammar for f in families for t in [td.families.get(f).grammar.terminals[terminal]]}
    assert grammars == families  # compiled into each family, written in _tagged.lark only


def test_the_body_decides_which_family_reads_a_shared_opener():
    r = td.parse(
        '<function_calls><invoke name="a"><parameter name="k">v</parameter></invoke></function_calls>'
        "<function_calls>b(k='v')</function_calls>"
        '<|tool_call_start|>[{"name": "c", "arguments": {}}]<|tool_call_end|>'
        "<|tool_call_start|>[d()]<|tool_call_end|>"
        '<|python_tag|>{"name": "e", "parameters": {}}'
    )
    assert [(c.name, c.family) for c in r.calls] == [
        ("a", "invoke_xml"),
        ("b", "pythonic"),
        ("c", "json_array"),
        ("d", "pythonic"),
        ("e", "llama_json"),
    ]


def test_python_literal_families_are_read_by_the_generic_reader():
    """pythonic and gemma3 are grammars only: the generic reader reads their calls, and every
    node name it consumes is in READ_NODES (which grammar checks read)."""
    from tooldialect import transform

    for family in ("pythonic", "gemma3"):
        assert transform.reader_class(family) is transform.Reader
    assert {"call", "name", "py_kwarg", "py_value", "py_dict", "py_entry"} <= transform.READ_NODES
    assert transform.Reader.member_nodes == ("py_kwarg",)
    text = '```tool_code\nprint(get_weather(city="Paris", when={"day": 1, "hours": [9, None]}))\n```'
    result = td.parse(text, families=["gemma3"])
    assert [(c.name, c.arguments) for c in result.calls] == [
        ("get_weather", {"city": "Paris", "when": {"day": 1, "hours": [9, None]}})
    ]
    events = run_stream(text, range(1, len(text)), families=["gemma3"])
    fragments = [e.fragment for e in events if isinstance(e, td.ArgumentsDelta)]
    # one fragment per keyword argument as it is read, then the closing brace
    assert fragments == ['{"city": "Paris"', ', "when": {"day": 1, "hours": [9, null]}', "}"]
    assert "".join(fragments) == result.calls[0].arguments_json


# -- a string literal streamed delta by delta ------------------------------------------------------

_WORDS = "Paris, then Lyon and Marseille; " * 4


@pytest.mark.parametrize(
    "value",
    [
        f"'{_WORDS}'",
        f'"{_WORDS}"',
        "'it\\'s " + _WORDS + " \\\\ done'",  # escapes, some of them cut by a delta
        f"'''{_WORDS}'''",  # tripled: scanned, never taken in one step
    ],
)
def test_a_string_literal_continued_by_deltas_is_taken_in_one_step(value):
    """A delta that only continues a one-quote string literal is read in one step
    (``Cursor.string_run`` with ``StringScanner.string_run``); the events are those of
    reading every delta through the general path."""
    from tooldialect.engine.cursor import Cursor

    text = f"[get_weather(city={value}, days=2)]"
    real = Cursor.string_run
    taken: list[bool] = []

    def spy(self, b, delta):
        got = real(self, b, delta)
        taken.append(got)
        return got

    opts = {"families": ["pythonic"]}
    for mode in ("chars", "random"):
        cut = cuts_for(text, mode, seed=3)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(Cursor, "string_run", spy)
            fast = run_stream(text, cut, **opts)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(Cursor, "string_run", lambda self, b, delta: False)
            slow = run_stream(text, cut, **opts)
        assert [e.model_dump() for e in fast] == [e.model_dump() for e in slow], mode
        check_invariants(text, fast, td.parse(text, **opts))
    assert any(taken) is (not value.startswith("'''"))


# -- raw line breaks in one-line strings -----------------------------------------------------------


@pytest.mark.parametrize("brk", ["\n", "\r\n"])
def test_a_raw_line_break_in_a_quoted_value_is_read_as_written_and_reported(brk):
    """LFM2.5's template renders argument values as they are, so the model writes real line
    breaks inside one-line strings: read as the characters written (``\\r\\n`` too, as in a
    triple-quoted string), reported ``arguments_repaired``.  They were refused
    (``arguments_invalid``).  Code calls stay strict (decisions.md, 60)."""
    text = f'<|tool_call_start|>[write_note(title="a", body="line one{brk}line two")]<|tool_call_end|>'
    result = parse_checked(text)
    assert [(c.name, c.arguments, c.family) for c in result.calls] == [
        ("write_note", {"title": "a", "body": f"line one{brk}line two"}, "pythonic")
    ]
    assert [(d.kind, d.detail) for d in result.diagnostics] == [
        ("arguments_repaired", {"name": "write_note", "repairs": ["raw line break in a string"]})
    ]
    assert result.text == ""
    # a dict key, and a value nested in a list, are strings like any other
    nested = parse_checked("<|python_start|>[f(a=['x\ny'], b={'k\nl': 1})]<|python_end|>")
    assert [c.arguments for c in nested.calls] == [{"a": ["x\ny"], "b": {"k\nl": 1}}]
    assert [d.kind for d in nested.diagnostics] == ["arguments_repaired"]
    tools = td.Toolset([td.Tool(name="write_note")])
    code = td.parse('<tool_call>write_note(body="line one\nline two")</tool_call>', tools=tools, families=["codecall"])
    assert code.calls == [] and "raw line break" in code.diagnostics[0].detail["reason"]
