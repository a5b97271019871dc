"""Regular-expression analysis for marker terminals.

The tokenizer matches terminals with Python's ``re`` (C speed), but ``re`` cannot
say whether a match that fails or stops at the end of the buffer would succeed or
grow once more text arrives.  :func:`needs_more` answers that by simulating the
pattern (parsed with the standard library's own regex parser) over the available
text and reporting whether any path wanted a character past its end.  Decisions
made only when no path reaches the end are final, so a stream cut anywhere makes
the same decisions as the whole text: that is what keeps streaming equal to batch.

Only the regex features a marker needs are supported (literals, classes, groups,
alternation, bounded repetition, scoped flags); anything else is refused when the
grammar compiles, with the terminal's name in the message.
"""

from __future__ import annotations

import itertools
import re
import sys
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .markerpattern import ASCII, NEVER_ARRIVING, NO_MARKER, SIMULATE, Arriving, MarkerPattern

if TYPE_CHECKING:  # the stubs describe the parser under its Python 3.10 names only
    import sre_constants as _c
    import sre_parse as _p
    from sre_constants import _NamedIntConstant

    #: One parsed regex item: an opcode and its argument, whose shape the opcode decides.
    _Item = tuple[_NamedIntConstant, Any]
elif sys.version_info >= (3, 11):
    import re._constants as _c
    import re._parser as _p
else:  # pragma: no cover - Python 3.10
    import sre_constants as _c
    import sre_parse as _p

__all__ = ["NEVER_ARRIVING", "NO_MARKER", "Arriving", "MarkerPattern", "UnsupportedPattern", "after_lead", "analyse",
           "places", "required_runs", "samples", "searchable", "simulate"]  # fmt: skip

_MAXREPEAT = _c.MAXREPEAT


class UnsupportedPattern(ValueError):
    """A terminal's regex uses a feature the incremental matcher cannot simulate."""


def analyse(regexp: str) -> MarkerPattern:
    """Analyse a terminal's regular expression (as lark renders it)."""
    try:
        parsed = _p.parse(regexp, 0)
    except re.error as exc:  # pragma: no cover - lark already validated it
        raise UnsupportedPattern(str(exc)) from exc
    _check_supported(_items(parsed))
    _lo, hi = parsed.getwidth()
    first = _first_chars(_items(parsed), False)
    literal, ic = _as_literal(_items(parsed))
    ic_all = bool(parsed.state.flags & re.IGNORECASE)
    return MarkerPattern(
        source=regexp,
        regex=re.compile(regexp),
        max_width=hi if hi < _MAXREPEAT else _MAXREPEAT,
        first=first,
        literal=literal,
        ignorecase=ic,
        run=None if ic_all else _run_of(_items(parsed)),
        search=searchable(regexp),
        places=places(regexp),
        likely=None if literal is not None and not ic else _likely(regexp, _items(parsed), ic_all),
    )


def _likely(source: str, items: list[_Item], ic: bool) -> str | None:
    """The spelling of a run of single characters, each a literal (as written) or a class holding
    one ASCII character: text that begins with it matches over its length (else the regex decides)."""
    if len(items) == 1 and items[0][0] is _c.SUBPATTERN:  # (?i:…)
        _group, add, drop, sub = items[0][1]
        ic = (ic or bool(add & _c.SRE_FLAG_IGNORECASE)) and not drop & _c.SRE_FLAG_IGNORECASE
        items = _items(sub)
    chars: list[str] = []
    for op, av in items:
        place = frozenset(chr(av)) if op is _c.LITERAL else _class(tuple(av), ic) if op is _c.IN else None
        if place is None or len(place) != 1:
            return None
        chars.extend(place)
    spelled = "".join(chars)
    return spelled if spelled and re.fullmatch(source, spelled) else None


# --- patterns written for searching ---------------------------------------------------
#
# ``re`` searches fast for a pattern whose every match begins with a known literal (or one
# of a few): it looks for those characters in C and tries the pattern only there.  It sees
# no such character inside a group that ignores case, nor inside a capturing group at the
# head of an alternative, so a marker written ``(?i:<…)`` (how a case-blind terminal is
# rendered) is tried at every place of the text.  The same pattern written ``<(?i:…)``
# matches the same texts, and is found fast.  Each rewriting below is kept only when the
# regex parser reads the rewritten pattern as the same items.

#: Characters written as themselves in a pattern, whose case nothing changes.
_PLAIN = frozenset("<>/=!:@#%&~,;'\"` -_")


def _shape(x: Any) -> Any:
    """A parsed pattern as nested tuples, to compare two parses."""
    if isinstance(x, _p.SubPattern):
        return tuple(_shape(item) for item in x.data)
    if isinstance(x, (tuple, list)):
        return tuple(_shape(item) for item in x)
    return x


@lru_cache(maxsize=4096)
def searchable(source: str) -> str:
    """``source`` with its first character written before its ``(?i:…)`` group, when the
    whole pattern is that group, the character is one case cannot change, and the parser
    reads the result as the same items; else ``source`` itself."""
    if not source.startswith("(?i:") or len(source) < 6 or source[4] not in _PLAIN:
        return source
    ch = source[4]
    try:
        before = _items(_p.parse(source, 0))
        if len(before) != 1 or before[0][0] is not _c.SUBPATTERN:
            return source
        group, add, delete, sub = before[0][1]
        inner = _items(sub)
        if group is not None or not inner or inner[0] != (_c.LITERAL, ord(ch)):
            return source
        moved = ch + "(?i:" + source[5:]
        after = _items(_p.parse(moved, 0))
    except re.error:  # pragma: no cover - the source compiled, and the result is checked
        return source
    if (
        len(after) == 2
        and after[0] == (_c.LITERAL, ord(ch))
        and after[1][0] is _c.SUBPATTERN
        and after[1][1][:3] == (None, add, delete)
        and _shape(after[1][1][3]) == _shape(inner[1:])
    ):
        return moved
    return source


@lru_cache(maxsize=4096)
def after_lead(source: str) -> tuple[str, str] | None:
    """``(ch, rest)`` when every match of ``source`` is the character ``ch`` (written
    first, as itself) then a match of ``rest``, as the parser reads both; else None."""
    if len(source) < 2 or source[0] not in _PLAIN:
        return None
    ch, rest = source[0], source[1:]
    try:
        whole = _items(_p.parse(source, 0))
        tail = _items(_p.parse(rest, 0))
    except re.error:
        return None
    if whole and whole[0] == (_c.LITERAL, ord(ch)) and _shape(tail) == _shape(whole[1:]):
        return ch, rest
    return None


@lru_cache(maxsize=4096)
def required_runs(source: str) -> tuple[str, ...]:
    """The runs of literal characters (in order) every match of ``source`` holds; none where case is ignored."""
    parsed = _p.parse(source, 0)
    runs: list[str] = [""]
    if not parsed.state.flags & re.IGNORECASE:
        _runs_in(_items(parsed), runs)
    return tuple(run for run in runs if run)


def _runs_in(items: list[_Item], runs: list[str]) -> None:
    for op, av in items:
        if op is _c.LITERAL:
            runs[-1] += chr(av)
        elif op is _c.SUBPATTERN and not av[1] & _c.SRE_FLAG_IGNORECASE:
            _runs_in(_items(av[3]), runs)  # (a group is a sequence too)
        else:
            runs.append("")  # any other part ends a run


def _run_of(items: list[_Item]) -> frozenset[str] | None:
    """The characters of a pattern that is one greedy, unbounded run of one or more of
    them (``[ \t\r\n]+``, ``x+``), its case kept (the caller leaves out a pattern that
    ignores case); None for any other pattern."""
    if len(items) != 1 or items[0][0] is not _c.MAX_REPEAT:
        return None
    lo, hi, sub = items[0][1]
    inner = _items(sub)
    if lo < 1 or hi != _MAXREPEAT or len(inner) != 1:
        return None
    op, av = inner[0]
    if op is _c.LITERAL:
        return frozenset(chr(av))
    if op is _c.IN and av and all(iop is _c.LITERAL for iop, _ in av):
        return frozenset(chr(iav) for _, iav in av)
    return None


# --- what a match holds at its first places ------------------------------------------

#: Places worked out per pattern, at most, and the ways through a pattern followed to
#: work them out (an optional part doubles them).
_PLACES = 16
_TRACKS = 64

#: The ASCII characters a match may hold at a place (None: unknown, or any).
_Place = frozenset[str] | None


@lru_cache(maxsize=4096)
def places(source: str) -> tuple[frozenset[str] | None, ...]:
    """The ASCII characters a match of ``source`` may hold at each of its first places,
    for the places every match has (those before its shortest length); None at a place
    not worked out (past a part repeated without bound, or a class that case folding may
    widen beyond what ``str.lower`` tells). A character that is not ASCII is never ruled
    out: a place lists only which ASCII characters a match may hold there."""
    parsed = _p.parse(source, 0)
    shortest, _longest = parsed.getwidth()
    live, done = _tracks(_items(parsed), bool(parsed.state.flags & re.IGNORECASE), [()])
    ways = live + done
    out: list[frozenset[str] | None] = []
    for k in range(min(shortest, _PLACES)):
        chars: set[str] | None = set()
        for way in ways:
            place = way[k] if k < len(way) else None  # (a way stopped before k: not followed)
            chars = None if chars is None or place is None else chars | place
        out.append(None if chars is None else frozenset(chars))
    return tuple(out)


def _tracks(
    items: list[_Item], ic: bool, live: list[tuple[_Place, ...]]
) -> tuple[list[tuple[_Place, ...]], list[tuple[_Place, ...]]]:
    """The ways through ``items`` from each of ``live``, each the places it fills: those
    still followed, and those stopped (at a part whose width is not bounded, past
    ``_PLACES``, or past ``_TRACKS`` ways)."""
    done: list[tuple[_Place, ...]] = []
    for op, av in items:
        if not live:
            break
        if op is _c.LITERAL or op is _c.IN or op is _c.NOT_LITERAL or op is _c.ANY:
            place = _class(((op, av),) if op is _c.LITERAL else tuple(av), ic) if op in (_c.LITERAL, _c.IN) else None
            live = [(*way, place) for way in live]
        elif op is _c.SUBPATTERN:
            _group, add, drop, sub = av
            inner = (ic or bool(add & _c.SRE_FLAG_IGNORECASE)) and not drop & _c.SRE_FLAG_IGNORECASE
            live, stopped = _tracks(_items(sub), inner, live)
            done += stopped
        elif (op is _c.MAX_REPEAT or op is _c.MIN_REPEAT) and av[1] != _MAXREPEAT:
            lo, hi, sub = av
            ways: list[tuple[_Place, ...]] = []
            for count in range(hi + 1):
                if count >= lo:
                    ways += live
                if count == hi or not live:
                    break
                live, stopped = _tracks(_items(sub), ic, live)
                done += stopped
                live = _settle(live, done)
            live = list(dict.fromkeys(ways))
        elif op is _c.BRANCH:
            ways = []
            for alt in av[1]:
                got, stopped = _tracks(_items(alt), ic, live)
                ways += got
                done += stopped
            live = list(dict.fromkeys(ways))
        else:  # a part repeated without bound: it and what follows stand at no known place
            done += live
            live = []
        live = _settle(live, done)
    return live, list(dict.fromkeys(done))


def _settle(live: list[tuple[_Place, ...]], done: list[tuple[_Place, ...]]) -> list[tuple[_Place, ...]]:
    """``live`` without the ways that stop (moved to ``done``): those ``_PLACES`` long, and
    all of them once there are more than ``_TRACKS`` (each stops where it stands)."""
    done += [way for way in live if len(way) >= _PLACES]
    live = [way for way in live if len(way) < _PLACES]
    if len(live) > _TRACKS:
        done += live
        return []
    return live


@lru_cache(maxsize=1024)
def _class(av: tuple[_Item, ...], ic: bool) -> _Place:
    """The ASCII characters a class (or a literal, as a class of one) matches; None where
    case folding may match one beyond ASCII to them (K, the Kelvin sign, is k)."""
    if ic and any((iop is _c.LITERAL and iav >= 128) or (iop is _c.RANGE and iav[1] >= 128) for iop, iav in av):
        return None
    return frozenset(a for a in ASCII if _in_class(list(av), a, ic))


# --- support check -----------------------------------------------------------------

_SUPPORTED = {_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN, _c.BRANCH, _c.SUBPATTERN, _c.MAX_REPEAT, _c.MIN_REPEAT}


def _check_supported(items: list[_Item]) -> None:
    for op, av in items:
        if op not in _SUPPORTED:
            raise UnsupportedPattern(f"regex feature {op} is not supported in a terminal")
        if op is _c.BRANCH:
            for alt in av[1]:
                _check_supported(_items(alt))
        elif op is _c.SUBPATTERN:
            _check_supported(_items(av[3]))
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            _check_supported(_items(av[2]))


# --- static properties ---------------------------------------------------------------


def _as_literal(items: list[_Item]) -> tuple[str | None, bool]:
    """The literal text of a pattern made only of literal characters (maybe in ``(?i:…)``)."""
    ic = False
    if len(items) == 1 and items[0][0] is _c.SUBPATTERN:
        _group, add, _del, sub = items[0][1]
        ic = bool(add & _c.SRE_FLAG_IGNORECASE)
        items = _items(sub)
    chars: list[str] = []
    for op, av in items:
        if op is not _c.LITERAL:
            return None, False
        chars.append(chr(av))
    return "".join(chars), ic


_FIRST_LIMIT = 64


def _first_chars(items: list[_Item], ic: bool) -> frozenset[str] | None:
    """Characters that can begin a match, or None when the set is too wide to list."""
    got, nullable = _first_seq(items, ic)
    return None if got is None or nullable else frozenset(got)


def _first_seq(items: list[_Item], ic: bool) -> tuple[set[str] | None, bool]:
    out: set[str] = set()
    for op, av in items:
        got, nullable = _first_of(op, av, ic)
        if got is None:
            return None, False
        out |= got
        if len(out) > _FIRST_LIMIT:
            return None, False
        if not nullable:
            return out, False
    return out, True


def _fold(ch: str, ic: bool) -> set[str]:
    return {ch, ch.lower(), ch.upper()} if ic else {ch}


def _first_of(op: _NamedIntConstant, av: Any, ic: bool) -> tuple[set[str] | None, bool]:
    if op is _c.LITERAL:
        return _fold(chr(av), ic), False
    if op is _c.IN:
        chars: set[str] = set()
        for iop, iav in av:
            if iop is _c.LITERAL:
                chars |= _fold(chr(iav), ic)
            elif iop is _c.RANGE and iav[1] - iav[0] < _FIRST_LIMIT:
                for code in range(iav[0], iav[1] + 1):
                    chars |= _fold(chr(code), ic)
            else:
                return None, False
        return chars, False
    if op is _c.SUBPATTERN:
        _group, add, _del, sub = av
        return _first_seq(_items(sub), ic or bool(add & _c.SRE_FLAG_IGNORECASE))
    if op is _c.BRANCH:
        chars = set()
        nullable = False
        for alt in av[1]:
            got, alt_nullable = _first_seq(_items(alt), ic)
            if got is None:
                return None, False
            chars |= got
            nullable = nullable or alt_nullable
        return chars, nullable
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
        lo, _hi, sub = av
        got, nullable = _first_seq(_items(sub), ic)
        return got, nullable or lo == 0
    return None, False


# --- simulation ---------------------------------------------------------------------


@lru_cache(maxsize=512)
def _parsed(source: str) -> list[_Item]:
    return _items(_p.parse(source, 0))


def simulate(source: str, text: str) -> bool:
    """Whether some path of the pattern wants a character beyond the end of ``text``
    (remembered per pattern and tail by ``MarkerPattern.needs_more``, its one caller)."""
    items = _parsed(source)
    sim = _Sim(text)
    sim.seq(items, 0, 0, False)
    return sim.hit_end


SIMULATE.append(simulate)


class _Sim:
    __slots__ = ("text", "n", "hit_end", "memo")

    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)
        self.hit_end = False
        self.memo: dict[tuple[int, int, int, bool], frozenset[int]] = {}

    def seq(self, items: list[_Item], idx: int, pos: int, ic: bool) -> frozenset[int]:
        if idx == len(items):
            return frozenset((pos,))
        key = (id(items), idx, pos, ic)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        out: set[int] = set()
        for q in self.op(items[idx], pos, ic):
            out |= self.seq(items, idx + 1, q, ic)
        res = frozenset(out)
        self.memo[key] = res
        return res

    def char(self, pos: int) -> str | None:
        if pos >= self.n:
            self.hit_end = True
            return None
        return self.text[pos]

    def op(self, item: _Item, pos: int, ic: bool) -> frozenset[int]:
        op, av = item
        if op is _c.LITERAL or op is _c.NOT_LITERAL:
            ch = self.char(pos)
            if ch is None:
                return frozenset()
            same = ch == chr(av) or (ic and ch.lower() == chr(av).lower())
            ok = same if op is _c.LITERAL else not same
            return frozenset((pos + 1,)) if ok else frozenset()
        if op is _c.ANY:
            ch = self.char(pos)
            return frozenset((pos + 1,)) if ch is not None and ch != "\n" else frozenset()
        if op is _c.IN:
            ch = self.char(pos)
            if ch is None:
                return frozenset()
            return frozenset((pos + 1,)) if _in_class(av, ch, ic) else frozenset()
        if op is _c.SUBPATTERN:
            _group, add, delete, sub = av
            sub_ic = (ic or bool(add & _c.SRE_FLAG_IGNORECASE)) and not (delete & _c.SRE_FLAG_IGNORECASE)
            return self.seq(_items(sub), 0, pos, sub_ic)
        if op is _c.BRANCH:
            out: set[int] = set()
            for alt in av[1]:
                out |= self.seq(_items(alt), 0, pos, ic)
            return frozenset(out)
        if op is _c.MAX_REPEAT or op is _c.MIN_REPEAT:
            lo, hi, sub = av
            sub_items = _items(sub)
            frontier = {pos}
            seen: set[int] = set()
            out = set(frontier) if lo == 0 else set()
            count = 0
            limit = hi if hi < _MAXREPEAT else self.n + 1
            while frontier and count < limit:
                nxt: set[int] = set()
                for q in frontier:
                    nxt |= self.seq(sub_items, 0, q, ic)
                count += 1
                if count >= lo:
                    out |= nxt
                frontier = nxt - seen if count >= lo else nxt
                seen |= nxt
                if count > self.n + 1 and count >= lo:
                    break
            return frozenset(out)
        raise UnsupportedPattern(f"regex feature {op} is not supported")  # pragma: no cover


def _items(sub: _p.SubPattern) -> list[_Item]:
    return sub.data


def _in_class(av: list[_Item], ch: str, ic: bool) -> bool:
    cands = {ch, ch.lower(), ch.upper()} if ic else {ch}
    negate = False
    hit = False
    for iop, iav in av:
        if iop is _c.NEGATE:
            negate = True
        elif iop is _c.LITERAL:
            hit = hit or chr(iav) in cands
        elif iop is _c.RANGE:
            hit = hit or any(iav[0] <= ord(c) <= iav[1] for c in cands)
        elif iop is _c.CATEGORY:
            hit = hit or any(_category(iav, c) for c in cands)
        else:  # pragma: no cover - refused by _check_supported's parse
            raise UnsupportedPattern(f"class item {iop} is not supported")
    return hit != negate


def _category(cat: _NamedIntConstant, ch: str) -> bool:
    if cat is _c.CATEGORY_DIGIT:
        return ch.isdigit()
    if cat is _c.CATEGORY_NOT_DIGIT:
        return not ch.isdigit()
    if cat is _c.CATEGORY_SPACE:
        return ch.isspace()
    if cat is _c.CATEGORY_NOT_SPACE:
        return not ch.isspace()
    if cat is _c.CATEGORY_WORD:
        return ch.isalnum() or ch == "_"
    if cat is _c.CATEGORY_NOT_WORD:
        return not (ch.isalnum() or ch == "_")
    # the parser puts no other category in a class
    raise UnsupportedPattern(f"class category {cat} is not supported")  # pragma: no cover


# --- strings a pattern matches ----------------------------------------------------------

_CAP = 24
_CATEGORY_EXAMPLE = {"DIGIT": "0", "SPACE": " ", "WORD": "a"}


@lru_cache(maxsize=4096)
def samples(source: str) -> tuple[str, ...]:
    """A few strings a marker pattern matches (every alternative; repetitions at their
    minimum and, when optional, once): enough to tell two markers apart or the same."""
    return tuple(_seq(_items(_p.parse(source, 0)), False)) or ("",)


def _seq(items: list[_Item], ic: bool) -> list[str]:
    out = [""]
    for op, av in items:
        alts = _one(op, av, ic)
        out = [x + y for x, y in itertools.islice(itertools.product(out, alts), _CAP)]
    return out


def _one(op: _NamedIntConstant, av: Any, ic: bool) -> list[str]:
    if op is _c.LITERAL:
        return [chr(av)]
    if op is _c.NOT_LITERAL:
        return ["a" if av != ord("a") else "b"]
    if op is _c.IN:
        if any(o is _c.NEGATE for o, _ in av):
            return [next((ch for ch in "a_x0 -.:" if not _sample_in_class(av, ch)), "a")]
        for o, a in av:
            if o is _c.LITERAL:
                return [chr(a)]
            if o is _c.RANGE:
                return [chr(a[0])]
            if o is _c.CATEGORY:
                return [_category_example(a)]
        return ["a"]
    if op is _c.SUBPATTERN:
        return _seq(list(av[3]), ic)
    if op is _c.BRANCH:
        out: list[str] = []
        for alt in av[1]:
            out += _seq(list(alt), ic)
        return out[:_CAP]
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
        lo, _hi, sub = av
        inner = _seq(list(sub), ic)[0]
        return [inner * lo] + ([inner] if lo == 0 else [])
    if op is _c.AT:
        return [""]
    return ["a"]


def _category_example(cat: _NamedIntConstant) -> str:
    name = str(cat).upper()
    for key, example in _CATEGORY_EXAMPLE.items():
        if name.endswith(key) and "NOT" not in name:
            return example
    return "." if "WORD" in name else "a"


def _sample_in_class(av: list[_Item], ch: str) -> bool:
    for o, a in av:
        if o is _c.LITERAL and chr(a) == ch:
            return True
        if o is _c.RANGE and a[0] <= ord(ch) <= a[1]:
            return True
        if o is _c.CATEGORY and _category_example(a) == ch:
            return True
    return False
