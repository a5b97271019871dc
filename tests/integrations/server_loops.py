"""What the integration tests share: the stubs that let vLLM and SGLang load without torch
(benchmarks/stubs.py, installed before anything imports either), why a server's tests
cannot run here, and what a corpus case asks of a server.

A server takes its tools from the request and hands calls to the client only for tools
the request declares, so each case is read with its toolset, or, for a case written
without one, with a permissive tool for every name ``td.parse`` reads in it; the
expected calls are ``td.parse``'s with those same tools.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

import o200k
import pytest
from support import all_cases, options, toolsets

import tooldialect as td

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

import stubs

#: why each server's tests cannot run here (None: they can)
MISSING: dict[str, str | None] = {}

for _server, _install in (("vllm", stubs.install_vllm), ("sglang", stubs.install_sglang)):
    if importlib.util.find_spec(_server) is None:
        MISSING[_server] = f"{_server} is not installed in this venv (`make test-integrations` builds one that has it)"
        continue
    try:
        _install()
        MISSING[_server] = None
    except ImportError as exc:  # pragma: no cover - an install the stubs do not fit
        MISSING[_server] = f"{_server} does not load with benchmarks/stubs.py: {exc}"

CASES = all_cases()
#: deltas of 1 and 4 characters, and as a tokenizer cuts the text (o200k, the model's
#: special tokens one token each)
SIZES: tuple[int | str, ...] = (1, 4, "tokens")
FakeTokenizer = stubs.FakeTokenizer


def case_id(case: Any) -> str:
    return case.id


@cache
def _reading(key: tuple[str, int]) -> tuple[list[dict[str, Any]] | None, dict[str, Any], td.ParseResult]:
    case = next(c for c in CASES if (str(c.path), c.line) == key)
    opts = options(case)
    if "tools" in case.attrs:
        raw = toolsets()[case.attrs["tools"]]
        tools = [_openai_tool(t) for t in td.Toolset.coerce(raw)]
    else:
        names = dict.fromkeys(c.name for c in td.parse(case.text, **opts).calls)
        tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in names]
    if tools:
        opts["tools"] = td.Toolset.coerce(tools)
    return tools or None, opts, td.parse(case.text, **opts)


def reading(case: Any) -> tuple[list[dict[str, Any]] | None, dict[str, Any], td.ParseResult]:
    """The request's tools (OpenAI's shape; None when there are none), the ``parse()``
    options, and ``td.parse``'s result with them."""
    tools, opts, result = _reading((str(case.path), case.line))
    return tools, dict(opts), result


def _openai_tool(tool: td.Tool) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    }


def pieces(text: str, size: int | str) -> list[str]:
    if size == "tokens":
        why = o200k.missing()
        if why is not None:
            pytest.skip(why)
        if re.search(r"[\ud800-\udfff]", text):
            pytest.skip("a lone surrogate has no UTF-8, so no token holds it")
        return o200k.token_pieces(text)
    assert isinstance(size, int)
    return [text[i : i + size] for i in range(0, len(text), size)]


def expected_calls(result: td.ParseResult) -> list[tuple[str, Any]]:
    return [(c.name, c.arguments) for c in result.calls]


def assembled(calls: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """Calls a client put back together, as (name, arguments parsed as JSON)."""
    return [(c["name"], json.loads(c["arguments"])) for c in calls]


def spells_ids(family: str) -> bool:
    return "call_id" in td.families.get(family).grammar.nodes


def check_ids(ids: list[str], result: td.ParseResult, prefix: str) -> None:
    """The model's id where its format has ids (the first use of it), else a minted one."""
    assert len(set(ids)) == len(ids), ids
    used: set[str] = set()
    for got, call in zip(ids, result.calls):
        model = call.id if call.id and spells_ids(call.family) else None
        if model is not None and model not in used:
            assert got == model
            used.add(model)
        else:
            assert got.startswith(prefix) and got not in used, (got, call)
