"""The issues a reader reports of a payload it took apart: text its node holds that it does
not read, JSON that is not strict, code arguments it refused."""

from __future__ import annotations

from typing import Any

from .jsonscan import JsonValueError
from .lalr import Node, Tok
from .pyliteral import Refused
from .records import Issue, excerpt, unread_issue
from .tree import node_text, tokens

__all__ = ["invalid_json", "refusal", "unread_payload"]


def unread_payload(node: Any, name: str | None, span: tuple[int, int]) -> list[Issue]:
    """What a payload node holds that the reader does not read (``records.unread_issue``)."""
    holder = node.name if isinstance(node, Node) else "arguments"
    issue = unread_issue(node_text(node), sorted({t.type for t in tokens(node)}), holder, name, span)
    return [issue] if issue is not None else []


def invalid_json(tok: Tok, exc: JsonValueError, name: str | None) -> Issue:
    reason = str(exc)
    start = tok.start or 0
    at = start + exc.pos if exc.pos >= 0 else start  # where strict JSON stopped reading it
    detail: dict[str, Any] = {"reason": f"not valid JSON: {reason}", "excerpt": excerpt(tok.value), "at": at}
    if name:
        detail["name"] = name
    return Issue("malformed_block", detail, (tok.start, tok.end), f"payload is not valid JSON ({reason})")


def refusal(name: str, refused: Refused, span: tuple[int, int], max_depth: int, more: str) -> Issue:
    """The diagnostic of a call whose code arguments were refused (``more`` ends its message)."""
    detail: dict[str, Any] = {"name": name, "reason": refused.reason}
    if refused.kind == "limit_exceeded":
        detail.update(limit="max_depth", value=max_depth)
    return Issue(refused.kind, detail, span, f"{name}: {refused.reason}{more}")
