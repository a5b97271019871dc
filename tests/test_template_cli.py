"""``tooldialect families --template PATH`` prints what a chat template calls for, and
``parse``, ``stream`` and ``parse-table`` read with it (``--family`` and ``--policy`` still win)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import ROOT

from tooldialect import cli

TEMPLATES = ROOT / "tests" / "templates"
CODER = str(TEMPLATES / "qwen3_coder.jinja")
R1 = str(TEMPLATES / "deepseek_r1.jinja")
XML_CALL = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"
JSON_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


def run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def reply(tmp_path: Path, text: str) -> str:
    path = tmp_path / "reply.txt"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_families_prints_the_template_s_profile(capsys):
    rc, out, _ = run(capsys, "families", "--template", R1)
    assert rc == 0
    assert "families: deepseek\n" in out and "start_in_reasoning=true" in out
    assert "chat template: read: 7 of 7 probes read by deepseek" in out and "probe nested" in out
    rc, out, _ = run(capsys, "families", "--template", R1, "--json")
    profile = json.loads(out)
    assert profile["families"] == ["deepseek"] and profile["template"]["verdict"] == "read"
    assert profile["variants"] == {"deepseek": "v3"} and profile["policy"]["start_in_reasoning"] is True


def test_families_says_when_a_template_renders_no_call(capsys):
    rc, out, _ = run(capsys, "families", "--template", str(TEMPLATES / "raises.jinja"), "--model", "Qwen/Qwen3-8B")
    assert rc == 0 and "chat template: error: the template raised" in out and "fallback: model id" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["families", "--model", "Qwen/Qwen3-8B"],
        ["families", "--template", "/no/such/template.jinja"],
        ["parse", "--template", "/no/such/dir/"],
    ],
)
def test_usage_errors_exit_2(capsys, argv):
    rc, out, err = run(capsys, *argv)
    assert rc == 2 and not out and err.startswith("tooldialect: error:") and len(err.splitlines()) == 1


def test_parse_and_stream_read_with_the_template_s_families(tmp_path, capsys):
    both = reply(tmp_path, XML_CALL + "\n" + JSON_CALL)
    rc, out, _ = run(capsys, "parse", both, "--template", CODER)
    result = json.loads(out)
    assert rc == 0 and [c["family"] for c in result["calls"]] == ["qwen3_coder"]
    assert result["diagnostics"]  # the Hermes block is no call of this model's: reported
    _, out, _ = run(capsys, "parse", both)
    assert len(json.loads(out)["calls"]) == 2  # every family: both blocks
    _, out, _ = run(capsys, "parse", both, "--template", CODER, "--family", "hermes")
    assert [c["family"] for c in json.loads(out)["calls"]] == ["hermes"]  # --family wins
    rc, out, _ = run(capsys, "stream", both, "--template", CODER, "--chunk", "3")
    ends = [json.loads(line) for line in out.splitlines() if '"call_end"' in line]
    assert rc == 0 and [e["call"]["family"] for e in ends] == ["qwen3_coder"]


def test_parse_takes_the_template_s_policy_under_policy_flags(tmp_path, capsys):
    thought = reply(tmp_path, "the user wants weather</think>It is sunny.")
    _, out, _ = run(capsys, "parse", thought, "--template", R1)
    result = json.loads(out)
    assert result["reasoning"] == "the user wants weather" and result["text"] == "It is sunny."
    _, out, _ = run(capsys, "parse", thought, "--template", R1, "--policy", "start_in_reasoning=false")
    assert json.loads(out)["reasoning"] == ""


def test_parse_table_reads_with_the_template(tmp_path, capsys):
    pytest.importorskip("pyarrow", reason="the table commands need pyarrow (the table extra)")
    rows = [{"completion": XML_CALL + JSON_CALL}, {"completion": "plain"}]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out_path = tmp_path / "out.jsonl"
    argv = ["parse-table", str(source), "-o", str(out_path), "--text-column", "completion", "--template", CODER]
    rc, _, err = run(capsys, *argv)
    assert rc == 0, err
    got = [json.loads(line) for line in out_path.read_text(encoding="utf-8").splitlines()]
    assert [c["name"] for c in got[0]["calls"]] == ["get_weather"]
