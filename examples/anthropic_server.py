"""An Anthropic-compatible ``/v1/messages`` endpoint in front of any text generator.

The same idea as ``openai_server.py``: the generator produces the model's raw text and
tooldialect turns it into content blocks, stream events, tool_use blocks and
``stop_reason``. Run it on a saved reply:

    pip install tooldialect starlette uvicorn
    python examples/anthropic_server.py examples/hermes_reply.txt   # serves on :8001

then point an Anthropic client at ``http://localhost:8001``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from openai_server import Generate, replay, request_options
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

import tooldialect as td


def create_app(generate: Generate, *, families: list[str] | None = None, model: str = "local-model") -> Starlette:
    """The app: ``families`` are the formats the model writes (None: every family)."""

    async def messages(request: Request) -> Any:
        body = await request.json()
        try:
            options = request_options(body, families)
        except td.ToolDialectError as exc:
            error = {"type": "error", "error": {"type": "invalid_request_error", "message": str(exc)}}
            return JSONResponse(error, status_code=400)
        envelope = {"id": f"msg_{uuid.uuid4().hex}", "model": body.get("model") or model}
        if body.get("stream"):
            return StreamingResponse(_events(generate(body), options, envelope), media_type="text/event-stream")
        result = td.parse("".join(generate(body)), **options)
        return JSONResponse(td.anthropic.message(result, **envelope))

    return Starlette(routes=[Route("/v1/messages", messages, methods=["POST"])])


def _events(deltas: Iterable[str], options: dict[str, Any], envelope: dict[str, Any]) -> Iterator[str]:
    chat = td.anthropic.MessageStream(**options, **envelope)
    for text in deltas:
        yield from map(_sse, chat.feed(text))
    yield from map(_sse, chat.close())


def _sse(event: dict[str, Any]) -> str:
    return f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n"


if __name__ == "__main__":
    import sys

    import uvicorn

    uvicorn.run(create_app(replay(sys.argv[1])), port=8001)
