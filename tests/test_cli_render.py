"""``tooldialect render`` (DESIGN §5), driven through ``tooldialect.cli.main(argv)``: the
tool section a dialect writes into the system prompt, byte for byte what the API writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import tooldialect as td
from tooldialect import cli

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather now", "parameters": SCHEMA}},
    {"name": "search", "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}},
]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def write(tmp_path: Path, name: str, content: Any) -> str:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return str(path)


@pytest.fixture
def tools_file(tmp_path: Path) -> str:
    return write(tmp_path, "tools.json", TOOLS)


@pytest.mark.parametrize("dialect", ["xml", "pformat", "python", "typescript", "native"])
def test_render_prints_the_dialects_instructions(capsys, tools_file, dialect):
    rc, out, err = run(capsys, "render", "--dialect", dialect, "--tools", tools_file)
    assert (rc, err) == (0, "")
    assert out == td.dialects.get(dialect).instructions(td.Toolset.coerce(TOOLS))
    assert out.startswith("## Tool use\n")
    if dialect != "native":
        assert "get_weather" in out and "search" in out


def test_render_tool_choice_and_forced_tool(capsys, tools_file):
    _, required, _ = run(capsys, "render", "--dialect", "xml", "--tools", tools_file, "--tool-choice", "required")
    assert required.endswith("\nIn this reply you must call at least one tool.\n")
    _, forced, _ = run(capsys, "render", "--dialect", "python", "--tools", tools_file, "--force-tool", "search")
    assert forced.endswith("\nIn this reply you must call the tool search.\n")


def test_render_host_renders_catalogue(capsys, tmp_path, tools_file):
    rc, out, _ = run(capsys, "render", "--dialect", "pformat", "--tools", tools_file, "--host-renders-catalogue")
    assert (rc, out) == (0, "")
    turn = write(tmp_path, "turn.json", [{"name": "final_answer", "parameters": {"type": "object", "properties": {}}}])
    _, out, _ = run(
        capsys,
        "render",
        "--dialect",
        "pformat",
        "--tools",
        tools_file,
        "--host-renders-catalogue",
        "--turn-tools",
        turn,
        "--force-tool",
        "final_answer",
    )
    assert (
        out == "### Tools added for this turn\n\nfinal_answer[]\n\nIn this reply you must call the tool final_answer.\n"
    )


def test_render_json(capsys, tools_file):
    rc, out, err = run(
        capsys, "render", "--dialect", "native", "--tools", tools_file, "--json", "--force-tool", "search"
    )
    assert (rc, err) == (0, "")
    obj = json.loads(out)
    assert set(obj) == {"dialect", "instructions", "request"}
    assert obj["request"]["tool_choice"] == {"type": "function", "function": {"name": "search"}}
    assert [t["function"]["name"] for t in obj["request"]["tools"]] == ["get_weather", "search"]
    _, out, _ = run(capsys, "render", "--dialect", "xml", "--tools", tools_file, "--json")
    assert json.loads(out)["request"] == {}


def test_render_output_is_byte_stable(capsys, tmp_path, tools_file):
    shuffled = [
        {
            "function": {
                "parameters": {"required": ["city"], "properties": {"city": {"type": "string"}}, "type": "object"},
                "description": "Weather now",
                "name": "get_weather",
            },
            "type": "function",
        },
        TOOLS[1],
    ]
    other = write(tmp_path, "other.json", shuffled)
    _, a, _ = run(capsys, "render", "--dialect", "xml", "--tools", tools_file)
    _, b, _ = run(capsys, "render", "--dialect", "xml", "--tools", other)
    assert a == b


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["render", "--tools", "TOOLS"], "--dialect"),
        (["render", "--dialect", "xml"], "--tools"),
        (["render", "--dialect", "json", "--tools", "TOOLS"], "invalid choice"),
        (["render", "--dialect", "xml", "--tools", "TOOLS", "--tool-choice", "search"], "invalid choice"),
        (["render", "--dialect", "xml", "--tools", "TOOLS", "--force-tool", "nope"], "not among the tools"),
        (
            ["render", "--dialect", "xml", "--tools", "TOOLS", "--tool-choice", "none", "--force-tool", "search"],
            "not allowed",
        ),
        (["render", "--dialect", "xml", "--tools", "missing.json"], "cannot read"),
    ],
)
def test_render_usage_errors_exit_2_with_one_line(capsys, tools_file, argv, needle):
    argv = [tools_file if a == "TOOLS" else a for a in argv]
    rc, out, err = run(capsys, *argv)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("tooldialect: error: ") and needle in err


def test_render_duplicate_turn_tool_is_an_error(capsys, tmp_path, tools_file):
    turn = write(tmp_path, "turn.json", [TOOLS[1]])
    rc, _, err = run(capsys, "render", "--dialect", "xml", "--tools", tools_file, "--turn-tools", turn)
    assert rc == 2 and "duplicate tool name 'search'" in err


def test_python_m_tooldialect_render(tmp_path, tools_file):
    out = subprocess.run(
        [sys.executable, "-m", "tooldialect", "render", "--dialect", "typescript", "--tools", tools_file],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    assert "function get_weather(city: string): string;" in out.stdout
