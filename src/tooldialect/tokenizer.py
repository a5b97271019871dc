"""The incremental tokenizer: text in, events out, no I/O, linear time.

It scans prose for the markers the grammars declare, holds back only what is still
undecided (a partial marker, an open block, an unmatched backtick, a reply that may
be one JSON call), and hands each block to the LALR parsers of the families whose
opener it found.  Every family gets its own candidate parse of the same text; the
body decides which one reads it.  A block's text is read once by each candidate;
text given back (a block that turned out not to be one) is read once more as prose.

Positions are absolute offsets in the whole input.  ``win`` holds the text from
``base`` that is not yet decided; text passed by a block's candidates moves into the
block's own list of pieces, so a long block never makes ``win`` large.
"""

from __future__ import annotations

import bisect
import json
import re
from typing import Any

from .binding import Binder
from .catalog import FURNITURE, OPEN, REND, RSTART, Catalog, Marker
from .argstream import StrictPrefix, member
from .grammar import EXTERNALS, JSON_EXTERNALS, MAX_MARKER_WIDTH, CompiledGrammar, Terminal
from .jsonscan import CUT, DONE, FAIL, MORE, JsonScanner
from .strscan import StringScanner
from .lalr import END, LRParser, Node, Tok
from .models import (
    ArgumentsDelta,
    CallAbort,
    CallEnd,
    CallStart,
    Diagnostic,
    DiagnosticEvent,
    Event,
    Policy,
    ReasoningDelta,
    TextDelta,
)
from .transform import ARGUMENT_KEYS, KEYED_RULE, Issue, RawCall, Reader, excerpt, reader_class
from .transform import _text as _node_text

__all__ = ["Engine"]

_new = object.__new__
_set = object.__setattr__


def _builder(cls: Any, *names: str) -> Any:
    """A constructor for a per-delta event that skips ``model_construct``'s generic field
    walk: the same four slots set to the same values, for a model with only required
    fields, no private attributes and no post-init hook (checked here, once)."""
    plain = (
        set(cls.model_fields) == set(names)
        and all(f.is_required() and f.alias is None and f.validation_alias is None for f in cls.model_fields.values())
        and not cls.__private_attributes__
        and not cls.__pydantic_post_init__
        and cls.model_config.get("extra") != "allow"
    )
    if not plain:  # pragma: no cover - a model that grew a default or a hook
        return lambda *values: cls.model_construct(**dict(zip(names, values)))
    if len(names) == 1:
        (a,) = names

        def build1(x: Any) -> Any:
            m = _new(cls)
            _set(m, "__dict__", {a: x})
            _set(m, "__pydantic_fields_set__", {a})
            _set(m, "__pydantic_extra__", None)
            _set(m, "__pydantic_private__", None)
            return m

        return build1
    a, b = names  # two fields: all the per-delta events have

    def build2(x: Any, y: Any) -> Any:
        m = _new(cls)
        _set(m, "__dict__", {a: x, b: y})
        _set(m, "__pydantic_fields_set__", {a, b})
        _set(m, "__pydantic_extra__", None)
        _set(m, "__pydantic_private__", None)
        return m

    return build2


class _Skipping:
    """A pattern whose matches all begin with one of a few characters, searched by first
    finding such a character (one C-level scan of a character class) and trying the
    pattern from there: a long alternation of markers is slow to try at every position."""

    __slots__ = ("rx", "first", "pats")

    def __init__(self, rx: re.Pattern[str], first: re.Pattern[str] | None, pats: tuple[Any, ...] = ()) -> None:
        self.rx = rx
        self.first = first  # a character class: where a match may begin (None: anywhere)
        self.pats = pats  # the alternatives' MarkerPatterns, when known

    def search(self, text: str, pos: int, end: int = 1 << 62) -> re.Match[str] | None:
        first, rx = self.first, self.rx
        if first is None:
            return rx.search(text, pos, end)
        while True:
            f = first.search(text, pos, end)
            if f is None:
                return None
            m = rx.match(text, f.start(), end)
            if m is not None:
                return m  # the leftmost match: none can begin before this character
            pos = f.start() + 1


# inside a JSON string: characters and whole two-character escapes, with nothing to note

_text_delta = _builder(TextDelta, "text")
_reasoning_delta = _builder(ReasoningDelta, "text")
_arguments_delta = _builder(ArgumentsDelta, "index", "fragment")

TEXT_CHANNEL, REASONING = "text", "reasoning"
TEXT = "TEXT"  # the raw-text scanner's terminal
RUN, WAIT, DONE_, FAILED = "run", "wait", "done", "failed"

_WS = re.compile(r"\s*")
_NON_WS = re.compile(r"\S")
_BACKTICKS = re.compile(r"`+")
_FENCE_RUN = re.compile(r"`{3,}|~{3,}")
_INLINE_STOP = re.compile(r"`+|\n[ \t]*\n")
_SPACES = re.compile(r"[ \t]*")
_TAG_OPEN = re.compile(r"<[A-Za-z]")  # an XML-like tag, not a model's special token (<|…|>, [TOOL_CALLS])
_RUN = {"`": re.compile(r"`*"), "~": re.compile(r"~*")}
_MAX_FENCE_LINE = 256
#: A backtick or tilde run longer than this opens no fence and no code span: it is text.
#: Deciding that early keeps a run from being held (and read again) while it grows.
_MAX_RUN = 256
_PAYLOAD_RULES = frozenset({"json_calls", "bare_json_calls", KEYED_RULE})  # nodes read from a JSON token
_ESCAPE_GROUP = "escaped"
_ESCAPE_PAIR = rf"(?P<{_ESCAPE_GROUP}>\\[\s\S])"  # a backslash and the character it escapes
_START_CHARS = {name: re.compile("[" + re.escape(chars) + "]") for name, chars in EXTERNALS.items()}


def _resumed(ig: Terminal, text: str, pos: int) -> bool:
    """Whether an ignored token at ``pos`` (or its start) may still grow into a longer match
    once more text arrives.  Only bounded terminals are re-read (a comment, a split escape);
    unbounded white space is skipped as it comes, so a long run is never read twice."""
    pat = ig.pattern
    if pat.max_width > MAX_MARKER_WIDTH:
        return False
    if pos < len(text) and pat.first is not None and text[pos] not in pat.first:
        return False  # it cannot begin here: nothing to wait for
    return pat.needs_more(text, pos)


def _body_closed(c: Cand) -> bool:
    """Whether the last token a candidate read closed its body: a closer, or an opener of
    the block written again as its closer (``<|tool_call|>…<|tool_call|>``)."""
    last = c.last_type
    return last.endswith("_CLOSE") or any(t.name == last for t in c.g.openers.get(c.rule, ()))


def _bare(term: Terminal) -> bool:
    """A token that is not a marker: a name-like pattern, neither a literal, an opener, a
    closer, nor a scanned payload."""
    pat = term.pattern
    return pat is not None and pat.literal is None and not term.name.endswith(("_OPEN", "_CLOSE"))


class _Balance:
    """The brackets and strings of a payload that went deeper than ``max_depth``, counted
    (never parsed) to find where it ends, so that the prose after it stays text.  Linear:
    each character is looked at once, runs of plain characters in one regex step."""

    __slots__ = ("depth", "quote", "escape", "pos", "end")

    _PLAIN = re.compile(r"[^\[\](){}\"'\\]+")
    _IN_STRING = {q: re.compile(r"[^\\" + q + "]+") for q in "\"'"}

    def __init__(self, pos: int) -> None:
        self.depth = 0
        self.quote = ""  # the quote of the string being read ("" outside strings)
        self.escape = False
        self.pos = pos  # absolute: everything before it was counted
        self.end = -1  # absolute: just after the bracket that closed the payload, once found

    def scan(self, text: str, lo: int, hi: int) -> int:
        """Count ``text[lo:hi]``; the index just after the bracket that closes the payload,
        or -1 when it is still open at ``hi``."""
        i = lo
        while i < hi:
            if self.quote:
                if self.escape:
                    self.escape = False
                    i += 1
                    continue
                m = self._IN_STRING[self.quote].match(text, i, hi)
                if m is not None:
                    i = m.end()
                    continue
                ch = text[i]
                if ch == "\\":
                    self.escape = True
                elif ch == self.quote:
                    self.quote = ""
                i += 1
                continue
            m = self._PLAIN.match(text, i, hi)
            if m is not None:
                i = m.end()
                continue
            ch = text[i]
            i += 1
            if ch in "\"'":
                self.quote = ch
            elif ch in "([{":
                self.depth += 1
            elif ch in ")]}":
                self.depth -= 1
                if self.depth <= 0:
                    return i
        return -1


class Cand:
    """One family's parse of a block."""

    __slots__ = (
        "g",
        "rule",
        "parser",
        "pos",
        "state",
        "scanner",
        "tok_start",
        "last_end",
        "soft",
        "items",
        "fail_pos",
        "fail_kind",
        "fail_reason",
        "reader",
        "ntoks",
        "whole",
        "payload_at",
        "ext_type",
        "bad",
        "bad_reason",
        "closed",
        "trail",
        "resync",
        "resync_tok",
        "resync_reason",
        "text_start",
        "text_stops",
        "text_rx",
        "text_first",
        "text_tentative",
        "body_at",
        "named_begun",
        "named_done",
        "current_name",
        "args_read",
        "cut_json",
        "reach",
        "opens",
        "resync_mode",
        "loose",
        "skip_at",
        "last_type",
        "sp",
        "sp_from",
        "sp_fed",
        "sp_obj",
        "sp_key",
        "sp_done",
        "cut_elem",
        "json_start",
        "opened_at",
        "_accepted",
    )

    def __init__(
        self,
        g: CompiledGrammar,
        rule: str,
        pos: int,
        soft: bool,
        reader: Reader,
        accepted: dict[Any, Any] | None = None,
    ) -> None:
        self.g = g
        self.rule = rule
        self.reader = reader
        # ("start", (name, id or None, where the name ends), key) | ("param", Node, key) (a value written as text, complete) |
        # ("call", RawCall, key) | ("issue", Issue, key) | ("text", str, -1) (prose inside
        # the block, shown as written); the key ties a call to its announcement:
        # ("json", payload#) or ("call", call#)
        self.items: list[tuple[str, Any, Any]] = []
        self.parser = LRParser(g.tables, rule, self._on_node)
        self.pos = pos
        self.state = RUN
        self.scanner: JsonScanner | StringScanner | None = None
        self.tok_start = -1
        self.last_end = pos
        self.soft = soft
        self.fail_pos = -1
        self.fail_kind = ""
        self.fail_reason = ""
        self.ntoks = 0
        self.whole = rule == "reply" and g.header.reply == "whole"
        self.payload_at = -1
        self.ext_type = ""
        self.bad = False
        self.bad_reason = "the payload is not a call"
        self.closed = False  # a closer terminal was read
        self.trail = False  # ended at unexpected text before any closer
        self.resync = -1  # after a broken payload: searching from here for the next one
        self.resync_tok = -1
        self.resync_reason = ""
        self.text_start = -1  # a raw text value being read
        self.text_stops: tuple[Terminal, ...] = ()
        self.text_rx: re.Pattern[str] | None = None
        # (where a stop may begin, the longest stop): where a cut-off stop is looked for
        self.text_first: tuple[re.Pattern[str] | None, int] = (None, 0)
        self.text_tentative: int | None = None
        self.body_at = -1  # where the first token after the opener begins
        self.named_begun = 0  # calls announced by a name node
        self.named_done = 0  # calls completed by a call node
        self.current_name: str | None = None
        self.args_read = 0  # arguments (or parameters) read since the last announcement
        self.cut_json = False  # the cut fell inside a JSON payload (else in a text call)
        self.reach = -1  # where a failure was detected (not where a stream happened to stop)
        self.opens: dict[str, int] = {}  # X_OPEN read minus X_CLOSE read, per structure X
        self.resync_mode = ""  # "payload": after a broken payload; "junk": text before a closer
        # where the block could have ended before bare tokens (a name with no marker yet):
        # (parser stack, parser values, item count, end of the block there), or None
        self.loose: tuple[list[int], list[Any], int, int] | None = None
        self.skip_at = -1  # where it first passed over text it could not read (-1: never)
        self.last_type = ""  # the type of the last token read
        # the JSON arguments being read, followed as strict JSON so that a stream can send
        # them as they arrive (argstream.py): from where, fed up to where, whether the JSON
        # is a call object (else the arguments themselves), and the call's item key
        self.sp: StrictPrefix | None = None
        self.sp_from = -1
        self.sp_fed = -1
        self.sp_obj = False
        self.sp_key: Any = None
        self.sp_done = 0  # call objects before this one were sent as far as they go
        self.cut_elem = 0  # the call object of a payload the end of the text cut off
        # where the last JSON payload began: a payload's calls are keyed by it, so a broken
        # payload's announced call never lends its announcement to the next payload
        self.json_start = -1
        self.opened_at: set[int] = set()  # where the parser read an opener as a token
        # the terminals accepted at a parser stack: the same for every block of a grammar
        self._accepted: dict[tuple[int, ...], dict[str, Terminal]] = {} if accepted is None else accepted

    def shift(self, tok: Tok, term: Terminal | None) -> bool:
        """Feed a token, keeping track of which structures are open and of where the block
        could have ended before a run of bare tokens."""
        if term is not None and _bare(term):
            # the block read something complete (not only an announced name) and could end here
            if self.loose is None and self._last_kind() not in ("", "start") and self.parser.accepts(END):
                self.loose = (list(self.parser.stack), list(self.parser.values), len(self.items), self.last_end)
        else:
            self.loose = None  # a marker or a payload: the tokens since belong to the block
        if tok.type in JSON_EXTERNALS:
            self.json_start = tok.start if tok.start is not None else -1
        ok = self.parser.feed(tok)
        name = tok.type
        self.last_type = name
        if name.endswith("_OPEN"):
            if tok.start is not None:
                self.opened_at.add(tok.start)
            key = name[: -len("_OPEN")]
            self.opens[key] = self.opens.get(key, 0) + 1
        elif name.endswith("_CLOSE"):
            self.closed = True
            key = name[: -len("_CLOSE")].removeprefix("FURNITURE_")
            for k in sorted(self.opens, key=len, reverse=True):
                if k.startswith(key) and self.opens[k] > 0:
                    self.opens[k] -= 1
                    break
        return ok

    def _last_kind(self) -> str:
        """The kind of the last item that is not a parameter ("" when there is none)."""
        for kind, _, _ in reversed(self.items):
            if kind != "param":
                return kind
        return ""

    def unloose(self) -> bool:
        """End the block where it could end, before bare tokens it cannot go on from
        (prose after the calls that begins like a name).  False when there is no such place."""
        if self.loose is None:
            return False
        stack, values, nitems, end = self.loose
        self.loose = None
        self.parser.restore(stack, values)
        del self.items[nitems:]
        self.pos = self.last_end = end
        return True

    def open_closers(self) -> list[Terminal]:
        """Closers the parser accepts now that close a structure still open."""
        out = []
        for t in self.g.closers:
            key = t.name[: -len("_CLOSE")].removeprefix("FURNITURE_")
            if any(k.startswith(key) and n > 0 for k, n in self.opens.items()) and self.parser.accepts(t.name):
                out.append(t)
        return out

    def accepted(self) -> dict[str, Terminal]:
        """The terminals the parser accepts now (exactly), by name."""
        key = tuple(self.parser.stack)
        got = self._accepted.get(key)
        if got is None:
            got = {}
            for ttype in self.parser.expected():
                if ttype == END:
                    continue
                term = self.g.terminals.get(ttype)
                if term is not None and self.parser.accepts(ttype):
                    got[ttype] = term
            self._accepted[key] = got
        return got

    def _on_node(self, node: Node) -> None:
        announced = self.reader.announce(node)
        if announced is not None and self.g.header.gated and announced not in self.reader.known:
            # a registry-gated body names only tools the toolset offers, exactly: this body
            # is not this family's (another family may read it)
            self.bad = True
            self.bad_reason = f"{excerpt(announced)!r} is not a tool the toolset offers"
            return
        if announced is not None:
            self.current_name = announced
            # an id that names the call (Kimi's functions.NAME:IDX) is known already
            call_id = _node_text(node).strip() if node.name == "call_id" else None
            self.items.append(("start", (announced, call_id, node.end), ("call", self.named_begun)))
            self.named_begun += 1
            self.args_read = 0
            if self.rule == "start":
                # a tentative opener followed by a call's name is a call block after all:
                # from here a bad or cut-off body is reported, not shown
                self.soft = False
            return
        if node.name in ("param", "arguments"):
            self.args_read += 1
        if self.current_name is not None and node.name == "param":
            self.items.append(("param", node, ("call", self.named_begun - 1)))
        elif self.current_name is not None and node.name in self.reader.member_nodes:
            got = self.reader.literal_member(node, self.parser.values)
            if got is not None:
                self.items.append(("param", got, ("call", self.named_begun - 1)))
        got = self.reader.read(node)
        if got is None:
            return
        self.loose = None  # the bare tokens completed something
        calls, issues = got
        if self.g.header.gated:
            for call in calls:
                call.gated = True  # bound by exact name, never repaired
        if node.name in ("bare_json_calls", "bare_call") and not calls:
            self.bad = True  # a reply-anchored payload that is not a call: not a block at all
            return
        if node.name in ("call", "bare_call") and self.named_begun > self.named_done:
            key: tuple[Any, ...] = ("call", self.named_done)  # the call its name announced
            self.named_done += 1
            self.current_name = None
            call_keys = [key] * len(calls)
            issue_keys = [key] * len(issues)
        elif node.name in ("call", "bare_call"):
            key = ("call", "unannounced", node.start)  # its name announced nothing
            self.current_name = None
            call_keys = [key] * len(calls)
            issue_keys = [key] * len(issues)
        elif node.name not in _PAYLOAD_RULES and self.named_begun > self.named_done:
            # a body read whole (all or nothing) completes every call announced in it, in order
            first = self.named_done
            self.named_done = self.named_begun
            self.current_name = None
            call_keys = [("call", first + i) for i in range(len(calls))]
            issue_keys = [("call", first)] * len(issues)
        else:
            # a payload: its call objects are announced one by one (their place in it)
            key = ("json", self.json_start)
            call_keys = [key + (c.elem,) if c.elem >= 0 else key for c in calls]
            issue_keys = [key + (i.elem,) if i.elem >= 0 else key for i in issues]
        # keep source order: issues and calls interleave by position
        merged = [("call", c, k, c.span[0]) for c, k in zip(calls, call_keys)] + [
            ("issue", i, k, i.span[0] if i.span else -1) for i, k in zip(issues, issue_keys)
        ]
        merged.sort(key=lambda x: x[3])
        self.items.extend((kind, obj, k) for kind, obj, k, _ in merged)

    @property
    def junk(self) -> int:
        """Issues this candidate found in the block (fewer means it read the body better)."""
        return sum(1 for k, _, _ in self.items if k in ("issue", "text"))

    @property
    def calls(self) -> int:
        return sum(1 for k, _, _ in self.items if k == "call")

    def fail(self, pos: int, kind: str, reason: str) -> None:
        self.state = FAILED
        self.fail_pos = pos
        self.fail_kind = kind
        self.fail_reason = reason
        self.reach = max(self.reach, pos)

    @property
    def progress(self) -> int:
        """How far this candidate has read, the same at every chunking once it has stopped."""
        if self.state == FAILED:
            return self.reach
        if self.state == DONE_:
            return max(self.last_end, self.reach)
        return max(self.pos, self.reach)


class Block:
    """A region that may hold calls, while its candidates decide."""

    __slots__ = (
        "start",
        "opener_end",
        "cands",
        "channel",
        "reply",
        "pieces",
        "piece_starts",
        "prev_tail",
        "early",
        "started",
        "emitted",
        "phase",
        "winner",
        "rpos",
        "sniffed",
        "sent",
        "leader",
        "absorb",
        "loop_rx",
        "loop_pos",
        "repeats",
        "loop_first",
        "loop_at",
        "loop_clear",
        "loop_seen",
        "loop_marker",
        "balance",
        "inline",
        "deferred",
    )

    def __init__(self, start: int, opener_end: int, cands: list[Cand], channel: str, reply: bool, tail: str) -> None:
        self.start = start
        self.opener_end = opener_end
        self.cands = cands
        self.channel = channel
        self.reply = reply
        self.pieces: list[str] = []
        self.piece_starts: list[int] = []
        self.prev_tail = tail
        hard = [c for c in cands if not c.soft]
        # early events (a call announced before it completes) need one committed candidate;
        # with several, it is decided once the others have failed (see Engine._update_early)
        self.early: bool | None = (True if len(cands) == 1 else None) if hard and channel == TEXT_CHANNEL else False
        self.leader: Cand | None = cands[0] if self.early else None
        self.started: dict[Any, tuple[int, str]] = {}  # item key -> (call index, name)
        # item key -> (characters of arguments_json sent, held): what a started call's
        # ArgumentsDeltas have said so far; held calls send the rest when they end
        self.sent: dict[Any, tuple[int, bool]] = {}
        self.emitted = 0
        self.phase = "lex"
        self.winner: Cand | None = None
        self.rpos = -1
        self.sniffed = 0
        self.absorb = -1  # after a broken block's closer: where following closers are sought
        # repetition loops: the block's opener met again inside it, with no closer between
        self.loop_rx: _Skipping | None = None  # group 1: the opener, group 2: its closer
        self.loop_pos = opener_end  # the loop scan has counted everything before this
        self.repeats = 1  # openers in the current run (the block's own included)
        self.loop_first = start  # where the current run began
        self.loop_at = -1  # end of the opener that made the run a loop (-1: no loop)
        self.loop_clear = opener_end  # no loop before this: items ending here may be emitted
        # one marker width before what the loop scan has read (or the end of its last
        # match): what loop_clear follows, so that calls are released at the same points
        # whatever loop_pos skips
        self.loop_seen = opener_end
        self.loop_marker = ""
        # a payload deeper than max_depth: its brackets counted to find where it ends
        self.balance: _Balance | None = None
        # a tag opened after prose on the same line: a zero-argument call in it may be the
        # prose quoting the format (Engine._quoted); decided only once the block is read
        self.inline = False
        # announcements held back in such a block until the call shows an argument
        self.deferred: dict[Any, tuple[str, str | None, int | None]] = {}


class Engine:
    """The sans-IO core behind :class:`~tooldialect.ToolStream` and :func:`~tooldialect.parse`."""

    def __init__(self, catalog: Catalog, binder: Binder, policy: Policy) -> None:
        self.cat = catalog
        self.prose = _Skipping(catalog.prose, catalog.first_rx)  # every marker begins with one of first_rx
        self.binder = binder
        self.policy = policy
        self.win = ""
        self.base = 0
        self.cur = 0
        self.eof = False
        self.channel = REASONING if policy.start_in_reasoning else TEXT_CHANNEL
        self.rclose: str | None = "*" if policy.start_in_reasoning else None
        self.reply_started = False
        self.block: Block | None = None
        self.fence: tuple[str, int] | None = None
        self.inline: list[Any] | None = None  # [start, run length, search position, pieces]
        self.prev_tail = "\n"
        self.out: list[Event] = []
        self._pend: list[str] = []
        self._pend_kind = TEXT_CHANNEL
        self.call_index = 0
        self.calls_out = 0
        self.soft_floor = -1
        self.inline_floor = -1
        self._stop_cache: dict[Any, Any] = {}
        self._accepted: dict[str, dict[Any, Any]] = {}  # grammar -> parser stack -> accepted terminals
        self.long_run = ""  # inside a backtick or tilde run that is plain text (see _MAX_RUN)
        self.line_prose = False  # the visible line being written has prose on it so far

    # -- public -----------------------------------------------------------------------------

    def feed(self, delta: str) -> list[Event]:
        if delta:
            if self.block is not None and self._string_run(delta):
                return self._drain()
            if (
                not self.win
                and self.block is None
                and self.inline is None
                and self.fence is None
                and not self.long_run
                and (self.reply_started or self.channel != TEXT_CHANNEL)
                and self.cat.first_rx.search(delta) is None
            ):
                # prose, nothing held, and no character a marker (or fence) begins with:
                # the delta is text, as _step_prose and _compact would find it
                self.prev_tail = (self.prev_tail + delta)[-4:]
                self.base += len(delta)
                if self.channel == TEXT_CHANNEL:
                    self._note_line(delta)
                if not self._pend and not self.out:  # the delta is the one event
                    return [_text_delta(delta) if self.channel == TEXT_CHANNEL else _reasoning_delta(delta)]
                self._text(delta)
                return self._drain()
            self.win += delta
            self._run()
            self._compact()
        return self._drain()

    def _string_run(self, delta: str) -> bool:
        """A delta that only continues a value the block's one candidate is reading, with
        nothing in it to note, changes only positions: read it as _step_block would,
        without the general machinery.  That is a JSON string (plain characters and
        two-character escapes, which may span deltas: JsonScanner.string_run) or a raw text value (no character a
        stop begins with, no backslash where backslashes escape), with no character a
        loop marker begins with, under the size cap.  False, having done nothing,
        otherwise."""
        b = self.block
        if b.phase != "lex" or b.early is None or len(b.cands) != 1:
            return False
        c = b.cands[0]
        at = self.base + len(self.win)
        if c.state != WAIT or c.pos != at:
            return False
        sc = c.scanner
        sp = c.sp
        if sc is None:
            first = c.text_first[0]
            if c.text_start < 0 or first is None or first.search(delta) is not None:
                return False
            if "\\" in delta and _ESCAPE_GROUP in c.text_rx.groupindex:
                return False
        elif type(sc) is not JsonScanner:
            return False
        elif sp is not None and (c.sp_fed != at or not sp.in_plain_string()):
            return False
        rx = b.loop_rx
        if rx is not None and (not rx.pats or b.loop_pos != at or rx.first.search(delta) is not None):
            return False
        end = at + len(delta)
        if max(end, c.reach) - b.start > self.policy.max_block_chars:
            return False
        pending = 0 if sc is None else sc.string_run(delta)
        if pending < 0:
            return False
        self.win += delta
        # _advance: the scanner (or _scan_text) reads to the end of the text, waits for more
        c.pos = end
        if sc is not None:
            sc.read_run(delta, pending)
            if b.early and len(sc.names) > b.sniffed:
                self._sniffed(b, c)
            if sp is not None:
                sp.feed(delta)
                c.sp_fed = end
                if b.early and b.leader is c:
                    self._stream_args(b, c)
        # _loop_scan: no marker begins in the delta
        if rx is not None:
            b.loop_pos = end
            b.loop_seen = max(b.loop_seen, end - self.cat.max_width)
            b.loop_clear = max(b.loop_clear, b.loop_seen)
        if b.early and b.emitted < len(b.leader.items):
            self._early(b)
        self._compact()
        return True

    def close(self) -> list[Event]:
        self.eof = True
        self._run()
        return self._drain()

    # -- output -------------------------------------------------------------------------------

    def _text(self, s: str, channel: str | None = None) -> None:
        if not s:
            return
        kind = channel or self.channel
        if kind == TEXT_CHANNEL:
            self._note_line(s)
        if self._pend and kind != self._pend_kind:
            self._flush()
        self._pend_kind = kind
        self._pend.append(s)

    def _note_line(self, s: str) -> None:
        """Follow whether the visible line being written holds prose (see _quoted)."""
        nl = s.rfind("\n")
        if nl >= 0:
            self.line_prose = not s[nl + 1 :].isspace() and nl + 1 < len(s)
        elif not self.line_prose and s and not s.isspace():
            self.line_prose = True

    def _flush(self) -> None:
        if self._pend:
            s = "".join(self._pend)
            self._pend.clear()
            self.out.append(_text_delta(s) if self._pend_kind == TEXT_CHANNEL else _reasoning_delta(s))

    def _event(self, ev: Event) -> None:
        self._flush()
        self.out.append(ev)

    def _diag(self, issue: Issue, family: str | None) -> None:
        self._event(DiagnosticEvent.model_construct(diagnostic=Binder.diagnostic(issue, family)))

    def _diag_obj(self, d: Diagnostic) -> None:
        self._event(DiagnosticEvent.model_construct(diagnostic=d))

    def _drain(self) -> list[Event]:
        self._flush()
        out, self.out = self.out, []
        return out

    # -- text storage -----------------------------------------------------------------------

    def _compact(self) -> None:
        """Drop decided text from ``win``; text still held moves into the holder's pieces."""
        b = self.block
        base = self.base
        win = self.win
        n = len(win)
        if b is not None:
            # the block's pieces keep everything from its start; win keeps only what a
            # candidate (or the recovery search) has yet to read
            # (a value's tentative end, where its candidate reads on if the text ends with
            # nothing better, stays in the block's pieces: _scan_text rewinds to it)
            look_from = base + n
            for c in b.cands:
                if (c.state == RUN or c.state == WAIT) and c.pos < look_from:
                    look_from = c.pos
            if b.phase == "recover" or b.phase == "inline":
                look_from = min(look_from, b.absorb if b.absorb >= 0 else b.rpos)
            elif b.loop_rx is not None and b.loop_pos < look_from:
                look_from = b.loop_pos
            # a loop is removed whole: none of its text is kept
            keep_from = b.loop_pos if b.phase == "loop" else b.start
        elif self.inline is not None:
            look_from = self.inline[2]
            keep_from = self.inline[0]
        else:
            look_from = keep_from = base + self.cur
        look = min(look_from, base + n) - base
        if look <= 0:
            return
        keep = keep_from - base
        if keep < 0:
            keep = 0
        if keep < look:
            held = win[keep:look]
            if b is not None:
                b.piece_starts.append(base + keep)
                b.pieces.append(held)
            elif self.inline is not None:
                self.inline[3].append(held)
        self.prev_tail = win[look - 4 : look] if look >= 4 else (self.prev_tail + win[:look])[-4:]
        self.win = win[look:]
        self.base = base + look
        self.cur = max(0, self.cur - look)

    def _slice(self, start: int, end: int) -> str:
        """Text between absolute offsets, from the block's pieces and ``win``."""
        if start >= self.base:
            return self.win[start - self.base : end - self.base]
        parts = []
        b = self.block
        if b is not None and start < self.base and b.pieces:
            i = max(0, bisect.bisect_right(b.piece_starts, start) - 1)
            while i < len(b.pieces) and b.piece_starts[i] < min(end, self.base):
                s0 = b.piece_starts[i]
                piece = b.pieces[i]
                lo = max(start, s0) - s0
                hi = min(end, s0 + len(piece)) - s0
                if hi > lo:
                    parts.append(piece[lo:hi])
                i += 1
        if end > self.base:
            parts.append(self.win[max(start, self.base) - self.base : end - self.base])
        return "".join(parts)

    def _rewind(self, pos: int) -> None:
        """Make ``pos`` the scan position again (text after it will be read as prose).

        Call it while the block that holds the text is still ``self.block``.
        """
        if pos >= self.base:
            self.cur = pos - self.base
            return
        b = self.block
        assert b is not None, "rewinding needs the block that holds the text"
        before = self._slice(max(b.start, pos - 4), pos)
        tail = (b.prev_tail + before)[-4:] if pos - 4 < b.start else before
        self.win = self._slice(pos, self.base) + self.win
        self.base = pos
        self.cur = 0
        self.prev_tail = tail
        # the pieces now end where win begins: no text is held twice
        i = bisect.bisect_left(b.piece_starts, pos)
        del b.pieces[i:], b.piece_starts[i:]
        if b.pieces and b.piece_starts[-1] + len(b.pieces[-1]) > pos:
            b.pieces[-1] = b.pieces[-1][: pos - b.piece_starts[-1]]

    # -- main loop ---------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            if self.block is not None:
                if not self._step_block():
                    return
            elif self.inline is not None:
                if not self._step_inline():
                    return
            elif self.fence is not None:
                if not self._step_fence():
                    return
            elif not self._step_prose():
                return

    # -- prose ---------------------------------------------------------------------------------

    def _partial_before(self, limit: int, markers_at: Any = None) -> int:
        """Earliest position before ``limit`` where a marker may be starting but is cut off."""
        if self.eof:
            return -1
        win = self.win
        n = len(win)
        lo = max(self.cur, n - self.cat.max_width)
        for m in self.cat.first_rx.finditer(win, lo, min(limit, n)):
            p = m.start()
            for mk in (markers_at or self.cat.at)(win, p):
                if mk.terminal.pattern.needs_more(win, p):
                    return p
            if win[p] in "`~" and self._fence_pending(p):
                return p
        return -1

    def _fence_pending(self, p: int) -> bool:
        """A backtick/tilde run that reaches the end of the text may still grow."""
        m = _BACKTICKS.match(self.win, p) if self.win[p] == "`" else re.compile("~+").match(self.win, p)
        return m is not None and m.end() == len(self.win)

    def _step_prose(self) -> bool:
        win = self.win
        if self.long_run:
            end = _RUN[self.long_run].match(win, self.cur).end()
            self._text(win[self.cur : end])
            self.cur = end
            if end == len(win) and not self.eof:
                return False
            self.long_run = ""
        if not self.reply_started and self.channel == TEXT_CHANNEL:
            m = _NON_WS.search(win, self.cur)
            if m is None:
                self._text(win[self.cur :])
                self.cur = len(win)
                return False
            if m.start() > self.cur:
                self._text(win[self.cur : m.start()])
                self.cur = m.start()
            return self._reply_start(self.cur)
        if self.cat.first_rx.search(win, self.cur) is None:
            # no character a marker (or a fence) begins with: all of it is text, and no
            # marker can be cut off at its end
            self._text(win[self.cur :])
            self.cur = len(win)
            return False
        m = self.prose.search(win, self.cur)
        limit = m.start() if m else len(win)
        p = self._partial_before(limit)
        if p >= 0:
            self._text(win[self.cur : p])
            self.cur = p
            return False
        if m is None:
            self._text(win[self.cur :])
            self.cur = len(win)
            return False
        q = m.start()
        if q > self.cur:
            self._text(win[self.cur : q])
            self.cur = q
        return self._at_marker(q)

    def _matches(self, q: int) -> tuple[list[tuple[Marker, int]], bool]:
        """Markers matching at ``q`` (longest first) and whether one may still grow."""
        win = self.win
        found = []
        for mk in self.cat.at(win, q):
            pat = mk.terminal.pattern
            if not self.eof and pat.needs_more(win, q):
                return [], True
            end = pat.match_end(win, q)
            if end is not None and end > q:
                found.append((mk, end))
        if found:
            best = max(e for _, e in found)
            found = [(mk, e) for mk, e in found if e == best]
        return found, False

    def _at_marker(self, q: int) -> bool:
        found, wait = self._matches(q)
        if wait:
            return False
        if not found:
            return self._at_fence_char(q)
        end = found[0][1]
        roles = {mk.role for mk, _ in found}
        if OPEN in roles:
            openers = [mk for mk, _ in found if mk.role == OPEN]
            if self._open_block(q, end, openers):
                return True
        for mk, _ in found:
            if mk.role == RSTART and self.channel == TEXT_CHANNEL:
                self.channel = REASONING
                self.rclose = mk.pair
                self.cur = end
                return True
            if mk.role == REND:
                if self.channel == REASONING and self.rclose in ("*", mk.pair):
                    self.channel = TEXT_CHANNEL
                    self.rclose = None
                    self.cur = end
                    return True
                if self.channel == TEXT_CHANNEL:  # a stray closer is furniture
                    self.cur = end
                    return True
            if mk.role == FURNITURE:
                self.cur = end
                return True
        # nothing applies (an opener declined, or a reasoning opener inside reasoning): it is text
        self._text(self.win[q:end])
        self.cur = end
        return True

    # -- reply start -----------------------------------------------------------------------------

    def _reply_start(self, q: int) -> bool:
        """The first visible non-space character: a reply-anchored grammar may claim it."""
        found, wait = self._matches(q)
        if wait:
            return False
        roles = {mk.role for mk, _ in found}
        if roles and OPEN not in roles:
            return self._at_marker(q)
        if not roles and self.policy.bare_json and self.cat.reply_furniture:
            # a header the prompt left open (a recipient line): framing, then the reply goes on
            for term in self.cat.reply_furniture:
                if not self.eof and term.pattern.needs_more(self.win, q):
                    return False
                end = term.pattern.match_end(self.win, q)
                if end is not None and end > q:
                    self.reply_started = True
                    self.cur = end
                    return True
        self.reply_started = True
        if OPEN in roles or not self.cat.reply:
            return True
        cands = []
        for g in self.cat.reply:
            # Policy(bare_json=False) turns off replies read without a marker; a reply form
            # that opens with a header the prompt began (`reply: start header`) stays on
            if not self.policy.bare_json and not g.header.reply_header:
                continue
            if g.header.gated and not self.binder.known:
                continue
            if self._can_begin(g, "reply", q):
                accepted = self._accepted.setdefault(g.name, {})
                cands.append(Cand(g, "reply", self.base + q, True, self._reader(g), accepted))
        if not cands:
            return True
        self.block = Block(self.base + q, self.base + q, cands, self.channel, True, self._tail_at(q))
        return True

    def _can_begin(self, g: CompiledGrammar, rule: str, q: int) -> bool:
        ch = self.win[q]
        for term in g.openers.get(rule, ()):
            if term.external:
                if ch in EXTERNALS[term.name]:
                    return True
            elif term.pattern.first is None or ch in term.pattern.first:
                return True
        return False

    def _tail_at(self, q: int) -> str:
        return (self.prev_tail + self.win[max(0, q - 4) : q])[-4:]

    def _reader(self, g: CompiledGrammar) -> Reader:
        return reader_class(g.name)(
            g.name,
            self.binder.known,
            self.policy.max_depth,
            g.quotes,
            self.binder.tools,
            g.header.value_newlines == "strip",
            KEYED_RULE in g.nodes,
            # a kept cut-off call has whole members only: its stream sends no more
            self.policy.truncated == "keep",
        )

    # -- fences and inline code ----------------------------------------------------------------

    def _line_lead_ok(self, q: int) -> bool:
        before = self._tail_at(q)
        nl = before.rfind("\n")
        if nl < 0:
            return False
        lead = before[nl + 1 :]
        return lead == " " * len(lead)

    def _at_fence_char(self, q: int) -> bool:
        win = self.win
        ch = win[q]
        run_end = _RUN[ch].match(win, q, min(len(win), q + _MAX_RUN + 1)).end()
        if run_end - q > _MAX_RUN:
            self.long_run = ch  # plain text to the end of the run (_step_prose)
            self.cur = q
            return True
        if run_end == len(win) and not self.eof:
            return False
        n = run_end - q
        if n >= 3 and self._line_lead_ok(q):
            nl = win.find("\n", run_end, run_end + _MAX_FENCE_LINE)
            if nl < 0 and not self.eof and len(win) - run_end < _MAX_FENCE_LINE:
                return False
            line_end = nl if nl >= 0 else min(len(win), run_end + _MAX_FENCE_LINE)
            info = win[run_end:line_end].strip()
            if ch == "`" and "`" in info:
                info = ""  # not a fence line; treat the run as inline code below
            elif info:
                self._text(win[q:line_end])
                self.cur = line_end
                self.fence = (ch, n)
                return True
            else:
                self._text(win[q : run_end])
                self.cur = run_end
                return True
        if ch == "~":
            self._text(win[q : run_end])
            self.cur = run_end
            return True
        if self.base + q < self.inline_floor:
            self._text(win[q : run_end])
            self.cur = run_end
            return True
        self.inline = [self.base + q, n, self.base + run_end, [], -1, False]
        self.cur = q
        return True

    def _step_fence(self) -> bool:
        ch, n = self.fence
        win = self.win
        key = ("fence", ch, n)
        closer = self._stop_cache.get(key)
        if closer is None:
            # the closing run's first n characters; the rest of the run is plain text
            # which never reads a run still growing twice
            closer = self._stop_cache[key] = re.compile(r"\n {0,3}" + re.escape(ch) + "{" + str(n) + "}")
        m = closer.search(win, self.cur)
        rm = self._reasoning_close_in(self.cur, m.start() if m else len(win))
        if rm is not None:
            self.fence = None
            self._text(win[self.cur : rm])
            self.cur = rm
            return True
        if m is not None:
            # the fence is closed; the rest of the closing run is text (_step_prose reads
            # it, however long it grows)
            self._text(win[self.cur : m.end()])
            self.cur = m.end()
            self.fence = None
            self.long_run = ch
            return True
        hold = len(win)
        if not self.eof:
            nl = win.rfind("\n", self.cur)
            if nl >= 0 and re.fullmatch(r"\n {0,3}" + re.escape(ch) + "*", win[nl:]):
                hold = nl
            p = self._partial_reasoning_close(self.cur, hold)
            if p >= 0:
                hold = p
        self._text(win[self.cur : hold])
        self.cur = hold
        return False

    def _reasoning_close_in(self, start: int, end: int) -> int | None:
        """Inside protected text in reasoning, the reasoning closer stays live."""
        if self.channel != REASONING:
            return None
        best = None
        for mk in self.cat.markers:
            if mk.role == REND and self.rclose in ("*", mk.pair):
                m = mk.terminal.pattern.regex.search(self.win, start, end)
                if m is not None and (best is None or m.start() < best):
                    best = m.start()
        return best

    def _partial_reasoning_close(self, start: int, end: int) -> int:
        if self.channel != REASONING or self.eof:
            return -1
        win = self.win
        lo = max(start, len(win) - self.cat.max_width)
        for p in range(lo, min(end, len(win))):
            for mk in self.cat.at(win, p):
                if mk.role == REND and mk.terminal.pattern.needs_more(win, p):
                    return p
        return -1

    def _step_inline(self) -> bool:
        start, n, search, pieces, blank, in_run = self.inline
        win = self.win
        pos = search - self.base
        limit = len(win)
        rm = self._reasoning_close_in(pos, limit)
        if in_run:
            # the rest of a backtick run already longer than the opening one: not a closer
            pos = _RUN["`"].match(win, pos, rm if rm is not None else limit).end()
            if pos == limit and not self.eof:
                self.inline[2] = self.base + pos
                return False
            self.inline[5] = False
        if blank >= 0:
            # a line break followed so far only by spaces and tabs (read already): a blank
            # line if the next other character is a line break
            q = _SPACES.match(win, pos, rm if rm is not None else limit).end()
            if q < limit and q != rm:
                if win[q] == "\n":
                    return self._inline_done(start, blank, False)
                self.inline[4] = -1
                pos = q
            elif rm is None and not self.eof:
                self.inline[2] = self.base + q
                return False
        while True:
            m = _INLINE_STOP.search(win, pos, rm if rm is not None else limit)
            if m is None:
                break
            tok = m.group()
            if tok.startswith("`"):
                if m.end() == len(win) and not self.eof:
                    if len(tok) > n:  # too long to close the span, however it grows
                        self.inline[2] = self.base + m.end()
                        self.inline[5] = True
                    else:
                        self.inline[2] = self.base + m.start()
                    return False
                if len(tok) == n:
                    return self._inline_done(start, self.base + m.end(), True)
                pos = m.end()
                continue
            return self._inline_done(start, self.base + m.start(), False)
        if rm is not None or self.eof:
            return self._inline_done(start, self.base + (rm if rm is not None else limit), False)
        nl = win.rfind("\n", pos)
        if nl >= 0 and _SPACES.match(win, nl + 1).end() == limit:
            # the text ends in a line break and white space: read on from the end, and
            # remember where the possible blank line began (never read that run again)
            self.inline[2] = self.base + limit
            self.inline[4] = self.base + nl
            return False
        hold = limit
        p = self._partial_reasoning_close(pos, hold)
        if p >= 0:
            hold = p
        self.inline[2] = self.base + hold
        return False

    def _inline_done(self, start: int, end: int, matched: bool) -> bool:
        pieces = self.inline[3]
        n = self.inline[1]
        self.inline = None
        text = "".join(pieces)
        if text:  # restore the held text in front of win
            self.win = text + self.win
            self.base -= len(text)
        q = start - self.base
        if matched:
            self._text(self.win[q : end - self.base])
            self.cur = end - self.base
        else:
            self.inline_floor = max(self.inline_floor, end)
            self._text(self.win[q : q + n])
            self.cur = q + n
        return True

    # -- blocks ------------------------------------------------------------------------------------

    def _open_block(self, q: int, end: int, openers: list[Marker]) -> bool:
        soft = all(mk.terminal.soft for mk in openers)
        if soft and self.base + q < self.soft_floor:
            return False
        cands = []
        for mk in openers:
            for g in mk.grammars:
                if g.header.gated and not self.binder.known:
                    continue  # a registry-gated body is read only against a toolset
                # tentative until it names a tool the toolset offers (see Cand._on_node)
                tentative = mk.terminal.soft or g.header.gated
                c = Cand(g, "start", self.base + q, tentative, self._reader(g), self._accepted.setdefault(g.name, {}))
                if c.shift(Tok(mk.terminal.name, self.win[q:end], self.base + q, self.base + end), mk.terminal):
                    c.pos = c.last_end = self.base + end
                    cands.append(c)
        if not cands:
            return False
        cands.sort(key=lambda c: self.cat.rank[c.g.name])
        self.reply_started = self.reply_started or self.channel == TEXT_CHANNEL
        b = Block(self.base + q, self.base + end, cands, self.channel, False, self._tail_at(q))
        if self.channel == TEXT_CHANNEL and self.line_prose and _TAG_OPEN.match(self.win, q):
            b.inline = True
        if not soft and self.channel == TEXT_CHANNEL:
            b.loop_rx = self._loop_rx(openers, cands)
            b.loop_marker = self.win[q:end]
        else:
            b.loop_clear = 1 << 62  # no loop scan: nothing waits for one
        self.block = b
        return True

    def _loop_rx(self, openers: list[Marker], cands: list[Cand]) -> _Skipping:
        """One pattern for the block's opener (group 1) and the closers that pair with it
        (group 2): ``X_OPEN`` pairs with ``X_CLOSE`` and ``FURNITURE_X_CLOSE``."""
        key = ("loop", tuple(mk.terminal.name for mk in openers), tuple(c.g.name for c in cands))
        got = self._stop_cache.get(key)
        if got is None:
            opens = {mk.terminal.pattern.source for mk in openers if mk.terminal.pattern is not None}
            stems = {mk.terminal.name.removesuffix("_OPEN") for mk in openers}
            pats = [mk.terminal.pattern for mk in openers if mk.terminal.pattern is not None]
            closers = [
                t.pattern
                for c in cands
                for t in c.g.closers
                if t.pattern is not None and t.name.removeprefix("FURNITURE_").removesuffix("_CLOSE") in stems
            ]
            closes = {p.source for p in closers}
            o = "|".join(f"(?:{p})" for p in sorted(opens))
            cl = "|".join(f"(?:{p})" for p in sorted(closes)) or "(?!)"
            firsts = [p.first for p in pats + closers]
            chars = None if any(f is None for f in firsts) else set().union(*firsts)
            # group 1: the opener, group 2: a closer
            first = re.compile("[" + "".join(re.escape(c) for c in sorted(chars)) + "]") if chars else None
            # (pats only with first: every pattern's first characters are known)
            got = _Skipping(re.compile(f"({o})|({cl})"), first, tuple(pats + closers) if first is not None else ())
            self._stop_cache[key] = got
        return got

    def _step_block(self) -> bool:
        b = self.block
        assert b is not None
        if b.phase == "lex":
            for c in b.cands:
                if c.state in (RUN, WAIT):
                    self._advance(b, c)
            if b.early is None:
                self._update_early(b)
            if b.loop_rx is not None and self._loop_scan(b):
                return True
            if b.early and b.emitted < len(b.leader.items):
                self._early(b)
            # the cap depends only on how far the candidates read, so every chunking agrees
            if self._over_limit(b):
                return True
            for c in b.cands:
                if c.state == RUN or c.state == WAIT:
                    return False
            self._decide(b)
            return True
        if b.phase == "recover":
            return self._recover(b)
        if b.phase == "loop":
            return self._step_loop(b)
        if b.phase == "inline":
            return self._step_quoted(b)
        return False  # pragma: no cover

    # -- repetition loops ----------------------------------------------------------------------

    def _loop_scan(self, b: Block) -> bool:
        """Count the block's opener in the text every live candidate has read; more than
        ``max_repeats`` with no closer between is a repetition loop.  True when it is one."""
        cands = b.cands
        if len(cands) == 1:
            c = cands[0]
            limit = c.pos if c.state == RUN or c.state == WAIT else c.progress
        else:
            live = [c.pos for c in cands if c.state in (RUN, WAIT)]
            limit = min(live) if live else max(c.progress for c in cands)
        end = min(limit, self.base + len(self.win)) - self.base
        lp = b.loop_pos - self.base
        if lp < 0:  # pragma: no cover - the window keeps loop_pos (see _compact)
            self._rewind(b.loop_pos)
            lp, end = 0, min(limit, self.base + len(self.win)) - self.base
        rx = b.loop_rx
        if lp < end and rx.pats and rx.first.search(self.win, lp, end) is None:
            # no character a marker begins with in the new text: nothing to count, nothing
            # that may still grow (what the general path below finds, in one scan)
            b.loop_pos = self.base + end
            b.loop_seen = max(b.loop_seen, self.base + end - self.cat.max_width)
            b.loop_clear = max(b.loop_clear, b.loop_seen)
            return False
        matched = False
        while lp < end:
            m = rx.search(self.win, lp, end)
            if m is None:
                break
            matched = True
            lp = m.end()
            if m.group(1) is None:  # a closer
                b.repeats = 0
                continue
            if self.base + m.start() in self._loop_lead(b, self.base + lp).opened_at:
                # the grammar read this opener as the block's own token: one marker per call
                # (Mistral v11 writes [TOOL_CALLS] before each), not an opener met again
                continue
            if b.repeats == 0:
                b.loop_first = self.base + m.start()
            b.repeats += 1
            if b.repeats > self.policy.max_repeats:
                b.loop_at = self.base + lp
                b.loop_pos = self.base + lp
                self._loop_begin(b)
                return True
        # a marker may straddle the limit: look again from one marker width before it
        back = max(lp, end - self.cat.max_width)
        if rx.first is not None and rx.pats and back < end:
            # only where a marker could still match once more text arrives (a position
            # where none can is decided for good, and never looked at again)
            text = self.win if end == len(self.win) else self.win[:end]
            lo, back = back, end
            for f in rx.first.finditer(text, lo, end):
                if any(pat.needs_more(text, f.start()) for pat in rx.pats):
                    back = f.start()
                    break
        b.loop_pos = self.base + back
        seen = self.base + end - self.cat.max_width
        b.loop_seen = max(self.base + lp, seen) if matched else max(b.loop_seen, seen)
        b.loop_clear = max(b.loop_clear, b.loop_seen)
        return False

    def _loop_lead(self, b: Block, at: int) -> Cand:
        """The candidate that speaks for the block on the text before ``at``: among those
        still standing there (a failure seen only at or after it does not count), the
        same at every chunking."""
        rank = self.cat.rank
        alive = [c for c in b.cands if c.state != FAILED or c.reach >= at]
        return alive[0] if len(alive) == 1 else min(alive or b.cands, key=lambda c: rank[c.g.name])

    def _loop_begin(self, b: Block) -> None:
        """A loop: what the block completed before the loop was found stands; the rest of
        the block, up to a closer of its opener or the end of the text, is the loop."""
        c0 = self._loop_lead(b, b.loop_at)
        if b.leader is not None and b.leader is not c0:  # pragma: no cover - a leader stands alone
            b.emitted = 0
        while b.emitted < len(c0.items):
            kind, obj, tok = c0.items[b.emitted]
            if kind in ("call", "issue") and _item_end(obj) > b.loop_at:
                break
            b.emitted += 1
            if kind != "text":
                self._emit_item(b, kind, obj, tok)
        b.winner = c0
        self._abort_started(b, c0, "repetition_loop")
        for c in b.cands:
            if c.state in (RUN, WAIT):
                c.fail(c.pos, "loop", "inside a repetition loop")
        b.phase = "loop"

    def _step_loop(self, b: Block) -> bool:
        """Swallow the loop up to a closer of its opener (and the closers right after it) or
        the end of the text, counting the openers; then report it once."""
        win = self.win
        lp = b.loop_pos - self.base
        if lp < 0:
            self._rewind(b.loop_pos)
            win, lp = self.win, 0
        hold = 0 if self.eof else self.cat.max_width
        closer = None
        resume = lp
        while True:
            m = b.loop_rx.search(win, lp)
            if m is None:
                # nothing of the loop is kept but the last marker width (a marker may be arriving)
                resume = max(lp, len(win) - hold)
                break
            if m.end() > len(win) - hold:
                resume = m.start()  # a marker that may still grow: read it again with more text
                break
            lp = m.end()
            if m.group(1) is None:  # a closer
                closer = m
                break
            b.repeats += 1
        if closer is None and not self.eof:
            b.loop_pos = self.base + resume
            self.cur = resume
            return False
        end = self.base + (lp if closer is not None else len(win))
        family = (b.winner or b.cands[0]).g.name
        self._diag(
            Issue(
                "repetition_loop",
                {"marker": excerpt(b.loop_marker), "count": b.repeats, "max_repeats": self.policy.max_repeats, "family": family},
                (b.loop_first, end),
                f"the opener {excerpt(b.loop_marker)!r} repeats {b.repeats} times without its closer; "
                "the loop is removed and nothing in it is dispatched",
            ),
            family,
        )
        if closer is not None:
            b.absorb = end
            return self._absorb(b, b.winner or b.cands[0])
        self._rewind(end)
        self.block = None
        return True

    def _over_limit(self, b: Block) -> bool:
        cands = b.cands
        far = cands[0].progress if len(cands) == 1 else max(c.progress for c in cands)
        if far - b.start <= self.policy.max_block_chars:
            return False
        c0 = self._over_limit_owner(b, far)
        done_calls = [obj for kind, obj, _ in c0.items if kind == "call"] if not c0.soft else []
        if done_calls:
            self._emit_pending(b, c0)
        self._abort_started(b, c0, "limit_exceeded")
        self._diag(
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
        return min(over, key=lambda c: (c.state == FAILED, rank[c.g.name]))

    # -- candidate lexing --------------------------------------------------------------------------

    def _advance(self, b: Block, c: Cand) -> None:
        win = self.win
        base = self.base
        n = len(win)
        cap = b.start + self.policy.max_block_chars
        while True:
            if c.pos > cap:
                return  # the block is over the cap; _over_limit releases it
            lp = c.pos - base
            if c.scanner is not None:
                # a candidate never reads past the cap, so every chunking sees the same thing
                end = min(n, cap + 1 - base)
                status, p = c.scanner.scan(win, lp, self.eof and end == n, end)
                if b.early and len(c.scanner.names) > b.sniffed:
                    self._sniffed(b, c)
                if c.sp is not None:
                    if base + p > c.sp_fed:
                        c.sp.feed(win[c.sp_fed - base : p])
                        c.sp_fed = base + p
                    if b.early and b.leader is c and status != CUT:
                        self._stream_args(b, c)
                    if status != MORE:
                        c.sp = None
                if status == MORE:
                    c.pos = base + p
                    c.state = WAIT
                    return
                if status == DONE:
                    if base + p > cap:
                        c.pos = base + p
                        return
                    start = c.tok_start
                    c.scanner = None
                    c.tok_start = -1
                    value = self._slice(start, base + p)
                    c.ntoks += 1
                    c.shift(Tok(c.ext_type, value, start, base + p), c.g.terminals.get(c.ext_type))
                    c.pos = c.last_end = base + p
                    c.state = RUN
                    if c.bad:
                        c.reach = max(c.reach, base + p)
                        c.fail(start, "syntax", c.bad_reason)
                        return
                    if b.early:
                        self._early(b)
                    continue
                reason = c.scanner.error
                c.cut_elem = c.scanner._elem if isinstance(c.scanner, JsonScanner) else 0
                c.scanner = None
                c.reach = max(c.reach, base + p)
                if status == CUT:
                    # a JSON payload cut off, or a value inside a call the grammar spells
                    c.cut_json = c.ext_type in JSON_EXTERNALS
                    c.fail(c.tok_start, "cut", "payload cut off by the end of the text")
                    return
                if reason.startswith("nesting"):
                    c.cut_json = c.ext_type in JSON_EXTERNALS  # where the deep payload began
                    c.fail(c.tok_start, "limit", reason)
                    return
                if not c.soft and c.ext_type in JSON_EXTERNALS and c.parser.accepts_seq([c.ext_type, c.ext_type]):
                    # payloads may follow one another: look for the next one after the damage
                    c.resync = base + max(p, c.tok_start - base + 1)
                    c.resync_tok = c.tok_start
                    c.resync_reason = reason
                    c.resync_mode = "payload"
                    c.pos = c.resync
                    continue
                self._no_token(c, c.tok_start, reason)
                if c.state == RUN:
                    continue  # the block may go on after the junk
                return
            if c.text_start >= 0:
                if not self._scan_text(b, c):
                    return
                win, base = self.win, self.base  # the value may have ended where text was rewound
                n = len(win)
                continue
            if c.resync >= 0:
                if not self._resync(c):
                    return
                win, base = self.win, self.base  # the search may have rewound the window
                n = len(win)
                continue
            accepted = c.accepted()
            text_ok = TEXT in accepted
            if not text_ok:  # white space is part of a raw text value, else it is skipped
                skipped = True
                while skipped:
                    skipped = False
                    for ig in c.g.ignore:
                        m = ig.pattern.regex.match(win, lp)
                        if m is not None and m.end() > lp and (m.end() < n or self.eof or not _resumed(ig, win, lp)):
                            lp = m.end()
                            skipped = True
                        elif not self.eof and _resumed(ig, win, lp):
                            # an ignored token of bounded width (a split "\\n", a comment) may
                            # still be arriving: read it again, whole, with more text
                            c.pos = base + lp
                            c.state = WAIT
                            return
            c.pos = base + lp
            if lp >= n:
                if self.eof:
                    self._no_token(c, c.pos, "end of text")
                else:
                    c.state = WAIT
                return
            best: tuple[int, bool, Terminal] | None = None
            external: Terminal | None = None
            for term in accepted.values():
                if term.external:
                    if term.name in EXTERNALS and win[lp] in EXTERNALS[term.name]:
                        external = term
                    continue
                pat = term.pattern
                if not self.eof and pat.needs_more(win, lp):
                    c.state = WAIT
                    return
                end = pat.match_end(win, lp)
                if end is not None and end > lp:
                    # longest match; on a tie a literal beats a pattern
                    key = (end, pat.literal is not None, term)
                    if best is None or key[:2] > best[:2]:
                        best = key
            if c.body_at < 0 and (best is not None or external is not None or text_ok):
                c.body_at = base + lp
            if best is not None:
                end, _lit, term = best
                c.shift(Tok(term.name, win[lp:end], base + lp, base + end), term)
                c.pos = c.last_end = base + end
                if c.bad:
                    c.fail(base + lp, "syntax", c.bad_reason)
                    return
                if len(c.parser.stack) > 4 * self.policy.max_depth + 64:
                    # a grammar that nests (a literal list inside a list …) is capped like JSON
                    c.fail(base + lp, "limit", f"nesting deeper than max_depth={self.policy.max_depth}")
                    return
                if b.early and c.items and len(c.items) > b.emitted:
                    self._early(b)
                if c.parser.finished:
                    self._finish(c)
                    return
                continue
            if external is not None:
                if external.name in JSON_EXTERNALS:
                    c.scanner = JsonScanner(self.policy.max_depth, c.g.quotes)
                    c.sp = None
                    obj = c.current_name is None  # a payload of call objects, else arguments
                    if win[lp] == "{" or (obj and win[lp] == "["):
                        coarse = self.policy.truncated == "keep"
                        c.sp = StrictPrefix(self.policy.max_depth, ARGUMENT_KEYS if obj else (), coarse)
                        c.sp_from = c.sp_fed = base + lp
                        c.sp_obj = obj
                        c.sp_key = ("json", base + lp) if obj else ("call", c.named_begun - 1)
                        c.sp_done = 0
                else:
                    c.scanner = StringScanner()
                c.ext_type = external.name
                b.sniffed = 0
                c.tok_start = base + lp
                if c.payload_at < 0:
                    c.payload_at = base + lp
                continue
            if text_ok:
                if c.payload_at < 0:
                    c.payload_at = base + lp
                c.text_start = base + lp
                c.text_stops, c.text_rx, c.text_first = self._stops(c)
                c.text_tentative = None
                continue
            self._no_token(c, base + lp, f"unexpected {win[lp]!r}")
            if c.state == RUN:
                continue  # resync: the block may go on after the junk
            return

    # -- raw text values ------------------------------------------------------------------------

    def _stops(self, c: Cand) -> tuple[tuple[Terminal, ...], re.Pattern[str] | None, tuple[Any, int]]:
        """The markers that can end a raw text value here: what the grammar accepts next."""
        key = (c.g.name, tuple(c.parser.stack))
        got = self._stop_cache.get(key)
        if got is None:
            stops = tuple(
                t
                for t in c.g.terminals.values()
                if t.pattern is not None and t not in c.g.ignore and c.parser.accepts_seq([TEXT, t.name])
            )
            parts = [f"(?:{t.pattern.source})" for t in stops]
            if parts and c.g.header.text_escapes == "backslash":
                parts.insert(0, _ESCAPE_PAIR)  # a backslash takes the next character: no stop
            rx = re.compile("|".join(parts)) if parts else None
            firsts = [t.pattern.first for t in stops]
            first = None
            if stops and all(f is not None for f in firsts):
                first = re.compile("[" + "".join(re.escape(ch) for ch in sorted(set().union(*firsts))) + "]")
            reach = max((t.pattern.max_width for t in stops), default=0)
            got = (stops, rx, (first, reach))
            self._stop_cache[key] = got
        return got

    def _scan_text(self, b: Block, c: Cand) -> bool:
        """Read a raw text value up to the marker that ends it.  False to stop for now."""
        win = self.win
        base = self.base
        n = len(win)
        end = min(n, b.start + self.policy.max_block_chars + 1 - base)
        lp = c.pos - base
        rx = c.text_rx
        while True:
            m = rx.search(win, lp, end) if rx is not None else None
            if m is not None and m.lastgroup == _ESCAPE_GROUP:
                lp = m.end()  # an escaped character is the value's, whatever it is
                continue
            if m is None:
                if self.eof and end == n:
                    if c.text_tentative is not None:
                        self._rewind(c.text_tentative)  # read on from there (once, at the end)
                        return self._end_text(c, c.text_tentative)
                    c.reach = base + n
                    c.fail(c.text_start, "cut", "value cut off by the end of the text")
                    return False
                hold = end
                if rx is not None and _ESCAPE_GROUP in rx.groupindex and lp < end and win[end - 1] == "\\":
                    hold = end - 1  # a backslash whose escaped character has not arrived yet
                if not self.eof:
                    # a stop cut off by the end begins with one of its first characters, no
                    # further back than the longest stop
                    first, reach = c.text_first
                    lo = max(lp, end - reach)
                    at = (m.start() for m in first.finditer(win, lo, hold)) if first is not None else range(lo, hold)
                    for p in at:
                        if any(t.pattern.needs_more(win, p) for t in c.text_stops):
                            hold = p
                            break
                c.pos = base + hold
                c.state = WAIT
                return False
            q = m.start()
            term, stop_end = max(
                ((t, e) for t in c.text_stops if (e := t.pattern.match_end(win, q)) is not None and e > q),
                key=lambda te: te[1],
            )
            verdict = self._stop_valid(c, term, q, stop_end)
            if verdict is None:  # undecided until more text arrives
                c.pos = base + q
                c.state = WAIT
                return False
            if verdict == "yes":
                return self._end_text(c, base + q)
            if verdict == "maybe" and c.text_tentative is None:
                c.text_tentative = base + q
            lp = q + 1

    def _end_text(self, c: Cand, at: int) -> bool:
        value = self._slice(c.text_start, at)
        c.shift(Tok(TEXT, value, c.text_start, at), None)
        c.pos = c.last_end = at
        c.text_start = -1
        c.text_tentative = None
        c.state = RUN
        return True

    def _stop_valid(self, c: Cand, term: Terminal, q: int, e: int) -> str | None:
        """Whether a marker ends the value: "yes", "no", "maybe" (only if nothing better
        comes), or None (undecided: more text is needed).

        The family may refuse a stop (a ``<parameter=NAME>`` whose NAME is not a parameter
        of the tool); otherwise a stop counts where the grammar can go on after it.
        """
        win = self.win
        if self.eof and e >= len(win) and _bare(term) and win[e - 1 : e].isalnum():
            # a name-like token that runs to the end of the text may be cut off (`<esc`): it
            # says nothing about where the value before it ends
            return "no"
        hook = c.reader.stop_ok(term.name, win, e, c.current_name, self.eof)
        if hook is None:
            return None
        if hook is False:
            return "no"
        f = e
        skipped = True
        while skipped:
            skipped = False
            for ig in c.g.ignore:
                m = ig.pattern.regex.match(win, f)
                if m is not None and m.end() > f:
                    f = m.end()
                    skipped = True
                elif not self.eof and ig.pattern.literal is not None and ig.pattern.needs_more(win, f):
                    return None  # an ignored marker may be arriving (a split "\\n")
        if f >= len(win):
            return "yes" if self.eof else None
        follow = self._follow(c, term)
        if follow is None:  # another raw text value may begin there: anything can follow
            return "yes"
        for t in follow:
            if not self.eof and t.pattern.needs_more(win, f):
                return None
            end = t.pattern.match_end(win, f)
            if end is not None and end > f:
                return "yes"
        if self._closes_line_value(c, term):
            return "yes"
        return "maybe"

    def _closes_line_value(self, c: Cand, term: Terminal) -> bool:
        """Whether ``term`` is the block's closer, the block may end after it, and the value
        is one line (a line break also ends it): `shell/command>ls</tool_call>` then prose
        is `ls`, never a value that takes the closer in (a longer value could not reach past
        the line anyway)."""
        key = (c.g.name, tuple(c.parser.stack), term.name, "closes")
        got = self._stop_cache.get(key)
        if got is None:
            got = (
                term in c.g.closers
                and any(t.pattern.match_end("\n", 0) for t in c.text_stops)
                and c.parser.accepts_seq([TEXT, term.name, END])
            )
            self._stop_cache[key] = got
        return got

    def _follow(self, c: Cand, term: Terminal) -> tuple[Terminal, ...] | None:
        """The markers that may come after ``term`` ends a raw text value here (None when a
        raw text value may come right after it, so that anything may follow)."""
        key = (c.g.name, tuple(c.parser.stack), term.name, "follow")
        if key in self._stop_cache:
            return self._stop_cache[key]
        if c.parser.accepts_seq([TEXT, term.name, TEXT]):
            got = None
        else:
            got = tuple(
                t
                for t in c.g.terminals.values()
                if t.pattern is not None
                and t not in c.g.ignore
                and c.parser.accepts_seq([TEXT, term.name, t.name])
            )
        self._stop_cache[key] = got
        return got

    def _cut_marker(self, g: CompiledGrammar, win: str, lo: int, hi: int) -> int:
        """Earliest position in ``[lo, hi)`` where ``g``'s closer or any marker may be
        starting but is cut off by the end of ``win`` (-1 when none)."""
        for p in range(max(lo, len(win) - self.cat.max_width), hi):
            if any(t.pattern.needs_more(win, p) for t in g.closers) or any(
                mk.terminal.pattern.needs_more(win, p) for mk in self.cat.at(win, p)
            ):
                return p
        return -1

    def _resync(self, c: Cand) -> bool:
        """Find where a block goes on after text it could not read.  False to stop.

        After a broken payload ("payload" mode) the block goes on at the next payload or at
        a closer of this grammar; after unexpected text where the block could end ("junk"
        mode) it goes on only at a closer of a structure still open.  The skipped text is
        reported and removed with the block.  Anything else first (another marker, the end
        of the text) and the block ends where the damage began.
        """
        if c.pos < self.base:
            self._rewind(c.pos)  # the damage began in text already moved out of the window
        win = self.win
        lp = c.pos - self.base
        bound = self.block.start + self.policy.max_block_chars + 1 - self.base
        if bound < len(win):
            win = win[:bound]  # never look past the cap (same answer at every chunking)
        payload = c.resync_mode == "payload"
        m_ext = _START_CHARS[c.ext_type].search(win, lp) if payload else None
        m_mark = self.cat.recovery(c.g).search(win, lp)
        q_ext = m_ext.start() if m_ext else len(win)
        q_mark = m_mark.start() if m_mark else len(win)
        q = min(q_ext, q_mark)
        if q == len(win) and len(win) < len(self.win):
            c.pos = self.base + len(win)  # over the cap: _over_limit releases the block
            return False
        if not self.eof:
            p = self._cut_marker(c.g, win, lp, q)
            if p >= 0:
                c.pos = self.base + p
                c.state = WAIT
                return False
            if q == len(win):
                c.pos = self.base + len(win)
                c.state = WAIT
                return False
        targets = c.open_closers() if not payload else (c.g.closers if c.calls else ())
        closer = q < len(win) and q == q_mark and any(
            (e := t.pattern.match_end(win, q)) is not None and e > q for t in targets
        )
        if q < len(win) and closer and not payload:
            # prose between a block's calls and its closer is text; the closer is furniture
            c.items.append(("text", self._slice(c.last_end, self.base + q), -1))
            c.skip_at = c.last_end if c.skip_at < 0 else c.skip_at
            c.pos = self.base + q
            c.resync = -1
            c.state = RUN
            return True
        if q < len(win) and ((payload and q == q_ext) or closer):
            junk = self._slice(c.resync_tok, self.base + q)
            c.skip_at = c.resync_tok if c.skip_at < 0 else c.skip_at
            reason = c.resync_reason
            c.items.append(
                (
                    "issue",
                    Issue(
                        "malformed_block",
                        {"reason": reason, "excerpt": excerpt(junk.strip())},
                        (c.resync_tok, self.base + q),
                        f"{reason}; removed with the block",
                    ),
                    ("json", c.resync_tok) if payload else -1,  # a broken payload: its calls end here
                )
            )
            c.pos = self.base + q
            c.resync = -1
            c.state = RUN
            return True
        c.resync = -1
        c.reach = max(c.reach, self.base + q)
        if payload:
            self._no_token(c, c.resync_tok, c.resync_reason)
            return c.state == RUN  # junk mode: the block may go on at a closer after the damage
        self._done(c, trail=True, at=c.resync_tok)
        return False

    def _finish(self, c: Cand) -> None:
        if c.whole and not c.last_type.startswith("FURNITURE_"):
            # a whole-reply block: only white space may follow, up to the end of the text
            # (unless it ended with framing of its own, after which the reply is prose)
            rest = _NON_WS.search(self.win, c.pos - self.base)
            if rest is not None:
                c.fail(self.base + rest.start(), "syntax", "text after the payload")
                return
            if not self.eof:
                c.state = WAIT
                return
        c.state = DONE_

    def _no_token(self, c: Cand, pos: int, reason: str) -> None:
        """Nothing the grammar accepts can be read at ``pos``."""
        at_end = pos >= self.base + len(self.win)
        if not (c.parser.finished or c.parser.accepts(END)) and c.unloose():
            # only bare tokens since the block could end (no marker, no payload): they
            # were prose after the block, which ends where it could
            self._done(c, trail=True)
            return
        if c.parser.finished or c.parser.accepts(END):
            if c.whole and (not at_end and _NON_WS.match(self.win, pos - self.base)):
                if not c.last_type.startswith("FURNITURE_"):
                    c.fail(pos, "syntax", "text after the payload")
                    return
                # the block ended with framing of its own (a recipient header for text):
                # the rest of the reply is prose
                self._done(c, trail=True, at=pos)
                return
            if c.whole and not self.eof:
                c.state = WAIT
                return
            if at_end and self.eof and (not c.items or (c.named_begun > c.named_done and not c.args_read)):
                # the text ended right after an opener with nothing read, or inside a call
                # begun with no argument read (<invoke name="f">): cut off, not a call; a call
                # with complete arguments whose optional closer was eaten stands
                c.fail(pos, "cut", "cut off before the call was complete")
                return
            if at_end and self.eof and c.named_begun > c.named_done and TEXT in c.accepted():
                # the text ended where a value written as text begins (<parameter=unit>): the
                # value was cut off before its first character, not written empty
                c.fail(pos, "cut", "value cut off by the end of the text")
                return
            if self.eof and not at_end and c.named_begun > c.named_done and self._cut_in_marker(c, pos):
                # a call still open and the text ends in the first characters of one of
                # its markers (<invoke name="f"><): cut off, not a call
                c.fail(pos, "cut", "cut off inside a marker")
                return
            if not at_end and c.g.header.gated and not _body_closed(c):
                # a registry-gated body is all or nothing: text it cannot read before its
                # closer is part of it, and the body is not a call
                c.fail(pos, "syntax", reason)
                return
            if not at_end and not c.soft and c.rule == "start" and c.open_closers():
                # unexpected text inside a structure still open: its closer may come later
                c.resync = pos
                c.resync_tok = pos
                c.resync_reason = reason
                c.resync_mode = "junk"
                c.pos = pos
                c.state = RUN
                return
            self._done(c, trail=not at_end, at=pos)
            return
        if self.eof and at_end:
            c.fail(pos, "cut", reason)
        else:
            c.fail(pos, "syntax", reason)

    def _cut_in_marker(self, c: Cand, pos: int) -> bool:
        """Whether the text from ``pos`` to its end is the beginning of one of ``c``'s markers."""
        lp = pos - self.base
        if lp < 0 or len(self.win) - lp > self.cat.max_width:
            return False
        return any(
            t.pattern.needs_more(self.win, lp)
            for t in c.g.terminals.values()
            if t.pattern is not None and (t.pattern.literal is not None or t.name.endswith(("_OPEN", "_CLOSE")))
        )

    def _done(self, c: Cand, trail: bool, at: int = -1) -> None:
        """The block ends after its last token (``trail``: it stopped at text it could not
        read, at ``at``)."""
        if not c.parser.finished:
            c.parser.end()
        c.trail = trail
        if trail and c.skip_at < 0:
            c.skip_at = at if at >= 0 else c.last_end
        c.state = DONE_

    # -- early events (one hard candidate outside reasoning) ---------------------------------------

    def _update_early(self, b: Block) -> None:
        """With several candidates, announce early only once one committed candidate is
        left and the others failed no later than where its body began: a decision that
        depends on the text alone, not on how it was cut."""
        alive = [c for c in b.cands if c.state != FAILED]
        if not alive:
            b.early = False
            return
        if len(alive) > 1:
            if not any(c.state in (RUN, WAIT) for c in alive):
                b.early = False
            return
        lead = alive[0]  # still reading, or done (a whole block read in one delta)
        if lead.soft:
            b.early = False
            return
        if lead.body_at < 0:
            return
        if all(o.state == FAILED and o.fail_pos <= lead.body_at for o in b.cands if o is not lead):
            b.early = True
            b.leader = lead
            if lead.scanner is not None and lead.scanner.names:
                self._sniffed(b, lead)
                if lead.sp is not None:
                    self._stream_args(b, lead)
        else:
            b.early = False

    def _sniffed(self, b: Block, c: Cand) -> None:
        if any(kind in ("call", "start") and tok not in b.started for kind, _, tok in c.items[b.emitted :]):
            return  # a call read before this payload is announced first: indices follow the text
        names = c.scanner.names
        root = c.scanner.stack[:1]
        while b.sniffed < len(names):
            ordinal, name = names[b.sniffed]
            b.sniffed += 1
            # a payload that is one call object, or each call object of a root array
            if root not in (["{"], ["["]) or (root == ["{"] and ordinal != 0):
                continue
            tok = ("json", c.tok_start, ordinal)
            if tok in b.started or not name.strip():
                continue  # a blank name is no call
            if self.calls_out + len(b.started) >= self.policy.max_calls:
                continue
            announced = self.binder.announce(name)
            if announced is None:
                continue
            index = self.call_index
            self.call_index += 1
            b.started[tok] = (index, announced)
            self._event(CallStart.model_construct(index=index, name=announced, id=None))

    def _stream_args(self, b: Block, c: Cand) -> None:
        """Send the JSON arguments of started calls up to their last safe point."""
        sp = c.sp
        if sp is None:
            return
        if not c.sp_obj:
            self._stream_region(b, c.sp_key, c.sp_from, c.sp_from + sp.safe)
            return
        # call objects: the one being read, and any finished since the last look
        for elem in range(c.sp_done, sp.elem + 1):
            span = sp.args.get(elem)
            if span is not None:
                end = sp.safe if span[1] < 0 else min(sp.safe, span[1])
                self._stream_region(b, c.sp_key + (elem,), c.sp_from + span[0], c.sp_from + end)
        c.sp_done = sp.elem

    def _stream_region(self, b: Block, key: Any, lo: int, hi: int) -> None:
        """Send ``[lo, hi)`` of a started call's JSON arguments, from what was sent so far."""
        started = b.started.get(key)
        if started is None:
            return
        sent, held = b.sent.get(key, (0, False))
        if held or hi <= lo + sent:
            return
        piece = self._slice(lo + sent, hi)
        # the first key decides once, before anything past the opening brace is sent; its
        # first few characters are enough (never the whole argument text again per delta)
        if self.binder.tools is not None and sent <= 1 and _first_key(self._slice(lo, min(hi, lo + 80))) in ARGUMENT_KEYS:
            # {"arguments": {…}} may be an envelope the toolset unwraps: after the opening
            # brace (how every object begins), wait for the end
            b.sent[key] = (max(sent, 1), True)
            if sent:
                return
            piece = "{"
        else:
            b.sent[key] = (sent + len(piece), False)
        self._event(_arguments_delta(started[0], piece))

    def _stream_param(self, b: Block, owner: Cand, node: Any, key: Any) -> None:
        """Send one complete text-valued parameter of a started call as a JSON member."""
        started = b.started.get(key)
        if started is None:
            return
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
            name = started[1]
            known = self.binder.tools is not None and name in self.binder.known
            value = self.binder.typed_value(name if known else None, pkey, text, flag, [])
        piece = ("{" if sent == 0 else "") + member(pkey, value, sent == 0)
        b.sent[key] = (sent + len(piece), False)
        self._event(_arguments_delta(started[0], piece))

    def _early(self, b: Block) -> None:
        c = b.leader
        assert c is not None
        while b.emitted < len(c.items):
            kind, obj, tok = c.items[b.emitted]
            if kind in ("call", "issue") and _item_end(obj) > b.loop_clear:
                return  # not before the loop scan has cleared its text (every chunking agrees)
            if b.inline and (kind == "text" or kind == "call" and self._may_be_quoted(obj)):
                return  # the block may yet be prose quoting the format, released whole
            b.emitted += 1
            self._emit_item(b, kind, obj, tok)

    def _emit_item(self, b: Block, kind: str, obj: Any, tok: Any) -> None:
        owner = b.winner or b.leader or b.cands[0]
        family = owner.g.name
        if kind == "start":
            if b.channel == REASONING and self.policy.calls_in_reasoning != "accept":
                return
            if b.inline and b.phase == "lex" and tok not in b.deferred:
                b.deferred[tok] = obj  # announced once an argument shows it is no quotation
                return
            b.deferred.pop(tok, None)
            if tok in b.started or self.calls_out + len(b.started) >= self.policy.max_calls:
                return
            name, call_id, name_end = obj
            if self.eof and name_end is not None and name_end >= self.base + len(self.win):
                return  # a name that runs to the end of the text may be cut off: never announced
            announced = self.binder.announce(name)
            if announced is None:
                return
            index = self.call_index
            self.call_index += 1
            b.started[tok] = (index, announced)
            self._event(CallStart.model_construct(index=index, name=announced, id=call_id))
            return
        if kind == "text":
            self._text(obj, b.channel)
            return
        if kind == "param":
            if tok in b.deferred:
                self._emit_item(b, "start", b.deferred[tok], tok)
            self._stream_param(b, owner, obj, tok)
            return
        if kind == "issue":
            b.sent.pop(tok, None)
            started = b.started.pop(tok, None)
            if started is not None:
                self._event(CallAbort.model_construct(index=started[0], reason=obj.kind))
            elif isinstance(tok, tuple) and len(tok) == 2 and tok[0] == "json":
                # the whole payload at this offset failed: every call announced from it ends
                for key in sorted(k for k in b.started if k[:2] == tok):
                    b.sent.pop(key, None)
                    self._event(CallAbort.model_construct(index=b.started.pop(key)[0], reason=obj.kind))
            self._diag(obj, family)
            return
        raw: RawCall = obj
        if b.channel == REASONING and self.policy.calls_in_reasoning != "accept":
            bound, _ = self.binder.bind(raw)  # typed as it would be dispatched
            shown = bound.arguments_json if bound is not None else raw.arguments_json or json.dumps(raw.text_params)
            self._diag(
                Issue(
                    "call_in_reasoning",
                    {"name": raw.name, "excerpt": excerpt(shown)},
                    raw.span,
                    f"{raw.name!r} was called inside reasoning; not returned",
                ),
                raw.family,
            )
            return
        if self.calls_out >= self.policy.max_calls:
            started = b.started.pop(tok, None)
            if started is not None:
                self._event(CallAbort.model_construct(index=started[0], reason="limit_exceeded"))
            # each call past the cap is reported over its own text: nothing goes unreported
            self._diag(
                Issue(
                    "limit_exceeded",
                    {"limit": "max_calls", "value": self.policy.max_calls, "name": raw.name},
                    raw.span,
                    f"more than max_calls={self.policy.max_calls} calls; {raw.name!r} is dropped",
                ),
                raw.family,
            )
            return
        call, diags = self.binder.bind(raw)
        started = b.started.pop(tok, None)
        sent, _held = b.sent.pop(tok, (0, False))
        if call is None:
            if started is not None:
                self._event(CallAbort.model_construct(index=started[0], reason=diags[-1].kind if diags else "dropped"))
            for d in diags:
                self._diag_obj(d)
            return
        if started is not None:
            index = started[0]
        else:
            index = self.call_index
            self.call_index += 1
            self._event(CallStart.model_construct(index=index, name=call.name, id=call.id))
        self.calls_out += 1
        if sent < len(call.arguments_json) or not sent:
            self._event(ArgumentsDelta.model_construct(index=index, fragment=call.arguments_json[sent:]))
        self._event(CallEnd.model_construct(index=index, call=call))
        for d in diags:
            self._diag_obj(d)

    # -- deciding a block ---------------------------------------------------------------------------

    def _decide(self, b: Block) -> None:
        rank = self.cat.rank
        done = [c for c in b.cands if c.state == DONE_ and c.calls]
        deeper: list[Cand] = []
        if done:
            # a candidate that read the block to its end beats one that stopped at text it
            # could not read (that text may be another family's body); then the best rank
            winner = min(done, key=lambda c: (c.trail, c.junk, rank[c.g.name]))
            # but a call found by passing over text loses to a committed candidate that read
            # that text as its own body and found it broken or cut off: the block is that
            # candidate's, malformed or truncated
            if winner.skip_at >= 0:
                deeper = [
                    c
                    for c in b.cands
                    if not c.soft
                    and c.progress > winner.skip_at
                    and (
                        (c.state == FAILED and c.fail_kind != "limit" and c.fail_pos > winner.body_at)
                        or (c.state == DONE_ and not c.calls and any(k == "issue" for k, _, _ in c.items))
                    )
                ]
            if not deeper:
                if b.inline and self._quoted(winner):
                    b.winner = winner
                    b.phase = "inline"
                    b.rpos = winner.last_end
                    return
                self._accept(b, winner, winner.last_end)
                return
        hard = deeper or [c for c in b.cands if not c.soft]
        if not hard and b.reply and b.channel == TEXT_CHANNEL:
            # a reply that is a call cut off by the end of the text is a truncated call, once
            # something was read after its name: a reply-initial name alone ("Paris\n") is prose
            for c in sorted(b.cands, key=lambda c: rank[c.g.name]):
                if c.fail_kind == "cut" and self._past_name(c) and self._cut_call(c)[0] is not None:
                    b.winner = c
                    self._truncated(b, c)
                    return
        if not hard:
            self._decline(b)
            return
        # the candidate that read calls, else the one that read furthest, else the best rank
        winner = min(hard, key=lambda c: (-c.calls, -c.progress, rank[c.g.name]))
        b.winner = winner
        if winner.state == DONE_:  # structurally fine, but no call in it
            if any(kind == "issue" for kind, _, _ in winner.items):
                self._accept(b, winner, winner.last_end, quiet=True)
                return
            issue = Issue(
                "malformed_block",
                {"reason": "the block holds no call", "excerpt": excerpt(self._slice(b.start, winner.last_end))},
                (b.start, winner.last_end),
                "block holds no call",
            )
            winner.items.append(("issue", issue, -1))
            self._accept(b, winner, winner.last_end, quiet=True)
            return
        b.phase = "recover"
        b.rpos = winner.fail_pos
        if winner.fail_kind == "limit":
            b.rpos = winner.fail_pos

    def _quoted(self, c: Cand) -> bool:
        """Whether the calls of a block opened after prose on its line may be that prose
        quoting the format (`Use <tool_call>NAME</tool_call> for calls.`): every call has no
        argument and names no tool the toolset offers (any name, without a toolset)."""
        calls = [obj for kind, obj, _ in c.items if kind == "call"]
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
        if b.rpos < self.base:
            self._rewind(b.rpos)  # the candidates read past the block's end
        lp = b.rpos - self.base
        end = _SPACES.match(self.win, lp).end()
        b.rpos = self.base + end
        if end >= len(self.win) and not self.eof and b.rpos - b.start <= self.policy.max_block_chars:
            return False
        if end < len(self.win) and self.win[end] not in "\r\n":
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
        far = max([c.fail_pos for c in b.cands if c.state == FAILED] + [b.opener_end])
        self.soft_floor = max(self.soft_floor, far)
        self._rewind(b.start)
        self.block = None
        if b.reply:
            # scan the reply as prose from its first character
            return
        self._text(self.win[self.cur : b.opener_end - self.base], b.channel)
        self.cur = b.opener_end - self.base

    def _accept(self, b: Block, c: Cand, end: int, quiet: bool = False) -> None:
        """Emit a block's calls and issues; the block's text is gone, prose resumes at ``end``."""
        b.winner = c
        if b.channel == REASONING and self.policy.calls_in_reasoning != "accept" and c.calls:
            # reported, not dispatched: the block stays part of the reasoning text
            for kind, obj, tok in c.items[b.emitted :]:
                if kind == "call":
                    self._emit_item(b, kind, obj, tok)
            self._rewind(b.start)
            self.block = None
            self._text(self.win[self.cur : end - self.base], b.channel)
            self.cur = end - self.base
            return
        for kind, obj, tok in c.items[b.emitted :]:
            self._emit_item(b, kind, obj, tok)
        b.emitted = len(c.items)
        for tok, (index, _name) in sorted(b.started.items()):
            self._event(CallAbort.model_construct(index=index, reason="no call"))
        b.started.clear()
        b.sent.clear()
        self._rewind(end)
        self.block = None

    def _give_back(self, b: Block, resume: int, release_from: int | None = None) -> None:
        """Release ``[release_from, resume)`` as text and resume scanning at ``resume``."""
        start = b.start if release_from is None else release_from
        self._rewind(start)
        self.block = None
        self._text(self.win[self.cur : resume - self.base], b.channel)
        self.cur = resume - self.base

    # -- recovery after a syntax error in a committed block ---------------------------------------

    def _recover(self, b: Block) -> bool:
        """A committed block with a syntax error: find how much text it took."""
        c = b.winner
        assert c is not None
        family = c.g.name
        if b.channel == REASONING:
            # inside reasoning a broken block is just reasoning text
            self._give_back(b, b.opener_end)
            return True
        if b.absorb >= 0:
            return self._absorb(b, c)
        if c.fail_kind == "limit":
            return self._recover_limit(b, c)
        cut = c.fail_kind == "cut"
        rx = self.cat.closers(c.g) if cut else self.cat.recovery(c.g)
        if rx is None:
            return self._truncated(b, c)
        if b.rpos - b.start > self.policy.max_block_chars:
            return self._unterminated(b, c, b.rpos)
        lp = b.rpos - self.base
        if lp < 0:
            self._rewind(b.rpos)
            lp = 0
        win = self.win
        # a closer beyond the block cap does not count: the same answer at every chunking
        horizon = min(len(win), b.start + self.policy.max_block_chars - self.base)
        m = rx.search(win, lp, max(lp, horizon)) if horizon > lp else None
        if m is None and horizon < len(win):
            return self._truncated(b, c) if cut else self._unterminated(b, c, self.base + horizon)
        limit = m.start() if m else len(win)
        if not self.eof:
            p = self._cut_marker(c.g, win, lp, limit)
            if p >= 0:
                b.rpos = self.base + p
                return False
            if m is None:
                b.rpos = self.base + len(win)
                return False
        if m is not None:
            q = m.start()
            closer_end = max(
                (e for t in c.g.closers if (e := t.pattern.match_end(win, q)) is not None and e > q), default=None
            )
            if closer_end is not None:
                junk = self._slice(max(c.fail_pos, b.start), self.base + q)
                # a block that went over a limit (nesting) says so, like one cut off by it
                kind = "limit_exceeded" if c.fail_kind == "limit" else "malformed_block"
                detail = {"reason": c.fail_reason, "excerpt": excerpt(junk.strip() or self._slice(b.start, self.base + q))}
                if kind == "limit_exceeded":
                    detail.update(limit="max_depth", value=self.policy.max_depth)
                self._emit_pending(b, c)
                self._abort_started(b, c, kind)
                self._diag(
                    Issue(
                        kind,
                        detail,
                        (b.start, self.base + closer_end),
                        f"block is not a valid call ({c.fail_reason}); removed from the text",
                    ),
                    family,
                )
                b.absorb = self.base + closer_end
                return self._absorb(b, c)
        stop = self.base + (m.start() if m is not None else len(win))
        if cut:
            return self._truncated(b, c)
        if c.calls:
            # the calls stand; what follows them is text
            self._emit_pending(b, c)
            self._abort_started(b, c, "malformed_block")
            calls_end = max(obj.span[1] for kind, obj, _ in c.items if kind == "call")
            if c.named_begun > c.named_done and c.last_end > calls_end:
                # a call begun after them and broken off (`[f(a=1), g(x>`): removed, reported
                self._diag(
                    Issue(
                        "malformed_block",
                        {"reason": c.fail_reason, "excerpt": excerpt(self._slice(calls_end, c.last_end))},
                        (calls_end, c.last_end),
                        f"a call broken off after the block's calls ({c.fail_reason}); removed from the text",
                    ),
                    family,
                )
            self._rewind(c.last_end)
            self.block = None
            return True
        return self._unterminated(b, c, stop)

    def _recover_limit(self, b: Block, c: Cand) -> bool:
        """A payload that went deeper than ``max_depth``: its brackets are counted to where it
        ends, and the block (with a closer right after it) is removed there; the prose after
        it stays text.  One still open at the end of the text is removed to the end; one that
        runs past ``max_block_chars`` is released as text, like any block over the cap."""
        if b.balance is None:
            # a JSON payload is counted from its first bracket; a grammar's nested rules
            # (a literal list inside a list …) from the first token of the block's body
            b.balance = _Balance(c.fail_pos if c.cut_json else max(c.body_at, b.opener_end))
        bal = b.balance
        if bal.pos < self.base:
            self._rewind(bal.pos)
        win = self.win
        lp = bal.pos - self.base
        if bal.end < 0:
            horizon = min(len(win), b.start + self.policy.max_block_chars - self.base)
            found = bal.scan(win, lp, horizon) if horizon > lp else -1
            bal.pos = self.base + (found if found >= 0 else max(lp, horizon))
            b.rpos = bal.pos  # the window keeps what is still to be looked at
            if found < 0:
                if horizon < len(win):
                    c.reach = b.start + self.policy.max_block_chars + 1
                    return self._over_limit(b)
                if not self.eof:
                    return False
                return self._truncated(b, c)
            bal.end = bal.pos
        end = bal.end - self.base
        q = _WS.match(win, end).end()
        if not self.eof and (q >= len(win) or any(t.pattern.needs_more(win, q) for t in c.g.closers)):
            return False  # a closer may still follow the payload
        close = max(
            (e for t in c.g.closers if (e := t.pattern.match_end(win, q)) is not None and e > q), default=None
        )
        stop = self.base + (close if close is not None else end)
        self._emit_pending(b, c)
        self._abort_started(b, c, "limit_exceeded")
        self._diag(
            Issue(
                "limit_exceeded",
                {"reason": c.fail_reason, "limit": "max_depth", "value": self.policy.max_depth},
                (b.start, stop),
                f"block is not a valid call ({c.fail_reason}); removed from the text",
            ),
            c.g.name,
        )
        if close is None:
            self._rewind(stop)
            self.block = None
            return True
        b.absorb = stop
        return self._absorb(b, c)

    def _absorb(self, b: Block, c: Cand) -> bool:
        """After a broken block's closer, the closers of the structures around it (white
        space between) belong to the block too: ``</function>\n</tool_call>``."""
        lp = b.absorb - self.base
        if lp < 0:
            self._rewind(b.absorb)
            lp = 0
        win = self.win
        while True:
            m = _WS.match(win, lp)
            q = m.end()
            if q >= len(win):
                if self.eof:
                    break
                return False  # white space so far: a closer may follow
            if not self.eof and any(t.pattern.needs_more(win, q) for t in c.g.closers):
                return False
            end = max(
                (e for t in c.g.closers if (e := t.pattern.match_end(win, q)) is not None and e > q), default=None
            )
            if end is None:
                break
            lp = end
            b.absorb = self.base + end
        self._rewind(b.absorb)
        self.block = None
        return True

    def _unterminated(self, b: Block, c: Cand, stop: int) -> bool:
        family = c.g.name
        # what the block reported before it turned out to have no end is reported in every
        # chunking (a stream may already have sent it)
        self._emit_pending(b, c, issues_only=True)
        self._abort_started(b, c, "unterminated_block")
        self._diag(
            Issue(
                "unterminated_block",
                {"reason": c.fail_reason, "excerpt": excerpt(self._slice(b.start, stop))},
                (b.start, stop),
                "an opener with no valid body and no closer; kept as text",
            ),
            family,
        )
        self._give_back(b, b.opener_end)  # what follows the opener is scanned as prose (fences, code spans)
        return True

    def _emit_pending(self, b: Block, c: Cand, issues_only: bool = False) -> None:
        if b.leader is not None and b.leader is not c:
            b.emitted = 0  # a different candidate's items: none of them were sent
        for kind, obj, tok in c.items[b.emitted :]:
            if not issues_only or kind == "issue":
                self._emit_item(b, kind, obj, tok)
        b.emitted = len(c.items)

    def _abort_started(self, b: Block, c: Cand, reason: str) -> None:
        for _tok, (index, _name) in sorted(b.started.items()):
            self._event(CallAbort.model_construct(index=index, reason=reason))
        b.started.clear()
        b.sent.clear()

    def _truncated(self, b: Block, c: Cand) -> bool:
        """The text ended inside a committed block: report it; never complete it."""
        self._emit_pending(b, c)
        end = self.base + len(self.win)
        kind = "truncated" if c.fail_kind == "cut" else "limit_exceeded"
        name, raw = self._cut_call(c)
        done = self._cut_complete(b, c)
        # what is removed runs from the end of the block's last call read whole (or the
        # block's start) to the end of the text: the diagnostic covers all of it
        removed_from = max([b.start] + [obj.span[1] for kind, obj, _ in c.items if kind == "call"] + done)
        cut_tok: tuple[Any, ...] = ("call", c.named_done)
        if c.cut_json and c.named_begun <= c.named_done:  # a payload, not a named call's arguments
            cut_tok = ("json", c.fail_pos, raw.elem if raw is not None and raw.elem >= 0 else c.cut_elem)
        started = b.started.get(cut_tok)
        if name is None and started is not None and kind == "truncated":
            name = started[1]
        span = (removed_from, end)
        if kind == "truncated" and self.policy.truncated == "keep" and raw is not None and not self._past_name(c):
            raw = None  # nothing after its name says the call was begun (`<tool_call>result `)
        if kind == "truncated" and self.policy.truncated == "keep" and raw is not None:
            self._emit_item(b, "call", raw, cut_tok)
            span = raw.span  # DESIGN §7: a kept call's diagnostic is about the call
        self._abort_started(b, c, kind)
        detail: dict[str, Any] = {"reason": c.fail_reason, "policy": self.policy.truncated}
        if name is not None:
            detail["name"] = name
        if span != (removed_from, end):
            detail["removed"] = [removed_from, end]  # the block around a kept call
        if kind == "limit_exceeded":
            detail["limit"] = "max_depth"
            detail["value"] = self.policy.max_depth
        kept = kind == "truncated" and self.policy.truncated == "keep" and raw is not None
        self._diag(
            Issue(
                kind,
                detail,
                span,
                f"payload cut off ({c.fail_reason}); "
                + ("returned with its complete arguments only" if kept else "the call is not returned"),
            ),
            c.g.name,
        )
        self._rewind(end)
        self.block = None
        return True

    def _cut_complete(self, b: Block, c: Cand) -> list[int]:
        """Emit the calls of a cut-off block that were complete before the cut and that the
        grammar had not yet reduced (the elements of a JSON array, the lines of a body read
        whole); they stand.  Returns where each ends."""
        if c.fail_kind != "cut":
            return []
        if c.cut_json and c.named_begun <= c.named_done:
            text = self._slice(c.fail_pos, self.base + len(self.win))
            calls, issues = c.reader.cut_elements(text, c.fail_pos, bare=c.rule == "reply")
            items = sorted(
                [("call", x, ("json", c.fail_pos, x.elem)) for x in calls]
                + [("issue", x, ("json", c.fail_pos, x.elem)) for x in issues],
                key=lambda item: item[1].span[0] if item[1].span else -1,
            )
        else:
            items = [("call", x, ("call", c.named_done + i)) for i, x in enumerate(c.reader.completed(c.parser.values))]
            c.named_done += len(items)
        for kind, obj, tok in items:
            self._emit_item(b, kind, obj, tok)
        return [obj.span[1] for kind, obj, _ in items if kind == "call"]

    def _cut_call(self, c: Cand) -> tuple[str | None, RawCall | None]:
        """The name (and what survives) of a call cut off by the end of the text: from its
        JSON payload, or from the name and parameters the parser had read.  A name that
        runs to the end of the text may itself be cut off (`get_wea`): it is no name."""
        end = c.reader.name_end(c.parser.values)
        if end is not None and end >= self.base + len(self.win):
            return None, None
        if not c.cut_json:
            name, raw = c.reader.salvage(c.parser.values)
            if raw is not None:  # a cut-off call's text runs to the end of the text
                raw.span = (raw.span[0], self.base + len(self.win))
            return name, raw
        if c.fail_pos < 0 or not c.ext_type:
            return None, None
        text = self._slice(c.fail_pos, self.base + len(self.win))
        if c.named_begun > c.named_done:
            # the arguments of a call whose name the grammar read (Kimi, DeepSeek)
            name, raw = c.reader.cut_arguments(c.parser.values, text, self.base + len(self.win))
            if c.rule == "reply" and c.reader.known and (name or "").strip() not in c.reader.known:
                return None, None  # a reply-start name the toolset does not offer (bare_call)
            return name, raw
        if text[:1] not in ("{", "["):
            return None, None
        return c.reader.cut_call(text, c.fail_pos, bare=c.rule == "reply")


def _first_key(text: str) -> str | None:
    """The first member key of a strict JSON object's text, when it is written whole."""
    i = 1
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    if text[i : i + 1] != '"':
        return None
    end = text.find('"', i + 1, i + 64)
    return text[i + 1 : end] if end > 0 else None


def _item_end(obj: Any) -> int:
    """Where a block item (a call or an issue) ends in the input."""
    span = getattr(obj, "span", None)
    return span[1] if span else -1
