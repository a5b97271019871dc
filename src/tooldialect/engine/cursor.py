"""The candidate cursor: each candidate reads the block's text token by token, as its
grammar accepts them — terminals by longest match, payloads through external scanners
(JSON, quoted strings), text values (values.py) — and resynchronises after damage.
It writes the reading fields of a ``Cand`` (``pos``, ``state``, ``scanner``, ``stream``,
``resync``, ``body_at``, ``payload_at``)."""

from __future__ import annotations

import json
import re
from typing import Any, Final

from ..argstream import StrictPrefix
from ..compiled_grammar import EXTERNALS, JSON_EXTERNALS, CompiledGrammar, Terminal
from ..jsonscan import CUT, DONE, MORE, JsonScanner, Resume, depth_exceeds, strict_value_at
from ..jsonspans import Spans, strict_object_at
from ..lalr import END, Tok
from ..records import ARGUMENT_KEYS, NAME_KEYS, Issue, excerpt
from ..strscan import StringScanner
from .cand import ArgStream, Block, Cand, Resyncing, body_closed, resumed
from .kinds import PHASE_LEX, READING_WAIT, Failure, Item, Kind, Reading, Resync, Source, key_of, named_key
from .ledger import Ledger
from .shared import Shared
from .values import ESCAPE_GROUP, TEXT, TextValues
from .window import Window

__all__ = ["Cursor"]
_UNEXPECTED: Final[dict[str, str]] = {}  # a failure's reason per ASCII character (shared openers' blocks)
_NON_WS: Final = re.compile(r"\S")

#: The first piece of a payload the whole-payload reader decodes, how much larger each try is;
#: a payload that begins before ``_IN_PLACE`` in the window is decoded in place.
_FIRST_PIECE: Final = 1024
_GROWTH: Final = 8
_IN_PLACE: Final = 16384
#: How a call object begins as models write it: such a payload, where the grammar reads call
#: objects, is decoded member by member (its reader then knows where each lies), others whole.
_CALL_OBJECT: Final = tuple('{"' + key + '"' for key in (*NAME_KEYS, "function", "tool_calls", "tool_call"))


def _decode_end(win: str, lp: int, members: bool) -> tuple[int, Any, Spans | None]:
    """Where the strict JSON value at ``lp`` ends, and the value (as ``loads_strict`` reads
    it); -1 when it is not one.  ``members``: an object is read member by member, the spans
    of its members' values third (``strict_object_at``).

    Past ``_IN_PLACE`` (before it, in place) it decodes growing pieces from ``lp``: a failure
    costs the decoder a count of the lines before it, which over the window would be quadratic
    in a block of many broken payloads.  A piece that fails only where it was cut (an open
    string, a value at its end) is tried again larger, so the work stays within a constant
    factor of what the decoder reads.
    """
    size, in_place = _FIRST_PIECE, lp < _IN_PLACE and not members  # (in place: a failure counts few lines)
    while True:
        piece, at = (win, lp) if in_place else (win[lp : lp + size], 0)
        if members:
            got = strict_object_at(piece, 0)
            if got is not None:
                return lp + got[1], got[0], got[2]
        try:
            value, end = strict_value_at(piece, at)
            return lp + end - at, value, None
        except RecursionError:
            return -1, None, None
        except json.JSONDecodeError as err:
            cut = err.msg.startswith("Unterminated string") or err.pos >= len(piece) - 8
            if in_place or not cut or lp + size >= len(win):
                return -1, None, None
        except ValueError:  # NaN, Infinity, a number past the float range
            return -1, None, None
        size *= _GROWTH


class Cursor:
    """Moves each candidate through the block's text."""

    __slots__ = ("shared", "policy", "limits", "cat", "window", "ledger", "values")

    def __init__(self, shared: Shared, window: Window, ledger: Ledger, values: TextValues) -> None:
        self.shared = shared
        self.policy = shared.policy
        self.limits = shared.limits
        self.cat = shared.cat
        self.window = window
        self.ledger = ledger
        self.values = values

    def string_run(self, b: Block, delta: str) -> bool:
        """A delta that only continues a value the block's one candidate is reading (its
        only one, or the leader once every other has failed), with nothing in it to note:
        the reading steps of _advance and _loop_scan taken whole.
        That is a JSON string (plain characters and two-character escapes, which may span
        deltas: JsonScanner.string_run), a one-quote string literal (StringScanner.string_run)
        or a raw text value (no character a stop begins with, no backslash where
        backslashes escape), with no character a loop marker begins with, under the size
        cap.  False, having done nothing, otherwise."""
        if b.phase is not PHASE_LEX or b.early is None:
            return False
        if len(b.cands) == 1:
            c = b.cands[0]
        elif b.early and b.leader is not None:
            c = b.leader  # early with several: every other candidate has failed (update_early)
        else:
            return False
        w = self.window
        at = w.base + len(w.win)
        if c.state is not READING_WAIT or c.pos != at:
            return False
        sc = c.scanner
        stream = c.stream
        if sc is None:
            t = c.text
            if t is None or t.first[0] is None or t.first[0].search(delta) is not None:
                return False
            if "\\" in delta and t.rx is not None and ESCAPE_GROUP in t.rx.groupindex:
                return False
        elif stream is not None and (stream.fed != at or not stream.prefix.in_plain_string()):
            return False
        loop = b.loop
        if loop is not None and (
            loop.pos != at or not loop.rx.pats or loop.rx.first is None or loop.rx.first.search(delta) is not None
        ):
            return False  # (LoopWatch.quiet, asked per delta)
        end = at + len(delta)
        if max(end, c.reach) - b.start > self.limits.max_block_chars:
            return False
        pending = 0 if sc is None else sc.string_run(delta)
        if pending < 0:
            return False
        self.window.append(delta)
        # _read_payload (or _scan_text): the value reads to the end of the text, waits for more
        c.pos = end
        if sc is not None:
            sc.read_run(delta, pending)
            if b.early and len(sc.names) > b.sniffed:
                self.ledger.sniffed(b, c)
            if stream is not None:
                stream.prefix.feed(delta)
                stream.fed = end
                if b.early and b.leader is c:
                    self.ledger.stream_args(b, c)
        if loop is not None:
            loop.passed(end, self.cat.max_width)  # no marker begins in the delta
        if b.early and b.emitted < len(c.items) and b.unheld():  # (c is the leader)
            self.ledger.early(b)
        self.window.compact(end, b.start)  # what _compact finds: one candidate, at the end
        return True

    def advance(self, b: Block, c: Cand) -> None:
        """Read as far as the text allows: tokens, payloads, text values, resynchronisation."""
        cap = b.start + self.limits.max_block_chars
        while True:
            if c.pos > cap:
                return  # the block is over the cap; _over_limit releases it
            if c.scanner is not None:
                go_on = self._read_payload(b, c, cap)
            elif c.text is not None:
                go_on = self.values.scan_text(b, c)
            elif c.resync is not None:
                go_on = self._resync(b, c)
            else:
                go_on = self._read_token(b, c)
            if not go_on:
                return

    def _read_payload(self, b: Block, c: Cand, cap: int) -> bool:
        """Go on with the payload (or value) an external scanner reads.  False to stop."""
        w = self.window
        win, base = w.win, w.base
        n = len(win)
        sc = c.scanner
        assert sc is not None
        # a candidate never reads past the cap, so every chunking sees the same thing
        end = min(n, cap + 1 - base)
        first_look = c.pos == c.tok_start
        status, p = sc.scan(win, c.pos - base, self.window.eof and end == n, end, base)
        if status == DONE and first_look:
            # the whole payload was here when its reading began: its calls are announced
            # complete, as when it is read in one step (_whole_payload)
            c.stream = None
        elif b.early and len(sc.names) > b.sniffed:
            self.ledger.sniffed(b, c)
        stream = c.stream
        if stream is not None:
            if base + p > stream.fed:
                stream.prefix.feed(win[stream.fed - base : p])
                stream.fed = base + p
            if b.early and b.leader is c and status != CUT:
                self.ledger.stream_args(b, c)
            if status != MORE:
                c.stream = None
        if status == MORE:
            c.pos = base + p
            c.state = READING_WAIT
            return False
        if status == DONE:
            if base + p > cap:
                c.pos = base + p
                return False
            return self._payload_done(b, c, base + p)
        reason = sc.error
        c.cut_elem = sc._elem if isinstance(sc, JsonScanner) else 0
        c.scanner = None
        c.reach = max(c.reach, base + p)
        if status == CUT:
            # a JSON payload cut off, or a value inside a call the grammar spells; a closer
            # the payload read is its own text, unless it is in the string still open
            c.cut_json = c.ext_type in JSON_EXTERNALS
            at = (sc.lit_at if sc.quote or sc.comment else base + p) if isinstance(sc, JsonScanner) else None
            c.fail(c.tok_start, Failure.CUT, "payload cut off by the end of the text", at)
            return False
        if reason.startswith("nesting"):
            c.cut_json = c.ext_type in JSON_EXTERNALS  # where the deep payload began
            c.fail(c.tok_start, Failure.LIMIT, reason)
            return False
        if not c.soft and c.ext_type in JSON_EXTERNALS and c.parser.accepts_seq([c.ext_type, c.ext_type]):
            # payloads may follow one another: look for the next one after the damage
            at = max(base + p, c.tok_start + 1)
            nest = Resume(at, len(sc.stack), self.window.line_begins(c.tok_start, at))
            c.resync = Resyncing(at, c.tok_start, reason, Resync.PAYLOAD, nest)
            c.pos = at
            return True
        self._no_token(c, c.tok_start, reason, base + p)
        return c.state is Reading.RUN  # the block may go on after the junk

    def _payload_done(self, b: Block, c: Cand, end: int) -> bool:
        """The payload a scanner read ends at ``end``: it is one token."""
        start = c.tok_start
        c.scanner = None
        c.shift(Tok(c.ext_type, self.window.slice(start, end), start, end), c.g.terminals.get(c.ext_type))
        c.pos = c.last_end = end
        c.state = Reading.RUN
        if c.bad:
            c.reach = max(c.reach, end)
            c.fail(start, Failure.SYNTAX, c.bad_reason)
            return False
        leader = b.leader
        if b.early and leader is not None and b.emitted < len(leader.items) and b.unheld():
            self.ledger.early(b)
        return True

    def skip_ignored(self, c: Cand, lp: int) -> int:
        """Skip what the grammar ignores (white space, comments) from ``lp``; -1 when an
        ignored token of bounded width (a split "\\n", a comment) may still be arriving:
        it is read again, whole, with more text."""
        win = self.window.win
        n = len(win)
        first = c.g.ignore_first
        skipped = True
        while skipped:
            if lp < n and first is not None and win[lp] not in first:
                return lp  # nothing ignored can begin here (nor be arriving)
            skipped = False
            for ig in c.g.ignore:
                if lp < n and ig.marker.first is not None and win[lp] not in ig.marker.first:
                    continue  # it cannot begin here (nor be arriving)
                # (a literal is compared and a run of white space stepped over, not matched: a
                # regex call is the lexer's largest cost)
                got = ig.marker.match_end(win, lp)
                end = lp if got is None else got
                if end > lp and (end < n or self.window.eof or not resumed(ig, win, lp)):
                    lp = end
                    skipped = True
                elif not self.window.eof and resumed(ig, win, lp):
                    return -1
        return lp

    def _read_token(self, b: Block, c: Cand) -> bool:
        """Read the next token the parser accepts.  False to stop."""
        w = self.window
        win, base = w.win, w.base
        lp = c.pos - base
        lex = c.lexicon()
        text_ok = lex.text_ok
        if not text_ok:  # white space is part of a raw text value, else it is skipped
            q = self.skip_ignored(c, lp)
            if q < 0:
                c.state = Reading.WAIT
                return False
            lp = q
        c.pos = base + lp
        if lp >= len(win):
            if self.window.eof:
                self._no_token(c, c.pos, "end of text")
            else:
                c.state = READING_WAIT
            return False
        terms = lex.at(win[lp])
        if not terms and not text_ok:
            return self.unexpected(c, lp)  # nothing the parser accepts can begin here
        end, best, external, wait = self.longest(terms, win, lp)
        specials = w.specials
        if (
            best is not None
            and specials is not None
            and c.g.header.special_tokens == "only"
            and specials.ordinary(base + lp, win[lp:end])
        ):
            best = None  # a marker of this family spelled in ordinary tokens is not its marker
        if wait:
            c.state = READING_WAIT
            return False
        if c.body_at is None and (best is not None or external is not None or text_ok):
            c.body_at = base + lp
        if best is not None:
            return self._shift_token(b, c, best, lp, end)
        if external is not None:
            return self._begin_payload(b, c, external, lp)
        if text_ok:
            if c.payload_at is None:
                c.payload_at = base + lp
            c.text = self.values.begin(c, base + lp)
            return True
        return self.unexpected(c, lp)

    def unexpected(self, c: Cand, lp: int) -> bool:
        """Nothing the parser accepts is at ``lp`` (where ``c`` reads): the block ends, fails,
        or goes on after the junk (_no_token).  False to stop."""
        ch = self.window.win[lp]
        reason = _UNEXPECTED.get(ch) or f"unexpected {ch!r}"
        if ch < "\x80":
            _UNEXPECTED[ch] = reason  # (ASCII only: the table stays small whatever the text)
        self._no_token(c, self.window.base + lp, reason)
        return c.state is Reading.RUN  # resync: the block may go on after the junk

    def longest(
        self, terms: tuple[Terminal, ...], win: str, lp: int
    ) -> tuple[int, Terminal | None, Terminal | None, bool]:
        """Where the longest of ``terms`` (those that may begin at ``lp``) matching there ends
        and which it is (a literal wins a tie; ``lp`` and None: none), an external scanner
        that may begin there, and whether a terminal may still grow."""
        best: Terminal | None = None
        external: Terminal | None = None
        best_end, best_literal, near_end = lp, False, len(win) - lp  # (a pattern reaching near_end may grow)
        eof = self.window.eof
        for term in terms:
            if term.external:
                external = term
                continue
            pat = term.marker
            if not eof and pat.max_width >= near_end and pat.needs_more(win, lp):
                return lp, None, None, True
            probe = term.probe
            if probe is not None and probe[0] < near_end and win[lp + probe[0]] in probe[1]:
                continue  # (no match: a character it cannot hold there)
            exact = pat.exact
            if exact is not None:
                end = lp + len(exact)
                end = end if win[lp:end] == exact else lp
            elif (likely := pat.likely) is not None and win[lp : lp + len(likely)] == likely:
                end = lp + len(likely)
            else:
                m = pat.regex.match(win, lp)
                end = lp if m is None else m.end()
            literal = pat.literal is not None
            if end > best_end or (end == best_end and literal and best is not None and not best_literal):
                best, best_end, best_literal = term, end, literal
        return best_end, best, external, False

    def _shift_token(self, b: Block, c: Cand, term: Terminal, lp: int, end: int) -> bool:
        base = self.window.base
        c.shift(Tok(term.name, self.window.win[lp:end], base + lp, base + end), term)
        c.pos = c.last_end = base + end
        if c.bad:
            c.fail(base + lp, Failure.SYNTAX, c.bad_reason)
            return False
        if len(c.parser.stack) > 4 * self.limits.max_depth + 64:
            # a grammar that nests (a literal list inside a list …) is capped like JSON
            c.fail(base + lp, Failure.LIMIT, f"nesting deeper than max_depth={self.limits.max_depth}")
            return False
        if b.early and b.emitted < len(c.items) and b.unheld():
            self.ledger.early(b)
        if c.parser.finished:
            self._finish(c)
            return False
        return True

    def _begin_payload(self, b: Block, c: Cand, external: Terminal, lp: int) -> bool:
        """An external scanner takes over at ``lp`` (a JSON payload, a quoted string); a
        JSON payload whose whole text is already here is read in one step.  False to stop."""
        at = self.window.base + lp
        first = self.window.win[lp]
        c.ext_type = external.name
        b.sniffed = 0
        c.tok_start = at
        if c.payload_at is None:
            c.payload_at = at
        if external.name not in JSON_EXTERNALS:
            c.scanner = StringScanner()
            return True
        if self.shared.whole_steps:
            end = self.whole_payload(c, lp, b.start + self.limits.max_block_chars)
            if end >= 0:
                return self._payload_done(b, c, self.window.base + end)
        c.scanner = JsonScanner(self.limits.max_depth, c.g.quotes)
        c.stream = None
        obj = c.current_name is None  # a payload of call objects, else arguments
        if first == "{" or (obj and first == "["):
            coarse = self.policy.truncated == "keep"
            prefix = StrictPrefix(self.limits.max_depth, ARGUMENT_KEYS if obj else (), coarse)
            key = key_of(Source.PAYLOAD, at) if obj else named_key(c.named_begun - 1)
            c.stream = ArgStream(prefix, at, at, obj, key)
        return True

    def whole_payload(self, c: Cand, lp: int, cap: int) -> int:
        """Where the JSON payload at ``lp`` ends when its whole text is in the window and
        ``JsonScanner`` would read it exactly as strict JSON does (so ``json``'s C decoder
        may read it in one step), else -1: not strict JSON, not complete yet, nesting past
        ``max_depth``, or past the size cap.  One try per payload: what it reads the
        scanner would read too, so at most twice."""
        win = self.window.win
        if win[lp] not in "{[":
            return -1
        end, value, spans = _decode_end(win, lp, c.g.call_payloads and win.startswith(_CALL_OBJECT, lp))
        if end < 0 or self.window.base + end > cap:
            return -1
        text = win[lp:end]
        if depth_exceeds(text, self.limits.max_depth):
            return -1
        c.reader.decoded(text, value, spans)  # its reader reads the payload's token: decoded once
        return end  # (a grammar's quote token, <|"|>, cannot stand in strict JSON as written)

    def _finish(self, c: Cand) -> None:
        if c.whole and not c.last_type.startswith("FURNITURE_"):
            # a whole-reply block: only white space may follow, up to the end of the text
            # (unless it ended with framing of its own, after which the reply is prose)
            rest = _NON_WS.search(self.window.win, c.pos - self.window.base)
            if rest is not None:
                c.fail(self.window.base + rest.start(), Failure.SYNTAX, "text after the payload")
                return
            if not self.window.eof:
                c.state = Reading.WAIT
                return
        c.state = Reading.DONE

    def _no_token(self, c: Cand, pos: int, reason: str, at: int | None = None) -> None:
        """Nothing the grammar accepts can be read at ``pos`` (a payload's first character,
        when ``at`` says where in it the grammar stopped)."""
        at_end = pos >= self.window.base + len(self.window.win)
        ends = c.parser.finished or c.parser.accepts(END)
        if not ends and c.loose is not None and c.unloose():
            # only bare tokens since the block could end (no marker, no payload): they
            # were prose after the block, which ends where it could
            self.done(c, trail=True)
            return
        if ends:
            if c.whole and (not at_end and _NON_WS.match(self.window.win, pos - self.window.base)):
                if not c.last_type.startswith("FURNITURE_"):
                    c.fail(pos, Failure.SYNTAX, "text after the payload")
                    return
                # the block ended with framing of its own (a recipient header for text):
                # the rest of the reply is prose
                self.done(c, trail=True, at=pos)
                return
            if c.whole and not self.window.eof:
                c.state = Reading.WAIT
                return
            if at_end and self.window.eof and (not c.items or (c.named_begun > c.named_done and not c.args_read)):
                # the text ended right after an opener with nothing read, or inside a call
                # begun with no argument read (<invoke name="f">): cut off, not a call; a call
                # with complete arguments whose optional closer was eaten stands
                c.fail(pos, Failure.CUT, "cut off before the call was complete")
                return
            if at_end and self.window.eof and c.named_begun > c.named_done and TEXT in c.accepted():
                # the text ended where a value written as text begins (<parameter=unit>): the
                # value was cut off before its first character, not written empty
                c.fail(pos, Failure.CUT, "value cut off by the end of the text")
                return
            if self.window.eof and not at_end and c.named_begun > c.named_done and self._cut_in_marker(c, pos):
                # a call still open and the text ends in the first characters of one of
                # its markers (<invoke name="f"><): cut off, not a call
                c.fail(pos, Failure.CUT, "cut off inside a marker")
                return
            if not at_end and c.g.header.gated and not body_closed(c):
                # a registry-gated body is all or nothing: text it cannot read before its
                # closer is part of it, and the body is not a call
                c.fail(pos, Failure.SYNTAX, reason, at)
                return
            if not at_end and not c.soft and c.rule == "start" and c.open_closers():
                # unexpected text inside a structure still open: its closer may come later
                c.resync = Resyncing(pos, pos, reason, Resync.JUNK)
                c.pos = pos
                c.state = Reading.RUN
                return
            self.done(c, trail=not at_end, at=pos)
            return
        if self.window.eof and at_end:
            c.fail(pos, Failure.CUT, reason, at)
        else:
            c.fail(pos, Failure.SYNTAX, reason, at)

    def _cut_in_marker(self, c: Cand, pos: int) -> bool:
        """Whether the text from ``pos`` to its end is the beginning of one of ``c``'s markers."""
        lp = pos - self.window.base
        if lp < 0 or len(self.window.win) - lp > self.cat.max_width:
            return False
        return any(
            t.marker.needs_more(self.window.win, lp)
            for t in c.g.terminals.values()
            if t.pattern is not None and (t.marker.literal is not None or t.is_open or t.is_close)
        )

    def done(self, c: Cand, trail: bool, at: int | None = None) -> None:
        """The block ends after its last token (``trail``: it stopped at text it could not
        read, at ``at``, or where its last token ended)."""
        if not c.parser.finished:
            c.parser.end(c)
        c.trail = trail
        if trail and c.skip_at is None:
            c.skip_at = c.last_end if at is None else at
        c.state = Reading.DONE

    def cut_marker(self, g: CompiledGrammar, win: str, lo: int, hi: int) -> int:
        """Earliest position in ``[lo, hi)`` where ``g``'s closer or any marker may be
        starting but is cut off by the end of ``win`` (-1 when none)."""
        for p in range(max(lo, len(win) - self.cat.max_width), hi):
            if any(t.marker.needs_more(win, p) for t in g.closers) or any(
                mk.terminal.marker.needs_more(win, p) for mk in self.cat.at(win, p)
            ):
                return p
        return -1

    def _resync(self, b: Block, c: Cand) -> bool:
        """Find where a block goes on after text it could not read.  False to stop.

        After a broken payload (``Resync.PAYLOAD``) the block goes on at the next payload (never
        at a bracket nested in the broken one: ``jsonscan.Resume``) or at a closer of this
        grammar; after unexpected text where the block could end (``Resync.JUNK``) it goes on
        only at a closer of a structure still open.  The skipped text is reported and removed
        with the block.  Anything else first (another marker, the end of the text) and the
        block ends where the damage began.
        """
        r = c.resync
        assert r is not None
        if c.pos < self.window.base:
            self.window.rewind(c.pos)  # the damage began in text already moved out of the window
        win = self.window.win
        lp = c.pos - self.window.base
        bound = b.start + self.limits.max_block_chars + 1 - self.window.base
        if bound < len(win):
            win = win[:bound]  # never look past the cap (same answer at every chunking)
        payload = r.mode is Resync.PAYLOAD
        m_mark = self.cat.recovery(c.g).search(win, lp)
        q_mark = m_mark.start() if m_mark else len(win)
        # (no further than the next marker: what lies past it is not looked at, nor again)
        nest = r.nest
        found = nest.scan(win, self.window.base, EXTERNALS[c.ext_type], q_mark) if nest is not None else -1
        q_ext = found - self.window.base if found >= 0 else len(win)
        q = min(q_ext, q_mark)
        if q == len(win) and len(win) < len(self.window.win):
            c.pos = self.window.base + len(win)  # over the cap: _over_limit releases the block
            return False
        if not self.window.eof:
            p = self.cut_marker(c.g, win, lp, q)
            if p >= 0:
                c.pos = self.window.base + p
                c.state = Reading.WAIT
                return False
            if q == len(win):
                c.pos = self.window.base + len(win)
                c.state = Reading.WAIT
                return False
        targets = c.open_closers() if not payload else (c.g.closers if c.calls else ())
        closer = (
            q < len(win)
            and q == q_mark
            and any((e := t.marker.match_end(win, q)) is not None and e > q for t in targets)
        )
        if q < len(win) and closer and not payload:
            # prose between a block's calls and its closer is text; the closer is furniture
            c.items.append(Item(Kind.TEXT, self.window.slice(c.last_end, self.window.base + q), None))
            if c.skip_at is None:
                c.skip_at = c.last_end
            c.pos = self.window.base + q
            c.resync = None
            c.state = Reading.RUN
            return True
        if q < len(win) and ((payload and q == q_ext) or closer):
            junk = self.window.slice(r.tok, self.window.base + q)
            if c.skip_at is None:
                c.skip_at = r.tok
            reason = r.reason
            issue = Issue(
                "malformed_block",
                {"reason": reason, "excerpt": excerpt(junk.strip()), "at": r.at},
                (r.tok, self.window.base + q),
                f"{reason}; removed with the block",
            )
            # a broken payload: the calls announced from it end here
            c.items.append(Item(Kind.ISSUE, issue, key_of(Source.PAYLOAD, r.tok) if payload else None))
            c.pos = self.window.base + q
            c.resync = None
            c.state = Reading.RUN
            return True
        c.resync = None
        c.reach = max(c.reach, self.window.base + q)
        if payload:
            self._no_token(c, r.tok, r.reason, r.at)
            return c.state is Reading.RUN  # junk mode: the block may go on at a closer after the damage
        self.done(c, trail=True, at=r.tok)
        return False
