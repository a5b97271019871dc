"""The bundled grammars compiled ahead of time: what the engine reads of each, shipped beside
the ``.lark`` sources so that a process never imports lark for a bundled grammar.

``make tables`` (``python -m tooldialect.prebuild``) compiles every bundled family and shared
piece from its source and writes ``grammars/parse_tables.json``: for each one its terminals
(name and pattern), its parse tables, its rules' shapes and its node names, with one digest of
every ``.lark`` file beside it.  A process reads that file (JSON: data, never code, and never a
cache in a shared directory) instead of compiling; when the sources no longer match the digest
(a grammar edited in a checkout) every bundled grammar is compiled from its source, as a
plugin grammar always is.  ``tests/test_prebuilt.py`` checks the shipped file equals a fresh
build.  What a build also checks (LALR conflicts, the ``// write`` lines, what the family's
reader reads) was checked when the file was built.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

from .compiled_grammar import CompiledGrammar, Terminal, assign_roles
from .header import Header
from .lalr import RuleShape, Tables
from .markers import analyse

__all__ = [
    "FILE",
    "FORMAT",
    "decode_grammar",
    "dumps",
    "encode_grammar",
    "encode_terminals",
    "forget",
    "grammar",
    "piece",
    "sources_digest",
]

#: The file, in the grammars directory.
FILE = "parse_tables.json"
#: The layout of the file; a file of another layout is not read.
FORMAT = 1

_lock = threading.Lock()
_loaded: dict[Path, dict[str, Any] | None] = {}  # by grammars directory: the file's data, None: unusable


def sources_digest(directory: Path) -> str:
    """One digest of every ``.lark`` file in ``directory`` (names and text)."""
    digest = hashlib.sha256()
    for path in sorted(directory.glob("*.lark")):
        digest.update(path.name.encode("utf-8") + b"\0")
        digest.update(path.read_text(encoding="utf-8").encode("utf-8") + b"\0")
    return digest.hexdigest()


def _tables_for(directory: Path) -> dict[str, Any] | None:
    """The file's data when it is there, of this layout, and built from these sources."""
    if directory in _loaded:
        return _loaded[directory]
    with _lock:
        if directory not in _loaded:
            data: dict[str, Any] | None = None
            try:
                data = json.loads((directory / FILE).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = None
            if data is not None and (data.get("format") != FORMAT or data.get("sources") != sources_digest(directory)):
                data = None
            _loaded[directory] = data
    return _loaded[directory]


def grammar(name: str, header: Header, path: Path) -> CompiledGrammar | None:
    """The bundled family ``name`` (its source at ``path``) as built ahead of time; None when
    the shipped file does not hold it or no longer matches the sources."""
    data = _tables_for(path.parent)
    entry = None if data is None else data["grammars"].get(name)
    return None if entry is None else decode_grammar(entry, header, path)


def piece(name: str, directory: Path) -> dict[str, Terminal] | None:
    """The terminals of the shared piece ``name`` as built ahead of time (None: not shipped)."""
    data = _tables_for(directory)
    entry = None if data is None else data["pieces"].get(name)
    return None if entry is None else _decode_terminals(entry["terminals"], name)


# -- the file's layout ------------------------------------------------------------------------


def encode_grammar(compiled: CompiledGrammar) -> dict[str, Any]:
    """What the engine reads of a compiled grammar, as JSON data.  An action is a state
    number (shift or go to) or ``-1 - i`` (reduce by rule ``i`` of ``rules``)."""
    rules: dict[int, int] = {}  # id of a RuleShape -> its number
    shapes: list[RuleShape] = []
    actions = []
    for acts in compiled.tables.actions:
        row: dict[str, int] = {}
        for sym, act in acts.items():
            if isinstance(act, RuleShape):
                if id(act) not in rules:
                    rules[id(act)] = len(shapes)
                    shapes.append(act)
                row[sym] = -1 - rules[id(act)]
            else:
                row[sym] = act
        actions.append(row)
    return {
        "terminals": encode_terminals(compiled.terminals),
        "ignore": [t.name for t in compiled.ignore],
        "starts": list(compiled.starts),
        "start_states": compiled.tables.start_states,
        "end_states": compiled.tables.end_states,
        "rules": [[s.origin, s.name, s.size, _bits(s.keep), _bits(s.inline), s.expand1, s.structural] for s in shapes],
        "actions": actions,
        "nodes": sorted(compiled.nodes),
        "holds": sorted([name, sorted(kids)] for name, kids in compiled.holds),
    }


def decode_grammar(data: dict[str, Any], header: Header, path: Path) -> CompiledGrammar:
    terminals = _decode_terminals(data["terminals"], header.family)
    shapes = [
        RuleShape(
            origin=origin,
            name=name,
            size=size,
            keep=_unbits(keep),
            inline=_unbits(inline),
            expand1=expand1,
            structural=structural,
        )
        for origin, name, size, keep, inline, expand1, structural in data["rules"]
    ]
    actions: list[dict[str, int | RuleShape]] = [
        {sym: (act if act >= 0 else shapes[-1 - act]) for sym, act in row.items()} for row in data["actions"]
    ]
    compiled = CompiledGrammar(
        name=header.family,
        header=header,
        path=path,
        terminals=terminals,
        ignore=tuple(terminals[n] for n in data["ignore"]),
        tables=Tables(actions=actions, start_states=data["start_states"], end_states=data["end_states"]),
        starts=tuple(data["starts"]),
        nodes=frozenset(data["nodes"]),
        holds=tuple((name, frozenset(kids)) for name, kids in data["holds"]),
    )
    assign_roles(compiled)
    return compiled


def encode_terminals(terminals: dict[str, Terminal]) -> list[list[str | None]]:
    return [[t.name, None if t.pattern is None else t.pattern.source] for t in terminals.values()]


def _decode_terminals(rows: list[list[str | None]], owner: str) -> dict[str, Terminal]:
    out: dict[str, Terminal] = {}
    for name, source in rows:
        assert name is not None
        out[name] = Terminal(name, None if source is None else analyse(source), owner)
    return out


def _bits(flags: tuple[bool, ...]) -> str:
    return "".join("1" if f else "0" for f in flags)


def _unbits(bits: str) -> tuple[bool, ...]:
    return tuple(b == "1" for b in bits)


def dumps(data: dict[str, Any]) -> str:
    """The file's text (``prebuild.py`` writes it)."""
    return json.dumps(data, ensure_ascii=False, sort_keys=True, indent=1) + "\n"


def forget(directory: Path) -> None:
    """Read the file of ``directory`` again at its next use (after it was rewritten)."""
    with _lock:
        _loaded.pop(directory, None)
