"""td.dialects: one object per dialect holding catalogue, call syntax, result envelope and
replay.  Render → parse is the identity for every text dialect (property-tested); replay
pairs cycles in every dialect (the seed crate's flaw 15); native replay keeps the bytes
providers check."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import budget, nested, tool

import tooldialect as td
from tooldialect.transcript import AssistantCall, AssistantToolCalls, Chat, ToolResults

TEXT = ["xml", "pformat", "python", "typescript"]
FAMILY = {"xml": "hermes", "pformat": "pformat", "python": "codecall", "typescript": "codecall"}


WEATHER = tool(
    "get_weather",
    {"location": {"type": "string", "description": "City"}, "unit": {"type": "string", "enum": ["c", "f"]}},
    ["location"],
    "Look up the weather",
)
SEARCH = tool("search", {"q": {"type": "string"}, "limit": {"type": "integer"}}, ["q"])
TOOLS = td.Toolset([WEATHER, SEARCH])


def record(id_: str, name: str, arguments: str, **kw) -> AssistantCall:
    return AssistantCall(id=id_, name=name, arguments=arguments, **kw)


# -- the registry of dialects ----------------------------------------------------------------


def test_get_and_names():
    assert td.dialects.names() == ["xml", "pformat", "python", "typescript", "native"]
    for name in td.dialects.names():
        d = td.dialects.get(name)
        assert d.name == name and d.host_renders_catalogue is False
        assert d.sends_tool_specs is (name == "native")
    assert isinstance(td.dialects.get("xml"), td.dialects.Xml)
    assert td.dialects.get("python", host_renders_catalogue=True) == td.dialects.Python(host_renders_catalogue=True)
    with pytest.raises(td.PolicyError, match="use one of xml, pformat"):
        td.dialects.get("json")
    with pytest.raises(td.PolicyError, match="True or False"):
        td.dialects.Xml(host_renders_catalogue="yes")  # type: ignore[arg-type]


# -- instructions and catalogues --------------------------------------------------------------


@pytest.mark.parametrize("name", TEXT)
def test_instruction_block_example_is_a_call_the_dialect_reads(name):
    d = td.dialects.get(name)
    text = d.instructions(TOOLS)
    assert text.startswith("## Tool use\n\n") and text.endswith("\n")
    assert "<tool_result name=" in text and "[Tool results]" in text
    assert d.catalogue(TOOLS).rstrip("\n") in text
    example = td.Toolset(
        [tool("get_weather", {"location": {"type": "string"}, "unit": {"type": "string"}}, ["location"])]
    )
    got = d.parse(text, example)
    assert [(c.name, c.arguments, c.family) for c in got.calls] == [
        ("get_weather", {"location": "London", "unit": "metric"}, FAMILY[name])
    ]


def test_catalogues_per_dialect():
    xml = td.dialects.Xml().catalogue(TOOLS)
    lines = xml.splitlines()
    assert [json.loads(line) for line in lines] == [
        {"name": t.name, "parameters": t.parameters, **({"description": t.description} if t.description else {})}
        for t in TOOLS
    ]
    assert lines[1] == (
        '{"name": "search", "parameters": {"properties": {"limit": {"type": "integer"}, "q": {"type": "string"}}, '
        '"required": ["q"], "type": "object"}}'
    )
    assert td.dialects.PFormat().catalogue(TOOLS) == td.render.catalogue(TOOLS, style="pformat")
    assert td.dialects.Python().catalogue(TOOLS) == td.render.catalogue(TOOLS, style="python")
    assert td.dialects.TypeScript().catalogue(TOOLS) == td.render.catalogue(TOOLS, style="typescript")
    assert td.dialects.Native().catalogue(TOOLS) == ""
    assert "## Tool use" in td.dialects.Native().instructions(TOOLS)
    assert "same message" in td.dialects.Native().instructions(TOOLS)
    assert "search" not in td.dialects.Native().instructions(TOOLS)  # the request carries the specs


def _shuffled(schema):
    if isinstance(schema, dict):
        return {k: _shuffled(schema[k]) for k in reversed(list(schema))}
    if isinstance(schema, list):
        return [_shuffled(v) for v in schema]
    return schema


@pytest.mark.parametrize("name", td.dialects.names())
def test_prompts_are_byte_stable(name):
    d = td.dialects.get(name)
    again = td.Toolset(
        [td.Tool(name=t.name, description=t.description, parameters=_shuffled(t.parameters)) for t in TOOLS]
    )
    for choice in ("auto", "required", {"name": "search"}):
        assert d.instructions(TOOLS, tool_choice=choice) == d.instructions(again, tool_choice=choice)
        assert d.request_fields(TOOLS, tool_choice=choice) == d.request_fields(TOOLS, tool_choice=choice)
    assert td.render.json_catalogue(TOOLS) == td.render.json_catalogue(again)


def test_tool_choice_lines():
    xml = td.dialects.Xml()
    auto = xml.instructions(TOOLS)
    assert "must call" not in auto and "do not call" not in auto
    assert (
        xml.instructions(TOOLS, tool_choice="required") == auto + "\nIn this reply you must call at least one tool.\n"
    )
    assert xml.instructions(TOOLS, tool_choice="none").endswith(
        "\n\nIn this reply do not call any tool: answer in text.\n"
    )
    assert xml.instructions(TOOLS, tool_choice={"name": "search"}).endswith("you must call the tool search.\n")
    assert xml.instructions([]) == ""


def test_a_tool_called_required_is_never_ambiguous():
    odd = td.Toolset([tool("required", {}), tool("none", {})])
    xml = td.dialects.Xml()
    assert xml.instructions(odd, tool_choice="required").endswith("you must call at least one tool.\n")
    assert xml.instructions(odd, tool_choice={"name": "required"}).endswith("you must call the tool required.\n")
    native = td.dialects.Native()
    assert native.request_fields(odd, tool_choice="none")["tool_choice"] == "none"
    forced = {"type": "function", "function": {"name": "none"}}
    assert native.request_fields(odd, tool_choice={"name": "none"})["tool_choice"] == forced
    assert native.request_fields(odd, tool_choice=forced)["tool_choice"] == forced  # OpenAI's spelling too
    assert xml.instructions(odd, tool_choice=forced).endswith("you must call the tool none.\n")


@pytest.mark.parametrize(
    ("choice", "message"),
    [
        ("search", r"to force the tool 'search' pass \{'name': 'search'\}"),
        ("any", "must be 'auto', 'required', 'none'"),
        ({"name": "nope"}, "not among the tools offered"),
        ({"tool": "search"}, "must be 'auto'"),
        (None, "must be 'auto'"),
    ],
)
def test_tool_choice_mistakes(choice, message):
    for name in td.dialects.names():
        with pytest.raises(td.PolicyError, match=message):
            td.dialects.get(name).instructions(TOOLS, tool_choice=choice)
    with pytest.raises(td.PolicyError, match="at least one tool"):
        td.dialects.Xml().instructions([], tool_choice="required")


def test_host_renders_catalogue():
    answer = tool("final_answer", {"answer": {"type": "string"}}, ["answer"])
    for name in TEXT:
        host = td.dialects.get(name, host_renders_catalogue=True)
        assert host.instructions(TOOLS) == ""
        assert host.instructions(TOOLS, tool_choice="required") == "In this reply you must call at least one tool.\n"
        added = host.instructions(TOOLS, tool_choice={"name": "final_answer"}, turn_tools=[answer])
        assert added == (
            "### Tools added for this turn\n\n"
            + td.dialects.get(name).catalogue([answer]).rstrip("\n")
            + "\n\nIn this reply you must call the tool final_answer.\n"
        )
        assert "get_weather" not in added
        full = td.dialects.get(name).instructions(TOOLS, turn_tools=[answer])
        assert "final_answer" in full and "get_weather" in full
    assert td.dialects.Native(host_renders_catalogue=True).instructions(TOOLS, tool_choice="required") == ""
    with pytest.raises(td.ToolsetError, match="duplicate"):
        td.dialects.Xml().instructions(TOOLS, turn_tools=[SEARCH])


def test_request_fields():
    assert td.dialects.Xml().request_fields(TOOLS, tool_choice="required") == {}
    fields = td.dialects.Native().request_fields(TOOLS)
    assert fields["tool_choice"] == "auto"
    assert fields["tools"][0] == {
        "type": "function",
        "function": {"name": "get_weather", "description": "Look up the weather", "parameters": WEATHER.parameters},
    }
    assert "description" not in fields["tools"][1]["function"]
    assert td.dialects.Native().request_fields([]) == {}


# -- writing calls ------------------------------------------------------------------------------


def test_render_call_per_dialect():
    call = {"name": "search", "arguments": {"q": "a|b", "limit": 3}}
    assert (
        td.dialects.Xml().render_call(call)
        == '<tool_call>\n{"arguments": {"limit": 3, "q": "a|b"}, "name": "search"}\n</tool_call>'
    )
    assert td.dialects.PFormat().render_call(call, TOOLS) == "<tool_call>\nsearch[0|a\\|b|1|3]\n</tool_call>"
    assert td.dialects.Python().render_call(call, TOOLS) == '<tool_call>\nsearch(q="a|b", limit=3)\n</tool_call>'
    assert (
        td.dialects.TypeScript().render_call(call, TOOLS) == '<tool_call>\nsearch({q: "a|b", limit: 3})\n</tool_call>'
    )
    # a parsed call keeps the model's bytes in the JSON form
    parsed = td.parse('<tool_call>{"name": "search", "arguments": {"q":"x",  "limit":2}}</tool_call>').calls[0]
    assert (
        td.dialects.Xml().render_call(parsed)
        == '<tool_call>\n{"arguments": {"q":"x",  "limit":2}, "name": "search"}\n</tool_call>'
    )
    native = td.dialects.Native().render_call(record("call_1", "search", '{"q": "x"}', extra_content={"k": 1}))
    assert native == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "search", "arguments": '{"q": "x"}'},
        "extra_content": {"k": 1},
    }


def test_render_call_mistakes():
    call = {"name": "search", "arguments": {"q": "x"}}
    with pytest.raises(td.PolicyError, match="pass tools= offering 'search'"):
        td.dialects.PFormat().render_call(call)
    with pytest.raises(td.PolicyError, match="blank"):
        td.dialects.PFormat().render_call({"name": "search", "arguments": {"q": " "}}, TOOLS)
    with pytest.raises(td.PolicyError, match="not one JSON object"):
        td.dialects.Xml().render_call({"name": "search", "arguments": "[1]"})
    with pytest.raises(td.PolicyError, match="a call is"):
        td.dialects.Xml().render_call("search(q='x')")
    with pytest.raises(td.PolicyError, match="needs an id"):
        td.dialects.Native().render_call(call)


# -- render → parse identity (hypothesis) ---------------------------------------------------------

NAMES = ["path", "limit", "a", "b_2", "city", "x", "$key", "file-path", "class", "naïve", "two words"]
TRICKY = st.sampled_from(
    [
        "</tool_call>",
        "<tool_call>",
        "</think>",
        "<tool_result>",
        "a|b]c",
        "\\",
        '"',
        "'",
        "{",
        "}",
        "`",
        "${x}",
        "\n",
        " ",
    ]
)
STRINGS = st.one_of(st.text(max_size=12), st.lists(TRICKY, max_size=4).map("".join))
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(10**6), 10**6), STRINGS)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=6,
)
KINDS = {
    "string": ({"type": "string"}, STRINGS),
    "integer": ({"type": "integer"}, st.integers(-(10**12), 10**12)),
    "number": ({"type": "number"}, st.floats(allow_nan=False, allow_infinity=False)),
    "boolean": ({"type": "boolean"}, st.booleans()),
    "strings": ({"type": "array", "items": {"type": "string"}}, st.lists(STRINGS, max_size=3)),
    "object": ({"type": "object"}, st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=3)),
}


@st.composite
def toolsets_and_calls(draw):
    """A toolset of 1–3 tools and 1–3 calls to them with arguments their schemas admit."""
    names = st.one_of(
        st.sampled_from(["do_it", "get_weather", "run", "search_docs"]),
        st.sampled_from(["$find", "read-file", "class"]),
    )
    tool_names = draw(st.lists(names, min_size=1, max_size=3, unique=True))
    tools, values = [], {}
    for name in tool_names:
        params = draw(st.lists(st.sampled_from(NAMES), max_size=3, unique=True))
        kinds = {p: draw(st.sampled_from(sorted(KINDS))) for p in params}
        required = [p for p in params if draw(st.booleans())]
        tools.append(tool(name, {p: dict(KINDS[k][0]) for p, k in kinds.items()}, required))
        values[name] = (kinds, required)
    chosen = []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(tool_names))
        kinds, required = values[name]
        given_ = [p for p in kinds if p in required or draw(st.booleans())]
        chosen.append((name, {p: draw(KINDS[kinds[p]][1]) for p in draw(st.permutations(given_))}))
    return td.Toolset(tools), chosen


@budget(80, deadline=None)
@given(case=toolsets_and_calls())
def test_render_then_parse_is_the_identity(case):
    tools, chosen = case
    for dialect in TEXT:
        d = td.dialects.get(dialect)
        for name, args in chosen:
            try:
                text = d.render_call({"name": name, "arguments": args}, tools)
            except td.PolicyError as exc:
                assert dialect != "xml" and "cannot write" in str(exc)  # a name or blank value the style cannot spell
                continue
            got = d.parse(text, tools)
            assert [(c.name, c.arguments, c.family) for c in got.calls] == [(name, args, FAMILY[dialect])], (
                text,
                got.diagnostics,
            )
            assert got.text == "" and not [x for x in got.diagnostics if x.kind != "arguments_invalid"]


@budget(60, deadline=None)
@given(case=toolsets_and_calls(), content=st.sampled_from([None, "", "Checking.", "Two\nlines\n"]))
def test_replayed_calls_parse_back_in_every_text_dialect(case, content):
    """Folding never fails: what a style cannot write goes in the JSON form every dialect reads."""
    tools, chosen = case
    entry = AssistantToolCalls(
        content=content,
        tool_calls=[record(f"c{i}", n, json.dumps(a, ensure_ascii=False)) for i, (n, a) in enumerate(chosen)],
    )
    answers = ToolResults([td.ToolResult(f"c{i}", n, "ok") for i, (n, _) in enumerate(chosen)])
    for dialect in TEXT:
        messages = td.dialects.get(dialect).replay([Chat("user", "go"), entry, answers], tools=tools)
        assistant = messages[1]
        assert assistant["role"] == "assistant"
        got = td.dialects.get(dialect).parse(assistant["content"], tools)
        assert [(c.name, c.arguments) for c in got.calls] == chosen, (dialect, assistant["content"], got.diagnostics)
        assert got.text.strip() == (content or "").strip()


# -- replay ---------------------------------------------------------------------------------------

HISTORY = [
    Chat("system", "Be brief."),
    Chat("user", "Weather in Paris?"),
    AssistantToolCalls(
        content="Checking.",
        reasoning_content="The user wants Paris.\n",
        tool_calls=[
            record(
                "call_1",
                "get_weather",
                '{"location":"Paris",  "unit":"c"}',
                extra_content={"google": {"thought_signature": "c2ln"}},
            )
        ],
        extra={"name": "agent"},
    ),
    ToolResults([td.ToolResult("call_1", "get_weather", "18C <b>sunny</b>")]),
    Chat("assistant", "18C and sunny."),
]


def test_text_replay_folds_calls_and_results():
    messages = td.dialects.Xml().replay(HISTORY)
    assert messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": 'Checking.\n<tool_call>\n{"arguments": {"location":"Paris",  "unit":"c"}, "name": "get_weather"}\n</tool_call>',
            "reasoning_content": "The user wants Paris.\n",
            "name": "agent",
        },
        {
            "role": "user",
            "content": '[Tool results]\n<tool_result name="get_weather" tool_call_id="call_1" status="ok">\n18C <b>sunny</b>\n</tool_result>\n',
        },
        {"role": "assistant", "content": "18C and sunny."},
    ]
    python = td.dialects.Python().replay(HISTORY, tools=TOOLS)
    assert python[2]["content"] == 'Checking.\n<tool_call>\nget_weather(location="Paris", unit="c")\n</tool_call>'
    # without the toolset a code dialect cannot bind positions: the JSON form it also reads
    assert td.dialects.PFormat().replay(HISTORY)[2]["content"] == messages[2]["content"]


def test_text_replay_pairs_cycles():
    """The seed crate's flaw 15: its text replay did not pair cycles, so an orphan results
    record became a [Tool results] turn answering nothing."""
    orphan_results = ToolResults([td.ToolResult("call_9", "search", "stale")])
    orphan_calls = AssistantToolCalls(tool_calls=[record("call_8", "search", '{"q": "x"}')])
    partial = [
        AssistantToolCalls(tool_calls=[record("a", "search", "{}"), record("b", "search", "{}")]),
        ToolResults([td.ToolResult("a", "search", "only a")]),
    ]
    transcript = [*HISTORY[:2], orphan_results, *HISTORY[2:4], orphan_calls, *partial, HISTORY[4]]
    for name in td.dialects.names():
        d = td.dialects.get(name)
        assert d.replay(transcript, tools=TOOLS) == d.replay(HISTORY, tools=TOOLS), name
        dumped = json.dumps(d.replay(transcript, tools=TOOLS))
        assert "stale" not in dumped and "call_8" not in dumped and "only a" not in dumped


def test_text_replay_merges_consecutive_results_and_splits_verbatim():
    transcript = [
        Chat("user", "go"),
        AssistantToolCalls(
            tool_calls=[record("a", "search", "{}"), record("b", "search", "{}"), record("c", "search", "{}")]
        ),
        ToolResults([td.ToolResult("a", "search", "one")]),
        ToolResults(
            [
                td.ToolResult("b", "search", "RAW[x]\npayload", verbatim=True),
                td.ToolResult("c", "search", "three", "error"),
            ]
        ),
    ]
    turns = td.dialects.Xml().replay(transcript)[2:]
    assert [t["role"] for t in turns] == ["user", "user", "user"]
    assert [r.output for r in td.render.read_results(turns[0]["content"])] == ["one"]
    assert turns[1]["content"] == "RAW[x]\npayload"
    assert [(r.output, r.status) for r in td.render.read_results(turns[2]["content"])] == [("three", "error")]


def test_text_replay_adds_a_user_turn_when_none_is_left():
    compacted = [Chat("system", "sys"), *HISTORY[2:]]
    messages = td.dialects.Xml().replay(compacted)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant"]
    assert messages[1] == {"role": "user", "content": td.dialects.CONTINUATION}
    assert td.dialects.Xml().replay(HISTORY)[1]["content"] == "Weather in Paris?"  # a query: nothing added
    assert td.dialects.Native().replay(compacted)[1]["role"] == "assistant"  # native has real tool turns
    assert td.dialects.Xml().replay([]) == []


def test_native_replay_keeps_the_bytes_providers_check():
    messages = td.dialects.Native().replay(HISTORY)
    extra = HISTORY[2].tool_calls[0].extra_content
    assert messages[2] == {
        "role": "assistant",
        "content": "Checking.",
        "reasoning_content": "The user wants Paris.\n",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"location":"Paris",  "unit":"c"}'},
                "extra_content": {"google": {"thought_signature": "c2ln"}},
            }
        ],
        "name": "agent",
    }
    assert messages[2]["tool_calls"][0]["extra_content"] is extra
    assert messages[3] == {"role": "tool", "tool_call_id": "call_1", "content": "18C <b>sunny</b>"}
    no_text = AssistantToolCalls(tool_calls=[record("x", "search", "not json")])
    got = td.dialects.Native().replay([no_text, ToolResults([td.ToolResult("x", "search", "?")])])
    assert got[0]["content"] is None and got[0]["tool_calls"][0]["function"]["arguments"] == "not json"
    assert "reasoning_content" not in got[0]


def test_results_per_dialect():
    items = [
        td.ToolResult("call_1", "search", "hits </tool_result>"),
        td.ToolResult("call_2", "search", "RAW", verbatim=True),
    ]
    assert td.dialects.Native().render_results(items) == [
        {"role": "tool", "tool_call_id": "call_1", "content": "hits </tool_result>"},
        {"role": "tool", "tool_call_id": "call_2", "content": "RAW"},
    ]
    text = td.dialects.Python().render_results(items)
    assert [m["content"] for m in text] == td.render.results(items)
    assert all(m["role"] == "user" for m in text)


def test_text_replay_of_arguments_that_are_not_an_object():
    broken = AssistantToolCalls(tool_calls=[record("x", "search", '{"q": "cut')])
    for name in TEXT:
        messages = td.dialects.get(name).replay(
            [Chat("user", "go"), broken, ToolResults([td.ToolResult("x", "search", "?")])], tools=TOOLS
        )
        got = td.parse(messages[1]["content"], TOOLS)
        assert got.calls == [] and [d.kind for d in got.diagnostics] == ["arguments_invalid"]
        assert got.diagnostics[0].detail["excerpt"] == '{"q": "cut'


def test_native_parse_never_returns_calls():
    content = 'Sure. <tool_call>{"name": "search", "arguments": {"q": "x"}}</tool_call>'
    got = td.dialects.Native().parse(content, TOOLS)
    assert isinstance(got, td.detect.DetectResult)
    assert got.visible == "Sure. " and [i.name for i in got.intents] == ["search"]
    assert not hasattr(got, "calls")
    text = td.dialects.Xml().parse(content, TOOLS)
    assert [c.name for c in text.calls] == ["search"]


def test_replay_mistakes():
    with pytest.raises(td.PolicyError, match="entry #0"):
        td.dialects.Xml().replay([{"role": "user", "content": "hi"}])  # type: ignore[list-item]
    with pytest.raises(td.PolicyError, match="ToolResult"):
        td.dialects.Native().render_results(["x"])  # type: ignore[list-item]


@pytest.mark.parametrize("depth", [600, 5000])
def test_replay_of_deeply_nested_arguments_never_recurses(depth):
    deep = '{"x": ' + "[" * depth + "]" * depth + "}"
    entry = AssistantToolCalls(tool_calls=[record("a", "search", deep)])
    transcript = [Chat("user", "go"), entry, ToolResults([td.ToolResult("a", "search", "r")])]
    for name in TEXT:
        folded = td.dialects.get(name).replay(transcript, tools=TOOLS)[1]["content"]
        got = td.parse(folded, TOOLS)
        assert got.calls == [] and got.diagnostics, name  # reported (limit_exceeded or arguments_invalid), not run
    assert td.dialects.Native().replay(transcript)[1]["tool_calls"][0]["function"]["arguments"] == deep
    with pytest.raises(td.PolicyError, match="deeper than 512"):
        td.dialects.Xml().render_call({"name": "search", "arguments": {"x": json.loads("[" * 600 + "]" * 600)}})


DEEP = tool("f", {"a": {}}, ["a"])


@pytest.mark.parametrize("name", TEXT)
def test_a_call_parse_returns_under_the_deepest_policy_is_written_back(name):
    policy = td.Policy(max_depth=512)
    call = td.parse("[f(a=" + "[" * 400 + "]" * 400 + ")]", policy=policy).calls[0]
    text = td.dialects.get(name).render_call(call, tools=[DEEP])  # python: a RecursionError before
    assert [c.arguments for c in td.parse(text, [DEEP], policy=policy).calls] == [call.arguments]


@pytest.mark.parametrize("name", TEXT)
@pytest.mark.parametrize("depth", [400, 5000])
def test_every_writer_of_a_dialect_bounds_its_depth(name, depth):
    dialect = td.dialects.get(name)
    arguments = {"a": nested(depth)}
    deep = '{"a": ' + "[" * depth + "1" + "]" * depth + "}"  # by hand: json.dumps cannot write 5000 levels
    transcript = [
        Chat("user", "go"),
        AssistantToolCalls(tool_calls=[record("c", "f", deep)]),
        ToolResults([td.ToolResult("c", "f", "r")]),
    ]
    replayed = dialect.replay(transcript, tools=[DEEP])[1]["content"]
    got = td.parse(replayed, [DEEP], policy=td.Policy(max_depth=512))
    if depth == 400:
        assert dialect.render_call({"name": "f", "arguments": arguments}, tools=[DEEP])
        assert [c.arguments for c in got.calls] == [arguments]
    else:
        with pytest.raises(td.PolicyError, match="deeper than 512 levels"):
            dialect.render_call({"name": "f", "arguments": arguments}, tools=[DEEP])
        assert got.calls == [] and got.diagnostics  # written, not walked: reported, never run
