"""td.render: signatures and catalogues in P-Format, Python and TypeScript; render → parse
is the identity for random schemas and arguments; Python stubs always compile."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import nested, tool

import tooldialect as td
from tooldialect.render.signatures import MAX_TYPE_DEPTH

SHELL = tool(
    "shell",
    {"command": {"type": "string"}, "background": {"type": "boolean"}, "timeout": {"type": "number"}},
    ["command"],
)
READ = tool("read_file", {"path": {"type": "string"}, "limit": {"type": "integer"}}, ["path"])


def ptype(schema: dict) -> str:
    """The Python type a signature writes for one parameter."""
    line = td.render.signature(tool("f", {"a": schema}, ["a"]), style="python").splitlines()[0]
    return (
        line[len("def f(a: ") : -len(") -> str:")]
        if line.endswith(") -> str:")
        else line[len("def f(a: ") : -len(") -> str: ...")]
    )


def tstype(schema: dict) -> str:
    line = td.render.signature(tool("f", {"a": schema}, ["a"]), style="typescript")
    return line[len("function f(a: ") : -len("): string;")]


# -- signatures -------------------------------------------------------------------------------


def test_pformat_signatures_list_slots_in_binding_order():
    sig = lambda t: td.render.signature(t, style="pformat")  # noqa: E731
    assert sig(tool("ping", {})) == "ping[]"
    assert sig(tool("get_weather", {"location": {"type": "string"}, "unit": {"type": "string"}})) == (
        "get_weather[0|<location>|1|<unit>]"
    )
    math = tool("math", {"x": {"type": "integer"}, "y": {"type": "number"}, "verbose": {"type": "boolean"}})
    assert sig(math) == "math[0|<verbose>|1|<x>|2|<y>]"
    threads = tool(
        "list_threads",
        {
            "max_results": {"type": "integer"},
            "query": {"type": "string"},
            "verbose": {"type": "boolean"},
            "user_id": {"type": "string"},
        },
        ["query"],
    )
    assert sig(threads) == "list_threads[0|<query>|1|<max_results>|2|<user_id>|3|<verbose>]"
    assert td.render.parameter_order(threads.parameters) == ["query", "max_results", "user_id", "verbose"]


def test_code_signatures():
    py = lambda t: td.render.signature(t, style="python")  # noqa: E731
    ts = lambda t: td.render.signature(t, style="typescript")  # noqa: E731
    assert py(SHELL) == "def shell(command: str, background: bool = None, timeout: float = None) -> str: ..."
    assert py(READ) == "def read_file(path: str, limit: int = None) -> str: ..."
    assert py(td.Tool(name="list_dir", parameters={"type": "object"})) == "def list_dir() -> str: ..."
    assert ts(SHELL) == "function shell(command: string, background?: boolean, timeout?: number): string;"
    assert ts(td.Tool(name="list_dir", parameters={})) == "function list_dir(): string;"
    odd = tool("read_file", {"file-path": {"type": "string"}, "class": {"type": "boolean"}}, ["file-path"])
    assert ts(odd) == 'function read_file(args: {"file-path": string, class?: boolean}): string;'
    assert (
        ts(tool("read_file", {"class": {"type": "boolean"}})) == "function read_file(args: {class?: boolean}): string;"
    )


def test_docstrings_come_from_descriptions():
    t = tool(
        "get_weather",
        {"city": {"type": "string", "description": "The city,\n  in English."}, "unit": {"enum": ["c", "f"]}},
        ["city"],
        description='Current weather.\nUses the "metric" table.',
    )
    py = td.render.signature(t, style="python")
    assert py == (
        'def get_weather(city: str, unit: Literal["c", "f"] = None) -> str:\n'
        '    """Current weather.\n'
        '    Uses the "metric" table.\n'
        "\n"
        "    Args:\n"
        "        city: The city, in English.\n"
        "        unit\n"
        '    """'
    )
    compile(py, "<stub>", "exec")
    ts = td.render.signature(t, style="typescript")
    assert ts == (
        '/**\n * Current weather.\n * Uses the "metric" table.\n * @param city The city, in English.\n */\n'
        'function get_weather(city: string, unit?: "c" | "f"): string;'
    )
    assert "*/" not in td.render.signature(tool("f", {}, description="a */ b"), style="typescript")[:-40]


@pytest.mark.parametrize(
    "schema,python,typescript",
    [
        ({"type": "string", "enum": ["metric", "imperial"]}, 'Literal["metric", "imperial"]', '"metric" | "imperial"'),
        ({"enum": ["\u0001"]}, 'Literal["\\u0001"]', '"\\u0001"'),
        ({"type": "array", "items": {"type": "string"}}, "list[str]", "string[]"),
        ({"type": "array", "items": {"type": ["string", "null"]}}, "list[str | None]", "Array<string | null>"),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, "str | int", "string | number"),
        ({"type": ["string", "null"]}, "str | None", "string | null"),
        ({"type": "string", "nullable": True}, "str | None", "string | null"),
        ({}, "Any", "unknown"),
        ({"anyOf": [{"type": "string"}, {}]}, "Any", "unknown"),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string"}, "file-path": {"type": "boolean"}},
                "required": ["a"],
            },
            "dict",
            '{a: string, "file-path"?: boolean}',
        ),
        ({"const": None}, "Literal[None]", "null"),
    ],
)
def test_types(schema, python, typescript):
    assert ptype(schema) == python
    assert tstype(schema) == typescript


def test_nested_types_are_capped():
    schema: dict = {"type": "string"}
    for _ in range(6):
        schema = {"type": "object", "properties": {"x": schema}, "required": ["x"]}
    out = tstype(schema)
    assert "object" in out and "string" not in out and out.count("{") == MAX_TYPE_DEPTH
    many = {"type": "object", "properties": {f"k{i:02}": {"type": "integer"} for i in range(20)}}
    assert tstype(many).endswith("k15?: number, [key: string]: unknown}")


def test_catalogues():
    tools = td.Toolset([READ, td.Tool(name="ping", description="Is it up?")])
    assert td.render.catalogue(tools, style="pformat") == (
        "read_file[0|<path>|1|<limit>]\n    0 path: string, required\n    1 limit: number\n\nping[] — Is it up?\n"
    )
    py = td.render.catalogue(tools, style="python")
    assert (
        py
        == 'def read_file(path: str, limit: int = None) -> str: ...\n\ndef ping() -> str:\n    """Is it up?\n    """\n'
    )
    compile(py, "<catalogue>", "exec")
    assert td.render.catalogue([], style="typescript") == ""
    raw = [{"type": "function", "function": {"name": "ping", "parameters": {"type": "object", "properties": {}}}}]
    assert td.render.catalogue(raw, style="typescript") == "function ping(): string;\n"


def test_caller_mistakes_raise():
    with pytest.raises(td.PolicyError, match="use one of"):
        td.render.signature(READ, style="xml")
    with pytest.raises(td.PolicyError, match=r"td\.Tool"):
        td.render.signature("read_file")
    with pytest.raises(td.ToolsetError):
        td.render.catalogue([{"nope": 1}])
    with pytest.raises(td.PolicyError, match="blank"):
        td.render.call(READ, {"path": "  "}, style="pformat")
    with pytest.raises(td.PolicyError, match="not a parameter"):
        td.render.call(READ, {"file": "a"}, style="pformat")
    with pytest.raises(td.PolicyError, match="dict"):
        td.render.call(READ, ["a"], style="python")  # type: ignore[arg-type]
    with pytest.raises(td.PolicyError, match="cannot write the tool name"):
        td.render.call(td.Tool(name="class"), {}, style="python")


def test_calls():
    assert td.render.call(READ, {"path": "a|b]\\c", "limit": 3}, style="pformat") == "read_file[0|a\\|b\\]\\\\c|1|3]"
    assert td.render.call(READ, {"path": "a", "limit": 3}, style="python") == 'read_file(path="a", limit=3)'
    assert td.render.call(READ, {"path": "a", "limit": 3}, style="typescript") == 'read_file({path: "a", limit: 3})'
    assert td.render.call(READ, {}, style="typescript") == "read_file()"
    odd = tool("f", {"file-path": {"type": "string"}})
    assert td.render.call(odd, {"file-path": "x"}, style="python") == 'f({"file-path": "x"})'


# -- properties ---------------------------------------------------------------------------------

NAMES = ["path", "limit", "a", "b_2", "city", "value", "x", "$key", "file-path", "class", "naïve", "two words", "let"]
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.text(max_size=8))
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=8,
)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)

KINDS = {
    "string": ({"type": "string"}, st.text()),
    "integer": ({"type": "integer"}, st.integers(-(10**15), 10**15)),
    "number": ({"type": "number"}, st.one_of(FLOATS, st.integers(-(10**9), 10**9))),
    "boolean": ({"type": "boolean"}, st.booleans()),
    "strings": ({"type": "array", "items": {"type": "string"}}, st.lists(st.text(max_size=6), max_size=4)),
    "integers": ({"type": "array", "items": {"type": "integer"}}, st.lists(st.integers(-99, 99), max_size=4)),
    "object": ({"type": "object"}, st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=4)),
    "enum": (
        {"type": "string", "enum": ["metric", "imperial", "a|b", "x]y", "C:\\dir"]},
        st.sampled_from(["metric", "imperial", "a|b", "x]y", "C:\\dir"]),
    ),
}


@st.composite
def tools_and_arguments(draw):
    names = draw(st.lists(st.sampled_from(NAMES), min_size=0, max_size=4, unique=True))
    kinds = {n: draw(st.sampled_from(sorted(KINDS))) for n in names}
    required = [n for n in names if draw(st.booleans())]
    props = {n: dict(KINDS[k][0]) for n, k in kinds.items()}
    t = tool(draw(st.sampled_from(["do_it", "get_weather", "$find", "run"])), props, required)
    given_ = [n for n in names if n in required or draw(st.booleans())]
    args = {n: draw(KINDS[kinds[n]][1]) for n in draw(st.permutations(given_))}
    return t, args


OTHER = tool("unrelated", {"q": {"type": "string"}})


@given(case=tools_and_arguments())
def test_render_then_parse_is_the_identity(case):
    t, args = case
    tools = td.Toolset([OTHER, t])
    for style, family in (("pformat", "pformat"), ("python", "codecall"), ("typescript", "codecall")):
        if style == "python" and t.name.startswith("$"):
            continue  # not a Python name: the catalogue writes a comment for it
        if style == "pformat" and (
            t.name.startswith("$") or any(isinstance(v, str) and not v.strip() for v in args.values())
        ):
            continue  # P-Format has no $ names and no blank strings
        body = td.render.call(t, args, style=style)
        r = td.parse(f"<tool_call>\n{body}\n</tool_call>", tools=tools)
        assert [(c.name, c.arguments, c.family) for c in r.calls] == [(t.name, args, family)], (
            style,
            body,
            r.diagnostics,
        )
        assert r.diagnostics == [] and r.text == ""
        assert json.loads(r.calls[0].arguments_json) == args


TEXTS = st.text(alphabet=st.sampled_from(list("ab \"\\'\n\t*/#\x00\x1f\u2028é{}$`<>|]")), max_size=20)
SCHEMAS = st.recursive(
    st.one_of(
        st.sampled_from(
            [{}, {"type": "string"}, {"type": "integer"}, {"type": ["number", "null"]}, {"type": "bogus"}, {"type": 3}]
        ),
        st.builds(lambda v: {"enum": v}, st.lists(JSON_VALUES, min_size=1, max_size=3)),
        st.builds(lambda v: {"const": v}, JSON_VALUES),
        st.builds(lambda d: {"type": "string", "description": d}, TEXTS),
    ),
    lambda inner: st.one_of(
        st.builds(lambda s: {"type": "array", "items": s}, inner),
        st.builds(lambda xs: {"anyOf": xs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda xs: {"oneOf": xs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda xs: {"allOf": xs}, st.lists(inner, min_size=1, max_size=2)),
        st.builds(
            lambda p: {"type": "object", "properties": p}, st.dictionaries(st.sampled_from(NAMES), inner, max_size=3)
        ),
    ),
    max_leaves=12,
)


@given(
    name=st.one_of(st.sampled_from(["f", "get_weather", "class", "$x", "café", "a-b", "match"]), st.text(max_size=8)),
    props=st.dictionaries(st.one_of(st.sampled_from(NAMES), st.text(max_size=6)), SCHEMAS, max_size=4),
    description=TEXTS,
    data=st.data(),
)
def test_python_signatures_compile(name, props, description, data):
    required = data.draw(st.lists(st.sampled_from(sorted(props) or ["x"]), max_size=3, unique=True))
    t = tool(name or "f", props, required, description)
    source = td.render.signature(t, style="python")  # a td.Tool's schema is not checked: still valid
    compile(source, "<stub>", "exec")
    try:
        catalogue = td.render.catalogue([t, READ], style="python")
    except td.ToolsetError:
        return  # a schema that is not valid JSON Schema: a toolset refuses it
    compile(catalogue, "<catalogue>", "exec")
    for style in ("pformat", "typescript"):
        out = td.render.signature(t, style=style)
        assert out == td.render.signature(t, style=style)  # stable


# -- depth ------------------------------------------------------------------------------------

DEEP = tool("f", {"a": {}}, ["a"])


@pytest.mark.parametrize("style", td.render.STYLES)
def test_call_writes_a_value_as_deep_as_a_policy_reads(style):
    arguments = {"a": nested(400)}
    body = td.render.call(DEEP, arguments, style=style)  # the Python writer used to overflow the stack
    got = td.parse(f"<tool_call>{body}</tool_call>", [DEEP], policy=td.Policy(max_depth=512))
    assert [c.arguments for c in got.calls] == [arguments]


@pytest.mark.parametrize("style", td.render.STYLES)
def test_call_refuses_a_value_deeper_than_any_parser_reads(style):
    with pytest.raises(td.PolicyError, match=r"deeper than 512 levels.*flatten"):
        td.render.call(DEEP, {"a": nested(5000)}, style=style)


@pytest.mark.parametrize("style", ["python", "typescript"])
@pytest.mark.parametrize("depth", [400, 5000])
def test_a_deep_enum_or_const_is_spelled_or_is_anything_never_a_recursion_error(style, depth):
    # a td.Tool is not checked as a toolset is, so its schema may hold values of any depth
    t = tool("f", {"a": {"enum": [nested(depth)]}, "b": {"const": nested(depth)}}, ["a", "b"])
    out = td.render.signature(t, style=style)
    anything = "Any" if style == "python" else "unknown"
    if depth == 400:
        assert out.count("[" * 400 + "1" + "]" * 400) == 2 and anything not in out
    else:
        assert out.count(anything) == 2 and "[[" not in out
