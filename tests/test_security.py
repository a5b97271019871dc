"""What the library reads from disk: grammars from its own package, never a pickle or any
other code-bearing cache from a directory another user can write (docs/security.md)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from support import ROOT

_PROBE = textwrap.dedent(
    """
    import json, sys, tempfile
    tmp = tempfile.gettempdir()  # before the hook: finding it writes a probe file there
    events = []

    def hook(event, args):
        if event == "open" and args and isinstance(args[0], str):
            events.append(("open", args[0], str(args[1])))
        elif event == "pickle.find_class":
            events.append(("pickle", str(args[0]), str(args[1])))
        elif event == "marshal.loads":
            events.append(("marshal", "", ""))

    import lark
    lark_options = []
    real_init = lark.Lark.__init__

    def init(self, grammar, **options):
        lark_options.append({k: repr(v) for k, v in options.items()})
        return real_init(self, grammar, **options)

    lark.Lark.__init__ = init
    sys.addaudithook(hook)
    import tooldialect as td
    from tooldialect.catalog import catalog_for
    from tooldialect.families import compile_grammar, grammar_dir
    for fam in td.families.all_families():
        fam.grammar  # read from the tables shipped beside the grammars (JSON)
        compile_grammar(fam.path, fam.header, grammar_dir())  # and compiled from its source with lark
    catalog_for(None)
    td.parse('<tool_call>{"name": "f", "arguments": {}}</tool_call> and [f(a=1)]')
    print(json.dumps({"events": events, "lark": lark_options, "tmp": tmp,
                      "grammars": str(td.families.grammar_dir())}))
    """
)


def _probe(tmp_path):
    env = {
        "PATH": "/usr/bin:/bin",
        "TMPDIR": str(tmp_path),
        "PYTHONPATH": str(ROOT / "src"),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, cwd=ROOT, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_compiling_every_grammar_reads_no_pickle_and_nothing_from_the_temporary_directory(tmp_path):
    (tmp_path / "planted.pickle").write_bytes(b"cos\nsystem\n(S'echo planted'\ntR.")
    got = _probe(tmp_path)
    assert got["tmp"] == str(tmp_path)
    assert not [e for e in got["events"] if e[0] == "pickle"], "something was unpickled"
    opened = [path for kind, path, _mode in got["events"] if kind == "open"]
    assert not [
        p for p in opened if p.startswith(str(tmp_path)) or "lark_cache" in p or p.endswith((".pickle", ".pkl"))
    ]
    grammars = [p for p in opened if p.endswith(".lark")]
    assert grammars and all(p.startswith(got["grammars"]) for p in grammars)
    tables = [p for p in opened if p.endswith("parse_tables.json")]
    assert tables and all(p.startswith(got["grammars"]) for p in tables)
    assert sorted(tmp_path.iterdir()) == [tmp_path / "planted.pickle"], (
        "something was written to the temporary directory"
    )


def test_lark_is_never_asked_for_its_cache(tmp_path):
    got = _probe(tmp_path)
    assert got["lark"], "the probe did not see lark compile a grammar"
    for options in got["lark"]:
        assert options.get("cache", "False") in ("False", "None"), options
