"""The marker table for a set of families, built from their compiled grammars.

Nothing here names a marker: every string comes from a grammar's terminals.  The
table groups them by role (block openers, reasoning wrappers, furniture), builds one
regex that finds the next candidate position in prose, and indexes markers by their
first character for the exact check at that position.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any, Final

from .compiled_grammar import CompiledGrammar, Terminal
from .families import generation, get, names
from .markerpattern import Leads, MarkerPattern, lead_parts, lead_seconds
from .pieces import piece

__all__ = ["Catalog", "Marker", "catalog_for"]

OPEN: Final = "open"
RSTART: Final = "reasoning_open"
REND: Final = "reasoning_close"
FURNITURE: Final = "furniture"
_ROLE_ORDER: Final = {OPEN: 0, RSTART: 1, REND: 2, FURNITURE: 3}
_FENCE_CHARS: Final = "`~"
#: Markers wider than this are few (an opener with attributes, a reasoning header): a text's
#: last characters are searched for any marker cut off by its end, those before for these.
_NARROW_WIDTH: Final = 32


@dataclass(frozen=True)
class Marker:
    terminal: Terminal
    role: str
    grammars: tuple[CompiledGrammar, ...] = ()  # for openers: the families it can open
    pair: str = ""  # for reasoning markers: the wrapper key pairing open and close
    # the terminal's pattern (a marker is matched, never scanned: it has one)
    pattern: MarkerPattern = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        pattern = self.terminal.pattern
        assert pattern is not None, self.terminal.name
        object.__setattr__(self, "pattern", pattern)


_NOTHING: Final = re.compile("(?!)")


@dataclass
class Catalog:
    grammars: tuple[CompiledGrammar, ...]
    markers: tuple[Marker, ...]
    reply: tuple[CompiledGrammar, ...]
    prose: re.Pattern[str]
    first: dict[str, tuple[Marker, ...]]
    first_rx: re.Pattern[str]
    max_width: int
    rank: dict[str, int]
    reply_furniture: tuple[Terminal, ...] = ()  # framing removed only where the reply begins
    lines: tuple[CompiledGrammar, ...] = ()  # grammars with a `line` rule (tried where a visible line begins)
    # families that read a special token's text only where token ids wrote that token
    special_only: frozenset[str] = frozenset()
    # names a family's model writes to call no tool (its header's `no tool:` line), by family
    no_tool: dict[str, frozenset[str]] = field(default_factory=dict)
    _recovery: dict[str, re.Pattern[str] | None] = field(default_factory=dict)
    # what the engine works out once per grammar and parser state (loop patterns, the stops
    # of text values, accepted terminals), shared by every stream over this catalog
    engine_cache: dict[Any, Any] = field(default_factory=dict)
    _pairs: dict[str, tuple[Marker, ...]] = field(default_factory=dict)  # see viable()
    _keys: dict[str, tuple[Marker, ...]] = field(default_factory=dict)  # see viable()
    _tails: dict[str, bool] = field(default_factory=dict)  # see cut_off()
    lead_rx: re.Pattern[str] = _NOTHING  # where a marker may begin, by two characters (_lead)
    # the widest of the markers no wider than _NARROW_WIDTH, and where one of the wider
    # ones may begin: further than that from the end of a text only those can be cut off by it
    narrow_width: int = 0
    wide_rx: re.Pattern[str] = _NOTHING
    # first_rx's characters, found by str.find in a long text (_build)
    leads: Leads = field(default_factory=lambda: Leads(""))

    def at(self, text: str, pos: int) -> tuple[Marker, ...]:
        return self.first.get(text[pos], ()) if pos < len(text) else ()

    def viable(self, text: str, pos: int) -> tuple[Marker, ...]:
        """The markers that may match at ``pos``, or be cut off there, as far as the two
        characters from ``pos`` tell (eight, then 24, where two leave more than one): a marker for
        which they are neither a match nor the beginning of one can neither match nor be
        arriving there, whatever follows.  Far fewer than :meth:`at` gives in text full of
        ``<`` (HTML, JSX, code)."""
        found = self.first.get(text[pos], ()) if pos < len(text) else ()
        if not found or pos + 1 >= len(text):
            return found
        pair = text[pos : pos + 2]
        got = self._pairs.get(pair)
        if got is None:
            got = tuple(m for m in found if m.pattern.needs_more(pair, 0) or m.pattern.match_end(pair, 0) is not None)
            if len(self._pairs) < _MAX_PAIRS:
                self._pairs[pair] = got
        if len(got) <= 1:
            return got
        # markers that share their first two characters (every `<|…|>` token) are told apart
        # the same way by the next few, then by more
        for width in _KEYS:
            if pos + width > len(text):
                return got
            key = text[pos : pos + width]
            narrow = self._keys.get(key)
            if narrow is None:
                if len(self._keys) >= _MAX_PAIRS:
                    return got  # (what the characters looked at tell: never fewer markers than may match)
                narrow = tuple(
                    m for m in got if m.pattern.needs_more(key, 0) or m.pattern.match_end(key, 0) is not None
                )
                self._keys[key] = narrow
            if len(narrow) <= 1:
                return narrow
            got = narrow
        return got

    def cut_off(self, tail: str) -> bool:
        """Whether a marker may begin at ``tail``'s first character and be cut off by its
        end (``tail`` is the text from there to the end of what has arrived, no longer than
        the longest marker).  It depends on ``tail`` alone, so it is remembered: text full
        of ``<`` holds back the same few tails (``<div``, ``</p``) at delta after delta."""
        got = self._tails.get(tail)
        if got is None:
            got = any(m.pattern.needs_more(tail, 0) for m in self.viable(tail, 0))
            if len(self._tails) < _MAX_PAIRS:
                self._tails[tail] = got
        return got

    def closers(self, grammar: CompiledGrammar) -> re.Pattern[str] | None:
        """Where a cut-off block of ``grammar`` may still end: its closers only."""
        key = "closers:" + grammar.name
        if key not in self._recovery:
            parts = [t.pattern.source for t in grammar.closers if t.pattern is not None]
            self._recovery[key] = re.compile("|".join(f"(?:{p})" for p in parts)) if parts else None
        return self._recovery[key]

    def recovery(self, grammar: CompiledGrammar) -> re.Pattern[str]:
        """Where a broken block of ``grammar`` can end: its closers, or any marker."""
        rx = self._recovery.get(grammar.name)
        if rx is None:
            parts = [t.pattern.source for t in grammar.closers if t.pattern is not None]
            parts += [m.terminal.pattern.source for m in self.markers if m.terminal.pattern is not None]
            rx = re.compile("|".join(f"(?:{p})" for p in dict.fromkeys(parts)))
            self._recovery[grammar.name] = rx
        return rx


def _build(family_names: tuple[str, ...]) -> Catalog:
    grammars = tuple(get(n).grammar for n in family_names)
    reasoning = piece("_reasoning")
    openers: dict[str, tuple[Terminal, list[CompiledGrammar]]] = {}
    for g in grammars:
        for term in g.openers.get("start", ()):
            assert term.pattern is not None
            entry = openers.setdefault(term.pattern.source, (term, []))
            entry[1].append(g)
    markers: list[Marker] = [Marker(t, OPEN, tuple(gs)) for t, gs in openers.values()]
    for name, term in reasoning.items():
        if name.startswith("REASONING_OPEN_"):
            markers.append(Marker(term, RSTART, pair=name[len("REASONING_OPEN_") :]))
        elif name.startswith("REASONING_CLOSE_"):
            markers.append(Marker(term, REND, pair=name[len("REASONING_CLOSE_") :]))
    seen = set()
    for g in grammars:
        for term in g.furniture:
            assert term.pattern is not None
            if term.pattern.source not in seen:
                seen.add(term.pattern.source)
                markers.append(Marker(term, FURNITURE))
    first: dict[str, list[Marker]] = {}
    for m in markers:
        pat = m.terminal.pattern
        assert pat is not None and pat.first is not None
        for ch in pat.first:
            first.setdefault(ch, []).append(m)
    alternatives = [f"(?:{m.terminal.pattern.source})" for m in markers if m.terminal.pattern is not None]
    alternatives.append("`")
    alternatives.append("~~~")
    prose = re.compile("|".join(alternatives))
    chars = set(first) | set(_FENCE_CHARS)
    leads = Leads("".join(chars), lead_seconds([m.pattern for m in markers]))
    width = max((m.terminal.pattern.max_width for m in markers if m.terminal.pattern is not None), default=1)
    reply_furniture: dict[str, Terminal] = {}
    for g in grammars:
        for term in g.reply_furniture:
            assert term.pattern is not None
            reply_furniture.setdefault(term.pattern.source, term)
    cat = Catalog(
        grammars=grammars,
        markers=tuple(markers),
        reply=tuple(g for g in grammars if "reply" in g.starts),
        prose=prose,
        first={k: tuple(sorted(v, key=lambda m: _ROLE_ORDER[m.role])) for k, v in first.items()},
        first_rx=leads.first,
        leads=leads,
        max_width=width,
        rank={g.name: i for i, g in enumerate(grammars)},
        reply_furniture=tuple(reply_furniture.values()),
        lines=tuple(g for g in grammars if "line" in g.starts),
        special_only=frozenset(g.name for g in grammars if g.header.special_tokens == "only"),
        no_tool={g.name: frozenset(g.header.no_tool) for g in grammars if g.header.no_tool},
    )
    cat.lead_rx = _lead(cat)
    cat.narrow_width = max((m.pattern.max_width for m in markers if m.pattern.max_width <= _NARROW_WIDTH), default=0)
    wide = lead_parts([m.pattern for m in markers if m.pattern.max_width > _NARROW_WIDTH], skip=_FENCE_CHARS)
    if wide:
        cat.wide_rx = re.compile("|".join(wide))
    return cat


def _lead(cat: Catalog) -> re.Pattern[str]:
    """Where a marker (or a fence) may begin: a character a marker begins with, followed
    by an ASCII character that can come second in one (``Catalog.viable``), by any other
    character, or by the end of the text; and every backtick and tilde.  The second
    character is looked at, not read (a lookahead), so that no position is skipped.
    For short texts only (a delta): over a long one it is slower than ``first_rx``."""
    parts = lead_parts([m.pattern for m in cat.markers], skip=_FENCE_CHARS)
    assert parts is not None  # (every marker's first characters are known: _build)
    parts.append("[" + re.escape(_FENCE_CHARS) + "]")
    return re.compile("|".join(parts))


#: Two-character beginnings remembered per catalog (bounded whatever the text holds).
_MAX_PAIRS = 4096
#: how many characters viable() looks at where two leave more than one marker, then more
_KEYS: Final = (8, 24)
_cache: Final[dict[tuple[int, tuple[str, ...]], Catalog]] = {}
#: the catalog last given for the families as asked (any order, repeats): no work per stream
_asked: Final[dict[tuple[int, tuple[str, ...] | None], Catalog]] = {}
_lock: Final = threading.Lock()


def catalog_for(families: tuple[str, ...] | None) -> Catalog:
    """The catalog for these families (all of them when None), built once per set and
    registry generation (a family registered later gets a catalog of its own)."""
    asked = _asked.get((generation(), families))
    if asked is not None:
        return asked
    chosen = tuple(names()) if families is None else tuple(n for n in names() if n in set(families))
    key = (generation(), chosen)
    cat = _cache.get(key)
    if cat is None:
        with _lock:
            cat = _cache.get(key)
            if cat is None:
                if len(_cache) > 64:  # catalogs of earlier generations are never asked for again
                    for old in [k for k in _cache if k[0] != key[0]]:
                        del _cache[old]
                cat = _build(chosen)
                _cache[key] = cat
    if len(_asked) > 256:
        _asked.clear()
    _asked[(key[0], families)] = cat
    return cat
