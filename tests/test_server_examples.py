"""The example servers in examples/, driven by the real openai and anthropic clients: what
each client rebuilds, streaming or not, is what tooldialect parsed."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import pytest
from support import ROOT, all_cases, options

import tooldialect as td

pytest.importorskip("starlette", reason="starlette is in the dev extra")
openai = pytest.importorskip("openai", reason="the openai client is in the dev extra")
anthropic = pytest.importorskip("anthropic", reason="the anthropic client is in the dev extra")
from starlette.testclient import TestClient

sys.path.insert(0, str(ROOT / "examples"))
import anthropic_server
import openai_server

try:  # the anthropic client's HTTP package: httpx2 in newer releases, httpx before
    import httpx2 as anthropic_httpx
except ImportError:
    import httpx as anthropic_httpx


def cases() -> list[Any]:
    """A reply with calls per family, with the tools its case names."""
    seen: dict[str, Any] = {}
    for case in all_cases():
        opts = options(case)
        if case.family not in seen and opts.get("tools") is not None and td.parse(case.text, **opts).calls:
            seen[case.family] = case
    return list(seen.values())


CASES = cases()


def tools_json(toolset: td.Toolset) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in toolset
    ]


def answering(text: str) -> Any:
    def generate(body: dict[str, Any]) -> Any:
        return (text[i : i + 3] for i in range(0, len(text), 3))

    return generate


def without_ids(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in c.items() if k != "id"} for c in calls]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_openai_example(case):
    opts = options(case)
    want = td.openai.message(td.parse(case.text, **opts))
    app = openai_server.create_app(answering(case.text), families=opts.get("families"))
    client = openai.OpenAI(api_key="x", base_url="http://testserver/v1", http_client=TestClient(app))
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools_json(opts["tools"])}
    whole = client.chat.completions.create(**request).choices[0].message
    assert whole.content == want["content"]
    got = [{"type": c.type, "function": c.function.model_dump()} for c in whole.tool_calls or []]
    assert got == without_ids(want.get("tool_calls", []))
    with client.chat.completions.stream(**request) as stream:
        for _ in stream:
            pass
        final = stream.get_final_completion().choices[0].message
    assert final.content == want["content"]
    streamed = [
        {"type": c.type, "function": {"name": c.function.name, "arguments": c.function.arguments}}
        for c in final.tool_calls or []
    ]
    assert streamed == without_ids(want.get("tool_calls", []))
    assert len({c.id for c in final.tool_calls or []}) == len(streamed)


def test_the_openai_example_reports_a_bad_request():
    app = openai_server.create_app(answering("hi"))
    client = openai.OpenAI(api_key="x", base_url="http://testserver/v1", http_client=TestClient(app))
    with pytest.raises(openai.BadRequestError, match="tool_choice names 'nope'"):
        client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            tools=[{"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}],
            tool_choice={"type": "function", "function": {"name": "nope"}},
        )


async def anthropic_round(app: Any, request: dict[str, Any]) -> tuple[Any, Any]:
    transport = anthropic_httpx.ASGITransport(app=app)
    async with anthropic_httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        client = anthropic.AsyncAnthropic(api_key="x", base_url="http://testserver", http_client=http)
        whole = await client.messages.create(**request)
        async with client.messages.stream(**request) as stream:
            async for _ in stream:
                pass
            final = await stream.get_final_message()
    return whole, final


def summary(blocks: list[Any]) -> tuple[str, list[tuple[str, Any]]]:
    text = "".join(b.text for b in blocks if b.type == "text")
    return text, [(b.name, b.input) for b in blocks if b.type == "tool_use"]


@pytest.mark.parametrize("case", CASES[:6], ids=[c.id for c in CASES[:6]])
def test_the_anthropic_example(case):
    opts = options(case)
    result = td.parse(case.text, **opts)
    app = anthropic_server.create_app(answering(case.text), families=opts.get("families"))
    tools = [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in opts["tools"]]
    request = {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}], "tools": tools}
    whole, final = asyncio.run(anthropic_round(app, request))
    want = (result.text, [(c.name, json.loads(c.arguments_json)) for c in result.calls])
    assert summary(whole.content) == summary(final.content) == want
    assert whole.stop_reason == final.stop_reason == td.anthropic.stop_reason(result)
