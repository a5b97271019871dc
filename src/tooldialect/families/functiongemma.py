"""FunctionGemma: a parameter's value is a string, a bare scalar, or a nested object or list.

A string (between ``<escape>`` tokens) and a bare scalar are text, typed by the tool's
schema like every text value.  A nested ``{…}`` or ``[…]`` becomes JSON text built from
its members (strings as strings, bare scalars as the JSON value they spell, else as
text), which the same typing then reads as an object or an array.  Nesting deeper than
``Policy.max_depth`` is a ``limit_exceeded`` diagnostic, not a call.
"""

from __future__ import annotations

import json
from typing import Any

from ..jsonscan import JsonValueError, loads_strict
from ..lalr import Node, Tok
from ..transform import READ_NODES, Issue, RawCall
from ..transform import Reader as GenericReader
from ..tree import node_text as _text

__all__ = ["Reader"]


class Reader(GenericReader):
    # a param's value: a string, a bare scalar, or a nested object or list
    read_nodes = READ_NODES | {"string", "scalar", "object", "array"}

    def read_call(self, node: Node) -> tuple[list[RawCall], list[Issue]]:
        params = [p for p in node.children if isinstance(p, Node) and p.name == "param"]
        deepest = max((_depth(p.children[-1]) for p in params), default=0)
        if deepest > self.max_depth:
            name = _text(node.find("name")).strip()
            detail = {"limit": "max_depth", "value": self.max_depth, "name": name}
            span = (node.start or 0, node.end or 0)
            message = f"{name}: values nest deeper than max_depth={self.max_depth}"
            return [], [Issue("limit_exceeded", detail, span, message)]
        return super().read_call(node)

    def params(self, nodes: list[Node]) -> list[tuple[str, str, bool | None]]:
        out: list[tuple[str, str, bool | None]] = []
        for p in nodes:
            key = _text(p.find("param_name")).strip()
            value = p.children[-1] if len(p.children) > 1 else None
            if isinstance(value, Node) and value.name in ("object", "array"):
                text = json.dumps(_value(value), ensure_ascii=False)
            else:
                text = _text(value)
            out.append((key, text, None))
        return out


def _depth(node: Any) -> int:
    """How deep objects and lists nest in a value (the parser's stack cap bounds it)."""
    if not isinstance(node, Node) or node.name not in ("object", "array"):
        return 0
    inner = (m.children[-1] if isinstance(m, Node) and m.name == "member" else m for m in node.children)
    return 1 + max((_depth(v) for v in inner), default=0)


def _value(node: Any) -> Any:
    """The JSON value of a nested ``string``, ``scalar``, ``object`` or ``array`` node."""
    if not isinstance(node, Node):
        return _text(node)
    if node.name == "string":
        return _text(node)
    if node.name == "scalar":
        text = _text(node).strip()
        try:
            got = loads_strict(text)
        except JsonValueError:
            return text
        return got if not isinstance(got, (dict, list)) else text
    if node.name == "object":
        out = {}
        for member in node.children:
            if isinstance(member, Node) and member.name == "member" and len(member.children) > 1:
                out[_text(member.children[0]).strip()] = _value(member.children[-1])
        return out
    if node.name == "array":
        return [_value(item) for item in node.children if not isinstance(item, Tok)]
    return _text(node)
