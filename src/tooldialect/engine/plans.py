"""The plans a whole block is read by (see ``whole.py``): the grammar's parser run once on
placeholder tokens of a token sequence, from its start after an opener or, for a chained
plan, from a stack of placeholder values standing for those a candidate's parser holds."""

from __future__ import annotations

from typing import Any, Final, Literal, NamedTuple

from ..compiled_grammar import JSON_EXTERNALS, CompiledGrammar
from ..lalr import END, LRParser, Node, NodeSink, Tok
from .cand import Cand, Lexicon, lexicon_at
from .values import TEXT, Follows, Stops

__all__ = [
    "SCANNED",
    "Base",
    "Ending",
    "Plan",
    "Plans",
    "Shape",
    "Stage",
    "child_plan",
    "ending_for",
    "root_plan",
    "shape_of",
    "spliced",
]  # fmt: skip


class Stage(NamedTuple):
    """What the parser does as a run of tokens is fed: the nodes its reductions build (each
    ``(name, child refs, start ref, end ref, size, take)``; a ref is a leaf's place — the
    values on the stack the run starts from, then its tokens — then a node's place after
    the leaves; a ref below -1 stands for the children of a value on that stack, spliced
    in (``_splice``), and ``take`` is the value whose list of children the node takes over
    (-1: none, -2: none but it splices)), which of them it hands over, in order, each with
    the last payload token read when it was (-1: none yet), and the stack and values it is
    left with (values as refs)."""

    nodes: tuple[tuple[str, tuple[int, ...], int, int, int, int], ...]
    fired: tuple[tuple[int, int], ...]
    stack: tuple[int, ...]
    values: tuple[int, ...]


class Ending(NamedTuple):
    """What the parser does for a whole token sequence: the stage up to its last token
    (where a reading that waits for more text stands); the stages up to the block's end,
    merged into one that builds only the nodes handed over or left on the stack (None when
    the block cannot end there); whether a structure the tokens opened is still open (the
    reading then looks past unreadable text for its closer); and the names of the nodes
    handed over."""

    read: Stage
    whole: Stage | None
    open_left: bool
    names: frozenset[str]


class Plan:
    """A token sequence the one-step reading has met, in a tree by token type: the parser's
    stack after it, what the parser accepts next (None: the parse is finished), the
    sequences one token longer, and, once a block has ended here, its ``Ending``.  ``base``
    is where a chained plan's tokens start from (None: from the grammar's start, after an
    opener): the parser's stack and the shapes of the values on it (``_shape``)."""

    __slots__ = ("after", "base", "ended", "ending", "lex", "stack", "types", "stops", "follows")

    def __init__(
        self, types: tuple[str, ...], stack: tuple[int, ...], lex: Lexicon | None, base: Base | None = None
    ) -> None:
        self.types = types
        self.stack = stack
        self.lex = lex
        self.base = base
        self.after: dict[str, Plan | None] = {}
        self.ended = False  # whether ``ending`` was worked out (None: the parser refuses it)
        self.ending: Ending | None = None
        # a raw text value read after these tokens: its stops and what may follow each
        # (TextValues' answers at ``stack``, kept here rather than looked up by the stack)
        self.stops: Stops | None = None
        self.follows: Follows = {}


#: A value on the stack as a plan sees it: None for a token, else a node's name, whether
#: its children are all its own (``Node.size``) and how many it has, up to two.
Shape = tuple[str, bool, int] | None
#: Where a chained plan starts: the parser's stack and the shapes of its values.
Base = tuple[tuple[int, ...], tuple[Shape, ...]]


class Plans:
    """A catalog's plans: a tree per grammar, by opener, the chained roots (by grammar and
    ``Base``), and what has been spent on them."""

    __slots__ = ("chained", "made", "roots", "tokens")

    def __init__(self) -> None:
        self.roots: dict[str, dict[str, Plan | None]] = {}  # grammar -> opener type -> plan
        self.chained: dict[tuple[str, Base], Plan | None] = {}
        self.made = 0  # plans made
        self.tokens = 0  # tokens of the endings worked out


_NO_REF: Final = -1


class _Dry(NodeSink):
    """The grammar's parser run on placeholder tokens, recording what it builds; from the
    start, or (``base``) from a stack of placeholder values of the given shapes."""

    def __init__(self, g: CompiledGrammar, base: Base | None = None) -> None:
        # (node, its children when handed over, the last payload token read by then)
        self.fired: list[tuple[Node, int, int]] = []
        self.payload = -1
        self.parser = LRParser(g.tables, "start")  # (fed with self as its sink: no cycle)
        self.refs: dict[int, int] = {}  # id(token or node) -> ref
        self.toks: list[Any] = []  # the leaves: the base's values, then the tokens fed
        self.kept: list[Any] = []  # every token and node given a ref, kept alive (refs are by id)
        self.splices: dict[int, int] = {}  # id(a placeholder child of a base value) -> its ref
        self.lists: dict[int, int] = {}  # id(a base value's list of children) -> the value's ref
        if base is not None:
            stack, shapes = base
            self.parser.stack[:] = stack
            for i, shape in enumerate(shapes):
                self.parser.values.append(self._placeholder(i, shape))
            self.toks.extend(self.parser.values)

    def on_node(self, node: Node) -> None:
        self.fired.append((node, len(node.children), self.payload))

    def _placeholder(self, i: int, shape: Shape) -> Any:
        if shape is None:
            return Tok("", "", 2 * i, 2 * i + 1)
        name, own, k = shape
        # a lone child has its node's place (shape_of): where a reduction puts it in the
        # node's stead, the node it makes begins and ends where the real one does
        kids = [Tok("", "", 2 * i, 2 * i + 1) if k == 1 else Tok("", "", -1, -1) for _ in range(k)]
        for j, kid in enumerate(kids):
            self.splices[id(kid)] = _splice(i, j == 0)
        node = Node(name, kids, 2 * i, 2 * i + 1)
        node.size = k if own else -1
        self.lists[id(kids)] = i
        return node

    def feed(self, ttype: str) -> bool:
        i = len(self.toks)
        tok = Tok(ttype, "", 2 * i, 2 * i + 1)  # distinct places: a node's span names its tokens
        self.toks.append(tok)
        if ttype in JSON_EXTERNALS:
            self.payload = i  # (a candidate notes a payload's start before feeding it)
        return self.parser.feed(tok, self)

    def stage(self, since: int) -> Stage | None:
        """The nodes built and handed over since ``since`` fired nodes, and where the parser is."""
        for tok in self.toks:
            if id(tok) not in self.refs:
                self.refs[id(tok)] = len(self.refs)
                self.kept.append(tok)
        nodes: list[tuple[str, tuple[int, ...], int, int, int, int]] = []
        for node, n, _ in self.fired[since:]:
            if n != len(node.children):
                return None  # a node that grew after it was handed over
        roots = [n for n, _, _ in self.fired[since:]] + [v for v in self.parser.values if type(v) is Node]
        for root in roots:
            if not self._build(root, nodes):
                return None
        fired: list[tuple[int, int]] = []
        for node, _, payload in self.fired[since:]:
            fired.append((self.refs[id(node)], payload))
        values = []
        for v in self.parser.values:
            ref = self.refs.get(id(v))
            if ref is None:
                return None
            values.append(ref)
        return Stage(tuple(nodes), tuple(fired), tuple(self.parser.stack), tuple(values))

    def _build(self, node: Node, out: list[tuple[str, tuple[int, ...], int, int, int, int]]) -> bool:
        if id(node) in self.refs:
            return True
        refs = []
        take = self.lists.get(id(node.children), -1)
        for child in node.children:
            if type(child) is Node:
                if not self._build(child, out):
                    return False
            elif id(child) in self.splices:
                refs.append(self.splices[id(child)])
                take = -2 if take == -1 else take
                continue
            elif id(child) not in self.refs:
                return False  # a value the run did not make
            refs.append(self.refs[id(child)])
        start = _NO_REF if node.start is None else self._place(node.start)
        end = _NO_REF if node.end is None else self._place(node.end - 1)
        if start is None or end is None:
            return False
        self.refs[id(node)] = len(self.refs)
        self.kept.append(node)
        out.append((node.name, tuple(refs), start, end, node.size, take))
        return True

    def _place(self, at: int) -> int | None:
        i = at // 2
        return i if 0 <= i < len(self.toks) else None


def _splice(i: int, first: bool) -> int:
    """The ref of a placeholder child of the base's value ``i``: the first stands for all of
    the value's children, the second (a node of two or more) for none."""
    return -2 - 2 * i - (0 if first else 1)


def _merged(toks: int, first: Stage, then: Stage | None) -> Stage:
    """``first`` and ``then`` as one stage that builds only the nodes handed over or left on
    the stack (and their children)."""
    nodes = first.nodes + (then.nodes if then is not None else ())
    last = then if then is not None else first
    fired = first.fired + (then.fired if then is not None else ())
    need: set[int] = set()
    todo = [r for r, _ in fired if r >= toks] + [r for r in last.values if r >= toks]
    while todo:
        r = todo.pop()
        if r not in need:
            need.add(r)
            todo.extend(c for c in nodes[r - toks][1] if c >= toks)
    remap = {i: i for i in range(toks)}
    kept: list[tuple[str, tuple[int, ...], int, int, int, int]] = []
    for i, (name, refs, start, end, size, take) in enumerate(nodes):
        if toks + i in need:
            remap[toks + i] = toks + len(kept)
            kept.append((name, tuple(remap[r] if r >= 0 else r for r in refs), start, end, size, take))
    return Stage(tuple(kept), tuple((remap[r], p) for r, p in fired), last.stack, tuple(remap[r] for r in last.values))


#: The tokens a scanner reads (the others are markers the lexer matches).
SCANNED: Final = JSON_EXTERNALS | {TEXT}


def _planned(g: CompiledGrammar) -> bool:
    """Whether ``g`` reads no value as a quoted string (its scanner decides where such a
    value ends: the token-by-token reading)."""
    return not any(t.external and t.name not in SCANNED for t in g.terminals.values())


_PLACE: Final = Tok("", "", 0, 1)  # a placeholder value: a plan's stack is worked out without its nodes


class _Fired(NodeSink):
    """Whether the parser handed a node over."""

    __slots__ = ("any",)

    def __init__(self) -> None:
        self.any = False

    def on_node(self, node: Node) -> None:
        self.any = True


def root_plan(g: CompiledGrammar, opener: str, accepted: dict[Any, Any]) -> Plan | None:
    """The plan of a block that has read its opener."""
    fired = _Fired()
    parser = LRParser(g.tables, "start")
    if not _planned(g) or not parser.feed(Tok(opener, "", 0, 1), fired) or fired.any:
        return None  # (a node handed over as the opener was read: the candidate has it)
    return Plan((opener,), tuple(parser.stack), _next(g, parser, opener, accepted))


def child_plan(g: CompiledGrammar, plan: Plan, ttype: str, accepted: dict[Any, Any]) -> Plan | None:
    """The plan one token longer than ``plan``, or None when the parser refuses it."""
    parser = LRParser(g.tables, "start")
    parser.stack[:] = plan.stack
    parser.values[:] = [_PLACE] * (len(plan.stack) - 1)
    if not parser.feed(Tok(ttype, "", 0, 1)) or len(parser.stack) > 64:
        return None  # (the cursor caps a deep parse against max_depth)
    return Plan((*plan.types, ttype), tuple(parser.stack), _next(g, parser, ttype, accepted), plan.base)


def _next(g: CompiledGrammar, parser: LRParser, last: str, accepted: dict[Any, Any]) -> Lexicon | None:
    if parser.finished and last not in SCANNED:
        # a marker that finishes the parse ends the block (Cursor._finish); after a payload
        # or a text value the reading looks once more (Cursor._no_token)
        return None
    return lexicon_at(g, parser, accepted)


def ending_for(
    g: CompiledGrammar, types: tuple[str, ...], accepted: dict[Any, Any], base: Base | None
) -> Ending | None:
    """The parser's work for the whole sequence, run once on placeholder tokens."""
    dry = _Dry(g, base)
    lead = len(dry.toks)
    for t in types:
        if not dry.feed(t):
            return None  # (a plan is made only for sequences the parser reads)
    # the structures the tokens leave open, as a candidate notes them (after a chained
    # plan's base, the candidate's own count is asked: _open_left)
    probe = Cand(g, "start", 0, False, None, accepted)  # type: ignore[arg-type]
    probe.parser = dry.parser
    for tok in dry.toks[lead:]:
        probe.note(tok, g.terminals.get(tok.type))
    n = len(dry.toks)
    read = dry.stage(0)
    if read is None:
        return None
    if dry.parser.finished and types[-1] not in SCANNED:
        return Ending(read, _merged(n, read, None), False, _names(dry))
    open_left = bool(probe.open_closers())
    if not dry.parser.accepts(END):
        return Ending(read, None, open_left, _names(dry))  # the block cannot end here
    before = len(dry.fired)
    dry.parser.end(dry)
    ended = dry.stage(before)
    return None if ended is None else Ending(read, _merged(n, read, ended), open_left, _names(dry))


def _names(dry: _Dry) -> frozenset[str]:
    return frozenset(node.name for node, _, _ in dry.fired)


def shape_of(v: Any) -> Shape | Literal[False]:
    """How a plan stands for ``v``, a value on the parser's stack (see ``_Dry``): False when
    it cannot (a value with no place in the text, or a node whose one child is a node or
    has another place than the node: a reduction may put that child in its place)."""
    if v.start is None or v.end is None or v.start < 0 or v.end < 0:
        return False
    if type(v) is Tok:
        return None
    if type(v) is not Node:
        return False
    k = len(v.children)
    if k == 1:
        kid = v.children[0]
        if type(kid) is not Tok or kid.start != v.start or kid.end != v.end:
            return False
    return (v.name, v.size == k, min(k, 2))


def spliced(name: str, refs: tuple[int, ...], size: int, take: int, objs: list[Any], had: list[int]) -> Node:
    """A node of a chained plan whose children include those of a value on the stack it
    started from (``had``: how many that value had then): the value's own list taken over
    (``take``, as ``LRParser._reduce`` takes over a list rule's list) or copied in where
    the plan has its placeholder children."""
    kids: list[Any] = objs[take].children if take >= 0 else []
    own = had[take] if take >= 0 else 0  # the node's own children when LRParser makes it
    for i, r in enumerate(refs):
        if r >= 0:
            part = [objs[r]]
        else:
            v, second = divmod(-2 - r, 2)
            if v == take:
                continue  # (the list taken over)
            part = [] if second else objs[v].children[: had[v]]
        kids.extend(part)
        if i < size:
            own += len(part)
    node = Node(name, kids, None, None)
    node.size = own
    return node
