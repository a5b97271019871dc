"""Peer conformance: real model outputs from other parsers' test suites (DESIGN §11).

The vectors live beside the checkout (../shared/conformance/peer_vectors.jsonl, or the
path in TOOLDIALECT_PEER_VECTORS); the test skips when they are absent.  A vector is
excluded only when it is listed in peer_exceptions.json with the rule of DESIGN.md it
contradicts.  Calls compare by name and arguments (1 equals 1.0, "1" does not equal 1),
and by id where the vector has one.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

import tooldialect as td

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
VECTORS = Path(os.environ.get("TOOLDIALECT_PEER_VECTORS", ROOT.parent / "shared" / "conformance" / "peer_vectors.jsonl"))

#: Peer family labels whose formats the JSON-bodied families cover, with the pass rate they are held to.
JSON_BODIED = {
    "hermes", "ernie45", "llama3_json", "xlam", "generic_json", "jamba", "hunyuan_a13b", "granite_3",
    "granite_20b_fc", "phi4_mini", "firefunction_v2", "nemotron_nano_v2", "internlm2", "longcat", "minimax_m1",
    "command_r7b", "command_a_reasoning",
}
#: Peer family labels of the XML- and sentinel-bodied families.
SENTINEL_AND_XML = {
    "qwen3_coder", "seed_oss", "deepseek_v3", "deepseek_r1", "deepseek_v31", "deepseek_v32_dsml",
    "deepseek_v4_dsml", "kimi_k2", "glm45", "glm46", "glm47", "minimax_m2", "step3",
}
GROUPS = {"json_bodied": (JSON_BODIED, 0.95), "sentinel_and_xml": (SENTINEL_AND_XML, 0.95)}


def _norm(value):
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("num", float(value))
    if isinstance(value, dict):
        return ("obj", tuple(sorted((k, _norm(v)) for k, v in value.items())))
    if isinstance(value, list):
        return ("arr", tuple(_norm(v) for v in value))
    return (type(value).__name__, value)


def _expected(call: dict) -> tuple:
    return (call["name"], _norm(call["arguments"]), call.get("id"))


def _got(call: td.ToolCall, with_id: bool) -> tuple:
    return (call.name, _norm(call.arguments), call.id if with_id else None)


def load():
    if not VECTORS.exists():
        pytest.skip(f"peer vectors not found at {VECTORS}")
    vectors = [json.loads(line) for line in VECTORS.read_text(encoding="utf-8").splitlines() if line.strip()]
    exceptions = json.loads((HERE / "peer_exceptions.json").read_text(encoding="utf-8"))
    return vectors, exceptions


def test_exceptions_are_well_formed():
    vectors, exceptions = load()
    seen = set()
    for entry in exceptions:
        assert set(entry) == {"index", "family", "rule"}
        assert entry["index"] not in seen
        seen.add(entry["index"])
        assert vectors[entry["index"]]["family"] == entry["family"], entry
        assert entry["rule"].startswith("DESIGN §") and " says " in entry["rule"], entry


def matches(vector: dict) -> bool:
    tools = None
    if vector.get("tools"):
        tools = [{"name": t["name"], "parameters": t.get("parameters") or {}} for t in vector["tools"]]
    try:
        toolset = td.Toolset.coerce(tools) if tools else None
    except td.ToolsetError:
        toolset = None  # a peer fixture with a schema JSON Schema rejects (type "float"): untyped
    result = td.parse(vector["text"], tools=toolset)
    want = [_expected(c) for c in vector["calls"]]
    got = [_got(c, "id" in exp) for c, exp in zip(result.calls, vector["calls"])]
    return len(result.calls) == len(vector["calls"]) and got == want


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_peer_vectors_pass_rate(group, capsys):
    vectors, exceptions = load()
    families, threshold = GROUPS[group]
    excluded = {e["index"] for e in exceptions}
    passed: Counter[str] = Counter()
    total: Counter[str] = Counter()
    failures = []
    for index, vector in enumerate(vectors):
        if vector["family"] not in families or index in excluded:
            continue
        total[vector["family"]] += 1
        if matches(vector):
            passed[vector["family"]] += 1
        else:
            failures.append(index)
    lines = [f"{fam:<22} {passed[fam]:>3}/{total[fam]:<3}" for fam in sorted(total)]
    rate = sum(passed.values()) / max(1, sum(total.values()))
    report = "\n".join(lines) + f"\n{group}: {rate:.1%} of {sum(total.values())} (failing: {failures})"
    with capsys.disabled():
        print("\n" + report)
    assert rate >= threshold, report


def test_excluded_vectors_still_parse_without_error():
    """An exception excuses a different answer, not a crash or an inconsistent stream."""
    vectors, exceptions = load()
    for entry in exceptions:
        text = vectors[entry["index"]]["text"]
        whole = td.parse(text)
        stream = td.ToolStream()
        events = []
        for ch in text:
            events += stream.feed(ch)
        events += stream.close()
        assert "".join(e.text for e in events if isinstance(e, td.TextDelta)) == whole.text
