"""Every family writes a call back in its own syntax, and parsing that gives the call back.

``td.families.get(f).render_call(call)`` fills the family's shape (the ``// write`` lines
of its grammar header).  Text-valued families (XML parameters, GLM pairs, FunctionGemma)
are read back with the tool's schema, as any parser of theirs is; registry-gated ones
only with a toolset.  What a syntax cannot say is refused, and only that.
"""

from __future__ import annotations

import json
import keyword
import re
import textwrap
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import budget, nested

import tooldialect as td
from tooldialect import shape as sh
from tooldialect.grammar import compile_grammar, read_header
from tooldialect.render.family import compile_writer

FAMILIES = td.families.names()

# -- what the calls are made of ----------------------------------------------------------------

#: Markup a model's arguments may hold (file contents, HTML, other families' markers).
FRAGMENTS = [
    "</parameter>",
    "<parameter=x>",
    '<parameter name="x">',
    "</function>",
    "<function=f>",
    "<tool_call>",
    "</tool_call>",
    "</TOOL-CALL>",
    "<|tool_call|>",
    "</invoke>",
    '<invoke name="f">',
    "</function_calls>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "<escape>",
    "<end_function_call>",
    "[ARGS]",
    "[TOOL_CALLS]",
    "<|call|>",
    "<|message|>",
    "<|tool_call_end|>",
    "<｜tool▁call▁end｜>",
    "```",
    "```json\n",
    "<think>",
    "</think>",
    "functions.f:0",
    "<div>",
    "a < b > c",
    "</param>",
    "</arg_value:opensource>",
]
_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
STRINGS = st.lists(
    st.one_of(
        _TEXT, st.sampled_from(FRAGMENTS), st.sampled_from(['"', "'", "\\", "|", "]", "\n", " ", "é", "漢", "😀"])
    ),
    max_size=5,
).map("".join)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False, width=64).filter(lambda f: abs(f) < 1e15),
    STRINGS,
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(STRINGS, inner, max_size=3)),
    max_leaves=6,
)
IDENT = st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True).filter(
    lambda s: not keyword.iskeyword(s) and not keyword.issoftkeyword(s)
)
ARGUMENTS = st.dictionaries(IDENT, VALUES, max_size=4)
CALLS = st.fixed_dictionaries({"name": IDENT, "arguments": ARGUMENTS})


def _type(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if value is None:
        return {"type": "null"}
    return {"type": "array" if isinstance(value, list) else "object"}


def toolset(*calls: dict[str, Any]) -> td.Toolset:
    """A tool per call name whose schema types each argument (required, in the call's order)."""
    tools: dict[str, td.Tool] = {}
    for call in calls:
        args = call["arguments"]
        params = {"type": "object", "properties": {k: _type(v) for k, v in args.items()}, "required": list(args)}
        tools.setdefault(call["name"], td.Tool(name=call["name"], parameters=params))
    return td.Toolset(list(tools.values()))


def same(a: Any, b: Any) -> bool:
    """Equal as JSON values, types included (1 == 1.0 as numbers; True is not 1)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


# -- which refusals are right --------------------------------------------------------------------

_TAG_CLOSE = r"<[|\s]{0,3}/[|\s]{0,3}tool[_-]?call[|\s]{0,3}>"
#: Per text-valued family: the text that ends a value (a value holding it must be refused)
#: and the markers the writer may also refuse (those written after a value in the call).
ENDERS: dict[str, tuple[str, str]] = {
    "qwen3_coder": (r"</parameter>", r"</parameter>|<parameter=|</function>|(?i:" + _TAG_CLOSE + ")"),
    "invoke_xml": (r"</parameter>", r"</(?:[\w.:-]+:)?(?:parameter|invoke|function_calls)>|<parameter"),
    "glm": (r"</arg_value>", r"</?arg_(?:key|value)>|(?i:" + _TAG_CLOSE + ")"),
    "functiongemma": (r"<escape>", r"<escape>|<end_function_call>"),
    "minicpm5": (r"</param>", r"</param>|<param[ \t]{1,8}name|</function>"),
    "hy3": (r"</arg_value:opensource>", r"</?arg_(?:key|value):opensource>|</?tool_calls?:opensource>"),
}


def written(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def refusal(family: str, call: dict[str, Any]) -> tuple[bool, bool]:
    """(must refuse, may refuse) for a call whose name and keys every family accepts."""
    values = [written(v) for v in call["arguments"].values()]
    if family == "pformat":
        blank = any(isinstance(v, str) and not v.strip() for v in call["arguments"].values())
        return blank, blank
    if family == "codecall":  # a top-level None in a code call means "not given"
        unset = any(v is None for v in call["arguments"].values())
        return unset, unset
    if family in ENDERS:
        must, may = ENDERS[family]
        return any(re.search(must, v) for v in values), any(re.search(may, v) for v in values)
    return False, False


def check(family: str, calls: list[dict[str, Any]]) -> None:
    fam = td.families.get(family)
    tools = toolset(*calls)
    musts, mays = zip(*(refusal(family, c) for c in calls))
    try:
        text = fam.render_calls(calls) if len(calls) > 1 else fam.render_call(calls[0])
    except td.PolicyError as exc:
        assert any(mays), f"{family} refused a call it can write: {exc}"
        return
    assert not any(musts), f"{family} wrote a value holding the text that ends it:\n{text}"
    got = td.parse(text, tools=tools, families=[family])
    assert [d.kind for d in got.diagnostics] == [], (text, got.diagnostics)
    assert len(got.calls) == len(calls), text
    for i, (want, call) in enumerate(zip(calls, got.calls)):
        assert call.family == family
        assert call.name == want["name"], text
        assert same(call.arguments, want["arguments"]), (text, call.arguments, want["arguments"])
        if any(isinstance(p, sh.Index) for p in fam.shape.call):
            assert call.id is not None and call.id.endswith(f"{want['name']}:{i}")
        else:
            assert call.id == want.get("id")
    # white space the shape writes between per-call blocks is all the text that is left
    gap = fam.shape.sep if not fam.shape.block_open else ""
    assert got.text == gap * (len(calls) - 1), repr(got.text)


# -- properties ----------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
@budget(60)
@given(call=CALLS)
def test_one_call_round_trips(family, call):
    check(family, [call])


@pytest.mark.parametrize("family", [f for f in FAMILIES if td.families.get(f).shape.parallel])
@budget(30)
@given(calls=st.lists(CALLS, min_size=2, max_size=3, unique_by=lambda c: c["name"]))
def test_several_calls_round_trip_in_order(family, calls):
    check(family, calls)


@pytest.mark.parametrize("family", FAMILIES)
def test_empty_arguments_and_a_toolcall(family):
    call = td.parse('<tool_call>{"name": "ping", "arguments": {}}</tool_call>').calls[0]
    check(family, [{"name": call.name, "arguments": call.arguments}])
    assert td.families.get(family).render_call(call) == td.families.get(family).render_call(
        {"name": "ping", "arguments": {}}
    )


@pytest.mark.parametrize("family", FAMILIES)
def test_a_value_as_deep_as_a_policy_reads_is_written_and_a_deeper_one_refused(family):
    fam = td.families.get(family)
    call = {"name": "f", "arguments": {"a": nested(400)}}
    text = fam.render_call(call)  # pythonic and codecall used to overflow the stack here
    got = td.parse(text, tools=toolset(call), families=[family], policy=td.Policy(max_depth=512))
    assert [c.arguments for c in got.calls] == [call["arguments"]]
    with pytest.raises(td.PolicyError, match="deeper than 512 levels"):
        fam.render_call({"name": "f", "arguments": {"a": nested(5000)}})


@pytest.mark.parametrize("family", [f for f in FAMILIES if not td.families.get(f).shape.parallel])
def test_single_call_families_refuse_several(family):
    with pytest.raises(td.PolicyError, match="one call per reply"):
        td.families.get(family).render_calls([{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}])


def test_every_family_has_a_shape_that_begins_where_it_is_read():
    for family in FAMILIES:
        fam = td.families.get(family)
        assert isinstance(fam.shape, sh.Shape) and fam.shape.family == family
        text = fam.render_call({"name": "ping", "arguments": {"a": 1}})
        got = td.parse("Sure.\n" + text, tools=toolset({"name": "ping", "arguments": {"a": 1}}), families=[family])
        # prose before the call: read as a call exactly when the shape says it may be
        assert bool(got.calls) == fam.shape.prose_before, family


# -- refusals ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("family", "name"),
    [
        ("glm", "my tool"),
        ("qwen3_coder", "a>b"),
        ("pythonic", "class"),
        ("codecall", "x-y"),
        ("mistral", "a b"),
        ("kimi_k2", "a:b"),
    ],
)
def test_a_name_the_syntax_cannot_say_is_refused(family, name):
    with pytest.raises(td.PolicyError, match=re.escape(repr(name))):
        td.families.get(family).render_call({"name": name, "arguments": {}})


def test_a_json_family_writes_any_name_and_key():
    call = {"name": "my tool", "arguments": {"a key": "</tool_call>", "é": [1]}}
    check("hermes", [call])


@pytest.mark.parametrize(
    ("family", "key"), [("glm", "a</arg_key>"), ("qwen3_coder", "a b"), ("functiongemma", "a b"), ("pythonic", "a-b")]
)
def test_a_key_the_syntax_cannot_say_is_refused(family, key):
    with pytest.raises(td.PolicyError, match=re.escape(repr(key))):
        td.families.get(family).render_call({"name": "f", "arguments": {key: 1}})


def test_codecall_writes_a_key_that_is_not_an_identifier_as_one_dict():
    call = {"name": "f", "arguments": {"a-b": 1, "c": "x"}}
    assert "f({" in td.families.get("codecall").render_call(call)
    check("codecall", [call])


def test_a_value_holding_its_closer_is_refused_with_what_to_fix():
    with pytest.raises(td.PolicyError, match=r"the value of 'body'.*</parameter>"):
        td.families.get("qwen3_coder").render_call({"name": "f", "arguments": {"body": "x</parameter>y"}})
    # the same value inside JSON is content
    check("hermes", [{"name": "f", "arguments": {"body": "x</parameter>y"}}])


def test_pformat_and_codecall_follow_the_toolsets_parameter_order():
    tools = td.Toolset(
        [
            td.Tool(
                name="f",
                parameters={
                    "type": "object",
                    "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
                    "required": ["b", "a"],
                },
            )
        ]
    )
    text = td.families.get("pformat").render_call({"name": "f", "arguments": {"a": "x", "b": 2}}, tools=tools)
    assert "f[1|x|0|2]" in text
    assert td.parse(text, tools=tools, families=["pformat"]).calls[0].arguments == {"a": "x", "b": 2}
    with pytest.raises(td.PolicyError, match="do not offer 'g'"):
        td.families.get("pformat").render_call({"name": "g", "arguments": {}}, tools=tools)


def test_ids():
    # Kimi writes the functions.NAME:INDEX id from the call's position
    text = td.families.get("kimi_k2").render_calls([{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}])
    assert [c.id for c in td.parse(text, families=["kimi_k2"]).calls] == ["functions.a:0", "functions.b:1"]


def test_bad_calls_are_policy_errors():
    fam = td.families.get("hermes")
    for bad in (
        {"name": "f", "arguments": {"x": float("nan")}},
        {"name": "f", "arguments": "[1]"},
        {"arguments": {}},
        42,
    ):
        with pytest.raises(td.PolicyError):
            fam.render_call(bad)
    with pytest.raises(td.PolicyError):
        fam.render_calls([])
    with pytest.raises(td.PolicyError):
        fam.render_calls({"name": "f", "arguments": {}})


# -- the // write lines ----------------------------------------------------------------------


def _writer(tmp_path, lines: str):
    path = tmp_path / "fam.lark"
    path.write_text(
        "// family: fam\n// title: t\n"
        + textwrap.dedent(lines)
        + '\nstart: OPEN NAME CLOSE\nOPEN: "<<"\nCLOSE: /[>]{2}/\nNAME: /[a-z]{1,20}/\n',
        encoding="utf-8",
    )
    return compile_writer(compile_grammar(path, read_header(path.read_text(encoding="utf-8"), "fam")))


def test_a_write_line_naming_an_unknown_terminal_is_a_grammar_error(tmp_path):
    with pytest.raises(td.GrammarError, match=r"fam.*NO_SUCH_MARKER.*not a terminal"):
        _writer(tmp_path, "// write call: NO_SUCH_MARKER name arguments\n")


def test_a_write_line_naming_a_pattern_terminal_asks_for_a_canonical_one(tmp_path):
    with pytest.raises(td.GrammarError, match="CANONICAL_CLOSE"):
        _writer(tmp_path, "// write call: OPEN name:NAME arguments CLOSE\n")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("// write call: OPEN name colour\n", "unknown slot 'colour'"),
        ("// write call: OPEN name arguments:yaml\n", "arguments:json"),
        ("// write call: OPEN arguments\n", "needs a name slot"),
        ("// write call: OPEN name params\n", "needs a '// write param"),
        ("// write call: OPEN name 'x' arguments\n", "cannot read"),
        ('// write call: OPEN name "\\q" arguments\n', "is not a JSON string"),
        ("// write block: OPEN\n// write call: name arguments\n", "write 'calls' once"),
        ("// write sideways: OPEN\n", "unknown write line"),
        ("// write single: yes\n// write call: name arguments\n", "takes nothing"),
    ],
)
def test_bad_write_lines_say_what_to_write(tmp_path, line, message):
    with pytest.raises(td.GrammarError, match=re.escape(message)):
        _writer(tmp_path, line)


def test_a_family_without_write_lines_says_so(tmp_path):
    with pytest.raises(td.GrammarError, match="no '// write call"):
        _writer(tmp_path, "")


def test_write_lines_are_not_header_notes():
    fam = td.families.get("hermes")
    assert fam.header.writes and not any(n.startswith("write") for n in fam.header.notes)


def test_an_id_slot_writes_the_calls_own_id_and_never_makes_one_up(tmp_path):
    writer = _writer(tmp_path, '// write call: OPEN name:NAME "#" id ":" index " " arguments\n')
    assert isinstance(writer.shape.call[3], sh.Id)
    assert writer.render([{"name": "f", "arguments": {"a": 1}, "id": "abcDEF123"}]) == '<<f#abcDEF123:0 {"a": 1}'
    with pytest.raises(td.PolicyError, match="give 'f' an id"):
        writer.render([{"name": "f", "arguments": {}}])
    with pytest.raises(td.PolicyError, match="cannot write the id 'call-1'"):
        writer.render([{"name": "f", "arguments": {}, "id": "call-1"}])


def test_an_id_slot_with_a_terminal_takes_the_terminals_ids(tmp_path):
    from tooldialect.render.family import _DEFAULT_ID

    assert _DEFAULT_ID.pattern == sh.Id().pattern
    writer = _writer(tmp_path, '// write call: OPEN name:NAME "#" id:NAME " " arguments\n')
    assert writer.shape.call[3] == sh.Id("[a-z]{1,20}")  # the terminal's pattern, for exports
    assert writer.render([{"name": "f", "arguments": {}, "id": "call"}]) == "<<f#call {}"
    with pytest.raises(td.PolicyError, match="cannot write the id 'abcDEF123'"):
        writer.render([{"name": "f", "arguments": {}, "id": "abcDEF123"}])


# -- the other spellings of a family (`// variant` lines) ------------------------------------------

SPELLINGS = [(f, v) for f in FAMILIES for v in td.families.get(f).variants[1:]]
IDS = ("a1B2c3D4e", "f5G6h7J8k", "Z9y8X7w6V")


@pytest.mark.parametrize(("family", "variant"), SPELLINGS)
@budget(40)
@given(calls=st.lists(CALLS, min_size=1, max_size=3, unique_by=lambda c: c["name"]))
def test_each_spelling_round_trips(family, variant, calls):
    fam = td.families.get(family)
    if not fam.writer(variant).shape.parallel:
        calls = calls[:1]
    calls = [{**c, "id": i} for c, i in zip(calls, IDS)]
    text = fam.render_calls(calls, variant=variant)
    got = td.parse(text, tools=toolset(*calls), families=[family])
    assert [d.kind for d in got.diagnostics] == [], (text, got.diagnostics)
    assert [c.name for c in got.calls] == [c["name"] for c in calls], text
    for want, call in zip(calls, got.calls):
        assert same(call.arguments, want["arguments"]), (text, call.arguments, want["arguments"])
    assert got.text.strip() == "", repr(got.text)
