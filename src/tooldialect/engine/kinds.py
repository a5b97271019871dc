"""The engine's vocabulary: the states its rooms are in and the keys that tie a call's
events together, as enums, named tuples and a plain item class (never strings, tuple
shapes or sentinels)."""

from __future__ import annotations

import enum
from typing import Any, Final, NamedTuple, final

from ..records import RawCall

__all__ = [
    "CHANNEL_TEXT",
    "KIND_CALL",
    "KIND_ISSUE",
    "KIND_START",
    "KIND_TEXT",
    "MODE_BLOCK",
    "MODE_PROSE",
    "NEVER",
    "PHASE_INLINE",
    "PHASE_LEX",
    "PHASE_LOOP",
    "PHASE_RECOVER",
    "READING_DONE",
    "READING_FAILED",
    "READING_RUN",
    "READING_WAIT",
    "STOP_NO",
    "VERDICT_CLOSED",
    "VERDICT_ON",
    "VERDICT_WAIT",
    "Channel",
    "Closer",
    "Failure",
    "Item",
    "Key",
    "Kind",
    "Mode",
    "Phase",
    "Reading",
    "Resync",
    "Source",
    "Stop",
    "Verdict",
    "item_end",
    "key_of",
    "named_key",
]

#: A position no text reaches: "never", where a position is asked for.
NEVER: Final = 1 << 62


class _Members(enum.Enum):
    """An enum of singletons, hashed by identity: a dict or set keyed by one (the engine's
    tables of modes and phases) hashes in C, not through ``Enum.__hash__`` (a Python call
    per lookup)."""

    __hash__ = object.__hash__


class Channel(_Members):
    """Where prose goes: the visible text or the reasoning."""

    TEXT = "text"
    REASONING = "reasoning"


class Reading(_Members):
    """A candidate's state while it reads a block (``live``: it may still read on)."""

    RUN = "run"  # reading: more may be read from the text there is
    WAIT = "wait"  # waiting for more text
    DONE = "done"  # the grammar's reading of the block is complete
    FAILED = "failed"  # the block is not (or no longer) this candidate's

    live: bool  # (set on each member below: asked of every candidate at every step)


for _state in Reading:
    _state.live = _state is Reading.RUN or _state is Reading.WAIT


class Failure(_Members):
    """Why a candidate failed."""

    SYNTAX = "syntax"  # text the grammar cannot read
    CUT = "cut"  # the end of the text came first
    LIMIT = "limit"  # nesting past max_depth
    LOOP = "loop"  # inside a repetition loop


class Resync(_Members):
    """After damage in a block, what the candidate looks for to go on."""

    PAYLOAD = "payload"  # a broken payload: the next payload or a closer
    JUNK = "junk"  # unexpected text where the block could end: a closer of what is open


class Mode(_Members):
    """Which room reads at the reading position (the engine's table of readers is keyed by it)."""

    PROSE = "prose"  # visible text or reasoning, up to the next marker
    BLOCK = "block"  # a block's candidates, its recovery, a loop it swallows
    TICKS = "ticks"  # a backtick or tilde run at the reading position: a fence, a code span or text
    FENCE = "fence"  # a fenced code block: shown as written
    CODE = "code"  # an inline code span: shown as written
    RUN = "run"  # a backtick or tilde run too long to open anything: plain text to its end


class Verdict(_Members):
    """What a step of a block's reading tells the engine (which asks the arbiter to act on it)."""

    WAIT = "wait"  # more text is needed
    ON = "on"  # the block reads on, as it is
    CLOSED = "closed"  # decided, its text dealt with: prose reads on
    LOOP = "loop"  # a repetition loop begins: the block goes on in Phase.LOOP
    RECOVER = "recover"  # the block goes on in Phase.RECOVER (the closers after a loop)
    OVER_CAP = "over cap"  # the block reads past max_block_chars: it is released as text


class Closer(_Members):
    """A reasoning closer that ends the reasoning whatever wrapper opened it (the template
    opened it in the prompt: ``Policy.start_in_reasoning``)."""

    ANY = "any"


class Phase(_Members):
    """What a block is doing."""

    LEX = "lex"  # its candidates read it
    RECOVER = "recover"  # a committed candidate failed: how much text the block took
    LOOP = "loop"  # a repetition loop is being swallowed
    INLINE = "inline"  # a block after prose on its line: prose quoting the format, or calls


class Stop(_Members):
    """Whether a marker ends a text value (None where asked means: undecided yet)."""

    YES = "yes"
    NO = "no"
    MAYBE = "maybe"  # only if nothing better comes before the end of the text


class Kind(_Members):
    """What a block item is."""

    START = "start"  # a call's name, read before its arguments: (name, id or None, name end)
    PARAM = "param"  # one complete argument of a started call (a Node, or (key, value))
    CALL = "call"  # a complete call (RawCall)
    ISSUE = "issue"  # something wrong in the block (Issue)
    TEXT = "text"  # prose inside the block, shown as written (str)


# -- members read at every step, as module names ---------------------------------------------
# Python 3.10 and 3.11 read an enum's member (``Verdict.ON``) through EnumType.__getattr__'s
# hook, four times a plain class attribute's cost; the reads in the engine's per-step code
# use these names instead (about 5 % of a pure-Python stream; 3.12 dropped the hook, and the
# compiled build reads members natively).
CHANNEL_TEXT: Final = Channel.TEXT
KIND_CALL: Final = Kind.CALL
KIND_ISSUE: Final = Kind.ISSUE
KIND_START: Final = Kind.START
KIND_TEXT: Final = Kind.TEXT
MODE_BLOCK: Final = Mode.BLOCK
MODE_PROSE: Final = Mode.PROSE
PHASE_INLINE: Final = Phase.INLINE
PHASE_LEX: Final = Phase.LEX
PHASE_LOOP: Final = Phase.LOOP
PHASE_RECOVER: Final = Phase.RECOVER
READING_DONE: Final = Reading.DONE
READING_FAILED: Final = Reading.FAILED
READING_RUN: Final = Reading.RUN
READING_WAIT: Final = Reading.WAIT
STOP_NO: Final = Stop.NO
VERDICT_CLOSED: Final = Verdict.CLOSED
VERDICT_ON: Final = Verdict.ON
VERDICT_WAIT: Final = Verdict.WAIT


class Source(enum.IntEnum):
    """How a call was found, which decides how it is announced."""

    NAMED = 0  # the grammar read its name first (the n-th such call of the block)
    UNNAMED = 1  # a call node whose name announced nothing (keyed by where it starts)
    PAYLOAD = 2  # a JSON payload's call object (keyed by the payload's offset)


class Key(NamedTuple):
    """What ties a call's announcement, arguments and end together."""

    source: Source
    at: int  # NAMED: the call's ordinal; UNNAMED and PAYLOAD: an offset in the text
    elem: int | None = None  # PAYLOAD: the call object's place in it (None: the payload itself)

    def element(self, elem: int) -> Key:
        return _make(_KEY, (self[0], self[1], elem))  # (asked per delta: no keyword parsing)

    def payload(self) -> Key:
        """The whole payload this call object is part of."""
        return _make(_KEY, (self[0], self[1], None))


# (final: the compiled build reads them from a static, not the module's dict, per key and item)
_make: Final = tuple.__new__
_KEY: Final = Key


def key_of(source: Source, at: int, elem: int | None = None) -> Key:
    """``Key(source, at, elem)``, made without the interpreted ``__new__`` a named tuple's
    class call runs (one or two per call read)."""
    return _make(_KEY, (source, at, elem))


#: the keys of a block's first named calls, made once (keys are values: any two equal
#: keys may be the same object)
_NAMED_KEYS: Final = tuple(_make(_KEY, (Source.NAMED, n, None)) for n in range(256))


def named_key(n: int) -> Key:
    """``Key(Source.NAMED, n)``: the key of the ``n``-th call of a block whose name was read
    first (two or three asked per such call)."""
    if 0 <= n < 256:
        return _NAMED_KEYS[n]
    return _make(_KEY, (Source.NAMED, n, None))


@final
class Item:
    """One thing a candidate read in a block, in source order (a plain class: the
    compiled build makes one in a single native step, two or three per call read)."""

    __slots__ = ("kind", "obj", "key")

    def __init__(self, kind: Kind, obj: Any, key: Key | None) -> None:
        self.kind = kind
        self.obj = obj
        self.key = key


def item_end(obj: object) -> int:
    """Where a block item (a call or an issue) ends in the input."""
    if type(obj) is RawCall:
        call: RawCall = obj  # (a native attribute read in the compiled build)
        return call.span[1]
    span = getattr(obj, "span", None)
    return span[1] if span else -1
