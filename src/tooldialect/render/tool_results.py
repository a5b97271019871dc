"""The ``<tool_result>`` envelope: tool output handed back to a text-dialect model.

Tool names and outputs are tool-controlled, so they are never interpolated unexamined:
a body holding a closing tag would end the envelope early, a crafted opening tag would
forge one (CWE-74).  The rule differs by position:

* attribute values (``name``, ``tool_call_id``, ``status``) escape ``& < > "``, and write
  any other character whose NFKC form holds one of them (``＂``, ``＜`` …) as a numeric
  reference (``&#xFF02;``);
* a body rewrites ``<`` to ``&lt;`` only where it opens a protocol tag (``ENVELOPE_TAG``
  in ``grammars/_envelope.lark``: ``<tool_result`` / ``<tool_call``, any case, with or
  without ``/``); every other character passes byte for byte, so source code such as
  ``<div className="x">{a < b}</div>`` reaches the model as written.

Both rules hold for the text a normalising tokenizer hands the model, not only for the
text as written: a tag is any spelling whose NFKC form, case-folded, is one (see
:mod:`._fold`), so ``＜/tool_reſult＞`` loses its bracket as ``</tool_result>`` does.

This is boundary integrity, not a prompt-injection defence: output can still say
anything; it cannot pass for the transcript's own structure.  The spellings come from
the grammar piece; :func:`read_results` is the exact inverse of :func:`results`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable

from ..errors import PolicyError
from ..pieces import piece
from ..transcript import ToolResult
from ._fold import attaches, carriers, fold

__all__ = ["envelope", "escape_attribute", "guard_body", "read_results", "results", "tag_openings"]

_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}
_ATTRIBUTE = re.compile(r'[&<>"]')
_ENTITY = re.compile(r"&(?:(amp|lt|gt|quot)|#x([0-9A-F]{1,6}));")
_BARE_AMPERSAND = re.compile(r"&(?!(?:amp|lt|gt|quot|#x[0-9A-F]{1,6});)")
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
        # applied to folded text (_fold.fold), where every case and compatibility spelling
        # of a letter is already the ASCII one; ASCII text is its own folded form
        self.tag = re.compile(tag.source, re.ASCII)
        self.width = tag.max_width  # the longest tag, its terminator included


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
    """An attribute value: ``& < > "`` become entities, a look-alike of one (a character
    whose NFKC form holds one) a numeric reference; nothing else changes."""
    value = _ATTRIBUTE.sub(lambda m: _ESCAPES[m.group()], value)
    if value.isascii():
        return value
    return "".join(f"&#x{ord(c):X};" if _stands_for_special(c) else c for c in value)


def _stands_for_special(ch: str) -> bool:
    """True for a character other than ``& < > "`` whose NFKC form holds one of them."""
    return not ch.isascii() and any(c in _ESCAPES for c in fold(ch))


def guard_body(body: str) -> str:
    """A body with ``&lt;`` in place of each character that opens a protocol tag; the rest
    as is.  The opener is ``<`` or a character that folds to it (``＜``, ``﹤``).

    A tag at the very end of the body counts: the envelope's own line break follows it.
    """
    cuts = tag_openings(body)
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


def tag_openings(body: str) -> list[int]:
    """The index of each character that opens a protocol tag in ``body``, as written or as
    folded: a ``<`` that opens one in the text itself, or a character whose folded form is
    the ``<`` of one in the folded text.  Both count (``<tool_call>`` then U+0338 is a tag as
    written, ``≯`` ends it once folded; ``＜tool_call＞`` is one only once folded)."""
    s = spelling()
    written = [m.start() for m in s.tag.finditer(body + "\n")]  # the terminator is never "<"
    if body.isascii() or not s.tag.search(fold(body + "\n")):
        return written  # ASCII folds to itself but for letter case, which the regex ignores
    openers = carriers("<")  # "<" among them, so every tag as written starts at one of these
    starts = sorted(at for ch in openers for at in _occurrences(body, ch))  # a merge of sorted runs
    as_written = set(written)
    return [at for at in starts if at in as_written or _opens_tag(body, at, openers[body[at]])]


def _occurrences(text: str, ch: str) -> list[int]:
    found = []
    at = text.find(ch)
    while at >= 0:
        found.append(at)
        at = text.find(ch, at + 1)
    return found


def _opens_tag(body: str, at: int, offsets: tuple[int, ...]) -> bool:
    """True when the folded text from ``body[at]`` on is a tag whose ``<`` is one of the
    ``offsets`` of that character's own folded form.

    A tag is at most ``width`` characters, and every character folds to at least one, so
    ``width`` characters from ``at`` decide it, save for marks just past them that NFKC
    may join to its last character; those are read only for a tag found without them,
    and tags do not overlap, so each mark is read at most once.
    """
    s = spelling()
    end = min(at + s.width, len(body))
    if not _reads_as_tag(body, at, end, offsets):
        return False
    full = end
    while full < len(body) and attaches(body[full]):
        full += 1
    return full == end or _reads_as_tag(body, at, full, offsets)


def _reads_as_tag(body: str, at: int, end: int, offsets: tuple[int, ...]) -> bool:
    form = fold(body[at:end] + ("\n" if end == len(body) else ""))
    return any(spelling().tag.match(form, offset) for offset in offsets)


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
        raise PolicyError(
            f"envelope() body must be a str (serialise structured output first), got {type(body).__name__}"
        )
    s = spelling()
    attrs = "".join(
        f' {key}="{escape_attribute(value)}"' for key, value in zip(_ATTRIBUTES, (name, tool_call_id, status))
    )
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
        if not name or not call_id or status not in _STATUSES or tag_openings(body):
            return None  # not what results() writes: a body it would have guarded
        out.append(ToolResult(call_id, name, body, status))
        pos = end + len(closer)
    return out or None


def _unescape(value: str) -> str | None:
    """The inverse of :func:`escape_attribute`; None for a value it could not have written."""
    if "<" in value or ">" in value:
        return None
    if not value.isascii() and any(_stands_for_special(c) for c in value):
        return None  # the escaper writes a look-alike as a numeric reference
    if _BARE_AMPERSAND.search(value):
        return None  # the escaper writes every & as &amp;
    entities = list(_ENTITY.finditer(value))
    if not all(m.group(1) or _written_as_reference(m.group(2)) for m in entities):
        return None
    return _ENTITY.sub(lambda m: _UNESCAPES[m.group(1)] if m.group(1) else chr(int(m.group(2), 16)), value)


def _written_as_reference(digits: str) -> bool:
    """True for the hex digits :func:`escape_attribute` writes: a look-alike's code point,
    upper case, no leading zero."""
    code = int(digits, 16)
    return code <= sys.maxunicode and digits == f"{code:X}" and _stands_for_special(chr(code))
