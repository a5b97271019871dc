"""The bundled grammars' parse tables are built ahead of time and ship in the package
(DESIGN §3): the shipped file equals a fresh build from the .lark sources, a fresh process
reads every bundled family without importing lark, and a grammar whose source changed, or a
plugin grammar, is compiled from its source as before."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from support import ROOT
from test_plugins import ledger_grammar

import tooldialect as td
from tooldialect import prebuild, prebuilt
from tooldialect.families import compile_grammar, grammar_dir, reads_of
from tooldialect.header import read_header

SHIPPED = ROOT / "grammars" / prebuilt.FILE


def run_py(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return out.stdout.strip()


def test_the_shipped_tables_match_the_lark_sources():
    shipped = json.loads(SHIPPED.read_text(encoding="utf-8"))
    fresh = prebuild.build(grammar_dir())
    assert shipped["sources"] == fresh["sources"], "a grammar changed since the tables were built: run `make tables`"
    assert sorted(shipped["grammars"]) == sorted(td.families.names())
    for name, entry in fresh["grammars"].items():
        assert shipped["grammars"][name] == entry, f"{name}: the shipped tables are stale: run `make tables`"
    assert shipped == fresh, "the shipped tables are stale: run `make tables`"
    assert SHIPPED.read_text(encoding="utf-8") == prebuilt.dumps(fresh)


def _roles(g: td.families.Family | object) -> dict[str, object]:
    return {
        "openers": {k: [t.name for t in v] for k, v in g.openers.items()},
        "closers": [t.name for t in g.closers],
        "reasoning": [(a.name, b.name) for a, b in g.reasoning],
        "furniture": [t.name for t in g.furniture],
        "reply_furniture": [t.name for t in g.reply_furniture],
        "quotes": list(g.quotes),
        "ignore_first": g.ignore_first,
        "terminals": {n: (t.pattern.source if t.pattern else None, t.grammar) for n, t in g.terminals.items()},
    }


def test_a_family_read_from_the_tables_is_the_family_compiled_from_its_source():
    for name in td.families.names():
        fam = td.families.get(name)
        loaded = fam.grammar
        compiled = compile_grammar(fam.path, fam.header, grammar_dir(), reads_of(name))
        assert prebuilt.encode_grammar(loaded) == prebuilt.encode_grammar(compiled), name
        assert _roles(loaded) == _roles(compiled), name
        assert loaded.tables.expected == compiled.tables.expected, name


def test_a_fresh_process_reads_every_bundled_family_without_lark():
    out = run_py(
        """
        import sys, tooldialect as td
        reply = '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
        print([c.name for c in td.parse(reply).calls], [c.name for c in td.parse(reply, families=td.families.names()).calls])
        print(sorted(m for m in sys.modules if m == "lark" or m.startswith("lark.")))
        print(td.families.compile_count() > len(td.families.names()))
        """
    )
    assert out.splitlines() == ["['f'] ['f']", "[]", "True"]


def test_a_plugin_grammar_is_compiled_on_first_use(tmp_path):
    (tmp_path / "ledger.lark").write_text(ledger_grammar(), encoding="utf-8")  # docs/authoring.md's
    out = run_py(
        f"""
        import sys, tooldialect as td
        td.parse("warm")
        print("lark" in sys.modules)
        td.families.register_path({str(tmp_path)!r})
        print([c.name for c in td.parse("<<call get_time>>\\n<<arg tz>>\\nUTC\\n<</arg>>\\n<</call>>").calls])
        print("lark" in sys.modules)
        """
    )
    assert out.splitlines() == ["False", "['get_time']", "True"]


def test_a_grammar_edited_since_the_build_is_compiled_from_its_source(tmp_path):
    for path in grammar_dir().glob("*.lark"):
        shutil.copy(path, tmp_path / path.name)
    prebuild.write(tmp_path)
    hermes = tmp_path / "hermes.lark"
    header = read_header(hermes.read_text(encoding="utf-8"), "hermes")
    assert prebuilt.grammar("hermes", header, hermes) is not None
    assert prebuilt.piece("_reasoning", tmp_path) is not None
    hermes.write_text(hermes.read_text(encoding="utf-8") + "\n// an edit\n", encoding="utf-8")
    prebuilt.forget(tmp_path)
    assert prebuilt.grammar("hermes", header, hermes) is None
    assert prebuilt.piece("_reasoning", tmp_path) is None
    (tmp_path / prebuilt.FILE).write_text("{not json", encoding="utf-8")
    prebuilt.forget(tmp_path)
    assert prebuilt.grammar("hermes", header, hermes) is None


def test_make_tables_rebuilds_them():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "\ntables:" in makefile and "-m tooldialect.prebuild" in makefile
    assert not list(Path(prebuilt.__file__).parent.glob("*.pickle"))
