"""What a reader needs of a parse-tree node: its text, its first scanned token, the items
of a rule that nests to the left, and the arguments of a call written as code."""

from __future__ import annotations

from typing import Any, Final

from .compiled_grammar import EXTERNALS
from .lalr import Node, Tok

__all__ = [
    "LITERAL_ITEMS",
    "LITERAL_KEY",
    "call_parts",
    "chain_items",
    "first_token",
    "literal_items",
    "node_text",
    "tokens",
]

#: One argument of a ``call`` written as code: a keyword argument (read; a stream sends it as
#: soon as it is reduced) or a positional value (refused: nothing says which parameter it is).
LITERAL_ITEMS: Final = ("py_kwarg", "py_value")


def literal_items(node: Node) -> list[Node]:
    """The arguments of a call written as code: its ``py_kwarg`` and ``py_value`` children,
    or those of its ``arguments`` child."""
    items = [c for c in node.children if isinstance(c, Node) and c.name in LITERAL_ITEMS]
    if items or node.name == "arguments":
        return items
    args = next((c for c in node.children if isinstance(c, Node) and c.name == "arguments"), None)
    return literal_items(args) if args is not None else []


def chain_items(node: Node, chain: str, item: str) -> list[Node]:
    """The ``item`` nodes of a body whose ``chain`` rule nests to the left, in source order
    (walked without recursion)."""
    out: list[Node] = []
    link: Node | None = next((c for c in node.children if isinstance(c, Node) and c.name == chain), None)
    while link is not None:
        kids = [c for c in link.children if isinstance(c, Node)]
        out.extend(reversed([c for c in kids if c.name == item]))
        link = next((c for c in kids if c.name == chain), None)
    out.reverse()
    return out


def first_token(node: Node) -> Tok | None:
    """The first scanned (JSON) token under a node."""
    for child in node.children:
        if isinstance(child, Tok) and child.type in EXTERNALS:
            return child
        if isinstance(child, Node):
            found = first_token(child)
            if found is not None:
                return found
    return None


def tokens(item: Any) -> list[Tok]:
    """Every token under a tree item (the item itself, for a token), in order; iterative, so a
    deep tree costs no recursion."""
    out: list[Tok] = []
    todo = [item]
    while todo:
        got = todo.pop()
        if isinstance(got, Tok):
            out.append(got)
        else:
            todo.extend(reversed(getattr(got, "children", ())))
    return out


def node_text(item: Any) -> str:
    """The text under a tree item: a token's text, a node's tokens' texts joined."""
    cls: type | None = type(item)
    if cls is not Tok and cls is not Node:  # a subclass, or no tree item at all
        cls = Tok if isinstance(item, Tok) else Node if isinstance(item, Node) else None
    if cls is Tok:
        tok: Tok = item
        return tok.value
    if cls is Node:
        node: Node = item
        children = node.children
        if len(children) == 1 and type(children[0]) is Tok:
            one: Tok = children[0]
            return one.value  # a name, an id, a value: one token
        return "".join(node_text(c) for c in children)
    return ""


#: The key under which :func:`call_parts` keeps a call's literal items.
LITERAL_KEY: Final = "py_kwarg"


def call_parts(node: Node) -> dict[str, Any]:
    """A call's child nodes by name, in one pass over its children: the first of each name
    (as ``Node.find`` finds it), and every ``param`` and every literal item (``py_kwarg``
    or ``py_value``, under ``LITERAL_KEY``) in source order, as lists."""
    parts: dict[str, Any] = {}
    for child in node.children:
        if type(child) is not Node:
            continue
        sub: Node = child  # (typed: a native attribute read in the compiled build)
        name = sub.name
        if name == "param" or name in LITERAL_ITEMS:
            key = name if name == "param" else LITERAL_KEY
            got = parts.get(key)
            if got is None:
                parts[key] = [sub]
            else:
                got.append(sub)
        elif name not in parts:
            parts[name] = sub
    return parts
