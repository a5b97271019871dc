"""Python calls: keyword arguments whose values are literals, read by :mod:`tooldialect.pyliteral`.

A call whose arguments are not all keyword arguments with literal values is refused on
its own (``arguments_invalid``, or ``limit_exceeded`` when a value nests deeper than
``max_depth``): the other calls of the block stand.  A call cut off by the end of the
text keeps its name once its ``(`` was read, and, for ``Policy(truncated="keep")``, the
keyword arguments that were complete.
"""

from __future__ import annotations

import json
from typing import Any

from ..argstream import member
from ..lalr import Node, Tok
from ..pyliteral import Refused, keyword_argument
from ..transform import READ_NODES, Issue, RawCall, _text
from ..transform import Reader as GenericReader

__all__ = ["Reader"]

_OPENERS = ("(", "[", "{")


class Reader(GenericReader):
    member_nodes = ("py_kwarg",)
    # a call's arguments: keyword arguments, and positional values (which refuse the call)
    read_nodes = READ_NODES | {"py_kwarg", "py_value"}

    def literal_member(self, node: Node, context: list[Any]) -> tuple[str, Any] | None:
        """A keyword argument of the call (not of a call nested in a value) whose value is
        a literal, as a stream sends it."""
        depth = 0
        for v in reversed(context):
            if isinstance(v, Node) and v.name == "name":
                break
            if isinstance(v, Tok) and v.value in _OPENERS:
                depth += 1  # brackets still open (a closed one was reduced into a node)
        if depth != 1:
            return None
        try:
            ((key, value),) = self.arguments([node]).items()
        except Refused:
            return None
        return key, value

    def read_call(self, node: Node) -> tuple[list[RawCall], list[Issue]]:
        name = _text(node.find("name")).strip()
        span = (node.start or 0, node.end or 0)
        try:
            args = self.arguments([c for c in node.children if isinstance(c, Node) and c.name != "name"])
        except Refused as refused:
            detail: dict[str, Any] = {"name": name, "reason": refused.reason}
            if refused.kind == "limit_exceeded":
                detail.update(limit="max_depth", value=self.max_depth)
            return [], [Issue(refused.kind, detail, span, f"{name}: {refused.reason}; the call is not returned")]
        return [RawCall(name, args, json.dumps(args, ensure_ascii=False), None, span, self.family)], []

    def arguments(self, items: list[Node]) -> dict[str, Any]:
        """Keyword arguments to a JSON object; a positional argument or a repeated keyword
        refuses the call."""
        args: dict[str, Any] = {}
        for item in items:
            if item.name != "py_kwarg":
                raise Refused("a positional argument (calls take keyword arguments only)")
            name, value = keyword_argument(item, self.max_depth)
            if name in args:
                raise Refused(f"the keyword argument {name!r} is repeated")
            args[name] = value
        return args

    def salvage(self, values: list[Any]) -> tuple[str | None, RawCall | None]:
        """The call cut off by the end of the text, once its ``(`` was read, with the
        keyword arguments that were complete and are literals."""
        items: list[Any] = []
        for v in values:
            items.extend(v.children if isinstance(v, Node) and v.name.startswith("_") else [v])
        name, start, kwargs, depth = None, 0, [], -1
        for v in items:
            if isinstance(v, Node) and v.name == "name":
                name, start, kwargs, depth = _text(v).strip(), v.start or 0, [], 0
            elif isinstance(v, Tok) and v.value in _OPENERS and depth >= 0:
                depth += 1  # brackets still open (a closed one was reduced into a node)
            elif isinstance(v, Node) and v.name == "py_kwarg" and depth == 1:
                kwargs.append(v)
        opened = depth >= 1
        if name is None or not opened:
            return None, None
        args: dict[str, Any] = {}
        parts: list[str] = []  # written as a stream sent them: one member per argument
        for kw in kwargs:
            try:
                ((key, value),) = self.arguments([kw]).items()
            except Refused:
                continue
            args[key] = value
            parts.append(member(key, value, not parts))
        end = kwargs[-1].end if kwargs else start
        raw = RawCall(name, args, "{" + "".join(parts) + "}", None, (start, end or start), self.family)
        return name, raw
