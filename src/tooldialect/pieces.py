"""Where the built-in grammars are, and the terminals of their shared ``_`` pieces.

Readers and writers below the registry ask a piece for what a name, a string or an
envelope marker is (``_pyliteral``, ``_tagged``, ``_envelope`` …), so the grammar stays
the one place those are written.  The registry builds on this module; this module knows
nothing of families.
"""

from __future__ import annotations

import threading
from pathlib import Path

from . import prebuilt
from .compiled_grammar import Terminal
from .errors import GrammarError

__all__ = ["grammar_dir", "load_count", "piece"]


def grammar_dir() -> Path:
    """Where the grammars are: inside the installed package, or at the top of a checkout."""
    here = Path(__file__).resolve().parent
    packaged = here / "grammars"
    if packaged.is_dir():
        return packaged
    checkout = here.parent.parent / "grammars"
    if checkout.is_dir():
        return checkout
    raise GrammarError(f"no grammars directory next to {here} (a broken installation?)")


_pieces: dict[str, dict[str, Terminal]] = {}
_lock = threading.Lock()
_loads = 0


def load_count() -> int:
    """How many pieces this process has read (the registry counts them as compilations)."""
    return _loads


def piece(name: str) -> dict[str, Terminal]:
    """Terminals of a shared piece such as ``_reasoning`` (loaded once)."""
    got = _pieces.get(name)
    if got is None:
        with _lock:
            got = _pieces.get(name)
            if got is None:
                global _loads
                got = prebuilt.piece(name, grammar_dir())
                if got is None:  # not shipped, or the sources changed: read from the source
                    from .grammar import read_terminals

                    got = read_terminals(grammar_dir() / f"{name}.lark")
                _loads += 1
                _pieces[name] = got
    return got
