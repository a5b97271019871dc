"""The Anthropic adapter: the anthropic client's own stream accumulation rebuilds, from
``td.anthropic`` events, the calls, text and reasoning of ``td.anthropic.message``."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from support import all_cases, options

import tooldialect as td

anthropic = pytest.importorskip("anthropic", reason="the anthropic client is in the dev extra")
try:  # the client's HTTP package: httpx2 in newer releases, httpx before
    import httpx2 as httpx
except ImportError:
    httpx = pytest.importorskip("httpx")
from anthropic.lib.streaming._messages import accumulate_event

CASES = all_cases()
ENVELOPE = {"id": "msg_1", "model": "m"}
ID = re.compile(r"[a-zA-Z0-9_-]+")


def events(text: str, size: int | None, **opts: Any) -> tuple[list[dict[str, Any]], str]:
    chat = td.anthropic.MessageStream(**ENVELOPE, ids=td.anthropic.ids(seed=5), **opts)
    out: list[dict[str, Any]] = []
    step = size or max(len(text), 1)
    for i in range(0, len(text), step):
        out += chat.feed(text[i : i + step])
    out += chat.close()
    assert chat.stop_reason is not None
    return out, chat.stop_reason


def rebuild(sent: list[dict[str, Any]]) -> Any:
    snapshot = None
    bufs: dict[int, bytes] = {}
    for ev in sent:
        snapshot = accumulate_event(event=ev, current_snapshot=snapshot, json_bufs=bufs)
    return snapshot


def summary(blocks: list[Any]) -> dict[str, Any]:
    """What a message says, whatever the order of its blocks."""
    get = (lambda b, k: b[k]) if blocks and isinstance(blocks[0], dict) else getattr
    out: dict[str, Any] = {"text": "", "thinking": "", "calls": []}
    for b in blocks:
        kind = get(b, "type")
        if kind == "text":
            out["text"] += get(b, "text")
        elif kind == "thinking":
            out["thinking"] += get(b, "thinking")
        else:
            out["calls"].append((get(b, "id"), get(b, "name"), get(b, "input")))
    return out


@pytest.mark.exhaustive(every=4)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_clients_accumulation_rebuilds_the_message(case):
    opts = options(case)
    batch = td.parse(case.text, **opts)
    want = td.anthropic.message(batch, **ENVELOPE, ids=td.anthropic.ids(seed=5))
    assert want["stop_reason"] == td.anthropic.stop_reason(batch)
    assert all(ID.fullmatch(b["id"]) for b in want["content"] if b["type"] == "tool_use")
    for size in (None, 4):
        sent, reason = events(case.text, size, **opts)
        assert sent[0]["type"] == "message_start" and [e["type"] for e in sent[-2:]] == [
            "message_delta",
            "message_stop",
        ]
        got = rebuild(sent)
        assert got.stop_reason == reason == want["stop_reason"]
        assert summary(got.content) == summary(want["content"]), size
        # every block that starts stops, numbered in order
        starts = [e["index"] for e in sent if e["type"] == "content_block_start"]
        stops = [e["index"] for e in sent if e["type"] == "content_block_stop"]
        assert starts == stops == list(range(len(starts)))


def test_blocks_follow_the_reply_and_the_message_orders_them():
    text = "<think>Which city?</think>Checking. " + (
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call> and then more.'
    )
    sent, reason = events(text, 3, families=["hermes"])
    got = rebuild(sent)
    assert [b.type for b in got.content] == ["thinking", "text", "tool_use", "text"]
    assert reason == "tool_use"
    want = td.anthropic.message(td.parse(text, families=["hermes"]), **ENVELOPE)
    assert [b["type"] for b in want["content"]] == ["thinking", "text", "tool_use"]
    assert want["content"][0]["signature"] == ""


def test_a_call_goes_out_whole_and_an_aborted_one_not_at_all():
    text = (
        "<tool_call>\n<function=get_weather>\n<parameter=city>Dallas</parameter>\n</function>\n</tool_call>\n"
        '<tool_call>{"name": "get_time", "arguments": {"tz": "U'
    )
    sent, reason = events(text, 1, families=["qwen3_coder", "hermes"])
    assert reason == "max_tokens"
    deltas = [e for e in sent if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta"]
    assert [json.loads(e["delta"]["partial_json"]) for e in deltas] == [{"city": "Dallas"}]
    got = rebuild(sent)
    assert [(b.name, b.input) for b in got.content if b.type == "tool_use"] == [("get_weather", {"city": "Dallas"})]


def test_model_ids_anthropic_refuses_are_replaced():
    kimi = (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
        '{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>'
    )
    batch = td.parse(kimi, families=["kimi_k2"])
    assert batch.calls[0].id == "functions.get_weather:0"
    (use,) = [b for b in td.anthropic.message(batch, **ENVELOPE)["content"] if b["type"] == "tool_use"]
    assert ID.fullmatch(use["id"]) and use["id"].startswith("toolu_")
    mistral = '[TOOL_CALLS]get_weather[CALL_ID]abc123XYZ[ARGS]{"city": "Paris"}'
    (use,) = td.anthropic.message(td.parse(mistral, families=["mistral"]), **ENVELOPE)["content"]
    assert use["id"] == "abc123XYZ"


def test_the_client_stream_over_http():
    text = '<think>Hm.</think>Sure. <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    sent, _ = events(text, 4, families=["hermes"])
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in sent)

    def handler(request: Any) -> Any:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())

    client = anthropic.Anthropic(
        api_key="test", base_url="http://server.test", http_client=httpx.Client(transport=httpx.MockTransport(handler))
    )
    with client.messages.stream(model="m", max_tokens=100, messages=[{"role": "user", "content": "hi"}]) as stream:
        for _ in stream:
            pass
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use"
    got = summary(final.content)
    want = summary(td.anthropic.message(td.parse(text, families=["hermes"]), **ENVELOPE)["content"])
    assert (got["text"], got["thinking"]) == (want["text"], want["thinking"]) == ("Sure. ", "Hm.")
    assert [c[1:] for c in got["calls"]] == [c[1:] for c in want["calls"]] == [("get_weather", {"city": "Paris"})]


def test_stop_reasons_and_closed_streams():
    assert td.anthropic.stop_reason(td.parse("Hello.")) == "end_turn"
    chat = td.anthropic.MessageStream(**ENVELOPE)
    assert [e["type"] for e in chat.close()] == ["message_start", "message_delta", "message_stop"]
    assert chat.stop_reason == "end_turn" and chat.finish() == []
    with pytest.raises(td.StreamClosedError):
        chat.close()
    with pytest.raises(td.StreamClosedError):
        chat.translate([])
    with pytest.raises(td.PolicyError, match="ToolStream given as stream="):
        td.anthropic.MessageStream(**ENVELOPE, families=["hermes"], stream=td.ToolStream())


# -- built-in tools ----------------------------------------------------------------------------------


def test_builtin_client_tools_get_their_published_input_schemas():
    tools = td.Toolset.from_anthropic(
        [
            {"type": "bash_20250124", "name": "bash"},
            {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"},
            {"type": "text_editor_20250124", "name": "str_replace_editor"},
        ]
    )
    assert set(tools.get("bash").parameters["properties"]) == {"command", "restart"}
    edit = tools.get("str_replace_based_edit_tool").parameters
    assert edit["required"] == ["command", "path"] and "undo_edit" not in edit["properties"]["command"]["enum"]
    assert "undo_edit" in tools.get("str_replace_editor").parameters["properties"]["command"]["enum"]
    # so a call is checked against them
    text = '<tool_call>{"name": "bash", "arguments": {"command": 5}}</tool_call>'
    assert [d.kind for d in td.parse(text, tools=tools).diagnostics] == ["arguments_invalid"]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"type": "web_search_20250305", "name": "web_search"}, "server tool"),
        ({"type": "code_execution_20250825", "name": "code_execution"}, "server tool"),
        ({"type": "computer_20250124", "name": "computer", "display_width_px": 1024}, "input_schema"),
    ],
)
def test_other_builtin_tools_are_refused_with_a_reason(entry, message):
    with pytest.raises(td.ToolsetError, match=message):
        td.Toolset.from_anthropic([entry])
