"""One family's reading of a block (a candidate), and the block its candidates share."""

from __future__ import annotations

import re
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Final, NamedTuple

from mypy_extensions import mypyc_attr

from ..argstream import StrictPrefix
from ..binding import Typed
from ..compiled_grammar import EXTERNALS, JSON_EXTERNALS, LINE_RULE, MAX_MARKER_WIDTH, CompiledGrammar, Terminal
from ..jsonscan import JsonScanner, Resume
from ..lalr import END, LRParser, Node, NodeSink, Tok
from ..markerpattern import Arriving
from ..records import Issue, RawCall, excerpt
from ..strscan import StringScanner
from ..transform import KEYED_RULE, Reader
from ..tree import node_text as _node_text
from .kinds import (
    NEVER,
    READING_DONE,
    READING_FAILED,
    READING_RUN,
    READING_WAIT,
    Channel,
    Failure,
    Item,
    Key,
    Kind,
    Phase,
    Reading,
    Resync,
    Source,
    key_of,
    named_key,
)
from .watches import Balance, LoopWatch
from .window import Held

__all__ = [
    "ArgStream",
    "Block",
    "Cand",
    "Failed",
    "Lexicon",
    "Resyncing",
    "TextValue",
    "body_closed",
    "failed",
    "furthest",
    "lexicon_at",
    "resumed",
]

_PAYLOAD_RULES: Final = frozenset({"json_calls", "bare_json_calls", KEYED_RULE})  # nodes read from a JSON token
_CALL_NODES: Final = ("call", "bare_call")
_FIRST: Final = itemgetter(0)


def resumed(ig: Terminal, text: str, pos: int) -> bool:
    """Whether an ignored token at ``pos`` (or its start) may still grow into a longer match
    once more text arrives.  Only bounded terminals are re-read (a comment, a split escape);
    unbounded white space is skipped as it comes, so a long run is never read twice."""
    pat = ig.marker
    if pat.max_width > MAX_MARKER_WIDTH:
        return False
    if pos < len(text) and pat.first is not None and text[pos] not in pat.first:
        return False  # it cannot begin here: nothing to wait for
    return pat.needs_more(text, pos)


def body_closed(c: Cand) -> bool:
    """Whether the last token a candidate read closed its body: a closer, or an opener of
    the block written again as its closer (``<|tool_call|>…<|tool_call|>``)."""
    last = c.last_type
    if c.rule == LINE_RULE:
        # a line on its own is closed by its line break: nothing but the end may follow
        return c.parser.expected() == [END]
    return last.endswith("_CLOSE") or any(t.name == last for t in c.g.openers.get(c.rule, ()))


class Lexicon:
    """The terminals a parser state accepts, indexed by the characters they may begin
    with: at a position only those that can begin with its character are tried (a
    terminal that cannot begin there neither matches nor may still grow there)."""

    __slots__ = ("terms", "text_ok", "by_char", "_listed")

    def __init__(self, terms: dict[str, Terminal]) -> None:
        self.terms = terms
        self.text_ok = "TEXT" in terms  # a raw text value may begin here
        # in accepted order (on a tie the first one read wins)
        self._listed = tuple(t for t in terms.values() if not t.external or t.name in EXTERNALS)
        # what at() found, per ASCII character (a reader in a hurry looks here first)
        self.by_char: dict[str, tuple[Terminal, ...]] = {}

    def at(self, ch: str) -> tuple[Terminal, ...]:
        """The terminals that may begin with ``ch``, in accepted order."""
        got = self.by_char.get(ch)
        if got is None:
            got = tuple(
                t
                for t in self._listed
                if (ch in EXTERNALS[t.name] if t.external else t.marker.first is None or ch in t.marker.first)
            )
            if ch < "\x80":  # memoised for ASCII only: the table stays small whatever the text
                self.by_char[ch] = got
        return got


def lexicon_at(g: CompiledGrammar, parser: LRParser, accepted: dict[tuple[int, ...], Lexicon]) -> Lexicon:
    """What ``parser`` (over ``g``) accepts now, indexed for lexing; ``accepted`` keeps the
    answer per parser stack (the same for every block of the grammar)."""
    key = tuple(parser.stack)
    got = accepted.get(key)
    if got is None:
        terms = {}
        for ttype in parser.expected():
            if ttype == END:
                continue
            term = g.terminals.get(ttype)
            if term is not None and parser.accepts(ttype):
                terms[ttype] = term
        got = accepted[key] = Lexicon(terms)
    return got


class Snapshot(NamedTuple):
    """Where a block could have ended before bare tokens (a name with no marker yet)."""

    stack: list[int]
    values: list[Any]
    items: int
    end: int


@dataclass(slots=True)
class TextValue:
    """A value written as raw text that a candidate is reading (values.py): where it began,
    the stops that may end it, and where it may end if nothing better comes."""

    start: int
    stops: tuple[Terminal, ...]
    rx: re.Pattern[str] | None  # one alternation of the stops (and escapes, where they count)
    # (where a stop may begin, the longest stop, which stops may still be arriving)
    first: tuple[re.Pattern[str] | None, int, Arriving]
    tentative: int | None  # a stop that ends it only if nothing better comes (Stop.MAYBE)

    # (these four records' __init__ written out, with the defaults: the one dataclasses
    # generates is interpreted code in the compiled build)
    def __init__(
        self,
        start: int,
        stops: tuple[Terminal, ...],
        rx: re.Pattern[str] | None,
        first: tuple[re.Pattern[str] | None, int, Arriving],
    ) -> None:
        self.start = start
        self.stops = stops
        self.rx = rx
        self.first = first
        self.tentative = None


@dataclass(slots=True)
class ArgStream:
    """JSON arguments followed as strict JSON, so that a stream can send them as they arrive
    (argstream.py): from where, fed up to where, whether the JSON is a payload of call
    objects (else the arguments themselves), and the call's item key."""

    prefix: StrictPrefix
    start: int
    fed: int
    objects: bool
    key: Key
    done: int  # call objects before this one were sent as far as they go

    def __init__(self, prefix: StrictPrefix, start: int, fed: int, objects: bool, key: Key) -> None:
        self.prefix = prefix
        self.start = start
        self.fed = fed
        self.objects = objects
        self.key = key
        self.done = 0


@dataclass(slots=True)
class Resyncing:
    """After damage in a block: where the candidate looks for a place to go on (cursor.py)."""

    at: int  # searching from here
    tok: int  # where the broken token began
    reason: str
    mode: Resync
    nest: Resume | None  # after a broken payload: where the next may begin

    def __init__(self, at: int, tok: int, reason: str, mode: Resync, nest: Resume | None = None) -> None:
        self.at = at
        self.tok = tok
        self.reason = reason
        self.mode = mode
        self.nest = nest


@dataclass(slots=True)
class Failed:
    """Why and where a candidate's reading failed."""

    pos: int  # where the token it failed at began
    kind: Failure
    reason: str
    at: int  # where the grammar stopped: the first character it could not take

    def __init__(self, pos: int, kind: Failure, reason: str, at: int) -> None:
        self.pos = pos
        self.kind = kind
        self.reason = reason
        self.at = at


@mypyc_attr(acyclic=True)
class Cand(NodeSink):
    """One family's parse of a block: its parser, where it reads, what it found."""

    __slots__ = (
        "g", "rule", "parser", "pos", "state", "scanner", "tok_start", "last_end", "soft", "items",
        "failed", "reader", "whole", "payload_at", "ext_type", "bad", "bad_reason", "trail", "resync",
        "text", "body_at", "named_begun", "named_done", "current_name", "args_read", "cut_json", "reach",
        "opens", "loose", "skip_at", "last_type", "stream", "cut_elem", "json_start", "opened_at",
        "_accepted", "ncalls",
    )  # fmt: skip

    def __init__(
        self,
        g: CompiledGrammar,
        rule: str,
        pos: int,
        soft: bool,
        reader: Reader,
        accepted: dict[tuple[int, ...], Lexicon] | None = None,
    ) -> None:
        self.g = g
        self.rule = rule
        self.reader = reader
        self.items: list[Item] = []  # in source order; see Kind
        self.ncalls = 0  # the CALL items among them (asked after every resync: kept, not counted)
        self.parser = LRParser(g.tables, rule)  # (its nodes go to on_node: shift passes self)
        self.pos = pos
        self.state = Reading.RUN
        self.last_end = pos
        self.soft = soft
        self.failed: Failed | None = None
        self.whole = rule == "reply" and g.header.reply == "whole"
        self.bad = False
        self.bad_reason = "the payload is not a call"
        self.trail = False  # ended at unexpected text before any closer
        # a payload an external scanner reads: the scanner, where the token began, its type
        self.scanner: JsonScanner | StringScanner | None = None
        self.tok_start = pos
        self.ext_type = ""
        self.payload_at: int | None = None  # where the first payload or text value began
        self.body_at: int | None = None  # where the first token after the opener begins
        self.skip_at: int | None = None  # where it first passed over text it could not read
        self.resync: Resyncing | None = None  # looking for where to go on after damage
        self.text: TextValue | None = None  # a raw text value being read
        self.stream: ArgStream | None = None  # the JSON arguments being read, as they come
        self.named_begun = 0  # calls announced by a name node
        self.named_done = 0  # calls completed by a call node
        self.current_name: str | None = None
        self.args_read = 0  # arguments (or parameters) read since the last announcement
        self.cut_json = False  # the cut fell inside a JSON payload (else in a text call)
        self.reach = pos  # where a failure was detected (not where a stream happened to stop)
        self.opens: dict[str, int] = {}  # X_OPEN read minus X_CLOSE read, per structure X
        self.loose: Snapshot | None = None
        self.last_type = ""  # the type of the last token read
        self.cut_elem = 0  # the call object of a payload the end of the text cut off
        # where the last JSON payload began: a payload's calls are keyed by it, so a broken
        # payload's announced call never lends its announcement to the next payload
        self.json_start: int | None = None
        self.opened_at: set[int] = set()  # where the parser read an opener as a token
        # the terminals accepted at a parser stack: the same for every block of a grammar
        self._accepted: dict[tuple[int, ...], Lexicon] = {} if accepted is None else accepted

    def shift(self, tok: Tok, term: Terminal | None) -> bool:
        """Feed a token, keeping track of which structures are open and of where the block
        could have ended before a run of bare tokens."""
        if term is not None and term.bare:
            # the block read something complete (not only an announced name) and could end here
            if self.loose is None and self._last_kind() not in (None, Kind.START) and self.parser.accepts(END):
                self.loose = tuple.__new__(
                    Snapshot, (list(self.parser.stack), list(self.parser.values), len(self.items), self.last_end)
                )
        else:
            self.loose = None  # a marker or a payload: the tokens since belong to the block
        if tok.type in JSON_EXTERNALS:
            self.json_start = tok.start
        ok = self.parser.feed(tok, self)
        self.note(tok, term)
        return ok

    def note(self, tok: Tok, term: Terminal | None) -> None:
        """What reading ``tok`` tells beside the parse: its type, and the structures it
        opens or closes."""
        self.last_type = tok.type
        if term is None:
            return
        if term.is_open:
            if tok.start is not None:
                self.opened_at.add(tok.start)
            key = term.stem
            self.opens[key] = self.opens.get(key, 0) + 1
        elif term.is_close and self.opens:
            # the innermost open structure this closer closes (X_CLOSE closes X and X_…):
            # the longest such stem still open, the first opened on a tie
            key = term.stem
            best: str | None = None
            for k, n in self.opens.items():
                if n > 0 and k.startswith(key) and (best is None or len(k) > len(best)):
                    best = k
            if best is not None:
                self.opens[best] -= 1

    def _last_kind(self) -> Kind | None:
        """The kind of the last item that is not a parameter (None when there is none)."""
        items = self.items
        for i in range(len(items) - 1, -1, -1):  # (from the last)
            kind: Kind = items[i].kind
            if kind is not Kind.PARAM:
                return kind
        return None

    def unloose(self) -> bool:
        """End the block where it could end, before bare tokens it cannot go on from
        (prose after the calls that begins like a name).  False when there is no such place."""
        if self.loose is None:
            return False
        stack, values, nitems, end = self.loose
        self.loose = None
        self.parser.restore(stack, values)
        del self.items[nitems:]
        self.ncalls = sum(1 for item in self.items if item.kind is Kind.CALL)
        self.pos = self.last_end = end
        return True

    def open_closers(self) -> list[Terminal]:
        """Closers the parser accepts now that close a structure still open."""
        out = []
        for t in self.g.closers:
            key = t.stem
            if any(k.startswith(key) and n > 0 for k, n in self.opens.items()) and self.parser.accepts(t.name):
                out.append(t)
        return out

    def accepted(self) -> dict[str, Terminal]:
        """The terminals the parser accepts now (exactly), by name."""
        return self.lexicon().terms

    @property
    def live(self) -> bool:
        """Whether it may still read on (``Reading.live`` of its state, asked at every step)."""
        state = self.state
        return state is READING_RUN or state is READING_WAIT

    def lexicon(self) -> Lexicon:
        """What the parser accepts now, indexed for lexing (the same for every block of the
        grammar at this parser state)."""
        got = self._accepted.get(tuple(self.parser.stack))  # (lexicon_at's look-up, first)
        return got if got is not None else lexicon_at(self.g, self.parser, self._accepted)

    # -- what the parser's reductions say --------------------------------------------------

    def on_node(self, node: Node) -> None:
        reader = self.reader
        name = node.name
        if name not in reader.reacting:
            return  # a node the reader neither announces, streams nor reads
        if name in reader.announcing:
            announced = reader.announce(node)
            if announced is not None:
                self._announce(node, announced)
                return
        if name == "param" or name == "arguments":
            self.args_read += 1
        if self.current_name is not None and name == "param":
            self.items.append(Item(Kind.PARAM, node, named_key(self.named_begun - 1)))
        elif self.current_name is not None and name in reader.members:
            member = reader.literal_member(node, self.parser.values)
            if member is not None:
                self.items.append(Item(Kind.PARAM, member, named_key(self.named_begun - 1)))
        read = reader.read(node)
        if read is None:
            return
        self.loose = None  # the bare tokens completed something
        calls, issues = read
        if self.g.header.gated:
            for call in calls:
                call.gated = True  # bound by exact name, never repaired
        if node.name in ("bare_json_calls", "bare_call") and not calls:
            self.bad = True  # a reply-anchored payload that is not a call: not a block at all
            return
        if len(calls) == 1 and not issues:  # (nothing to order)
            if name in _CALL_NODES and self.named_begun > self.named_done:
                key = self._named_key()  # (most calls: as _keys gives it, without its lists)
            else:
                key = self._keys(node, calls, issues)[0][0]
            self.items.append(Item(Kind.CALL, calls[0], key))
            self.ncalls += 1
            return
        call_keys, issue_keys = self._keys(node, calls, issues)
        # keep source order: issues and calls interleave by position
        merged = [(c.span[0], Item(Kind.CALL, c, k)) for c, k in zip(calls, call_keys)] + [
            (i.span[0] if i.span else -1, Item(Kind.ISSUE, i, k)) for i, k in zip(issues, issue_keys)
        ]
        merged.sort(key=_FIRST)  # (no function made here: none is made per node either)
        self.items.extend(item for _, item in merged)
        self.ncalls += len(calls)

    def _announce(self, node: Node, announced: str) -> None:
        if self.g.header.gated and announced not in self.reader.known:
            # a registry-gated body names only tools the toolset offers, exactly: this body
            # is not this family's (another family may read it)
            self.bad = True
            self.bad_reason = f"{excerpt(announced)!r} is not a tool the toolset offers"
            return
        self.current_name = announced
        # an id that names the call (Kimi's functions.NAME:IDX) is known already
        call_id = _node_text(node).strip() if node.name == "call_id" else None
        self.items.append(Item(Kind.START, (announced, call_id, node.end), named_key(self.named_begun)))
        self.named_begun += 1
        self.args_read = 0
        if self.rule == "start":
            # a tentative opener followed by a call's name is a call block after all:
            # from here a bad or cut-off body is reported, not shown
            self.soft = False

    def _keys(self, node: Node, calls: list[RawCall], issues: list[Issue]) -> tuple[list[Key], list[Key]]:
        """The keys of the calls and issues a node read: which announcement each belongs to."""
        if node.name in _CALL_NODES and self.named_begun > self.named_done:
            key = self._named_key()
            return [key] * len(calls), [key] * len(issues)
        if node.name in _CALL_NODES:
            key = key_of(Source.UNNAMED, self.pos if node.start is None else node.start)  # its name announced nothing
            self.current_name = None
            return [key] * len(calls), [key] * len(issues)
        if node.name not in _PAYLOAD_RULES and self.named_begun > self.named_done:
            # a body read whole (all or nothing) completes every call announced in it, in order
            first = self.named_done
            self.named_done = self.named_begun
            self.current_name = None
            return [named_key(first + i) for i in range(len(calls))], [named_key(first)] * len(issues)
        # a payload: its call objects are announced one by one (their place in it)
        at = self.json_start if self.json_start is not None else self.pos
        key = key_of(Source.PAYLOAD, at)
        return (
            [key_of(Source.PAYLOAD, at, c.elem) if c.elem >= 0 else key for c in calls],
            [key_of(Source.PAYLOAD, at, i.elem) if i.elem >= 0 else key for i in issues],
        )

    def _named_key(self) -> Key:
        """The key of the call whose name was announced first of those not read yet."""
        key = named_key(self.named_done)
        self.named_done += 1
        self.current_name = None
        return key

    # -- what it found -----------------------------------------------------------------------

    @property
    def junk(self) -> int:
        """Issues this candidate found in the block (fewer means it read the body better)."""
        return sum(1 for item in self.items if item.kind is Kind.ISSUE or item.kind is Kind.TEXT)

    @property
    def calls(self) -> int:
        return self.ncalls

    def call_items(self) -> list[Any]:
        return [item.obj for item in self.items if item.kind is Kind.CALL]

    def past_name(self) -> bool:
        """Whether it read a payload, or a token after the name it announced."""
        if self.payload_at is not None:
            return True
        end = self.reader.name_end(self.parser.values)
        return end is not None and self.last_end > end

    def has_issue(self) -> bool:
        return any(item.kind is Kind.ISSUE for item in self.items)

    def fail(self, pos: int, kind: Failure, reason: str, at: int | None = None) -> None:
        """The block is not (or no longer) this candidate's: its reading failed at the token
        that begins at ``pos``.  ``at`` (``pos`` when not given) is where the grammar stopped:
        the first character it could not take, inside that token when it is a payload; for a
        payload cut off by the end of the text, where the string it left open began (a closer
        before it was read as the payload's own text), else the end of the text."""
        self.state = Reading.FAILED
        self.failed = Failed(pos, kind, reason, pos if at is None else at)
        self.reach = max(self.reach, pos)

    @property
    def fail_kind(self) -> Failure | None:
        """Why it failed (None: it did not)."""
        failed = self.failed
        return None if failed is None else failed.kind

    @property
    def progress(self) -> int:
        """How far this candidate has read, the same at every chunking once it has stopped."""
        if self.state is READING_FAILED:
            return self.reach
        if self.state is READING_DONE:
            return max(self.last_end, self.reach)
        return max(self.pos, self.reach)


def failed(c: Cand) -> Failed:
    """Why and where ``c`` failed (asked only of a candidate that did)."""
    f = c.failed
    assert f is not None, "asked why a candidate failed before it did"
    return f


def furthest(cands: list[Cand]) -> int:
    """The greatest ``progress`` of ``cands``: asked of every block at every step, so one
    loop, not a property call and a generator step per candidate."""
    far = -1
    for c in cands:
        state = c.state
        p = c.reach
        if state is not Reading.FAILED:
            at = c.last_end if state is Reading.DONE else c.pos
            if at > p:
                p = at
        if p > far:
            far = p
    return far


@mypyc_attr(acyclic=True)
class Block:
    """A region that may hold calls, while its candidates decide."""

    __slots__ = (
        "start", "opener_end", "cands", "channel", "reply", "held", "early", "started", "emitted",
        "phase", "winner", "rpos", "sniffed", "sent", "leader", "absorb", "loop", "balance",
        "inline", "deferred", "waits", "typed",
    )  # fmt: skip

    def __init__(
        self, start: int, opener_end: int, cands: list[Cand], channel: Channel, reply: bool, tail: str
    ) -> None:
        self.start = start
        self.opener_end = opener_end
        self.cands = cands
        self.channel = channel
        self.reply = reply
        self.held = Held(start, tail)  # the block's text the window no longer keeps
        hard = [c for c in cands if not c.soft]
        # early events (a call announced before it completes) need one committed candidate;
        # with several, it is decided once the others have failed (see Ledger.update_early)
        self.early: bool | None = (True if len(cands) == 1 else None) if hard and channel is Channel.TEXT else False
        self.leader: Cand | None = cands[0] if self.early else None
        self.started: dict[Key, tuple[int, str]] = {}  # item key -> (call index, name)
        # item key -> (characters of arguments_json sent, held): what a started call's
        # ArgumentsDeltas have said so far; held calls send the rest when they end
        self.sent: dict[Key, tuple[int, bool]] = {}
        # item key -> the text parameters sent so far, typed (Binder.typed_value): the
        # binder types the call's parameters from these where they match
        self.typed: dict[Key, list[Typed]] = {}
        self.emitted = 0
        self.phase = Phase.LEX
        self.winner: Cand | None = None
        self.rpos = start  # where recovery, or prose quoting the format, reads on
        self.sniffed = 0
        self.absorb: int | None = None  # after a broken block's closer: where following closers are sought
        self.loop: LoopWatch | None = None  # the repetition-loop watch, when there is one
        # a payload deeper than max_depth: its brackets counted to find where it ends
        self.balance: Balance | None = None
        # a tag opened after prose on the same line: a zero-argument call in it may be the
        # prose quoting the format (Arbiter._quoted); decided only once the block is read
        self.inline = False
        # announcements held back in such a block until the call shows an argument
        self.deferred: dict[Key, tuple[str, str | None, int | None]] = {}
        # (emitted, end): the item after the first ``emitted`` ends at ``end``, past where
        # the loop watch has cleared; nothing is emitted early until it clears that far
        self.waits = (-1, 0)

    @property
    def loop_clear(self) -> int:
        """Items ending before this may be emitted: no loop begins before it."""
        return NEVER if self.loop is None else self.loop.clear

    def unheld(self) -> bool:
        """Whether the first item not emitted yet is not the one known to wait for the
        loop watch (asked before ``Ledger._early``, with an item not emitted yet)."""
        emitted, end = self.waits
        return emitted != self.emitted or self.loop is None or self.loop.clear >= end
