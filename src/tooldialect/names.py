"""Resolving the name a model wrote against the names a toolset offers.

The steps, in order, stop at the first that finds exactly one tool:

1. the name as written;
2. junk trimmed after the name (``terminal" parameter=…``, trailing quotes, ``(``,
   ``:0`` counters) and namespace prefixes removed (``functions.``, ``tools/``,
   ``default_api.`` …);
3. the same spelling up to case, spaces, ``-``/``_``/``.`` and camelCase vs snake_case
   (``Read File``, ``read-file``, ``ReadFile`` → ``read_file``), also without a
   ``_tool``/``Tool`` suffix;
4. one close match: edit distance at most ``min(2, len // 3)`` on the normalised
   spelling, for names of four characters or more; a tie is refused.

Every step after the first is a rewrite the caller reports (``name_repaired``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

__all__ = ["NameIndex", "Resolution", "normalise", "offered"]

_JUNK: Final = re.compile(r"[\"'<>()\n\r:={\[,;]")
_PREFIXES: Final = ("functions.", "functions/", "tools.", "tools/", "tool.", "tool/")
_SEP: Final = re.compile(r"[\s\-./]+")
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SUFFIXES: Final = ("_tool", "-tool", "tool")
_FUZZY_MAX_LEN: Final = 64


def normalise(name: str) -> str:
    """``Read File`` / ``read-file`` / ``ReadFile`` → ``read_file``."""
    s = _CAMEL.sub("_", name.strip())
    s = _SEP.sub("_", s).lower()
    s = re.sub(r"_+", "_", s)
    return s.strip("_")


def offered(name: str, known: frozenset[str]) -> str | None:
    """The tool a registry-gated body names: exactly, or by the last segment of a dotted
    name (``functions.read_file``, as code calls into a namespace are written); never
    repaired otherwise.  None when the toolset offers neither."""
    if name in known:
        return name
    last = name.rpartition(".")[2]
    return last if last != name and last in known else None


@dataclass(frozen=True)
class Resolution:
    name: str  # the name to report
    known: bool  # whether the toolset offers it
    how: str | None  # None when written exactly; else what was rewritten


def _strip_suffix(s: str) -> str:
    """Without a ``_tool``/``Tool`` class suffix (up to two: ``TodoTool_tool``)."""
    for _ in range(2):
        for suffix in _SUFFIXES:
            if s.endswith(suffix) and len(s) > len(suffix):
                s = s[: -len(suffix)].rstrip("_-")
                break
    return s


def _distance(a: str, b: str, limit: int) -> int:
    """Levenshtein distance, or ``limit + 1`` once it is certainly larger."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        best = i
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            best = min(best, cur[j])
        if best > limit:
            return limit + 1
        prev = cur
    return prev[-1]


class NameIndex:
    """The names of a toolset, indexed for resolution (built once per toolset)."""

    __slots__ = ("names", "_exact", "_normal", "_stripped", "_lines", "_firsts")

    def __init__(self, names: Iterable[str]) -> None:
        self.names = frozenset(names)
        # each name written exactly resolves to itself: one answer per name, built once
        self._exact = {n: Resolution(n, True, None) for n in self.names}
        self._lines: tuple[re.Pattern[str], re.Pattern[str]] | None = None
        self._firsts: frozenset[str] | None = None
        self._normal: dict[str, list[str]] = {}
        self._stripped: dict[str, list[str]] = {}
        for n in self.names:
            norm = normalise(n)
            self._normal.setdefault(norm, []).append(n)
            self._stripped.setdefault(_strip_suffix(norm), []).append(n)

    def name_firsts(self) -> frozenset[str]:
        """The characters the names begin with."""
        got = self._firsts
        if got is None:
            got = self._firsts = frozenset(n[0] for n in self.names if n)
        return got

    def line_starts(self) -> tuple[re.Pattern[str], re.Pattern[str]]:
        """Where a line may begin with one of these names, or has shown only blanks so far:
        matched at a line's first character, and searched for after a line break.  A line
        whose first word begins with another character is not a call written on its own
        line (only a name the toolset offers, exactly, begins one)."""
        got = self._lines
        if got is None:
            firsts = "".join(re.escape(c) for c in sorted(self.name_firsts()))
            may = f"[ \\t]*(?:[{firsts}]|\\Z)" if firsts else r"[ \t]*\Z"
            got = self._lines = (re.compile(may), re.compile("\n" + may))
        return got

    def resolve(self, raw: str) -> Resolution:
        if raw in self._exact:
            return self._exact[raw]
        trimmed = self._trim(raw)
        if trimmed and trimmed in self.names:
            return Resolution(trimmed, True, "trimmed")
        bare = self._unprefix(trimmed)
        if bare in self.names:
            return Resolution(bare, True, "namespace removed")
        for candidate in dict.fromkeys((trimmed, bare)):
            norm = normalise(candidate)
            hits = self._normal.get(norm, [])
            if len(hits) == 1:
                return Resolution(hits[0], True, "spelling normalised")
            hits = self._stripped.get(_strip_suffix(norm), [])
            if len(hits) == 1:
                return Resolution(hits[0], True, "spelling normalised")
        close = self._close_match(normalise(bare))
        if close is not None:
            return Resolution(close, True, "close match")
        if trimmed and trimmed != raw:
            return Resolution(trimmed, False, "trimmed")
        return Resolution(raw, False, None)

    @staticmethod
    def _trim(raw: str) -> str:
        s = raw.strip()
        m = _JUNK.search(s)
        return s[: m.start()].strip() if m else s

    @staticmethod
    def _unprefix(name: str) -> str:
        for prefix in _PREFIXES:
            if name.startswith(prefix) and len(name) > len(prefix):
                return name[len(prefix) :]
        if "." in name or "/" in name:  # another namespace: keep the last segment
            last = re.split(r"[./]", name)[-1]
            if last:
                return last
        return name

    def _close_match(self, needle: str) -> str | None:
        if len(needle) < 4 or len(needle) > _FUZZY_MAX_LEN:
            return None
        budget = min(2, len(needle) // 3)
        best = budget + 1
        winners: list[str] = []
        for norm, originals in self._normal.items():
            d = _distance(needle, norm, budget)
            if d < best:
                best, winners = d, list(originals)
            elif d == best:
                winners.extend(originals)
        return winners[0] if best <= budget and len(winners) == 1 else None
