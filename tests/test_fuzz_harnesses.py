"""The fuzz harnesses, run without atheris: over their seed corpora, a short deterministic
mutation pass (CI's fuzz smoke pass), and every saved finding in tests/regressions/."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from support import ROOT, all_cases, options, run_stream, sweep

import tooldialect as td
from tooldialect.families import piece
from tooldialect.stream import collect

sys.path.insert(0, str(ROOT / "fuzz"))

import harnesses
import run
import seeds

REGRESSIONS = ROOT / "tests" / "regressions"
NAMES = list(harnesses.HARNESSES)
#: Mutated inputs per harness in the smoke pass: a few seconds each.
SMOKE_EXECS = sweep(150, 40)
#: One seed in this many in the quick tier (every seed in the full one).
SEED_STEP = sweep(1, 4)


def test_every_entry_point_has_a_harness():
    assert set(NAMES) == {
        "parse",
        "stream",
        "binding",
        "repair",
        "literal",
        "detect",
        "envelope",
        "roundtrip",
        "truncation",
        "limits",
        "replies",
    }
    assert all(callable(fn) for fn in harnesses.HARNESSES.values())


def test_seeds_are_generated_from_every_corpus_case():
    texts = {data[harnesses.HEADER :] for data in seeds.seed_corpus("parse")}
    for case in all_cases():
        assert case.text.encode("utf-8", "surrogateescape") in texts, case.id
    assert seeds.seed_corpus("binding") and seeds.seed_corpus("repair") and seeds.seed_corpus("literal")


def test_the_dictionary_holds_every_marker_of_every_family():
    lines = seeds.dictionary()
    values = {
        re.sub(r"\\x([0-9a-f]{2})", lambda m: chr(int(m.group(1), 16)), ln.split("=", 1)[1][1:-1]) for ln in lines
    }
    values = {v.encode("latin-1").decode("utf-8") for v in values}
    terminals = [t for fam in td.families.all_families() for t in fam.grammar.terminals.values()]
    terminals += list(piece("_reasoning").values())
    for term in terminals:
        pat = term.pattern
        if pat is None:
            continue
        if pat.literal is not None:
            assert pat.literal in values, (term.grammar, term.name)
        else:
            assert any(pat.regex.fullmatch(v) for v in values), (term.grammar, term.name, pat.source)


def test_samples_match_their_pattern():
    for pattern in (r"<[|\s]{0,3}tool[_-]?call[|\s]{0,3}>", r"(?i:<(?:tools?|json)>)", r"[^\s<>]{1,8}x"):
        got = seeds.samples(pattern)
        assert got and all(re.fullmatch(pattern, s) for s in got)


@pytest.mark.parametrize("name", NAMES)
def test_harness_passes_its_seed_corpus(name):
    fn = harnesses.HARNESSES[name]
    for data in list(seeds.seed_corpus(name))[::SEED_STEP]:
        fn(data)


@pytest.mark.parametrize("name", NAMES)
def test_mutation_smoke_pass(name):
    stats = run.run_mutate(name, seconds=600, seed=20261130, max_execs=SMOKE_EXECS)
    assert stats == {"executions": SMOKE_EXECS, "crashes": 0}


def _regressions():
    return sorted(p for p in REGRESSIONS.iterdir() if p.is_file() and p.name.split("-")[0] in harnesses.HARNESSES)


@pytest.mark.parametrize("path", _regressions(), ids=lambda p: p.name)
def test_saved_findings_stay_fixed(path):
    harnesses.HARNESSES[path.name.split("-")[0]](path.read_bytes())


def test_diagnostics_are_the_same_at_every_chunking_details_included():
    """Found by the detect harness: a diagnostic's reason quoted as much text as the window
    happened to hold, so DetectStream.result() differed from scan()."""
    text = '<｜tool▁calls▁begin｜>foo<｜tool▁sep｜>{"x":1}<｜tool▁calls▁end｜>'
    batch = [d.model_dump() for d in td.parse(text).diagnostics]
    assert batch and batch[0]["detail"]["reason"] == "unexpected 'f'"
    assert [d.model_dump() for d in collect(run_stream(text, range(1, len(text)))).diagnostics] == batch
    for case in all_cases():
        opts = options(case)
        batch = [d.model_dump() for d in td.parse(case.text, **opts).diagnostics]
        streamed = collect(run_stream(case.text, range(3, len(case.text), 3), **opts)).diagnostics
        assert [d.model_dump() for d in streamed] == batch, case.id


def test_a_named_escape_with_characters_no_name_has_is_refused_not_raised():
    value = "'\\N{" + "\udcfe" * 8 + "}'"  # a str may hold lone surrogates (surrogateescape)
    bare = td.parse(f"[f(a={value})]")  # a bare list whose calls are all refused is text
    assert bare.calls == [] and bare.text == f"[f(a={value})]"
    tagged = td.parse(f"<|python_start|>[f(a={value}), g(b=1)]<|python_end|>")
    assert [c.name for c in tagged.calls] == ["g"]
    assert [d.kind for d in tagged.diagnostics] == ["arguments_invalid"]


def test_the_runner_replays_saved_inputs(tmp_path, capsys):
    ok = tmp_path / "one"
    ok.write_bytes(harnesses.text_input('<tool_call>{"name": "f"}</tool_call>'))
    assert run.main(["--replay", "stream", str(ok)]) == 0
    assert "ok" in capsys.readouterr().out


def test_atheris_runs_a_harness_when_installed(tmp_path):
    pytest.importorskip("atheris")
    seeds.write_all(tmp_path)
    stats = run.run_atheris("repair", 2, work=tmp_path)
    assert stats["crashes"] == 0 and stats["executions"] > 0


def test_make_fuzz_runs_the_runner():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^fuzz:", makefile, re.M) and "fuzz/run.py" in makefile
    assert Path(run.__file__).parent == ROOT / "fuzz"


def test_a_triple_quoted_string_keeps_its_line_breaks_as_written():
    """Found by the literal harness: Python's source reading turns \\r\\n into \\n; the value
    is data, so the reader keeps it (docs/decisions.md)."""
    result = td.parse('[f(v="""it\'s\r\nfine\r""")]')
    assert [c.arguments for c in result.calls] == [{"v": "it's\r\nfine\r"}]


def test_a_string_opened_by_a_quote_sentinel_and_never_closed_is_cut_off():
    """Found by the stream harness: the JSON scanner asked for more text after the end of
    the text, so the block was never decided and everything after its opener vanished."""
    text = '<tool_call>{"name": "F", "arguments": {"a": <|"|>INBOX}}</tool_call> tail'
    result = td.parse(text)
    assert result.text == " tail" and [d.kind for d in result.diagnostics] == ["malformed_block"]
    cut = td.parse('<tool_call>call:F{a:[<|"|>INBOX|"|>],b:1}')
    assert cut.calls == [] and [d.kind for d in cut.diagnostics] == ["truncated"]


def test_a_call_announced_in_a_broken_payload_is_aborted_not_taken_over():
    """Found by the stream harness: the payload after a broken one reused its key, so the
    call announced in the broken payload ended as the next call (another name)."""
    text = '<tool_call>{"name": "g", "arguments": {"city": "L"}xx}\n{"name": "t", "arguments": {"a": 1}}</tool_call>'
    events = run_stream(text, range(1, len(text)), families=["hermes"])
    calls = [e for e in events if isinstance(e, (td.CallStart, td.CallAbort, td.CallEnd, td.DiagnosticEvent))]
    assert [(type(e).__name__, getattr(e, "index", None)) for e in calls] == [
        ("CallStart", 0),
        ("CallStart", 1),
        ("CallAbort", 0),
        ("DiagnosticEvent", None),
        ("CallEnd", 1),
    ]  # the broken payload is known broken once the next one begins
    assert calls[-1].call.name == "t" and collect(events).calls == td.parse(text, families=["hermes"]).calls
