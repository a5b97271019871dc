"""The call ledger: each call announced once (``CallStart``), its arguments streamed as
they become safe to send, then ended (``CallEnd``) or aborted (``CallAbort``), with the
indices following the text (the stream ``parse()`` folds makes only the ends: ``folded``).
It owns ``call_index``, ``calls_out`` and ``line_calls`` and, per block, ``started``,
``sent``, ``deferred``, ``emitted`` and ``sniffed``."""

from __future__ import annotations

import json
from typing import Any, Final

from ..argstream import member
from ..binding import Binder, typed
from ..compiled_grammar import LINE_RULE
from ..jsonscan import JsonScanner
from ..lalr import Node
from ..records import ARGUMENT_KEYS, Issue, RawCall, excerpt
from .cand import Block, Cand, failed
from .events import Sink, arguments_delta, call_abort, call_start
from .kinds import (
    KIND_CALL,
    KIND_ISSUE,
    KIND_START,
    KIND_TEXT,
    Channel,
    Item,
    Key,
    Kind,
    Phase,
    Reading,
    Source,
    item_end,
    key_of,
)
from .observe import Observer
from .shared import Shared
from .window import Window

__all__ = ["Ledger", "may_be_quoted"]

_make: Final = tuple.__new__  # Key.element without the call, per delta


def _first_key(text: str) -> str | None:
    """The first member key of a strict JSON object's text, when it is written whole."""
    i = 1
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    if text[i : i + 1] != '"':
        return None
    end = text.find('"', i + 1, i + 64)
    return text[i + 1 : end] if end > 0 else None


def may_be_quoted(binder: Binder, raw: RawCall) -> bool:
    """A call spelled by the grammar (a JSON payload is announced as it arrives), with no
    argument, naming no tool the toolset offers: what prose quoting the format may write
    (`Use <tool_call>NAME</tool_call> for calls.`)."""
    return (
        raw.elem < 0
        and not raw.arguments
        and not raw.text_params
        and not (binder.tools is not None and binder.resolve(raw.name, raw.gated).known)
    )


class Ledger:
    """Turns a block's items into call events."""

    __slots__ = (
        "policy",
        "limits",
        "binder",
        "window",
        "sink",
        "observer",
        "call_index",
        "calls_out",
        "line_calls",
        "folded",
    )

    def __init__(self, shared: Shared, window: Window, sink: Sink, observer: Observer | None) -> None:
        self.policy = shared.policy
        self.limits = shared.limits
        self.binder = shared.binder
        self.window = window
        self.sink = sink
        self.observer = observer
        self.call_index = 0
        self.calls_out = 0
        self.line_calls = 0  # calls returned from lines on their own (a grammar's `line` rule)
        # the events are folded into a result (parse()): what a fold drops — a call's start,
        # its argument deltas, its abort — is not made (the calls, text and diagnostics are)
        self.folded = False

    def release(self, b: Block, resume: int, release_from: int | None = None) -> None:
        """Release ``[release_from, resume)`` (from the block's start when not given) as text
        in the block's channel, and read on at ``resume``."""
        w = self.window
        w.rewind(b.start if release_from is None else release_from)
        self.sink.text(w.win[w.cur : resume - w.base], b.channel)
        w.move(resume - w.base)

    def only_line_calls(self) -> bool:
        """Whether every call returned so far came from a line on its own."""
        return self.calls_out == self.line_calls

    # -- announcing early (one committed candidate, outside reasoning) ------------------------

    def update_early(self, b: Block) -> None:
        """With several candidates, announce early only once one committed candidate is
        left and the others failed no later than where its body began: a decision that
        depends on the text alone, not on how it was cut."""
        alive = [c for c in b.cands if c.state is not Reading.FAILED]
        if not alive:
            b.early = False
            return
        if len(alive) > 1:
            if not any(c.live for c in alive):
                b.early = False
            return
        lead = alive[0]  # still reading, or done (a whole block read in one delta)
        if lead.soft or lead.g.header.gated:  # (a gated body is all or nothing: decided whole)
            b.early = False
            return
        body_at = lead.body_at
        if body_at is None:
            return
        for o in b.cands:  # (a loop: asked at every step of a block of several candidates)
            if o is not lead and (o.state is not Reading.FAILED or failed(o).pos > body_at):
                b.early = False
                return
        b.early = True
        b.leader = lead
        if lead.scanner is not None and lead.scanner.names:
            self.sniffed(b, lead)
            if lead.stream is not None:
                self.stream_args(b, lead)

    def sniffed(self, b: Block, c: Cand) -> None:
        """Announce the call objects whose names the JSON scanner has read."""
        for item in c.items[b.emitted :]:
            if (item.kind is Kind.CALL or item.kind is Kind.START) and item.key not in b.started:
                return  # a call read before this payload is announced first: indices follow the text
        sc = c.scanner
        assert isinstance(sc, JsonScanner)  # (only a JSON payload's scanner reads names)
        names = sc.names
        root = sc.stack[:1]
        while b.sniffed < len(names):
            ordinal, name = names[b.sniffed]
            b.sniffed += 1
            # a payload that is one call object, or each call object of a root array
            if root not in (["{"], ["["]) or (root == ["{"] and ordinal != 0):
                continue
            key = key_of(Source.PAYLOAD, c.tok_start, ordinal)
            if key in b.started or not name.strip():
                continue  # a blank name is no call
            if self.calls_out + len(b.started) >= self.limits.max_calls:
                continue
            announced = self.binder.announce(name, c.g.name)
            if announced is None:
                continue
            self._start(b, key, announced, None)

    def _start(self, b: Block, key: Key, name: str, call_id: str | None) -> int:
        index = self.call_index
        self.call_index += 1
        b.started[key] = (index, name)
        if not self.folded:
            self.sink.event(call_start(index, name, call_id))
        return index

    def early(self, b: Block) -> None:
        c = b.leader
        assert c is not None
        items = c.items
        n = len(items)  # (emitting an item adds none)
        while b.emitted < n:
            item = items[b.emitted]
            kind = item.kind
            if (kind is KIND_CALL or kind is KIND_ISSUE) and (end := item_end(item.obj)) > b.loop_clear:
                b.waits = (b.emitted, end)  # (Block.unheld: not asked again before then)
                return  # not before the loop scan has cleared its text (every chunking agrees)
            if b.inline and (kind is KIND_TEXT or (kind is KIND_CALL and may_be_quoted(self.binder, item.obj))):
                return  # the block may yet be prose quoting the format, released whole
            b.emitted += 1
            if kind is KIND_START and self.folded and b.emitted < n and self._ends_next(b, item, items[b.emitted]):
                continue
            self.emit_item(b, item)

    def _ends_next(self, b: Block, start: Item, nxt: Item) -> bool:
        """Whether a call's announcement may go unsaid in a folded stream: the item after it
        is the call's end, sent in the same step. A fold keeps no start event; what the
        announcement would leave (its place in ``started``, which the end takes back) is
        then never looked at, so the end numbers the call itself."""
        return (
            nxt.kind is KIND_CALL
            and nxt.key == start.key
            and not b.inline
            and not b.deferred
            and item_end(nxt.obj) <= b.loop_clear
        )

    # -- streaming arguments --------------------------------------------------------------------

    def stream_args(self, b: Block, c: Cand) -> None:
        """Send the JSON arguments of started calls up to their last safe point."""
        stream = c.stream
        if stream is None or self.folded:
            return
        sp = stream.prefix
        if not stream.objects:
            self._stream_region(b, stream.key, stream.start, stream.start + sp.safe)
            return
        # call objects: the one being read, and any finished since the last look
        for elem in range(stream.done, sp.elem + 1):
            span = sp.args.get(elem)
            if span is not None:
                end = sp.safe if span[1] < 0 else min(sp.safe, span[1])
                key = stream.key
                self._stream_region(b, _make(Key, (key[0], key[1], elem)), stream.start + span[0], stream.start + end)
        stream.done = sp.elem

    def _stream_region(self, b: Block, key: Key, lo: int, hi: int) -> None:
        """Send ``[lo, hi)`` of a started call's JSON arguments, from what was sent so far."""
        started = b.started.get(key)
        if started is None:
            return
        sent, held = b.sent.get(key, (0, False))
        if held or hi <= lo + sent:
            return
        piece = self.window.slice(lo + sent, hi)
        # the first key decides once, before anything past the opening brace is sent; its
        # first few characters are enough (never the whole argument text again per delta)
        if (
            self.binder.tools is not None
            and sent <= 1
            and _first_key(self.window.slice(lo, min(hi, lo + 80))) in ARGUMENT_KEYS
        ):
            # {"arguments": {…}} may be an envelope the toolset unwraps: after the opening
            # brace (how every object begins), wait for the end
            b.sent[key] = (max(sent, 1), True)
            if sent:
                return
            piece = "{"
        else:
            b.sent[key] = (sent + len(piece), False)
        self.sink.event(arguments_delta(started[0], piece))

    def _stream_param(self, b: Block, owner: Cand, node: Any, key: Key) -> None:
        """Send one complete text-valued parameter of a started call as a JSON member."""
        started = b.started.get(key)
        if started is None or self.folded:
            return  # (folded: the binder types the parameters with the call)
        sent, held = b.sent.get(key, (0, False))
        if held:
            return
        if isinstance(node, Node):
            pkey, text, flag = owner.reader.params([node])[0]
            value: Any = None
        else:
            pkey, value = node  # a literal argument, read when it was reduced
        if sent == 0 and self.binder.tools is not None and pkey in ARGUMENT_KEYS:
            b.sent[key] = (0, True)  # an envelope the toolset may unwrap: wait for the end
            return
        if isinstance(node, Node):
            name = started[1] if self.binder.tools is not None and started[1] in self.binder.known else None
            notes: list[str] = []
            value = self.binder.typed_value(name, pkey, text, flag, notes)
            b.typed.setdefault(key, []).append(typed(pkey, text, flag, name, value, notes))
        piece = ("{" if sent == 0 else "") + member(pkey, value, sent == 0)
        b.sent[key] = (sent + len(piece), False)
        self.sink.event(arguments_delta(started[0], piece))

    # -- emitting items -------------------------------------------------------------------------

    def emit_item(self, b: Block, item: Item) -> None:
        kind = item.kind
        key = item.key
        if kind is KIND_CALL:
            self._emit_call(b, item.obj, key)
        elif kind is Kind.START:
            assert key is not None  # (a call's name read first is keyed)
            self._emit_start(b, item.obj, key)
        elif kind is Kind.PARAM:
            assert key is not None  # (an argument belongs to the call its key names)
            if key in b.deferred:
                self._emit_start(b, b.deferred[key], key)
            self._stream_param(b, b.winner or b.leader or b.cands[0], item.obj, key)
        elif kind is Kind.ISSUE:
            self._emit_issue(b, item.obj, item.key)
        else:
            obs = self.observer
            if obs is None:
                self.sink.text(item.obj, b.channel)
            else:  # prose a block read between its parts
                obs.inside(b)
                try:
                    self.sink.text(item.obj, b.channel)
                finally:
                    obs.inside(None)

    def _emit_start(self, b: Block, obj: tuple[str, str | None, int | None], key: Key) -> None:
        if b.channel is Channel.REASONING and self.policy.calls_in_reasoning != "accept":
            return
        if b.inline and b.phase is Phase.LEX and key not in b.deferred:
            b.deferred[key] = obj  # announced once an argument shows it is no quotation
            return
        b.deferred.pop(key, None)
        if key in b.started or self.calls_out + len(b.started) >= self.limits.max_calls:
            return
        name, call_id, name_end = obj
        if self.window.eof and name_end is not None and name_end >= self.window.end:
            return  # a name that runs to the end of the text may be cut off: never announced
        announced = self.binder.announce(name, (b.winner or b.leader or b.cands[0]).g.name)
        if announced is not None:
            self._start(b, key, announced, call_id)

    def _emit_issue(self, b: Block, issue: Issue, key: Key | None) -> None:
        started = None
        if key is not None:
            b.sent.pop(key, None)
            started = b.started.pop(key, None)
        if started is not None:
            if not self.folded:
                self.sink.event(call_abort(started[0], issue.kind))
        elif key is not None and key.source is Source.PAYLOAD and key.elem is None:
            # the whole payload at this offset failed: every call announced from it ends
            for k in sorted(k for k in b.started if k.source is Source.PAYLOAD and k.at == key.at):
                b.sent.pop(k, None)
                index = b.started.pop(k)[0]
                if not self.folded:
                    self.sink.event(call_abort(index, issue.kind))
        self.sink.diag(issue, (b.winner or b.leader or b.cands[0]).g.name)

    def _emit_call(self, b: Block, raw: RawCall, key: Key | None) -> None:
        if b.channel is Channel.REASONING and self.policy.calls_in_reasoning != "accept":
            self._report_in_reasoning(raw)
            return
        if self.calls_out >= self.limits.max_calls:
            started = b.started.pop(key, None) if key is not None else None
            if started is not None and not self.folded:
                self.sink.event(call_abort(started[0], "limit_exceeded"))
            # each call past the cap is reported over its own text: nothing goes unreported
            self.sink.diag(
                Issue(
                    "limit_exceeded",
                    {"limit": "max_calls", "value": self.limits.max_calls, "name": raw.name},
                    raw.span,
                    f"more than max_calls={self.limits.max_calls} calls; {raw.name!r} is dropped",
                ),
                raw.family,
            )
            return
        if key is not None:
            # (each looked at only when it holds anything: a reply parsed whole holds none)
            typed = b.typed.pop(key, None) if b.typed else None
            started = b.started.pop(key, None) if b.started else None
            sent, _held = b.sent.pop(key, (0, False)) if b.sent else (0, False)
        else:
            typed, started, sent = None, None, 0
        call, diags = self.binder.bind(raw, typed)
        if call is None:
            if started is not None and not self.folded:
                self.sink.event(call_abort(started[0], diags[-1].kind if diags else "dropped"))
            for d in diags:
                self.sink.diag_obj(d)
            return
        if started is not None:
            index = started[0]
        else:
            index = self.call_index
            self.call_index += 1
            if not self.folded:
                self.sink.event(call_start(index, call.name, call.id))
        self.calls_out += 1
        if b.cands[0].rule == LINE_RULE:
            self.line_calls += 1
        if not self.folded and (sent < len(call.arguments_json) or not sent):
            self.sink.event(arguments_delta(index, call.arguments_json[sent:]))
        self.sink.call(index, call)
        for d in diags:
            self.sink.diag_obj(d)

    def _report_in_reasoning(self, raw: RawCall) -> None:
        bound, _ = self.binder.bind(raw)  # typed as it would be dispatched
        shown = bound.arguments_json if bound is not None else raw.arguments_json or json.dumps(raw.text_params)
        self.sink.diag(
            Issue(
                "call_in_reasoning",
                {"name": raw.name, "excerpt": excerpt(shown)},
                raw.span,
                f"{raw.name!r} was called inside reasoning; not returned",
            ),
            raw.family,
        )

    def emit_pending(self, b: Block, c: Cand, issues_only: bool = False) -> None:
        if b.leader is not None and b.leader is not c:
            b.emitted = 0  # a different candidate's items: none of them were sent
        for item in c.items[b.emitted :]:
            if not issues_only or item.kind is Kind.ISSUE:
                self.emit_item(b, item)
        b.emitted = len(c.items)

    def abort_started(self, b: Block, reason: str) -> None:
        if not self.folded:
            for _key, (index, _name) in sorted(b.started.items()):
                self.sink.event(call_abort(index, reason))
        b.started.clear()
        b.sent.clear()
        b.typed.clear()
