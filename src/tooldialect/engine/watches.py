"""What a block keeps watching as it is read: its opener repeating (``LoopWatch``, the loop
watch's state) and, past ``max_depth``, a payload's brackets (``Balance``).  Kept apart
from the rooms that run them (loops, recovery) so that a block (cand.py) holds them typed."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import ClassVar

from mypy_extensions import mypyc_attr

from .search import Skipping

__all__ = ["Balance", "LoopWatch"]


@mypyc_attr(acyclic=True)
class LoopWatch:
    """Counts a block's opener in the text its candidates have read."""

    __slots__ = ("rx", "marker", "pos", "repeats", "first", "at", "clear", "seen", "scanned")

    def __init__(self, rx: Skipping, marker: str, start: int, opener_end: int) -> None:
        self.rx = rx  # group 1: the opener, group 2: a closer that pairs with it
        self.marker = marker  # the opener as written
        self.pos = opener_end  # everything before this was counted
        self.repeats = 1  # openers in the current run (the block's own included)
        self.first = start  # where the current run began (once a loop: where what it removes begins)
        self.at: int | None = None  # end of the opener that made the run a loop (None: no loop)
        self.clear = opener_end  # no loop before this: items ending here may be emitted
        # one marker width before what the scan has read (or the end of its last match):
        # what ``clear`` follows, so that calls are released at the same points whatever
        # ``pos`` skips
        self.seen = opener_end
        self.scanned: int | None = None  # the end of the text the last scan was given

    def quiet(self, text: str) -> bool:
        """Whether ``text`` holds no character an opener or closer begins with (the watch
        then only moves on)."""
        first = self.rx.first
        return bool(self.rx.pats) and first is not None and first.search(text) is None

    def passed(self, end: int, width: int) -> None:
        """Everything before ``end`` (absolute) was read, and no marker begins in it."""
        self.pos = end
        self.seen = max(self.seen, end - width)
        self.clear = max(self.clear, self.seen)

    def scan(
        self, win: str, base: int, end: int, width: int, limit: int, own: set[int] | Callable[[int], set[int]]
    ) -> bool:
        """Count openers in ``win[pos - base : end]``; True once more than ``limit`` follow
        one another (``at`` then says where).  ``own(at)`` is where the candidate that
        speaks for the block before ``at`` read an opener as its own token (a block's only
        candidate: its set itself), which is not a repeat."""
        self.scanned = base + end
        lp = self.pos - base
        rx = self.rx
        first = rx.first
        if lp < end and rx.pats and first is not None and first.search(win, lp, end) is None:
            # no character a marker begins with in the new text: nothing to count, nothing
            # that may still grow (what the general path below finds, in one scan)
            self.passed(base + end, width)
            return False
        matched = False
        while lp < end:
            m = rx.search(win, lp, end)
            if m is None:
                break
            matched = True
            lp = m.end()
            if m.group(1) is None:  # a closer
                self.repeats = 0
                continue
            opened = own if isinstance(own, set) else own(base + lp)
            if base + m.start() in opened:
                # the grammar read this opener as the block's own token: one marker per call
                # (Mistral v11 writes [TOOL_CALLS] before each), not an opener met again
                continue
            if self.repeats == 0:
                self.first = base + m.start()
            self.repeats += 1
            if self.repeats > limit:
                self.at = self.pos = base + lp
                return True
        self.pos = base + self._back(win, lp, end, width)
        seen = base + end - width
        self.seen = max(base + lp, seen) if matched else max(self.seen, seen)
        self.clear = max(self.clear, self.seen)
        return False

    def _back(self, win: str, lp: int, end: int, width: int) -> int:
        """Where the next scan starts: a marker may straddle ``end``, so from one marker
        width before it, but only where a marker could still match once more text arrives
        (a position where none can is decided for good, and never looked at again)."""
        rx = self.rx
        back = max(lp, end - width)
        if rx.first is None or not rx.pats or back >= end:
            return back
        text = win if end == len(win) else win[:end]
        arriving = rx.arriving
        for f in rx.first.finditer(text, back, end):
            if arriving.at(text, f.start()):
                return f.start()
        return end


class Balance:
    """The brackets and strings of a payload that went deeper than ``max_depth``, counted
    (never parsed) to find where it ends, so that the prose after it stays text.  Linear:
    each character is looked at once, runs of plain characters in one regex step."""

    __slots__ = ("depth", "quote", "escape", "pos", "end")

    _PLAIN = re.compile(r"[^\[\](){}\"'\\]+")
    _IN_STRING: ClassVar[dict[str, re.Pattern[str]]] = {q: re.compile(r"[^\\" + q + "]+") for q in "\"'"}

    def __init__(self, pos: int) -> None:
        self.depth = 0
        self.quote = ""  # the quote of the string being read ("" outside strings)
        self.escape = False
        self.pos = pos  # absolute: everything before it was counted
        self.end: int | None = None  # absolute: just after the bracket that closed the payload, once found

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
