"""No path of one machine as a default: the Makefile, the docs' commands and the code work on
any checkout.

The rule: a ``?=`` default in the Makefile holds no absolute path at all (it is relative to
the checkout, or built from ``$(HOME)``, ``$(XDG_CACHE_HOME)``, ``$(CURDIR)``); the commands
in the docs (README.md's and docs/*.md's code blocks) and the code and scripts (src/,
benchmarks/, fuzz/, examples/, .ci/, the Makefile) name no path under a root that is one
machine's own layout (``/work``, ``/home``, ``/tmp`` …): a reader's machine has its own.
Paths every system has (``/dev/null``, ``/usr/bin/env``) are fine.  The test data under
tests/ is model text, not a default, and is not read.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support import ROOT

#: an absolute path under a root that differs from one machine to the next, to the end of the path
MACHINE_PATH = re.compile(
    r"(?<![\w.~$})/])/(?:work|home|root|Users|tmp|var|opt|mnt|srv|data|scratch|media|private)\b[^\s'\"`);]*"
)
FENCE = re.compile(r"^ {0,3}(```|~~~)")


def machine_paths(text: str) -> list[str]:
    return MACHINE_PATH.findall(text)


def makefile_defaults(text: str) -> dict[str, str]:
    """``NAME ?= value`` lines, continuation lines joined."""
    text = text.replace("\\\n", " ")
    return dict(re.findall(r"^([A-Za-z_][A-Za-z0-9_]*)\s*\?=\s*(.*)$", text, re.M))


def code_blocks(markdown: str) -> list[tuple[int, str]]:
    """(first line number, text) of each fenced code block."""
    blocks, lines, start, fence = [], [], 0, None
    for number, line in enumerate(markdown.splitlines(), 1):
        match = FENCE.match(line)
        if fence is None:
            if match:
                fence, start, lines = match.group(1), number + 1, []
        elif match and line.strip().startswith(fence) and not line.strip().strip(fence[0]):
            blocks.append((start, "\n".join(lines)))
            fence = None
        else:
            lines.append(line)
    return blocks


def test_the_rule_reads_what_it_should():
    assert makefile_defaults("A ?= /work/x\nB := /tmp\nC ?= $(HOME)/.cache \\\n   /y\n") == {
        "A": "/work/x",
        "C": "$(HOME)/.cache     /y",
    }
    assert machine_paths("make X=/tmp/v; ls /home/ada/venv /dev/null /usr/bin/env") == ["/tmp/v", "/home/ada/venv"]
    assert machine_paths("$(HOME)/work ~/tmp ./data src/var let/var a.b/opt") == []
    assert machine_paths("default /work/benchvenv or /workspace") == ["/work/benchvenv"]
    assert code_blocks("a\n```sh\nmake /work\n```\nb /work\n~~~\nc\n~~~\n") == [(3, "make /work"), (7, "c")]


def test_makefile_defaults_hold_no_absolute_path():
    defaults = makefile_defaults((ROOT / "Makefile").read_text(encoding="utf-8"))
    assert "BENCH_VENV" in defaults
    absolute = {name: value for name, value in defaults.items() if re.search(r"(?<![\w.~$})/])/\w", value)}
    assert not absolute, f"a default must not be one machine's path: {absolute}"


def _docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("doc", _docs(), ids=lambda p: p.name)
def test_the_docs_commands_name_no_path_of_one_machine(doc):
    found = [
        (doc.name, start, path)
        for start, block in code_blocks(doc.read_text(encoding="utf-8"))
        for path in machine_paths(block)
    ]
    assert not found, found


def _code() -> list[Path]:
    files = [ROOT / "Makefile", *sorted((ROOT / ".ci").iterdir())]
    for folder in ("src", "benchmarks", "fuzz", "examples"):
        files += sorted(
            p for p in (ROOT / folder).rglob("*") if p.is_file() and p.suffix in {".py", ".sh", ".lark", ".txt", ".md"}
        )
    return files


def test_the_code_names_no_path_of_one_machine():
    found = []
    for path in _code():
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            found += [(str(path.relative_to(ROOT)), number, p) for p in machine_paths(line)]
    assert not found, found
