"""An OpenAI-compatible ``/v1/chat/completions`` endpoint in front of any text generator.

The generator is whatever produces the model's raw text (a local inference engine, a
completions API, a replayed file); tooldialect turns that text into messages, streamed
chunks, tool calls and ``finish_reason``. Run it on a saved reply:

    pip install tooldialect starlette uvicorn
    python examples/openai_server.py examples/hermes_reply.txt      # serves on :8000

then point any OpenAI client at ``http://localhost:8000/v1``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

import tooldialect as td

#: the model's raw text for a request body, delta by delta
Generate = Callable[[dict[str, Any]], Iterable[str]]


def create_app(generate: Generate, *, families: list[str] | None = None, model: str = "local-model") -> Starlette:
    """The app: ``families`` are the formats the model writes (None: every family)."""

    async def chat_completions(request: Request) -> Any:
        body = await request.json()
        try:
            options = request_options(body, families)
        except td.ToolDialectError as exc:
            return JSONResponse({"error": {"message": str(exc), "type": "invalid_request_error"}}, status_code=400)
        envelope = {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "model": body.get("model") or model,
            "created": int(time.time()),
        }
        if body.get("stream"):
            return StreamingResponse(_chunks(generate(body), options, envelope), media_type="text/event-stream")
        result = td.parse("".join(generate(body)), **options)
        return JSONResponse(td.openai.completion(result, **envelope))

    return Starlette(routes=[Route("/v1/chat/completions", chat_completions, methods=["POST"])])


def request_options(body: dict[str, Any], families: list[str] | None) -> dict[str, Any]:
    """The parser's options for a request body: its tools (built once per distinct list)
    and its tool_choice.  A td.ToolDialectError says what the client got wrong."""
    tools = td.Toolset.cached(body["tools"]) if body.get("tools") else None
    options = {"tools": tools, "families": families, "policy": td.Policy(tool_choice=body.get("tool_choice") or "auto")}
    td.ToolStream(**options)  # a tool_choice naming a tool the toolset lacks is refused here
    return options


def _chunks(deltas: Iterable[str], options: dict[str, Any], envelope: dict[str, Any]) -> Iterator[str]:
    chat = td.openai.ChatStream(**options)
    for text in deltas:
        for delta in chat.feed(text):
            yield _sse(td.openai.chunk(delta, **envelope))
    for delta in chat.close():
        yield _sse(td.openai.chunk(delta, **envelope))
    yield _sse(td.openai.chunk({}, **envelope, finish_reason=chat.finish_reason))
    yield "data: [DONE]\n\n"


def _sse(obj: dict[str, Any]) -> str:
    return f"data: {json.dumps(obj, ensure_ascii=False)}\n\n"


def replay(path: str, size: int = 4) -> Generate:
    """A generator that answers every request with a saved reply, ``size`` characters at a time."""

    def generate(body: dict[str, Any]) -> Iterator[str]:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for i in range(0, len(text), size):
            yield text[i : i + size]

    return generate


if __name__ == "__main__":
    import sys

    import uvicorn

    uvicorn.run(create_app(replay(sys.argv[1])), port=8000)
