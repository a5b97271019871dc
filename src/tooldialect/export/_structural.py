"""xgrammar structural tags, in the newer ``format`` form (not the older ``structures``/``triggers`` one):
``{"type": "structural_tag", "format": {"type": "triggered_tags", …}}``.

Each call of a tool is a ``tag``: its fixed text up to the arguments (name included) is
``begin``, the fixed text after them ``end``, and the arguments are the ``content`` — a
``json_schema`` where the family writes JSON arguments, else a ``grammar`` (xgrammar EBNF
compiled here).  A family that wraps its calls in a block (``block_open``) is one tag
whose content is the calls as ``tags_with_separator``.  A family that writes no prose before
its calls is ``or`` of text without its opening and the calls from the first character.
"""

from __future__ import annotations

from typing import Any

from .. import shape as sh
from ..errors import ExportError
from . import _prepare, stops_of
from ._reply import ReplyBuilder
from ._values import MAX_WS

__all__ = ["build_structural_tag"]


def build_structural_tag(
    family: Any, tools: Any, *, mode: Any = "auto", parallel: bool = True, variant: str | None = None
) -> dict[str, Any]:
    """What :func:`tooldialect.export.structural_tag` returns."""
    shape, allowed, required = _prepare(family, tools, mode, parallel, variant)
    builder = ReplyBuilder(shape, allowed, "ebnf", stops_of(family, variant))
    opening = builder.opening()
    if not opening.marker:
        raise ExportError(
            f"family {shape.family}: its calls begin with {opening.lead!r}, which prose writes too; a structural "
            "tag's trigger would fire inside ordinary text (use format='lark', or a lazy GBNF with its word-bounded "
            "pattern triggers)"
        )
    tags = [_tag(builder, tool) for tool in allowed]
    one = not (shape.parallel and parallel)
    # xgrammar's at_least_one: the reply opens with a call, no text before it
    opens = required or not shape.prose_before
    if shape.block_open:
        open_text, _ = builder.literal_prefix(shape.block_open)
        close_text = "".join(p.text for p in builder_lits(shape.block_close, shape.family))
        if not close_text:
            # xgrammar: a tag whose content is a run of tags (unlimited) needs an end string
            # to know where the run stops; it refuses one without ("When the content is
            # unlimited, at least one end string must be non-empty")
            raise ExportError(
                f"family {shape.family}: its block of calls ({open_text!r} …) has no closing marker (its "
                "'// write block' line ends with 'calls'), and a structural tag cannot say where a run of "
                "calls ends without one: xgrammar refuses a tag whose calls have no end string. Export "
                "format='lark', 'gbnf' or 'ebnf' instead (the block runs to the end of the reply there), or "
                "write the closing marker the model writes after its calls, if it writes one"
            )
        inner = {
            "type": "tags_with_separator",
            "tags": tags,
            "separator": shape.sep,
            "at_least_one": True,
            "stop_after_first": one,
        }
        block = {"type": "tag", "begin": open_text, "content": inner, "end": close_text}
        trigger, tags, one = _trigger(open_text), [block], True
    else:
        trigger = _trigger(opening.lead)
    fmt = {
        "type": "triggered_tags",
        "triggers": [trigger],
        "tags": tags,
        "at_least_one": opens,
        "stop_after_first": one,
    }
    if opens and not required:
        # a family that writes no prose before its calls: a reply is text, or calls from its first
        # character on; the text may not hold the opening, or a call in it would go unread
        fmt = {"type": "or", "elements": [{"type": "any_text", "excludes": [opening.lead.strip()]}, fmt]}
    return {"type": "structural_tag", "format": fmt}


def builder_lits(parts: tuple[sh.Part, ...], family: str) -> list[sh.Lit]:
    out = []
    for part in parts:
        if not isinstance(part, sh.Lit):
            raise ExportError(f"family {family}: block_close holds more than fixed text")
        out.append(part)
    return out


def _trigger(lead: str) -> str:
    """The trigger: the lead without leading white space (a prefix of every tag's begin)."""
    return lead.lstrip()


def _tag(builder: ReplyBuilder, tool: Any) -> dict[str, Any]:
    parts = builder.shape.call
    begin = ""
    i = 0
    while i < len(parts):
        part = parts[i]
        if isinstance(part, sh.Lit):
            begin += part.text
        elif isinstance(part, sh.Name):
            begin += builder.name(tool.name, part.encoding)
        else:
            break
        i += 1
    j = len(parts)
    end = ""
    while j > i:
        last = parts[j - 1]
        if not isinstance(last, sh.Lit):
            break
        end = last.text + end
        j -= 1
    middle = parts[i:j]
    if len(middle) == 1 and isinstance(middle[0], sh.Arguments) and middle[0].syntax == "json":
        values = builder.values[tool.name]
        values.value(values.root, "json", ("parameters",))  # same refusals as EBNF
        # the schema with OpenAPI's nullable spelled in JSON Schema, which xgrammar does not read
        content: dict[str, Any] = {"type": "json_schema", "json_schema": values.root, "max_whitespace_cnt": MAX_WS}
    else:
        sub = ReplyBuilder(builder.shape, [tool], "ebnf", builder.stops)
        sub.g.rules["start"] = sub.call(tool, middle)
        content = {"type": "grammar", "grammar": sub.g.ebnf()}
    if not builder.shape.block_open:
        begin = begin.lstrip()  # the trigger, a prefix of it, is matched from the marker on
    return {"type": "tag", "begin": begin, "content": content, "end": end}
