"""Kimi K2: the call's name comes from its id (``functions.NAME:IDX``), which is kept.

A bare counter id (``0``, as later Kimi models write) names no tool: the toolset decides
when exactly one tool fits (the only tool, or the only one whose parameters cover the
arguments and whose required parameters are all given).  Otherwise the id itself stands
as the name, and binding reports it as an unknown tool.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final

from ..lalr import Node
from ..records import excerpt
from ..transform import PICKED_NODES, Issue, RawCall
from ..transform import Reader as GenericReader
from ..tree import call_parts
from ..tree import node_text as _text

if TYPE_CHECKING:
    from ..toolset import Toolset

__all__ = ["Reader"]

_ID: Final = re.compile(r"(?:functions\.)?([^\s:]+):(\d+)")  # groups: name, index
_COUNTER: Final = re.compile(r"\d+")


class Reader(GenericReader):
    # a call's name is read from its id
    picked_nodes: ClassVar[Mapping[str, frozenset[str]]] = {**PICKED_NODES, "call": frozenset({"call_id"})}
    announce_nodes = frozenset({"call_id"})

    def announce(self, node: Node) -> str | None:
        if node.name != "call_id":
            return None
        return _name_in(_text(node).strip())

    def read_call(self, node: Node) -> tuple[list[RawCall], list[Issue]]:
        parts = call_parts(node)
        id_node = parts.get("call_id")
        call_id = _text(id_node).strip()
        span = (node.start or 0, node.end or 0)
        name = _name_in(call_id)
        if name is None:
            if not _COUNTER.fullmatch(call_id):
                reason = f"call id {excerpt(call_id)!r} is not functions.NAME:INDEX"
                at = id_node.start if id_node is not None and id_node.start is not None else span[0]
                detail = {"reason": reason, "excerpt": excerpt(call_id), "at": at}
                return [], [Issue("malformed_block", detail, span, reason)]
            name = ""
        calls, issues = self.call_named(node, parts, name or call_id)
        for call in calls:
            call.id = call_id
            if not name:
                call.name = self._infer(call.arguments) or call_id
                if self.tools is None:
                    # nothing to infer the name from: kept under its id, and said so
                    reason = f"the counter id {call_id!r} names no tool and no toolset was given"
                    call.notes.append(
                        Issue("unknown_tool", {"name": call_id, "policy": "keep", "reason": reason}, call.span, reason)
                    )
        return calls, issues

    def _infer(self, arguments: Any) -> str | None:
        tools: Toolset | None = self.tools
        if tools is None or not isinstance(arguments, dict):
            return None
        if len(tools) == 1:
            return next(iter(tools)).name
        fits = []
        for tool in tools:
            props = tool.parameters.get("properties") or {}
            required = tool.parameters.get("required") or []
            if set(arguments) <= set(props) and set(required) <= set(arguments):
                fits.append(tool.name)
        return fits[0] if len(fits) == 1 else None


#: the ids read and the names they hold ("": none; a name is never empty), a value of the
#: text alone, so threads that share it agree: an id is read where it is announced and
#: again with its call, and the same ids (``functions.NAME:0``, ``:1``, …) come back reply
#: after reply; forgotten all at once past ``_MAX_NAMES`` (one look-up each, so that a
#: thread that empties it meanwhile costs another only a second reading)
_NAMES: Final[dict[str, str]] = {}
_MAX_NAMES: Final = 1024


def _name_in(call_id: str) -> str | None:
    """The tool name a ``functions.NAME:IDX`` id holds (None: the id is not one): what
    ``_ID.fullmatch`` reads as its first group, read with string methods."""
    kept = _NAMES.get(call_id)
    if kept is not None:
        return kept or None
    head, colon, index = call_id.partition(":")
    if not colon or not index.isdecimal() or head.split() != [head]:
        name = ""  # no colon, a second one, an index that is not digits, white space
    else:
        name = head[10:] if len(head) > 10 and head.startswith("functions.") else head
    if len(_NAMES) >= _MAX_NAMES:
        _NAMES.clear()
    _NAMES[call_id] = name
    return name or None
