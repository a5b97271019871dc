"""What a normalising tokenizer makes of text: NFKC, then case folding.

Some tokenizers normalise text to NFKC before the model sees it, and a model reads letter
case loosely, so the envelope counts two spellings as one tag when their folded forms
agree: ``＜/tool_reſult＞`` and ``</TOOL_RESULT>`` both fold to ``</tool_result>``.  Every
answer here comes from the running Python's ``unicodedata``, never from a copied table.
"""

from __future__ import annotations

import sys
import unicodedata
from array import array
from functools import cache

__all__ = ["attaches", "carriers", "fold"]


def fold(text: str) -> str:
    """``text`` in NFKC, case-folded: the spelling the envelope's rules are checked against."""
    return unicodedata.normalize("NFKC", text).casefold()


def attaches(ch: str) -> bool:
    """True when NFKC may join ``ch`` to the character before it: a combining mark, or a
    character whose decomposition starts with one (``＞`` then U+0338 folds to ``≯``)."""
    return unicodedata.combining(unicodedata.normalize("NFKD", ch)[0]) != 0


@cache
def carriers(target: str) -> dict[str, tuple[int, ...]]:
    """Every character whose folded form holds the character ``target``, with the offsets of
    ``target`` in that form (``"<"``: ``<``, ``﹤`` and ``＜``).

    Built once, on first use, from every code point (about 0.2 s): all of them are folded in
    one C call, each followed by NUL so the result splits back per code point.  NFKD stands
    in for NFKC there (five times faster): composition only merges what NFKD wrote, so it
    finds a superset, which :func:`fold` then checks one character at a time.
    """
    found: dict[str, tuple[int, ...]] = {}
    every = unicodedata.normalize("NFKD", _every_code_point()).casefold()
    code = 0
    seen = 0
    at = every.find(target)
    while at >= 0:
        code += every.count("\0", seen, at)
        seen = at
        _check(chr(code), target, found)
        at = every.find(target, at + 1)
    for code in (0, *range(0xD800, 0xE000)):  # written as spaces by _every_code_point
        _check(chr(code), target, found)
    return found


def _check(ch: str, target: str, found: dict[str, tuple[int, ...]]) -> None:
    form = fold(ch)
    if target in form:
        found[ch] = tuple(i for i, c in enumerate(form) if c == target)


def _every_code_point() -> str:
    """Each code point followed by NUL; NUL itself and the surrogates (which cannot be
    decoded) are written as spaces."""
    count = sys.maxunicode + 1
    typecode = next(t for t in "IL" if array(t).itemsize == 4)
    cells = array(typecode, bytes(8 * count))
    cells[0::2] = array(typecode, range(count))
    cells[0] = 0x20
    cells[2 * 0xD800 : 2 * 0xE000 : 2] = array(typecode, [0x20]) * 0x800
    return cells.tobytes().decode("utf-32-le" if sys.byteorder == "little" else "utf-32-be")
