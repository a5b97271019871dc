"""Recovery: how much text a committed block that went wrong took, and what is reported
for it — malformed (up to a closer), unterminated (no closer: kept as text), truncated
(cut off by the end of the text), over a limit (nesting past ``max_depth``)."""

from __future__ import annotations

import re
from typing import Any, Final

from ..catalog import OPEN
from ..compiled_grammar import CompiledGrammar
from ..records import Issue, RawCall, excerpt
from .cand import Block, Cand, failed
from .cursor import Cursor
from .events import Sink
from .kinds import Channel, Failure, Item, Key, Kind, Source, Verdict
from .ledger import Ledger
from .search import MAX_FENCE_LINE
from .shared import Shared
from .watches import Balance
from .window import Window

__all__ = ["Recovery"]

_WS: Final = re.compile(r"\s*")
_OPENING: Final = frozenset("([{")  # the brackets Balance counts as opening a level


class Recovery:
    """Finishes blocks whose committed candidate failed (owns a block's ``absorb`` and
    ``balance``).  Each step returns a :class:`Verdict`; the arbiter acts on it."""

    __slots__ = ("cat", "policy", "cache", "window", "sink", "ledger", "cursor")

    def __init__(self, shared: Shared, window: Window, sink: Sink, ledger: Ledger, cursor: Cursor) -> None:
        self.cat = shared.cat
        self.policy = shared.policy
        self.cache = shared.cache
        self.window = window
        self.sink = sink
        self.ledger = ledger
        self.cursor = cursor

    def recover(self, b: Block) -> Verdict:
        """A committed block with a syntax error: find how much text it took."""
        c = b.winner
        assert c is not None
        if b.channel is Channel.REASONING:
            # inside reasoning a broken block is just reasoning text
            self.ledger.release(b, b.opener_end)
            return Verdict.CLOSED
        if b.absorb is not None:
            return self._absorb(b, c)
        if c.fail_kind is Failure.LIMIT:
            return self._recover_limit(b, c)
        cut = c.fail_kind is Failure.CUT
        rx = self.cat.closers(c.g) if cut else self.cat.recovery(c.g)
        if rx is None:
            return self.truncated(b, c)
        if b.rpos - b.start > self.policy.max_block_chars:
            return self._unterminated(b, c, b.rpos)
        lp = b.rpos - self.window.base
        if lp < 0:
            self.window.rewind(b.rpos)
            lp = 0
        win = self.window.win
        # a closer beyond the block cap does not count: the same answer at every chunking
        horizon = min(len(win), b.start + self.policy.max_block_chars - self.window.base)
        m = rx.search(win, lp, max(lp, horizon)) if horizon > lp else None
        opener = False
        while m is not None and m.start() < m.end():
            # a fence line with an info string (```` ```bash ````) opens the next fence: it
            # closes no block, and what is in that fence is an example
            opens = self._opens_fence(win, m.end())
            if opens is None and not self.window.eof:
                b.rpos = self.window.base + m.start()
                return Verdict.WAIT
            if not opens:
                break
            opener = self._opener_at(win, m.start())
            if opener:
                break  # unless that fence holds calls (```` ```tool_call ````): a marker, the next block's
            m = rx.search(win, m.end(), max(lp, horizon))
        if m is None and horizon < len(win):
            return self.truncated(b, c) if cut else self._unterminated(b, c, self.window.base + horizon)
        limit = m.start() if m else len(win)
        if not self.window.eof:
            p = self.cursor.cut_marker(c.g, win, lp, limit)
            if p >= 0:
                b.rpos = self.window.base + p
                return Verdict.WAIT
            if m is None:
                b.rpos = self.window.base + len(win)
                return Verdict.WAIT
        if m is not None and not opener:
            q = m.start()
            closer_end = max(
                (e for t in c.g.closers if (e := t.marker.match_end(win, q)) is not None and e > q), default=None
            )
            if closer_end is not None:
                return self._malformed(b, c, self.window.base + q, self.window.base + closer_end)
        if cut:
            return self.truncated(b, c)
        if c.calls and not c.g.header.gated:  # a registry-gated body is all or nothing
            return self._calls_stand(b, c)
        return self._unterminated(b, c, self.window.base + (m.start() if m is not None else len(win)))

    def _malformed(self, b: Block, c: Cand, q: int, closer_end: int) -> Verdict:
        """A broken block up to a closer of its grammar: removed with the closer, reported."""
        junk = self.window.slice(max(failed(c).pos, b.start), q)
        detail = {
            "reason": failed(c).reason,
            "excerpt": excerpt(junk.strip() or self.window.slice(b.start, q)),
            "at": failed(c).at,
        }
        # the calls read before the damage stand, but not in a registry-gated body (all or nothing)
        self.ledger.emit_pending(b, c, issues_only=c.g.header.gated)
        self.ledger.abort_started(b, "malformed_block")
        self.sink.diag(
            Issue(
                "malformed_block",
                detail,
                (b.start, closer_end),
                f"block is not a valid call ({failed(c).reason}); removed from the text",
            ),
            c.g.name,
        )
        b.absorb = closer_end
        return self._absorb(b, c)

    def _calls_stand(self, b: Block, c: Cand) -> Verdict:
        """A block broken after calls it read whole, with no closer after the damage: the
        calls stand; what follows them is text."""
        self.ledger.emit_pending(b, c)
        self.ledger.abort_started(b, "malformed_block")
        calls_end = max(call.span[1] for call in c.call_items())
        if c.named_begun > c.named_done and c.last_end > calls_end:
            # a call begun after them and broken off (`[f(a=1), g(x>`): removed, reported
            self.sink.diag(
                Issue(
                    "malformed_block",
                    {
                        "reason": failed(c).reason,
                        "excerpt": excerpt(self.window.slice(calls_end, c.last_end)),
                        "at": failed(c).at,
                    },
                    (calls_end, c.last_end),
                    f"a call broken off after the block's calls ({failed(c).reason}); removed from the text",
                ),
                c.g.name,
            )
        self.window.rewind(c.last_end)
        return Verdict.CLOSED

    def _recover_limit(self, b: Block, c: Cand) -> Verdict:
        """A payload that went deeper than ``max_depth``: its brackets are counted to where it
        ends, and the block (with a closer right after it) is removed there; the prose after
        it stays text.  One still open at the end of the text is removed to the end; one that
        runs past ``max_block_chars`` is released as text, like any block over the cap."""
        if b.balance is None:
            # a JSON payload is counted from its first bracket; a grammar's nested rules
            # (a literal list inside a list …) from the first token of the block's body
            b.balance = Balance(
                failed(c).pos if c.cut_json else max(b.opener_end if c.body_at is None else c.body_at, b.opener_end)
            )
        bal = b.balance
        if bal.pos < self.window.base:
            self.window.rewind(bal.pos)
        win = self.window.win
        lp = bal.pos - self.window.base
        if bal.end is None:
            horizon = min(len(win), b.start + self.policy.max_block_chars - self.window.base)
            if c.cut_json or self._bracketed(c.g):
                found = bal.scan(win, lp, horizon) if horizon > lp else -1
            else:
                # nesting written in the grammar's own tags (MiniMax-M3 elements), whose
                # markers may hold brackets: the payload is taken to its first closer, and
                # the closers right after it go with it (_absorb)
                rx = self.cat.closers(c.g)
                m = (
                    rx.search(win, max(lp, failed(c).pos - self.window.base), horizon)
                    if rx is not None and horizon > lp
                    else None
                )
                found = m.end() if m is not None else -1
            bal.pos = self.window.base + (found if found >= 0 else max(lp, horizon))
            b.rpos = bal.pos  # the window keeps what is still to be looked at
            if found < 0:
                if horizon < len(win):
                    c.reach = b.start + self.policy.max_block_chars + 1
                    return Verdict.OVER_CAP
                if not self.window.eof:
                    return Verdict.WAIT
                return self.truncated(b, c)
            bal.end = bal.pos
        end = bal.end - self.window.base
        run = _WS.match(win, end)
        assert run is not None  # (a run: it matches, empty or not)
        q = run.end()
        if not self.window.eof and (q >= len(win) or any(t.marker.needs_more(win, q) for t in c.g.closers)):
            return Verdict.WAIT  # a closer may still follow the payload
        close = max((e for t in c.g.closers if (e := t.marker.match_end(win, q)) is not None and e > q), default=None)
        stop = self.window.base + (close if close is not None else end)
        self.ledger.emit_pending(b, c)
        self.ledger.abort_started(b, "limit_exceeded")
        self.sink.diag(
            Issue(
                "limit_exceeded",
                {"reason": failed(c).reason, "limit": "max_depth", "value": self.policy.max_depth},
                (b.start, stop),
                f"block is not a valid call ({failed(c).reason}); removed from the text",
            ),
            c.g.name,
        )
        if close is None:
            self.window.rewind(stop)
            return Verdict.CLOSED
        b.absorb = stop
        return self._absorb(b, c)

    def _bracketed(self, g: CompiledGrammar) -> bool:
        """Whether ``g`` writes its nesting with brackets (a literal list inside a list), which
        Balance counts; else its nesting is written in its own tags."""
        key = ("bracketed", g.name)
        got = self.cache.get(key)
        if got is None:
            got = any(t.pattern is not None and t.marker.literal in _OPENING for t in g.terminals.values())
            self.cache[key] = got
        return got

    def _absorb(self, b: Block, c: Cand) -> Verdict:
        """After a broken block's closer, the closers of the structures around it (white
        space between) belong to the block too: ``</function>\n</tool_call>``."""
        absorb = b.absorb
        assert absorb is not None
        lp = absorb - self.window.base
        if lp < 0:
            self.window.rewind(absorb)
            lp = 0
        win = self.window.win
        while True:
            m = _WS.match(win, lp)
            assert m is not None  # (a run: it matches, empty or not)
            q = m.end()
            if q >= len(win):
                if self.window.eof:
                    break
                return Verdict.WAIT  # white space so far: a closer may follow
            if not self.window.eof and any(t.marker.needs_more(win, q) for t in c.g.closers):
                return Verdict.WAIT
            end = max((e for t in c.g.closers if (e := t.marker.match_end(win, q)) is not None and e > q), default=None)
            if end is None:
                break
            opens = self._opens_fence(win, end)
            if opens is None:
                return Verdict.WAIT
            if opens:
                break  # the next fence's opener (```` ```xml ````): not this block's
            lp = end
            b.absorb = absorb = self.window.base + end
        self.window.rewind(absorb)
        return Verdict.CLOSED

    def _opener_at(self, win: str, q: int) -> bool:
        """Whether a block's opener (a marker) begins at ``q``."""
        return any(
            mk.role == OPEN and (e := mk.terminal.marker.match_end(win, q)) is not None and e > q
            for mk in self.cat.at(win, q)
        )

    def _opens_fence(self, win: str, end: int) -> bool | None:
        """Whether a closer that ends at ``end`` with a fence character goes on with an info
        string on its line (```` ```xml ````), so that it opens a fence and closes nothing;
        None when the rest of the line is still to come."""
        if win[end - 1] not in "`~":
            return False
        nl = win.find("\n", end, end + MAX_FENCE_LINE)
        if nl < 0 and not self.window.eof and len(win) - end < MAX_FENCE_LINE:
            return None
        return bool(win[end : nl if nl >= 0 else end + MAX_FENCE_LINE].strip())

    def _unterminated(self, b: Block, c: Cand, stop: int) -> Verdict:
        family = c.g.name
        # what the block reported before it turned out to have no end is reported in every
        # chunking (a stream may already have sent it)
        self.ledger.emit_pending(b, c, issues_only=True)
        self.ledger.abort_started(b, "unterminated_block")
        self.sink.diag(
            Issue(
                "unterminated_block",
                {"reason": failed(c).reason, "excerpt": excerpt(self.window.slice(b.start, stop))},
                (b.start, stop),
                "an opener with no valid body and no closer; kept as text",
            ),
            family,
        )
        self.ledger.release(b, b.opener_end)  # what follows the opener is scanned as prose (fences, code spans)
        return Verdict.CLOSED

    def truncated(self, b: Block, c: Cand) -> Verdict:
        """The text ended inside a committed block: report it; never complete it."""
        self.ledger.emit_pending(b, c)
        end = self.window.end
        kind = "truncated" if c.fail_kind is Failure.CUT else "limit_exceeded"
        name, raw = self.cut_call(c)
        done = self._cut_complete(b, c)
        # what is removed runs from the end of the block's last call read whole (or the
        # block's start) to the end of the text: the diagnostic covers all of it
        removed_from = max([b.start] + [call.span[1] for call in c.call_items()] + done)
        cut_key = Key(Source.NAMED, c.named_done)
        if c.cut_json and c.named_begun <= c.named_done:  # a payload, not a named call's arguments
            cut_key = Key(Source.PAYLOAD, failed(c).pos, raw.elem if raw is not None and raw.elem >= 0 else c.cut_elem)
        started = b.started.get(cut_key)
        if name is None and started is not None and kind == "truncated":
            name = started[1]
        span = (removed_from, end)
        if kind == "truncated" and self.policy.truncated == "keep" and raw is not None and not c.past_name():
            raw = None  # nothing after its name says the call was begun (`<tool_call>result `)
        if kind == "truncated" and self.policy.truncated == "keep" and raw is not None:
            self.ledger.emit_item(b, Item(Kind.CALL, raw, cut_key))
            span = raw.span  # DESIGN §7: a kept call's diagnostic is about the call
        self.ledger.abort_started(b, kind)
        detail: dict[str, Any] = {"reason": failed(c).reason, "policy": self.policy.truncated}
        if name is not None:
            detail["name"] = name
        if span != (removed_from, end):
            detail["removed"] = [removed_from, end]  # the block around a kept call
        if kind == "limit_exceeded":
            detail["limit"] = "max_depth"
            detail["value"] = self.policy.max_depth
        kept = kind == "truncated" and self.policy.truncated == "keep" and raw is not None
        self.sink.diag(
            Issue(
                kind,
                detail,
                span,
                f"payload cut off ({failed(c).reason}); "
                + ("returned with its complete arguments only" if kept else "the call is not returned"),
            ),
            c.g.name,
        )
        self.window.rewind(end)
        return Verdict.CLOSED

    def _cut_complete(self, b: Block, c: Cand) -> list[int]:
        """Emit the calls of a cut-off block that were complete before the cut and that the
        grammar had not yet reduced (the elements of a JSON array, the lines of a body read
        whole); they stand.  Returns where each ends."""
        if c.fail_kind is not Failure.CUT:
            return []
        if c.cut_json and c.named_begun <= c.named_done:
            text = self.window.slice(failed(c).pos, self.window.end)
            calls, issues = c.reader.cut_elements(text, failed(c).pos, bare=c.rule == "reply")
            key = Key(Source.PAYLOAD, failed(c).pos)
            items = sorted(
                [Item(Kind.CALL, x, key.element(x.elem) if x.elem >= 0 else key) for x in calls]
                + [Item(Kind.ISSUE, x, key.element(x.elem) if x.elem >= 0 else key) for x in issues],
                key=lambda item: item.obj.span[0] if item.obj.span else -1,
            )
        else:
            completed = c.reader.completed(c.parser.values)
            items = [Item(Kind.CALL, x, Key(Source.NAMED, c.named_done + i)) for i, x in enumerate(completed)]
            c.named_done += len(items)
        for item in items:
            self.ledger.emit_item(b, item)
        return [item.obj.span[1] for item in items if item.kind is Kind.CALL]

    def cut_call(self, c: Cand) -> tuple[str | None, RawCall | None]:
        """The name (and what survives) of a call cut off by the end of the text: from its
        JSON payload, or from the name and parameters the parser had read.  A name that
        runs to the end of the text may itself be cut off (`get_wea`): it is no name."""
        end = c.reader.name_end(c.parser.values)
        if end is not None and end >= self.window.end:
            return None, None
        if not c.cut_json:
            name, raw = c.reader.salvage(c.parser.values)
            if raw is not None:  # a cut-off call's text runs to the end of the text
                raw.span = (raw.span[0], self.window.end)
            return name, raw
        if failed(c).pos < 0 or not c.ext_type:
            return None, None
        text = self.window.slice(failed(c).pos, self.window.end)
        if c.named_begun > c.named_done:
            # the arguments of a call whose name the grammar read (Kimi, DeepSeek)
            name, raw = c.reader.cut_arguments(c.parser.values, text, self.window.end)
            if c.rule == "reply" and c.reader.known and (name or "").strip() not in c.reader.known:
                return None, None  # a reply-start name the toolset does not offer (bare_call)
            return name, raw
        if text[:1] not in ("{", "["):
            return None, None
        return c.reader.cut_call(text, failed(c).pos, bare=c.rule == "reply")
