"""Whether a grammar's calls are read whole and its write lines write a call: the two
convention checks :func:`~tooldialect.grammar.compile_grammar` applies and ``grammar
check`` reports on their own (:func:`unread`, :func:`unwritable`)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from .compiled_grammar import CANONICAL, JSON_EXTERNALS, RAW_TEXT, START_RULES, CompiledGrammar, NodeReads, Terminal
from .tree import LITERAL_ITEMS

__all__ = ["WRITE_ITEM", "unread", "unwritable", "write_marker_problem"]


# -- what the write lines write -----------------------------------------------------------

#: One item of a ``// write`` line; groups: a "quoted" JSON string, a TERMINAL, a slot and its option.
WRITE_ITEM = re.compile(
    r'\s*(?:("(?:[^"\\]|\\.)*")|([A-Z_][A-Z0-9_]*)(?![\w:])|([a-z]+)(?::([A-Za-z_][A-Za-z0-9_]*))?)'
)


def write_marker_problem(terminals: Mapping[str, Terminal], name: str) -> str | None:
    """Why a ``// write`` line cannot write terminal ``name`` (None: it is one string)."""
    term = terminals.get(name)
    if term is None:
        return f"{name} is not a terminal of this grammar; name one it defines or %imports"
    if term.pattern is None or term.pattern.literal is None:
        return (
            f"{name} is a pattern, not one string: add a string terminal {CANONICAL}{name.lstrip('_')} with the "
            "spelling to write (in the grammar that defines it) and name that"
        )
    return None


def unwritable(compiled: CompiledGrammar) -> list[str]:
    """What keeps the ``// write`` lines from writing the family's calls, one fix-it sentence
    each: no ``write call`` line, or a terminal a line writes that is not one string.  (The
    slots are read, and checked, by ``render/family.py`` when the family first writes.)"""
    problems = []
    if not any(kind == "call" for kind, _spec in compiled.header.writes):
        problems.append(
            "no '// write call: …' line, so its calls cannot be written back (render_call, transcript "
            "replay and td.export need one): write the call as the main model writes it, naming the "
            "grammar's terminals, e.g. '// write call: OPEN name:json \", \" arguments CLOSE'; a grammar "
            "that only reads writes the spelling it reads best, and adds '// write single' when its "
            'model writes one call per reply (docs/authoring.md, "Writing calls back")'
        )
    for kind, spec in compiled.header.writes:
        pos = 0
        while pos < len(spec):
            m = WRITE_ITEM.match(spec, pos)
            if m is None or m.end() == pos:
                break  # render/family.py says what it cannot read
            pos = m.end()
            why = write_marker_problem(compiled.terminals, m.group(2)) if m.group(2) is not None else None
            if why is not None:
                problems.append(f"line '// write {kind}: {spec}': {why}")
    return problems


# -- what a reader reads -------------------------------------------------------------------


def unread(compiled: CompiledGrammar, reads: NodeReads) -> list[str]:
    """What the grammar parses and ``reads`` would drop, one fix-it sentence each: no rule
    that yields calls, a node under a call that is not read, a call without its name, a
    payload (``JSON``, ``TEXT`` …) no read rule holds.  Empty when every call is read."""
    holds: dict[str, set[str]] = {}
    for name, kids in compiled.holds:
        holds.setdefault(name, set()).update(kids)
    if not compiled.nodes & reads.call_nodes:
        return [_no_call_rule(holds, reads)]
    problems: list[str] = []
    reachable = _reachable(compiled, holds)
    for name, kids in compiled.holds:
        need = reads.picked_nodes.get(name)
        if need and not kids & need and name in reachable:
            wanted = " or ".join(f"'{n}'" for n in sorted(need))
            some = "one way of writing " if any(n == name and k & need for n, k in compiled.holds) else ""
            problems.append(
                f"{some}rule '{name}' holds no {wanted} node, so its {name}s would have no "
                f"{_ROLE.get(min(need), min(need))}: name the rule that reads it {wanted} "
                f"('{min(need)}: BARE_NAME', or '-> {min(need)}' after the rule's alternative)"
            )
    seen: set[tuple[str, bool]] = set()
    # a rule the engine starts at that the reader reads whole (glm_lines' `line`) holds
    # nothing it could drop
    todo = [(start, False) for start in compiled.starts if start not in reads.read_nodes or start in reads.picked_nodes]
    while todo:
        node, inside = todo.pop()
        if (node, inside) in seen:
            continue
        seen.add((node, inside))
        picked = node in reads.picked_nodes
        for kid in sorted(holds.get(node, ())):
            if kid in holds:  # a node
                if picked and kid not in reads.read_nodes:
                    problems.append(
                        f"rule '{kid}' under '{node}' is not read, so what it holds is dropped: "
                        f"{_rename(kid, node, holds, compiled)}"
                    )
                elif kid in reads.read_nodes and kid not in reads.picked_nodes:
                    if not inside and kid not in reads.call_nodes:
                        calls = " or ".join(f"'{c}'" for c in sorted(reads.picked_nodes) if c in reads.call_nodes)
                        problems.append(f"rule '{kid}' is read only inside a call: put it under a {calls} rule")
                else:
                    todo.append((kid, inside or kid in reads.call_nodes))
            elif _payload(kid, compiled) and (picked or node not in reads.read_nodes):
                problems.append(
                    f"rule '{node}' holds a {kid} payload that no rule the reader reads holds: {_hold(kid, node)}"
                )
    return list(dict.fromkeys(problems))


#: What a required child gives the node that holds it (for messages).
_ROLE = {"name": "tool name", "call_id": "id", "param_name": "parameter name"}


def _reachable(compiled: CompiledGrammar, holds: dict[str, set[str]]) -> set[str]:
    out: set[str] = set()
    todo = list(compiled.starts)
    while todo:
        node = todo.pop()
        if node not in out:
            out.add(node)
            todo.extend(k for k in holds.get(node, ()) if k in holds)
    return out


def _payload(symbol: str, compiled: CompiledGrammar) -> bool:
    term = compiled.terminals.get(symbol)
    return term is not None and term.external


def _under(node: str, holds: dict[str, set[str]]) -> Iterator[str]:
    """Every node and terminal anywhere under ``node``, each once (the rules hold each other
    in cycles)."""
    seen = {node}
    todo = [node]
    while todo:
        for kid in holds.get(todo.pop(), ()):
            if kid not in seen:
                seen.add(kid)
                yield kid
                if kid in holds:
                    todo.append(kid)


def _holds_payload(node: str, holds: dict[str, set[str]], compiled: CompiledGrammar) -> set[str]:
    """The payload terminals anywhere under a node."""
    return {kid for kid in _under(node, holds) if kid not in holds and _payload(kid, compiled)}


def _holds_node(node: str, wanted: frozenset[str], holds: dict[str, set[str]]) -> bool:
    """Whether one of the ``wanted`` nodes is anywhere under ``node``."""
    return any(kid in wanted for kid in _under(node, holds))


def _no_call_rule(holds: dict[str, set[str]], reads: NodeReads) -> str:
    names = ", ".join(f"'{n}'" for n in sorted(reads.call_nodes))
    holder = next((n for n in sorted(holds) if holds[n] & set(JSON_EXTERNALS) and n not in START_RULES), None)
    hint = (
        f"rule '{holder}' holds the JSON payload: write '{holder}: … -> json_calls'"
        if holder is not None
        else "write 'json_calls: JSON' for a JSON call object (or an array of them), or spell a call with "
        "'call', 'name' and 'arguments' or 'param' rules"
    )
    return (
        f"no rule yields calls (the rules read as calls: {names}), so every block would hold none: {hint} "
        '(docs/authoring.md, "Rule names the generic transformer reads")'
    )


def _rename(kid: str, node: str, holds: dict[str, set[str]], compiled: CompiledGrammar) -> str:
    payload = _holds_payload(kid, holds, compiled)
    if node == "param":
        want = "param_value" if payload else "param_name"
    elif payload & JSON_EXTERNALS or _holds_node(kid, frozenset(LITERAL_ITEMS), holds):
        # JSON arguments, or arguments written as code (``_py_items``: keyword arguments),
        # which an ``arguments`` node holds as its children
        want = "arguments"
    elif payload:
        want = "param"
    else:
        want = "name"
    return f"give it the name the reader reads there ('{kid}: … -> {want}')"


def _hold(terminal: str, node: str) -> str:
    if terminal == RAW_TEXT:
        return f"put it in a 'param_value' rule of a 'param' ('param_value: {terminal}')"
    if terminal in JSON_EXTERNALS:
        if node in ("call", "bare_call"):
            return f"put it in an 'arguments' rule ('arguments: {terminal}')"
        return f"put it in a rule named 'json_calls' ('json_calls: {terminal}') or in a call's 'arguments'"
    return "put it in a rule the reader reads (a family reader declares the nodes it reads)"
