"""Prose and reasoning: reading visible text up to the next marker, switching channels
at reasoning markers, and the reply's first character (where a reply-anchored grammar
may claim the reply)."""

from __future__ import annotations

import re
from typing import Final

from ..catalog import FURNITURE, OPEN, REND, RSTART, Marker
from ..compiled_grammar import EXTERNALS, LINE_RULE, CompiledGrammar
from .arbiter import Arbiter
from .cand import Block
from .events import Sink
from .kinds import CHANNEL_TEXT, Channel, Closer, Mode
from .ledger import Ledger
from .search import SHORT, Skipping
from .shared import Shared
from .window import Window

__all__ = ["Prose"]

_NON_WS: Final = re.compile(r"\S")
_BLANKS: Final = re.compile(r"[ \t]*")


class Prose:
    """Reads prose and reasoning (owns ``channel``, ``rclose``, ``reply_started``,
    ``settled``, ``line_tried`` and ``nl_seen``).  At a marker that opens a block it asks the
    arbiter to open one; at a backtick or tilde it hands the reading to the fences room
    (``Mode.TICKS``)."""

    __slots__ = (
        "shared", "cat", "policy", "binder", "window", "sink", "ledger", "arbiter", "marker_search",
        "marker_search_short", "channel", "rclose", "reply_started", "settled", "line_tried", "nl_seen",
    )  # fmt: skip

    def __init__(self, shared: Shared, window: Window, sink: Sink, ledger: Ledger, arbiter: Arbiter) -> None:
        self.shared = shared
        self.cat = catalog = shared.cat
        self.policy = policy = shared.policy
        self.binder = shared.binder
        self.window = window
        self.sink = sink
        self.ledger = ledger
        self.arbiter = arbiter
        # every marker begins with one of first_rx; in a short text, where lead_rx finds
        # (they hold no state: one pair per catalog)
        searches: tuple[Skipping, Skipping] | None = shared.cache.get("marker searches")
        if searches is None:
            searches = shared.cache["marker searches"] = (
                Skipping(catalog.prose, catalog.first_rx, leads=catalog.leads if catalog.leads.far else None),
                Skipping(catalog.prose, catalog.lead_rx),
            )
        self.marker_search, self.marker_search_short = searches
        self.channel = Channel.REASONING if policy.start_in_reasoning else Channel.TEXT
        # the wrapper whose closer ends the reasoning (any, when the template opened it)
        self.rclose: str | Closer | None = Closer.ANY if policy.start_in_reasoning else None
        self.reply_started = False
        self.settled = 0  # no marker can be arriving at a position before this (_partial_before)
        self.line_tried: int | None = None  # where a line start was last tried (_line_start)
        self.nl_seen = (0, -1, 0)  # the last search for a line break (_line_break)

    def text(self, s: str) -> None:
        """Prose read: it goes out in the channel being read."""
        self.sink.text(s, self.channel)

    def started(self) -> bool:
        """Whether the reply's first character was read (a reply-anchored grammar had its look)."""
        return self.reply_started or self.channel is not Channel.TEXT

    def _partial_before(self, limit: int) -> int:
        """Earliest position before ``limit`` where a marker may be starting but is cut off.

        A position found not to be one never becomes one (more text cannot make a
        beginning that went wrong right again, nor a complete marker longer than it can
        be): ``settled`` remembers how far that is known, so each position is looked at
        once however many deltas pass while text is held."""
        if self.window.eof:
            return -1
        w = self.window
        win = w.win
        n = len(win)
        hi = min(limit, n)
        cat = self.cat
        lo = max(w.cur, n - cat.max_width, self.settled - w.base)
        if lo < hi:  # (text read whole: the next marker is found before its last few characters)
            cut_off = cat.cut_off
            # a run of backticks or tildes that ends the text may still grow into a fence
            fence = n
            if win[-1] in "`~":
                fence = n - 1  # (where that run begins, from lo on)
                while fence > lo and win[fence - 1] == win[-1]:
                    fence -= 1
            # further than the narrow markers reach from the end, only a wide one can be cut
            # off by it (wide_rx: where one may begin); nearer, any (lead_rx)
            far = n - cat.narrow_width
            if lo < far:  # (text read whole, or a long hold)
                for m in cat.wide_rx.finditer(win, lo, min(far, hi, fence)):
                    p = m.start()
                    if cut_off(win[p:]):
                        self.settled = w.base + p
                        return p
                lo = far
            for m in cat.lead_rx.finditer(win, lo, hi if hi < fence else fence):
                p = m.start()
                if cut_off(win[p:]):
                    self.settled = w.base + p
                    return p
            if fence < hi:
                self.settled = w.base + fence
                return fence
        self.settled = max(self.settled, w.base + hi)
        return -1

    def step(self) -> Mode | None:
        """Read prose from the reading position: None to wait for more text, else the mode
        that reads next."""
        w = self.window
        win = w.win
        cur = w.cur
        if not self.reply_started and self.channel is CHANNEL_TEXT:
            m = _NON_WS.search(win, cur)
            if m is None:
                self.text(win[cur:])
                w.move(len(win))
                return None
            if m.start() > cur:
                self.text(win[cur : m.start()])
                w.move(m.start())
            return self._reply_start(w.cur)
        lines = self._lines_open()
        if lines and not self.sink.line_prose and self.line_tried != w.base + cur:
            got = self._line_start(cur)
            if got is not None:
                return Mode.BLOCK if got else None
        end = len(win)
        if lines:
            # prose stops at the next line break: a marker that begins after it is not
            # looked for now (a marker is at most max_width long), so each line is searched once
            nl = self._line_break(cur)
            if nl >= 0:
                end = min(end, nl + 1 + self.cat.max_width)
        short = end - cur <= SHORT
        if short:
            f = self.cat.lead_rx.search(win, cur, end)
            at = -1 if f is None else f.start()
        else:
            at = self.cat.leads.find(win, cur, end)
        if at < 0:
            # no character a marker (or a fence) begins with: all of it is text, and no
            # marker can be cut off at its end
            if lines and self._to_line_end(cur, len(win)):
                return Mode.PROSE
            self.text(win[cur:])
            w.move(len(win))
            return None
        # (from the first character a marker may begin with: the search finds it there first,
        # and none can be arriving before it)
        m = (self.marker_search_short if short else self.marker_search).search(win, at, end)
        limit = m.start() if m else len(win)
        if w.base + at > self.settled:
            self.settled = w.base + at
        p = self._partial_before(limit)
        if lines and self._to_line_end(cur, p if p >= 0 else limit):
            return Mode.PROSE
        if p >= 0:
            self.text(win[cur:p])
            w.move(p)
            return None
        if m is None:
            self.text(win[cur:])
            w.move(len(win))
            return None
        q = m.start()
        if q > cur:
            self.text(win[cur:q])
            w.move(q)
        # (where the search was not cut short, its match is the marker's when only one can begin here)
        return self._at_marker(q, m.end() if end == len(win) and win[q] not in "`~" else -1)

    # -- lines on their own (a grammar's `line` rule) ------------------------------------------

    def _lines_open(self) -> bool:
        """Whether a visible line may be a call on its own: a grammar has a ``line`` rule, a
        toolset is given, the text channel reads, and every call returned so far came from
        such a line (decisions.md, "GLM lines on their own")."""
        return (
            bool(self.cat.lines)
            and bool(self.binder.known)
            and self.channel is Channel.TEXT
            and self.ledger.only_line_calls()
        )

    def line_may_begin(self, delta: str) -> bool:
        """Whether a line that may be a call on its own begins in ``delta`` (arriving with
        nothing held): where prose would look for one (the delta's start, when its line has
        no prose yet, and after each line break), only blanks so far or the first
        character of a name the toolset offers."""
        if not self._lines_open():
            return False
        index = self.binder.index
        assert index is not None  # (lines are read against a toolset)
        first, after_break = index.line_starts()
        return (not self.sink.line_prose and first.match(delta) is not None) or after_break.search(delta) is not None

    def _to_line_end(self, cur: int, limit: int) -> bool:
        """Text up to and with the first line break before ``limit``, so that the next line
        is looked at where it begins; False when there is none."""
        nl = self._line_break(cur)
        if nl < 0 or nl >= limit:
            return False
        self.text(self.window.win[cur : nl + 1])
        self.window.move(nl + 1)
        return True

    def _line_break(self, cur: int) -> int:
        """The first line break at or after ``cur`` in the window (-1: none yet).  What was
        searched is remembered (``nl_seen``: from, the break found or -1, searched up to),
        so text is searched once however often prose stops before the break."""
        w = self.window
        at = w.base + cur
        start, found, upto = self.nl_seen
        if start <= at:
            if found >= at:
                return found - w.base
            if found < 0 and upto > at:
                at = upto  # no break in [start, upto)
        p = w.win.find("\n", at - w.base)
        if p < 0:
            self.nl_seen = (w.base + cur, -1, w.base + len(w.win))
            return -1
        self.nl_seen = (w.base + cur, w.base + p, w.base + p)
        return p

    def _line_start(self, q: int) -> bool | None:
        """Where a visible line begins (only blanks before ``q`` on it): a line rule is tried
        when its first token is a name the toolset offers.  False to wait for more text,
        True once a block is open, None when the line is prose."""
        w = self.window
        win = w.win
        run = _BLANKS.match(win, q)
        assert run is not None  # (a run: it matches, empty or not)
        r = run.end()
        if r >= len(win) and not self.window.eof:
            return False  # the line's first word has not arrived
        index = self.binder.index
        assert index is not None  # (lines are read against a toolset)
        if r < len(win) and win[r] not in index.name_firsts():
            # no name the toolset offers begins with this character: prose, whatever follows
            self.line_tried = w.base + q
            return None
        cands = []
        for g in self.cat.lines:
            for term in g.openers.get(LINE_RULE, ()):
                pat = term.pattern
                if pat is None:
                    continue
                if not self.window.eof and pat.needs_more(win, r):
                    return False
                end = pat.match_end(win, r)
                if end is None or end <= r or win[r:end] not in self.binder.known:
                    continue
                if end >= len(win) and not self.window.eof:
                    return False  # the name may go on
                cands.append(self.shared.cand(g, LINE_RULE, w.base + q, True))
                break
        self.line_tried = w.base + q
        if not cands:
            return None
        self.reply_started = True
        # read like a reply (Block.reply): a line cut off by the end of the text after its name
        # is a truncated call, a line that does not read is prose from its first character
        self.arbiter.adopt(Block(w.base + q, w.base + q, cands, self.channel, True, w.tail_at(q)))
        return True

    def _matches(self, q: int, known: int = -1) -> tuple[list[tuple[Marker, int]], bool]:
        """Markers matching at ``q`` (longest first) and whether one may still grow;
        ``known``: where the prose search's match at ``q`` ends (-1: not searched), which
        is the marker's own when only one marker can begin there."""
        win = self.window.win
        near = len(win) - q  # (a marker that cannot reach the end of the text is not arriving)
        eof = self.window.eof
        viable = self.cat.viable(win, q)
        if known > q and len(viable) == 1:
            mk = viable[0]
            pat = mk.terminal.marker
            if not eof and pat.max_width >= near and pat.needs_more(win, q):
                return [], True
            return [(mk, known)], False
        found = []
        for mk in viable:
            pat = mk.terminal.marker
            if not eof and pat.max_width >= near and pat.needs_more(win, q):
                return [], True
            exact = pat.exact
            if exact is not None:
                end = q + len(exact)
                end = end if win[q:end] == exact else q
            else:
                m = pat.regex.match(win, q)
                end = q if m is None else m.end()
            if end > q:
                found.append((mk, end))
        if found:
            best = max(e for _, e in found)
            found = [(mk, e) for mk, e in found if e == best]
        return found, False

    def _at_marker(self, q: int, known: int) -> Mode | None:
        found, wait = self._matches(q, known)
        return None if wait else self._at_found(q, found)

    def _at_found(self, q: int, found: list[tuple[Marker, int]]) -> Mode | None:
        """What the markers ``found`` at ``q`` (``_matches``) do there."""
        if not found:
            return Mode.TICKS  # a backtick or tilde: the fences room reads it
        end = found[0][1]
        roles = {mk.role for mk, _ in found}
        if OPEN in roles:
            openers = [mk for mk, _ in found if mk.role == OPEN]
            if self.arbiter.open_block(q, end, openers, self.channel):
                self.reply_started = self.reply_started or self.channel is Channel.TEXT
                return Mode.BLOCK
        sp = self.window.specials
        # a family's special token spelled in ordinary tokens is not its furniture
        plain = sp is not None and sp.ordinary(self.window.base + q, self.window.win[q:end])
        for mk, _ in found:
            if mk.role == RSTART and self.channel is Channel.TEXT:
                self.channel = Channel.REASONING
                self.rclose = mk.pair
                self.window.move(end)
                return Mode.PROSE
            if mk.role == REND:
                if self.channel is Channel.REASONING and (self.rclose is Closer.ANY or self.rclose == mk.pair):
                    self.channel = Channel.TEXT
                    self.rclose = None
                    self.window.move(end)
                    return Mode.PROSE
                if self.channel is Channel.TEXT:  # a stray closer is furniture
                    self.window.move(end)
                    return Mode.PROSE
            if mk.role == FURNITURE and not (plain and mk.terminal.grammar in self.cat.special_only):
                self.window.move(end)
                return Mode.PROSE
        # nothing applies (an opener declined, or a reasoning opener inside reasoning): it is text
        self.text(self.window.win[q:end])
        self.window.move(end)
        return Mode.PROSE

    def _reply_start(self, q: int) -> Mode | None:
        """The first visible non-space character: a reply-anchored grammar may claim it."""
        found, wait = self._matches(q)
        if wait:
            return None
        roles = {mk.role for mk, _ in found}
        if roles and OPEN not in roles:
            return self._at_found(q, found)
        if OPEN in roles and not self._lines_open():
            # a reply that opens with a marker: read where prose would find it next
            self.reply_started = True
            return self._at_found(q, found)
        if not roles and self.policy.bare_json and self.cat.reply_furniture:
            # a header the prompt left open (a recipient line): framing, then the reply goes on
            for term in self.cat.reply_furniture:
                if not self.window.eof and term.marker.needs_more(self.window.win, q):
                    return None
                end = term.marker.match_end(self.window.win, q)
                if end is not None and end > q:
                    self.reply_started = True
                    self.window.move(end)
                    return Mode.PROSE
        self.reply_started = True
        if OPEN in roles or not self.cat.reply:
            return Mode.PROSE
        cands = []
        for g in self.cat.reply:
            # Policy(bare_json=False) turns off replies read without a marker; a reply form
            # that opens with a header the prompt began (`reply: start header`) stays on
            if not self.policy.bare_json and not g.header.reply_header:
                continue
            if g.header.gated and not self.binder.known:
                continue
            if self._can_begin(g, "reply", q):
                cands.append(self.shared.cand(g, "reply", self.window.base + q, True))
        if not cands:
            return Mode.PROSE
        self.arbiter.adopt(
            Block(self.window.base + q, self.window.base + q, cands, self.channel, True, self.window.tail_at(q))
        )
        return Mode.BLOCK

    def _can_begin(self, g: CompiledGrammar, rule: str, q: int) -> bool:
        """Whether ``g``'s ``rule`` may read a first token at ``q``: one of its first
        terminals matches there (or may, once more text comes), or a token it ignores may
        begin there. A candidate would fail at once where none does (a reply that opens
        with prose, for a reply read as ``NAME\n{…}``), and is not made."""
        win = self.window.win
        ch = win[q]
        if g.ignore_first is None or ch in g.ignore_first:
            return True
        eof = self.window.eof
        for term in g.openers.get(rule, ()):
            if term.external:
                if ch in EXTERNALS[term.name]:
                    return True
            elif term.marker.first is None or ch in term.marker.first:
                pat = term.marker
                if not eof and pat.needs_more(win, q):
                    return True
                end = pat.match_end(win, q)
                if end is not None and end > q:
                    return True
        return False

    def reasoning_close_in(self, start: int, end: int) -> int | None:
        """Inside protected text in reasoning, the reasoning closer stays live."""
        if self.channel is not Channel.REASONING:
            return None
        best = None
        for mk in self.cat.markers:
            if mk.role == REND and (self.rclose is Closer.ANY or self.rclose == mk.pair):
                m = mk.terminal.marker.regex.search(self.window.win, start, end)
                if m is not None and (best is None or m.start() < best):
                    best = m.start()
        return best

    def partial_reasoning_close(self, start: int, end: int) -> int:
        if self.channel is not Channel.REASONING or self.window.eof:
            return -1
        win = self.window.win
        lo = max(start, len(win) - self.cat.max_width)
        for p in range(lo, min(end, len(win))):
            for mk in self.cat.at(win, p):
                if mk.role == REND and mk.terminal.marker.needs_more(win, p):
                    return p
        return -1
