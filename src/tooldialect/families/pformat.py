"""P-Format: ``name[0|v0|1|v1]``, slots indexed by the tool's parameters in binding order.

The index maps to :func:`tooldialect.render.parameter_order` (the order the catalogue
shows); the value is raw text, unescaped here (``\\|`` ``\\]`` ``\\\\``; any other
backslash is the value's) and typed by the binding pass.  An empty slot retracts its
parameter and the last write wins.  An index past the last parameter refuses the call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from ..lalr import Node
from ..toolset import parameter_order
from ..transform import Issue, RawCall
from ..transform import Reader as GenericReader
from ..tree import node_text as _text

__all__ = ["Reader", "unescape"]

_ESCAPE: Final = re.compile(r"\\([|\]\\])")
_BODY: Final = "pformat_call"


def unescape(text: str) -> str:
    """A slot's text: ``\\|`` ``\\]`` ``\\\\`` stand for ``|`` ``]`` ``\\``; other backslashes stay."""
    return _ESCAPE.sub(r"\1", text)


class Reader(GenericReader):
    # the body is read whole, by this reader alone
    call_nodes = frozenset({_BODY})
    read_nodes = call_nodes
    picked_nodes: ClassVar[Mapping[str, frozenset[str]]] = {}

    def read(self, node: Node) -> tuple[list[RawCall], list[Issue]] | None:
        if node.name != _BODY:
            return None
        name_node, args = node.find("name"), node.find("arguments")
        name = _text(name_node).strip()
        span = (getattr(name_node, "start", None) or 0, getattr(args, "end", None) or 0)  # without the closer
        tool = self.tools.get(name) if self.tools is not None else None
        order = parameter_order(tool.parameters) if tool is not None else []
        values: dict[str, str] = {}
        slots = [c for c in args.children if isinstance(c, Node) and c.name == "slot"] if isinstance(args, Node) else []
        for slot in slots:
            index = int(_text(slot.find("slot_index")))
            if index >= len(order):
                reason = f"slot {index} is out of range ({name} has {len(order)} parameter(s))"
                detail: dict[str, Any] = {"name": name, "reason": reason}
                return [], [Issue("arguments_invalid", detail, span, f"{name}: {reason}; the call is not returned")]
            key = order[index]
            text = unescape(_text(slot.find("slot_value")))
            values.pop(key, None)
            if text.strip():
                values[key] = text  # the last write wins; an empty slot retracts
        params: list[tuple[str, str, bool | None]] = [(k, v, None) for k, v in values.items()]
        return [RawCall(name, None, None, None, span, self.family, gated=True, text_params=params)], []

    def salvage(self, values: list[Any]) -> tuple[str | None, RawCall | None]:
        """The name of the call cut off by the end of the text; a registry-gated body is
        all or nothing and returns no part of itself, whatever ``Policy.truncated`` says."""
        return super().salvage(values)[0], None
