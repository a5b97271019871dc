"""Name resolution against the toolset: every rewrite reported, unresolved names kept per policy."""

from __future__ import annotations

import json

import pytest

import tooldialect as td
from tooldialect.names import NameIndex, normalise

KNOWN = ["terminal", "read_file", "write_file", "todo", "search_web"]
TOOLS = [{"name": n, "parameters": {"type": "object"}} for n in KNOWN]


def call(name: str, args: dict | None = None) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": args or {}}) + "</tool_call>"


@pytest.mark.parametrize(
    "raw,resolved,how",
    [
        ("read_file", "read_file", None),
        ('terminal" parameter="command" string="true', "terminal", "trimmed"),
        ('terminal"', "terminal", "trimmed"),
        ("read_file(", "read_file", "trimmed"),
        ("functions.read_file:0", "read_file", "namespace removed"),
        ("functions.read_file", "read_file", "namespace removed"),
        ("tools/read_file", "read_file", "namespace removed"),
        ("default_api.search_web", "search_web", "namespace removed"),
        ("Read File", "read_file", "spelling normalised"),
        ("read-file", "read_file", "spelling normalised"),
        ("ReadFile", "read_file", "spelling normalised"),
        ("READ_FILE", "read_file", "spelling normalised"),
        ("TodoTool_tool", "todo", "spelling normalised"),
        ("raed_file", "read_file", "close match"),
        ("serach_web", "search_web", "close match"),
    ],
)
def test_resolution_steps(raw, resolved, how):
    res = NameIndex(KNOWN).resolve(raw)
    assert (res.name, res.known, res.how) == (resolved, True, how)


def test_ties_and_short_names_are_refused():
    assert NameIndex(["read_file", "bead_file"]).resolve("xead_file").known is False
    assert NameIndex(["todo"]).resolve("tdo").known is False  # too short for a close match
    assert NameIndex(["a_b", "a-b"]).resolve("A B").known is False  # two tools normalise alike
    res = NameIndex(KNOWN).resolve("launch_missiles")
    assert (res.name, res.known, res.how) == ("launch_missiles", False, None)


def test_normalise():
    assert normalise("WriteFile") == normalise("Write File") == normalise("write-file") == "write_file"
    assert normalise("getHTTPResponse") == "get_httpresponse"
    assert normalise("  a..b  ") == "a_b"


def test_every_rewrite_is_reported():
    r = td.parse(call("functions.read_file:0", {"path": "a"}), tools=TOOLS)
    assert [c.name for c in r.calls] == ["read_file"]
    (diag,) = r.diagnostics
    assert diag.kind == "name_repaired"
    assert diag.detail == {"from": "functions.read_file:0", "to": "read_file", "how": "namespace removed"}


def test_a_trimmed_name_that_still_does_not_resolve_reports_unknown_tool_too():
    """Seed crate gap 2: trimming used to hide the unknown name."""
    r = td.parse(call('launch" parameter="x'), tools=TOOLS)
    assert [d.kind for d in r.diagnostics] == ["name_repaired", "unknown_tool"]
    assert r.diagnostics[1].detail["name"] == "launch"
    assert [c.name for c in r.calls] == ["launch"]


def test_without_a_toolset_names_pass_through_unchanged():
    r = td.parse(call("functions.read_file:0"))
    assert [c.name for c in r.calls] == ["functions.read_file:0"] and r.diagnostics == []


@pytest.mark.parametrize(
    "text",
    [
        call("ReadFile", {"path": "a"}),
        '<|tool_call|>[{"name": "ReadFile", "arguments": {"path": "a"}}]',
        '{"name": "ReadFile", "arguments": {"path": "a"}}',
        '<|python_tag|>{"name": "ReadFile", "parameters": {"path": "a"}}',
        '<|START_ACTION|>[{"tool_call_id": "1", "tool_name": "ReadFile", "parameters": {"path": "a"}}]<|END_ACTION|>',
    ],
)
def test_every_family_binds_through_the_same_pass(text):
    """Seed crate gap 14: repair was inactive on some paths. Here every family goes through it."""
    r = td.parse(text, tools=TOOLS)
    assert [c.name for c in r.calls] == ["read_file"]
    assert [d.kind for d in r.diagnostics] == ["name_repaired"]


def test_registry_gated_records_bind_exact_names_only():
    from tooldialect.binding import Binder
    from tooldialect.transform import RawCall

    binder = Binder(td.Toolset.coerce(TOOLS), td.Policy())
    exact = RawCall("read_file", {}, "{}", None, (0, 1), "x", gated=True)
    near = RawCall("ReadFile", {}, "{}", None, (0, 1), "x", gated=True)
    call_, diags = binder.bind(exact)
    assert call_ is not None and diags == []
    call_, diags = binder.bind(near)
    assert [d.kind for d in diags] == ["unknown_tool"] and call_.name == "ReadFile"


def test_stream_announces_the_resolved_name():
    s = td.ToolStream(tools=TOOLS)
    events = s.feed('<tool_call>{"name": "functions.read_file", "arguments": {"path": "')
    (start,) = [e for e in events if isinstance(e, td.CallStart)]
    assert start.name == "read_file"


def test_unknown_tool_policies_with_repaired_names():
    text = call("Launch Missiles")
    for policy, count in (("keep", 1), ("drop", 0), ("error", 0)):
        r = td.parse(text, tools=TOOLS, policy=td.Policy(unknown_tool=policy))
        assert len(r.calls) == count
        assert r.diagnostics[-1].kind == "unknown_tool" and r.diagnostics[-1].detail["policy"] == policy
