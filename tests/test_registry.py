"""The grammar registry: headers, lazy thread-safe compilation, conventions, one marker per file."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import pytest
from support import ROOT

import tooldialect as td
from tooldialect.families import grammar_dir
from tooldialect.grammar import compile_grammar, read_header

GRAMMARS = ROOT / "grammars"
SRC = ROOT / "src" / "tooldialect"


def run_py(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return out.stdout.strip()


def test_import_compiles_no_grammar():
    assert (
        run_py(
            """
        import tooldialect, tooldialect.families as f
        print(f.compile_count())
        """
        )
        == "0"
    )


def test_import_loads_no_export_builder():
    """td.export is there at import; its grammar builders load on the first export."""
    assert (
        run_py(
            """
        import sys, tooldialect as td
        print(callable(td.export.grammar), sorted(m for m in sys.modules if m.startswith("tooldialect.export.")))
        td.export.grammar("hermes", [{"name": "f", "parameters": {"type": "object", "properties": {}}}])
        print("tooldialect.export._reply" in sys.modules)
        """
        )
        == "True []\nTrue"
    )


def test_listing_reads_headers_only():
    assert (
        run_py(
            """
        import tooldialect as td
        names = td.families.names()
        assert "hermes" in names and td.families.get("hermes").title
        print(td.families.compile_count())
        """
        )
        == "0"
    )


def test_first_use_compiles_once_across_threads():
    out = run_py(
        """
        import threading, tooldialect as td
        fam = td.families.get("hermes")
        got = []
        barrier = threading.Barrier(8)
        def work():
            barrier.wait()
            got.append(id(fam.grammar))
        threads = [threading.Thread(target=work) for _ in range(8)]
        [t.start() for t in threads]; [t.join() for t in threads]
        print(len(set(got)), td.families.compile_count())
        """
    )
    assert out == "1 1"


def test_names_unique_and_match_file_stems():
    names = td.families.names()
    assert len(names) == len(set(names))
    stems = {p.stem for p in GRAMMARS.glob("*.lark") if not p.name.startswith("_")}
    assert set(names) == stems
    assert grammar_dir().resolve() in (GRAMMARS.resolve(), (SRC / "grammars").resolve())


@pytest.mark.parametrize("name", td.families.names())
def test_header_metadata(name):
    fam = td.families.get(name)
    assert fam.header.family == name
    assert fam.title, f"{name}: header needs a title"
    assert fam.models, f"{name}: header needs model globs"
    assert fam.header.checked_against, f"{name}: header must name what it was checked against"


@pytest.mark.parametrize("name", td.families.names())
def test_every_grammar_compiles_strictly(name):
    g = td.families.get(name).grammar
    assert g.starts
    for term in g.openers.get("start", ()):
        assert term.pattern is not None and term.pattern.first, f"{name}: opener {term.name} must be scannable"


def test_unknown_family():
    with pytest.raises(td.UnknownFamilyError) as err:
        td.families.get("nope")
    assert "hermes" in str(err.value)
    assert isinstance(err.value, td.ToolDialectError)
    with pytest.raises(td.UnknownFamilyError):
        td.parse("x", families=["hermes", "nope"])


def _compile(tmp_path: Path, body: str):
    path = tmp_path / "fam.lark"
    path.write_text("// family: fam\n// title: t\n" + textwrap.dedent(body), encoding="utf-8")
    return compile_grammar(path, read_header(path.read_text(), "fam"))


def test_conflict_is_a_grammar_error(tmp_path):
    with pytest.raises(td.GrammarError, match=r"fam\.lark"):
        _compile(
            tmp_path,
            """
            start: OPEN a | OPEN b
            a: X
            b: X
            OPEN: "<<"
            X: "x"
            """,
        )


def test_unknown_declared_scanner_is_refused(tmp_path):
    with pytest.raises(td.GrammarError, match="XML_BLOB"):
        _compile(tmp_path, 'start: OPEN XML_BLOB\nOPEN: "<<"\n%declare XML_BLOB\n')


def test_unbounded_marker_is_refused(tmp_path):
    with pytest.raises(td.GrammarError, match="bound its repetitions"):
        _compile(tmp_path, 'start: OPEN "x"\nOPEN: /<a[^>]*>/\n')


def test_opener_must_be_a_marker(tmp_path):
    with pytest.raises(td.GrammarError, match="must begin with a marker"):
        _compile(tmp_path, "start: JSON\n%declare JSON\n")


# -- one marker, one file --------------------------------------------------------------------

_DEF = re.compile(r"^([A-Z_][A-Z0-9_]*)(?:\.\d+)?\s*:\s*(.+)$")
_STRING = re.compile(r'"((?:[^"\\]|\\.)+)"i?')
_REGEX = re.compile(r"/((?:[^/\\]|\\.)+)/[imslux]*")


def _definitions() -> dict[str, list[tuple[str, str]]]:
    """Marker literals and regexes written in each grammar file (imports excluded)."""
    out: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for path in sorted(GRAMMARS.glob("*.lark")):
        for line in path.read_text(encoding="utf-8").splitlines():
            m = _DEF.match(line.strip())
            if not m:
                continue
            body = m.group(2)
            for s in _STRING.findall(body):
                out[path.name].append(("string", s))
            for r in _REGEX.findall(_STRING.sub("", body)):
                out[path.name].append(("regex", r))
    return out


def test_every_marker_is_written_in_exactly_one_grammar_file():
    where: dict[tuple[str, str], set[str]] = defaultdict(set)
    for fname, items in _definitions().items():
        for item in items:
            if item[0] == "string" and len(item[1]) < 2:
                continue
            where[item].add(fname)
    dups = {k: v for k, v in where.items() if len(v) > 1}
    assert not dups, f"markers written in more than one grammar: {dups}"


def test_marker_strings_found_by_the_engine_come_from_grammars():
    """The tokenizer's marker table is exactly what the compiled grammars declare."""
    from tooldialect.catalog import catalog_for

    cat = catalog_for(None)
    sources = {m.terminal.pattern.source for m in cat.markers}
    declared = set()
    for fam in td.families.all_families():
        for term in fam.grammar.terminals.values():
            if term.pattern is not None:
                declared.add(term.pattern.source)
    from tooldialect.families import piece

    declared |= {t.pattern.source for t in piece("_reasoning").values()}
    assert sources <= declared


_MARKERISH = re.compile(r"<\||\|>|｜|▁|</?[A-Za-z_][\w:-]*>|\[/?[A-Z_]{3,}\]|<tool|<function|<invoke|think>")


def _string_constants(tree: ast.AST):
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = getattr(node, "body", [])
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node


def test_no_marker_literal_in_python_sources():
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _string_constants(tree):
            if _MARKERISH.search(node.value):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert not offenders, "marker strings belong in grammars/*.lark:\n" + "\n".join(offenders)


def test_no_pickle_cache_anywhere():
    for path in SRC.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "import pickle" not in text and "cache_grammar" not in text, path


# -- model hints -------------------------------------------------------------------------------


def test_for_model_suggests_families_and_policy():
    qwq = td.families.for_model("Qwen/QwQ-32B")
    assert qwq.matched and "hermes" in qwq.families
    assert qwq.policy.start_in_reasoning is True
    llama = td.families.for_model("meta-llama/Llama-3.1-8B-Instruct")
    assert "llama_json" in llama.families and llama.policy.start_in_reasoning is False
    granite = td.families.for_model("ibm-granite/granite-3.1-8b-instruct")
    assert "json_array" in granite.families
    unknown = td.families.for_model("acme/unheard-of-7b")
    assert not unknown.matched and unknown.families == td.families.names()
    with pytest.raises(td.ToolDialectError):
        td.families.for_model(42)  # type: ignore[arg-type]


#: (model id, family it must be suggested, start_in_reasoning), each checked against the
#: model's chat template (docs/families.md, "Model suggestions")
MODEL_SUGGESTIONS = [
    ("fireworks-ai/llama-3-firefunction-v2", "json_array", False),
    ("nvidia/NVIDIA-Nemotron-Nano-9B-v2", "json_array", True),
    ("nvidia/NVIDIA-Nemotron-Nano-12B-v2", "json_array", True),
    ("nvidia/Llama-3_3-Nemotron-Super-49B-v1_5", "json_array", False),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "qwen3_coder", True),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8", "qwen3_coder", True),
    ("MiniMaxAI/MiniMax-M2", "invoke_xml", True),
    ("Qwen/Qwen3-235B-A22B-Thinking-2507", "hermes", True),
    ("Qwen/Qwen3-4B-Thinking-2507", "hermes", True),
    ("Qwen/Qwen3-8B", "hermes", False),  # hybrid: the prompt opens no <think>
    ("Qwen/Qwen3-235B-A22B-Instruct-2507", "hermes", False),
    ("deepseek-ai/DeepSeek-R1", "deepseek", True),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "deepseek", True),
    ("deepseek-ai/DeepSeek-V3.1", "deepseek", False),
    ("ByteDance-Seed/Seed-OSS-36B-Instruct", "qwen3_coder", False),
]


@pytest.mark.parametrize(("model", "family", "thinking"), MODEL_SUGGESTIONS)
def test_for_model_on_real_model_ids(model, family, thinking):
    profile = td.families.for_model(model)
    assert profile.matched, model
    assert family in profile.families
    assert profile.policy.start_in_reasoning is thinking


def test_nemotron_spellings_go_to_their_own_formats():
    """Nemotron Nano v2 writes <TOOLCALL>[…] JSON, Nemotron 3 Nano Qwen3-Coder XML: neither
    is suggested the other's family."""
    v2 = td.families.for_model("nvidia/NVIDIA-Nemotron-Nano-9B-v2").families
    v3 = td.families.for_model("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16").families
    assert "qwen3_coder" not in v2
    assert "json_array" not in v3


def test_for_model_tells_minicpm5_and_hy3_from_their_neighbours():
    for model in ("openbmb/MiniCPM5-1B", "openbmb/MiniCPM5-2B-MLX"):
        hint = td.families.for_model(model)
        assert hint.matched and "minicpm5" in hint.families and "functionary" not in hint.families
        assert hint.policy.start_in_reasoning is False  # thinking is the host's choice
    for model in ("tencent/Hy3", "tencent/Hy3-preview"):
        hint = td.families.for_model(model)
        assert hint.matched and "hy3" in hint.families and "json_array" not in hint.families
        assert hint.policy.start_in_reasoning is False
    # Hunyuan-A13B writes a JSON array after <tool_calls>; Hy4 is claimed by no family
    a13b = td.families.for_model("tencent/Hunyuan-A13B-Instruct")
    assert "json_array" in a13b.families and "hy3" not in a13b.families
    assert not td.families.for_model("tencent/Hy4").matched


def test_a_family_module_can_override_the_reader(monkeypatch):
    import types

    from tooldialect import transform

    class Shouting(transform.Reader):
        def read(self, node):
            got = super().read(node)
            if got:
                for call in got[0]:
                    call.name = call.name.upper()
            return got

    module = types.ModuleType("tooldialect.families.hermes")
    module.Reader = Shouting
    monkeypatch.setitem(sys.modules, "tooldialect.families.hermes", module)
    monkeypatch.setattr(transform, "_READERS", {})
    r = td.parse('<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>')
    assert [c.name for c in r.calls] == ["GET_WEATHER"]
    monkeypatch.setattr(transform, "_READERS", {})


def test_families_without_a_module_use_the_generic_reader():
    from tooldialect import transform

    modules = {p.stem for p in (SRC / "families").glob("*.py")}
    generic = [name for name in td.families.names() if name not in modules]
    assert generic and len(generic) < len(td.families.names())
    for name in td.families.names():
        if name in modules:
            assert issubclass(transform.reader_class(name), transform.Reader)
            assert transform.reader_class(name) is not transform.Reader
        else:
            assert transform.reader_class(name) is transform.Reader


def test_a_reader_holds_its_class_node_sets():
    """A reader keeps its class's node sets (what a candidate hands it, what it announces
    from, its members) as its own: each family's, Kimi K2's announcing from its id."""
    from tooldialect import transform

    for name in td.families.names():
        cls = transform.reader_class(name)
        reader = cls(name, frozenset(), 8)
        assert reader.reacting == cls.reacts_to == transform._reacts_to(cls)
        assert (reader.announcing, reader.members) == (cls.announce_nodes, cls.member_nodes)
    assert transform.reader_class("kimi_k2")("kimi_k2", frozenset(), 8).announcing == {"call_id"}


def test_reply_header_values():
    assert read_header("// family: a\n// reply: whole\n", "a").reply == "whole"
    h = read_header("// family: a\n// reply: start header\n", "a")
    assert (h.reply, h.reply_header) == ("start", True)
    assert read_header("// family: a\n// reply: start\n", "a").reply_header is False
    for bad in ("begin", "start headers", "header", "whole header extra"):
        with pytest.raises(td.GrammarError, match="reply must be"):
            read_header(f"// family: a\n// reply: {bad}\n", "a")


def test_bare_json_false_turns_off_replies_without_a_marker_only():
    off = td.Policy(bare_json=False)
    for text in ('{"name": "f", "arguments": {}}', "[f(a=1)]"):
        assert td.parse(text).calls and not td.parse(text, policy=off).calls
    header = ' to=functions.f<|channel|>commentary json<|message|>{"a": 1}<|call|>'
    assert [c.name for c in td.parse(header, policy=off).calls] == ["f"]


@pytest.mark.parametrize(
    "model, family",
    [
        ("CohereForAI/c4ai-command-r-plus", "command_r"),
        ("CohereForAI/c4ai-command-r-plus-08-2024", "command_r"),
        ("CohereForAI/c4ai-command-r-v01", "command_r"),
        ("CohereLabs/c4ai-command-r-08-2024", "command_r"),
        ("CohereForAI/c4ai-command-r7b-12-2024", "json_array"),
        ("upstage/Solar-Open-100B", "solar_open"),
    ],
)
def test_for_model_suggests_the_family_of_each_hub_id(model, family):
    hint = td.families.for_model(model)
    assert hint.matched and family in hint.families
    if family == "json_array":
        assert "command_r" not in hint.families  # R7B writes <|START_ACTION|>, not Action:
