"""A small grammar notation and its three spellings: llguidance Lark, llama.cpp GBNF and
xgrammar EBNF.

Exports build one :class:`Grammar` of rules made of the nodes below and then write it in
the target's syntax.  GBNF and xgrammar's EBNF share their notation (``name ::= …``,
quoted literals, ``[…]`` classes, ``* + ? {m,n}``); Lark adds regexes, which only
:class:`Prose` and :class:`Pattern` use, and ``%json`` schemas (:class:`Json`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Union

from ..errors import ExportError
from ._rx import rust_regex, rx_escape
from ._stops import search_automaton

__all__ = ["Alt", "Class", "Grammar", "Json", "Lit", "Node", "Pattern", "Prose", "Ref", "Rep", "Seq", "Until"]


@dataclass(frozen=True)
class Lit:
    text: str


@dataclass(frozen=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Rep:
    item: Node
    min: int = 0
    max: int | None = None  # None: unbounded


@dataclass(frozen=True)
class Class:
    """One character from a set: ``ranges`` of code points, or any character outside them."""

    ranges: tuple[tuple[int, int], ...]
    negated: bool = False


@dataclass(frozen=True)
class Ref:
    name: str


@dataclass(frozen=True)
class Json:
    """A JSON value following ``schema`` (Lark only: llguidance's ``%json``)."""

    schema: str  # the schema as JSON text, so the node stays hashable


@dataclass(frozen=True)
class Until:
    """Text that does not contain ``stop`` nor a match of any ``avoid`` regex (Python
    syntax), then ``stop`` itself; ``min``/``max`` bound the length of the text."""

    stop: str
    min: int = 0
    max: int | None = None
    avoid: tuple[str, ...] = ()
    #: the reader drops one newline at the end of the text (the template's): ``min``/``max``
    #: bound the text without it
    strip: bool = False


@dataclass(frozen=True)
class Prose:
    """Free text (Lark only).  ``avoid``: a regex the text may not contain (or, with
    ``at_start``, may not begin with); ``then``: a regex that ends the text, matched
    lazily, so the text runs to its first match."""

    avoid: str | None = None
    at_start: bool = False
    then: str | None = None


@dataclass(frozen=True)
class Pattern:
    """A regex (Lark) that is also a GBNF class repetition: ``cls`` repeated ``min``..``max``."""

    cls: Class
    min: int
    max: int | None


Node = Union[Lit, Seq, Alt, Rep, Class, Ref, Json, Until, Prose, Pattern]  # noqa: UP007 - a runtime alias: | needs 3.10 classes, not dataclasses' names


def seq(*items: Node) -> Node:
    flat: list[Node] = []
    for item in items:
        if isinstance(item, Seq):
            flat.extend(item.items)
        elif isinstance(item, Lit) and not item.text:
            continue
        else:
            flat.append(item)
    merged: list[Node] = []
    for item in flat:  # adjacent literals read better as one
        if isinstance(item, Lit) and merged and isinstance(merged[-1], Lit):
            merged[-1] = Lit(merged[-1].text + item.text)
        else:
            merged.append(item)
    if len(merged) == 1:
        return merged[0]
    return Seq(tuple(merged))


def alt(*items: Node) -> Node:
    out: list[Node] = []
    optional = False
    for item in items:
        for sub in item.items if isinstance(item, Alt) else (item,):
            if sub == Lit(""):
                optional = True
            elif sub not in out:
                out.append(sub)
    if not out:
        return Lit("")
    node = out[0] if len(out) == 1 else Alt(tuple(out))
    return Rep(node, 0, 1) if optional else node


EMPTY = Lit("")


@dataclass
class Grammar:
    """Named rules; ``start`` is the first.  ``rule()`` interns a node under a fresh name."""

    rules: dict[str, Node] = field(default_factory=dict)
    _names: dict[Node, str] = field(default_factory=dict)

    def define(self, name: str, node: Node) -> Ref:
        if name in self.rules:
            raise AssertionError(f"rule {name} defined twice")
        self.rules[name] = node
        return Ref(name)

    def rule(self, hint: str, node: Node) -> Ref:
        """A rule for ``node``, shared with any identical node defined before."""
        if isinstance(node, Ref):
            return node
        got = self._names.get(node)
        if got is not None:
            return Ref(got)
        name = self.fresh(hint)
        self._names[node] = name
        return self.define(name, node)

    def fresh(self, hint: str) -> str:
        base = "".join(c if c.isascii() and c.isalnum() else "_" for c in hint.lower()).strip("_") or "r"
        if not base[0].isalpha():
            base = "r_" + base
        name, n = base, 1
        while name in self.rules or name == "start":
            n += 1
            name = f"{base}_{n}"
        return name

    # -- writing ---------------------------------------------------------------------------

    def used(self) -> list[str]:
        """The rules reachable from ``start``, in definition order."""
        seen = {"start"}
        todo = [self.rules["start"]]
        while todo:
            node = todo.pop()
            if isinstance(node, Ref):
                if node.name not in seen:
                    seen.add(node.name)
                    todo.append(self.rules[node.name])
            elif isinstance(node, (Seq, Alt)):
                todo.extend(node.items)
            elif isinstance(node, Rep):
                todo.append(node.item)
        return [name for name in self.rules if name in seen]

    def lark(self) -> str:
        return _LarkWriter(self).write()

    def gbnf(self) -> str:
        return _BnfWriter(self, "gbnf").write()

    def ebnf(self) -> str:
        return _BnfWriter(self, "ebnf").write()


# -- Lark (llguidance) ---------------------------------------------------------------------


def _rx_class(cls: Class) -> str:
    parts = []
    for lo, hi in cls.ranges:
        parts.append(_rx_class_char(lo) if lo == hi else f"{_rx_class_char(lo)}-{_rx_class_char(hi)}")
    return "[" + ("^" if cls.negated else "") + "".join(parts) + "]"


def _rx_class_char(cp: int) -> str:
    ch = chr(cp)
    if ch.isascii() and ch.isalnum():
        return ch
    if cp < 0x80:
        return f"\\x{cp:02x}"
    return ch


def _lark_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


_ANY = "(?s:.*)"


class _LarkWriter:
    def __init__(self, grammar: Grammar) -> None:
        self.g = grammar
        self.extra: list[str] = []
        self.n = 0

    def write(self) -> str:
        lines = [f"{name}: {self.node(self.g.rules[name], name)}" for name in self.g.used()]
        return "\n".join(lines + self.extra) + "\n"

    def lazy(self, hint: str, terminal_body: str) -> str:
        """A lazy rule over a terminal: it matches as few characters as it can."""
        self.n += 1
        term = f"{hint.upper()}_LX{self.n}"
        rule = f"{hint.lower()}_lx{self.n}"
        self.extra.append(f"{term}: {terminal_body}")
        self.extra.append(f"{rule}[lazy]: {term}")
        return rule

    def node(self, node: Node, hint: str) -> str:
        if isinstance(node, Lit):
            return _lark_string(node.text) if node.text else '""'
        if isinstance(node, Ref):
            return node.name
        if isinstance(node, Seq):
            return " ".join(self.atom(i, hint) for i in node.items)
        if isinstance(node, Alt):
            return " | ".join(self.node(i, hint) for i in node.items)
        if isinstance(node, Rep):
            inner = self.atom(node.item, hint)
            return inner + _bounds(node.min, node.max, lark=True)
        if isinstance(node, Class):
            return f"/{_rx_class(node)}/"
        if isinstance(node, Pattern):
            return f"/{_rx_class(node.cls)}{_bounds(node.min, node.max, lark=False)}/"
        if isinstance(node, Json):
            return f"%json {node.schema}"
        if isinstance(node, Until):
            stop = rx_escape(node.stop)
            if node.min == 0 and node.max is None and not node.avoid:
                return self.lazy(hint, f"/{_ANY}{stop}/")
            avoid = "|".join([stop, *(rust_regex(p) for p in node.avoid)])
            body = f"(/(?s:{_text_length(node)})/ & ~/{_ANY}(?:{avoid}){_ANY}/) /{stop}/"
            return self.lazy(hint, body)
        if isinstance(node, Prose):
            return self.prose(node, hint)
        raise AssertionError(node)

    def prose(self, node: Prose, hint: str) -> str:
        if node.then is not None:
            # lazy: the text runs to the first place where `then` matches
            if node.avoid is None:
                return self.lazy(hint, f"/{_ANY}(?:{node.then})/")
            return self.lazy(hint, f"(/{_ANY}/ & ~/{_ANY}(?:{node.avoid}){_ANY}/) /(?:{node.then})/")
        self.n += 1
        term = f"{hint.upper()}_TX{self.n}"
        if node.avoid is None:
            body = f"/{_ANY}/"
        elif node.at_start:
            body = f"/{_ANY}/ & ~/(?:{node.avoid}){_ANY}/"
        else:
            body = f"/{_ANY}/ & ~/{_ANY}(?:{node.avoid}){_ANY}/"
        self.extra.append(f"{term}: {body}")
        return term

    def atom(self, node: Node, hint: str) -> str:
        text = self.node(node, hint)
        if isinstance(node, Alt) or (isinstance(node, Seq) and len(node.items) > 1):
            return f"({text})"
        return text


def _text_length(node: Until) -> str:
    """The regex of text whose length is within the node's bounds."""
    if node.min == 0 and node.max is None:
        return ".*"
    if not node.strip:
        return "." + _bounds(node.min, node.max, lark=False)
    # the text without its last newline, if it ends with one, is within the bounds
    hi = node.max
    forms = ["." + _bounds(node.min, hi, lark=False) + "\\n"]
    if hi is None or hi > 0:
        forms.append("." + _bounds(max(node.min - 1, 0), None if hi is None else hi - 1, lark=False) + "[^\\n]")
    return "(?:" + "|".join(forms) + ")" + ("?" if node.min == 0 else "")


def _bounds(lo: int, hi: int | None, *, lark: bool) -> str:
    if (lo, hi) == (0, None):
        return "*"
    if (lo, hi) == (1, None):
        return "+"
    if (lo, hi) == (0, 1):
        return "?"
    if hi is None:
        return f"{{{lo},}}"
    if lo == hi:
        return f"{{{lo}}}"
    return f"{{{lo},{hi}}}"


# -- GBNF / xgrammar EBNF -------------------------------------------------------------------


def _bnf_char(cp: int, in_class: bool) -> str:
    ch = chr(cp)
    specials = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}
    if ch in specials:
        return specials[ch]
    if in_class and ch in "]^-[":
        return f"\\x{cp:02X}"
    if not in_class and ch == '"':
        return '\\"'
    if cp < 0x20 or cp == 0x7F:
        return f"\\x{cp:02X}"
    return ch


def _bnf_string(text: str) -> str:
    return '"' + "".join(_bnf_char(ord(c), False) for c in text) + '"'


def _bnf_class(cls: Class) -> str:
    parts = []
    for lo, hi in cls.ranges:
        parts.append(_bnf_char(lo, True) if lo == hi else f"{_bnf_char(lo, True)}-{_bnf_char(hi, True)}")
    return "[" + ("^" if cls.negated else "") + "".join(parts) + "]"


class _BnfWriter:
    def __init__(self, grammar: Grammar, flavour: str) -> None:
        self.g = grammar
        self.flavour = flavour
        self.extra: list[tuple[str, str]] = []
        self.until_rules: dict[tuple[str, tuple[str, ...]], str] = {}

    def name(self, name: str) -> str:
        return "root" if name == "start" else name.replace("_", "-")

    def write(self) -> str:
        lines = [(self.name(name), self.node(self.g.rules[name])) for name in self.g.used()]
        lines += self.extra
        return "".join(f"{name} ::= {body}\n" for name, body in lines)

    def node(self, node: Node) -> str:
        if isinstance(node, Lit):
            return _bnf_string(node.text)
        if isinstance(node, Ref):
            return self.name(node.name)
        if isinstance(node, Seq):
            return " ".join(self.atom(i) for i in node.items) if node.items else '""'
        if isinstance(node, Alt):
            return " | ".join(self.node(i) for i in node.items)
        if isinstance(node, Rep):
            return self.atom(node.item) + _bounds(node.min, node.max, lark=False)
        if isinstance(node, Class):
            return _bnf_class(node)
        if isinstance(node, Pattern):
            return _bnf_class(node.cls) + _bounds(node.min, node.max, lark=False)
        if isinstance(node, Until):
            return self.until(node)
        if isinstance(node, Json):
            raise AssertionError("%json is Lark only")
        if isinstance(node, Prose):
            raise ExportError(f"{self.flavour} cannot express free text that avoids a marker; use a lazy grammar")
        raise AssertionError(node)

    def atom(self, node: Node) -> str:
        text = self.node(node)
        if isinstance(node, Alt) or (isinstance(node, Seq) and len(node.items) > 1):
            return f"({text})"
        return text

    def until(self, node: Until) -> str:
        """Text holding no stop, then the marker: one rule per state of the automaton that
        searches for them (:mod:`._stops`).  A length bound needs a counter the notation
        lacks, so it is refused."""
        if node.min != 0 or node.max is not None:
            raise ExportError(
                f"{self.flavour} cannot bound the length of a text value (minLength/maxLength on a value "
                "written as raw text); remove the bound or use the lark format"
            )
        key = (node.stop, node.avoid)
        got = self.until_rules.get(key)
        if got is not None:
            return got
        base = f"until-{len(self.until_rules) + 1}"
        self.until_rules[key] = f"{base}-0"
        alphabet, moves = search_automaton(node.stop, node.avoid)
        others = _bnf_class(Class(tuple((ord(c), ord(c)) for c in alphabet), negated=True))
        for state in sorted(moves):
            alts = []
            for chars, target in moves[state]:
                cls = others if chars is None else _bnf_class(Class(tuple((ord(c), ord(c)) for c in sorted(chars))))
                alts.append(cls if target is None else f"{cls} {base}-{target}")
            self.extra.append((f"{base}-{state}", " | ".join(alts)))
        return f"{base}-0"


def json_text(schema: Any) -> str:
    return json.dumps(schema, ensure_ascii=False, sort_keys=False, separators=(",", ":"))
