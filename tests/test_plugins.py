"""Families from outside grammars/: the authoring walkthrough, registry sources, grammar check."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import pytest
from support import NEXUSRAVEN, ROOT, check_invariants, cuts_for, run_stream

import tooldialect as td
from tooldialect import families as registry
from tooldialect import transform
from tooldialect.cli import main
from tooldialect.corpus import MODES, case_problem, read_corpus

GUIDE = ROOT / "docs" / "authoring.md"
GRAMMARS = ROOT / "grammars"
REPLY = "Checking.\n<<call get_weather>>\n<<arg city>>\nParis\n<</arg>>\n<<arg days>>\n3\n<</arg>>\n<</call>> Done."


pytestmark = pytest.mark.usefixtures("restore_registry")  # tests/conftest.py


def guide_files() -> dict[str, str]:
    """The files the walkthrough writes, exactly as the guide shows them."""
    text = GUIDE.read_text(encoding="utf-8")
    return dict(re.findall(r"<!-- file: (\S+) -->\n```[a-z]*\n(.*?)```\n", text, re.S))


def write_walkthrough(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, body in guide_files().items():
        (directory / name).write_text(body, encoding="utf-8")
    return directory


def ledger_grammar(family: str = "ledger") -> str:
    return guide_files()["ledger.lark"].replace("// family: ledger", f"// family: {family}")


def check(capsys, *args: str) -> tuple[int, str]:
    code = main(["grammar", "check", *args])
    out = capsys.readouterr()
    return code, out.out + out.err


# -- the walkthrough ---------------------------------------------------------------------


def test_the_guide_shows_a_grammar_and_a_corpus_and_nothing_else(tmp_path):
    files = guide_files()
    assert set(files) == {"ledger.lark", "ledger.txt"}  # no Python
    assert "%import ._json" in files["ledger.lark"]
    cases = read_corpus(write_walkthrough(tmp_path) / "ledger.txt")
    assert len(cases) == 4 and all(c.expected is not None for c in cases)


def test_walkthrough_family_passes_grammar_check(tmp_path, capsys):
    d = write_walkthrough(tmp_path / "my_grammars")
    code, out = check(capsys, str(d / "ledger.lark"), "--corpus", str(d / "ledger.txt"))
    assert code == 0, out
    assert "corpus ledger.txt: 4 cases" in out and "checks, passed" in out
    assert "ledger" not in td.families.names()  # the check registers nothing for good


def test_walkthrough_family_parses_and_streams_once_registered(tmp_path):
    d = write_walkthrough(tmp_path / "my_grammars")
    assert td.parse(REPLY).calls == []  # not a family yet
    assert td.families.register_path(d) == ["ledger"]
    assert "ledger" in td.families.names()
    fam = td.families.get("ledger")
    assert fam.source is not None and fam.source.kind == "registered" and fam.path == d.resolve() / "ledger.lark"
    assert "ledger" in td.families.for_model("example-org/ledger-7b").families
    result = td.parse(REPLY)  # every family, the new one included
    assert [(c.name, c.arguments, c.family) for c in result.calls] == [
        ("get_weather", {"city": "Paris", "days": 3}, "ledger")
    ]
    assert result.text == "Checking.\n Done."
    for mode in MODES[1:]:
        check_invariants(REPLY, run_stream(REPLY, cuts_for(REPLY, mode)), result)
    events = run_stream(REPLY, range(1, len(REPLY)), families=["ledger"])
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("CallStart") < kinds.index("ArgumentsDelta") < kinds.index("CallEnd")
    schema = {"type": "object", "properties": {"days": {"type": "string"}}}
    tools = td.Toolset([td.Tool(name="get_weather", parameters=schema)])
    assert td.parse(REPLY, tools=tools).calls[0].arguments == {"city": "Paris", "days": "3"}
    for case in read_corpus(d / "ledger.txt"):
        for mode in MODES:
            assert case_problem(case, mode) is None, (case.title, mode)


def test_walkthrough_family_writes_its_calls_back_and_exports_a_grammar(tmp_path):
    """The guide's `// write` lines are all a plugin needs for render_call and td.export."""
    pytest.importorskip("llguidance", reason="the export extra (llguidance) is not installed")
    td.families.register_path(write_walkthrough(tmp_path / "my_grammars"))
    fam = td.families.get("ledger")
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
        "additionalProperties": False,
    }
    tools = td.Toolset([td.Tool(name="get_weather", parameters=schema), td.Tool(name="get_time")])
    calls = [
        {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}},
        {"name": "get_time", "arguments": {}},
    ]
    written = fam.render_calls(calls)
    assert written.startswith("<<call get_weather>>\n<<arg city>>\nParis\n<</arg>>\n")
    back = td.parse(written, tools=tools, families=["ledger"])
    assert [(c.name, c.arguments) for c in back.calls] == [(c["name"], c["arguments"]) for c in calls]
    assert back.diagnostics == []

    from test_export import accepts

    grammar = td.export.grammar("ledger", tools)
    assert accepts(grammar, "Checking.\n" + written)
    assert not accepts(grammar, written.replace("get_weather", "get_news"))  # not offered
    assert not accepts(grammar, written.replace("<<arg days>>\n3\n", "<<arg days>>\nthree\n"))  # not an integer


# -- sources -------------------------------------------------------------------------------


def test_registering_the_same_directory_twice_changes_nothing(tmp_path):
    d = write_walkthrough(tmp_path / "g")
    td.families.register_path(d)
    before = td.families.names()
    td.families.register_path(str(d))
    assert td.families.names() == before
    assert [s.kind for s in td.families.sources()] == ["built-in", "registered"]


def test_a_duplicate_name_names_both_sources(tmp_path):
    first = write_walkthrough(tmp_path / "first")
    second = write_walkthrough(tmp_path / "second")
    td.families.register_path(first)
    with pytest.raises(td.GrammarError) as err:
        td.families.register_path(second)
    message = str(err.value)
    assert str(first.resolve() / "ledger.lark") in message and str(second.resolve() / "ledger.lark") in message
    assert "register_path" in message
    assert td.families.get("ledger").path.parent == first.resolve()
    assert [s.directory for s in td.families.sources()][1:] == [first.resolve()]


def test_a_plugin_cannot_replace_a_builtin_family(tmp_path):
    d = tmp_path / "g"
    d.mkdir()
    (d / "hermes.lark").write_text(ledger_grammar("hermes"), encoding="utf-8")
    with pytest.raises(td.GrammarError) as err:
        td.families.register_path(d)
    assert str(registry.grammar_dir() / "hermes.lark") in str(err.value)
    assert str(d.resolve() / "hermes.lark") in str(err.value)
    assert td.families.get("hermes").source is None


def test_a_missing_directory_is_an_error(tmp_path):
    with pytest.raises(td.GrammarError, match="not a directory"):
        td.families.register_path(tmp_path / "nope")


def test_grammar_path_variable(tmp_path, monkeypatch):
    d = write_walkthrough(tmp_path / "env")
    monkeypatch.setenv(registry.PATH_VARIABLE, str(d))
    td.families.reload()
    assert td.families.get("ledger").source.kind == "environment"
    assert [c.family for c in td.parse(REPLY).calls] == ["ledger"]
    monkeypatch.setenv(registry.PATH_VARIABLE, str(tmp_path / "missing"))
    td.families.reload()
    with pytest.raises(td.GrammarError, match=registry.PATH_VARIABLE):
        td.families.names()


#: A grammar that does not compile: its call rule uses a ``name`` rule it never defines.
UNCOMPILED = NEXUSRAVEN.replace("name: PY_NAME\n", "")
UNCOMPILED_AT = "nexusraven.lark:{}".format(UNCOMPILED.splitlines().index('call: name "(" args? ")"') + 1)
HERMES_REPLY = 'Sure.\n<tool_call>{"name": "get_time", "arguments": {}}</tool_call>'


def _with_a_broken_grammar(directory: Path) -> Path:
    write_walkthrough(directory)
    (directory / "nexusraven.lark").write_text(UNCOMPILED, encoding="utf-8")
    return directory


def test_a_grammar_that_does_not_compile_is_refused_where_it_is_registered(tmp_path):
    """register_path compiles what it registers: a broken grammar is an error there, naming
    its file and line, and nothing of the directory is registered; every parse reads as before."""
    d = _with_a_broken_grammar(tmp_path / "g")
    before = td.families.names()
    with pytest.raises(td.GrammarError) as err:
        td.families.register_path(d)
    message = str(err.value)
    assert f"grammar {UNCOMPILED_AT}: Rule 'name' used but not defined (in rule call)" in message
    assert str(d.resolve() / "nexusraven.lark") in message and "register_path" in message
    assert "nothing from the directory is registered" in message
    assert td.families.names() == before and [s.kind for s in td.families.sources()] == ["built-in"]
    result = td.parse(HERMES_REPLY)  # a default parse: every family on
    assert [(c.name, c.family) for c in result.calls] == [("get_time", "hermes")] and result.text == "Sure.\n"
    assert td.parse(REPLY).calls == []  # the good grammar beside it was not registered either
    (d / "nexusraven.lark").unlink()
    assert td.families.register_path(d) == ["ledger"]  # the directory fixed, it registers
    assert [c.family for c in td.parse(REPLY + HERMES_REPLY).calls] == ["ledger", "hermes"]


def test_a_grammar_on_the_path_variable_that_does_not_compile_is_an_error_naming_it(tmp_path, monkeypatch):
    d = _with_a_broken_grammar(tmp_path / "env")
    monkeypatch.setenv(registry.PATH_VARIABLE, str(d))
    td.families.reload()
    for use in (td.families.names, lambda: td.parse(HERMES_REPLY)):
        with pytest.raises(td.GrammarError) as err:
            use()
        message = str(err.value)
        assert registry.PATH_VARIABLE in message and f"grammar {UNCOMPILED_AT}: Rule 'name'" in message
        assert str(d.resolve() / "nexusraven.lark") in message
    (d / "nexusraven.lark").unlink()
    td.families.reload()
    assert [c.family for c in td.parse(REPLY + HERMES_REPLY).calls] == ["ledger", "hermes"]


def test_python_beside_a_registered_grammar_is_never_run(tmp_path):
    d = write_walkthrough(tmp_path / "g")
    (d / "ledger.py").write_text("raise RuntimeError('a grammar directory was imported')\n", encoding="utf-8")
    td.families.register_path(d)
    assert [c.name for c in td.parse(REPLY).calls] == ["get_weather"]
    assert transform.reader_class("ledger") is transform.Reader


def test_a_plugin_imports_its_own_pieces_and_the_builtin_ones(tmp_path):
    d = tmp_path / "g"
    d.mkdir()
    grammar = guide_files()["ledger.lark"]
    markers = grammar[grammar.index('CALL_OPEN: "<<call"') :]
    (d / "_ledger_tags.lark").write_text("// Shared piece: Ledger tags\n" + markers, encoding="utf-8")
    own = grammar[: grammar.index('CALL_OPEN: "<<call"')]
    own += "%import ._ledger_tags (CALL_OPEN, CALL_CLOSE, ARG_OPEN, ARG_CLOSE, TAG_END)\n"
    (d / "ledger.lark").write_text(own, encoding="utf-8")
    assert td.families.register_path(d) == ["ledger"]  # the _ piece is not a family
    assert [c.arguments for c in td.parse(REPLY).calls] == [{"city": "Paris", "days": 3}]


# A family whose arguments are Python literals, from a grammar alone: `@@call NAME(k=v, …)`.
LITERAL_GRAMMAR = """\
// family: atcall
// title: @@call NAME(key=value, ...) lines with Python literal arguments
// models: example-org/atcall-*
// checked against: an invented format (the generic reader reads Python keyword arguments)
// write call: CALL_OPEN " " name:PY_NAME "(" arguments:keywords ")"
// write sep: "\\n"

%import ._json (WS)
%import ._pyliteral (py_value, _py_atom, py_name, py_string, py_template, py_number, py_op, py_list, py_tuple, py_dict, py_entry, _py_items, _py_item, py_kwarg, PY_STRING, BACKTICK_STRING, PY_NAME, PY_NUMBER, PY_OP, COMMA)
%ignore WS

start: CALL_OPEN call
call: name "(" _py_items? ")"
name: PY_NAME

CALL_OPEN: "@@call"
"""
LITERAL_REPLY = (
    'First.\n@@call configure(name="it\'s", count=3, ratio=-0.5, on=True, off=None, '
    'tags=["a", \'b\', (1, 2)], options={"depth": {"max": 2, "keep": [None, False]}})\n'
    "@@call get_time()\n@@call get_weather(city=here)\nDone."
)


def test_a_python_literal_family_needs_a_grammar_only(tmp_path):
    d = tmp_path / "g"
    d.mkdir()
    (d / "atcall.lark").write_text(LITERAL_GRAMMAR, encoding="utf-8")
    assert td.families.register_path(d) == ["atcall"]
    assert transform.reader_class("atcall") is transform.Reader  # no module: the generic reader
    result = td.parse(LITERAL_REPLY, families=["atcall"])
    want = {
        "name": "it's",
        "count": 3,
        "ratio": -0.5,
        "on": True,
        "off": None,
        "tags": ["a", "b", [1, 2]],
        "options": {"depth": {"max": 2, "keep": [None, False]}},
    }
    assert [(c.name, c.arguments, c.family) for c in result.calls] == [
        ("configure", want, "atcall"),
        ("get_time", {}, "atcall"),
    ]
    assert json.loads(result.calls[0].arguments_json) == want
    # a value that is not a literal refuses its own call, and says why
    assert [(d.kind, d.detail["name"]) for d in result.diagnostics] == [("arguments_invalid", "get_weather")]
    assert "'here' is a name, not a literal" in result.diagnostics[0].detail["reason"]
    assert result.text == "First.\n\n\n\nDone."
    for mode in MODES[1:]:
        events = run_stream(LITERAL_REPLY, cuts_for(LITERAL_REPLY, mode), families=["atcall"])
        check_invariants(LITERAL_REPLY, events, result)
    # each keyword argument streams as soon as it is read: one fragment per argument
    events = run_stream(LITERAL_REPLY, range(1, len(LITERAL_REPLY)), families=["atcall"])
    fragments = [e.fragment for e in events if isinstance(e, td.ArgumentsDelta) and e.index == 0]
    assert len(fragments) >= len(want) and "".join(fragments) == result.calls[0].arguments_json
    # cut off inside a value: the complete arguments survive for Policy(truncated="keep")
    cut = '@@call configure(count=3, tags=["a"], note="unfinis'
    kept = td.parse(cut, families=["atcall"], policy=td.Policy(truncated="keep"))
    assert [(c.name, c.arguments) for c in kept.calls] == [("configure", {"count": 3, "tags": ["a"]})]
    assert [d.kind for d in kept.diagnostics] == ["truncated"]
    written = td.families.get("atcall").render_call({"name": "configure", "arguments": want})
    assert td.parse(written, families=["atcall"]).calls[0].arguments == want


# A registry-gated family whose calls are separate `call` nodes (NexusRaven's `Call:` lines).
GATED_GRAMMAR = """\
// family: ravencall
// title: Call: f(a=1); g(b=2) with Python literal arguments, read against the toolset
// models: example-org/ravencall-*
// checked against: a NexusRaven-style format (Call: lines, calls separated by ";", <bot_end> after them)
// gated: toolset
// write block: CALL_OPEN " " calls
// write call: name:PY_NAME "(" arguments:keywords ")"
// write sep: "; "

%import ._json (WS)
%import ._pyliteral (py_value, _py_atom, py_name, py_string, py_template, py_number, py_op, py_list, py_tuple, py_dict, py_entry, _py_items, _py_item, py_kwarg, PY_STRING, BACKTICK_STRING, PY_NAME, PY_NUMBER, PY_OP, COMMA)
%ignore WS

start: CALL_OPEN call (SEMICOLON call)* CALL_CLOSE?
call: name "(" _py_items? ")"
name: PY_NAME

CALL_OPEN: "Call:"
SEMICOLON: ";"
CALL_CLOSE: "<bot_end>"
"""
GET_TIME = td.Toolset.from_openai(
    [{"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}]
)


@pytest.mark.parametrize(
    ("text", "kind", "shown"),
    [
        # no closer: the body is text as written, and reported
        ("Call: get_time(tz='UTC'); launch_missiles(n=3)", "unterminated_block", None),
        ("Call: get_time(tz='UTC'); launch_missiles(n=3) and then some", "unterminated_block", None),
        # a closer: the body is removed up to it, and reported
        ("Call: get_time(tz='UTC'); launch_missiles(n=3)<bot_end> Done.", "malformed_block", " Done."),
    ],
)
def test_a_gated_body_with_a_call_the_toolset_lacks_is_refused_whole(tmp_path, capsys, text, kind, shown):
    """All or nothing, whatever rule holds the calls: a registry-gated body naming a tool the
    toolset does not offer returns none of its calls, and none of its text vanishes.  The
    offered call was returned and ``; launch_missiles`` vanished, ``(n=3)`` left as text."""
    d = tmp_path / "g"
    d.mkdir()
    (d / "ravencall.lark").write_text(GATED_GRAMMAR, encoding="utf-8")
    assert check(capsys, str(d / "ravencall.lark"))[0] == 0
    assert td.families.register_path(d) == ["ravencall"]
    ok = td.parse("Call: get_time(tz='UTC'); get_time(tz='CET')<bot_end>", tools=GET_TIME)
    assert [(c.name, c.arguments, c.family) for c in ok.calls] == [
        ("get_time", {"tz": "UTC"}, "ravencall"),
        ("get_time", {"tz": "CET"}, "ravencall"),
    ]
    result = td.parse(text, tools=GET_TIME)
    assert result.calls == []
    assert result.text == (text if shown is None else shown)
    assert [d.kind for d in result.diagnostics] == [kind]
    assert "'launch_missiles' is not a tool the toolset offers" in result.diagnostics[0].detail["reason"]
    for mode in MODES[1:]:
        check_invariants(text, run_stream(text, cuts_for(text, mode), tools=GET_TIME), result)


def _install_entry_point(site: Path, target: str, monkeypatch) -> None:
    info = site / "ledger_dialects-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ledger-dialects\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[tooldialect.families]\nledger = {target}\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    for name in [m for m in sys.modules if m.startswith("ledger_dialects")]:
        monkeypatch.delitem(sys.modules, name)


@pytest.fixture
def forget_plugin_modules():
    yield
    for name in [m for m in sys.modules if m.startswith("ledger_dialects")]:
        del sys.modules[name]


def test_an_entry_point_package_provides_grammars_and_a_reader(tmp_path, monkeypatch, forget_plugin_modules):
    site = tmp_path / "site"
    package = write_walkthrough(site / "ledger_dialects")
    (package / "ledger.txt").unlink()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "ledger.py").write_text(
        textwrap.dedent(
            """
            from tooldialect.transform import Reader as Generic

            class Reader(Generic):
                def read(self, node):
                    got = super().read(node)
                    if got:
                        for call in got[0]:
                            call.name = call.name.upper()
                    return got
            """
        ),
        encoding="utf-8",
    )
    _install_entry_point(site, "ledger_dialects", monkeypatch)
    td.families.reload()
    fam = td.families.get("ledger")
    assert fam.source.kind == "entry point" and "ledger = ledger_dialects" in fam.source.label
    assert "ledger-dialects" in fam.source.label
    assert [c.name for c in td.parse(REPLY).calls] == ["GET_WEATHER"]


def test_an_entry_point_must_name_a_package(tmp_path, monkeypatch, forget_plugin_modules):
    site = tmp_path / "site"
    site.mkdir()
    (site / "ledger_dialects.py").write_text("", encoding="utf-8")
    _install_entry_point(site, "ledger_dialects", monkeypatch)
    td.families.reload()
    with pytest.raises(td.GrammarError, match="must name a package"):
        td.families.names()


def test_families_command_lists_plugins_and_generated_docs_do_not(tmp_path, capsys):
    from tooldialect._docs import families_table, family_sections, sync

    td.families.register_path(write_walkthrough(tmp_path / "g"))
    assert main(["families", "--json"]) == 0
    rows = {r["family"]: r for r in json.loads(capsys.readouterr().out)}
    assert "register_path" in rows["ledger"]["source"] and rows["hermes"]["source"] == "built-in"
    assert main(["families"]) == 0
    table = capsys.readouterr().out
    assert "ledger" in table and "from: register_path" in table
    assert "`ledger`" not in families_table() and "## ledger" not in family_sections()
    assert not sync(ROOT, write=False)


# -- grammar check -------------------------------------------------------------------------

BUILTIN = sorted(p for p in GRAMMARS.glob("*.lark") if not p.name.startswith("_"))


@pytest.mark.parametrize("path", BUILTIN, ids=[p.stem for p in BUILTIN])
def test_every_builtin_grammar_passes_grammar_check(path, capsys):
    code, out = check(capsys, str(path))
    assert code == 0, out
    assert out.count("  ok  ") == 7


@pytest.mark.parametrize("family", ["glm_lines", "kimi_k2"])
def test_builtin_grammar_check_with_its_corpus(family, capsys):
    corpus = ROOT / "tests" / "corpus" / f"{family}.txt"
    code, out = check(capsys, str(GRAMMARS / f"{family}.lark"), "--corpus", str(corpus))
    assert code == 0, out
    assert f"corpus {family}.txt" in out


def _grammar(tmp_path: Path, name: str, body: str, header: str | None = None, write: str = "") -> Path:
    path = tmp_path / f"{name}.lark"
    if header is None:
        header = f"// family: {name}\n// title: t\n// models: acme/*\n// checked against: a test\n"
    if write:
        header += f"// write call: {write}\n"
    path.write_text(header + textwrap.dedent(body), encoding="utf-8")
    return path


def test_a_conflict_fails_naming_the_rules(tmp_path, capsys):
    path = _grammar(tmp_path, "clash", 'start: OPEN a | OPEN b\na: X\nb: X\nOPEN: "<<clash>>"\nX: "x"\n')
    code, out = check(capsys, str(path))
    assert code == 1
    assert "FAIL  compiles (LALR, strict)" in out and "LALR conflict in rules 'a', 'b'" in out


def test_a_marker_another_family_owns_fails_naming_it(tmp_path, capsys):
    body = """
        start: OPEN json_calls CLOSE?
        json_calls: JSON
        OPEN: "<tool_call>"
        CLOSE: "</tool_call>"
        %import ._json (JSON, WS)
        %ignore WS
        """
    code, out = check(capsys, str(_grammar(tmp_path, "thief", body)))
    assert code == 1
    assert "FAIL  markers: OPEN writes '<tool_call>'" in out
    assert "_tagged.lark already writes as TOOL_CALL_OPEN" in out and "%import ._tagged (TOOL_CALL_OPEN)" in out
    imported = """
        start: TOOL_CALL_OPEN json_calls TOOL_CALL_CLOSE?
        json_calls: JSON
        %import ._json (JSON, WS)
        %import ._tagged (TOOL_CALL_OPEN, TOOL_CALL_CLOSE, CANONICAL_TOOL_CALL_OPEN, CANONICAL_TOOL_CALL_CLOSE)
        %ignore WS
        """
    write = 'CANONICAL_TOOL_CALL_OPEN "{\\"name\\": " name:json ", \\"arguments\\": " arguments "}" CANONICAL_TOOL_CALL_CLOSE'
    code, out = check(capsys, str(_grammar(tmp_path, "borrower", imported, write=write)))
    assert code == 0, out


def test_an_overlap_written_down_is_accepted(tmp_path, capsys):
    body = """
        start: OPEN json_calls
        json_calls: JSON
        // overlaps _tagged.TOOL_CALL_OPEN: this model's own token, also a <tool_call> spelling
        // overlaps _tagged.CANONICAL_TOOL_CALL_OPEN: the same spelling
        OPEN: "<tool_call>"
        %import ._json (JSON, WS)
        %ignore WS
        """
    write = 'OPEN "{\\"name\\": " name:json ", \\"arguments\\": " arguments "}"'
    code, out = check(capsys, str(_grammar(tmp_path, "sharer", body, write=write)))
    assert code == 0, out
    assert "2 shared on purpose" in out


def test_a_marker_of_a_registered_plugin_counts(tmp_path, capsys):
    td.families.register_path(write_walkthrough(tmp_path / "g"))
    other = tmp_path / "other"
    other.mkdir()
    code, out = check(capsys, str(_grammar(other, "copycat", 'start: "<<call" JSON\n%import ._json (JSON)\n')))
    assert code == 1 and "ledger.lark (family ledger) already writes as CALL_OPEN" in out


GOOD = "// family: bad\n// title: t\n// models: a/*\n// checked against: x\n"


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (GOOD.replace("family: bad", "family: other"), "it must equal the file name"),
        (GOOD.replace("// title: t\n", ""), "no title"),
        (GOOD.replace("// models: a/*\n", ""), "no models"),
        (GOOD.replace("// checked against: x\n", ""), "no 'checked against' line"),
        (GOOD.replace("models:", "modles:"), "did you mean 'models'"),
        (GOOD + "// reply: sometimes\n", "reply must be"),
        (GOOD + "// policy a/*: max_depth=0\n", "policy a/*"),
        (GOOD + "// policy a/*: no_such=1\n", "no_such"),
    ],
)
def test_header_problems_fail(tmp_path, capsys, header, expected):
    path = _grammar(tmp_path, "bad", 'start: "<<bad>>" JSON\n%import ._json (JSON)\n', header=header)
    code, out = check(capsys, str(path))
    assert code == 1
    assert "FAIL  header" in out and expected in out


def test_a_taken_name_fails(tmp_path, capsys):
    d = write_walkthrough(tmp_path)
    path = tmp_path / "hermes.lark"
    path.write_text(ledger_grammar("hermes"), encoding="utf-8")
    code, out = check(capsys, str(path), "--corpus", str(d / "ledger.txt"))
    assert code == 1 and "FAIL  name: family 'hermes' is already defined by" in out
    assert "FAIL  corpus: not run" in out
    assert td.families.get("hermes").source is None


def test_corpus_failures_name_the_case(tmp_path, capsys):
    d = write_walkthrough(tmp_path / "g")
    corpus = (d / "ledger.txt").read_text(encoding="utf-8")
    (d / "ledger.txt").write_text(corpus.replace('"city": "Paris"', '"city": "Lyon"'), encoding="utf-8")
    code, out = check(capsys, str(d / "ledger.lark"), "--corpus", str(d / "ledger.txt"))
    assert code == 1
    assert "FAIL  case 'a call with two parameters after prose' (line 1, batch): result differs" in out
    assert '"city": "Paris"' in out  # what it reads instead
    assert "1 failed" in out


def test_a_case_without_expectation_prints_what_it_reads(tmp_path, capsys):
    d = write_walkthrough(tmp_path / "g")
    rule, sep = "=" * 80, "-" * 80
    (d / "new.txt").write_text(f"{rule}\nfresh\n{rule}\n<<call f>><</call>>\n{sep}\n\n", encoding="utf-8")
    code, out = check(capsys, str(d / "ledger.lark"), "--corpus", str(d / "new.txt"))
    assert code == 1 and "no expected result written" in out and '"name": "f"' in out


def test_unreadable_files_are_usage_errors(tmp_path, capsys):
    code, out = check(capsys, str(tmp_path / "missing.lark"))
    assert code == 2 and "cannot read" in out
    d = write_walkthrough(tmp_path / "g")
    code, out = check(capsys, str(d / "ledger.lark"), "--corpus", str(tmp_path / "missing.txt"))
    assert code == 2 and "missing.txt" in out
    assert main(["grammar"]) == 2
