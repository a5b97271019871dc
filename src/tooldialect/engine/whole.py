"""Whole blocks: a block whose tokens are all in the window when its opener is found —
markers, bare tokens, strict JSON payloads and raw text values, in a grammar that reads no
value as a quoted string — is read in one step.

The candidate's own reading methods find each token (``_skip_ignored``, ``_longest``,
``_whole_payload``, and for a text value the text-values room's stop search,
``_next_stop``, at the parser stack the plan has there: the same terminals, tried the same
way, at the same places); what the step saves is the parser's work and the reading loop
around it.  For each token sequence met, the grammar's LALR parser is run once on
placeholder tokens (a *plan*, kept in a tree by token type): the nodes its reductions
build, which of them it hands to the candidate's ``_on_node``, and the stack it ends
with.  A block is then read by building those nodes from its real tokens and handing them
over in the same order, so the candidate's items are those the parser gives.  Anything
else — a token that may still grow, a payload that is not strict JSON or not whole, a text
value whose first stop does not surely end it, a block that cannot end where its tokens
do, unreadable text inside a structure still open, a body the reader refuses — is read
token by token (on a fresh candidate once the reader has seen the block); a block longer
than ``MAX_TOKENS`` has its first tokens read in one step and the rest token by token.
``Engine.whole_steps`` turns this and the payload step off; the differential tests
compare the two readings.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..grammar import JSON_EXTERNALS, CompiledGrammar, Terminal
from ..lalr import END, LRParser, Node, Tok
from .cand import Block, Cand, Lexicon, lexicon_at
from .kinds import Reading, Stop
from .values import TEXT

__all__ = ["WholeBlocks"]


class Stage(NamedTuple):
    """What the parser does as a run of tokens is fed: the nodes its reductions build (each
    ``(name, child refs, start ref, end ref, size)``; a ref is a token's place in the run,
    then a node's place after the tokens), which of them it hands over, in order, each with
    the last payload token read when it was (-1: none yet), and the stack and values it is
    left with (values as refs)."""

    nodes: tuple[tuple[str, tuple[int, ...], int, int, int], ...]
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
    sequences one token longer, and, once a block has ended here, its ``Ending``."""

    __slots__ = ("after", "ended", "ending", "lex", "stack", "types")

    def __init__(self, types: tuple[str, ...], stack: tuple[int, ...], lex: Lexicon | None) -> None:
        self.types = types
        self.stack = stack
        self.lex = lex
        self.after: dict[str, Plan | None] = {}
        self.ended = False  # whether ``ending`` was worked out (None: the parser refuses it)
        self.ending: Ending | None = None


class Plans:
    """A catalog's plans: a tree per grammar, by opener, and what has been spent on them."""

    __slots__ = ("made", "roots", "tokens")

    def __init__(self) -> None:
        self.roots: dict[str, dict[str, Plan | None]] = {}  # grammar -> opener type -> plan
        self.made = 0  # plans made
        self.tokens = 0  # tokens of the endings worked out


_NO_REF = -1
#: A block of more tokens than this is read token by token.
MAX_TOKENS = 128
#: Plans kept per catalog, and the tokens their endings hold in all; past either, new
#: sequences are read token by token (the plans already made stay).
MAX_PLANS = 4096
MAX_ENDING_TOKENS = 1 << 16


class _Dry:
    """The grammar's parser run on placeholder tokens, recording what it builds."""

    def __init__(self, g: CompiledGrammar) -> None:
        # (node, its children when handed over, the last payload token read by then)
        self.fired: list[tuple[Node, int, int]] = []
        self.payload = -1
        self.parser = LRParser(g.tables, "start", lambda n: self.fired.append((n, len(n.children), self.payload)))
        self.refs: dict[int, int] = {}  # id(token or node) -> ref
        self.toks: list[Tok] = []
        self.kept: list[Any] = []  # every token and node given a ref, kept alive (refs are by id)

    def feed(self, ttype: str) -> bool:
        i = len(self.toks)
        tok = Tok(ttype, "", 2 * i, 2 * i + 1)  # distinct places: a node's span names its tokens
        self.toks.append(tok)
        if ttype in JSON_EXTERNALS:
            self.payload = i  # (a candidate notes a payload's start before feeding it)
        return self.parser.feed(tok)

    def stage(self, since: int) -> Stage | None:
        """The nodes built and handed over since ``since`` fired nodes, and where the parser is."""
        for tok in self.toks:
            if id(tok) not in self.refs:
                self.refs[id(tok)] = len(self.refs)
                self.kept.append(tok)
        nodes: list[tuple[str, tuple[int, ...], int, int, int]] = []
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

    def _build(self, node: Node, out: list[tuple[str, tuple[int, ...], int, int, int]]) -> bool:
        if id(node) in self.refs:
            return True
        refs = []
        for child in node.children:
            if type(child) is Node:
                if not self._build(child, out):
                    return False
            elif id(child) not in self.refs:
                return False  # a value the run did not make
            refs.append(self.refs[id(child)])
        start = _NO_REF if node.start is None else self._place(node.start)
        end = _NO_REF if node.end is None else self._place(node.end - 1)
        if start is None or end is None:
            return False
        self.refs[id(node)] = len(self.refs)
        self.kept.append(node)
        out.append((node.name, tuple(refs), start, end, node.size))
        return True

    def _place(self, at: int) -> int | None:
        i = at // 2
        return i if 0 <= i < len(self.toks) else None


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
    kept = []
    for i, (name, refs, start, end, size) in enumerate(nodes):
        if toks + i in need:
            remap[toks + i] = toks + len(kept)
            kept.append((name, tuple(remap[r] for r in refs), start, end, size))
    return Stage(tuple(kept), tuple((remap[r], p) for r, p in fired), last.stack, tuple(remap[r] for r in last.values))


#: The tokens a scanner reads (the others are markers the lexer matches).
_SCANNED = JSON_EXTERNALS | {TEXT}


def _planned(g: CompiledGrammar) -> bool:
    """Whether ``g`` reads no value as a quoted string (its scanner decides where such a
    value ends: the token-by-token reading)."""
    return not any(t.external and t.name not in _SCANNED for t in g.terminals.values())


_PLACE = Tok("", "", 0, 1)  # a placeholder value: a plan's stack is worked out without its nodes


def _root(g: CompiledGrammar, opener: str, accepted: dict[Any, Any]) -> Plan | None:
    """The plan of a block that has read its opener."""
    fired: list[Node] = []
    parser = LRParser(g.tables, "start", fired.append)
    if not _planned(g) or not parser.feed(Tok(opener, "", 0, 1)) or fired:
        return None  # (a node handed over as the opener was read: the candidate has it)
    return Plan((opener,), tuple(parser.stack), _next(g, parser, opener, accepted))


def _child(g: CompiledGrammar, plan: Plan, ttype: str, accepted: dict[Any, Any]) -> Plan | None:
    """The plan one token longer than ``plan``, or None when the parser refuses it."""
    parser = LRParser(g.tables, "start")
    parser.stack[:] = plan.stack
    parser.values[:] = [_PLACE] * (len(plan.stack) - 1)
    if not parser.feed(Tok(ttype, "", 0, 1)) or len(parser.stack) > 64:
        return None  # (the cursor caps a deep parse against max_depth)
    return Plan((*plan.types, ttype), tuple(parser.stack), _next(g, parser, ttype, accepted))


def _next(g: CompiledGrammar, parser: LRParser, last: str, accepted: dict[Any, Any]) -> Lexicon | None:
    if parser.finished and last not in _SCANNED:
        # a marker that finishes the parse ends the block (Cursor._finish); after a payload
        # or a text value the reading looks once more (Cursor._no_token)
        return None
    return lexicon_at(g, parser, accepted)


def _ending(g: CompiledGrammar, types: tuple[str, ...], accepted: dict[Any, Any]) -> Ending | None:
    """The parser's work for the whole sequence, run once on placeholder tokens."""
    dry = _Dry(g)
    for t in types:
        if not dry.feed(t):
            return None  # (a plan is made only for sequences the parser reads)
    # the structures the tokens leave open, as a candidate notes them
    probe = Cand(g, "start", 0, False, None, accepted)  # type: ignore[arg-type]
    probe.parser = dry.parser
    for tok in dry.toks:
        probe.note(tok, g.terminals.get(tok.type))
    n = len(types)
    read = dry.stage(0)
    if read is None:
        return None
    if dry.parser.finished and types[-1] not in _SCANNED:
        return Ending(read, _merged(n, read, None), False, _names(dry))
    open_left = bool(probe.open_closers())
    if not dry.parser.accepts(END):
        return Ending(read, None, open_left, _names(dry))  # the block cannot end here
    before = len(dry.fired)
    dry.parser.end()
    ended = dry.stage(before)
    return None if ended is None else Ending(read, _merged(n, read, ended), open_left, _names(dry))


def _names(dry: _Dry) -> frozenset[str]:
    return frozenset(node.name for node, _, _ in dry.fired)


class WholeBlocks:
    """Reads a block that fits a plan in one step."""

    def _plan_after(self, g: CompiledGrammar, plan: Plan | None, ttype: str) -> Plan | None:
        """The plan one token longer than ``plan`` (None: the grammar's plan after its opener
        ``ttype``), made the first time it is met."""
        if plan is not None:
            after = plan.after
        else:
            roots = self._plans().roots
            after = roots.get(g.name)
            if after is None:
                after = roots[g.name] = {}
        got = after.get(ttype, after)
        if got is after:
            plans = self._plans()
            if plans.made >= MAX_PLANS:
                return None
            plans.made += 1
            accepted = self._accepted.setdefault(g.name, {})
            got = after[ttype] = _root(g, ttype, accepted) if plan is None else _child(g, plan, ttype, accepted)
        return got

    def _ending_of(self, g: CompiledGrammar, plan: Plan) -> Ending | None:
        if not plan.ended:
            plans = self._plans()
            if plans.tokens + len(plan.types) > MAX_ENDING_TOKENS:
                return None
            plans.tokens += len(plan.types)
            plan.ending = _ending(g, plan.types, self._accepted.setdefault(g.name, {}))
            plan.ended = True
        return plan.ending

    def _plans(self) -> Plans:
        got = self._stop_cache.get("whole blocks")
        if got is None:
            got = self._stop_cache["whole blocks"] = Plans()
        return got

    def _whole_block(self, b: Block, c: Cand) -> bool | None:
        """Read ``b`` (its one candidate ``c`` has read the opener) in one step when its text
        fits a plan: True when it did (``c`` is done, or waits for what follows the block's
        last token, as token-by-token reading leaves it); None when the text does not fit
        (``c`` untouched); False when it fits but the reader refused it (``c`` is spent:
        the caller reads the block with a new one)."""
        g = c.g
        if c.soft or c.whole or g.header.gated or self.specials is not None:
            # a tentative opener, a reply read whole, a registry-gated body, or token ids:
            # read token by token
            return None
        win, base = self.window.win, self.window.base
        n = len(win)
        cap = b.start + self.policy.max_block_chars
        start = self._plan_after(g, None, c.last_type)
        if start is None or start.lex is None:
            return None
        toks: list[tuple[Terminal, int, int]] = []
        lex: Lexicon | None = start.lex
        plan: Plan | None = None
        last = start
        at = pos = c.pos - base
        probe: Cand | None = None  # where a text value's stops are worked out
        while lex is not None:  # (None: the parse finished with the last token)
            # white space is part of a raw text value, else it is skipped
            pos = at if lex.text_ok else self._skip_ignored(c, at)
            if pos < 0:
                return None  # an ignored token still arriving
            if pos >= n:
                if lex.text_ok:
                    return None  # a value cut off before its first character, or yet to come
                break  # the end of the text (so far)
            terms = lex.at(win[pos])
            if not terms and not lex.text_ok:
                break  # nothing the parser accepts begins here: the block ends before this
            best, external, wait = self._longest(terms, win, pos)
            if wait:
                return None  # a token that may still grow
            if best is not None:
                term, end = best[2], best[0]
            elif external is not None and external.name in JSON_EXTERNALS:
                term, end = external, self._whole_payload(c, pos, cap)
                if end < 0:
                    return None  # not strict JSON, not whole yet, too deep, or past the cap
            elif external is not None:
                return None  # a quoted string: its scanner reads it
            elif lex.text_ok:
                if probe is None:
                    probe = Cand(g, c.rule, c.pos, False, c.reader, self._accepted.setdefault(g.name, {}))
                term, end = g.terminals[TEXT], self._text_value(b, probe, last, pos)
                if end < 0:
                    return None  # no stop that surely ends it: token by token
            else:
                break  # nothing the parser accepts: the block ends before this
            if base + end > cap:
                return None
            if len(toks) >= MAX_TOKENS:
                return self._first_part(b, c, start, toks)
            toks.append((term, pos, end))
            plan = last = self._plan_after(g, last, term.name)
            if plan is None:
                return None
            at = pos = end
            lex = plan.lex
        if plan is None:
            return None
        ending = self._ending_of(g, plan)
        if ending is None:
            return None
        if ending.whole is None and (pos < n or self.eof):
            return None  # the block cannot end here: the reading fails or goes on after damage
        if pos < n and plan.lex is not None and ending.open_left:
            return None  # unreadable text inside a structure still open: looked past for its closer
        if not ending.names.isdisjoint(c.reader.member_nodes):
            return None  # members read against the parser's stack as it was then
        return self._replay(b, c, plan, ending, toks, pos)

    def _text_value(self, b: Block, probe: Cand, plan: Plan, lp: int) -> int:
        """Where the raw text value at ``lp``, read after ``plan``'s tokens, ends: at the
        first stop that surely ends it, as ``_scan_text`` finds it (``probe`` stands where
        the candidate's parser would); -1 when no stop is found before the size cap or the
        end of the window, or the first that may end it is undecided (more text, the tool
        being called) or only a fallback (``Stop.MAYBE``)."""
        probe.parser.stack[:] = plan.stack
        probe.text_stops, probe.text_rx, probe.text_first = self._stops(probe)
        end = min(len(self.window.win), b.start + self.policy.max_block_chars + 1 - self.window.base)
        q, verdict, _ = self._next_stop(probe, lp, end, blind=True)
        return q if q >= 0 and verdict is Stop.YES else -1

    def _first_part(self, b: Block, c: Cand, start: Plan, toks: list[tuple[Terminal, int, int]]) -> bool | None:
        """A block of more than ``MAX_TOKENS`` tokens: its first ones read in one step, up
        to the last that is not a bare token (after which the token-by-token reading keeps
        no place where the block could have ended), and the rest token by token from there
        (``c`` left reading); None when there is no such token or its plan has no ending."""
        k = len(toks)
        while k > 0 and toks[k - 1][0].bare:
            k -= 1
        if k == 0:
            return None
        plan: Plan | None = start
        for term, _, _ in toks[:k]:  # (the plans made as the tokens were read)
            plan = plan.after.get(term.name) if plan is not None else None
        ending = None if plan is None else self._ending_of(c.g, plan)
        if plan is None or ending is None or not ending.names.isdisjoint(c.reader.member_nodes):
            return None
        return self._replay(b, c, plan, ending, toks[:k], toks[k - 1][2], part=True)

    def _replay(
        self,
        b: Block,
        c: Cand,
        plan: Plan,
        ending: Ending,
        read: list[tuple[Terminal, int, int]],
        pos: int,
        part: bool = False,
    ) -> bool:
        """Hand the plan's nodes, built from the block's tokens, to ``c`` as its parser
        would; True when ``c`` then stands as the token-by-token reading leaves it (``part``:
        the block goes on after these tokens, and ``c`` reads on from there)."""
        win, base = self.window.win, self.window.base
        at_end = pos >= len(win)
        objs: list[Any] = [Tok(c.last_type, self._slice(b.start, b.opener_end), b.start, b.opener_end)]
        payload_at = -1
        for term, start, end in read:
            objs.append(Tok(term.name, win[start:end], base + start, base + end))
            if term.external and payload_at < 0:
                payload_at = base + start
        # what _read_token and _begin_payload note as the tokens are read
        c.body_at = objs[1].start
        if c.payload_at < 0:
            c.payload_at = payload_at
        c.loose = None
        b.sniffed = 0
        waits = at_end and not self.eof and plan.lex is not None  # what follows is yet to come
        stage = ending.read if waits or part else ending.whole
        assert stage is not None
        for name, refs, start, end, size in stage.nodes:
            first = None if start < 0 else objs[start].start
            node = Node(name, [objs[r] for r in refs], first, None if end < 0 else objs[end].end)
            node.size = size
            objs.append(node)
        for ref, payload in stage.fired:
            c.json_start = objs[payload].start if payload >= 0 else -1
            c._on_node(objs[ref])
        c.parser.stack[:] = stage.stack
        c.parser.values[:] = [objs[r] for r in stage.values]
        for i, (term, _start, _end) in enumerate(read):
            if term.name in JSON_EXTERNALS:
                c.ext_type = term.name
                c.json_start = objs[i + 1].start
            c.note(objs[i + 1], c.g.terminals.get(term.name))
        c.pos = base + pos
        c.last_end = objs[len(read)].end
        if c.bad:
            return False  # the reader says this is no block of the family's
        if part:
            return True  # (c.state: Reading.RUN)
        if waits:
            c.state = Reading.WAIT
            return True
        if (at_end and not c.items) or c.named_begun > c.named_done:
            # the text ended after tokens that hold no call, or a call named but not
            # complete (cut off): token by token, where each such ending is judged
            return False
        if plan.lex is None:
            c.state = Reading.DONE  # the parse finished with the last token (Cursor._finish)
        else:
            self._done(c, trail=not at_end, at=base + pos)
        return True
