"""A small LALR(1) driver over the parse tables lark compiles.

lark builds the tables (``grammar.py``, or ahead of time: ``prebuilt.py``); this module
drives them one token at a time, the way the tokenizer produces tokens, and builds the parse tree with lark's shaping rules
(``_rule`` inlined, ``?rule`` collapsed, anonymous tokens dropped).  Owning the
driver gives three things lark's interactive parser does not: exact acceptance
checks without copying parser state, reductions performed as soon as they are
certain (so a call is known the moment its last token is read, not one token
later), and every node carrying its source span.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, final

from mypy_extensions import mypyc_attr

__all__ = ["END", "LRParser", "Node", "NodeSink", "RuleShape", "Tables", "Tok"]

END: Final = "$END"
#: How many accepts_seq answers a grammar's tables keep (they are forgotten all at once),
#: and from how deep a stack at most: deeper ones rarely recur.
_MAX_ANSWERS: Final = 4096
_DEEPEST_KEPT: Final = 64


# Tokens and nodes are tracked by the garbage collector in the compiled build too, though
# no reference cycle passes through them: a tree deeper than the interpreter's trashcan
# level defers the deallocation of its deep nodes, which needs the collector's header an
# acyclic class does not have (decision 233).
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
            cls = type(child)
            # (typed locals: the compiled build reads a native attribute, not a generic one)
            if cls is Node:
                node: Node = child
                hit = node.name == name
            elif cls is Tok:
                tok: Tok = child
                hit = tok.type == name
            else:
                hit = getattr(child, "name", None) == name or getattr(child, "type", None) == name
            if hit:
                found: Node | Tok = child
                return found
        return None

    def __repr__(self) -> str:
        return f"Node({self.name}, {self.children!r})"


@mypyc_attr(acyclic=True)
class NodeSink:
    """What a parser hands each node a reduction builds to: its ``on_node``.  An object,
    not a callable, so that feeding a token makes no bound method and the compiled build
    calls the method natively."""

    __slots__ = ()

    def on_node(self, node: Node) -> None:
        """Take ``node``, just built (the parser keeps it on its stack)."""


@final
@dataclass(frozen=True, slots=True)
class RuleShape:
    origin: str  # the nonterminal to go to after the reduction
    name: str  # the node name (alias or origin)
    size: int
    keep: tuple[bool, ...]
    inline: tuple[bool, ...]
    expand1: bool
    structural: bool  # an inlined ``_rule`` or generated helper: no node callback
    # what _reduce reads, derived from the fields above (see __post_init__)
    _plain: bool = field(init=False, repr=False, compare=False)
    _kept: tuple[tuple[int, bool], ...] = field(init=False, repr=False, compare=False)
    _collapse: bool = field(init=False, repr=False, compare=False)

    @property
    def plain(self) -> bool:
        """Every child kept as it is: no filtering, no inlining."""
        return self._plain

    def __post_init__(self) -> None:
        # names as plain ``str``: lark hands out ``Token``s, whose ``==`` is a Python call
        object.__setattr__(self, "origin", str(self.origin))
        object.__setattr__(self, "name", str(self.name))
        object.__setattr__(self, "size", int(self.size))
        object.__setattr__(self, "keep", tuple(bool(k) for k in self.keep))
        object.__setattr__(self, "inline", tuple(bool(i) for i in self.inline))
        object.__setattr__(self, "_plain", all(self.keep) and not any(self.inline))
        # the children kept, by position, and whether each is inlined
        object.__setattr__(
            self, "_kept", tuple((i, inline) for i, (keep, inline) in enumerate(zip(self.keep, self.inline)) if keep)
        )
        # a ``?rule`` with one child is that child
        object.__setattr__(self, "_collapse", self.expand1 and not self.structural)


@dataclass(frozen=True)
class Tables:
    """LALR tables as the driver reads them: ``actions`` gives, per state and symbol, the
    state to shift (or go) to, an ``int``, or the rule to reduce by, a :class:`RuleShape`
    (one object per rule); what the driver reads per token is derived from them once."""

    actions: list[dict[str, int | RuleShape]]
    start_states: dict[str, int]
    end_states: dict[str, int]
    sole: list[RuleShape | None] = field(init=False, repr=False, compare=False)  # per state: its only action
    expected: list[tuple[str, ...]] = field(init=False, repr=False, compare=False)  # per state: the terminals it reads
    # per state: the states its actions shift or go to, by symbol (after a reduction, the
    # driver reads the state to go to here: one that is always an ``int``)
    gotos: list[dict[str, int]] = field(init=False, repr=False, compare=False)
    # accepts_seq's answers, by (end state, stack, terminal types): the same stacks recur
    # in every block a grammar reads
    answers: dict[tuple[int, tuple[int, ...], tuple[str, ...]], bool] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        ends = set(self.end_states.values())
        sole: list[RuleShape | None] = [None] * len(self.actions)
        expected: list[tuple[str, ...]] = [() for _ in self.actions]
        for state, acts in enumerate(self.actions):
            expected[state] = tuple(sym for sym in acts if sym.isupper() or sym == END)
            if state not in ends:
                sole[state] = _sole_reduction(acts)
        object.__setattr__(self, "sole", sole)
        object.__setattr__(self, "expected", expected)
        gotos = [{sym: act for sym, act in acts.items() if type(act) is int} for acts in self.actions]
        object.__setattr__(self, "gotos", gotos)


def _sole_reduction(acts: dict[str, int | RuleShape]) -> RuleShape | None:
    """The rule a state reduces by whatever the next token is, or None (it shifts something,
    or reduces by more than one rule, or has no action at all)."""
    rule = None
    for act in acts.values():
        if type(act) is int or (rule is not None and act is not rule):
            return None
        rule = act
    return rule if isinstance(rule, RuleShape) else None


class LRParser:
    """One parse in progress.  ``feed`` never raises: it returns False on a syntax error."""

    __slots__ = ("tables", "end_state", "stack", "values")

    def __init__(self, tables: Tables, start: str) -> None:
        self.tables = tables
        self.end_state = tables.end_states[start]
        self.stack: list[int] = [tables.start_states[start]]
        self.values: list[Any] = []

    @property
    def finished(self) -> bool:
        return self.stack[-1] == self.end_state

    def expected(self) -> list[str]:
        return list(self.tables.expected[self.stack[-1]])

    def accepts(self, ttype: str) -> bool:
        """Exact check: would ``ttype`` be shifted (or end the parse) from here?"""
        top = self.stack[-1]
        if top == self.end_state:
            return ttype == END
        act = self.tables.actions[top].get(ttype)
        if act is None:
            return False
        return type(act) is int or self.accepts_seq((ttype,))

    def accepts_seq(self, types: list[str] | tuple[str, ...]) -> bool:
        """Exact check that these terminal types could be read next, in order."""
        if len(self.stack) > _DEEPEST_KEPT:
            return self._run_ahead(tuple(types))
        key = (self.end_state, tuple(self.stack), tuple(types))
        answers = self.tables.answers
        got = answers.get(key)
        if got is None:
            got = self._run_ahead(key[2])
            if len(answers) >= _MAX_ANSWERS:
                answers.clear()
            answers[key] = got
        return got

    def _run_ahead(self, types: tuple[str, ...]) -> bool:
        """Whether ``types`` could be read next: the parse runs ahead on a view of the stack
        (the part of ``stack`` still under it, and the states pushed since), copying nothing."""
        actions = self.tables.actions
        gotos = self.tables.gotos
        end_state = self.end_state
        stack = self.stack
        depth = len(stack)  # stack[:depth] is still under the view
        pushed: list[int] = []
        for ttype in types:
            while True:
                top = pushed[-1] if pushed else stack[depth - 1]
                if top == end_state:
                    if ttype != END:
                        return False
                    break
                act = actions[top].get(ttype)
                if act is None:
                    return False
                if type(act) is not RuleShape:
                    pushed.append(act)
                    break
                size = act.size
                if size:
                    kept = len(pushed) - size
                    if kept >= 0:
                        del pushed[kept:]
                    else:
                        depth += kept
                        pushed.clear()
                pushed.append(gotos[pushed[-1] if pushed else stack[depth - 1]][act.origin])
        return True

    def feed(self, tok: Tok, sink: NodeSink | None = None) -> bool:
        """Shift ``tok`` after the reductions it calls for: False when the grammar has no
        place for it.  Each node a reduction builds goes to ``sink`` (nowhere when None):
        handed over with each token, never kept, so a sink that owns its parser makes no
        reference cycle with it."""
        tables = self.tables
        stack = self.stack
        ttype = tok.type
        while True:
            top = stack[-1]
            if top == self.end_state:
                return ttype == END
            act = tables.actions[top].get(ttype)
            if act is None:
                return False
            if type(act) is not RuleShape:
                break
            self._reduce(act, sink)
        stack.append(act)
        self.values.append(tok)
        # reduce at once while the state's only possible action is one reduction
        sole = tables.sole
        shape = sole[act]
        while shape is not None:
            self._reduce(shape, sink)
            shape = sole[stack[-1]]
        return True

    def restore(self, stack: list[int], values: list[Any]) -> None:
        """Go back to a copy of ``stack`` and ``values`` taken earlier: list nodes give back
        the items appended to them since."""
        self.stack[:] = stack
        self.values[:] = values
        for v in values:
            if isinstance(v, Node) and len(v.children) > v.size:
                del v.children[v.size :]

    def end(self, sink: NodeSink | None = None) -> bool:
        return self.feed(Tok(END, "", -1, -1), sink)

    def result(self) -> Any:
        return self.values[-1] if self.finished and self.values else None

    # -- internals ---------------------------------------------------------------

    def _reduce(self, shape: RuleShape, sink: NodeSink | None) -> None:
        size = shape.size
        stack = self.stack
        values = self.values
        if size:
            vals = values[-size:]
            del stack[-size:]
            del values[-size:]
        else:
            vals = []
        start = end = None
        if vals:
            # (typed: the compiled build reads each child's span natively)
            v: Tok | Node = vals[0]
            start = v.start
            v = vals[-1]
            end = v.end
            if start is None or start < 0:  # the first child with a place in the text
                start = None
                for v in vals:
                    if v.start is not None and v.start >= 0:
                        start = v.start
                        break
            if end is None or end < 0:  # the last one
                end = None
                for i in range(len(vals) - 1, -1, -1):
                    v = vals[i]
                    if v.end is not None and v.end >= 0:
                        end = v.end
                        break
        if shape._plain:
            children: list[Any] = vals
        else:
            children = []
            for i, inline in shape._kept:
                v = vals[i]
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
        if shape._collapse and len(children) == 1:
            value: Any = children[0]
        else:
            value = Node(shape.name, children, start, end)
            if not shape.structural and sink is not None:
                sink.on_node(value)
        stack.append(self.tables.gotos[stack[-1]][shape.origin])
        values.append(value)
