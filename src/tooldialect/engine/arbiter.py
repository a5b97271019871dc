"""The block arbiter: opens a block for the families whose opener was found, decides
which candidate's reading stands once none reads on, and accepts, declines or releases
it (the size cap, prose quoting the format).  It owns the open ``block`` and
``soft_floor``, and a block's ``phase``, ``winner`` and ``rpos``: the other rooms say what
they found (a :class:`Verdict`) and the arbiter acts on it."""

from __future__ import annotations

import re
from typing import Final

from ..catalog import Marker
from ..compiled_grammar import CompiledGrammar
from ..lalr import Tok
from ..records import Issue, excerpt
from .cand import Block, Cand, failed, furthest
from .events import Sink
from .kinds import READING_DONE, VERDICT_ON, Channel, Failure, Item, Kind, Phase, Reading, Verdict
from .ledger import Ledger, may_be_quoted
from .loops import Loops
from .observe import Observer
from .recovery import Recovery
from .shared import Shared
from .watches import LoopWatch
from .whole import WholeBlocks
from .window import Window

__all__ = ["Arbiter"]

_TAG_OPEN: Final = re.compile(r"<[A-Za-z]")  # an XML-like tag, not a model's special token (<|…|>, [TOOL_CALLS])
_SPACES: Final = re.compile(r"[ \t]*")


def _refused(c: Cand) -> bool:
    """Whether ``c`` read a call and refused it (``arguments_invalid``: a value that is no
    literal, arguments that are no object)."""
    return any(item.kind is Kind.ISSUE and item.obj.kind == "arguments_invalid" for item in c.items)


class Arbiter:
    """Opens, decides and closes blocks."""

    __slots__ = (
        "shared", "cat", "policy", "limits", "binder", "window", "sink", "ledger", "whole", "loops", "recovery",
        "observer", "block", "soft_floor",
    )  # fmt: skip

    def __init__(
        self,
        shared: Shared,
        window: Window,
        sink: Sink,
        ledger: Ledger,
        whole: WholeBlocks,
        loops: Loops,
        recovery: Recovery,
        observer: Observer | None,
    ) -> None:
        self.shared = shared
        self.cat = shared.cat
        self.policy = shared.policy
        self.limits = shared.limits
        self.binder = shared.binder
        self.window = window
        self.sink = sink
        self.ledger = ledger
        self.whole = whole
        self.loops = loops
        self.recovery = recovery
        self.observer = observer
        self.block: Block | None = None  # the block being read
        self.soft_floor = 0  # a tentative opener before this is text

    # -- a block's life ----------------------------------------------------------------------------

    def adopt(self, b: Block) -> None:
        """``b`` is the block being read from now on (its text is held by it)."""
        self.block = b
        self.window.hold(b.held)

    def drop(self) -> None:
        """The block is decided and its text dealt with: nothing is held any more."""
        self.block = None
        self.window.hold(None)

    def step(self, verdict: Verdict) -> bool:
        """Act on what a step of the block's reading found; False once the block is closed."""
        b = self.block
        assert b is not None
        if verdict is Verdict.OVER_CAP:
            verdict = self.over_limit(b)
        elif verdict is Verdict.LOOP:
            self.loops.begin(b)
            b.phase = Phase.LOOP
            return True
        elif verdict is Verdict.RECOVER:
            b.phase = Phase.RECOVER
            return True
        if verdict is Verdict.CLOSED:
            self.drop()
            return False
        return True

    def open_block(self, q: int, end: int, openers: list[Marker], channel: Channel) -> bool:
        """Open a block for the families ``openers`` (found at ``q`` to ``end``) start, read
        in ``channel``; False when none of them takes it."""
        soft = all(mk.terminal.soft for mk in openers)
        if soft and self.window.base + q < self.soft_floor:
            return False
        made = []
        sp = self.window.specials
        ordinary = sp is not None and sp.ordinary(self.window.base + q, self.window.win[q:end])
        for mk in openers:
            tok = None  # the opener's token, shared by its candidates (a token is never changed)
            for g in mk.grammars:
                if g.header.gated and not self.binder.known:
                    continue  # a registry-gated body is read only against a toolset
                if ordinary and g.header.special_tokens == "only":
                    continue  # its special token spelled in ordinary tokens: text to this family
                if tok is None:
                    tok = Tok(mk.terminal.name, self.window.win[q:end], self.window.base + q, self.window.base + end)
                c = self._cand(g, mk, q, end, tok)
                if c is not None:
                    made.append((c, g, mk, tok))
        if not made:
            return False
        if len(made) > 1 and len(openers) > 1:
            # (one opener's grammars are in rank order already: Catalog builds them so)
            made.sort(key=lambda m: self.cat.rank[m[1].name])
        cands = [m[0] for m in made]
        b = Block(self.window.base + q, self.window.base + end, cands, channel, False, self.window.tail_at(q))
        if channel is Channel.TEXT and self.sink.line_prose and _TAG_OPEN.match(self.window.win, q):
            b.inline = True
        if not soft and channel is Channel.TEXT:
            b.loop = LoopWatch(self.loops.loop_rx(openers, cands), self.window.win[q:end], b.start, b.opener_end)
        # (else no loop scan: nothing waits for one)
        self.adopt(b)
        if self.shared.whole_steps:
            for i, c in enumerate(cands):
                if self.whole.whole_block(b, c) is False:
                    # the reader refused the block read in one step: read it token by token
                    again = self._cand(made[i][1], made[i][2], q, end, made[i][3])
                    assert again is not None  # (it read the same opener before)
                    b.cands[i] = again
                    if b.leader is c:
                        b.leader = again
        return True

    def _cand(self, g: CompiledGrammar, mk: Marker, q: int, end: int, tok: Tok) -> Cand | None:
        """A candidate of ``g`` that has read the opener ``mk`` found at ``q`` (``tok``)."""
        # tentative until it names a tool the toolset offers (see Cand.on_node)
        tentative = mk.terminal.soft or g.header.gated
        base = self.window.base
        c = self.shared.cand(g, "start", base + q, tentative)
        if not c.shift(tok, mk.terminal):
            return None
        c.pos = c.last_end = base + end
        return c

    def over_limit(self, b: Block) -> Verdict:
        """Release a block its candidates read past ``max_block_chars`` as text (``CLOSED``);
        ``ON`` when it is within the cap."""
        cands = b.cands
        far = cands[0].progress if len(cands) == 1 else furthest(cands)
        if far - b.start <= self.limits.max_block_chars:
            return VERDICT_ON
        c0 = self._over_limit_owner(b, far)
        done_calls = c0.call_items() if not c0.soft else []
        if done_calls:
            self.ledger.emit_pending(b, c0)
        self.ledger.abort_started(b, "limit_exceeded")
        self.sink.diag(
            Issue(
                "limit_exceeded",
                {"limit": "max_block_chars", "value": self.limits.max_block_chars, "family": c0.g.name},
                # to the cap, not to where a candidate happened to notice it: every chunking agrees
                (b.start, min(far, b.start + self.limits.max_block_chars + 1)),
                f"block longer than max_block_chars={self.limits.max_block_chars}; released as text",
            ),
            c0.g.name,
        )
        self.soft_floor = max(self.soft_floor, far)
        if done_calls:
            # the calls read before the cap stand; the rest of the block is text again
            self.window.rewind(max(call.span[1] for call in done_calls))
            return Verdict.CLOSED
        self._give_back(b, b.opener_end, release_from=b.start)
        return Verdict.CLOSED

    def _over_limit_owner(self, b: Block, far: int) -> Cand:
        """The candidate a block over the cap is reported for: the one deciding it, else the
        best ranked of those that read past the cap (still reading before failed), which
        depends on the text alone, never on where a delta ended."""
        for c in (b.winner, b.leader):
            if c is not None and c.progress == far:
                return c
        cap = b.start + self.limits.max_block_chars
        rank = self.cat.rank
        over = [c for c in b.cands if c.progress > cap] or b.cands
        return min(over, key=lambda c: (c.state is Reading.FAILED, rank[c.g.name]))

    def decide(self, b: Block) -> Verdict:
        """No candidate reads on: which reading stands, and what becomes of the block."""
        obs = self.observer
        if obs is not None:
            obs.deciding(b)
        got = self._decide(b)
        if obs is not None:
            obs.decided(b)
        return got

    def _decide(self, b: Block) -> Verdict:
        rank = self.cat.rank
        done = [c for c in b.cands if c.state is READING_DONE and c.calls]
        deeper: list[Cand] = []
        if done:
            # a candidate that read the block to its end beats one that stopped at text it
            # could not read (that text may be another family's body); then the best rank
            winner = done[0] if len(done) == 1 else min(done, key=lambda c: (c.trail, c.junk, rank[c.g.name]))
            # but a call found by passing over text loses to a committed candidate that read
            # that text as its own body and found it broken or cut off: the block is that
            # candidate's, malformed or truncated
            if winner.skip_at is not None:
                deeper = self._deeper(b, winner, winner.skip_at)
            if not deeper:
                if b.inline and self._quoted(winner):
                    b.winner = winner
                    b.phase = Phase.INLINE
                    b.rpos = winner.last_end
                    return Verdict.ON
                return self._accept(b, winner, winner.last_end)
        hard = deeper or [c for c in b.cands if not c.soft]
        if not hard and b.reply and b.channel is Channel.TEXT:
            # a reply that is a call cut off by the end of the text is a truncated call, once
            # something was read after its name: a reply-initial name alone ("Paris\n") is prose
            for c in sorted(b.cands, key=lambda c: rank[c.g.name]):
                if c.fail_kind is Failure.CUT and c.past_name() and self.recovery.cut_call(c)[0] is not None:
                    b.winner = c
                    return self.recovery.truncated(b, c)
        if not hard:
            return self._decline(b)
        # the candidate that read calls, else the one that read furthest, else the best rank
        winner = min(hard, key=lambda c: (-c.calls, -c.progress, rank[c.g.name]))
        b.winner = winner
        if winner.state is Reading.DONE:  # structurally fine, but no call in it
            if winner.has_issue():
                return self._accept(b, winner, winner.last_end)
            body = winner.body_at if winner.body_at is not None else b.opener_end  # where a call was to be
            issue = Issue(
                "malformed_block",
                {
                    "reason": "the block holds no call",
                    "excerpt": excerpt(self.window.slice(b.start, winner.last_end)),
                    "at": min(body, winner.last_end),
                },
                (b.start, winner.last_end),
                "block holds no call",
            )
            winner.items.append(Item(Kind.ISSUE, issue, None))
            return self._accept(b, winner, winner.last_end)
        b.phase = Phase.RECOVER
        b.rpos = failed(winner).at  # a closer the grammar read before it was its own text
        return Verdict.ON

    def _deeper(self, b: Block, winner: Cand, skip_at: int) -> list[Cand]:
        """Committed candidates that read, as their own body, text ``winner`` passed over,
        and found it broken or cut off."""
        return [
            c
            for c in b.cands
            if not c.soft
            and c.progress > skip_at
            and (
                (
                    c.state is Reading.FAILED
                    and c.fail_kind is not Failure.LIMIT
                    and (winner.body_at is None or failed(c).pos > winner.body_at)
                )
                or (c.state is Reading.DONE and not c.calls and c.has_issue())
            )
        ]

    def _quoted(self, c: Cand) -> bool:
        """Whether the calls of a block opened after prose on its line may be that prose
        quoting the format (`Use <tool_call>NAME</tool_call> for calls.`): every call has no
        argument and names no tool the toolset offers (any name, without a toolset)."""
        calls = c.call_items()
        return bool(calls) and all(may_be_quoted(self.binder, raw) for raw in calls)

    def step_quoted(self, b: Block) -> Verdict:
        """After such a block: prose going on on the same line makes the block prose, kept
        as written; a line break or the end of the text after it leaves it a call."""
        c = b.winner
        assert c is not None
        if b.rpos < self.window.base:
            self.window.rewind(b.rpos)  # the candidates read past the block's end
        lp = b.rpos - self.window.base
        run = _SPACES.match(self.window.win, lp)
        assert run is not None  # (a run: it matches, empty or not)
        end = run.end()
        b.rpos = self.window.base + end
        if end >= len(self.window.win) and not self.window.eof and b.rpos - b.start <= self.limits.max_block_chars:
            return Verdict.WAIT
        if end < len(self.window.win) and self.window.win[end] not in "\r\n":
            self._give_back(b, c.last_end)
            return Verdict.CLOSED
        return self._accept(b, c, c.last_end)

    def _decline(self, b: Block) -> Verdict:
        """No candidate took the block: the opener is text (a reply attempt leaves nothing)."""
        far = max([failed(c).pos for c in b.cands if c.state is Reading.FAILED] + [b.opener_end])
        self.soft_floor = max(self.soft_floor, far)
        if b.reply:
            self.window.rewind(b.start)  # scan the reply as prose from its first character
        else:
            self.ledger.release(b, b.opener_end)
        return Verdict.CLOSED

    def _accept(self, b: Block, c: Cand, end: int) -> Verdict:
        """Emit a block's calls and issues; the block's text is gone, prose resumes at ``end``."""
        if self.observer is not None:
            self.observer.accepted(b, end)
        b.winner = c
        if b.channel is Channel.REASONING and self.policy.calls_in_reasoning != "accept" and (c.calls or _refused(c)):
            # reported, not dispatched: the block stays part of the reasoning text (a call
            # the reader refused too, as it does beside a call that stands)
            for item in c.items[b.emitted :]:
                if item.kind is Kind.CALL:
                    self.ledger.emit_item(b, item)
            self.ledger.release(b, end)
            return Verdict.CLOSED
        for item in c.items[b.emitted :]:
            self.ledger.emit_item(b, item)
        b.emitted = len(c.items)
        if b.started:  # a call announced that the block did not complete
            self.ledger.abort_started(b, "no call")
        self.window.rewind(end)
        return Verdict.CLOSED

    def _give_back(self, b: Block, resume: int, release_from: int | None = None) -> None:
        """Release ``[release_from, resume)`` as text and resume scanning at ``resume``."""
        if self.observer is not None:
            self.observer.given_back(b)
        self.ledger.release(b, resume, release_from)
