"""The author's side: a grammar that drops what it parses, or cannot write a call, is refused
(by ``grammar check`` and when it compiles), each time with how to fix it; ``grammar check
--update`` writes corpus expectations only for the cases the author approves; the CLI's
``--tools`` reads a corpus's ``_tools.json``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support import NEXUSRAVEN, ROOT

import tooldialect as td
from tooldialect.cli import main
from tooldialect.corpus import MODES, read_corpus, set_expectations
from tooldialect.grammar import compile_grammar, read_header, unread, unwritable
from tooldialect.grammar_check import imported_names
from tooldialect.transform import READ_NODES, Reader, reader_class

GUIDE = ROOT / "docs" / "authoring.md"


pytestmark = pytest.mark.usefixtures("restore_registry")  # tests/conftest.py


HEADER = "// family: {name}\n// title: t\n// models: acme/*\n// checked against: a test\n"
WRITE = '// write call: OPEN name " " arguments CLOSE\n'
COMMON = """
%import ._json (JSON, WS)
%import ._tagged (BARE_NAME)
%ignore WS
OPEN: "<<act>>"
CLOSE: "<</act>>"
"""
GOOD = "start: OPEN call CLOSE\ncall: name arguments\nname: BARE_NAME\narguments: JSON\n"

# (what is wrong, the rules, the write line, the check that fails, what its message says, the fixed rules)
BROKEN = [
    (
        "no rule yields calls",
        "start: OPEN payload CLOSE\npayload: JSON\n",
        WRITE,
        "reads",
        "no rule yields calls",
        "rule 'payload' holds the JSON payload: write 'payload: … -> json_calls'",
        "start: OPEN payload CLOSE\npayload: JSON -> json_calls\n",
    ),
    (
        "the arguments under a rule the reader does not read",
        "start: OPEN call CLOSE\ncall: name args\nname: BARE_NAME\nargs: JSON\n",
        WRITE,
        "reads",
        "rule 'args' under 'call' is not read",
        "('args: … -> arguments')",
        GOOD.replace("arguments: JSON", "args: JSON -> arguments").replace("name arguments", "name args"),
    ),
    (
        "the name misnamed",
        "start: OPEN call CLOSE\ncall: tool arguments\ntool: BARE_NAME\narguments: JSON\n",
        WRITE,
        "reads",
        "rule 'call' holds no 'name' node, so its calls would have no tool name",
        "('tool: … -> name')",
        "start: OPEN call CLOSE\ncall: tool arguments\ntool: BARE_NAME -> name\narguments: JSON\n",
    ),
    (
        "a payload right under the call",
        "start: OPEN call CLOSE\ncall: name JSON\nname: BARE_NAME\n",
        WRITE,
        "reads",
        "rule 'call' holds a JSON payload that no rule the reader reads holds",
        "put it in an 'arguments' rule ('arguments: JSON')",
        GOOD,
    ),
    (
        "no write call line",
        GOOD,
        "",
        "writes",
        "no '// write call: …' line",
        "a grammar that only reads writes the spelling it reads best",
        None,
    ),
    (
        "a write line naming a pattern terminal",
        GOOD.replace("CLOSE\ncall", "SHUT\ncall") + "SHUT: /<\\/act {0,2}>/\n",
        WRITE.replace("CLOSE", "SHUT"),
        "writes",
        "SHUT is a pattern, not one string",
        "add a string terminal CANONICAL_SHUT with the spelling to write",
        GOOD.replace("CLOSE\ncall", "SHUT\ncall") + 'SHUT: /<\\/act {0,2}>/\nCANONICAL_SHUT: "</act>"\n',
    ),
]


def _write(directory: Path, name: str, rules: str, write: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.lark"
    path.write_text(HEADER.format(name=name) + write + COMMON + rules, encoding="utf-8")
    return path


def _check(capsys, *args: str) -> tuple[int, str]:
    code = main(["grammar", "check", *args])
    out = capsys.readouterr()
    return code, out.out + out.err


@pytest.mark.parametrize(
    ("what", "rules", "write", "check", "error", "fix", "fixed"), BROKEN, ids=[b[0] for b in BROKEN]
)
def test_a_grammar_that_drops_what_it_parses_fails_check_and_compilation_saying_how_to_fix_it(
    tmp_path, capsys, what, rules, write, check, error, fix, fixed
):
    path = _write(tmp_path / "g", "acts", rules, write)
    code, out = _check(capsys, str(path))
    assert code == 1
    failed = [line for line in out.splitlines() if line.startswith("  FAIL")]
    assert failed[0].startswith(f"  FAIL  {check}: ")
    assert error in out and fix in out
    # and the samples line shows what it costs: what the family writes does not read back
    assert len(failed) == 2 and failed[1].startswith("  FAIL  samples: ")
    if check == "writes":
        assert "not checked: the '// write' lines do not write a call" in failed[1]
    else:
        assert "reads back" in failed[1]
    # the fix it names passes (a call with its arguments, never a silent {})
    if fixed is not None:
        write_fixed = WRITE.replace("CLOSE", "CANONICAL_SHUT") if "SHUT" in fixed else WRITE
        if "json_calls" in fixed:  # a family that reads call objects writes them (samples read back)
            write_fixed = WRITE.replace(
                'name " " arguments', '"{\\"name\\": " name:json ", \\"arguments\\": " arguments "}"'
            )
        fixed_path = _write(tmp_path / "fixed", "fixedacts", fixed, write_fixed)
        code, out = _check(capsys, str(fixed_path))
        assert code == 0, out
        td.families.register_path(fixed_path.parent)
        reply = (
            '<<act>>{"name": "f", "arguments": {"a": 1}}<</act>>'
            if "json_calls" in fixed
            else '<<act>>f {"a": 1}<</act>>'
        )
        calls = td.parse(reply, families=["fixedacts"]).calls
        assert [(c.name, c.arguments) for c in calls] == [("f", {"a": 1})]
    # the registry compiles the broken file the same way: the same message, as a GrammarError
    # from register_path, which then registers nothing
    with pytest.raises(td.GrammarError, match=re.escape(error)):
        td.families.register_path(path.parent)
    assert "acts" not in td.families.names()


def test_every_builtin_grammar_is_read_whole_by_its_reader_and_writes_calls():
    for name in td.families.names():
        g = td.families.get(name).grammar
        assert unread(g, reader_class(name)) == [], name
        assert unwritable(g) == [], name
        assert any(kind == "call" for kind, _ in g.header.writes), name


def test_python_literal_families_need_no_module():
    """The generic reader reads Python-literal arguments: pythonic and gemma3 have no module."""
    for name in ("pythonic", "gemma3"):
        assert reader_class(name) is Reader
        assert unread(td.families.get(name).grammar, Reader) == [], name


def test_family_readers_declare_what_they_read():
    """The generic reader would drop what these families' modules read: without their
    declarations their grammars would be refused."""
    for name in ("functiongemma", "kimi_k2", "codecall", "glm_lines", "pformat", "minimax_m3"):
        assert reader_class(name) is not Reader
        assert unread(td.families.get(name).grammar, Reader), name


def test_a_node_name_added_to_the_read_set_is_all_it_takes(tmp_path):
    """READ_NODES is the one place the generic reader's node names are declared: a reader
    that reads one more name under a call accepts a grammar whose calls hold it."""
    rules = "start: OPEN call CLOSE\ncall: name extra\nname: BARE_NAME\nextra: JSON\n"
    path = _write(tmp_path, "extras", rules, WRITE.replace("arguments", "arguments:json"))
    with pytest.raises(td.GrammarError, match="rule 'extra' under 'call' is not read"):
        td.families.register_path(tmp_path)
    from tooldialect.grammar import compile_grammar, read_header

    compiled = compile_grammar(
        path, read_header(path.read_text(), "extras"), td.families.grammar_dir(), conventions=False
    )

    class Wider(Reader):
        read_nodes = READ_NODES | {"extra"}

    assert unread(compiled, Reader) and not unread(compiled, Wider)


# -- errors cite the line ------------------------------------------------------------------


def _line_of(text: str, prefix: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith(prefix))


def test_a_rule_used_but_not_defined_is_cited_by_file_and_line(tmp_path, capsys):
    grammar = NEXUSRAVEN.replace("name: PY_NAME\n", "")
    path = tmp_path / "nexusraven.lark"
    path.write_text(grammar, encoding="utf-8")
    where = f"nexusraven.lark:{_line_of(grammar, 'call: name')}"
    code, out = _check(capsys, str(path))
    assert code == 1
    assert f"FAIL  compiles (LALR, strict): grammar {where}: Rule 'name' used but not defined (in rule call)" in out
    assert "define it in this file ('name: …')" in out
    with pytest.raises(td.GrammarError, match=re.escape(where + ": Rule 'name' used but not defined")):
        compile_grammar(path, read_header(grammar, "nexusraven"), td.families.grammar_dir())


@pytest.mark.parametrize(
    ("mistake", "cited"),
    [
        ('call: name "(" args? ")"\n', "call: name"),  # a rule defined twice: the second one
        ('OPENER: "@@"\nOTHER: OPENER UNDEFINED\n', "OTHER:"),  # a terminal used but not defined
        ("bad: PY_NAME )\n", "bad:"),  # lark's own syntax error, which has its line already
        ("%declare XML_BLOB\n", "%declare"),  # our own check: a scanner the engine does not provide
    ],
)
def test_other_compile_errors_cite_their_line(tmp_path, mistake, cited):
    grammar = NEXUSRAVEN + mistake
    path = tmp_path / "nexusraven.lark"
    path.write_text(grammar, encoding="utf-8")
    lines = [i for i, line in enumerate(grammar.splitlines(), 1) if line.startswith(cited)]
    with pytest.raises(td.GrammarError, match=re.escape(f"grammar nexusraven.lark:{lines[-1]}: ")):
        compile_grammar(path, read_header(grammar, "nexusraven"), td.families.grammar_dir())


def test_ignoring_a_scanned_terminal_is_a_grammar_error_citing_the_ignore_line(tmp_path):
    grammar = NEXUSRAVEN + "%ignore PY_STRING\n"
    path = tmp_path / "nexusraven.lark"
    path.write_text(grammar, encoding="utf-8")
    line = grammar.splitlines().index("%ignore PY_STRING") + 1
    with pytest.raises(td.GrammarError, match=re.escape(f"grammar nexusraven.lark:{line}: %ignore PY_STRING: ")) as err:
        compile_grammar(path, read_header(grammar, "nexusraven"), td.families.grammar_dir())
    assert "%ignore only terminals with a pattern" in str(err.value)


def test_arguments_written_as_code_under_another_rule_are_told_to_be_arguments(tmp_path, capsys):
    """The fix the check names for ``args: _py_items`` is the one that works (``-> param``
    led to another error: a param needs a param_name)."""
    path = tmp_path / "g" / "nexusraven.lark"
    path.parent.mkdir()
    path.write_text(NEXUSRAVEN, encoding="utf-8")
    code, out = _check(capsys, str(path))
    assert code == 1
    assert f"FAIL  reads: nexusraven.lark:{_line_of(NEXUSRAVEN, 'args:')}: rule 'args' under 'call' is not read" in out
    assert "('args: … -> arguments')" in out and "-> param" not in out
    path.write_text(NEXUSRAVEN.replace("args: _py_items", "args: _py_items -> arguments"), encoding="utf-8")
    code, out = _check(capsys, str(path))
    assert code == 0, out
    td.families.register_path(path.parent)
    tools = td.Toolset(
        [td.Tool(name="get_time", parameters={"type": "object", "properties": {"tz": {"type": "string"}}})]
    )
    calls = td.parse("Call: get_time(tz='UTC')", tools=tools, families=["nexusraven"]).calls
    assert [(c.name, c.arguments) for c in calls] == [("get_time", {"tz": "UTC"})]


# -- what the family writes reads back ----------------------------------------------------

#: A Qwen-Agent-style family, written as docs/authoring.md says: a header, the shared pieces,
#: the conventional rule names.  ``{args}`` is how it reads the arguments.
QWEN_AGENT = """\
// family: qwen_agent
// title: Qwen-Agent function calls: a ✿FUNCTION✿ line, then a ✿ARGS✿ line holding a JSON object
// models: Qwen/Qwen-Agent-*
// checked against: Qwen-Agent's function-calling prompt (✿FUNCTION✿: NAME, then ✿ARGS✿: {{…}})
// write call: FUNCTION_OPEN " " name:BARE_NAME "\\n" ARGS_OPEN " " arguments:json
// write sep: "\\n"

%import ._json (JSON, WS)
%import ._tagged (BARE_NAME)
%ignore WS

start: FUNCTION_OPEN call
call: name ARGS_OPEN arguments
name: BARE_NAME
{args}

FUNCTION_OPEN: "✿FUNCTION✿:"
ARGS_OPEN: "✿ARGS✿:"
"""
#: The arguments in a terminal of the grammar's own that runs to the last closing brace: it
#: swallows the closer, and every call after it.
SWALLOWING = "arguments: ARGS_BODY\nARGS_BODY: /\\{[\\s\\S]{0,500}\\}/"
QWEN_AGENT_REPLY = (
    'Let me look.\n✿FUNCTION✿: get_weather\n✿ARGS✿: {"city": "Paris", "days": 3}\n'
    '✿FUNCTION✿: get_time\n✿ARGS✿: {"tz": "UTC"}\nDone.'
)


def _qwen_agent(directory: Path, args: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "qwen_agent.lark"
    path.write_text(QWEN_AGENT.format(args=args), encoding="utf-8")
    return path


def test_a_terminal_that_swallows_the_closer_fails_grammar_check(tmp_path, capsys):
    """It compiles and its rules have the names the reader reads, so only reading back what
    the family writes shows that it reads {} and loses the second call."""
    path = _qwen_agent(tmp_path / "bad", SWALLOWING)
    code, out = _check(capsys, str(path))
    assert code == 1, out
    failed = [line for line in out.splitlines() if line.startswith("  FAIL")]
    assert len(failed) == 1 and failed[0].startswith("  FAIL  samples: "), out
    assert "ok    reads: calls from call" in out  # the rule names are right: that is not it
    assert 'get_weather {"city": "Paris", "days": 3}, written as \'✿FUNCTION✿: get_weather' in out
    assert "reads back" in out and "ARGS_BODY" in out
    # the arguments as the JSON payload the reader reads: every sample reads back
    fixed = _qwen_agent(tmp_path / "good", "arguments: JSON")
    code, out = _check(capsys, str(fixed))
    assert code == 0, out
    assert "ok    samples: 4 sample replies written and read back as written" in out
    td.families.register_path(fixed.parent)
    result = td.parse(QWEN_AGENT_REPLY)
    assert [(c.name, c.arguments) for c in result.calls] == [
        ("get_weather", {"city": "Paris", "days": 3}),
        ("get_time", {"tz": "UTC"}),
    ]
    assert result.text == "Let me look.\n\n\nDone." and result.diagnostics == []


def test_arguments_a_grammar_drops_are_never_silent(tmp_path):
    """At parse time a call whose arguments sit in a terminal the reader does not read is not
    returned as {}: it is reported, with what was not read, batch and streamed alike."""
    from support import check_invariants, cuts_for, run_stream

    td.families.register_path(_qwen_agent(tmp_path, SWALLOWING).parent)
    result = td.parse(QWEN_AGENT_REPLY)
    assert result.calls == []
    (diag,) = result.diagnostics
    assert diag.kind == "arguments_invalid" and diag.family == "qwen_agent" and diag.detail["name"] == "get_weather"
    assert "ARGS_BODY" in diag.detail["reason"] and "not read" in diag.detail["reason"]
    assert "get_time" in diag.detail["excerpt"]  # the second call it swallowed is named, not lost
    assert diag.span[0] < QWEN_AGENT_REPLY.index("get_time") < diag.span[1]
    assert result.text == "Let me look.\n\nDone."  # the block removed whole, and reported
    for mode in MODES[1:]:
        check_invariants(QWEN_AGENT_REPLY, run_stream(QWEN_AGENT_REPLY, cuts_for(QWEN_AGENT_REPLY, mode)), result)
    # an empty object in such a terminal drops nothing: the call stands
    empty = td.parse("✿FUNCTION✿: get_time\n✿ARGS✿: {}")
    assert [(c.name, c.arguments) for c in empty.calls] == [("get_time", {})] and empty.diagnostics == []


def test_a_call_payload_in_a_terminal_the_reader_does_not_read_is_reported(tmp_path):
    rules = "start: OPEN json_calls CLOSE\njson_calls: BODY\nBODY: /\\{[^<]{0,200}\\}/\n"
    write = WRITE.replace('name " " arguments', '"{\\"name\\": " name:json ", \\"arguments\\": " arguments "}"')
    td.families.register_path(_write(tmp_path, "bodies", rules, write).parent)
    reply = 'Sure. <<act>>{"name": "f", "arguments": {"a": 1}}<</act>> Done.'
    result = td.parse(reply, families=["bodies"])
    assert result.calls == [] and [d.kind for d in result.diagnostics] == ["malformed_block"]
    assert "'json_calls' rule holds BODY" in result.diagnostics[0].detail["reason"]
    assert result.text == "Sure.  Done."


def test_grammar_check_reads_back_the_calls_of_the_corpus_beside_the_grammar(tmp_path, capsys):
    path = _qwen_agent(tmp_path, "arguments: JSON")
    rule, sep = "=" * 80, "-" * 80
    expected = {
        "calls": [{"arguments": {"q": "a } b"}, "family": "qwen_agent", "id": None, "name": "search"}],
        "diagnostics": [],
        "reasoning": "",
        "text": "",
    }
    case = f'{rule}\na search\n{rule}\n✿FUNCTION✿: search\n✿ARGS✿: {{"q": "a }} b"}}\n{sep}\n'
    (tmp_path / "qwen_agent.txt").write_text(case + json.dumps(expected, sort_keys=True) + "\n", encoding="utf-8")
    code, out = _check(capsys, str(path))  # no --corpus: the file beside the grammar is its corpus
    assert code == 0, out
    assert "corpus qwen_agent.txt: 1 case, four ways each" in out
    assert "ok    samples: 4 sample replies and the calls of 1 corpus replies written" in out
    # the same corpus fails the grammar that swallows the closer, on both lines
    _qwen_agent(tmp_path, SWALLOWING)
    code, out = _check(capsys, str(path))
    assert code == 1 and "FAIL  samples: " in out and 'search {"q": "a } b"}, written as' in out
    assert "FAIL  case 'a search' (line 1, batch): result differs" in out


# -- what a newcomer needs to be told (docs/authoring.md) -----------------------------------


def _guide() -> str:
    return " ".join(GUIDE.read_text(encoding="utf-8").split())  # sentences, whatever the line breaks


def test_the_guide_tells_a_plugin_to_write_its_stop_token_as_furniture(tmp_path, capsys):
    guide = _guide()
    assert "A plugin cannot edit `_stop.lark`" in guide
    assert "as a `FURNITURE_…` terminal" in guide
    line = re.search(r'`(FURNITURE_STOP_LEDGER_END: "[^"]+")`', guide).group(1)
    path = tmp_path / "ledger.lark"
    path.write_text(_guide_files()["ledger.lark"] + line + "\n", encoding="utf-8")
    code, out = _check(capsys, str(path))
    assert code == 0, out
    td.families.register_path(tmp_path)
    stop = line.split('"')[1]
    result = td.parse(f"Checking.\n<<call get_time>><</call>>{stop}")
    assert [(c.name, c.family) for c in result.calls] == [("get_time", "ledger")]
    assert result.text == "Checking.\n" and result.diagnostics == []
    assert td.parse(f"Hi{stop} there").text == "Hi there"  # furniture wherever it appears


def test_the_guide_says_grammar_check_does_not_check_the_export_and_shows_how(tmp_path, monkeypatch):
    assert "`grammar check` does not check the export." in _guide()
    pytest.importorskip("llguidance", reason="the export extra (llguidance) is not installed")
    text = GUIDE.read_text(encoding="utf-8")
    (snippet,) = re.findall(r"<!-- run: export-check\.py -->\n```python\n(.*?)```\n", text, re.S)
    (tmp_path / "my_grammars").mkdir()
    (tmp_path / "my_grammars" / "ledger.lark").write_text(_guide_files()["ledger.lark"], encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    exec(compile(snippet, "docs/authoring.md: export-check.py", "exec"), {"__name__": "export_check"})
    assert "ledger" in td.families.names()


WORD_OFFERED = "Call: get_time(tz='UTC')"
WORD_PROSE = "Sure. Call: me(x=1) tomorrow."
WORD_UNCLOSED = "Call: me maybe (later)."


def _nexusraven(directory: Path, gated: bool) -> Path:
    directory.mkdir()
    good = NEXUSRAVEN.replace("args: _py_items", "args: _py_items -> arguments")
    (directory / "nexusraven.lark").write_text(good if gated else good.replace("// gated: toolset\n", ""), "utf-8")
    return directory


def test_the_guide_says_a_word_marker_is_tried_in_every_reply(tmp_path):
    assert "its openers are tried in every reply that is read with every family on" in _guide()
    for example in (WORD_PROSE, WORD_UNCLOSED):
        assert f"`{example}`" in _guide(), example
    assert "`Sure.  tomorrow.`" in GUIDE.read_text(encoding="utf-8")
    td.families.register_path(_nexusraven(tmp_path / "ungated", gated=False))
    took = td.parse(WORD_PROSE)  # any model's prose, every family on
    assert [(c.name, c.arguments) for c in took.calls] == [("me", {"x": 1})] and took.text == "Sure.  tomorrow."
    assert [d.kind for d in td.parse(WORD_UNCLOSED).diagnostics] == ["unterminated_block"]


def test_the_guide_says_what_gated_toolset_changes(tmp_path):
    assert "`// gated: toolset` in the header is what changes that" in _guide()
    assert f"`{WORD_OFFERED}`" in _guide()
    td.families.register_path(_nexusraven(tmp_path / "gated", gated=True))
    tools = td.Toolset([td.Tool(name="get_time")])
    for text in (WORD_PROSE, WORD_UNCLOSED):
        for with_tools in (None, tools):
            result = td.parse(text, tools=with_tools)
            assert (result.text, result.calls, result.diagnostics) == (text, [], []), text
    assert [c.name for c in td.parse(WORD_OFFERED, tools=tools).calls] == ["get_time"]
    assert td.parse(WORD_OFFERED).calls == []  # no toolset: not even tried


# -- grammar check --update --------------------------------------------------------------


def _guide_files() -> dict[str, str]:
    text = GUIDE.read_text(encoding="utf-8")
    return dict(re.findall(r"<!-- file: (\S+) -->\n```[a-z]*\n(.*?)```\n", text, re.S))


@pytest.fixture
def ledger(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the guide's ledger family, whose first case has no expectation yet and
    whose second has a wrong one."""
    files = _guide_files()
    (tmp_path / "ledger.lark").write_text(files["ledger.lark"], encoding="utf-8")
    corpus = tmp_path / "ledger.txt"
    corpus.write_text(files["ledger.txt"], encoding="utf-8")
    cases = read_corpus(corpus)
    wrong = json.loads(json.dumps(cases[1].expected).replace("get_time", "get_tme"))
    set_expectations(corpus, {1: wrong})
    text = corpus.read_text(encoding="utf-8")
    first = json.dumps(cases[0].expected, sort_keys=True, ensure_ascii=False)
    assert first in text
    corpus.write_text(text.replace(first + "\n", "", 1), encoding="utf-8")
    assert [c.expected is None for c in read_corpus(corpus)] == [True, False, False, False]
    return tmp_path / "ledger.lark", corpus


def test_update_writes_only_the_missing_expectations_and_says_which_differ(ledger, capsys):
    grammar, corpus = ledger
    before = read_corpus(corpus)
    code, out = _check(capsys, str(grammar), "--corpus", str(corpus), "--update")
    assert code == 1  # the wrong expectation is not rewritten: it fails, and says how to approve it
    assert "update 'a call with two parameters after prose' (line 1): written (it had none); review it" in out
    assert (
        'result differs from the expected one (when it reads right, --update "a call without arguments" writes it)'
        in out
    )
    after = read_corpus(corpus)
    assert after[0].expected is not None and after[0].expected["calls"][0]["name"] == "get_weather"
    assert after[1].expected == before[1].expected  # never silently overwritten
    assert [c.expected for c in after[2:]] == [c.expected for c in before[2:]]


def test_update_naming_a_case_rewrites_it_and_shows_what_it_was(ledger, capsys):
    grammar, corpus = ledger
    text = corpus.read_text(encoding="utf-8")
    code, out = _check(capsys, str(grammar), "--corpus", str(corpus), "--update", "a call without arguments")
    assert code == 1  # the case with no expectation was not named: it still fails
    assert "update 'a call without arguments' (line" in out and "REWRITTEN; it was:" in out and '"get_tme"' in out
    assert "no expected result written" in out and "(when it reads right, --update writes it)" in out
    after = read_corpus(corpus)
    assert after[1].expected["calls"][0]["name"] == "get_time" and after[0].expected is None
    # every other case's bytes stay as written (its one-line expectation too)
    new = corpus.read_text(encoding="utf-8")
    last = text[text.index("a value keeps its own white space") :]
    assert new.endswith(last)
    # both together: then every case passes
    code, out = _check(capsys, str(grammar), "--corpus", str(corpus), "--update")
    assert code == 0, out
    code, out = _check(capsys, str(grammar), "--corpus", str(corpus))
    assert code == 0 and "  update " not in out


def test_update_of_an_unknown_title_writes_nothing(ledger, capsys):
    grammar, corpus = ledger
    text = corpus.read_text(encoding="utf-8")
    code, out = _check(capsys, str(grammar), "--corpus", str(corpus), "--update", "--update", "no such case")
    assert code == 2 and "no case titled 'no such case'" in out
    assert corpus.read_text(encoding="utf-8") == text
    code, out = _check(capsys, str(grammar), "--update")
    assert code == 2 and "--corpus" in out


def test_update_an_expectation_that_already_says_it_is_left_alone(ledger, capsys):
    grammar, corpus = ledger
    text = corpus.read_text(encoding="utf-8")
    _code, out = _check(capsys, str(grammar), "--corpus", str(corpus), "--update", "a value keeps its own white space")
    assert "unchanged: the expectation already says this" in out
    assert corpus.read_text(encoding="utf-8") == text


# -- --tools reads a corpus's _tools.json -------------------------------------------------


def test_cli_tools_reads_the_corpus_tools_file(tmp_path, capsys):
    tools = str(ROOT / "tests" / "corpus" / "_tools.json")
    reply = tmp_path / "reply.txt"
    reply.write_text('<tool_call>{"name": "Get-Weather", "arguments": {"city": "Paris"}}</tool_call>', encoding="utf-8")
    assert main(["parse", str(reply), "--tools", tools, "--toolset", "weather"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [c["name"] for c in out["calls"]] == ["get_weather"]  # bound against the weather toolset
    assert [d["kind"] for d in out["diagnostics"]] == ["name_repaired"]
    assert main(["stream", str(reply), "--tools", tools, "--toolset", "weather"]) == 0
    assert '"name": "get_weather"' in capsys.readouterr().out
    # several toolsets and no --toolset: a usage error that lists them
    assert main(["parse", str(reply), "--tools", tools]) == 2
    err = capsys.readouterr().err
    assert "choose one with --toolset NAME" in err and "weather" in err
    assert main(["parse", str(reply), "--tools", tools, "--toolset", "nope"]) == 2
    assert "has no toolset 'nope'" in capsys.readouterr().err
    # a file of one named toolset needs no --toolset; a plain list takes none
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"weather": json.loads(Path(tools).read_text())["weather"]}), encoding="utf-8")
    assert main(["parse", str(reply), "--tools", str(one)]) == 0
    assert json.loads(capsys.readouterr().out)["calls"][0]["name"] == "get_weather"
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(json.loads(Path(tools).read_text())["weather"]), encoding="utf-8")
    assert main(["parse", str(reply), "--tools", str(plain), "--toolset", "weather"]) == 2
    assert "drop --toolset" in capsys.readouterr().err
    assert main(["render", "--dialect", "xml", "--tools", tools, "--toolset", "shell"]) == 0
    assert "read_file" in capsys.readouterr().out


def test_the_corpus_tools_file_is_named_toolsets():
    from tooldialect.corpus import toolsets_in

    data = json.loads((ROOT / "tests" / "corpus" / "_tools.json").read_text(encoding="utf-8"))
    named = toolsets_in(data)
    assert named is not None
    for name, tools in named.items():
        assert td.Toolset.coerce(tools).names, name
    assert toolsets_in(data["weather"]) is None and toolsets_in({"name": "f", "parameters": {}}) is None


# -- fences and shared pieces --------------------------------------------------------------


def test_a_start_that_opens_on_a_language_fence_fails_the_check(tmp_path, capsys):
    """A ```json fence after prose holds an example: a grammar may not make it an opener."""
    rules = "start: FENCE_JSON_OPEN json_calls FENCE_CLOSE\njson_calls: JSON\n"
    path = tmp_path / "jsonfence.lark"
    path.write_text(
        HEADER.format(name="jsonfence")
        + '// write call: CANONICAL_FENCE_JSON_OPEN "{\\"name\\": " name:json ", \\"arguments\\": " arguments "}\\n" FENCE_CLOSE\n'
        + "%import ._json (JSON, WS)\n%import ._fence (FENCE_JSON_OPEN, FENCE_CLOSE, CANONICAL_FENCE_JSON_OPEN)\n%ignore WS\n"
        + rules,
        encoding="utf-8",
    )
    code, out = _check(capsys, str(path))
    assert code == 1
    assert "FAIL  markers: FENCE_JSON_OPEN opens a block on '```json\\n'" in out
    assert "%import ._tagged (FENCE_TOOL_CALL_OPEN)" in out
    # the call fence is the one a grammar may open on
    # (and writes its calls in that fence: one written in a ```json fence would not read back)
    path.write_text(
        path.read_text(encoding="utf-8")
        .replace("start: FENCE_JSON_OPEN", "start: FENCE_TOOL_CALL_OPEN")
        .replace("%import ._fence (FENCE_JSON_OPEN, ", "%import ._tagged (FENCE_TOOL_CALL_OPEN)\n%import ._fence (")
        .replace('CANONICAL_FENCE_JSON_OPEN "{', '"```tool_call\\n{'),
        encoding="utf-8",
    )
    code, out = _check(capsys, str(path))
    assert code == 0, out


@pytest.mark.parametrize(
    ("reply", "calls"),
    [
        ('Example:\n```json\n{"name": "f", "arguments": {}}\n```\n', []),
        ('```json\n{"name": "f", "arguments": {}}\n```', [("f", "bare_json")]),
        ('Calling.\n```tool_call\n{"name": "f", "arguments": {}}\n```\n', [("f", "hermes")]),
        ('x\n```xml\n<tool_call>{"name": "f", "arguments": {}}</tool_call>\n```\n', []),
        ('x\n```\n<tool_call>{"name": "f", "arguments": {}}</tool_call>\n```\n', [("f", "hermes")]),
        ('<tool_call>\n```json\n{"name": "f", "arguments": {}}\n```\n</tool_call>', [("f", "hermes")]),
    ],
)
def test_the_fences_the_guide_lists(reply, calls):
    result = td.parse(reply)
    assert [(c.name, c.family) for c in result.calls] == calls
    assert result.diagnostics == []


def test_the_guide_lists_every_shared_piece_with_what_it_provides():
    guide = GUIDE.read_text(encoding="utf-8")
    section = guide[guide.index("<!-- pieces:begin -->") : guide.index("<!-- pieces:end -->")]
    for path in sorted(td.families.grammar_dir().glob("_*.lark")):
        row = next(line for line in section.splitlines() if line.startswith(f"| `{path.name}` |"))
        imported = imported_names(path.read_text(encoding="utf-8"))
        for name in set(td.families.piece(path.stem)) - imported:
            assert f"`{name}`" in row, (path.name, name)
    assert "`py_kwarg`" in section and "`FENCE_TOOL_CALL_OPEN`" in section and "`_fence.lark`" in section
