"""Text that runs to a closing marker and holds none of the family's stops.

A value written as raw text (an XML parameter, a GLM ``arg_value``) ends where the reader
finds the first of several stops — the closing marker, but also the markers that would end
the call or the block (``</function>``, ``</tool_call>`` in any spelling the reader
knows).  The family's writer lists them as regexes.  Lark says "no stop inside" with
llguidance's ``~`` operator; GBNF and EBNF have no such operator, so this module builds
the automaton of "text holding no stop, then the marker" and writes one rule per state.
The regexes are read with ``interegular`` (part of the ``export`` extra).
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import ExportError

__all__ = ["first_chars", "search_automaton"]

#: More states than this and the grammar would be unreasonably large.
MAX_STATES = 4000


def _fsm(pattern: str) -> Any:
    try:
        import interegular
    except ImportError:  # pragma: no cover - the export extra installs it
        raise ExportError(
            "a text value that must avoid the family's stop markers needs interegular for GBNF/EBNF: "
            "pip install 'tooldialect[export]'"
        ) from None
    try:
        return interegular.parse_pattern(pattern).to_fsm()
    except Exception as exc:  # noqa: BLE001 - interegular raises its own types for what it cannot read
        raise ExportError(f"cannot build an automaton for the stop pattern {pattern!r}: {exc}") from None


def _step(fsm: Any, state: Any, ch: Any) -> Any:
    from interegular.fsm import anything_else

    symbol = fsm.alphabet[ch] if ch in fsm.alphabet else fsm.alphabet.get(anything_else)
    if symbol is None:
        return None
    return fsm.map.get(state, {}).get(symbol)


def first_chars(patterns: tuple[str, ...]) -> set[str] | None:
    """The characters a match of any pattern can begin with (None: any character)."""
    from interegular.fsm import anything_else

    out: set[str] = set()
    for pattern in patterns:
        fsm = _fsm(pattern)
        for ch in fsm.alphabet:
            if _step(fsm, fsm.initial, ch) is not None:
                if ch is anything_else:
                    return None
                out.add(ch)
    return out


def search_automaton(
    marker: str, stops: tuple[str, ...]
) -> tuple[list[str], dict[int, list[tuple[set[str] | None, int | None]]]]:
    """The automaton reading text up to and including the first ``marker`` that holds no
    match of ``stops`` before it.  Returns the alphabet (explicit characters) and, per state,
    moves ``(characters, next state)``: ``characters`` None means every character outside the
    alphabet, and a next state None means the marker is complete (the text ends)."""
    from interegular.fsm import anything_else

    machines = [_fsm(re.escape(marker))] + [_fsm(p) for p in stops]
    alphabet = sorted({ch for m in machines for ch in m.alphabet if ch is not anything_else})
    symbols: list[Any] = [*alphabet, anything_else]
    start = tuple(frozenset({m.initial}) for m in machines)
    index = {start: 0}
    todo = [start]
    moves: dict[int, list[tuple[set[str] | None, int | None]]] = {}
    while todo:
        state = todo.pop()
        here = index[state]
        grouped: dict[int | None, set[str] | None] = {}
        for ch in symbols:
            nxt = []
            ended = False
            blocked = False
            for k, (machine, live) in enumerate(zip(machines, state)):
                reached = {s for s in (_step(machine, q, ch) for q in live) if s is not None}
                if reached & set(machine.finals):
                    if k == 0:
                        ended = True
                    else:
                        blocked = True
                nxt.append(frozenset(reached | {machine.initial}))
            if blocked and not ended:
                continue  # a stop other than the marker: the reader would end the value here
            if ended:
                target: int | None = None
            else:
                key = tuple(nxt)
                if key not in index:
                    if len(index) >= MAX_STATES:
                        raise ExportError(f"the stops after a text value make an automaton of over {MAX_STATES} states")
                    index[key] = len(index)
                    todo.append(key)
                target = index[key]
            if ch is anything_else:
                grouped.setdefault(target, set())
                moves.setdefault(here, []).append((None, target))
            else:
                group = grouped.setdefault(target, set())
                assert group is not None
                group.add(ch)
        moves.setdefault(here, [])
        moves[here] = [(chars, t) for t, chars in grouped.items() if chars] + [m for m in moves[here] if m[0] is None]
    return alphabet, moves
