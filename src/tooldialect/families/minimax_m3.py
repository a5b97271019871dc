"""MiniMax-M3: parameters are elements named after them, and elements nest.

An element holding text is a text value, typed by the tool's schema like every text
value.  An element holding elements is an object, or a list when every child is an
``<item>`` (the template writes a list so); it becomes JSON text whose leaves are the
elements' texts, which the same typing then reads (the schema's ``properties`` and
``items`` type the leaves).  A child name written twice in one object gathers its values
in a list, in order.

White space before, between and after child elements (a pretty-printed value) is not
part of the value; other text before the first child refuses the call
(``arguments_invalid``), since the value has no place for it.

A closing element ends an element whatever name it spells (the grammar cannot pair
names); when the name is not the opener's, the value still belongs to the opener's name
and the call is reported with ``arguments_repaired``.  Nesting deeper than
``Policy.max_depth`` is a ``limit_exceeded`` diagnostic, not a call.
"""

from __future__ import annotations

import json
from typing import Any, Final

from ..lalr import Node, Tok
from ..pieces import piece
from ..transform import READ_NODES, Issue, RawCall
from ..transform import Reader as GenericReader
from ..tree import node_text as _text

__all__ = ["Reader"]

_ITEM: Final = "item"  # the element the template writes for each member of a list
_LEAD: Final = "elements_lead"  # the white space before a value's first child element
_SPACE: Final = " \t\r\n"
_MARKERS: tuple[str, str, str] | None = None


def _markers() -> tuple[str, str, str]:
    """The token, an element's opening and the invoke's closer, as the grammar spells them."""
    global _MARKERS
    if _MARKERS is None:
        terms = piece("minimax_m3")
        got = [terms[n].pattern for n in ("NS", "ELEM_OPEN", "INVOKE_CLOSE")]
        ns, elem_open, invoke_close = (p.literal if p is not None else None for p in got)
        assert ns is not None and elem_open is not None and invoke_close is not None
        _MARKERS = (ns, elem_open, invoke_close)
    return _MARKERS


class Reader(GenericReader):
    # nested elements, read under a parameter (grammar.unread checks it)
    read_nodes = READ_NODES | {"element", "element_name", "element_value", _LEAD}

    def stop_ok(self, terminal: str, text: str, end: int, tool: str | None, eof: bool) -> bool | None:
        """A closing element written without the token (as MiniMax's API returns parameter
        closers) ends a value only right before the token's next tag that may follow a
        parameter: another element opening, or the invoke's closer (the grammar's
        ELEM_OPEN and INVOKE_CLOSE).  Else it is text in the value (``</b>`` in HTML,
        followed by more of it)."""
        if terminal != "ELEM_CLOSE_BARE":
            return True  # the template's own closers, the token first
        _, elem_open, invoke_close = _markers()
        i = end
        while i < len(text) and text[i] in _SPACE:
            i += 1
        after = text[i : i + len(invoke_close)]
        if after.startswith(invoke_close):
            return True
        if not eof and (invoke_close.startswith(after) or elem_open.startswith(after)):
            return None  # the next tag may be arriving
        # an element opening, not another element's closer
        return after.startswith(elem_open) and len(after) > len(elem_open) and after[len(elem_open)] != "/"

    def read_call(self, node: Node) -> tuple[list[RawCall], list[Issue]]:
        params = [p for p in node.children if isinstance(p, Node) and p.name == "param"]
        name = _text(node.find("name")).strip()
        span = (node.start or 0, node.end or 0)
        if max((_depth(p, 0, self.max_depth) for p in params), default=0) > self.max_depth:
            detail = {"limit": "max_depth", "value": self.max_depth, "name": name}
            message = f"{name}: elements nest deeper than max_depth={self.max_depth}"
            return [], [Issue("limit_exceeded", detail, span, message)]
        stray = _stray_text(params)
        if stray is not None:
            detail = {"name": name, "reason": f"text before the elements of <{stray[0]}>: {stray[1][:40]!r}"}
            message = f"{name}: {detail['reason']}; the call is not returned"
            return [], [Issue("arguments_invalid", detail, span, message)]
        calls, issues = super().read_call(node)
        mismatched: list[tuple[str, str]] = []
        for p in params:
            _mismatches(p, mismatched)
        if calls and mismatched:
            repairs = [f"closing element </{close}> read as the end of <{open_}>" for open_, close in mismatched]
            detail = {"name": name, "repairs": repairs}
            issues.append(Issue("arguments_repaired", detail, span, f"{name}: {'; '.join(repairs)}"))
        return calls, issues

    def params(self, nodes: list[Node]) -> list[tuple[str, str, bool | None]]:
        out: list[tuple[str, str, bool | None]] = []
        for p in nodes:
            key = _text(p.find("param_name")).strip()
            kids = _children(p)
            if kids:
                out.append((key, json.dumps(_value(kids), ensure_ascii=False), None))
            else:
                out.append((key, _text(p.find("param_value")), None))
        return out


def _stray_text(nodes: list[Node]) -> tuple[str, str] | None:
    """The first element (its name, and the text) whose child elements follow text that is
    not white space: an element holds text or elements, never both, so that text has no
    place in the value and the call is refused rather than returned without it."""
    for node in nodes:
        lead = node.find(_LEAD) if isinstance(node, Node) else None
        if lead is not None and _text(lead).strip(_SPACE):
            opened = _text(node.find("param_name" if node.name == "param" else "element_name")).strip()
            return opened, _text(lead).strip(_SPACE)
        found = _stray_text(_children(node))
        if found is not None:
            return found
    return None


def _children(node: Node) -> list[Node]:
    return [c for c in node.children if isinstance(c, Node) and c.name == "element"]


def _depth(node: Node, level: int, cap: int) -> int:
    """How deep elements nest under ``node`` (counting stops past ``cap``)."""
    if level > cap:
        return level
    return max((_depth(c, level + 1, cap) for c in _children(node)), default=level)


def _value(kids: list[Node]) -> Any:
    """The JSON value of an element's child elements: a list of ``<item>``s, else an object."""
    if all(_text(k.find("element_name")).strip() == _ITEM for k in kids):
        return [_leaf(k) for k in kids]
    out: dict[str, Any] = {}
    seen: set[str] = set()
    for k in kids:
        key = _text(k.find("element_name")).strip()
        value = _leaf(k)
        if key not in out:
            out[key] = value
        elif key in seen:
            out[key].append(value)
        else:
            out[key] = [out[key], value]
            seen.add(key)
    return out


def _leaf(node: Node) -> Any:
    kids = _children(node)
    return _value(kids) if kids else _text(node.find("element_value"))


def _mismatches(node: Node, out: list[tuple[str, str]]) -> None:
    """(opener, closer) names of the elements under ``node``, itself included, that a
    closing element of another name ended (depth is capped before this is called)."""
    opened = _text(node.find("param_name" if node.name == "param" else "element_name")).strip()
    close = node.children[-1] if node.children else None
    if isinstance(close, Tok):
        closed = close.value[close.value.rfind("</") + 2 : -1]
        if closed != opened:
            out.append((opened, closed))
    for c in _children(node):
        _mismatches(c, out)
