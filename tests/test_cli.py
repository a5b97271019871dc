"""The ``tooldialect`` command (DESIGN §5), driven through ``tooldialect.cli.main(argv)``.

Everything runs in-process with capsys/monkeypatch, except one end-to-end test that runs
``python -m tooldialect`` in a subprocess.
"""

from __future__ import annotations

import importlib.metadata
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest

import tooldialect
from tooldialect import cli, families
from tooldialect.stream import ToolStream

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

HERMES = (
    "<think>Two cities, one call each.</think>\n"
    "Let me check.\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich"}}\n</tool_call>\n'
    "Done."
)
PLAIN = "Nothing to call here, just a friendly answer.\n"
# A Jamba/Hunyuan-style array: only the json_array family reads it (hermes does not know <tool_calls>).
JSON_ARRAY_ONLY = '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Tokyo"}}]</tool_calls>'
UNICODE = (
    "Voilà — 東京の天気を調べます 🌧️\n"
    '<tool_call>{"name": "get_weather", "arguments": {"city": "東京", "note": "naïve café ☕ 𝔘"}}</tool_call>'
)

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
    "required": ["city"],
}
SEARCH_SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}

CALL_KEYS = {"name", "arguments", "id", "family"}
DIAG_KEYS = {"kind", "family", "detail"}
EVENT_KEYS = {
    "text": {"type", "text"},
    "reasoning": {"type", "text"},
    "call_start": {"type", "index", "name", "id"},
    "arguments": {"type", "index", "fragment"},
    "call_end": {"type", "index", "call"},
    "call_abort": {"type", "index", "reason"},
    "diagnostic": {"type", "diagnostic"},
}


# -- helpers -------------------------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()  # drop anything captured before
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def write(tmp_path: Path, name: str, content: Any) -> str:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_text(json.dumps(content), encoding="utf-8")
    return str(path)


def parse_out(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    """Run ``parse``; check exit 0, a silent stderr, and exactly one JSON object with the contract's shape."""
    rc, out, err = run(capsys, "parse", *argv)
    assert rc == 0, err
    assert err == ""
    decoder = json.JSONDecoder()
    obj, end = decoder.raw_decode(out)
    assert out[end:].strip() == "", "parse must print exactly one JSON object"
    assert isinstance(obj, dict)
    assert set(obj) == {"text", "reasoning", "calls", "diagnostics"}
    assert isinstance(obj["text"], str) and isinstance(obj["reasoning"], str)
    for call in obj["calls"]:
        assert set(call) == CALL_KEYS, call
        assert isinstance(call["name"], str) and isinstance(call["arguments"], dict)
        assert call["id"] is None or isinstance(call["id"], str)
        assert call["family"] in families.names()
    for diag in obj["diagnostics"]:
        assert set(diag) == DIAG_KEYS, diag
        assert isinstance(diag["kind"], str) and isinstance(diag["detail"], dict)
    return obj


def stream_out(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    """Run ``stream``; check exit 0 and one well-formed JSON event per line."""
    rc, out, err = run(capsys, "stream", *argv)
    assert rc == 0, err
    assert err == ""
    assert out == "" or out.endswith("\n")
    events = []
    for line in out.splitlines():
        ev = json.loads(line)
        assert isinstance(ev, dict)
        assert ev.get("type") in EVENT_KEYS, ev
        assert set(ev) == EVENT_KEYS[ev["type"]], ev
        events.append(ev)
    return events


def joined(events: list[dict[str, Any]], kind: str) -> str:
    return "".join(ev["text"] for ev in events if ev["type"] == kind)


def tool_entry(shape: str, name: str, schema: dict[str, Any]) -> dict[str, Any]:
    description = f"the {name} tool"
    if shape == "openai":
        return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}
    if shape == "anthropic":
        return {"name": name, "description": description, "input_schema": schema}
    if shape == "mcp":
        return {"name": name, "description": description, "inputSchema": schema}
    assert shape == "bare"
    return {"name": name, "description": description, "parameters": schema}


@pytest.fixture
def hermes_file(tmp_path: Path) -> str:
    return write(tmp_path, "hermes.txt", HERMES)


@pytest.fixture
def weather_tools(tmp_path: Path) -> str:
    return write(tmp_path, "tools.json", [tool_entry("openai", "get_weather", WEATHER_SCHEMA)])


# -- parse ---------------------------------------------------------------------------------


def test_parse_file_with_calls(capsys, hermes_file):
    obj = parse_out(capsys, hermes_file)
    assert obj["text"] == "\nLet me check.\n\n\nDone."
    assert obj["reasoning"] == "Two cities, one call each."
    assert obj["calls"] == [
        {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}, "id": None, "family": "hermes"},
        {"name": "get_weather", "arguments": {"city": "Zürich"}, "id": None, "family": "hermes"},
    ]
    assert obj["diagnostics"] == []


def test_parse_without_calls_exits_zero(capsys, tmp_path):
    obj = parse_out(capsys, write(tmp_path, "plain.txt", PLAIN))
    assert obj == {"text": PLAIN, "reasoning": "", "calls": [], "diagnostics": []}


def test_parse_empty_file(capsys, tmp_path):
    obj = parse_out(capsys, write(tmp_path, "empty.txt", ""))
    assert obj == {"text": "", "reasoning": "", "calls": [], "diagnostics": []}


def test_parse_bundled_example(capsys):
    """The `make demo` command: the bundled Hermes reply with the bundled OpenAI tools."""
    obj = parse_out(capsys, str(EXAMPLES / "hermes_reply.txt"), "--tools", str(EXAMPLES / "tools.json"))
    assert [c["arguments"]["city"] for c in obj["calls"]] == ["Paris", "Zürich"]
    assert {c["family"] for c in obj["calls"]} == {"hermes"}
    assert obj["reasoning"].startswith("The user wants the weather")
    assert obj["diagnostics"] == []


@pytest.mark.parametrize("dash", [True, False], ids=["dash", "no-file-argument"])
def test_parse_reads_stdin(capsys, monkeypatch, hermes_file, dash):
    expected = parse_out(capsys, hermes_file)
    monkeypatch.setattr(sys, "stdin", io.StringIO(HERMES))
    got = parse_out(capsys, *(["-"] if dash else []))
    assert got == expected
    assert len(got["calls"]) == 2


def test_parse_stdin_with_options(capsys, monkeypatch, weather_tools):
    monkeypatch.setattr(sys, "stdin", io.StringIO('<tool_call>{"name": "nope", "arguments": {}}</tool_call>'))
    obj = parse_out(capsys, "-", "--tools", weather_tools, "--policy", "unknown_tool=drop")
    assert obj["calls"] == []
    assert [d["kind"] for d in obj["diagnostics"]] == ["unknown_tool"]


@pytest.mark.parametrize("shape", ["openai", "anthropic", "mcp", "bare"])
def test_parse_tools_shape_detected(capsys, tmp_path, shape):
    """Each shape is read with its schema: a call that breaks the schema is reported, a call to a tool
    not in the list is reported, a good call is not (and without --tools nothing is reported)."""
    tools = write(tmp_path, f"{shape}.json", [tool_entry(shape, "search", SEARCH_SCHEMA)])
    reply = write(
        tmp_path,
        "reply.txt",
        '<tool_call>{"name": "search", "arguments": {"q": "lark"}}</tool_call>\n'
        '<tool_call>{"name": "search", "arguments": {"q": 5}}</tool_call>\n'
        '<tool_call>{"name": "other_tool", "arguments": {}}</tool_call>',
    )
    bare = parse_out(capsys, reply)
    assert bare["diagnostics"] == []
    assert [c["name"] for c in bare["calls"]] == ["search", "search", "other_tool"]

    obj = parse_out(capsys, reply, "--tools", tools)
    assert [c["name"] for c in obj["calls"]] == ["search", "search", "other_tool"]
    kinds = [d["kind"] for d in obj["diagnostics"]]
    assert kinds == ["arguments_invalid", "unknown_tool"], obj["diagnostics"]
    assert obj["diagnostics"][0]["detail"].get("name") == "search"
    assert obj["diagnostics"][1]["detail"].get("name") == "other_tool"


def test_parse_tools_mixed_shapes_in_one_file(capsys, tmp_path):
    tools = write(
        tmp_path,
        "mixed.json",
        [
            tool_entry("openai", "a_tool", SEARCH_SCHEMA),
            tool_entry("anthropic", "b_tool", SEARCH_SCHEMA),
            tool_entry("mcp", "c_tool", SEARCH_SCHEMA),
            tool_entry("bare", "d_tool", SEARCH_SCHEMA),
        ],
    )
    reply = write(
        tmp_path,
        "reply.txt",
        "".join(
            f'<tool_call>{{"name": "{n}", "arguments": {{"q": "x"}}}}</tool_call>'
            for n in ("a_tool", "b_tool", "c_tool", "d_tool")
        )
        + '<tool_call>{"name": "e_tool", "arguments": {"q": "x"}}</tool_call>',
    )
    obj = parse_out(capsys, reply, "--tools", tools)
    assert len(obj["calls"]) == 5
    assert [(d["kind"], d["detail"].get("name")) for d in obj["diagnostics"]] == [("unknown_tool", "e_tool")]


def test_parse_tools_wrapped_in_object(capsys, tmp_path):
    """A {"tools": [...]} object (a request body) is read like the bare list."""
    tools = write(tmp_path, "body.json", {"model": "m", "tools": [tool_entry("openai", "search", SEARCH_SCHEMA)]})
    reply = write(tmp_path, "r.txt", '<tool_call>{"name": "nope", "arguments": {}}</tool_call>')
    obj = parse_out(capsys, reply, "--tools", tools)
    assert [d["kind"] for d in obj["diagnostics"]] == ["unknown_tool"]


def test_parse_family_restricts(capsys, tmp_path):
    reply = write(tmp_path, "array.txt", JSON_ARRAY_ONLY)
    every = parse_out(capsys, reply)
    assert [(c["name"], c["family"]) for c in every["calls"]] == [("get_weather", "json_array")]
    assert every["text"] == ""

    hermes_only = parse_out(capsys, reply, "--family", "hermes")
    assert hermes_only["calls"] == []
    assert hermes_only["text"] == JSON_ARRAY_ONLY  # not recognised: kept as written

    array_only = parse_out(capsys, reply, "--family", "json_array")
    assert array_only == every


def test_parse_family_repeatable(capsys, tmp_path, hermes_file):
    array_reply = write(tmp_path, "array.txt", JSON_ARRAY_ONLY)
    both = ["--family", "hermes", "--family", "json_array"]
    got = parse_out(capsys, array_reply, *both)
    assert [c["family"] for c in got["calls"]] == ["json_array"]
    got = parse_out(capsys, hermes_file, *both)
    assert [c["family"] for c in got["calls"]] == ["hermes", "hermes"]
    # and the json_array family alone does not read the Hermes reply: the restriction is real
    got = parse_out(capsys, hermes_file, "--family", "json_array")
    assert got["calls"] == []


def test_parse_policy_unknown_tool_drop(capsys, tmp_path, weather_tools):
    reply = write(tmp_path, "u.txt", 'Sure. <tool_call>{"name": "launch_missiles", "arguments": {}}</tool_call>')
    kept = parse_out(capsys, reply, "--tools", weather_tools)
    assert [c["name"] for c in kept["calls"]] == ["launch_missiles"]
    assert [d["kind"] for d in kept["diagnostics"]] == ["unknown_tool"]

    dropped = parse_out(capsys, reply, "--tools", weather_tools, "--policy", "unknown_tool=drop")
    assert dropped["calls"] == []
    assert [d["kind"] for d in dropped["diagnostics"]] == ["unknown_tool"]
    assert dropped["text"] == kept["text"] == "Sure. "


def test_parse_policy_start_in_reasoning(capsys, tmp_path):
    reply = write(tmp_path, "r.txt", "Planning the answer.\n</think>\nHere it is.")
    default = parse_out(capsys, reply)
    assert default["reasoning"] == ""
    assert "Planning the answer." in default["text"]

    forced = parse_out(capsys, reply, "--policy", "start_in_reasoning=true")
    assert forced["reasoning"] == "Planning the answer.\n"
    assert forced["text"] == "\nHere it is."


def test_parse_repeated_policy(capsys, tmp_path, weather_tools):
    reply = write(tmp_path, "r.txt", 'Hmm.\n</think>\n<tool_call>{"name": "nope", "arguments": {}}</tool_call>')
    obj = parse_out(
        capsys, reply, "--tools", weather_tools, "--policy", "start_in_reasoning=TRUE", "--policy", "unknown_tool=drop"
    )
    assert obj["reasoning"] == "Hmm.\n"
    assert obj["calls"] == []


def test_parse_unicode_round_trip(capsys, tmp_path):
    rc, out, err = run(capsys, "parse", write(tmp_path, "u.txt", UNICODE))
    assert rc == 0 and err == ""
    for s in ("Voilà", "東京", "🌧️", "naïve café ☕ 𝔘"):
        assert s in out, s
    assert "\\u" not in out, "non-ASCII characters must be printed as is"
    obj = json.loads(out)
    assert obj["text"] == "Voilà — 東京の天気を調べます 🌧️\n"
    assert obj["calls"][0]["arguments"] == {"city": "東京", "note": "naïve café ☕ 𝔘"}


# -- stream --------------------------------------------------------------------------------


class _Recording(ToolStream):
    """A ToolStream that remembers the length of every delta the CLI feeds it."""

    sizes: ClassVar[list[int]] = []

    def feed(self, delta):  # type: ignore[override]
        _Recording.sizes.append(len(delta))
        return super().feed(delta)


@pytest.fixture
def recording(monkeypatch):
    _Recording.sizes = []
    monkeypatch.setattr(cli, "ToolStream", _Recording)
    return _Recording


@pytest.mark.parametrize("chunk", [1, 3, 16, 1000])
@pytest.mark.parametrize("name", ["hermes", "plain", "array", "unicode", "truncated"])
def test_stream_text_equals_parse(capsys, tmp_path, weather_tools, name, chunk):
    text = {
        "hermes": HERMES,
        "plain": PLAIN,
        "array": JSON_ARRAY_ONLY,
        "unicode": UNICODE,
        "truncated": 'Hi <tool_call>{"name": "get_weather", "arguments": {"city": "Pa',
    }[name]
    reply = write(tmp_path, "reply.txt", text)
    batch = parse_out(capsys, reply, "--tools", weather_tools)
    events = stream_out(capsys, reply, "--tools", weather_tools, "--chunk", str(chunk))
    assert joined(events, "text") == batch["text"]
    assert joined(events, "reasoning") == batch["reasoning"]
    ends = [ev["call"] for ev in events if ev["type"] == "call_end"]
    assert [{k: c[k] for k in CALL_KEYS} for c in ends] == batch["calls"]
    assert [ev["diagnostic"]["kind"] for ev in events if ev["type"] == "diagnostic"] == [
        d["kind"] for d in batch["diagnostics"]
    ]


def test_stream_event_fields(capsys, hermes_file):
    events = stream_out(capsys, hermes_file, "--chunk", "5")
    types = [ev["type"] for ev in events]
    assert {"text", "reasoning", "call_start", "arguments", "call_end"} <= set(types)
    assert types.count("call_start") == types.count("call_end") == 2
    starts = [ev for ev in events if ev["type"] == "call_start"]
    assert [(s["index"], s["name"]) for s in starts] == [(0, "get_weather"), (1, "get_weather")]
    for ev in events:
        if ev["type"] == "call_end":
            fragments = "".join(a["fragment"] for a in events if a["type"] == "arguments" and a["index"] == ev["index"])
            assert fragments == ev["call"]["arguments_json"]
            assert json.loads(fragments) == ev["call"]["arguments"]
            assert ev["call"]["family"] == "hermes"
    assert joined(events, "reasoning") == "Two cities, one call each."


def test_stream_abort_and_diagnostic_events(capsys, tmp_path):
    reply = write(tmp_path, "cut.txt", '<tool_call>{"name": "f", "arguments": {"a": "x')
    events = stream_out(capsys, reply, "--chunk", "100")
    assert [ev["type"] for ev in events] == ["call_start", "arguments", "call_abort", "diagnostic"]
    assert events[1]["fragment"] == '{"a": "x'
    assert events[2] == {"type": "call_abort", "index": events[0]["index"], "reason": "truncated"}
    diag = events[3]["diagnostic"]
    assert diag["kind"] == "truncated" and diag["family"] == "hermes"


def test_stream_chunk_one(capsys, recording, hermes_file):
    events = stream_out(capsys, hermes_file, "--chunk", "1")
    assert recording.sizes == [1] * len(HERMES)
    assert joined(events, "text") == "\nLet me check.\n\n\nDone."


def test_stream_default_chunk_is_16(capsys, recording, hermes_file):
    stream_out(capsys, hermes_file)
    n = len(HERMES)
    assert recording.sizes == [16] * (n // 16) + ([n % 16] if n % 16 else [])


def test_stream_chunk_larger_than_input(capsys, recording, hermes_file):
    events = stream_out(capsys, hermes_file, "--chunk", "100000")
    assert recording.sizes == [len(HERMES)]
    assert sum(ev["type"] == "call_end" for ev in events) == 2


def test_stream_empty_input(capsys, recording, tmp_path):
    assert stream_out(capsys, write(tmp_path, "empty.txt", "")) == []


def test_stream_reads_stdin(capsys, monkeypatch, hermes_file):
    expected = stream_out(capsys, hermes_file, "--chunk", "4")
    monkeypatch.setattr(sys, "stdin", io.StringIO(HERMES))
    assert stream_out(capsys, "--chunk", "4") == expected
    monkeypatch.setattr(sys, "stdin", io.StringIO(HERMES))
    assert stream_out(capsys, "-", "--chunk", "4") == expected


def test_stream_unicode_not_escaped(capsys, tmp_path):
    rc, out, err = run(capsys, "stream", write(tmp_path, "u.txt", UNICODE), "--chunk", "2")
    assert rc == 0 and err == ""
    assert "\\u" not in out
    assert "東京" in out and "𝔘" in out


def test_stream_family_and_policy(capsys, tmp_path, weather_tools):
    reply = write(tmp_path, "array.txt", JSON_ARRAY_ONLY)
    events = stream_out(capsys, reply, "--family", "hermes", "--chunk", "3")
    assert not any(ev["type"].startswith("call") for ev in events)
    assert joined(events, "text") == JSON_ARRAY_ONLY
    unknown = write(tmp_path, "u.txt", '<tool_call>{"name": "nope", "arguments": {}}</tool_call>')
    kept = stream_out(capsys, unknown, "--tools", weather_tools)
    assert [ev["type"] for ev in kept].count("call_end") == 1
    dropped = stream_out(capsys, unknown, "--tools", weather_tools, "--policy", "unknown_tool=drop")
    assert "call_end" not in [ev["type"] for ev in dropped]
    assert [ev["diagnostic"]["kind"] for ev in dropped if ev["type"] == "diagnostic"] == ["unknown_tool"]


# -- families ------------------------------------------------------------------------------


def test_families_table(capsys):
    rc, out, err = run(capsys, "families")
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["family", "title", "models"]
    rows = [line for line in lines[1:] if not line.startswith(" ")]
    names = families.names()
    assert names, "the registry is empty"
    assert [line.split()[0] for line in rows] == names
    body = "\n".join(lines[1:]) + "\n"
    for fam, (row, nxt) in zip(families.all_families(), zip(rows, [*rows[1:], None])):
        assert fam.title in row
        for model in fam.models:
            assert model in row
        # the documents the grammar was checked against follow its row, one per line, then
        # the spellings it writes (variants) with their model globs
        block = body[body.index(row + "\n") + len(row) + 1 : body.index(nxt) if nxt else len(body)]
        assert fam.checked_against, fam.name
        spellings = [f"variant {v}: {', '.join(g) or '(named only)'}" for v, g in fam.header.variants]
        assert [b.strip() for b in block.splitlines()] == [
            f"checked against: {d}" for d in fam.checked_against
        ] + spellings


def test_families_json(capsys):
    rc, out, err = run(capsys, "families", "--json")
    assert rc == 0 and err == ""
    rows = json.loads(out)
    assert [r["family"] for r in rows] == families.names()
    for fam, row in zip(families.all_families(), rows):
        assert row == {
            "family": fam.name,
            "title": fam.title,
            "models": list(fam.models),
            "checked_against": list(fam.checked_against),
            "variants": {name: list(globs) for name, globs in fam.header.variants},
            "source": "built-in",
        }


# -- usage errors: exit 2, one line on stderr, nothing on stdout ---------------------------


def _bad_tools(tmp_path: Path, content: Any) -> list[str]:
    return ["parse", write(tmp_path, "reply.txt", HERMES), "--tools", write(tmp_path, "bad_tools.json", content)]


USAGE_ERRORS = {
    "no subcommand": lambda p: [],
    "unknown subcommand": lambda p: ["frobnicate"],
    "unknown option": lambda p: ["parse", write(p, "r.txt", HERMES), "--frobnicate"],
    "unknown option on stream": lambda p: ["stream", "--chunky", "3"],
    "extra argument to families": lambda p: ["families", "extra"],
    "missing file": lambda p: ["parse", str(p / "no-such-file.txt")],
    "missing file for stream": lambda p: ["stream", str(p / "no-such-file.txt")],
    "missing store for audit": lambda p: ["audit", str(p / "missing.jsonl")],
    "missing stores for audit": lambda p: ["audit", str(p / "missing.jsonl"), str(p / "gone")],
    "directory as file": lambda p: ["parse", str(p)],
    "file not UTF-8": lambda p: ["parse", _bytes(p / "latin1.txt", "café".encode("latin-1"))],
    "missing tools file": lambda p: ["parse", write(p, "r.txt", HERMES), "--tools", str(p / "nope.json")],
    "tools file not JSON": lambda p: _bad_tools(p, "[{'name': 'single quotes'}"),
    "tools file is an object": lambda p: _bad_tools(p, {"name": "get_weather"}),
    "tools file is a string": lambda p: _bad_tools(p, "just a string"),
    "tools entries are numbers": lambda p: _bad_tools(p, [1, 2]),
    "tools entries are not tools": lambda p: _bad_tools(p, [{"title": "x", "schema": {}}]),
    "tool without a name": lambda p: _bad_tools(p, [{"type": "function", "function": {"description": "x"}}]),
    "tool parameters not an object": lambda p: _bad_tools(p, [{"name": "f", "parameters": [1]}]),
    "duplicate tool names": lambda p: _bad_tools(
        p, [tool_entry("openai", "get_weather", WEATHER_SCHEMA), tool_entry("mcp", "get_weather", {})]
    ),
    "invalid JSON Schema": lambda p: _bad_tools(p, [tool_entry("bare", "f", {"type": "bogus"})]),
    "invalid JSON Schema (anthropic)": lambda p: _bad_tools(
        p, [tool_entry("anthropic", "f", {"type": "object", "properties": {"x": {"minLength": -1}}})]
    ),
    "unknown family": lambda p: ["parse", write(p, "r.txt", HERMES), "--family", "no_such_family"],
    "unknown family among known": lambda p: [
        "stream",
        write(p, "r.txt", HERMES),
        "--family",
        "hermes",
        "--family",
        "nope",
    ],
    "policy value not allowed": lambda p: ["parse", write(p, "r.txt", HERMES), "--policy", "unknown_tool=explode"],
    "policy without =": lambda p: ["parse", write(p, "r.txt", HERMES), "--policy", "unknown_tool"],
    "policy unknown field": lambda p: ["parse", write(p, "r.txt", HERMES), "--policy", "no_such_field=1"],
    "policy number out of range": lambda p: ["parse", write(p, "r.txt", HERMES), "--policy", "max_depth=0"],
    "policy bool not a bool": lambda p: ["stream", write(p, "r.txt", HERMES), "--policy", "start_in_reasoning=maybe"],
    "chunk zero": lambda p: ["stream", write(p, "r.txt", HERMES), "--chunk", "0"],
    "chunk negative": lambda p: ["stream", write(p, "r.txt", HERMES), "--chunk", "-4"],
    "chunk not a number": lambda p: ["stream", write(p, "r.txt", HERMES), "--chunk", "many"],
}


def _bytes(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize("case", list(USAGE_ERRORS))
def test_usage_error_exit_2_one_line(capsys, tmp_path, case):
    argv = USAGE_ERRORS[case](tmp_path)
    rc, out, err = run(capsys, *argv)
    assert rc == 2, (case, rc, out, err)
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, f"expected one line on stderr, got {err!r}"
    assert err.startswith("tooldialect: error: ")
    assert len(err.strip()) > len("tooldialect: error: ") + 5  # says something


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["parse", "{p}/no-such-file.txt"], "no-such-file.txt"),
        (["parse", "{p}"], "{p}"),
        (["parse", "{r}", "--family", "no_such_family"], "no_such_family"),
        (["parse", "{r}", "--policy", "unknown_tool=explode"], "unknown_tool"),
        (["stream", "{r}", "--chunk", "0"], "--chunk"),
    ],
)
def test_usage_error_names_the_culprit(capsys, tmp_path, argv, needle):
    reply = write(tmp_path, "r.txt", HERMES)
    fill = {"p": str(tmp_path), "r": reply}
    rc, out, err = run(capsys, *[a.format(**fill) for a in argv])
    assert rc == 2 and out == ""
    assert needle.format(**fill) in err


def test_tool_errors_name_the_problem(capsys, tmp_path):
    dup = _bad_tools(tmp_path, [tool_entry("bare", "get_weather", {}), tool_entry("mcp", "get_weather", {})])
    rc, _, err = run(capsys, *dup)
    assert rc == 2 and "duplicate" in err and "get_weather" in err
    bad = _bad_tools(tmp_path, [tool_entry("bare", "f", {"type": "bogus"})])
    rc, _, err = run(capsys, *bad)
    assert rc == 2 and "'f'" in err and "Schema" in err


def test_unresolvable_ref_in_tool_schema_is_a_toolset_error(capsys, tmp_path):
    tools = write(
        tmp_path, "ref.json", [{"name": "f", "parameters": {"type": "object", "properties": {"x": {"$ref": "#/nope"}}}}]
    )
    reply = write(tmp_path, "r.txt", '<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>')
    rc, out, err = run(capsys, "parse", reply, "--tools", tools)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "$ref" in err and "'f'" in err


def test_local_refs_resolve(capsys, tmp_path):
    tools = write(
        tmp_path,
        "ref.json",
        [
            {
                "name": "f",
                "parameters": {
                    "type": "object",
                    "$defs": {"n": {"type": "integer"}},
                    "properties": {"x": {"$ref": "#/$defs/n"}},
                },
            }
        ],
    )
    reply = write(tmp_path, "r.txt", '<tool_call>{"name": "f", "arguments": {"x": "one"}}</tool_call>')
    rc, out, _err = run(capsys, "parse", reply, "--tools", tools)
    assert rc == 0
    assert [d["kind"] for d in json.loads(out)["diagnostics"]] == ["arguments_invalid"]


def test_invalid_utf8_on_stdin_is_a_usage_error(capsys, monkeypatch):
    import io

    class FakeStdin:
        buffer = io.BytesIO(b"caf\xff")

    monkeypatch.setattr(sys, "stdin", FakeStdin())
    rc, out, err = run(capsys, "parse", "-")
    assert rc == 2 and out == "" and "standard input" in err and err.count("\n") == 1


def test_deeply_nested_tools_file_is_a_usage_error(capsys, tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000, encoding="utf-8")
    rc, out, err = run(capsys, "parse", write(tmp_path, "r.txt", HERMES), "--tools", str(deep))
    assert rc == 2 and out == "" and err.count("\n") == 1


def test_policy_unicode_digit_is_a_usage_error(capsys, tmp_path):
    rc, out, err = run(capsys, "parse", write(tmp_path, "r.txt", HERMES), "--policy", "max_depth=²")
    assert rc == 2 and out == "" and err.count("\n") == 1


# -- what the strings hold, written out ----------------------------------------------------

#: A JSON escape for a lone surrogate, as a plain-ASCII file spells it (backslash, u, d800):
#: valid JSON, and a Python string no encoding can write as it is.
LONE = "\\ud800"
SURROGATE_REPLIES = {
    "in a value": ('<tool_call>{"name": "f", "arguments": {"a": "' + LONE + '"}}</tool_call>', "f", {"a": "\ud800"}),
    "in the name": ('<tool_call>{"name": "f' + LONE + '", "arguments": {"a": 1}}</tool_call>', "f\ud800", {"a": 1}),
    "in a key": ('<tool_call>{"name": "f", "arguments": {"' + LONE + '": "x"}}</tool_call>', "f", {"\ud800": "x"}),
}
#: A tool whose parameter is named by the same escape (json.dumps writes it in ASCII).
SURROGATE_TOOLS = [{"name": "f", "parameters": {"type": "object", "properties": {"\ud800": {"type": "string"}}}}]


@pytest.mark.parametrize("where", list(SURROGATE_REPLIES))
def test_a_lone_surrogate_in_a_reply_is_printed_as_the_escape_it_was(capsys, tmp_path, where):
    text, name, arguments = SURROGATE_REPLIES[where]
    assert text.isascii()
    reply = write(tmp_path, "r.txt", text)
    call = parse_out(capsys, reply)["calls"][0]  # valid JSON, no traceback
    assert (call["name"], call["arguments"]) == (name, arguments)
    ends = [ev["call"] for ev in stream_out(capsys, reply, "--chunk", "5") if ev["type"] == "call_end"]
    assert [(c["name"], c["arguments"]) for c in ends] == [(name, arguments)]
    _, out, _ = run(capsys, "parse", reply)
    assert LONE in out


SURROGATE_COMMANDS = [
    *(["render", "--dialect", d, "--tools", "TOOLS"] for d in ("xml", "pformat", "python", "typescript", "native")),
    ["render", "--dialect", "xml", "--tools", "TOOLS", "--json"],
    ["render", "--dialect", "native", "--tools", "TOOLS", "--json"],
    *(
        ["export", "--family", f, "--tools", "TOOLS", "--format", x]
        for f in ("hermes", "qwen3_coder")
        for x in ("lark", "gbnf", "ebnf", "structural-tag")
    ),
    ["parse", "REPLY", "--tools", "TOOLS"],
    ["stream", "REPLY", "--tools", "TOOLS"],
]


@pytest.mark.parametrize("argv", SURROGATE_COMMANDS, ids=" ".join)
def test_a_lone_surrogate_in_a_tools_file_never_ends_in_a_traceback(capsys, tmp_path, argv):
    files = {
        "TOOLS": write(tmp_path, "tools.json", SURROGATE_TOOLS),
        "REPLY": write(tmp_path, "r.txt", SURROGATE_REPLIES["in a key"][0]),
    }
    rc, out, err = run(capsys, *[files.get(a, a) for a in argv])
    if rc == 2:  # llguidance cannot read a grammar UTF-8 cannot encode: one line that says why
        assert argv[-1] == "lark" and out == ""
        assert err.count("\n") == 1 and "lone surrogate" in err
        return
    assert (rc, err) == (0, "")
    out.encode("utf-8")  # nothing a terminal cannot write
    if "--json" in argv or argv[0] in ("parse", "stream") or argv[-1] in ("gbnf", "ebnf", "structural-tag"):
        values = [json.loads(line) for line in out.splitlines()] if argv[0] == "stream" else [json.loads(out)]
        assert "\ud800" in json.dumps(values, ensure_ascii=False)  # the same string, read back
    if argv[:4] != ["render", "--dialect", "native", "--tools"] or "--json" in argv:
        assert LONE in out  # written as the escape it came in as


def _python_m(*argv: str, cwd: Path, **env: str | None) -> subprocess.CompletedProcess[bytes]:
    """``python -m tooldialect`` with real standard streams, their encoding set by ``env``
    (a None value removes the variable)."""
    environ = {k: v for k, v in os.environ.items() if k not in env}
    environ.update({k: v for k, v in env.items() if v is not None})
    command = [sys.executable, "-m", "tooldialect", *argv]
    return subprocess.run(command, capture_output=True, cwd=cwd, env=environ, timeout=120)


#: Standard output as a user's shell gives it: UTF-8 said outright, or the C locale with
#: nothing said (Python then coerces to UTF-8).
TERMINALS = {
    "utf-8": {"PYTHONIOENCODING": "utf-8"},
    "C locale": {"PYTHONIOENCODING": None, "PYTHONUTF8": None, "LC_ALL": "C", "LANG": "C"},
}


@pytest.mark.parametrize("terminal", list(TERMINALS))
def test_python_m_tooldialect_writes_lone_surrogates_as_escapes(tmp_path, terminal):
    env = TERMINALS[terminal]
    reply = write(tmp_path, "r.txt", SURROGATE_REPLIES["in a value"][0] + SURROGATE_REPLIES["in the name"][0])
    tools = write(tmp_path, "tools.json", SURROGATE_TOOLS)
    for argv in (
        ["parse", reply],
        ["stream", reply],
        ["render", "--dialect", "xml", "--tools", tools],
        ["export", "--family", "hermes", "--tools", tools, "--format", "gbnf"],
    ):
        done = _python_m(*argv, cwd=tmp_path, **env)
        assert (done.returncode, done.stderr) == (0, b""), (argv, done.stderr.decode("utf-8", "replace"))
        out = done.stdout.decode("utf-8")  # strict: the bytes are UTF-8
        assert LONE in out
        if argv[0] == "parse":
            calls = json.loads(out)["calls"]
            assert [(c["name"], c["arguments"]) for c in calls] == [("f", {"a": "\ud800"}), ("f\ud800", {"a": 1})]
        elif argv[0] == "stream":
            assert sum(json.loads(line)["type"] == "call_end" for line in out.splitlines()) == 2
    done = _python_m("audit", str(tmp_path / "missing.jsonl"), cwd=tmp_path, **env)
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.decode("utf-8").count("\n") == 1


def test_an_ascii_terminal_gets_escaped_json_and_escaped_text(tmp_path):
    reply = write(tmp_path, "u.txt", UNICODE)
    done = _python_m("parse", reply, cwd=tmp_path, PYTHONIOENCODING="ascii")
    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout.isascii()
    assert json.loads(done.stdout)["calls"][0]["arguments"] == {"city": "東京", "note": "naïve café ☕ 𝔘"}
    tools = write(tmp_path, "tools.json", [{"name": "f", "description": "Météo à Zürich ☕"}])
    done = _python_m("render", "--dialect", "python", "--tools", tools, cwd=tmp_path, PYTHONIOENCODING="ascii")
    assert (done.returncode, done.stderr) == (0, b"")
    assert "M\\xe9t\\xe9o \\xe0 Z\\xfcrich \\u2615" in done.stdout.decode("ascii")


def test_stream_writes_a_call_as_deep_as_the_policy_allows(capsys, tmp_path):
    deep = "[" * 511 + "]" * 511
    reply = write(tmp_path, "deep.txt", f"[f(a={deep})]")
    events = stream_out(capsys, reply, "--policy", "max_depth=512", "--chunk", "4096")
    assert [json.dumps(ev["call"]["arguments"]) for ev in events if ev["type"] == "call_end"] == [f'{{"a": {deep}}}']
    assert parse_out(capsys, reply, "--policy", "max_depth=512")["calls"][0]["arguments"] == {"a": json.loads(deep)}


# -- end to end ----------------------------------------------------------------------------


def test_python_m_tooldialect_end_to_end(tmp_path):
    tools = write(tmp_path, "tools.json", [tool_entry("anthropic", "get_weather", WEATHER_SCHEMA)])
    done = subprocess.run(
        [sys.executable, "-m", "tooldialect", "parse", "-", "--tools", tools],
        input=HERMES.encode("utf-8"),
        capture_output=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    assert done.stderr == b""
    out = done.stdout.decode("utf-8")
    assert "Zürich" in out and "\\u" not in out
    obj = json.loads(out)
    assert [c["arguments"]["city"] for c in obj["calls"]] == ["Paris", "Zürich"]
    assert obj["reasoning"] == "Two cities, one call each."

    bad = subprocess.run(
        [sys.executable, "-m", "tooldialect", "parse", str(tmp_path / "missing.txt")],
        capture_output=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert bad.returncode == 2
    assert bad.stdout == b""
    assert bad.stderr.decode("utf-8").count("\n") == 1


def _pyproject_version() -> str:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    project = text[text.index("[project]\n") :]
    line = next(line for line in project.splitlines() if line.startswith("version = "))
    return line.split("=", 1)[1].strip().strip('"')


def test_the_version_is_the_installed_distributions():
    installed = importlib.metadata.version("tooldialect")
    assert tooldialect.__version__ == installed
    # one source: pyproject.toml's version, which the install's metadata was written from;
    # the package does not write it again
    assert installed == _pyproject_version()
    init = (ROOT / "src" / "tooldialect" / "__init__.py").read_text(encoding="utf-8")
    assert f'"{installed}"' not in init


def test_version_prints_the_installed_version_and_exits_zero(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0
    out, err = capsys.readouterr()
    assert (out, err) == (f"tooldialect {importlib.metadata.version('tooldialect')}\n", "")


def test_version_from_the_script_and_from_python_m(tmp_path):
    expected = f"tooldialect {importlib.metadata.version('tooldialect')}\n".encode()
    done = _python_m("--version", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, expected, b"")
    script = Path(sys.executable).parent / ("tooldialect.exe" if os.name == "nt" else "tooldialect")
    if not script.exists():
        pytest.skip(f"no console script beside {sys.executable}")
    done = subprocess.run([str(script), "--version"], capture_output=True, cwd=tmp_path, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, expected, b"")


def test_export_writes_the_spelling_a_variant_or_model_names(capsys, tmp_path):
    tools = write(
        tmp_path,
        "tools.json",
        [{"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}],
    )
    code, default, _ = run(capsys, "export", "--family", "deepseek", "--tools", tools)
    assert code == 0 and "function<｜tool▁sep｜>" in default
    code, v31, _ = run(capsys, "export", "--family", "deepseek", "--tools", tools, "--variant", "v3.1")
    assert code == 0 and "function<｜tool▁sep｜>" not in v31 and "get_weather<｜tool▁sep｜>" in v31
    code, by_model, _ = run(
        capsys, "export", "--family", "deepseek", "--tools", tools, "--model", "deepseek-ai/DeepSeek-V3.1"
    )
    assert (code, by_model) == (0, v31)
    code, _, err = run(capsys, "export", "--family", "deepseek", "--tools", tools, "--model", "acme/unknown-7b")
    assert code == 2 and "matches no variant" in err and err.count("\n") == 1
    code, _, err = run(capsys, "export", "--family", "deepseek", "--tools", tools, "--variant", "v9")
    assert code == 2 and "no variant 'v9'" in err
    code, out, _ = run(capsys, "families", "--json")
    rows = {r["family"]: r for r in json.loads(out)}
    assert list(rows["mistral"]["variants"]) == ["v13", "v11", "v3"] and rows["glm"]["variants"] == {}
