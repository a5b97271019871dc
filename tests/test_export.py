"""Constrained-decoding exports (td.export): the grammar accepts what the family writes for
the offered tools and refuses a call to another tool or arguments that break the schema.

The Lark export is checked by llguidance itself, with a byte-level tokenizer built here
(256 byte tokens and an end-of-sequence token: no model download).  GBNF is checked by
converting it with llguidance's GBNF reader and running the same matcher from the point
its trigger fires.  EBNF and structural tags are checked the same way with xgrammar's own
matcher where xgrammar is importable (it is not part of any extra: a plain install pulls in
torch; docs/export.md says how to run them).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import tooldialect as td
from tooldialect import export
from tooldialect import shape as sh
from tooldialect.render.signatures import _py_literal

llg = pytest.importorskip("llguidance", reason="the export extra (llguidance) is not installed")
from llguidance.gbnf_to_lark import gbnf_to_lark

TOKENIZER = export._byte_tokenizer(llg)  # every byte a token, and an end token


def accepts(grammar: str, text: str) -> bool:
    """Whether llguidance lets a model write exactly ``text`` and stop."""
    matcher = llg.LLMatcher(TOKENIZER, grammar, log_level=0)
    assert not matcher.is_error(), matcher.get_error()
    ok = matcher.consume_tokens(list(text.encode("utf-8")))
    return bool(ok and not matcher.is_error() and matcher.is_accepting())


def gbnf_accepts(lazy: export.LazyGrammar, text: str) -> bool:
    """A lazy GBNF grammar as llama.cpp runs it: text before the first trigger is free; the
    grammar constrains the rest, from where the trigger (its first group) starts."""
    start = _trigger_start(lazy, text)
    return True if start is None else accepts(gbnf_to_lark(lazy.grammar), text[start:])


def _trigger_start(lazy: export.LazyGrammar, text: str) -> int | None:
    """Where a lazy grammar starts in ``text`` (None: no trigger fires); 0 when not lazy."""
    if not lazy.lazy:
        return 0
    found = [
        m.start(1) if t.type == "pattern" else m.start()
        for t in lazy.triggers
        for m in [re.search(t.value if t.type == "pattern" else re.escape(t.value), text)]
        if m
    ]
    return min(found) if found else None


# -- shapes written by hand (the families' own shapes come from their grammars) -----------------

HAND_SHAPES = {
    "json_in_tags": sh.Shape(
        family="hermes_like",
        call=(
            sh.Lit('<tool_call>\n{"name": '),
            sh.Name("json"),
            sh.Lit(', "arguments": '),
            sh.Arguments("json"),
            sh.Lit("}\n</tool_call>"),
        ),
        sep="\n",
    ),
    "xml_params": sh.Shape(
        family="qwen3_coder_like",
        call=(
            sh.Lit("<tool_call>\n<function="),
            sh.Name(),
            sh.Lit(">\n"),
            sh.Params(
                item=(sh.Lit("<parameter="), sh.Key(), sh.Lit(">\n"), sh.Value("text"), sh.Lit("\n</parameter>\n"))
            ),
            sh.Lit("</function>\n</tool_call>"),
        ),
        sep="\n",
    ),
    "section_with_index": sh.Shape(
        family="kimi_like",
        block_open=(sh.Lit("<|tool_calls_section_begin|>"),),
        block_close=(sh.Lit("<|tool_calls_section_end|>"),),
        call=(
            sh.Lit("<|tool_call_begin|>functions."),
            sh.Name(),
            sh.Lit(":"),
            sh.Index(),
            sh.Lit("<|tool_call_argument_begin|>"),
            sh.Arguments("json"),
            sh.Lit("<|tool_call_end|>"),
        ),
    ),
    "python_list": sh.Shape(
        family="pythonic_like",
        block_open=(sh.Lit("["),),
        block_close=(sh.Lit("]"),),
        call=(sh.Name(), sh.Lit("("), sh.Arguments("python"), sh.Lit(")")),
        sep=", ",
        prose_before=False,
    ),
    "python_in_prose": sh.Shape(
        family="codecall_like",
        call=(sh.Lit("<tool_call>\n"), sh.Name(), sh.Lit("("), sh.Arguments("python"), sh.Lit(")\n</tool_call>")),
        sep="\n",
    ),
    "id_after_name": sh.Shape(
        family="mistral_like",
        call=(sh.Lit("[TOOL_CALLS]"), sh.Name(), sh.Lit("[CALL_ID]"), sh.Id(), sh.Lit("[ARGS]"), sh.Arguments("json")),
    ),
}


def _text_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _python_args(tool: td.Tool, arguments: dict[str, Any]) -> str:
    if any(v is None for v in arguments.values()):  # as the code-call writer: None means not given
        raise td.PolicyError("a code call reads a top-level None as not given")
    return ", ".join(f"{k}={_py_literal(v)}" for k, v in arguments.items())


def hand_render(shape: sh.Shape, tools: td.Toolset, calls: list[tuple[str, dict[str, Any]]]) -> str:
    """A reply written with a hand shape (what ``Family.render_calls`` does for real shapes)."""

    def fill(parts: tuple[sh.Part, ...], tool: td.Tool | None, arguments: dict[str, Any], index: int) -> str:
        out = []
        for part in parts:
            if isinstance(part, sh.Lit):
                out.append(part.text)
            elif isinstance(part, sh.Name):
                name = tool.name if tool else arguments["__name"]
                out.append(json.dumps(name) if part.encoding == "json" else name)
            elif isinstance(part, sh.Arguments):
                args = {k: v for k, v in arguments.items() if k != "__name"}
                out.append(json.dumps(args, ensure_ascii=False) if part.syntax == "json" else _python_args(tool, args))
            elif isinstance(part, sh.Params):
                items = []
                for key, value in arguments.items():
                    if key == "__name":
                        continue
                    text = "".join(
                        p.text if isinstance(p, sh.Lit) else key if isinstance(p, sh.Key) else _text_value(value)
                        for p in part.item
                    )
                    items.append(text)
                out.append(part.sep.join(items))
            elif isinstance(part, sh.Id):
                out.append("a1B2c3D4e")
            elif isinstance(part, sh.Index):
                out.append(str(index))
        return "".join(out)

    body = []
    for i, (name, arguments) in enumerate(calls):
        tool = tools.get(name)
        body.append(fill(shape.call, tool, arguments if tool else {**arguments, "__name": name}, i))
    return fill(shape.block_open, None, {}, 0) + shape.sep.join(body) + fill(shape.block_close, None, {}, 0)


# -- toolsets -----------------------------------------------------------------------------------

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city"],
    "additionalProperties": False,
}
EVENT = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "attendees": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
                "required": ["name"],
                "additionalProperties": False,
            },
        },
        "all_day": {"type": "boolean"},
        "priority": {"type": ["number", "null"]},
    },
    "required": ["title", "attendees"],
    "additionalProperties": False,
}
TOOLSETS = {
    "weather": td.Toolset(
        [
            td.Tool(name="get_weather", parameters=WEATHER),
            td.Tool(name="auto", parameters={"type": "object", "properties": {}, "additionalProperties": False}),
        ]
    ),
    "calendar": td.Toolset(
        [td.Tool(name="create_event", parameters=EVENT), td.Tool(name="get_weather", parameters=WEATHER)]
    ),
}
# (tool, good arguments, [bad arguments: wrong type, missing required, extra property, outside the enum])
CASES = {
    "weather": [
        (
            "get_weather",
            {"city": "Paris", "days": 3, "unit": "celsius"},
            [{"city": 7}, {"days": 2}, {"city": "X", "zone": "y"}, {"city": "X", "unit": "kelvin"}],
        ),
        ("auto", {}, [{"x": 1}]),
    ],
    "calendar": [
        (
            "create_event",
            {
                "title": "Stand-up",
                "attendees": [{"name": "Ann", "email": "a@x.org"}, {"name": "Bo"}],
                "all_day": False,
                "priority": None,
            },
            [
                {"title": "T", "attendees": [{"email": "no name"}]},
                {"title": "T"},
                {"title": "T", "attendees": [], "all_day": "yes"},
            ],
        ),
        ("get_weather", {"city": "Zürich", "unit": "fahrenheit"}, [{"city": "Z", "days": 1.5}]),
    ],
}


def _real_shapes() -> list[str]:
    out = []
    for name in td.families.names():
        fam = td.families.get(name)
        if getattr(type(fam), "shape", None) is not None and hasattr(fam, "render_calls"):
            out.append(name)
    return out


def _renderer(which: str):
    """(shape or family name, a function writing a reply with calls)."""
    if which in HAND_SHAPES:
        shape = HAND_SHAPES[which]
        return shape, lambda tools, calls: hand_render(shape, tools, calls)
    fam = td.families.get(which)

    def render(tools: td.Toolset, calls: list[tuple[str, dict[str, Any]]]) -> str:
        return fam.render_calls([{"name": n, "arguments": a} for n, a in calls], tools)

    return which, render


SHAPES = [*HAND_SHAPES, *_real_shapes()]


def _can_write(which: str, tools: td.Toolset) -> bool:
    try:
        export.grammar(_renderer(which)[0], tools)
    except td.ExportError:
        return False
    return True


def _check_cases(accept: Any, target: Any, render: Any, tools: td.Toolset, toolset: str, prose: str = "") -> None:
    """Each call of the toolset's cases, as the family writes it (after ``prose``), is
    accepted; each broken variant the syntax can say is refused."""
    for name, good, bads in CASES[toolset]:
        good = _writable(render, tools, name, good)
        reply = render(tools, [(name, good)])
        assert accept(prose + reply), reply
        for bad in bads:
            if _renders(render, tools, name, bad) and not _text_hides_type(target, tools.get(name), bad):
                broken = render(tools, [(name, bad)])
                assert not accept(broken), broken


def _unknown_tool_call(render: Any, tools: td.Toolset, toolset: str) -> str:
    """The first case's call, written to a tool the toolset does not offer."""
    first, good, _ = CASES[toolset][0]
    wider = td.Toolset([*tools, td.Tool(name="delete_everything", parameters=tools.get(first).parameters)])
    return render(wider, [("delete_everything", _writable(render, tools, first, good))])


# -- the Lark export under llguidance -----------------------------------------------------------


@pytest.mark.exhaustive(every=3)
@pytest.mark.parametrize("toolset", sorted(TOOLSETS))
@pytest.mark.parametrize("which", SHAPES)
def test_lark_export_accepts_each_call_the_family_writes_and_refuses_broken_ones(which, toolset):
    tools = TOOLSETS[toolset]
    target, render = _renderer(which)
    if not _can_write(which, tools):
        pytest.skip("the family's syntax cannot carry these tools (ExportError, tested below)")
    grammar = export.grammar(target, tools)
    assert isinstance(grammar, str)
    _check_cases(lambda text: accepts(grammar, text), target, render, tools, toolset)
    unknown = _unknown_tool_call(render, tools, toolset)
    assert not accepts(grammar, unknown), unknown


def _text_hides_type(target: Any, tool: td.Tool, arguments: dict[str, Any]) -> bool:
    """A number written as raw text is also a string: where values are raw text, a wrong
    type for a string parameter cannot be told from a right one."""
    shape = export.shape_of(target)
    text_values = any(
        (isinstance(p, sh.Params) and any(isinstance(q, sh.Value) and q.syntax == "text" for q in p.item))
        or (isinstance(p, sh.Arguments) and p.syntax == "pformat")
        for p in shape.call
    )
    props = tool.parameters.get("properties", {})
    return text_values and any(
        props.get(k, {}).get("type") == "string" and not isinstance(v, str) and "enum" not in props.get(k, {})
        for k, v in arguments.items()
    )


def _writable(render, tools, name, arguments) -> dict[str, Any]:
    """The arguments, less top-level None where the syntax reads None as "not given"."""
    return (
        arguments if _renders(render, tools, name, arguments) else {k: v for k, v in arguments.items() if v is not None}
    )


def _renders(render, tools, name, arguments) -> bool:
    try:
        render(tools, [(name, arguments)])
    except td.ToolDialectError:
        return False
    return True


@pytest.mark.parametrize("which", SHAPES)
def test_lark_export_takes_several_calls_when_parallel_and_one_when_not(which):
    tools = TOOLSETS["weather"]
    target, render = _renderer(which)
    shape = export.shape_of(target)
    if shape.parallel:
        two = render(tools, [("get_weather", {"city": "Oslo"}), ("auto", {})])
        assert accepts(export.grammar(target, tools), two)
        assert not accepts(export.grammar(target, tools, parallel=False), two)
    else:  # the family writes one call per reply: two in a row are not a reply of it
        one = render(tools, [("auto", {})])
        assert not accepts(export.grammar(target, tools), one + shape.sep + one)
    assert accepts(export.grammar(target, tools, parallel=False), render(tools, [("auto", {})]))


@pytest.mark.parametrize("which", SHAPES)
def test_lark_modes(which):
    tools = TOOLSETS["weather"]
    target, render = _renderer(which)
    shape = export.shape_of(target)
    call = render(tools, [("get_weather", {"city": "Oslo"})])
    auto_call = render(tools, [("auto", {})])
    prose = "Let me look that up."
    auto = export.grammar(target, tools)
    required = export.grammar(target, tools, mode="required")
    forced = export.grammar(target, tools, mode={"name": "auto"})
    assert accepts(auto, prose) and not accepts(required, prose) and not accepts(forced, prose)
    assert accepts(required, call) and not accepts(forced, call) and accepts(forced, auto_call)
    if shape.prose_before:
        assert accepts(auto, prose + "\n" + call) and accepts(required, prose + "\n" + call)
    else:
        assert not accepts(auto, prose + "\n" + call)


@pytest.mark.parametrize("which", SHAPES)
def test_prose_cannot_hold_a_call_opener(which):
    """Free text may not hold the text that opens a call: a half call never leaks as text."""
    tools = TOOLSETS["weather"]
    target, render = _renderer(which)
    call = render(tools, [("get_weather", {"city": "Oslo"})])
    half = call[: len(call) * 2 // 3]
    grammar = export.grammar(target, tools)
    assert not accepts(grammar, "Sure: " + half + " and more text")


@pytest.mark.parametrize("spelling", ["<tool-call>", "<TOOL_CALL>", "<|tool_call>", "<tools>", "```tool_call\n"])
def test_prose_cannot_hold_a_call_in_another_spelling_the_reader_knows(spelling):
    """The reader finds a Hermes block under every opener spelling its grammar knows; free
    text holds none of them, so no unconstrained call hides in the text."""
    tools = TOOLSETS["weather"]
    grammar = export.grammar("hermes", tools)
    body = '{"name": "delete_everything", "arguments": {}}'
    assert td.parse(f"Sure. {spelling}{body}</tool_call>", tools=tools).calls  # the reader takes it as a call
    assert not accepts(grammar, f"Sure. {spelling}{body}</tool_call>")
    assert accepts(grammar, "Sure. <b>bold</b>, <em>tool_call</em> and a_tool_call are fine")


def test_text_value_runs_to_its_closing_marker_and_keeps_every_other_character():
    tools = TOOLSETS["weather"]
    shape = HAND_SHAPES["xml_params"]
    grammar = export.grammar(shape, tools)
    value = "line one\n  <b>two</b> & 'three'\n"
    assert accepts(grammar, hand_render(shape, tools, [("get_weather", {"city": value})]))
    assert not accepts(grammar, hand_render(shape, tools, [("get_weather", {"city": "a</parameter>b"})]))


def test_length_bounds_on_a_text_value_leave_out_the_newline_the_reader_drops():
    """qwen3_coder writes a newline before </parameter> and its reader drops it: the bounds
    are on the value, so "abc" fits maxLength 3 and "a" breaks minLength 2."""
    tool = td.Tool(
        name="f", parameters={"type": "object", "properties": {"s": {"type": "string", "minLength": 2, "maxLength": 3}}}
    )
    write = td.families.get("qwen3_coder").render_call
    grammar = export.grammar("qwen3_coder", [tool])
    for value, ok in [("ab", True), ("abc", True), ("a\n", True), ("a", False), ("abcd", False), ("ab\n\n", False)]:
        reply = write({"name": "f", "arguments": {"s": value}}, [tool])
        assert td.parse(reply, tools=[tool], families=["qwen3_coder"]).calls[0].arguments == {"s": value}
        assert accepts(grammar, reply) is ok, value
        if not value.endswith("\n"):  # written without the template's newline, it is the same value
            assert accepts(grammar, reply.replace(value + "\n</parameter>", value + "</parameter>")) is ok, value


def test_a_tool_named_auto_is_forced_only_by_a_dict():
    tools = TOOLSETS["weather"]
    with pytest.raises(td.PolicyError, match=r"\{'name': 'auto'\}|pass"):
        export.grammar(HAND_SHAPES["json_in_tags"], tools, mode="get_weather")
    assert export.grammar(HAND_SHAPES["json_in_tags"], tools, mode="auto") != export.grammar(
        HAND_SHAPES["json_in_tags"], tools, mode={"name": "auto"}
    )


def test_bad_options():
    tools = TOOLSETS["weather"]
    shape = HAND_SHAPES["json_in_tags"]
    with pytest.raises(td.PolicyError, match="format"):
        export.grammar(shape, tools, format="regex")
    with pytest.raises(td.PolicyError, match="none"):
        export.grammar(shape, tools, mode="none")
    with pytest.raises(td.PolicyError, match="not among"):
        export.grammar(shape, tools, mode={"name": "nope"})
    with pytest.raises(td.PolicyError, match="parallel"):
        export.grammar(shape, tools, parallel="yes")
    with pytest.raises(td.UnknownFamilyError):
        export.grammar("no_such_family", tools)
    with pytest.raises(td.ExportError, match="at least one tool"):
        export.grammar(shape, [])


# -- refusals: never a looser grammar --------------------------------------------------------------

REFUSED = [
    ({"type": "string", "pattern": "^[a-z]+$"}, "pattern", ("gbnf", "ebnf")),
    ({"type": "string", "format": "email"}, "format", ("gbnf", "ebnf")),
    ({"type": "integer", "minimum": 1}, "minimum", ("gbnf", "ebnf")),
    ({"type": "number", "maximum": 5}, "maximum", ("gbnf", "ebnf")),
    ({"type": "integer", "multipleOf": 2}, "multipleOf", ("gbnf", "ebnf")),
    ({"not": {"type": "string"}}, "not", ("lark", "gbnf", "ebnf")),
    ({"if": {"type": "string"}, "then": {"minLength": 2}}, "if", ("lark", "gbnf", "ebnf")),
    ({"type": "object", "patternProperties": {"^x": {"type": "string"}}}, "patternProperties", ("gbnf", "ebnf")),
    (
        {"type": "object", "properties": {"a": {"type": "string"}}, "dependentRequired": {"a": ["b"]}},
        "dependentRequired",
        ("lark", "gbnf", "ebnf"),
    ),
    ({"type": "array", "uniqueItems": True}, "uniqueItems", ("lark", "gbnf", "ebnf")),
    ({"type": "array", "contains": {"type": "string"}}, "contains", ("lark", "gbnf", "ebnf")),
    ({"allOf": [{"type": "string"}, {"minLength": 1}]}, "allOf", ("gbnf", "ebnf")),
    ({"oneOf": [{"type": "string"}, {"type": "string", "minLength": 2}]}, "oneOf", ("gbnf", "ebnf")),
    (
        {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}},
        "additionalProperties",
        ("gbnf", "ebnf"),
    ),
]


@pytest.mark.parametrize(("schema", "keyword", "formats"), REFUSED, ids=[r[1] for r in REFUSED])
def test_a_schema_feature_the_format_lacks_raises_export_error(schema, keyword, formats):
    tool = td.Tool(name="f", parameters={"type": "object", "properties": {"x": schema}, "required": ["x"]})
    for fmt in formats:
        with pytest.raises(td.ExportError) as info:
            export.grammar(HAND_SHAPES["json_in_tags"], [tool], format=fmt)
        message = str(info.value)
        assert keyword in message and "'f'" in message, message
        assert "properties/x" in message or fmt == "lark", message


def test_what_a_format_can_express_is_not_refused():
    tool = td.Tool(name="f", parameters={"type": "object", "properties": {"x": {"type": "integer", "minimum": 1}}})
    grammar = export.grammar(HAND_SHAPES["json_in_tags"], [tool])  # llguidance enforces minimum
    assert accepts(grammar, '<tool_call>\n{"name": "f", "arguments": {"x": 2}}\n</tool_call>')
    assert not accepts(grammar, '<tool_call>\n{"name": "f", "arguments": {"x": 0}}\n</tool_call>')


def test_a_code_call_never_writes_a_top_level_none():
    """The code-call reader takes ``f(x=None)`` as x not given, so the grammar leaves None out."""
    tool = td.Tool(
        name="f", parameters={"type": "object", "properties": {"x": {"type": ["integer", "null"]}}, "required": ["x"]}
    )
    grammar = export.grammar("codecall", [tool])
    write = td.families.get("codecall").render_call
    assert accepts(grammar, write({"name": "f", "arguments": {"x": 1}}, [tool]))
    assert not accepts(grammar, write({"name": "f", "arguments": {"x": 1}}, [tool]).replace("x=1", "x=None"))
    only_null = td.Tool(name="g", parameters={"type": "object", "properties": {"x": {"type": "null"}}})
    with pytest.raises(td.ExportError, match="None"):
        export.grammar("codecall", [only_null])


def test_a_code_call_spells_keys_and_enum_values_as_its_writer_does():
    """The Python writer escapes non-ASCII in strings (``"k\\u00e9"``); the grammar takes
    that spelling as well as the raw one."""
    tool = td.Tool(
        name="f", parameters={"type": "object", "properties": {"ké": {"enum": ["café"]}}, "required": ["ké"]}
    )
    reply = td.families.get("codecall").render_call({"name": "f", "arguments": {"ké": "café"}}, [tool])
    assert "\\u00e9" in reply
    assert accepts(export.grammar("codecall", [tool]), reply)
    assert accepts(export.grammar("codecall", [tool]), reply.replace("\\u00e9", "é"))
    assert gbnf_accepts(export.grammar("codecall", [tool], format="gbnf"), reply)


def test_values_a_syntax_cannot_carry_are_refused():
    tool = td.Tool(name="f", parameters={"type": "object", "properties": {"x": {"type": "array"}}})
    pformat = sh.Shape(
        family="pformat_like",
        call=(sh.Lit("<tool_call>\n"), sh.Name(), sh.Lit("["), sh.Arguments("pformat"), sh.Lit("]\n</tool_call>")),
    )
    with pytest.raises(td.ExportError, match="P-Format"):
        export.grammar(pformat, [tool])
    free = td.Tool(name="g", parameters={"type": "object", "properties": {"x": {"type": "string", "maxLength": 3}}})
    with pytest.raises(td.ExportError, match="length"):
        export.grammar(HAND_SHAPES["xml_params"], [free], format="gbnf")


# -- GBNF and EBNF ---------------------------------------------------------------------------------


@pytest.mark.exhaustive(every=3)
@pytest.mark.parametrize("toolset", sorted(TOOLSETS))
@pytest.mark.parametrize("which", SHAPES)
def test_gbnf_export_accepts_the_calls_and_refuses_broken_ones(which, toolset):
    tools = TOOLSETS[toolset]
    target, render = _renderer(which)
    if not _can_write(which, tools):
        pytest.skip("the shape cannot carry these tools")
    lazy = export.grammar(target, tools, format="gbnf")
    assert lazy.lazy and lazy.triggers
    prose = "Let me check. " if export.shape_of(target).prose_before else ""
    _check_cases(lambda text: gbnf_accepts(lazy, text), target, render, tools, toolset, prose)
    forced = export.grammar(target, tools, format="gbnf", mode="required")
    assert not forced.lazy and not forced.triggers
    first, good, _ = CASES[toolset][0]
    assert gbnf_accepts(forced, render(tools, [(first, _writable(render, tools, first, good))]))
    assert not gbnf_accepts(forced, "plain text")


@pytest.mark.parametrize("which", SHAPES)
def test_gbnf_one_call_when_not_parallel(which):
    tools = TOOLSETS["weather"]
    target, render = _renderer(which)
    if not export.shape_of(target).parallel:
        pytest.skip("the family writes one call per reply")
    two = render(tools, [("get_weather", {"city": "Oslo"}), ("auto", {})])
    assert gbnf_accepts(export.grammar(target, tools, format="gbnf", mode="required"), two)
    assert not gbnf_accepts(export.grammar(target, tools, format="gbnf", mode="required", parallel=False), two)


def test_word_like_triggers_are_word_bounded():
    tools = td.Toolset([td.Tool(name="get")])
    bare = sh.Shape(
        family="bare_call", call=(sh.Name(), sh.Lit("("), sh.Arguments("python"), sh.Lit(")")), prose_before=False
    )
    lazy = export.grammar(bare, tools, format="gbnf")
    (trigger,) = lazy.triggers
    assert trigger.type == "pattern"
    pattern = re.compile(trigger.value)
    assert pattern.search("get()") and pattern.search("then get()")
    assert not pattern.search("forget()") and not pattern.search("budget_get()")
    assert pattern.search("x get()").start(1) == 2


def test_marker_triggers_are_words():
    lazy = export.grammar(HAND_SHAPES["json_in_tags"], TOOLSETS["weather"], format="gbnf")
    assert [t.type for t in lazy.triggers] == ["word"]
    assert lazy.grammar.startswith("root ::= ")
    assert lazy.triggers[0].value in hand_render(HAND_SHAPES["json_in_tags"], TOOLSETS["weather"], [("auto", {})])


@pytest.mark.parametrize("fmt", ["lark", "gbnf"])
def test_a_text_value_holds_none_of_the_readers_stops(fmt):
    """qwen3_coder's reader ends a parameter at </function> or </tool_call> (any spelling)
    too: a value holding one would be cut there, so the grammar refuses it."""
    tools = TOOLSETS["weather"]
    write = td.families.get("qwen3_coder").render_call
    ok = write({"name": "get_weather", "arguments": {"city": "a <b>c</b> <func"}}, tools)
    cut = ok.replace("a <b>c</b> <func", "a </TOOL-CALL> b")
    lazy = export.grammar("qwen3_coder", tools, format=fmt)
    check = (lambda text: accepts(lazy, text)) if fmt == "lark" else (lambda text: gbnf_accepts(lazy, text))
    assert check(ok)
    assert not check(cut)
    assert not check(ok.replace("a <b>c</b> <func", "x</function>y"))


@pytest.mark.parametrize("fmt", ["lark", "gbnf"])
def test_a_text_value_reads_an_allof_of_one_schema(fmt):
    tool = td.Tool(name="f", parameters={"type": "object", "properties": {"n": {"allOf": [{"type": "number"}]}}})
    write = td.families.get("qwen3_coder").render_call
    grammar = export.grammar("qwen3_coder", [tool], format=fmt)
    check = (lambda text: accepts(grammar, text)) if fmt == "lark" else (lambda text: gbnf_accepts(grammar, text))
    assert check(write({"name": "f", "arguments": {"n": 1.5}}, [tool]))
    assert not check(write({"name": "f", "arguments": {"n": "many"}}, [tool]))


def test_text_values_in_gbnf_run_to_the_first_closing_marker():
    tools = TOOLSETS["weather"]
    shape = HAND_SHAPES["xml_params"]
    lazy = export.grammar(shape, tools, format="gbnf")
    ok = hand_render(shape, tools, [("get_weather", {"city": "a </param b\n<"})])
    assert gbnf_accepts(lazy, ok)
    assert not gbnf_accepts(lazy, hand_render(shape, tools, [("get_weather", {"city": "a</parameter>b"})]))


def test_ebnf_export_is_the_same_grammar_in_xgrammar_notation():
    tools = TOOLSETS["calendar"]
    lazy = export.grammar(HAND_SHAPES["json_in_tags"], tools, format="ebnf")
    assert lazy.format == "ebnf" and lazy.grammar.startswith("root ::= ")
    assert "::=" in lazy.grammar and "%json" not in lazy.grammar


# -- EBNF and structural tags under xgrammar (only where xgrammar is importable) -------------------


def _xgrammar() -> Any:
    return pytest.importorskip("xgrammar", reason="xgrammar is not installed (it is in no extra: it pulls in torch)")


_XGR_COMPILER: list[Any] = []


def _xgr_compiler() -> Any:
    """A compiler for a vocabulary of 256 byte tokens and a stop token (256): no model needed."""
    xgr = _xgrammar()
    if not _XGR_COMPILER:
        vocab = [bytes([i]) for i in range(256)] + [b"</s>"]
        info = xgr.TokenizerInfo(vocab, vocab_type=xgr.VocabType.RAW, stop_token_ids=[256])
        _XGR_COMPILER.append(xgr.GrammarCompiler(info, cache_enabled=False))
    return _XGR_COMPILER[0]


def _xgr_run(compiled: Any, text: str) -> bool:
    """Whether a model constrained by ``compiled`` may write exactly ``text`` and then stop."""
    matcher = _xgrammar().GrammarMatcher(compiled)
    return bool(matcher.accept_string(text.encode("utf-8")) and matcher.accept_token(256) and matcher.is_terminated())


def ebnf_accepts(lazy: export.LazyGrammar, text: str) -> bool:
    """The EBNF export under xgrammar, lazy as llama.cpp runs it (xgrammar has no triggers of
    its own for EBNF: text before the first trigger is free, the grammar takes the rest)."""
    start = _trigger_start(lazy, text)
    return True if start is None else _xgr_run(_xgr_compiler().compile_grammar(lazy.grammar), text[start:])


def tag_accepts(tag: dict[str, Any], text: str) -> bool:
    """A structural tag under xgrammar: it holds the free text and the triggers itself."""
    return _xgr_run(_xgr_compiler().compile_structural_tag(json.dumps(tag)), text)


@pytest.mark.parametrize("toolset", sorted(TOOLSETS))
@pytest.mark.parametrize("which", SHAPES)
def test_xgrammar_ebnf_export_accepts_the_calls_and_refuses_broken_ones(which, toolset):
    _xgrammar()
    tools = TOOLSETS[toolset]
    target, render = _renderer(which)
    if not _can_write(which, tools):
        pytest.skip("the shape cannot carry these tools")
    lazy = export.grammar(target, tools, format="ebnf")
    prose = "Let me check. " if export.shape_of(target).prose_before else ""
    _check_cases(lambda text: ebnf_accepts(lazy, text), target, render, tools, toolset, prose)
    first, good, _ = CASES[toolset][0]
    good = _writable(render, tools, first, good)
    unknown = _unknown_tool_call(render, tools, toolset)
    if _trigger_start(lazy, unknown) is not None:  # a weak opening triggers on the offered names only
        assert not ebnf_accepts(lazy, unknown), unknown
    forced = export.grammar(target, tools, format="ebnf", mode="required")
    assert ebnf_accepts(forced, render(tools, [(first, good)]))
    assert not ebnf_accepts(forced, unknown) and not ebnf_accepts(forced, "plain text")


@pytest.mark.parametrize("which", SHAPES)
def test_xgrammar_ebnf_one_call_when_not_parallel(which):
    _xgrammar()
    tools = TOOLSETS["weather"]
    target, render = _renderer(which)
    one = render(tools, [("auto", {})])
    if export.shape_of(target).parallel:
        two = render(tools, [("get_weather", {"city": "Oslo"}), ("auto", {})])
        assert ebnf_accepts(export.grammar(target, tools, format="ebnf", mode="required"), two)
        assert not ebnf_accepts(export.grammar(target, tools, format="ebnf", mode="required", parallel=False), two)
    else:
        assert not ebnf_accepts(
            export.grammar(target, tools, format="ebnf", mode="required"), one + export.shape_of(target).sep + one
        )
    assert ebnf_accepts(export.grammar(target, tools, format="ebnf", mode={"name": "auto"}, parallel=False), one)


def test_xgrammar_ebnf_text_values_hold_none_of_the_readers_stops():
    _xgrammar()
    tools = TOOLSETS["weather"]
    write = td.families.get("qwen3_coder").render_call
    ok = write({"name": "get_weather", "arguments": {"city": "a <b>c</b> <func"}}, tools)
    lazy = export.grammar("qwen3_coder", tools, format="ebnf")
    assert ebnf_accepts(lazy, ok)
    assert not ebnf_accepts(lazy, ok.replace("a <b>c</b> <func", "a </TOOL-CALL> b"))
    assert not ebnf_accepts(lazy, ok.replace("a <b>c</b> <func", "x</function>y"))


def test_xgrammar_structural_tag_takes_null_where_openapi_says_nullable():
    _xgrammar()
    tool = td.Tool(name="f", parameters={"type": "object", "properties": {"x": {"type": "string", "nullable": True}}})
    tag = export.structural_tag("hermes", [tool])
    write = td.families.get("hermes").render_call
    assert tag_accepts(tag, write({"name": "f", "arguments": {"x": None}}, [tool]))
    assert not tag_accepts(tag, write({"name": "f", "arguments": {"x": 1}}, [tool]))


def test_xgrammar_structural_tag_bounds_white_space_in_json_as_the_other_exports_do():
    _xgrammar()
    tools = TOOLSETS["weather"]
    tag = export.structural_tag("hermes", tools)
    call = '<tool_call>\n{"name": "get_weather", "arguments": {%s"city": "Oslo"}}\n</tool_call>'
    assert tag_accepts(tag, call % (" " * 16)) and not tag_accepts(tag, call % (" " * 17))
    assert not accepts(export.grammar("hermes", tools), call % (" " * 17))


def _tag_family(which: str, tools: td.Toolset) -> dict[str, Any] | None:
    try:
        return export.structural_tag(_renderer(which)[0], tools)
    except td.ExportError as exc:
        assert "prose writes too" in str(exc) or "cannot" in str(exc), exc
        return None


@pytest.mark.parametrize("toolset", sorted(TOOLSETS))
@pytest.mark.parametrize("which", SHAPES)
def test_xgrammar_structural_tag_accepts_the_calls_and_refuses_broken_ones(which, toolset):
    _xgrammar()
    tools = TOOLSETS[toolset]
    target, render = _renderer(which)
    if not _can_write(which, tools):
        pytest.skip("the shape cannot carry these tools")
    tag = _tag_family(which, tools)
    if tag is None:
        pytest.skip("the family's calls open with text prose writes too")
    prose = "Let me check. " if export.shape_of(target).prose_before else ""
    assert tag_accepts(tag, "Just text.")
    if not prose:  # the reader would take a call after text as text
        reply = render(tools, [CASES[toolset][0][:2]])
        assert tag_accepts(tag, reply) and not tag_accepts(tag, "Let me check. " + reply)
    _check_cases(lambda text: tag_accepts(tag, text), target, render, tools, toolset, prose)
    first, good, _ = CASES[toolset][0]
    good = _writable(render, tools, first, good)
    unknown = _unknown_tool_call(render, tools, toolset)
    assert not tag_accepts(tag, unknown), unknown
    required = export.structural_tag(target, tools, mode="required")  # xgrammar: the reply opens with a call
    assert tag_accepts(required, render(tools, [(first, good)])) and not tag_accepts(required, "Just text.")


@pytest.mark.parametrize("which", SHAPES)
def test_xgrammar_structural_tag_one_call_when_not_parallel(which):
    _xgrammar()
    tools = TOOLSETS["weather"]
    target, render = _renderer(which)
    if _tag_family(which, tools) is None:
        pytest.skip("the family's calls open with text prose writes too")
    one = render(tools, [("auto", {})])
    if export.shape_of(target).parallel:
        two = render(tools, [("get_weather", {"city": "Oslo"}), ("auto", {})])
        assert tag_accepts(export.structural_tag(target, tools), two)
        assert not tag_accepts(export.structural_tag(target, tools, parallel=False), two)
    assert tag_accepts(export.structural_tag(target, tools, parallel=False), one)


# -- structural tags -----------------------------------------------------------------------------


def test_structural_tag_for_json_arguments():
    tools = TOOLSETS["weather"]
    tag = export.structural_tag(HAND_SHAPES["json_in_tags"], tools)
    assert tag["type"] == "structural_tag"
    fmt = tag["format"]
    assert fmt["type"] == "triggered_tags" and fmt["at_least_one"] is False and fmt["stop_after_first"] is False
    (trigger,) = fmt["triggers"]
    for item, tool in zip(fmt["tags"], tools):
        assert item["begin"].startswith(trigger) and json.dumps(tool.name) in item["begin"]
        assert item["content"] == {"type": "json_schema", "json_schema": tool.parameters, "max_whitespace_cnt": 16}
    reply = hand_render(HAND_SHAPES["json_in_tags"], tools, [("get_weather", {"city": "Oslo"})])
    item = fmt["tags"][0]
    assert reply.startswith(item["begin"]) and reply.endswith(item["end"])
    assert json.loads(reply[len(item["begin"]) : -len(item["end"])]) == {"city": "Oslo"}


def test_structural_tag_spells_openapi_nullable_in_json_schema():
    tool = td.Tool(name="f", parameters={"type": "object", "properties": {"x": {"type": "string", "nullable": True}}})
    (item,) = export.structural_tag("hermes", [tool])["format"]["tags"]
    assert item["content"]["json_schema"]["properties"]["x"] == {"type": ["string", "null"]}


def test_structural_tag_for_a_block_and_for_text_parameters():
    tools = TOOLSETS["weather"]
    kimi = export.structural_tag(HAND_SHAPES["section_with_index"], tools, mode="required", parallel=False)["format"]
    (block,) = kimi["tags"]
    assert kimi["at_least_one"] is True and block["content"]["type"] == "tags_with_separator"
    assert block["content"]["stop_after_first"] is True
    assert all(t["content"]["type"] == "grammar" for t in block["content"]["tags"])  # the index sits before the JSON
    xml = export.structural_tag(HAND_SHAPES["xml_params"], tools, mode={"name": "get_weather"})["format"]
    (only,) = xml["tags"]
    assert only["content"]["type"] == "grammar" and only["content"]["grammar"].startswith("root ::= ")
    assert only["begin"].endswith("get_weather>\n")


@pytest.mark.parametrize("which", _real_shapes())
def test_structural_tag_frames_what_the_family_writes(which):
    """Each tag's begin and end are the fixed text around the arguments of the family's own
    call, and JSON-schema content is exactly the arguments the family wrote."""
    tools = TOOLSETS["weather"]
    try:
        tag = export.structural_tag(which, tools)
    except td.ExportError as exc:
        assert "prose writes too" in str(exc)
        return
    json.dumps(tag)
    fmt = tag["format"]
    reply = td.families.get(which).render_call({"name": "get_weather", "arguments": {"city": "Oslo"}}, tools)
    if not export.shape_of(which).prose_before:  # text without the opening, or the calls from the start
        text, fmt = fmt["elements"]
        assert fmt["at_least_one"] and text["type"] == "any_text" and reply.startswith(text["excludes"][0])
    (trigger,) = fmt["triggers"]
    assert trigger and trigger in reply
    if export.shape_of(which).block_open:
        (block,) = fmt["tags"]
        assert reply.startswith(block["begin"]) and reply.endswith(block["end"])
        reply = reply[len(block["begin"]) : len(reply) - len(block["end"])]
        items = block["content"]["tags"]
    else:
        items = fmt["tags"]
    (item,) = [t for t in items if "get_weather" in t["begin"]]
    assert item["begin"].startswith(trigger) or export.shape_of(which).block_open
    start = reply.index(item["begin"])
    assert reply.endswith(item["end"])
    middle = reply[start + len(item["begin"]) : len(reply) - len(item["end"])]
    if item["content"]["type"] == "json_schema":
        assert json.loads(middle) == {"city": "Oslo"}
    else:
        lark = gbnf_to_lark(item["content"]["grammar"])
        assert accepts(lark, middle) and not accepts(lark, "")  # city is required


def test_structural_tag_refuses_a_weak_trigger():
    with pytest.raises(td.ExportError, match="prose writes too"):
        export.structural_tag(HAND_SHAPES["python_list"], TOOLSETS["weather"])


def test_structural_tag_refuses_a_block_with_no_closing_marker_and_says_why():
    """xgrammar refuses a tag whose content is a run of calls with no end string ("When the
    content is unlimited, at least one end string must be non-empty"): the export says so
    instead of building it; the other formats end the block with the reply."""
    shape = sh.Shape(
        family="open_block",
        block_open=(sh.Lit("<|calls|>\n"),),
        call=(sh.Name(), sh.Lit(" "), sh.Arguments("json")),
        sep="\n",
    )
    tools = TOOLSETS["weather"]
    with pytest.raises(td.ExportError) as err:
        export.structural_tag(shape, tools)
    message = str(err.value)
    assert "'<|calls|>\\n'" in message and "no closing marker" in message and "format='lark'" in message
    reply = "Let me check.\n" + hand_render(shape, tools, [("get_weather", {"city": "Oslo"})])
    assert accepts(export.grammar(shape, tools), reply)


def test_names_the_family_cannot_write_are_refused():
    with pytest.raises(td.ExportError, match="not an identifier"):
        export.grammar("pythonic", [td.Tool(name="get-weather")])
    odd_key = td.Tool(name="f", parameters={"type": "object", "properties": {"a>b": {"type": "string"}}})
    with pytest.raises(td.ExportError, match="'a>b'"):
        export.grammar("qwen3_coder", [odd_key])


# -- the command ------------------------------------------------------------------------------------

from tooldialect import cli


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def tools_file(tmp_path):
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]))
    return str(path)


def test_cli_export_prints_the_lark_grammar(capsys, tools_file):
    rc, out, err = _run(capsys, "export", "--family", "hermes", "--tools", tools_file)
    assert rc == 0 and err == ""
    assert out == export.grammar("hermes", td.Toolset.from_openai(json.loads(Path(tools_file).read_text())))
    assert accepts(out, td.families.get("hermes").render_call({"name": "get_weather", "arguments": {"city": "Oslo"}}))


def test_cli_export_gbnf_and_structural_tag_are_json(capsys, tools_file):
    rc, out, _err = _run(capsys, "export", "--family", "qwen3_coder", "--tools", tools_file, "--format", "gbnf")
    obj = json.loads(out)
    assert rc == 0 and obj["format"] == "gbnf" and obj["lazy"] is True and obj["grammar"].startswith("root ::= ")
    assert obj["triggers"] == [{"type": "word", "value": obj["triggers"][0]["value"]}]
    rc, out, _err = _run(
        capsys,
        "export",
        "--family",
        "hermes",
        "--tools",
        tools_file,
        "--format",
        "structural-tag",
        "--mode",
        "required",
    )
    tag = json.loads(out)
    assert rc == 0 and tag["type"] == "structural_tag" and tag["format"]["at_least_one"] is True
    rc, out, _err = _run(
        capsys,
        "export",
        "--family",
        "hermes",
        "--tools",
        tools_file,
        "--format",
        "ebnf",
        "--force-tool",
        "get_weather",
        "--no-parallel",
    )
    assert rc == 0 and json.loads(out)["lazy"] is False


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--family", "no_such"], "unknown family"),
        (["--family", "hermes", "--format", "regex"], "invalid choice"),
        (["--family", "hermes", "--force-tool", "nope"], "not among the tools"),
        (["--family", "hermes", "--mode", "required", "--force-tool", "get_weather"], "not allowed with"),
    ],
)
def test_cli_export_usage_errors_exit_2_with_one_line(capsys, tools_file, argv, needle):
    rc, out, err = _run(capsys, "export", "--tools", tools_file, *argv)
    assert rc == 2 and out == ""
    assert needle in err and err.count("\n") == 1, err


def test_cli_export_refusal_is_one_line(capsys, tmp_path):
    path = tmp_path / "tools.json"
    path.write_text(
        json.dumps(
            [{"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "string", "pattern": "a+"}}}}]
        )
    )
    rc, out, err = _run(capsys, "export", "--family", "hermes", "--tools", str(path), "--format", "gbnf")
    assert rc == 2 and out == "" and "pattern" in err and err.count("\n") == 1


# -- one export per spelling (`// variant` lines) --------------------------------------------------

#: Every family that writes several spellings, and a model id of each spelling.
SPELLINGS = {
    "deepseek": {"v3": "deepseek-ai/DeepSeek-R1-0528", "v3.1": "deepseek-ai/DeepSeek-V3.1-Terminus"},
    "mistral": {
        "v13": None,  # named only: no template at hand says which releases write it
        "v11": "mistralai/Mistral-Small-3.2-24B-Instruct-2506",
        "v3": "mistralai/Mistral-7B-Instruct-v0.3",
    },
    "functionary": {"v3.1": "meetkai/functionary-small-v3.1", "v3.2": "meetkai/functionary-medium-v3.2"},
    "hermes": {
        "hermes": "Qwen/Qwen3-8B",
        "longcat": "meituan-longcat/LongCat-Flash-Chat",
        "internlm": "internlm/internlm2_5-7b-chat",
    },
}
_SPELLED = [(f, v) for f, vs in SPELLINGS.items() for v in vs]
_CANONICAL_CALL = {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}, "id": "a1B2c3D4e"}


def _canonical(family: str, variant: str) -> str:
    return td.families.get(family).render_call(_CANONICAL_CALL, TOOLSETS["weather"], variant=variant)


def test_every_spelling_is_declared():
    for family, variants in SPELLINGS.items():
        assert td.families.get(family).variants == tuple(variants)
    several = [n for n in td.families.names() if td.families.get(n).variants]
    assert sorted(several) == sorted(SPELLINGS)


@pytest.mark.parametrize(("family", "variant"), _SPELLED)
def test_each_spelling_reads_back_as_its_call(family, variant):
    text = _canonical(family, variant)
    (call,) = td.parse(text, tools=TOOLSETS["weather"], families=[family]).calls
    assert (call.name, call.arguments) == ("get_weather", {"city": "Paris", "days": 3})


@pytest.mark.parametrize(("family", "variant"), _SPELLED)
def test_the_export_of_a_spelling_takes_its_call_and_refuses_the_others(family, variant):
    tools = TOOLSETS["weather"]
    others = [_canonical(family, v) for v in SPELLINGS[family] if v != variant]
    own = _canonical(family, variant)
    lark = export.grammar(family, tools, variant=variant)
    prose = "Checking. " if td.families.get(family).writer(variant).shape.prose_before else ""
    assert accepts(lark, prose + own), own
    required = export.grammar(family, tools, variant=variant, mode="required")
    assert accepts(required, own)
    for other in others:
        assert not accepts(required, other), other
    gbnf = export.grammar(family, tools, variant=variant, format="gbnf", mode="required")
    assert gbnf_accepts(gbnf, own)
    for other in others:
        assert not gbnf_accepts(gbnf, other), other
    lazy = export.grammar(family, tools, variant=variant, format="gbnf")
    assert gbnf_accepts(lazy, prose + own)


@pytest.mark.parametrize(("family", "variant"), _SPELLED)
def test_a_model_id_picks_its_spelling(family, variant):
    model = SPELLINGS[family][variant]
    if model is None:
        pytest.skip("a spelling picked by name only")
    assert td.families.get(family).variant_for(model) == variant
    tools = TOOLSETS["weather"]
    assert export.grammar(family, tools, model=model) == export.grammar(family, tools, variant=variant)


def test_the_default_is_the_first_spelling():
    tools = TOOLSETS["weather"]
    assert export.grammar("deepseek", tools) == export.grammar("deepseek", tools, variant="v3")
    assert "function<｜tool▁sep｜>" in export.grammar("deepseek", tools)
    assert "function<｜tool▁sep｜>" not in export.grammar("deepseek", tools, model="deepseek-ai/DeepSeek-V3.1")


def test_spelling_options_fail_closed():
    tools = TOOLSETS["weather"]
    with pytest.raises(td.PolicyError, match="no variant 'v4'"):
        export.grammar("deepseek", tools, variant="v4")
    with pytest.raises(td.PolicyError, match="matches no variant of deepseek"):
        export.grammar("deepseek", tools, model="someone/deepseek-finetune")
    with pytest.raises(td.PolicyError, match="not both"):
        export.grammar("deepseek", tools, variant="v3", model="deepseek-ai/DeepSeek-V3.1")
    with pytest.raises(td.PolicyError, match="no variant"):
        export.structural_tag("kimi_k2", tools, variant="k2")
    # a family with one spelling writes it whatever the model
    assert export.grammar("kimi_k2", tools, model="moonshotai/Kimi-K2-Instruct") == export.grammar("kimi_k2", tools)
    with pytest.raises(td.PolicyError, match="Shape"):
        export.grammar(HAND_SHAPES["json_in_tags"], tools, variant="v3")


def test_structural_tag_of_a_spelling():
    tools = TOOLSETS["weather"]
    tag = json.dumps(export.structural_tag("deepseek", tools, model="deepseek-ai/DeepSeek-V3.1"), ensure_ascii=False)
    assert "<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>" in tag and "```json" not in tag


def test_variant_write_lines_are_checked(tmp_path):
    from tooldialect.grammar import read_header

    base = "// family: f\n// title: t\n// models: *\n// checked against: x\n// write call: name\n"
    with pytest.raises(td.GrammarError, match="names no declared variant"):
        read_header(base + "// variant a: m/*\n// write call b: name\n", "f")
    with pytest.raises(td.GrammarError, match="first variant"):
        read_header(base + "// variant a: m/*\n// write call a: name\n", "f")
    with pytest.raises(td.GrammarError, match="declared twice"):
        read_header(base + "// variant a: m/*\n// variant a: n/*\n", "f")
    header = read_header(base + '// variant a: m/*\n// variant b: n/*, o/*\n// write sep b: "\\n"\n', "f")
    assert header.variants == (("a", ("m/*",)), ("b", ("n/*", "o/*"))) and header.variant_writes == (
        ("b", "sep", '"\\n"'),
    )
