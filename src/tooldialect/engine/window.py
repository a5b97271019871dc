"""The text window: the undecided text, where reading is, and the text a holder keeps.

Positions are absolute offsets in the whole input.  ``win`` holds the text from ``base``
that is not yet decided; ``cur`` is where prose reading is (relative to ``base``).  Text
that a block's candidates (or an open code span) have read past moves into the holder's
``Held`` pieces, so that a long block never makes ``win`` large, and comes back when the
holder gives it back (``rewind``).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Final

__all__ = ["Held", "SpecialTokens", "Window"]

#: A held piece shorter than this takes the text that goes on from it (a piece grows to
#: at most this plus one delta).
PIECE: Final = 512


class Held:
    """The text a holder (a block, an open code span) keeps from its start."""

    __slots__ = ("start", "tail", "pieces", "starts")

    def __init__(self, start: int, tail: str) -> None:
        self.start = start
        self.tail = tail  # the four characters before ``start``
        self.pieces: list[str] = []
        self.starts: list[int] = []  # where each piece begins

    def text(self) -> str:
        return "".join(self.pieces)


class Window:
    """The text received and not yet decided, where prose reading is, whether the text has
    ended, and who holds the text ``win`` no longer keeps (the open block, or an open code
    span: its ``Held`` pieces).  Positions change only through its methods."""

    __slots__ = ("win", "base", "cur", "prev_tail", "eof", "held", "specials")

    def __init__(self) -> None:
        self.win = ""
        self.base = 0
        self.cur = 0
        self.prev_tail = "\n"  # the four characters before ``win`` (a line start at first)
        self.eof = False  # the end of the text is known (close())
        self.held: Held | None = None  # the holder of text moved out of ``win``
        # reading token ids: which text came from ordinary tokens (None: reading text)
        self.specials: SpecialTokens | None = None

    def move(self, cur: int) -> None:
        """Reading goes on at ``cur`` (relative to ``base``): what is before it was read."""
        self.cur = cur

    def append(self, delta: str) -> None:
        """A delta arrived: it is read from the window."""
        self.win += delta

    def read_tokens(self, special_texts: frozenset[str]) -> SpecialTokens:
        """The stream reads token ids: what ordinary tokens wrote is kept from now on (the
        tokenizer's special tokens have ``special_texts``)."""
        sp = self.specials
        if sp is None:
            sp = self.specials = SpecialTokens(special_texts)
        return sp

    def end_text(self) -> None:
        """The text has ended (``close()``): nothing more will arrive."""
        self.eof = True

    def hold(self, held: Held | None) -> None:
        """``held`` keeps the text ``win`` lets go of from now on (None: nobody does)."""
        self.held = held

    @property
    def end(self) -> int:
        """The absolute end of the text received so far."""
        return self.base + len(self.win)

    def tail_at(self, q: int) -> str:
        """The four characters before ``win[q]``."""
        return (self.prev_tail + self.win[max(0, q - 4) : q])[-4:]

    def skip(self, text: str) -> None:
        """Text decided without being stored (prose with nothing to look at)."""
        self.prev_tail = (self.prev_tail + text)[-4:]
        self.base += len(text)

    def compact(self, look_from: int, keep_from: int) -> None:
        """Drop the text before ``look_from`` from ``win``; what of it is after
        ``keep_from`` moves into the holder's pieces."""
        held = self.held
        base = self.base
        win = self.win
        look = min(look_from, base + len(win)) - base
        if look <= 0:
            return
        keep = keep_from - base
        if keep < 0:
            keep = 0
        if keep < look and held is not None:
            pieces = held.pieces
            if pieces and len(pieces[-1]) < PIECE and held.starts[-1] + len(pieces[-1]) == base + keep:
                # text that goes on from a short piece joins it: a block read in small
                # deltas is kept (and sliced) in few pieces
                pieces[-1] += win[keep:look]
            else:
                held.starts.append(base + keep)
                pieces.append(win[keep:look])
        self.prev_tail = win[look - 4 : look] if look >= 4 else (self.prev_tail + win[:look])[-4:]
        self.win = win[look:]
        self.base = base + look
        self.cur = max(0, self.cur - look)

    def slice(self, start: int, end: int) -> str:
        """Text between absolute offsets, from the holder's pieces and ``win``."""
        base = self.base
        if start >= base:
            return self.win[start - base : end - base]
        held = self.held
        parts = []
        if held is not None and held.pieces:
            pieces, starts = held.pieces, held.starts
            i = max(0, bisect_right(starts, start) - 1)
            while i < len(pieces) and starts[i] < min(end, base):
                s0 = starts[i]
                piece = pieces[i]
                lo = max(start, s0) - s0
                hi = min(end, s0 + len(piece)) - s0
                if hi > lo:
                    parts.append(piece[lo:hi])
                i += 1
        if end > base:
            parts.append(self.win[max(start, base) - base : end - base])
        return "".join(parts)

    def line_begins(self, start: int, at: int) -> bool:
        """Whether only white space stands before ``at`` on its line (looking back at most
        256 characters, and not before ``start``)."""
        return self.slice(max(start, at - 256), at).rstrip(" \t\r").endswith("\n")

    def rewind(self, pos: int) -> None:
        """Make ``pos`` the reading position again (text after it is read as prose); text
        before ``base`` comes back from the holder (the block or span that keeps it)."""
        if pos >= self.base:
            self.cur = pos - self.base
            return
        held = self.held
        assert held is not None, "rewinding needs the holder of the text"
        before = self.slice(max(held.start, pos - 4), pos)
        tail = (held.tail + before)[-4:] if pos - 4 < held.start else before
        self.win = self.slice(pos, self.base) + self.win
        self.base = pos
        self.cur = 0
        self.prev_tail = tail
        # the pieces now end where win begins: no text is held twice
        i = bisect_left(held.starts, pos)
        del held.pieces[i:], held.starts[i:]
        if held.pieces and held.starts[-1] + len(held.pieces[-1]) > pos:
            held.pieces[-1] = held.pieces[-1][: pos - held.starts[-1]]

    def restore(self) -> None:
        """Put everything the holder kept back in front of ``win`` (it is read again), and let
        the holder go."""
        held = self.held
        assert held is not None, "restoring needs the holder of the text"
        self.held = None
        text = held.text()
        if text:
            self.win = text + self.win
            self.base -= len(text)
        held.pieces.clear()
        held.starts.clear()


class SpecialTokens:
    """Which of the stream's text came from ordinary tokens, when it reads token ids
    (``ToolStream.feed_tokens``): a family whose grammar says ``// special tokens: only``
    does not read a marker whose text is one of the tokenizer's special tokens where that
    text was spelled with ordinary tokens; there it is text.  Text given as text
    (``feed``) is not known to be ordinary, and every marker in it counts.  Spans that
    end before the earliest place the engine may read again are forgotten, so what is
    kept stays bounded by what is still undecided."""

    __slots__ = ("texts", "starts", "ends", "_room")

    def __init__(self, texts: frozenset[str]) -> None:
        self.texts = texts  # the tokenizer's special tokens, as text
        # the ordinary-token spans [start, end), absolute offsets, in order, disjoint
        self.starts: list[int] = []
        self.ends: list[int] = []
        self._room = 64

    def mark(self, at: int, spans: list[tuple[int, int]], floor: int) -> None:
        """Text from ordinary tokens at ``at + start`` to ``at + end`` for each span;
        ``floor``: nothing before it is read again."""
        starts, ends = self.starts, self.ends
        for lo, hi in spans:
            if ends and ends[-1] == at + lo:
                ends[-1] = at + hi  # it goes on from the last one
            else:
                starts.append(at + lo)
                ends.append(at + hi)
        if len(starts) > self._room:
            keep = bisect_right(ends, floor)
            del starts[:keep], ends[:keep]
            self._room = 2 * len(starts) + 64

    def ordinary(self, pos: int, text: str) -> bool:
        """Whether ``text`` at ``pos`` is a special token's text spelled in ordinary tokens."""
        if text not in self.texts:
            return False
        i = bisect_right(self.starts, pos) - 1
        return i >= 0 and pos < self.ends[i]
