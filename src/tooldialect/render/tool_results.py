"""The ``<tool_result>`` envelope: tool output handed back to a text-dialect model.

Tool names and outputs are tool-controlled, so they are never interpolated unexamined:
a body holding a closing tag would end the envelope early, a crafted opening tag would
forge one (CWE-74).  The rule differs by position:

* attribute values (``name``, ``tool_call_id``, ``status``) escape ``& < > "``;
* a body rewrites ``<`` to ``&lt;`` only where it opens a protocol tag (``ENVELOPE_TAG``
  in ``grammars/_envelope.lark``: ``<tool_result`` / ``<tool_call``, any case, with or
  without ``/``); every other character passes byte for byte, so source code such as
  ``<div className="x">{a < b}</div>`` reaches the model as written.

This is boundary integrity, not a prompt-injection defence: output can still say
anything; it cannot pass for the transcript's own structure.  The spellings come from
the grammar piece; :func:`read_results` is the exact inverse of :func:`results`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..errors import PolicyError
from ..families import piece
from ..transcript import ToolResult

__all__ = ["envelope", "escape_attribute", "guard_body", "read_results", "results"]

_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}
_ATTRIBUTE = re.compile(r'[&<>"]')
_ENTITY = re.compile(r"&(amp|lt|gt|quot);")
_BARE_AMPERSAND = re.compile(r"&(?!(?:amp|lt|gt|quot);)")
_UNESCAPES = {"amp": "&", "lt": "<", "gt": ">", "quot": '"'}
_ATTRIBUTES = ("name", "tool_call_id", "status")
_STATUSES = ("ok", "error")


class _Spelling:
    """The envelope's strings, read once from ``_envelope.lark``."""

    def __init__(self) -> None:
        terms = piece("_envelope")
        self.heading = _literal(terms["ENVELOPE_HEADING"]) + "\n"
        self.open = _literal(terms["ENVELOPE_OPEN"])
        self.close = _literal(terms["ENVELOPE_CLOSE"])
        tag = terms["ENVELOPE_TAG"].pattern
        assert tag is not None
        self.tag = re.compile(tag.source, re.ASCII)  # ASCII letter case only: "ſ" is not "s" here


def _literal(term: object) -> str:
    literal = getattr(getattr(term, "pattern", None), "literal", None)
    assert isinstance(literal, str), f"{term} must be a literal in _envelope.lark"
    return literal


_spelling: _Spelling | None = None


def spelling() -> _Spelling:
    global _spelling
    if _spelling is None:
        _spelling = _Spelling()
    return _spelling


def escape_attribute(value: str) -> str:
    """An attribute value: ``& < > "`` become entities, nothing else changes."""
    return _ATTRIBUTE.sub(lambda m: _ESCAPES[m.group()], value)


def guard_body(body: str) -> str:
    """A body with ``&lt;`` in place of each ``<`` that opens a protocol tag; the rest as is.

    A tag at the very end of the body counts: the envelope's own line break follows it.
    """
    tag = spelling().tag
    cuts = [m.start() for m in tag.finditer(body + "\n")]  # the terminator is never "<"
    if not cuts:
        return body
    parts = []
    last = 0
    for at in cuts:
        parts.append(body[last:at])
        parts.append("&lt;")
        last = at + 1
    parts.append(body[last:])
    return "".join(parts)


def envelope(*, name: str, tool_call_id: str, status: str = "ok", body: str) -> str:
    """One result element, ending with a line break::

        <tool_result name="…" tool_call_id="…" status="ok">
        BODY
        </tool_result>
    """
    for field, value in (("name", name), ("tool_call_id", tool_call_id)):
        if not isinstance(value, str) or not value:
            raise PolicyError(f"envelope() needs {field} as a non-empty str, got {value!r}")
    if status not in _STATUSES:
        raise PolicyError(f"envelope() status must be 'ok' or 'error', got {status!r}")
    if not isinstance(body, str):
        raise PolicyError(f"envelope() body must be a str (serialise structured output first), got {type(body).__name__}")
    s = spelling()
    attrs = "".join(f' {key}="{escape_attribute(value)}"' for key, value in zip(_ATTRIBUTES, (name, tool_call_id, status)))
    return f"{s.open}{attrs}>\n{guard_body(body)}\n{s.close}\n"


def results(items: Iterable[ToolResult]) -> list[str]:
    """The user turns that hand ``items`` back, in order.

    Ordinary results are framed together: a heading line, then one envelope each.  A
    ``verbatim`` result closes the batch before it and is a turn of its own, its output
    raw (no heading, no envelope, no rewrite).
    """
    s = spelling()
    turns: list[str] = []
    batch: list[str] = []
    for item in _checked(items):
        if item.verbatim:
            if batch:
                turns.append(s.heading + "".join(batch))
                batch = []
            turns.append(item.output)
        else:
            batch.append(envelope(name=item.name, tool_call_id=item.tool_call_id, status=item.status, body=item.output))
    if batch:
        turns.append(s.heading + "".join(batch))
    return turns


def _checked(items: Iterable[ToolResult]) -> list[ToolResult]:
    if isinstance(items, (str, bytes, ToolResult)) or not isinstance(items, Iterable):
        raise PolicyError("results() takes a list of td.ToolResult")
    out = list(items)
    for item in out:
        if not isinstance(item, ToolResult):
            raise PolicyError(f"results() takes td.ToolResult items, got {type(item).__name__}")
    return out


def read_results(content: str) -> list[ToolResult] | None:
    """The results of one framed turn written by :func:`results`, or None when ``content``
    is anything else (prose, a verbatim turn, a heading with no result, text after the
    last envelope).  Attribute values come back unescaped; bodies as they were sent
    (the ``&lt;`` rewrite stays: it cannot be told from a body that wrote ``&lt;``)."""
    if not isinstance(content, str):
        return None
    s = spelling()
    if not content.startswith(s.heading):
        return None
    pos = len(s.heading)
    out: list[ToolResult] = []
    closer = "\n" + s.close + "\n"
    while pos < len(content):
        if not content.startswith(s.open, pos):
            return None
        pos += len(s.open)
        values = []
        for key in _ATTRIBUTES:
            lead = f' {key}="'
            if not content.startswith(lead, pos):
                return None
            end = content.find('"', pos + len(lead))
            if end < 0:
                return None
            value = _unescape(content[pos + len(lead) : end])
            if value is None:
                return None
            values.append(value)
            pos = end + 1
        if not content.startswith(">\n", pos):
            return None
        pos += 2
        end = content.find(closer, pos)
        if end < 0:
            return None
        body = content[pos:end]
        name, call_id, status = values
        if not name or not call_id or status not in _STATUSES or s.tag.search(body + "\n"):
            return None  # not what results() writes: a body it would have guarded
        out.append(ToolResult(call_id, name, body, status))
        pos = end + len(closer)
    return out or None


def _unescape(value: str) -> str | None:
    """The inverse of :func:`escape_attribute`; None for a value it could not have written."""
    if "<" in value or ">" in value:
        return None
    if _BARE_AMPERSAND.search(value):
        return None  # the escaper writes every & as &amp;
    return _ENTITY.sub(lambda m: _UNESCAPES[m.group(1)], value)
