"""What a compiled grammar is: its terminals, with the roles their names and patterns
give them, the LALR tables and node names it compiles to, and the names of the
conventions (``grammar.py`` compiles one from its source, ``prebuilt.py`` reads one built
ahead of time; the engine, the readers and the writers read it).  Nothing here imports
lark."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Final, Protocol

from .errors import GrammarError
from .header import Header
from .lalr import Tables
from .markerpattern import ASCII, NO_MARKER, MarkerPattern

__all__ = [
    "CALL_PAYLOADS",
    "CANONICAL",
    "CLOSE_SUFFIX",
    "EXTERNALS",
    "FURNITURE_PREFIX",
    "JSON_EXTERNALS",
    "LINE_RULE",
    "MAX_MARKER_WIDTH",
    "OPEN_SUFFIX",
    "RAW_TEXT",
    "REPLY_FURNITURE",
    "START_RULES",
    "CompiledGrammar",
    "NodeReads",
    "Terminal",
    "assign_roles",
]

#: External terminals the engine knows how to scan (``%declare``d in grammars), with the
#: characters each can begin with.
EXTERNALS: Final[dict[str, str]] = {
    "JSON": "{[",
    "JSON_OBJECT": "{",
    "JSON_ARRAY": "[",
    "PY_STRING": "'\"",
    "BACKTICK_STRING": "`",
}
#: The externals that are JSON payloads (call objects or arguments); the others are
#: values inside a call the grammar spells (a quoted string literal).
JSON_EXTERNALS: Final = frozenset({"JSON", "JSON_OBJECT", "JSON_ARRAY"})
#: The nodes whose JSON token holds call objects (``{"name": …, "arguments": …}``, an array
#: of them, a tool's name as the key) rather than a call's arguments.
CALL_PAYLOADS: Final = frozenset({"json_calls", "bare_json_calls", "keyed_json_calls"})
#: The raw-text scanner: everything up to the marker the grammar accepts next.
RAW_TEXT: Final = "TEXT"

#: The longest a marker may be; keeps hold-back and partial-match checks bounded.
MAX_MARKER_WIDTH: Final = 512

START_RULES: Final = ("start", "reply", "line")
#: The rule tried where a visible line begins (registry-gated grammars only).
LINE_RULE: Final = "line"
#: Furniture recognised only at the first visible character of the reply (a header the
#: prompt left open, which would be ordinary words anywhere else).
REPLY_FURNITURE: Final = "FURNITURE_REPLY_"
#: The written spelling of a marker that reads several (``CANONICAL_TOOL_CALL_OPEN``):
#: named by ``// write`` lines, read by no rule.
CANONICAL: Final = "CANONICAL_"

OPEN_SUFFIX: Final = "_OPEN"
CLOSE_SUFFIX: Final = "_CLOSE"
FURNITURE_PREFIX: Final = "FURNITURE_"


@dataclass(frozen=True)
class Terminal:
    """A terminal of a compiled grammar, with the roles its name and pattern give it
    (the conventions in this module's docstring), worked out once when it is made."""

    name: str
    pattern: MarkerPattern | None  # None for an external (scanned) terminal
    grammar: str
    # derived from the above
    external: bool = field(init=False, repr=False, compare=False)  # scanned, not matched
    soft: bool = field(init=False, repr=False, compare=False)  # SOFT_…: a tentative opener
    is_open: bool = field(init=False, repr=False, compare=False)  # X_OPEN: opens structure X
    is_close: bool = field(init=False, repr=False, compare=False)  # X_CLOSE, FURNITURE_X_CLOSE: closes X
    stem: str = field(init=False, repr=False, compare=False)  # X: without FURNITURE_ and _OPEN or _CLOSE
    # a name-like token: a pattern that is not a literal, neither an opener nor a closer
    bare: bool = field(init=False, repr=False, compare=False)
    # the pattern, never None: an external terminal's matches nothing (markers.NO_MARKER)
    marker: MarkerPattern = field(init=False, repr=False, compare=False)
    # a place of every match and the characters it may hold there, which tells this
    # terminal from others of its grammar that begin alike (``assign_roles``): text whose
    # character there is not one of them is no match, found without trying the pattern
    probe: tuple[int, frozenset[str]] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        name = str(self.name)  # never a lark Token: names are compared per token
        pattern = self.pattern
        is_open = name.endswith(OPEN_SUFFIX)
        is_close = name.endswith(CLOSE_SUFFIX)
        stem = name.removeprefix(FURNITURE_PREFIX)
        stem = stem[: -len(OPEN_SUFFIX)] if is_open else stem[: -len(CLOSE_SUFFIX)] if is_close else stem
        set_ = object.__setattr__
        set_(self, "name", name)
        set_(self, "external", pattern is None)
        set_(self, "soft", name.startswith("SOFT_"))
        set_(self, "is_open", is_open)
        set_(self, "is_close", is_close)
        set_(self, "stem", stem)
        set_(self, "bare", pattern is not None and pattern.literal is None and not (is_open or is_close))
        set_(self, "marker", NO_MARKER if pattern is None else pattern)
        set_(self, "probe", None)

    @property
    def closer(self) -> bool:
        return self.is_close


@dataclass
class CompiledGrammar:
    name: str
    header: Header
    path: Path
    terminals: dict[str, Terminal]
    ignore: tuple[Terminal, ...]
    tables: Tables
    starts: tuple[str, ...]
    openers: dict[str, tuple[Terminal, ...]] = field(default_factory=dict)
    closers: tuple[Terminal, ...] = ()
    reasoning: tuple[tuple[Terminal, Terminal], ...] = ()
    furniture: tuple[Terminal, ...] = ()
    reply_furniture: tuple[Terminal, ...] = ()  # FURNITURE_REPLY_…: framing only where the reply begins
    quotes: tuple[str, ...] = ()  # QUOTE_… terminals: strings that stand for " inside JSON
    nodes: frozenset[str] = frozenset()  # the node names its rules build (conventional names included)
    # what each rule alternative that builds a node holds: (node name, the node names and
    # kept terminal names its children may have, inlined rules and collapses followed)
    holds: tuple[tuple[str, frozenset[str]], ...] = ()
    # the characters an ignored token may begin with (None: any)
    ignore_first: frozenset[str] | None = field(init=False)
    # whether a JSON payload may hold call objects (a node of CALL_PAYLOADS): a reader then
    # asks where their members lie
    call_payloads: bool = field(init=False)

    def __post_init__(self) -> None:
        first: frozenset[str] | None = frozenset()
        for ig in self.ignore:
            can_begin = ig.pattern.first if ig.pattern is not None else None  # a scanned one: anything
            if first is None or can_begin is None:
                first = None
                break
            first = first | can_begin
        self.ignore_first = first
        self.call_payloads = not self.nodes.isdisjoint(CALL_PAYLOADS)


class NodeReads(Protocol):
    """What a reader reads of a parse tree, by node name (``transform.Reader`` and the
    family readers declare it; docs/authoring.md, "Rule names the generic transformer
    reads")."""

    #: nodes that yield calls
    call_nodes: ClassVar[frozenset[str]]
    #: every node the reader reads: the call nodes and the parts it reads in them
    read_nodes: ClassVar[frozenset[str]]
    #: nodes whose children the reader picks by name (a child node it does not read is
    #: dropped), each with the children one of which it must hold (a call's ``name``)
    picked_nodes: ClassVar[Mapping[str, frozenset[str]]]


def assign_roles(compiled: CompiledGrammar) -> None:
    """What each terminal is to the engine: openers of each start rule, closers,
    reasoning pairs, furniture, quote strings; and no used terminal too wide to hold back."""
    header = compiled.header
    terminals = compiled.terminals
    actions = compiled.tables.actions
    for start in compiled.starts:
        first = actions[compiled.tables.start_states[start]]
        openers = tuple(terminals[k] for k in first if k in terminals)
        if start == "start":
            for term in openers:
                _check_opener(term, header.family)
        compiled.openers[start] = openers
    # CANONICAL_… terminals are spellings the writer uses (render_call), read by no rule
    compiled.closers = tuple(
        t for t in terminals.values() if t.closer and t.pattern is not None and not t.name.startswith(CANONICAL)
    )
    compiled.reasoning = _pairs(terminals, header.family)
    compiled.furniture = tuple(
        t for n, t in terminals.items() if n.startswith(FURNITURE_PREFIX) and not n.startswith(REPLY_FURNITURE)
    )
    compiled.reply_furniture = tuple(t for n, t in terminals.items() if n.startswith(REPLY_FURNITURE))
    quotes = []
    for name, term in terminals.items():
        if name.startswith("QUOTE_"):
            if term.pattern is None or term.pattern.literal is None or term.pattern.ignorecase:
                raise GrammarError(f"grammar {header.family!r}: {name} must be a plain string")
            quotes.append(term.pattern.literal)
    compiled.quotes = tuple(sorted(quotes, key=len, reverse=True))
    used = {sym for acts in actions for sym in acts}
    for term in terminals.values():
        object.__setattr__(term, "probe", _probe(term, terminals.values()))
    for term in terminals.values():
        wide = term.pattern is not None and term.pattern.max_width > MAX_MARKER_WIDTH
        if wide and term.name in used and term not in compiled.ignore:
            raise GrammarError(
                f"grammar {header.family!r}: terminal {term.name} can match more than "
                f"{MAX_MARKER_WIDTH} characters; bound its repetitions (long content belongs "
                f"to a %declare'd scanner such as JSON)"
            )


def _probe(term: Terminal, terminals: Iterable[Terminal]) -> tuple[int, frozenset[str]] | None:
    """The place (after the first) where ``term``'s matches differ from those of the most
    other terminals that may begin with the same character (the first such place on a
    tie), and the ASCII characters no match of ``term`` holds there (``markers.places``);
    None when no place tells it from any of them."""
    mine = term.marker.places
    first = term.marker.first
    rivals = [
        t.marker.places
        for t in terminals
        if t is not term
        and not t.external
        and (first is None or t.marker.first is None or not first.isdisjoint(t.marker.first))
    ]
    best: tuple[int, frozenset[str]] | None = None
    told = 0
    for k in range(1, len(mine)):
        chars = mine[k]
        if chars is None:
            continue
        n = sum(
            1 for theirs in rivals if k < len(theirs) and (other := theirs[k]) is not None and chars.isdisjoint(other)
        )
        if n > told:
            best, told = (k, ASCII - chars), n
    return best


def _pairs(terminals: dict[str, Terminal], owner: str) -> tuple[tuple[Terminal, Terminal], ...]:
    pairs = []
    for name, term in terminals.items():
        if name.startswith("REASONING_OPEN_"):
            key = name[len("REASONING_OPEN_") :]
            close = terminals.get("REASONING_CLOSE_" + key)
            if close is None:
                raise GrammarError(f"grammar {owner!r}: {name} has no REASONING_CLOSE_{key}")
            pairs.append((term, close))
    return tuple(pairs)


def _check_opener(term: Terminal, family: str) -> None:
    if term.external:
        raise GrammarError(
            f"grammar {family!r}: rule 'start' begins with the scanned terminal {term.name}; "
            f"a block must begin with a marker (use a 'reply' rule for replies that open with a payload)"
        )
    if term.pattern is not None and term.pattern.first is None:
        raise GrammarError(f"grammar {family!r}: opener {term.name} can begin with too many characters to scan for")
