"""Code calls (Python and TypeScript spellings), registry gating, and one test per review
finding of the pull request that added the code dialect to the seed crate: each would
fail on the behaviour the reviewer flagged."""

from __future__ import annotations

import json

import pytest
from support import ROOT, budget, check_invariants, cuts_for, run_stream

import tooldialect as td
from tooldialect.grammar import read_header
from tooldialect.pyliteral import PYTHON, TYPESCRIPT, Refused, decode_string, decode_template, is_identifier, number

REGISTRY = td.Toolset(
    [
        td.Tool(
            name="read_file",
            parameters={
                "type": "object",
                "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["path"],
            },
        ),
        td.Tool(
            name="shell",
            parameters={
                "type": "object",
                "properties": {
                    "command": {"type": "string"},
                    "background": {"type": "boolean"},
                    "timeout": {"type": "number"},
                },
                "required": ["command"],
            },
        ),
        td.Tool(
            name="configure",
            parameters={"type": "object", "properties": {"config": {"type": "object"}}, "required": ["config"]},
        ),
        td.Tool(name="list_dir", parameters={"type": "object", "properties": {}}),
        td.Tool(name="echo", parameters={"type": "object", "properties": {"value": {"type": "string"}}}),
        td.Tool(name="tool", parameters={"type": "object", "properties": {"$value": {"type": "integer"}}}),
        td.Tool(
            name="open_doc",
            parameters={
                "type": "object",
                "properties": {"file-path": {"type": "string"}, "class": {"type": "boolean"}},
                "required": ["file-path"],
            },
        ),
    ]
)


def parse(body: str, tools=REGISTRY, **opts) -> td.ParseResult:
    """A body inside <tool_call>, parsed; the stream invariants hold at every chunking."""
    text = f"<tool_call>{body}</tool_call>"
    result = td.parse(text, tools=tools, **opts)
    for mode in ("whole", "chars", "random"):
        check_invariants(text, run_stream(text, cuts_for(text, mode), tools=tools, **opts), result)
    return result


def calls(body: str, **opts) -> list[tuple[str, dict]]:
    r = parse(body, **opts)
    return [(c.name, c.arguments) for c in r.calls if c.family == "codecall"]


def refused(body: str, **opts) -> str:
    """The reason a code body is not returned (it must return no call)."""
    r = parse(body, **opts)
    assert r.calls == [], r.calls
    assert r.diagnostics, "a refused body is reported"
    return " ".join(str(d.detail.get("reason", "")) for d in r.diagnostics)


# -- the review findings ----------------------------------------------------------------------


def test_review_spec_and_plan_are_linked_from_the_docs():
    """Finding: the dialect shipped without a linked specification."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/render.md" in readme
    render_doc = (ROOT / "docs" / "render.md").read_text(encoding="utf-8")
    for needed in ("codecall", "pformat", "glm_lines", "signature(", "catalogue("):
        assert needed in render_doc
    decisions = (ROOT / "docs" / "decisions.md").read_text(encoding="utf-8")
    assert "## Registry-gated bodies" in decisions


def test_review_modules_document_their_design():
    """Finding: the code-call module had no document of its design and constraints."""
    import tooldialect.families.codecall as codecall
    import tooldialect.render.signatures as signatures

    for module in (codecall, signatures):
        assert module.__doc__ and len(module.__doc__.split()) > 40
    authoring = (ROOT / "docs" / "authoring.md").read_text(encoding="utf-8")
    assert "`gated`" in authoring and "`text escapes`" in authoring


def test_review_args_dict_fallback_binds():
    """Finding: the fallback stub ``def f(args: dict)`` made models write ``f(args={…})``,
    which bind refused.  The stub is positional-only now, and both spellings bind."""
    stub = td.render.signature(REGISTRY.get("open_doc"), style="python")
    assert stub.startswith("def open_doc(args: dict, /) -> str:")
    compile(stub, "<stub>", "exec")
    want = [("open_doc", {"file-path": "a.txt", "class": True})]
    assert calls('open_doc({"file-path": "a.txt", "class": True})') == want
    assert calls('open_doc(args={"file-path": "a.txt", "class": True})') == want
    # args= is a wrapper only where the fallback applies: elsewhere it is an unknown keyword
    assert "not a parameter" in refused('read_file(args={"path": "a"})')


def test_review_backtick_template_substitution_is_refused():
    """Finding: `${root}/data` was decoded literally and dispatched."""
    assert "${" in refused("read_file({path: `${root}/data`})")
    assert "${" in refused("read_file(`${root}`)")
    assert calls("read_file({path: `a/$b/{c}`})") == [("read_file", {"path": "a/$b/{c}"})]
    assert decode_template("`\\${not a substitution}`") == "${not a substitution}"


def test_review_python_literal_spellings():
    """Finding: ``Literal[true, null]`` in Python signatures; Python spells True and None."""
    tool = td.Tool(
        name="f",
        parameters={
            "type": "object",
            "properties": {"a": {"enum": [True, None, "x", 1]}, "b": {"const": False}},
            "required": ["a"],
        },
    )
    py = td.render.signature(tool, style="python")
    assert 'a: Literal[True, None, "x", 1]' in py and "b: Literal[False] = None" in py
    assert "true" not in py and "null" not in py
    compile(py, "<stub>", "exec")
    ts = td.render.signature(tool, style="typescript")
    assert 'a: true | null | "x" | 1' in ts and "b?: false" in ts


def test_review_combinator_depth_is_bounded():
    """Finding: anyOf/oneOf recursed without a depth bound (stack overflow)."""
    schema: dict = {"type": "string"}
    for i in range(5_000):
        schema = {("anyOf", "oneOf")[i % 2]: [schema, {"type": "integer"}]}
    tool = td.Tool(name="f", parameters={"type": "object", "properties": {"a": schema}, "required": ["a"]})
    for style in td.render.STYLES:
        out = td.render.signature(tool, style=style)
        assert len(out) < 500
    assert "a: Any" in td.render.signature(tool, style="python")
    shallow = {"anyOf": [{"anyOf": [{"type": "string"}, {"type": "null"}]}, {"type": "integer"}]}
    tool = td.Tool(name="g", parameters={"type": "object", "properties": {"a": shallow}, "required": ["a"]})
    assert "a: str | None | int" in td.render.signature(tool, style="python")


def test_review_raw_string_keeps_an_escaped_quote():
    """Finding: ``\\"`` ended a raw string; in Python it is part of it, backslash and all."""
    assert calls('echo(value=r"a\\"b")') == [("echo", {"value": 'a\\"b'})]
    assert calls("echo(value=r'C:\\dir\\')") == []  # the final backslash hides the closing quote
    assert decode_string('"a\\"b"', raw=True) == 'a\\"b'


def test_review_dollar_identifiers_only_in_typescript():
    """Finding: ``tool($value=1)`` and a ``$`` name in a Python dict were accepted."""
    assert "$value" in refused("tool($value=1)")
    assert calls("tool({$value: 1})") == [("tool", {"$value": 1})]
    assert refused("tool(x={$value: 1}, y=None)")  # a Python call: a bare key is a name
    assert is_identifier("$value", TYPESCRIPT) and not is_identifier("$value", PYTHON)
    tool = REGISTRY.get("tool")
    assert td.render.signature(tool, style="python").startswith("def tool(args: dict, /) -> str:")
    assert td.render.signature(tool, style="typescript") == "function tool($value?: number): string;"


def test_review_raw_newline_in_a_one_line_string_is_refused():
    """Finding: a quoted string split over two lines was accepted."""
    for body in ('echo(value="one\ntwo")', "echo({value: 'one\ntwo'})", 'echo(value="one\r\ntwo")'):
        assert "line break" in refused(body)
    assert calls('echo(value="""one\ntwo""")') == [("echo", {"value": "one\ntwo"})]
    assert calls("echo({value: `one\ntwo`})") == [("echo", {"value": "one\ntwo"})]
    assert calls('echo(value="one\\\ntwo")') == [("echo", {"value": "onetwo"})]  # a continuation


@pytest.mark.parametrize("body", ['"\\u12"', '"\\u{not-hex}"', '"\\u{110000}"', '"\\x4"', '"\\xZZ"', '"\\u{}"'])
def test_review_malformed_unicode_escape_is_refused(body):
    """Finding: ``"\\u12"`` and ``"\\u{not-hex}"`` were kept as literal text."""
    assert "escape" in refused(f"echo(value={body})")
    assert "escape" in refused(f"echo({{value: {body}}})")


@pytest.mark.parametrize(
    "word", ["interface", "implements", "let", "package", "private", "protected", "public", "static", "yield", "await"]
)
def test_review_typescript_reserved_words(word):
    """Finding: ``function interface(…)`` was rendered, which TypeScript refuses."""
    tool = td.Tool(name=word, parameters={"type": "object", "properties": {"a": {"type": "string"}}})
    assert td.render.signature(tool, style="typescript") == f'// unsupported tool name: "{word}"'
    param = td.Tool(name="f", parameters={"type": "object", "properties": {word: {"type": "string"}}})
    assert td.render.signature(param, style="typescript") == f"function f(args: {{{word}?: string}}): string;"
    assert not is_identifier(word, TYPESCRIPT)


@pytest.mark.parametrize("text", ["0_1", "0_1.5", "01", "-0_1", "00_7"])
def test_review_leading_zero_with_a_separator_is_refused(text):
    """Finding: ``0_1`` and ``0_1.5`` were read as 1 and 1.5."""
    with pytest.raises(Refused, match="leading zero"):
        number(text)
    assert "leading zero" in refused(f"shell('x', timeout={text})")


def test_review_literal_nesting_is_capped():
    """Finding (fixed in review): literal nesting had no limit."""
    ok = "[" * 64 + "0" + "]" * 64
    assert calls(f"configure(config={{'a': {ok[2:-2]}}})")  # 64 containers with the dict
    r = parse(f"configure(config={'[' * 65}0{']' * 65})")
    assert r.calls == [] and [d.kind for d in r.diagnostics] == ["limit_exceeded"]
    deep = "[" * 100_000 + "0" + "]" * 100_000
    r = td.parse(f"<tool_call>configure(config={deep})</tool_call>", tools=REGISTRY)
    assert r.calls == [] and [d.kind for d in r.diagnostics] == ["limit_exceeded"]


def test_review_fstring_with_braces_is_refused():
    """Finding (fixed in review): ``f"{root}/data"`` was decoded literally."""
    for prefix in ("f", "F", "fr", "rf", "Rf"):
        assert "f-string" in refused(f'read_file(path={prefix}"{{root}}/data")')


def test_review_invalid_tool_names_are_comments_in_the_style():
    """Finding (fixed in review): a name that is not an identifier was rendered as is; and
    the fallback comment was a ``#`` comment in TypeScript too."""
    tool = td.Tool(name="read-file\nignore", parameters={"type": "object", "properties": {}})
    assert td.render.signature(tool, style="python") == '# unsupported tool name: "read-file\\nignore"'
    assert td.render.signature(tool, style="typescript") == '// unsupported tool name: "read-file\\nignore"'
    assert td.render.signature(td.Tool(name="class"), style="python").startswith("# unsupported")


def test_review_empty_object_binding():
    """Finding (fixed in review): ``{}`` was unpacked even for a one-parameter tool."""
    assert calls("configure({})") == [("configure", {"config": {}})]
    assert calls("list_dir({})") == [("list_dir", {})]
    assert calls("read_file({})") == [("read_file", {})]


def test_review_single_parameter_object_is_its_value():
    """Finding (fixed in review): a one-parameter tool's dict argument was unpacked."""
    assert calls("configure({retries: 3})") == [("configure", {"config": {"retries": 3}})]
    assert calls("configure({config: {retries: 3}})") == [("configure", {"config": {"retries": 3}})]
    assert "'file' is not a parameter" in refused('read_file({file: "a"})')


def test_review_identifiers_are_ascii():
    """Finding (fixed in review): identifier checks must follow the target language's
    rules; rendered names are ASCII identifiers."""
    assert td.render.signature(td.Tool(name="café"), style="python").startswith("# unsupported")
    tool = td.Tool(name="f", parameters={"type": "object", "properties": {"naïve": {"type": "string"}}})
    assert td.render.signature(tool, style="python").startswith("def f(args: dict, /)")
    assert td.render.signature(tool, style="typescript") == 'function f(args: {"naïve"?: string}): string;'


# -- binding --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body,want",
    [
        ('read_file(path="src/main.rs", limit=20)', {"path": "src/main.rs", "limit": 20}),
        ('shell("ls", True, 2.5)', {"command": "ls", "background": True, "timeout": 2.5}),
        ('read_file("a.txt", limit=3)', {"path": "a.txt", "limit": 3}),
        ('read_file({path: "a", limit: 2})', {"path": "a", "limit": 2}),
        ('read_file(path="a", limit=None)', {"path": "a"}),
        ('read_file("a", null)', {"path": "a"}),
        ('configure(config={"a": None})', {"config": {"a": None}}),
        ('read_file(path="a", limit="5")', {"path": "a", "limit": 5}),
        ("read_file(path=5)", {"path": 5}),
        ('read_file(path="a,b)=c(d", limit=1)', {"path": "a,b)=c(d", "limit": 1}),
        ("read_file(path='it;s')", {"path": "it;s"}),
        ('shell("x", timeout=1e3)', {"command": "x", "timeout": 1000.0}),
        ('shell("x", timeout=-2)', {"command": "x", "timeout": -2}),
        ('read_file("x", limit=1_000)', {"path": "x", "limit": 1000}),
        ("configure(config={'a': (1, 2,),},)", {"config": {"a": [1, 2]}}),
        ("const r = await read_file({path: 'a'})", {"path": "a"}),
        ("let r = read_file({path: 'a'});", {"path": "a"}),
    ],
)
def test_seed_vectors_bind(body, want):
    got = calls(body)
    assert len(got) == 1 and got[0][1] == want


@pytest.mark.parametrize(
    "body,reason",
    [
        ('read_file(path="a", path="b")', "repeated"),
        ('read_file("a", path="b")', "twice"),
        ('read_file(path="a", encoding="utf8")', "not a parameter"),
        ('read_file("a", 1, 2)', "takes 2"),
        ('read_file(limit=3, "a.txt")', "positional argument after"),
        ("read_file(path=filename)", "name"),
        ('read_file(path="a", limit=1.2.3)', "side by side"),
        ("shell('x', timeout=1e999)", "finite"),
        ('read_file(class="a")', "Python identifier"),
        ('read_file({path: "a", limit: (1, 2)})', "mixes"),
        ("read_file({path: 'a' 'b'})", "mixes"),
        ("read_file({path: r'a'})", "mixes"),
        ('read_file(path="a", limit=True, x=undefined)', "mixes"),
        ("read_file(path='\\u{41}')", "mixes"),
        ('echo({value: "\\101"})', "mixes"),  # an octal escape is Python's
    ],
)
def test_refusals_say_why(body, reason):
    assert reason in refused(body)


def test_all_or_nothing_per_body():
    r = parse('list_dir()\nread_file(path=somewhere)\necho(value="x")')
    assert r.calls == [] and [d.kind for d in r.diagnostics] == ["arguments_invalid"]
    assert "no call of this body" in r.diagnostics[0].message


def test_typescript_escapes_and_surrogates():
    assert decode_string('"\\u{1F600}\\ud83d\\ude00\\0\\`"', language=TYPESCRIPT) == "😀😀\0`"
    with pytest.raises(Refused, match="octal"):
        decode_string('"\\07"', language=TYPESCRIPT)
    assert decode_template("`a\r\nb`") == "a\nb"


# -- registry gating --------------------------------------------------------------------------------


def test_gated_bodies_need_a_toolset():
    r = td.parse('<tool_call>echo(value="hi")</tool_call>')
    assert r.calls == [] and all(d.family != "codecall" for d in r.diagnostics)
    assert td.parse('<tool_call>echo(value="hi")</tool_call>', tools=td.Toolset([])).calls == []


def test_gated_names_bind_exactly_and_are_never_repaired():
    for body in ('Echo(value="hi")', 'functions.Echo(value="hi")', 'echo_(value="hi")', 'tools.echo_(value="hi")'):
        r = parse(body)
        assert [c for c in r.calls if c.family == "codecall"] == []
        assert not any(d.kind == "name_repaired" for d in r.diagnostics)


def test_a_dotted_callee_names_the_tool_of_its_last_segment():
    """Seed §5b: `functions.read_file(path="x")` → read_file; the rewrite is reported."""
    for body in ('functions.echo(value="hi")', 'default_api.echo(value="hi")', "await a.b.echo({value: `hi`})"):
        r = parse(body)
        assert [(c.name, c.arguments, c.family) for c in r.calls] == [("echo", {"value": "hi"}, "codecall")]
        assert [(d.kind, d.detail["from"], d.detail["to"]) for d in r.diagnostics] == [
            ("name_repaired", body.split("(")[0].removeprefix("await "), "echo")
        ]
    # a dotted name the toolset offers as written is that tool, and nothing is rewritten
    dotted = td.Toolset([td.Tool(name="browser.search", parameters={"type": "object", "properties": {"q": {}}})])
    r = parse('browser.search(q="x")', tools=dotted)
    assert [(c.name, c.arguments) for c in r.calls] == [("browser.search", {"q": "x"})] and r.diagnostics == []
    assert "$" in refused('functions.$echo(value="hi")')  # not a Python name, and no tool


def test_a_backtick_string_is_a_string_in_a_keyword_call():
    """Seed §5b: read_file(path=`src/x.rs`) → {"path": "src/x.rs"}, in either language."""
    assert calls("read_file(path=`src/x.ts`)") == [("read_file", {"path": "src/x.ts"})]
    assert calls("read_file(`a.txt`, limit=3)") == [("read_file", {"path": "a.txt", "limit": 3})]
    assert calls("read_file(path=`a`, limit=None)") == [("read_file", {"path": "a"})]  # Python's None beside it
    assert "${" in refused("read_file(path=`${root}/data`)")


def test_a_name_the_toolset_lacks_says_so():
    r = parse('list_dir()\nrm_rf(path="/")')  # committed at list_dir, then an unknown tool
    assert r.calls == [] and [(d.kind, d.family) for d in r.diagnostics] == [("malformed_block", "codecall")]
    assert "'rm_rf' is not a tool the toolset offers" in r.diagnostics[0].detail["reason"]


def test_gated_header_key():
    assert read_header("// family: a\n// gated: toolset\n", "a").gated is True
    assert read_header("// family: a\n", "a").gated is False
    with pytest.raises(td.GrammarError, match="gated must be"):
        read_header("// family: a\n// gated: yes\n", "a")
    assert read_header("// family: a\n// text escapes: backslash\n", "a").text_escapes == "backslash"
    with pytest.raises(td.GrammarError, match="text escapes must be"):
        read_header("// family: a\n// text escapes: json\n", "a")
    assert read_header("// family: a\n// special tokens: only\n", "a").special_tokens == "only"
    assert read_header("// family: a\n", "a").special_tokens == "any"
    with pytest.raises(td.GrammarError, match="special tokens must be"):
        read_header("// family: a\n// special tokens: yes\n", "a")


def test_a_call_in_prose_is_never_bound():
    text = 'I will call read_file(path="a") now, or echo(value="x").'
    r = td.parse(text, tools=REGISTRY)
    assert r.calls == [] and r.diagnostics == [] and r.text == text


def test_calls_are_announced_in_order_and_ended_once():
    text = '<tool_call>read_file(path="a")\nlist_dir()</tool_call>'
    events = run_stream(text, [], tools=REGISTRY)
    starts = [(e.index, e.name) for e in events if isinstance(e, td.CallStart)]
    ends = [(e.index, e.call.name) for e in events if isinstance(e, td.CallEnd)]
    assert starts == ends == [(0, "read_file"), (1, "list_dir")]
    assert [json.loads(e.fragment) for e in events if isinstance(e, td.ArgumentsDelta)] == [{"path": "a"}, {}]


def test_a_comment_cut_at_every_place_is_read_whole():
    body = "\n// a comment (with a paren\nread_file(/* here */ path='a')  # and (here\n"
    assert calls(body) == [("read_file", {"path": "a"})]  # parse() checks every cut
    too_long = "# " + "x" * 600 + "\nread_file(path='a')"
    assert parse(too_long).calls == []  # a comment is at most 500 characters


# -- chunk invariance on random code-ish markup, with a toolset ------------------------------------

from hypothesis import given
from hypothesis import strategies as st

PIECES = [
    "<tool_call>",
    "</tool_call>",
    "<|tool_call|>",
    "\n",
    " ",
    ";",
    ",",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "=",
    ":",
    "read_file",
    "echo",
    "shell",
    "configure",
    "list_dir",
    "nope",
    "value",
    "path",
    "$value",
    "tool",
    '"a"',
    "'b'",
    '"""x\n"""',
    "`t`",
    "`${x}`",
    "r'\\d'",
    'f"{x}"',
    "True",
    "null",
    "undefined",
    "1_000",
    "0_1",
    "# c",
    "// c",
    "/* c */",
    "/*",
    "*/",
    "\\",
    "\\|",
    "\\]",
    "|",
    "0|",
    "1|",
    "/command>",
    "/value>",
    "```python\n",
    "```",
    "await ",
    "const r = ",
    "<think>",
    "</think>",
    '{"name": "echo", "arguments": {"value": "j"}}',
]
FRAGMENTS = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=4)), max_size=24).map("".join)


@given(text=FRAGMENTS, data=st.data())
def test_random_code_markup_at_any_cuts(text, data):
    batch = td.parse(text, tools=REGISTRY)
    cuts = data.draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=12).map(lambda xs: sorted(set(xs))))
    check_invariants(text, run_stream(text, cuts if len(text) > 1 else [], tools=REGISTRY), batch)


@given(text=FRAGMENTS)
@budget(80)
def test_random_code_markup_one_character_at_a_time(text):
    check_invariants(text, run_stream(text, range(1, len(text)), tools=REGISTRY), td.parse(text, tools=REGISTRY))
