"""Detect and surface (DESIGN §9): leaked text calls are found, stripped and never dispatched."""

from __future__ import annotations

import inspect
import json
import typing

import pydantic
import pytest
from support import count_calls
from test_repetition_loop import loop

import tooldialect as td
from tooldialect import cli, detect

# the payload of seed 004, byte for byte (195 characters)
SEED_DSML = (
    "<｜DSML｜tool_calls>\n"
    '<｜DSML｜invoke name="shell">\n'
    '<｜DSML｜parameter name="command" string="true">mkdir -p ~/OpenHuman/projects/life-scenarios/out</｜DSML｜parameter>\n'
    "</｜DSML｜invoke>\n"
    "</｜DSML｜tool_calls>"
)
NATIVE = [
    {"id": f"call_{i}", "type": "function", "function": {"name": "web_search_tool", "arguments": "{}"}}
    for i in range(23)
]


def test_the_seed_payload_is_one_intent_stripped_from_the_visible_text():
    assert len(SEED_DSML) == 195
    result = td.detect.scan(SEED_DSML)
    (intent,) = result.intents
    assert intent.name == "shell" and intent.family == "invoke_xml"
    assert intent.arguments == {"command": "mkdir -p ~/OpenHuman/projects/life-scenarios/out"}
    assert result.visible == "" and not result.mixed
    assert SEED_DSML[intent.span[0] : intent.span[1]].startswith('<｜DSML｜invoke name="shell">')
    audit = result.audit.to_json()
    assert audit["intents"] == 1 and audit["tools"] == {"shell": 1} and audit["families"] == {"invoke_xml": 1}
    assert "arguments" not in audit and "mkdir" not in json.dumps(audit)  # no argument values unless asked
    assert td.detect.scan(SEED_DSML, include_arguments=True).audit.arguments == [
        {"name": "shell", "arguments": intent.arguments}
    ]


def test_an_intent_is_not_a_call():
    (intent,) = td.detect.scan(SEED_DSML).intents
    assert not isinstance(intent, td.ToolCall)
    assert not hasattr(intent, "arguments_json") and not hasattr(intent, "id")
    with pytest.raises(pydantic.ValidationError):
        td.ToolCall.model_validate(intent.model_dump())  # no arguments_json: not a call
    # nothing the module exposes is, returns or yields a ToolCall
    for name in detect.__all__:
        obj = getattr(detect, name)
        hints = typing.get_type_hints(obj)
        assert "ToolCall" not in repr(hints), name
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if callable(member) and not attr.startswith("__"):
                    assert "ToolCall" not in repr(typing.get_type_hints(member)), (name, attr)


def test_native_calls_and_a_text_call_in_the_same_response_are_mixed():
    content = "Here is what I found.\n\n" + SEED_DSML + "\nDone."
    result = td.detect.scan(content, native_calls=NATIVE)
    assert result.mixed and [i.name for i in result.intents] == ["shell"]
    assert result.visible == "Here is what I found.\n\n\nDone."
    assert result.audit.native_calls == 23 and result.audit.mixed
    assert not td.detect.scan("Just prose.", native_calls=NATIVE).mixed


def test_markup_quoted_in_a_language_fence_is_not_an_intent():
    page = (
        "## How DeepSeek calls tools\n\nThe model writes:\n\n```xml\n"
        + SEED_DSML
        + "\n```\n\nand the server turns it into a call.\n"
    )
    result = td.detect.scan(page, native_calls=NATIVE)
    assert result.intents == () and not result.mixed and not result.audit.leaked
    assert result.visible == page


def test_the_reference_loop_is_one_diagnostic_no_intent_and_linear():
    result = td.detect.scan(loop(150))
    assert result.intents == ()
    assert [d.kind for d in result.diagnostics] == ["repetition_loop"]
    assert result.audit.repetition_loops == 1 and result.audit.leaked and result.visible == ""
    one = count_calls(lambda: td.detect.scan(loop(150)))
    four = count_calls(lambda: td.detect.scan(loop(600)))
    assert four <= 4.8 * one, (one, four)


def test_the_stream_form_agrees_with_scan_at_every_chunking():
    content = "Before <think>plan</think> " + SEED_DSML + " after."
    whole = td.detect.scan(content, native_calls=NATIVE)
    for size in (1, 3, 17):
        stream = td.detect.DetectStream(native_calls=NATIVE)
        events = []
        for i in range(0, len(content), size):
            events += stream.feed(content[i : i + size])
        events += stream.close()
        assert stream.result() == whole
        assert [e.intent for e in events if isinstance(e, td.detect.IntentFound)] == list(whole.intents)
        assert not any(isinstance(e, (td.CallStart, td.CallEnd, td.ArgumentsDelta)) for e in events)
    assert whole.reasoning == "plan" and whole.visible == "Before   after."


def test_result_before_close_is_a_caller_error():
    stream = td.detect.DetectStream()
    stream.feed(SEED_DSML)
    with pytest.raises(td.PolicyError):
        stream.result()
    with pytest.raises(td.PolicyError):
        td.detect.scan(SEED_DSML, native_calls="not a list")


def test_the_suggested_message_depends_on_whether_tools_are_still_available():
    result = td.detect.scan(SEED_DSML)
    open_belt = td.detect.suggest(result, tools_available=True)
    withdrawn = td.detect.suggest(result, tools_available=False)
    assert "shell" in open_belt and "re-issue" in open_belt
    assert "shell" in withdrawn and "not performed" in withdrawn and "turn has ended" in withdrawn
    assert "re-issue" not in withdrawn
    assert td.detect.suggest(td.detect.scan("no markup"), tools_available=True) is None
    assert "loop" in td.detect.suggest(td.detect.scan(loop(20)), tools_available=True)


# -- the audit command -------------------------------------------------------------------------


def _store(tmp_path, leaky: set[int]):
    """100 records of OpenAI-style messages in 10 threads; the records in ``leaky`` carry
    a leaked call in their assistant content."""
    lines = []
    for i in range(100):
        thread = f"thread-{i % 10:02d}"
        content = f"Step {i}: I looked at the results."
        if i in leaky:
            content += "\n" + SEED_DSML.replace("shell", "shell" if i % 2 else "apply_patch")
        record = {
            "thread_id": thread,
            "messages": [
                {"role": "user", "content": "go on"},
                {"role": "assistant", "content": content, "tool_calls": NATIVE[: i % 3]},
            ],
        }
        lines.append(json.dumps(record, ensure_ascii=False))
    path = tmp_path / "turns.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_audit_reports_exactly_the_leaks_with_thread_and_family(tmp_path, capsys):
    leaky = {3, 17, 42, 58, 99}
    path = _store(tmp_path, leaky)
    assert cli.main(["audit", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["records"] == 100 and report["contents_scanned"] == 100
    assert report["contents_with_leaks"] == 5 and report["malformed_records"] == 0
    assert sorted(leak["record"] for leak in report["leaks"]) == sorted(i + 1 for i in leaky)
    assert {leak["thread"] for leak in report["leaks"]} == {f"thread-{i % 10:02d}" for i in leaky}
    assert report["by_family"] == {"invoke_xml": 5}
    assert report["by_tool"] == {"shell": 3, "apply_patch": 2}
    mixed = sum(1 for i in leaky if i % 3)
    assert report["mixed"] == mixed


def test_audit_table_and_exit_code_for_ci(tmp_path, capsys):
    path = _store(tmp_path, {7})
    assert cli.main(["audit", str(path), "--fail-on-leak"]) == 1
    out = capsys.readouterr().out
    assert "contents with leaked calls" in out and "thread-07" in out and "invoke_xml" in out
    (tmp_path / "clean").mkdir()
    clean = _store(tmp_path / "clean", set())
    assert cli.main(["audit", str(clean), "--fail-on-leak"]) == 0


def test_audit_counts_malformed_records_and_reads_a_named_field(tmp_path, capsys):
    path = tmp_path / "states.jsonl"
    rows = [
        json.dumps({"thread": "t1", "turn": {"streamingText": "hello"}}),
        "{not json",
        json.dumps({"thread": "t2", "turn": {"streamingText": "done " + SEED_DSML}}),
        json.dumps({"thread": "t3", "turn": {}}),
        "",
    ]
    path.write_text("\n".join(rows), encoding="utf-8")
    assert cli.main(["audit", str(path), "--field", "turn.streamingText", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["records"] == 4 and report["malformed_records"] == 2
    assert [(leak["thread"], leak["record"]) for leak in report["leaks"]] == [("t2", 3)]
    assert len(report["malformed_samples"]) == 2


def test_audit_reads_json_files_and_directories_and_reports_unreadable_paths(tmp_path, capsys):
    conv = [{"role": "user", "content": "x"}, {"role": "assistant", "content": [{"type": "text", "text": SEED_DSML}]}]
    (tmp_path / "a.json").write_text(json.dumps(conv), encoding="utf-8")
    (tmp_path / "b.json").write_text(json.dumps([{"messages": conv}, {"messages": conv}]), encoding="utf-8")
    (tmp_path / "notes.txt").write_text("ignored", encoding="utf-8")
    assert cli.main(["audit", str(tmp_path), str(tmp_path / "missing.jsonl"), "--json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["files"] == 2 and report["contents_with_leaks"] == 3
    assert "missing.jsonl" in captured.err
    assert cli.main(["audit", str(tmp_path / "missing.jsonl")]) == 2


def test_audit_shows_a_progress_bar_on_a_terminal(tmp_path, capsys, monkeypatch):
    import io
    import sys

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    path = _store(tmp_path, {1})
    assert cli.main(["audit", str(path)]) == 0
    assert "contents with leaked calls" in capsys.readouterr().out
    monkeypatch.setattr(sys, "stderr", Terminal())
    assert cli.main(["audit", str(path), "--no-progress"]) == 0
    assert sys.stderr.getvalue() == ""


def test_audit_end_to_end_in_a_subprocess(tmp_path):
    import subprocess
    import sys

    path = _store(tmp_path, {5, 10, 20, 40, 80})
    done = subprocess.run(
        [sys.executable, "-m", "tooldialect", "audit", str(path), "--json", "--fail-on-leak"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["contents_with_leaks"] == 5
    assert sorted((leak["record"], leak["thread"], leak["families"][0]) for leak in report["leaks"]) == [
        (i + 1, f"thread-{i % 10:02d}", "invoke_xml") for i in (5, 10, 20, 40, 80)
    ]


def _threads_store(tmp_path, threads: int):
    """One leaking record per thread, each with a request id."""
    lines = [
        json.dumps(
            {
                "request_id": f"req-{i}",
                "thread_id": f"thread-{i:04d}",
                "messages": [{"role": "assistant", "content": f"Step {i}. " + SEED_DSML}],
            },
            ensure_ascii=False,
        )
        for i in range(threads)
    ]
    path = tmp_path / "threads.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_audit_tables_show_the_top_20_and_how_many_more(tmp_path, capsys):
    path = _threads_store(tmp_path, 1000)
    assert cli.main(["audit", str(path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    section = out.split("\nby thread")[1].split("\n\n")[0].splitlines()
    assert section[0] == " (the 20 most, of 1000)"
    assert len([line for line in section if line.startswith("  thread-")]) == 20
    assert section[-1] == "  ... and 980 more (--json or --jsonl lists them all)"
    assert len(out.splitlines()) < 80  # 1,000 threads, one screen of report


def test_audit_jsonl_is_a_line_per_leak_then_the_summary(tmp_path, capsys):
    """--jsonl writes each leak as it is found and keeps none: the same leaks and summary as
    --json, one per line; record numbers count from 1, and --id-field names each record."""
    from tooldialect.audit import audit_paths

    path = _threads_store(tmp_path, 50)
    argv = ["audit", str(path), "--no-progress", "--id-field", "request_id"]
    assert cli.main([*argv, "--json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert cli.main([*argv, "--jsonl"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == 51 and lines[:-1] == whole.pop("leaks")
    assert lines[-1] == {"summary": whole}
    assert [(leak["record"], leak["id"]) for leak in lines[:3]] == [(1, "req-0"), (2, "req-1"), (3, "req-2")]
    seen = []
    report = audit_paths([str(path)], keep=0, on_leak=seen.append)
    assert report.leaks == [] and report.leaked_contents == len(seen) == 50  # counted, none kept
    assert cli.main([*argv]) == 0
    text = capsys.readouterr().out
    assert "sample leaks (file:record  id  thread" in text and f"{path}:1  req-0  thread-0000" in text


def test_audit_limit_reads_the_first_records(tmp_path, capsys):
    path = _threads_store(tmp_path, 50)
    assert cli.main(["audit", str(path), "--json", "--limit", "7", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["records"] == 7 and [leak["record"] for leak in report["leaks"]] == list(range(1, 8))
    assert cli.main(["audit", str(path), "--limit", "7", "--engine", "ray"]) == 2
    assert "not with --engine" in capsys.readouterr().err


def test_json_of_intents_and_audits_as_deep_as_the_policy_allows():
    deep = "[" * 500 + "]" * 500
    content = f'<tool_call>{{"name": "f", "arguments": {{"a": {deep}}}}}</tool_call>'
    result = detect.scan(content, policy=td.Policy(max_depth=512), include_arguments=True)
    assert json.dumps(result.audit.to_json()["arguments"]) == f'[{{"name": "f", "arguments": {{"a": {deep}}}}}]'
    found = detect.IntentFound(intent=result.intents[0]).to_json()
    assert found["intent"]["span"] == list(result.intents[0].span)
    assert found["intent"]["arguments"] == {"a": json.loads(deep)}
