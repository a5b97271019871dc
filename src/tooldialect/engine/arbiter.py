"""The block arbiter: opens a block for the families whose opener was found, decides
which candidate's reading stands once none reads on, and accepts, declines or releases
it (the size cap, prose quoting the format).  It owns ``soft_floor`` and a block's
``phase``, ``winner`` and ``rpos``."""

from __future__ import annotations

import re

from ..catalog import Marker
from ..compiled_grammar import CompiledGrammar
from ..lalr import Tok
from ..records import Issue, RawCall, excerpt
from .cand import Block, Cand, furthest
from .kinds import Channel, Failure, Item, Kind, Phase, Reading
from .loops import LoopWatch

__all__ = ["Arbiter"]

_TAG_OPEN = re.compile(r"<[A-Za-z]")  # an XML-like tag, not a model's special token (<|…|>, [TOOL_CALLS])
_SPACES = re.compile(r"[ \t]*")


def _refused(c: Cand) -> bool:
    """Whether ``c`` read a call and refused it (``arguments_invalid``: a value that is no
    literal, arguments that are no object)."""
    return any(item.kind is Kind.ISSUE and item.obj.kind == "arguments_invalid" for item in c.items)


class Arbiter:
    """Opens, decides and closes blocks."""

    def _open_block(self, q: int, end: int, openers: list[Marker]) -> bool:
        soft = all(mk.terminal.soft for mk in openers)
        if soft and self.window.base + q < self.soft_floor:
            return False
        made = []
        sp = self.specials
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
        self.reply_started = self.reply_started or self.channel is Channel.TEXT
        b = Block(self.window.base + q, self.window.base + end, cands, self.channel, False, self.window.tail_at(q))
        if self.channel is Channel.TEXT and self.sink.line_prose and _TAG_OPEN.match(self.window.win, q):
            b.inline = True
        if not soft and self.channel is Channel.TEXT:
            b.loop = LoopWatch(self._loop_rx(openers, cands), self.window.win[q:end], b.start, b.opener_end)
        # (else no loop scan: nothing waits for one)
        self.block = b
        if self.whole_steps:
            for i, c in enumerate(cands):
                if self._whole_block(b, c) is False:
                    # the reader refused the block read in one step: read it token by token
                    b.cands[i] = self._cand(made[i][1], made[i][2], q, end, made[i][3])
                    if b.leader is c:
                        b.leader = b.cands[i]
        return True

    def _cand(self, g: CompiledGrammar, mk: Marker, q: int, end: int, tok: Tok) -> Cand | None:
        """A candidate of ``g`` that has read the opener ``mk`` found at ``q`` (``tok``)."""
        # tentative until it names a tool the toolset offers (see Cand._on_node)
        tentative = mk.terminal.soft or g.header.gated
        base = self.window.base
        c = Cand(g, "start", base + q, tentative, self._reader(g), self._accepted.setdefault(g.name, {}))
        if not c.shift(tok, mk.terminal):
            return None
        c.pos = c.last_end = base + end
        return c

    def _over_limit(self, b: Block) -> bool:
        cands = b.cands
        far = cands[0].progress if len(cands) == 1 else furthest(cands)
        if far - b.start <= self.policy.max_block_chars:
            return False
        c0 = self._over_limit_owner(b, far)
        done_calls = c0.call_items() if not c0.soft else []
        if done_calls:
            self._emit_pending(b, c0)
        self._abort_started(b, "limit_exceeded")
        self.sink.diag(
            Issue(
                "limit_exceeded",
                {"limit": "max_block_chars", "value": self.policy.max_block_chars, "family": c0.g.name},
                # to the cap, not to where a candidate happened to notice it: every chunking agrees
                (b.start, min(far, b.start + self.policy.max_block_chars + 1)),
                f"block longer than max_block_chars={self.policy.max_block_chars}; released as text",
            ),
            c0.g.name,
        )
        self.soft_floor = max(self.soft_floor, far)
        if done_calls:
            # the calls read before the cap stand; the rest of the block is text again
            self._rewind(max(call.span[1] for call in done_calls))
            self.block = None
            return True
        self._give_back(b, b.opener_end, release_from=b.start)
        return True

    def _over_limit_owner(self, b: Block, far: int) -> Cand:
        """The candidate a block over the cap is reported for: the one deciding it, else the
        best ranked of those that read past the cap (still reading before failed), which
        depends on the text alone, never on where a delta ended."""
        for c in (b.winner, b.leader):
            if c is not None and c.progress == far:
                return c
        cap = b.start + self.policy.max_block_chars
        rank = self.cat.rank
        over = [c for c in b.cands if c.progress > cap] or b.cands
        return min(over, key=lambda c: (c.state is Reading.FAILED, rank[c.g.name]))

    def _decide(self, b: Block) -> None:
        rank = self.cat.rank
        done = [c for c in b.cands if c.state is Reading.DONE and c.calls]
        deeper: list[Cand] = []
        if done:
            # a candidate that read the block to its end beats one that stopped at text it
            # could not read (that text may be another family's body); then the best rank
            winner = done[0] if len(done) == 1 else min(done, key=lambda c: (c.trail, c.junk, rank[c.g.name]))
            # but a call found by passing over text loses to a committed candidate that read
            # that text as its own body and found it broken or cut off: the block is that
            # candidate's, malformed or truncated
            if winner.skip_at >= 0:
                deeper = self._deeper(b, winner)
            if not deeper:
                if b.inline and self._quoted(winner):
                    b.winner = winner
                    b.phase = Phase.INLINE
                    b.rpos = winner.last_end
                    return
                self._accept(b, winner, winner.last_end)
                return
        hard = deeper or [c for c in b.cands if not c.soft]
        if not hard and b.reply and b.channel is Channel.TEXT:
            # a reply that is a call cut off by the end of the text is a truncated call, once
            # something was read after its name: a reply-initial name alone ("Paris\n") is prose
            for c in sorted(b.cands, key=lambda c: rank[c.g.name]):
                if c.fail_kind is Failure.CUT and self._past_name(c) and self._cut_call(c)[0] is not None:
                    b.winner = c
                    self._truncated(b, c)
                    return
        if not hard:
            self._decline(b)
            return
        # the candidate that read calls, else the one that read furthest, else the best rank
        winner = min(hard, key=lambda c: (-c.calls, -c.progress, rank[c.g.name]))
        b.winner = winner
        if winner.state is Reading.DONE:  # structurally fine, but no call in it
            if winner.has_issue():
                self._accept(b, winner, winner.last_end)
                return
            body = winner.body_at if winner.body_at >= 0 else b.opener_end  # where a call was to be
            issue = Issue(
                "malformed_block",
                {
                    "reason": "the block holds no call",
                    "excerpt": excerpt(self._slice(b.start, winner.last_end)),
                    "at": min(body, winner.last_end),
                },
                (b.start, winner.last_end),
                "block holds no call",
            )
            winner.items.append(Item(Kind.ISSUE, issue, None))
            self._accept(b, winner, winner.last_end)
            return
        b.phase = Phase.RECOVER
        b.rpos = winner.at  # a closer the grammar read before it was its own text

    def _deeper(self, b: Block, winner: Cand) -> list[Cand]:
        """Committed candidates that read, as their own body, text ``winner`` passed over,
        and found it broken or cut off."""
        return [
            c
            for c in b.cands
            if not c.soft
            and c.progress > winner.skip_at
            and (
                (c.state is Reading.FAILED and c.fail_kind is not Failure.LIMIT and c.fail_pos > winner.body_at)
                or (c.state is Reading.DONE and not c.calls and c.has_issue())
            )
        ]

    def _quoted(self, c: Cand) -> bool:
        """Whether the calls of a block opened after prose on its line may be that prose
        quoting the format (`Use <tool_call>NAME</tool_call> for calls.`): every call has no
        argument and names no tool the toolset offers (any name, without a toolset)."""
        calls = c.call_items()
        return bool(calls) and all(self._may_be_quoted(raw) for raw in calls)

    def _may_be_quoted(self, raw: RawCall) -> bool:
        """A call spelled by the grammar (a JSON payload is announced as it arrives), with
        no argument, naming no tool the toolset offers."""
        return (
            raw.elem < 0
            and not raw.arguments
            and not raw.text_params
            and not (self.binder.tools is not None and self.binder.resolve(raw.name, raw.gated).known)
        )

    def _step_quoted(self, b: Block) -> bool:
        """After such a block: prose going on on the same line makes the block prose, kept
        as written; a line break or the end of the text after it leaves it a call."""
        c = b.winner
        assert c is not None
        if b.rpos < self.window.base:
            self._rewind(b.rpos)  # the candidates read past the block's end
        lp = b.rpos - self.window.base
        end = _SPACES.match(self.window.win, lp).end()
        b.rpos = self.window.base + end
        if end >= len(self.window.win) and not self.eof and b.rpos - b.start <= self.policy.max_block_chars:
            return False
        if end < len(self.window.win) and self.window.win[end] not in "\r\n":
            self._give_back(b, c.last_end)
            return True
        self._accept(b, c, c.last_end)
        return True

    def _past_name(self, c: Cand) -> bool:
        """Whether ``c`` read a payload, or a token after the name it announced."""
        if c.payload_at >= 0:
            return True
        end = c.reader.name_end(c.parser.values)
        return end is not None and c.last_end > end

    def _decline(self, b: Block) -> None:
        """No candidate took the block: the opener is text (a reply attempt leaves nothing)."""
        far = max([c.fail_pos for c in b.cands if c.state is Reading.FAILED] + [b.opener_end])
        self.soft_floor = max(self.soft_floor, far)
        self._rewind(b.start)
        self.block = None
        if b.reply:
            # scan the reply as prose from its first character
            return
        self._text(self.window.win[self.window.cur : b.opener_end - self.window.base], b.channel)
        self.window.cur = b.opener_end - self.window.base

    def _accept(self, b: Block, c: Cand, end: int) -> None:
        """Emit a block's calls and issues; the block's text is gone, prose resumes at ``end``."""
        b.winner = c
        if b.channel is Channel.REASONING and self.policy.calls_in_reasoning != "accept" and (c.calls or _refused(c)):
            # reported, not dispatched: the block stays part of the reasoning text (a call
            # the reader refused too, as it does beside a call that stands)
            for item in c.items[b.emitted :]:
                if item.kind is Kind.CALL:
                    self._emit_item(b, item)
            self._rewind(b.start)
            self.block = None
            self._text(self.window.win[self.window.cur : end - self.window.base], b.channel)
            self.window.cur = end - self.window.base
            return
        for item in c.items[b.emitted :]:
            self._emit_item(b, item)
        b.emitted = len(c.items)
        if b.started:  # a call announced that the block did not complete
            self._abort_started(b, "no call")
        self._rewind(end)
        self.block = None

    def _give_back(self, b: Block, resume: int, release_from: int | None = None) -> None:
        """Release ``[release_from, resume)`` as text and resume scanning at ``resume``."""
        start = b.start if release_from is None else release_from
        self._rewind(start)
        self.block = None
        self._text(self.window.win[self.window.cur : resume - self.window.base], b.channel)
        self.window.cur = resume - self.window.base
