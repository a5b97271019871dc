"""The README's two commands: `make demo` prints a JSON result with the bundled example's calls."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from support import ROOT


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_demo_prints_the_calls_of_the_bundled_example():
    done = subprocess.run(["make", "-s", "demo"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    out = done.stdout[done.stdout.index("{") :]
    result = json.loads(out)
    assert [c["name"] for c in result["calls"]] == ["get_weather", "get_weather"]
    assert result["calls"][1]["arguments"] == {"city": "Zürich", "unit": "celsius"}
    assert result["reasoning"].startswith("The user wants")
    assert "<tool_call>" not in result["text"]
