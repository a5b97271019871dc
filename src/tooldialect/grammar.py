"""Loading and compiling ``.lark`` grammars into what the tokenizer and parser use.

A family grammar is data.  Its header (leading ``//`` comment lines) carries the
metadata; its terminals are the markers; its rules, compiled to LALR tables by lark,
decide what a block is.  The conventions below are the whole contract between a
grammar and the engine (``docs/authoring.md`` explains them with examples):

* rule ``start``: a block found by scanning text for the terminals that can begin it
  (its *openers*); rule ``reply`` (optional): a block that can only begin the reply;
  rule ``line`` (optional, registry-gated grammars): a block that is one visible line;
* ``%declare JSON`` (or ``JSON_OBJECT``, ``JSON_ARRAY``): a JSON value read by the built-in
  incremental scanner; ``%declare PY_STRING``: a quoted string literal (any length);
  ``%declare BACKTICK_STRING``: a backtick-quoted string (a JavaScript template);
* ``%ignore`` terminals: skipped between tokens inside a block;
* an opener named ``SOFT_…`` is tentative: the block counts only if it parses whole;
  any other opener commits (a bad body is reported, not shown);
* a terminal named ``…_CLOSE`` ends a block: after a syntax error the block runs to it;
* ``REASONING_OPEN_<X>`` / ``REASONING_CLOSE_<X>`` pair a reasoning wrapper, and
  ``FURNITURE_…`` terminals are framing removed from the visible text
  (``FURNITURE_REPLY_…`` ones only at the first visible character of the reply);
* ``QUOTE_…`` strings stand for ``"`` inside the family's JSON (``<|"|>``);
* ``// write …`` header lines: how the family writes a call back, naming terminals
  (``CANONICAL_…`` ones give the written spelling of a marker read in several; no rule
  uses them and they are never closers) — read by ``render/family.py``; a ``write call``
  line is required, and every terminal a line writes must be one string; a family that
  writes several spellings declares them with ``// variant NAME: MODEL-GLOB, …`` lines
  and gives each one after the first its own ``// write KIND NAME: …`` lines;
* the rules that yield calls and their parts carry the names a reader reads
  (``json_calls``, ``call``, ``name`` …, declared in ``transform.py``): a grammar whose
  calls hold a node the reader does not read is refused (:func:`unread`), since what
  it parsed would be dropped.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from lark import Lark
from lark.exceptions import GrammarError as LarkGrammarError
from lark.exceptions import LarkError
from lark.grammar import Terminal as LarkTerminal
from lark.lexer import Lexer
from lark.load_grammar import PrepareLiterals, TerminalTreeToPattern, load_grammar
from lark.parsers.lalr_analysis import Shift

from .compiled_grammar import (
    EXTERNALS,
    JSON_EXTERNALS,
    LINE_RULE,
    MAX_MARKER_WIDTH,
    RAW_TEXT,
    START_RULES,
    CompiledGrammar,
    NodeReads,
    Terminal,
    assign_roles,
)
from .coverage import WRITE_ITEM, unread, unwritable
from .errors import GrammarError
from .grammar_where import locate, undefined_hint
from .header import Header, read_header
from .lalr import RuleShape, Tables
from .markers import UnsupportedPattern, analyse

# (what a compiled grammar is, and its header, live in compiled_grammar.py and header.py; they
# are named here too, where the grammar's readers have always found them)
__all__ = [
    "EXTERNALS",
    "JSON_EXTERNALS",
    "LINE_RULE",
    "MAX_MARKER_WIDTH",
    "RAW_TEXT",
    "WRITE_ITEM",
    "CompiledGrammar",
    "Header",
    "NodeReads",
    "Terminal",
    "compile_grammar",
    "read_definitions",
    "read_header",
    "read_terminals",
    "unread",
    "unwritable",
]


class _NoLexer(Lexer):
    """The tokenizer feeds tokens itself; lark only builds the tables."""

    def __init__(self, conf: Any) -> None:  # pragma: no cover - never lexes
        self.conf = conf

    def lex(self, *args: Any) -> Any:  # pragma: no cover
        raise NotImplementedError


_TO_PATTERN = PrepareLiterals() * TerminalTreeToPattern()


def _load(path: Path, pieces: Path | None = None) -> Any:
    """Load a grammar file; ``%import ._name`` looks in its own directory, then in ``pieces``
    (the built-in grammars, so a plugin grammar can import the shared pieces)."""
    where = [str(path.parent)] + ([str(pieces)] if pieces is not None and pieces != path.parent else [])
    try:
        grammar, _files = load_grammar(path.read_text(encoding="utf-8"), str(path), where, False)
    except (LarkError, OSError) as exc:
        raise GrammarError(cite(path, str(exc))) from exc
    return grammar


def cite(path: Path, message: str, family: str | None = None) -> str:
    """``message`` about the grammar at ``path`` as ``grammar FILE:LINE: message``: the line
    it is about (a use, a definition, a ``// write`` line), when it names one found in the
    file; a symbol used but not defined also says what to do."""
    for prefix in (f"grammar {path.name}: ", f"grammar {family!r}: " if family else None):
        if prefix and message.startswith(prefix):
            message = message[len(prefix) :]
            break
    else:
        cited = f"grammar {path.name}:"
        if message.startswith(cited) and message[len(cited) : len(cited) + 1].isdigit():
            return message  # cited already
    flat = " ".join(message.split())
    try:
        line = locate(path.read_text(encoding="utf-8"), flat)
    except (OSError, UnicodeDecodeError):
        line = None
    return f"grammar {path.name}{f':{line}' if line else ''}: {flat}{undefined_hint(flat)}"


def _patterns(grammar: Any, owner: str) -> dict[str, Terminal]:
    """Every terminal the grammar defines or imports, used by rules or not."""
    out: dict[str, Terminal] = {}
    for name, (tree, _priority) in grammar.term_defs:
        name = str(name)
        if tree is None:
            if name not in EXTERNALS and name != RAW_TEXT:
                raise GrammarError(
                    f"grammar {owner!r}: %declare {name} is not a scanner the engine provides "
                    f"(known: {', '.join(sorted([*EXTERNALS, RAW_TEXT]))})"
                )
            out[name] = Terminal(name, None, owner)
            continue
        pattern = _TO_PATTERN.transform(copy.deepcopy(tree))
        try:
            marker = analyse(pattern.to_regexp())
        except UnsupportedPattern as exc:
            raise GrammarError(f"grammar {owner!r}: terminal {name}: {exc}") from exc
        out[name] = Terminal(name, marker, owner)
    return out


def read_definitions(path: Path) -> tuple[list[str], list[str]]:
    """The terminal and rule names a grammar file defines or imports, in file order (no
    rule is compiled): what a shared piece offers to ``%import``."""
    grammar = _load(path)
    return [str(n) for n, _tree in grammar.term_defs], [str(r[0]) for r in grammar.rule_defs]


def read_terminals(path: Path) -> dict[str, Terminal]:
    """Terminals of a shared piece (a ``_name.lark`` file); no rules are compiled."""
    return _patterns(_load(path), path.stem)


def compile_grammar(
    path: Path,
    header: Header,
    pieces: Path | None = None,
    reads: NodeReads | None = None,
    *,
    conventions: bool = True,
) -> CompiledGrammar:
    """Compile a family grammar: LALR tables (strict: a conflict is an error) and tables.

    ``pieces`` is where ``%import``s not found beside the grammar are looked up (the
    built-in grammars directory, for plugin grammars).  ``reads`` is what the family's
    reader reads (the registry passes it): a grammar whose calls hold what it does not
    read is refused.  The ``// write`` lines are checked against the terminals.
    (``conventions=False`` skips those two checks: ``grammar check`` reports them apart.)
    Every error cites the file and the line it is about (``nexusraven.lark:12``)."""
    try:
        return _compile(path, header, pieces, reads, conventions)
    except GrammarError as exc:
        raise GrammarError(cite(path, str(exc), header.family)) from exc.__cause__


def _compile(
    path: Path, header: Header, pieces: Path | None, reads: NodeReads | None, conventions: bool
) -> CompiledGrammar:
    grammar = _load(path, pieces)
    rule_names = {str(r[0]) for r in grammar.rule_defs}
    starts = tuple(s for s in START_RULES if s in rule_names)
    if not starts:
        raise GrammarError(f"grammar {path.name}: defines neither a 'start' nor a 'reply' rule")
    if LINE_RULE in starts and not header.gated:
        raise GrammarError(
            f"grammar {path.name}: a 'line' rule is read without a marker, so only against a toolset: "
            "add '// gated: toolset' to the header"
        )
    terminals = _patterns(grammar, header.family)
    try:
        lark = Lark(
            grammar,
            parser="lalr",
            lexer=_NoLexer,
            start=list(starts),
            strict=True,
            maybe_placeholders=False,
        )
    except (LarkGrammarError, LarkError) as exc:
        raise GrammarError(_compile_message(path, str(exc))) from exc
    tables, shapes = _tables(lark, starts)
    for term in lark.terminals:  # anonymous terminals lark made from literals in rules
        if term.name not in terminals:
            try:
                terminals[str(term.name)] = Terminal(term.name, analyse(term.pattern.to_regexp()), header.family)
            except UnsupportedPattern as exc:
                raise GrammarError(f"grammar {header.family!r}: terminal {term.name}: {exc}") from exc
    ignore = tuple(terminals[str(n)] for n in lark.ignore_tokens)
    for ignored in ignore:
        if ignored.external:
            raise GrammarError(
                f"grammar {path.name}: %ignore {ignored.name}: a scanned terminal (%declare) cannot be ignored; "
                "%ignore only terminals with a pattern, like WS"
            )
    compiled = CompiledGrammar(
        name=header.family,
        header=header,
        path=path,
        terminals=terminals,
        ignore=ignore,
        tables=tables,
        starts=starts,
        nodes=frozenset(shape.name for shape in shapes.values() if not shape.structural),
        holds=_holds(lark.rules),
    )
    assign_roles(compiled)
    problems = unwritable(compiled) + (unread(compiled, reads) if reads is not None else []) if conventions else []
    if problems:
        raise GrammarError(f"grammar {path.name}: " + "; ".join(problems))
    return compiled


def _tables(lark: Lark, starts: tuple[str, ...]) -> tuple[Tables, dict[Any, RuleShape]]:
    """The parse tables as the engine's parser reads them, and each rule's shape.  States are
    numbered in the order a walk from the start states meets them, symbols in name order, so
    the tables are the same in every process (lark's numbering follows set order) and
    ``prebuilt.py`` writes the same file whoever builds it."""
    table = lark.parser.parser._parse_table
    shapes = {}
    for rule in lark.rules:
        keep_all = rule.options.keep_all_tokens
        keep = tuple(
            keep_all or not (isinstance(sym, LarkTerminal) and (sym.filter_out or sym.name.startswith("_")))
            for sym in rule.expansion
        )
        inline = tuple((not sym.is_term) and sym.name.startswith("_") for sym in rule.expansion)
        shapes[rule] = RuleShape(
            origin=str(rule.origin.name),
            name=str(rule.alias or rule.origin.name),
            size=len(rule.expansion),
            keep=keep,
            inline=inline,
            expand1=bool(rule.options.expand1),
            structural=rule.origin.name.startswith("_") and not rule.alias,
        )
    # symbols as plain ``str`` (lark's are partly ``Token``s, slower to compare), in name order
    states = {state: dict(sorted((str(sym), act) for sym, act in acts.items())) for state, acts in table.states.items()}
    order = [table.start_states[start] for start in starts]
    number = {state: i for i, state in enumerate(order)}
    for state in order:  # grows as the walk meets new states
        for action, arg in states[state].values():
            if action is Shift and arg not in number:
                number[arg] = len(order)
                order.append(arg)
    actions: list[dict[str, int | RuleShape]] = [
        {sym: (number[arg] if action is Shift else shapes[arg]) for sym, (action, arg) in states[state].items()}
        for state in order
    ]
    tables = Tables(
        actions=actions,
        start_states={start: number[table.start_states[start]] for start in starts},
        end_states={start: number[table.end_states[start]] for start in starts},
    )
    return tables, shapes


def _holds(rules: list[Any]) -> tuple[tuple[str, frozenset[str]], ...]:
    """For each rule alternative that builds a node: the node's name and what its children
    may be (node names and kept terminal names), through inlined ``_rules`` and ``?rule``
    collapses, as :class:`~tooldialect.lalr.LRParser` shapes the tree."""
    by_origin: dict[str, list[Any]] = {}
    for rule in rules:
        by_origin.setdefault(str(rule.origin.name), []).append(rule)
    memo: dict[int, frozenset[str]] = {}

    def kids(rule: Any, seen: frozenset[int]) -> frozenset[str]:
        if id(rule) in memo:
            return memo[id(rule)]
        if id(rule) in seen:  # a recursive rule: what it holds is gathered at its first visit
            return frozenset()
        seen = seen | {id(rule)}
        out: set[str] = set()
        for sym in rule.expansion:
            if sym.is_term:
                if rule.options.keep_all_tokens or not (sym.filter_out or sym.name.startswith("_")):
                    out.add(str(sym.name))
                continue
            for inner in by_origin.get(str(sym.name), ()):
                if sym.name.startswith("_"):
                    out |= kids(inner, seen)  # inlined: its children are the parent's
                    continue
                out.add(str(inner.alias or inner.origin.name))
                if inner.options.expand1:
                    out |= kids(inner, seen)  # ?rule: one child takes the node's place
        memo[id(rule)] = frozenset(out)
        return memo[id(rule)]

    out = []
    for rule in rules:
        if str(rule.origin.name).startswith("_") and not rule.alias:
            continue  # structural: builds no node of its own
        out.append((str(rule.alias or rule.origin.name), kids(rule, frozenset())))
    return tuple(out)


_CONFLICT_RULE = re.compile(r"<([\w.]+) :")


def _compile_message(path: Path, message: str) -> str:
    """Lark's message, on one line; an LALR conflict also says which rules and what to do."""
    flat = " ".join(message.split())
    rules = sorted(set(_CONFLICT_RULE.findall(message)))
    if ("collision" in flat or "conflict" in flat.lower()) and rules:
        which = ", ".join(f"'{r}'" for r in rules)
        return (
            f"grammar {path.name}: LALR conflict in rule{'s' * (len(rules) > 1)} {which} ({flat}); "
            f"one token of look-ahead cannot decide between the readings: rewrite the rules so "
            f"that the next token decides (or merge the rules that read the same text)"
        )
    return f"grammar {path.name}: {flat}"
