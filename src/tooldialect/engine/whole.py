"""Whole blocks: a block whose tokens are all in the window when its opener is found —
markers, bare tokens, strict JSON payloads and raw text values, in a grammar that reads no
value as a quoted string — is read in one step.

The candidate's own reading methods find each token (``_skip_ignored``, ``_longest``,
``_whole_payload``, and for a text value the text-values room's stop search,
``_next_stop``, at the parser stack the plan has there: the same terminals, tried the same
way, at the same places); what the step saves is the parser's work and the reading loop
around it.  For each token sequence met, the grammar's LALR parser is run once on
placeholder tokens (a *plan*, kept in a tree by token type): the nodes its reductions
build, which of them it hands to the candidate's ``on_node``, and the stack it ends
with.  A block is then read by building those nodes from its real tokens and handing them
over in the same order, so the candidate's items are those the parser gives.  Anything
else — a token that may still grow, a payload that is not strict JSON or not whole, a text
value whose first stop does not surely end it, a block that cannot end where its tokens
do, unreadable text inside a structure still open, a body the reader refuses, a block
opened once the end of the text is known — is read token by token (on a fresh candidate
once the reader has seen the block), and so are bare tokens that end the tokens read
(``Cand.shift`` notes where the block could have ended before them); a block longer
than ``MAX_TOKENS`` is read in chunks: each chunk's plan starts from the parser's stack
where the last one left it (a root kept by that stack and the shapes of the values on it,
``_chained_root``), so a block of many calls is read in one step all the way.
``Engine.whole_steps`` turns this and the payload step off; the differential tests
compare the two readings.
"""

from __future__ import annotations

from typing import Final, cast

from ..compiled_grammar import JSON_EXTERNALS, CompiledGrammar, Terminal
from ..lalr import Node, Tok
from .cand import Block, Cand, Lexicon
from .cursor import Cursor
from .kinds import Reading, Stop
from .plans import Ending, Plan, Plans, Shape, child_plan, ending_for, root_plan, shape_of, spliced
from .shared import Shared
from .values import TEXT, TextValues
from .window import Window

__all__ = ["Plans", "WholeBlocks"]

_PART: Final = "part"  # a chunk read, the block going on
#: A block of more tokens than this is read token by token.
MAX_TOKENS: Final = 128
#: Plans kept per catalog, and the tokens their endings hold in all; past either, new
#: sequences are read token by token (the plans already made stay).
MAX_PLANS = 4096
MAX_ENDING_TOKENS: Final = 1 << 16


class WholeBlocks:
    """Reads a block that fits a plan in one step."""

    __slots__ = ("shared", "limits", "window", "cursor", "values")

    def __init__(self, shared: Shared, window: Window, cursor: Cursor, values: TextValues) -> None:
        self.shared = shared
        self.limits = shared.limits
        self.window = window
        self.cursor = cursor
        self.values = values

    def _plan_after(self, g: CompiledGrammar, plan: Plan | None, ttype: str) -> Plan | None:
        """The plan one token longer than ``plan`` (None: the grammar's plan after its opener
        ``ttype``), made the first time it is met."""
        if plan is not None:
            after = plan.after
        else:
            roots = self._plans().roots
            known = roots.get(g.name)
            if known is None:
                known = roots[g.name] = {}
            after = known
        if ttype in after:
            return after[ttype]
        plans = self._plans()
        if plans.made >= MAX_PLANS:
            return None
        plans.made += 1
        accepted = self.shared.accepted(g)
        got = after[ttype] = root_plan(g, ttype, accepted) if plan is None else child_plan(g, plan, ttype, accepted)
        return got

    def _ending_of(self, g: CompiledGrammar, plan: Plan) -> Ending | None:
        if not plan.ended:
            plans = self._plans()
            if plans.tokens + len(plan.types) > MAX_ENDING_TOKENS:
                return None
            plans.tokens += len(plan.types)
            plan.ending = ending_for(g, plan.types, self.shared.accepted(g), plan.base)
            plan.ended = True
        return plan.ending

    def _plans(self) -> Plans:
        got = self.shared.cache.get("whole blocks")
        if got is None:
            got = self.shared.cache["whole blocks"] = Plans()
        return got

    def whole_block(self, b: Block, c: Cand) -> bool | None:
        """Read ``b`` (its one candidate ``c`` has read the opener) in one step when its text
        fits a plan: True when it did (``c`` is done, or waits for what follows the block's
        last token, as token-by-token reading leaves it); None when the text does not fit
        (``c`` untouched); False when it fits but the reader refused it (``c`` is spent:
        the caller reads the block with a new one)."""
        g = c.g
        if c.soft or c.whole or g.header.gated or self.window.specials is not None or self.window.eof:
            # a tentative opener, a reply read whole, a registry-gated body, token ids, or a
            # block opened once the end of the text is known (after a block decided at
            # close()): read token by token, where the end of the text is judged
            return None
        start = self._plan_after(g, None, c.last_type)
        if start is None or start.lex is None:
            return None
        got = self._read_from(b, c, start)
        while got is _PART:
            # the block goes on past a plan's tokens: the next chunk from the parser's stack
            # there (and where it does not fit, token by token from there)
            start = self._chained_root(c)
            got = True if start is None or start.lex is None else self._read_from(b, c, start)
            if got is None:
                return True  # (c stands where the last chunk left it, reading on)
        assert not isinstance(got, str)  # (every part was read on)
        return got

    def _read_from(self, b: Block, c: Cand, start: Plan) -> bool | str | None:
        """Read the block on from ``start`` (``c`` stands there) as ``_whole_block`` does;
        ``_PART`` when the first ``MAX_TOKENS`` tokens were read and the block goes on."""
        g = c.g
        win, base = self.window.win, self.window.base
        n = len(win)
        cap = b.start + self.limits.max_block_chars
        terms: list[Terminal] = []  # the tokens read, and their terminals
        toks: list[Tok] = []
        lex: Lexicon | None = start.lex
        plan: Plan | None = None
        last = start
        at = pos = c.pos - base
        probe: Cand | None = None  # where a text value's stops are worked out
        ig_first = g.ignore_first
        while lex is not None:  # (None: the parse finished with the last token)
            # white space is part of a raw text value, else it is skipped (where it can begin)
            if lex.text_ok or (ig_first is not None and at < n and win[at] not in ig_first):
                pos = at
            else:
                pos = self.cursor.skip_ignored(c, at)
            if pos < 0:
                return None  # an ignored token still arriving
            if pos >= n:
                if lex.text_ok:
                    return None  # a value cut off before its first character, or yet to come
                break  # the end of the text (so far)
            ch = win[pos]
            tried = lex.by_char.get(ch)
            if tried is None:
                tried = lex.at(ch)
            if not tried and not lex.text_ok:
                if not toks:
                    # where c stands, nothing it accepts begins: what its next token-by-token
                    # step finds there (Cursor._read_token), found now (most candidates of
                    # the families that share an opener end here)
                    c.pos = base + pos
                    self.cursor.unexpected(c, pos)
                    return True
                break  # nothing the parser accepts begins here: the block ends before this
            if tried:
                end, best, external, wait = self.cursor.longest(tried, win, pos)
            else:  # (a raw text value, nothing else, may begin here)
                end, best, external, wait = pos, None, None, False
            if wait:
                return None  # a token that may still grow
            if best is not None:
                term = best
            elif external is not None and external.name in JSON_EXTERNALS:
                term, end = external, self.cursor.whole_payload(c, pos, cap)
                if end < 0:
                    return None  # not strict JSON, not whole yet, too deep, or past the cap
            elif external is not None:
                return None  # a quoted string: its scanner reads it
            elif lex.text_ok:
                if probe is None:
                    probe = Cand(g, c.rule, c.pos, False, c.reader, self.shared.accepted(g))
                term, end = g.terminals[TEXT], self._text_value(b, probe, last, pos)
                if end < 0:
                    return None  # no stop that surely ends it: token by token
            elif not toks:
                c.pos = base + pos  # (as where nothing it accepts begins, above)
                self.cursor.unexpected(c, pos)
                return True
            else:
                break  # nothing the parser accepts: the block ends before this
            if base + end > cap:
                return None
            if len(toks) >= MAX_TOKENS:
                return self._first_part(b, c, start, terms, toks)
            terms.append(term)
            toks.append(Tok(term.name, win[pos:end], base + pos, base + end))
            plan = last.after.get(term.name) or self._plan_after(g, last, term.name)
            if plan is None:
                return None
            last = plan
            at = pos = end
            lex = plan.lex
        return self._read_to(b, c, start, plan, terms, toks, pos)

    def _read_to(
        self, b: Block, c: Cand, start: Plan, plan: Plan | None, terms: list[Terminal], toks: list[Tok], pos: int
    ) -> bool | str | None:
        """``_read_from``'s end: the tokens read from ``start`` (``plan`` is theirs), up to
        ``pos`` in the window, handed to ``c`` when the block may end there."""
        if terms and terms[-1].bare:
            # bare tokens last (words after a complete call, a name still arriving): those
            # before them in one step, these token by token, where Cand.shift notes where the
            # block could have ended before them (its ``loose`` snapshot: the words are prose
            # if the block ends on them)
            return self._first_part(b, c, start, terms, toks)
        if plan is None:
            return None
        n = len(self.window.win)
        ending = self._ending_of(c.g, plan)
        if ending is None:
            return None
        if ending.whole is None and (pos < n or self.window.eof):
            return None  # the block cannot end here: the reading fails or goes on after damage
        if (
            pos < n
            and plan.lex is not None
            and (ending.open_left if plan.base is None else self._open_left(c, plan, terms))
        ):
            return None  # unreadable text inside a structure still open: looked past for its closer
        if not ending.names.isdisjoint(c.reader.members):
            return None  # members read against the parser's stack as it was then
        return self._replay(b, c, plan, ending, terms, toks, pos)

    def _text_value(self, b: Block, probe: Cand, plan: Plan, lp: int) -> int:
        """Where the raw text value at ``lp``, read after ``plan``'s tokens, ends: at the
        first stop that surely ends it, as ``_scan_text`` finds it (``probe`` stands where
        the candidate's parser would); -1 when no stop is found before the size cap or the
        end of the window, or the first that may end it is undecided (more text, the tool
        being called) or only a fallback (``Stop.MAYBE``)."""
        probe.parser.stack[:] = plan.stack
        if plan.stops is None:
            plan.stops = self.values.stops(probe)
        text = self.values.begin(probe, self.window.base + lp, plan.stops)
        end = min(len(self.window.win), b.start + self.limits.max_block_chars + 1 - self.window.base)
        q, verdict, _ = self.values.next_stop(probe, text, lp, end, blind=True, follows=plan.follows)
        return q if q >= 0 and verdict is Stop.YES else -1

    def _open_left(self, c: Cand, plan: Plan, terms: list[Terminal]) -> bool:
        """Whether a structure is still open after a chained ``plan``'s tokens: as ``c``
        counts them, with the tokens noted on a probe that stands there (a plan from an
        opener knows: ``Ending.open_left``)."""
        probe = Cand(c.g, c.rule, c.pos, False, c.reader, self.shared.accepted(c.g))
        probe.opens = dict(c.opens)
        probe.parser.stack[:] = plan.stack
        for term in terms:
            probe.note(Tok(term.name, "", -1, -1), term)
        return bool(probe.open_closers())

    def _chained_root(self, c: Cand) -> Plan | None:
        """The plan that starts where ``c``'s parser stands (after a chunk), made the first
        time that stack and the shapes of its values are met; None when a value is of no
        shape a plan stands for (``plans.shape_of``) or past the budget."""
        parser = c.parser
        if parser.finished or len(parser.stack) > 64:
            return None
        shapes: list[Shape] = []
        for v in parser.values:
            shape = shape_of(v)
            if shape is False:
                return None
            shapes.append(shape)
        base = (tuple(parser.stack), tuple(shapes))
        plans = self._plans()
        key = (c.g.name, base)
        if key in plans.chained:
            return plans.chained[key]
        if plans.made >= MAX_PLANS:
            return None
        plans.made += 1
        got = plans.chained[key] = Plan((), base[0], c.lexicon(), base)
        return got

    def _first_part(self, b: Block, c: Cand, start: Plan, terms: list[Terminal], toks: list[Tok]) -> bool | str | None:
        """A block of more than ``MAX_TOKENS`` tokens, or whose tokens end in bare ones:
        its tokens read in one step up to the last that is not a bare token (after which
        the token-by-token reading keeps no place where the block could have ended), ``c``
        left reading on from there (``_PART``); None when there is no such token or its
        plan has no ending."""
        k = len(terms)
        while k > 0 and terms[k - 1].bare:
            k -= 1
        if k == 0:
            return None
        plan: Plan | None = start
        for term in terms[:k]:  # (the plans made as the tokens were read)
            plan = plan.after.get(term.name) if plan is not None else None
        ending = None if plan is None else self._ending_of(c.g, plan)
        if plan is None or ending is None or not ending.names.isdisjoint(c.reader.members):
            return None
        if not self._replay(b, c, plan, ending, terms[:k], toks[:k], toks[k - 1].end - self.window.base, part=True):
            return False
        return _PART

    def _replay(
        self,
        b: Block,
        c: Cand,
        plan: Plan,
        ending: Ending,
        terms: list[Terminal],
        toks: list[Tok],
        pos: int,
        part: bool = False,
    ) -> bool:
        """Hand the plan's nodes, built from the block's tokens, to ``c`` as its parser
        would; True when ``c`` then stands as the token-by-token reading leaves it (``part``:
        the block goes on after these tokens, and ``c`` reads on from there)."""
        base = self.window.base
        at_end = pos >= len(self.window.win)
        if plan.base is None:
            objs: list[Tok | Node] = [Tok(c.last_type, self.window.slice(b.start, b.opener_end), b.start, b.opener_end)]
            lead = 1
        else:
            objs = list(c.parser.values)  # a chained plan's refs begin with the stack's values
            lead = len(objs)
        objs.extend(toks)
        # what _read_token and _begin_payload note as the tokens are read
        if plan.base is None:
            c.body_at = objs[1].start
        if c.payload_at is None:
            c.payload_at = next((tok.start for tok, term in zip(toks, terms) if term.external), None)
        c.loose = None
        b.sniffed = 0
        waits = at_end and not self.window.eof and plan.lex is not None  # what follows is yet to come
        stage = ending.read if waits or part else ending.whole
        assert stage is not None
        # the children each value on a chained plan's stack has before the plan's nodes take over its list
        had = [len(v.children) if type(v) is Node else 0 for v in objs[:lead]] if plan.base is not None else []
        for name, refs, start, end, size, take in stage.nodes:
            first = None if start < 0 else objs[start].start
            if take == -1:
                node = Node(name, [objs[r] for r in refs], first, None if end < 0 else objs[end].end)
                node.size = size
            else:
                node = spliced(name, refs, size, take, objs, had)
                node.start, node.end = first, None if end < 0 else objs[end].end
            objs.append(node)
        json_start = c.json_start  # the last payload read before these tokens
        reacts = c.reader.reacting  # (Cand.on_node's own first test, asked before the call)
        for ref, payload in stage.fired:
            c.json_start = objs[payload].start if payload >= 0 else json_start
            if (fired := cast(Node, objs[ref])).name in reacts:  # (a node the plan's parser gave)
                c.on_node(fired)
        c.parser.stack[:] = stage.stack
        c.parser.values[:] = [objs[r] for r in stage.values]
        last = len(terms) - 1
        for i, term in enumerate(terms):
            if term.external and term.name in JSON_EXTERNALS:
                c.ext_type = term.name
                c.json_start = toks[i].start
            if term.is_open or term.is_close or i == last:  # (else note() only sets last_type)
                c.note(toks[i], term)  # (the grammar's own terminal, as read)
        c.pos = base + pos
        c.last_end = toks[last].end
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
            self.cursor.done(c, trail=not at_end, at=base + pos)
        return True
