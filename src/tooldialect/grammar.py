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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from lark import Lark
from lark.exceptions import GrammarError as LarkGrammarError
from lark.exceptions import LarkError
from lark.lexer import Lexer
from lark.load_grammar import PrepareLiterals, TerminalTreeToPattern, load_grammar

from .errors import GrammarError
from .lalr import RuleShape, Tables
from .markers import MarkerPattern, UnsupportedPattern, analyse

__all__ = [
    "EXTERNALS",
    "JSON_EXTERNALS",
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

#: External terminals the engine knows how to scan (``%declare``d in grammars), with the
#: characters each can begin with.
EXTERNALS: dict[str, str] = {
    "JSON": "{[",
    "JSON_OBJECT": "{",
    "JSON_ARRAY": "[",
    "PY_STRING": "'\"",
    "BACKTICK_STRING": "`",
}
#: The externals that are JSON payloads (call objects or arguments); the others are
#: values inside a call the grammar spells (a quoted string literal).
JSON_EXTERNALS = frozenset({"JSON", "JSON_OBJECT", "JSON_ARRAY"})
#: The raw-text scanner: everything up to the marker the grammar accepts next.
RAW_TEXT = "TEXT"

#: The longest a marker may be; keeps hold-back and partial-match checks bounded.
MAX_MARKER_WIDTH = 512

START_RULES = ("start", "reply", "line")
#: The rule tried where a visible line begins (registry-gated grammars only).
LINE_RULE = "line"
#: Furniture recognised only at the first visible character of the reply (a header the
#: prompt left open, which would be ordinary words anywhere else).
REPLY_FURNITURE = "FURNITURE_REPLY_"
#: The written spelling of a marker that reads several (``CANONICAL_TOOL_CALL_OPEN``):
#: named by ``// write`` lines, read by no rule.
CANONICAL = "CANONICAL_"


@dataclass(frozen=True)
class Header:
    """Metadata from a grammar's leading comment block."""

    family: str
    title: str = ""
    models: tuple[str, ...] = ()
    checked_against: tuple[str, ...] = ()
    rank: int = 100
    reply: str = "start"  # "whole": a `reply` block must be all of the reply
    reply_header: bool = False  # the `reply` rule opens with a header the prompt began
    value_newlines: str = "keep"  # "strip": the template writes a newline around each text value
    text_escapes: str = "none"  # "backslash": a backslash in a TEXT value takes the next character
    gated: bool = False  # a registry-gated body: read only against a toolset, by exact name
    no_tool: tuple[str, ...] = ()  # names the model writes to call no tool (a sentinel its template lists)
    # "only": read from token ids, a marker whose text the tokenizer holds as a special
    # token counts only where the ids wrote that token (spelled in ordinary tokens, it is text)
    special_tokens: str = "any"
    policies: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()  # (model glob, ((field, value), ...))
    writes: tuple[tuple[str, str], ...] = ()  # `// write KIND: SPEC` lines, read by render/family.py
    # `// variant NAME: GLOB, …` lines: the spellings the family writes (the first is the one
    # the plain write lines say) and the model ids that write each
    variants: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # `// write KIND VARIANT: SPEC` lines: (variant, kind, spec), a variant's own lines
    variant_writes: tuple[tuple[str, str, str], ...] = ()
    notes: tuple[str, ...] = ()


_HEADER_LINE = re.compile(r"//\s?(.*)")
_WRITE_LINE = re.compile(r"write\s+([a-z]+)(?:\s+([a-z0-9][a-z0-9._-]{0,31}))?\s*(?::\s*(.*))?|write\s*", re.DOTALL)
#: The kinds of ``// write`` line (docs/authoring.md, "Writing calls back").
WRITE_KINDS = ("call", "block", "sep", "param", "single")
_POLICY_KEY = re.compile(r"policy\s+(\S+)", re.IGNORECASE)
_VARIANT_KEY = re.compile(r"variant\s+(\S+)")
#: A variant's name: lowercase letters, digits, '.', '-', '_' (``v3.1``, ``longcat``).
VARIANT_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,31}")


def read_header(text: str, stem: str) -> Header:
    """Parse the ``//`` comment lines at the top of a grammar (stops at the first rule)."""
    fields: dict[str, Any] = {"family": stem}
    models: list[str] = []
    checked: list[str] = []
    policies: list[tuple[str, tuple[tuple[str, str], ...]]] = []
    writes: list[tuple[str, str]] = []
    variants: list[tuple[str, tuple[str, ...]]] = []
    variant_writes: list[tuple[str, str, str]] = []
    notes: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        m = _HEADER_LINE.fullmatch(line)
        if m is None:
            break
        body = m.group(1)
        wm = _WRITE_LINE.fullmatch(body.strip())
        if wm is not None:
            kind, spec = _write_line(stem, body.strip(), wm)
            if wm.group(2):
                variant_writes.append((wm.group(2), kind, spec))
            else:
                writes.append((kind, spec))
            continue
        key, sep, value = body.partition(":")
        if not sep:
            notes.append(body)
            continue
        raw_key = key.strip()
        key = raw_key.lower()
        value = value.strip()
        pm = _POLICY_KEY.fullmatch(raw_key)
        vm = _VARIANT_KEY.fullmatch(raw_key)
        if vm:
            name = vm.group(1)
            if VARIANT_NAME.fullmatch(name) is None:
                raise GrammarError(
                    f"grammar {stem!r}: variant name {name!r}: use lowercase letters, digits, '.', '-' and '_'"
                )
            if any(name == v for v, _ in variants):
                raise GrammarError(f"grammar {stem!r}: variant {name!r} is declared twice")
            variants.append((name, tuple(v.strip() for v in value.split(",") if v.strip())))
        elif pm:
            pairs = []
            for item in value.split(","):
                name, eq, val = item.strip().partition("=")
                if not eq:
                    raise GrammarError(f"grammar {stem!r}: policy line needs field=value, got {item!r}")
                pairs.append((name.strip(), val.strip()))
            policies.append((pm.group(1), tuple(pairs)))
        elif key == "family":
            fields["family"] = value
        elif key == "title":
            fields["title"] = value
        elif key == "models":
            models.extend(v.strip() for v in value.split(",") if v.strip())
        elif key in ("checked against", "checked-against", "checked"):
            checked.append(value)
        elif key == "rank":
            try:
                fields["rank"] = int(value)
            except ValueError as exc:
                raise GrammarError(f"grammar {stem!r}: rank must be an integer, got {value!r}") from exc
        elif key == "value newlines":
            if value not in ("keep", "strip"):
                raise GrammarError(f"grammar {stem!r}: value newlines must be 'keep' or 'strip', got {value!r}")
            fields["value_newlines"] = value
        elif key == "text escapes":
            if value not in ("none", "backslash"):
                raise GrammarError(f"grammar {stem!r}: text escapes must be 'none' or 'backslash', got {value!r}")
            fields["text_escapes"] = value
        elif key == "no tool":
            names = tuple(v.strip() for v in value.split(",") if v.strip())
            if not names or any(len(n.split()) != 1 for n in names):
                # a tool name has no white space: a wrapped note that starts a line with
                # "no tool:" is refused rather than read as names
                raise GrammarError(f"grammar {stem!r}: no tool needs one or more comma-separated tool names, got {value!r}")
            fields["no_tool"] = names
        elif key == "special tokens":
            if value not in ("any", "only"):
                raise GrammarError(f"grammar {stem!r}: special tokens must be 'any' or 'only', got {value!r}")
            fields["special_tokens"] = value
        elif key == "gated":
            if value != "toolset":
                raise GrammarError(f"grammar {stem!r}: gated must be 'toolset', got {value!r}")
            fields["gated"] = True
        elif key == "reply":
            words = value.split()
            if not words or words[0] not in ("start", "whole") or words[1:] not in ([], ["header"]):
                raise GrammarError(
                    f"grammar {stem!r}: reply must be 'start' or 'whole', optionally followed by 'header', got {value!r}"
                )
            fields["reply"] = words[0]
            fields["reply_header"] = words[1:] == ["header"]
        else:
            notes.append(body)
    _check_variant_writes(stem, variants, variant_writes)
    return Header(
        models=tuple(models),
        checked_against=tuple(checked),
        policies=tuple(policies),
        writes=tuple(writes),
        variants=tuple(variants),
        variant_writes=tuple(variant_writes),
        notes=tuple(notes),
        **fields,
    )


def _check_variant_writes(
    stem: str, variants: list[tuple[str, tuple[str, ...]]], writes: list[tuple[str, str, str]]
) -> None:
    """A ``write KIND VARIANT`` line names a declared variant other than the first (whose
    spelling the plain write lines say), once per kind."""
    declared = [v for v, _ in variants]
    seen = set()
    for variant, kind, _spec in writes:
        if variant not in declared:
            known = ", ".join(declared) or "none"
            raise GrammarError(
                f"grammar {stem!r}: line '// write {kind} {variant}: …' names no declared variant "
                f"(declared: {known}); add '// variant {variant}: MODEL-GLOB, …'"
            )
        if variant == declared[0]:
            raise GrammarError(
                f"grammar {stem!r}: line '// write {kind} {variant}: …': {variant} is the first variant, "
                "whose spelling the plain write lines say; drop the variant name"
            )
        if (variant, kind) in seen:
            raise GrammarError(f"grammar {stem!r}: a second 'write {kind} {variant}' line; keep one")
        seen.add((variant, kind))


def _write_line(stem: str, line: str, m: re.Match[str]) -> tuple[str, str]:
    """A ``// write KIND [VARIANT]: SPEC`` line as (kind, spec); its items are read on first use."""
    kind, spec = m.group(1), (m.group(3) or "").strip()
    if kind not in WRITE_KINDS:
        raise GrammarError(
            f"grammar {stem!r}: line '// {line}': unknown write line; write one of "
            + ", ".join(f"'write {k}'" for k in WRITE_KINDS)
        )
    if (kind == "single") != (not spec):
        want = "'// write single' takes nothing after it" if kind == "single" else f"'// write {kind}: …' needs items after the colon"
        raise GrammarError(f"grammar {stem!r}: line '// {line}': {want}")
    return kind, spec


OPEN_SUFFIX = "_OPEN"
CLOSE_SUFFIX = "_CLOSE"
FURNITURE_PREFIX = "FURNITURE_"


@dataclass(frozen=True)
class Terminal:
    """A terminal of a compiled grammar, with the roles its name and pattern give it
    (the conventions in this module's docstring), worked out once when it is made."""

    name: str
    pattern: MarkerPattern | None  # None for an external (scanned) terminal
    grammar: str
    # derived from the above
    external: bool = field(init=False, repr=False, compare=False)  # scanned, not matched
    soft: bool = field(init=False, repr=False, compare=False)  # SOFT_…: a tentative opener
    is_open: bool = field(init=False, repr=False, compare=False)  # X_OPEN: opens structure X
    is_close: bool = field(init=False, repr=False, compare=False)  # X_CLOSE, FURNITURE_X_CLOSE: closes X
    stem: str = field(init=False, repr=False, compare=False)  # X: without FURNITURE_ and _OPEN or _CLOSE
    # a name-like token: a pattern that is not a literal, neither an opener nor a closer
    bare: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        name = str(self.name)  # never a lark Token: names are compared per token
        pattern = self.pattern
        is_open = name.endswith(OPEN_SUFFIX)
        is_close = name.endswith(CLOSE_SUFFIX)
        stem = name.removeprefix(FURNITURE_PREFIX)
        stem = stem[: -len(OPEN_SUFFIX)] if is_open else stem[: -len(CLOSE_SUFFIX)] if is_close else stem
        set_ = object.__setattr__
        set_(self, "name", name)
        set_(self, "external", pattern is None)
        set_(self, "soft", name.startswith("SOFT_"))
        set_(self, "is_open", is_open)
        set_(self, "is_close", is_close)
        set_(self, "stem", stem)
        set_(self, "bare", pattern is not None and pattern.literal is None and not (is_open or is_close))

    @property
    def closer(self) -> bool:
        return self.is_close


@dataclass
class CompiledGrammar:
    name: str
    header: Header
    path: Path
    terminals: dict[str, Terminal]
    ignore: tuple[Terminal, ...]
    tables: Tables
    starts: tuple[str, ...]
    openers: dict[str, tuple[Terminal, ...]] = field(default_factory=dict)
    closers: tuple[Terminal, ...] = ()
    reasoning: tuple[tuple[Terminal, Terminal], ...] = ()
    furniture: tuple[Terminal, ...] = ()
    reply_furniture: tuple[Terminal, ...] = ()  # FURNITURE_REPLY_…: framing only where the reply begins
    quotes: tuple[str, ...] = ()  # QUOTE_… terminals: strings that stand for " inside JSON
    nodes: frozenset[str] = frozenset()  # the node names its rules build (conventional names included)
    # what each rule alternative that builds a node holds: (node name, the node names and
    # kept terminal names its children may have, inlined rules and collapses followed)
    holds: tuple[tuple[str, frozenset[str]], ...] = ()


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
        raise GrammarError(f"grammar {path.name}: {exc}") from exc
    return grammar


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


def _pairs(terminals: dict[str, Terminal], owner: str) -> tuple[tuple[Terminal, Terminal], ...]:
    pairs = []
    for name, term in terminals.items():
        if name.startswith("REASONING_OPEN_"):
            key = name[len("REASONING_OPEN_") :]
            close = terminals.get("REASONING_CLOSE_" + key)
            if close is None:
                raise GrammarError(f"grammar {owner!r}: {name} has no REASONING_CLOSE_{key}")
            pairs.append((term, close))
    return tuple(pairs)


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
    (``conventions=False`` skips those two checks: ``grammar check`` reports them apart.)"""
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
    inner = lark.parser.parser
    table = inner._parse_table
    shapes = {}
    for rule in lark.rules:
        keep_all = rule.options.keep_all_tokens
        keep = tuple(
            keep_all or not (sym.is_term and (sym.filter_out or sym.name.startswith("_"))) for sym in rule.expansion
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
    # symbols as plain ``str`` (lark's are partly ``Token``s, slower to compare)
    states = {state: {str(sym): act for sym, act in acts.items()} for state, acts in table.states.items()}
    tables = Tables(
        states=states,
        start_states=dict(table.start_states),
        end_states=dict(table.end_states),
        shapes=shapes,
    )
    for term in lark.terminals:  # anonymous terminals lark made from literals in rules
        if term.name not in terminals:
            try:
                terminals[str(term.name)] = Terminal(term.name, analyse(term.pattern.to_regexp()), header.family)
            except UnsupportedPattern as exc:
                raise GrammarError(f"grammar {header.family!r}: terminal {term.name}: {exc}") from exc
    ignore = tuple(terminals[str(n)] for n in lark.ignore_tokens)
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
    for start in starts:
        first = states[table.start_states[start]]
        openers = tuple(terminals[k] for k in first if k in terminals)
        if start == "start":
            for term in openers:
                _check_opener(term, header.family)
        compiled.openers[start] = openers
    # CANONICAL_… terminals are spellings the writer uses (render_call), read by no rule
    compiled.closers = tuple(
        t for t in terminals.values() if t.closer and t.pattern is not None and not t.name.startswith(CANONICAL)
    )
    compiled.reasoning = _pairs(terminals, header.family)
    compiled.furniture = tuple(
        t for n, t in terminals.items() if n.startswith("FURNITURE_") and not n.startswith(REPLY_FURNITURE)
    )
    compiled.reply_furniture = tuple(t for n, t in terminals.items() if n.startswith(REPLY_FURNITURE))
    quotes = []
    for name, term in terminals.items():
        if name.startswith("QUOTE_"):
            if term.pattern is None or term.pattern.literal is None or term.pattern.ignorecase:
                raise GrammarError(f"grammar {header.family!r}: {name} must be a plain string")
            quotes.append(term.pattern.literal)
    compiled.quotes = tuple(sorted(quotes, key=len, reverse=True))
    used = {sym for acts in states.values() for sym in acts}
    for term in terminals.values():
        if term.pattern is not None and term.name in used and term.pattern.max_width > MAX_MARKER_WIDTH:
            if term not in ignore:
                raise GrammarError(
                    f"grammar {header.family!r}: terminal {term.name} can match more than "
                    f"{MAX_MARKER_WIDTH} characters; bound its repetitions (long content belongs "
                    f"to a %declare'd scanner such as JSON)"
                )
    problems = unwritable(compiled) + (unread(compiled, reads) if reads is not None else []) if conventions else []
    if problems:
        raise GrammarError(f"grammar {path.name}: " + "; ".join(problems))
    return compiled


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


# -- what the write lines write -----------------------------------------------------------

#: One item of a ``// write`` line; groups: a "quoted" JSON string, a TERMINAL, a slot and its option.
WRITE_ITEM = re.compile(r'\s*(?:("(?:[^"\\]|\\.)*")|([A-Z_][A-Z0-9_]*)(?![\w:])|([a-z]+)(?::([A-Za-z_][A-Za-z0-9_]*))?)')


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
            "model writes one call per reply (docs/authoring.md, \"Writing calls back\")"
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


class NodeReads(Protocol):
    """What a reader reads of a parse tree, by node name (``transform.Reader`` and the
    family readers declare it; docs/authoring.md, "Rule names the generic transformer
    reads")."""

    #: nodes that yield calls
    call_nodes: frozenset[str]
    #: every node the reader reads: the call nodes and the parts it reads in them
    read_nodes: frozenset[str]
    #: nodes whose children the reader picks by name (a child node it does not read is
    #: dropped), each with the children one of which it must hold (a call's ``name``)
    picked_nodes: Mapping[str, frozenset[str]]


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
                problems.append(f"rule '{node}' holds a {kid} payload that no rule the reader reads holds: {_hold(kid, node)}")
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


def _holds_payload(node: str, holds: dict[str, set[str]], compiled: CompiledGrammar) -> set[str]:
    """The payload terminals anywhere under a node."""
    out: set[str] = set()
    seen: set[str] = set()
    todo = [node]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        for kid in holds.get(n, ()):
            if kid in holds:
                todo.append(kid)
            elif _payload(kid, compiled):
                out.add(kid)
    return out


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
        "(docs/authoring.md, \"Rule names the generic transformer reads\")"
    )


def _rename(kid: str, node: str, holds: dict[str, set[str]], compiled: CompiledGrammar) -> str:
    payload = _holds_payload(kid, holds, compiled)
    if node == "param":
        want = "param_value" if payload else "param_name"
    elif payload & JSON_EXTERNALS:
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


def _check_opener(term: Terminal, family: str) -> None:
    if term.external:
        raise GrammarError(
            f"grammar {family!r}: rule 'start' begins with the scanned terminal {term.name}; "
            f"a block must begin with a marker (use a 'reply' rule for replies that open with a payload)"
        )
    if term.pattern is not None and term.pattern.first is None:
        raise GrammarError(
            f"grammar {family!r}: opener {term.name} can begin with too many characters to scan for"
        )
