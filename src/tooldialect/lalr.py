"""A small LALR(1) driver over the parse tables lark compiles.

lark builds the tables; this module drives them one token at a time, the way the
tokenizer produces tokens, and builds the parse tree with lark's shaping rules
(``_rule`` inlined, ``?rule`` collapsed, anonymous tokens dropped).  Owning the
driver gives three things lark's interactive parser does not: exact acceptance
checks without copying parser state, reductions performed as soon as they are
certain (so a call is known the moment its last token is read, not one token
later), and every node carrying its source span.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lark.parsers.lalr_analysis import Shift

__all__ = ["END", "LRParser", "Node", "RuleShape", "Tables", "Tok"]

END = "$END"


class Tok:
    """A token: terminal type, its text, and its span in the whole input."""

    __slots__ = ("type", "value", "start", "end")

    def __init__(self, type: str, value: str, start: int, end: int) -> None:
        self.type = type
        self.value = value
        self.start = start
        self.end = end

    def __repr__(self) -> str:
        return f"Tok({self.type}, {self.value!r}, {self.start}, {self.end})"


class Node:
    """A parse-tree node: rule name, children (nodes and tokens) and span."""

    __slots__ = ("name", "children", "start", "end", "data", "size")

    def __init__(self, name: str, children: list[Any], start: int | None, end: int | None) -> None:
        self.name = name
        self.children = children
        self.start = start
        self.end = end
        self.data: Any = None  # filled by the transformer
        # a structural node's own children are children[:size]: a longer list was taken
        # over by the list node that extends it (see LRParser._reduce)
        self.size = len(children)

    def find(self, name: str) -> Node | Tok | None:
        for child in self.children:
            if getattr(child, "name", None) == name or getattr(child, "type", None) == name:
                return child
        return None

    def __repr__(self) -> str:
        return f"Node({self.name}, {self.children!r})"


@dataclass(frozen=True)
class RuleShape:
    __slots__ = ("origin", "name", "size", "keep", "inline", "expand1", "structural", "_plain")

    origin: str  # the nonterminal to go to after the reduction
    name: str  # the node name (alias or origin)
    size: int
    keep: tuple[bool, ...]
    inline: tuple[bool, ...]
    expand1: bool
    structural: bool  # an inlined ``_rule`` or generated helper: no node callback

    @property
    def plain(self) -> bool:
        """Every child kept as it is: no filtering, no inlining."""
        return self._plain

    def __post_init__(self) -> None:
        object.__setattr__(self, "_plain", all(self.keep) and not any(self.inline))


@dataclass(frozen=True)
class Tables:
    states: dict[int, dict[str, tuple[Any, Any]]]
    start_states: dict[str, int]
    end_states: dict[str, int]
    shapes: dict[Any, RuleShape]


class LRParser:
    """One parse in progress.  ``feed`` never raises: it returns False on a syntax error."""

    __slots__ = ("tables", "end_state", "stack", "values", "on_node")

    def __init__(self, tables: Tables, start: str, on_node: Callable[[Node], None] | None = None) -> None:
        self.tables = tables
        self.end_state = tables.end_states[start]
        self.stack: list[int] = [tables.start_states[start]]
        self.values: list[Any] = []
        self.on_node = on_node

    @property
    def finished(self) -> bool:
        return self.stack[-1] == self.end_state

    def expected(self) -> list[str]:
        return [k for k in self.tables.states[self.stack[-1]] if k.isupper() or k == END]

    def accepts(self, ttype: str) -> bool:
        """Exact check: would ``ttype`` be shifted (or end the parse) from here?"""
        states = self.tables.states
        top = self.stack[-1]
        if top == self.end_state:
            return ttype == END
        act = states[top].get(ttype)
        if act is None:
            return False
        if act[0] is Shift:
            return True
        return self.accepts_seq([ttype])

    def accepts_seq(self, types: list[str]) -> bool:
        """Exact check that these terminal types could be read next, in order."""
        states = self.tables.states
        shapes = self.tables.shapes
        stack = list(self.stack)
        for ttype in types:
            while True:
                top = stack[-1]
                if top == self.end_state:
                    if ttype != END:
                        return False
                    break
                act = states[top].get(ttype)
                if act is None:
                    return False
                if act[0] is Shift:
                    stack.append(act[1])
                    break
                shape = shapes[act[1]]
                if shape.size:
                    del stack[-shape.size :]
                stack.append(states[stack[-1]][shape.origin][1])
        return True

    def feed(self, tok: Tok) -> bool:
        states = self.tables.states
        while True:
            top = self.stack[-1]
            if top == self.end_state:
                return tok.type == END
            act = states[top].get(tok.type)
            if act is None:
                return False
            if act[0] is Shift:
                self.stack.append(act[1])
                self.values.append(tok)
                self._eager()
                return True
            self._reduce(act[1])

    def restore(self, stack: list[int], values: list[Any]) -> None:
        """Go back to a copy of ``stack`` and ``values`` taken earlier: list nodes give back
        the items appended to them since."""
        self.stack[:] = stack
        self.values[:] = values
        for v in values:
            if isinstance(v, Node) and len(v.children) > v.size:
                del v.children[v.size :]

    def end(self) -> bool:
        return self.feed(Tok(END, "", -1, -1))

    def result(self) -> Any:
        return self.values[-1] if self.finished and self.values else None

    # -- internals ---------------------------------------------------------------

    def _eager(self) -> None:
        """Reduce while the state's only possible action is one reduction."""
        states = self.tables.states
        while self.stack[-1] != self.end_state:
            acts = states[self.stack[-1]]
            rule = None
            for action, arg in acts.values():
                if action is Shift or (rule is not None and arg is not rule):
                    return
                rule = arg
            if rule is None:
                return
            self._reduce(rule)

    def _reduce(self, rule: Any) -> None:
        shape = self.tables.shapes[rule]
        size = shape.size
        if size:
            vals = self.values[-size:]
            del self.stack[-size:]
            del self.values[-size:]
        else:
            vals = []
        start = end = None
        if vals:
            start = vals[0].start
            end = vals[-1].end
            if start is None or start < 0:
                start = next((v.start for v in vals if v.start is not None and v.start >= 0), None)
            if end is None or end < 0:
                end = next((v.end for v in reversed(vals) if v.end is not None and v.end >= 0), None)
        if shape.plain:
            children: list[Any] = vals
        else:
            children = []
            for v, keep, inline in zip(vals, shape.keep, shape.inline):
                if not keep:
                    continue
                if inline and isinstance(v, Node):
                    if not children and shape.structural and v.name[:1] == "_" and v.size == len(v.children):
                        # a list rule lark made from X+ or X* (left-recursive, inlined): take
                        # over the list it grew instead of copying it, or a list of n items
                        # costs n²/2 copies
                        children = v.children
                    else:
                        children.extend(v.children)
                else:
                    children.append(v)
        if shape.expand1 and len(children) == 1 and not shape.structural:
            value: Any = children[0]
        else:
            value = Node(shape.name, children, start, end)
            if not shape.structural and self.on_node is not None:
                self.on_node(value)
        goto = self.tables.states[self.stack[-1]][shape.origin][1]
        self.stack.append(goto)
        self.values.append(value)
