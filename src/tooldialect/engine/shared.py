"""What every room of one stream reads and none changes: the catalog of markers, the binder,
the policy, the caches of what depends only on a grammar and a parser state (shared by every
stream over the catalog), and the readers of the grammars' nodes."""

from __future__ import annotations

from typing import Any, Final, TypeAlias

from ..binding import Binder
from ..catalog import Catalog
from ..compiled_grammar import CompiledGrammar
from ..models import Policy
from ..transform import KEYED_RULE, Reader, reader_class
from .cand import Cand, Lexicon

__all__ = ["Limits", "Shared"]

#: a reader's class and the arguments it is made with
ReaderMaking: TypeAlias = tuple[type[Reader], tuple[str, frozenset[str], int, tuple[str, ...], Any, bool, bool, bool]]


class Limits:
    """The policy's limits the rooms read per call and per token, read once per policy: a
    ``Policy`` is a pydantic model, whose every attribute is read through pydantic's
    ``__getattr__`` hook (in the compiled build too), a look-up and a call where this
    record's fields are a load."""

    __slots__ = ("policy", "max_block_chars", "max_depth", "max_repeats", "max_calls")

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.max_block_chars = policy.max_block_chars
        self.max_depth = policy.max_depth
        self.max_repeats = policy.max_repeats
        self.max_calls = policy.max_calls


#: the limits of the policy a stream was last made with (most streams share one policy);
#: one slot, replaced whole, so threads that share it at worst make one each
_LAST: Final[list[Limits]] = [Limits(Policy())]


def limits_of(policy: Policy) -> Limits:
    """``policy``'s limits: those of the last stream's when it had the same policy."""
    last = _LAST[0]
    if last.policy is policy:
        return last
    got = _LAST[0] = Limits(policy)
    return got


class Shared:
    """One stream's settings and the caches its rooms consult."""

    __slots__ = ("cat", "binder", "policy", "limits", "cache", "_accepted", "_readers")

    #: Read a JSON payload, or a whole block, in one step where the text allows (the
    #: differential tests turn it off to show the token-by-token reading yields the same events).
    whole_steps = True

    def __init__(self, catalog: Catalog, binder: Binder, policy: Policy) -> None:
        self.cat = catalog
        self.binder = binder
        self.policy = policy
        self.limits = limits_of(policy)
        # what depends only on a grammar and a parser state, shared by every stream over the catalog
        self.cache: dict[Any, Any] = catalog.engine_cache
        self._accepted: dict[str, dict[tuple[int, ...], Lexicon]] = catalog.engine_cache.setdefault("accepted", {})
        self._readers: dict[str, Reader] = {}

    def accepted(self, g: CompiledGrammar) -> dict[tuple[int, ...], Lexicon]:
        """The lexicons of ``g``'s parser states met so far (by stack)."""
        got = self._accepted.get(g.name)
        if got is None:
            got = self._accepted.setdefault(g.name, {})
        return got

    def reader(self, g: CompiledGrammar) -> Reader:
        """The reader of ``g``'s nodes for this stream (a reader holds only its settings, and
        the payloads this stream decoded: every candidate of the grammar shares one)."""
        got = self._readers.get(g.name)
        if got is None:
            made: ReaderMaking | None = self.binder.readers.get(g.name)
            if made is None:
                made = self.binder.readers[g.name] = self._making(g)
            cls, args = made
            got = self._readers[g.name] = cls(*args)
        return got

    def _making(self, g: CompiledGrammar) -> ReaderMaking:
        """The class and the arguments every stream's reader of ``g`` is made with, for this
        binder (the toolset, its names, the policy)."""
        args = (
            g.name,
            self.binder.known,
            self.limits.max_depth,
            g.quotes,
            self.binder.tools,
            g.header.value_newlines == "strip",
            KEYED_RULE in g.nodes,
            # a kept cut-off call has whole members only: its stream sends no more
            self.policy.truncated == "keep",
        )
        return reader_class(g.name), args

    def cand(self, g: CompiledGrammar, rule: str, pos: int, soft: bool) -> Cand:
        """A new candidate of ``g`` reading ``rule`` from ``pos``."""
        return Cand(g, rule, pos, soft, self.reader(g), self.accepted(g))
