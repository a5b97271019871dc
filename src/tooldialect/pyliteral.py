"""The strict literal reader: a ``py_value`` node of ``grammars/_pyliteral.lark`` becomes
a JSON value, or is refused.

Calls written as Python code are data, never code: only literals are values.  A
string (any quote, with escapes, ``r``/``u`` prefixes, adjacent strings joined), a
number (Python's spellings: underscores, hex/octal/binary, no leading zeros), the
constants ``True``/``False``/``None`` and JSON's ``true``/``false``/``null``, lists,
tuples (as lists) and dicts with string keys.  Anything else the grammar read — a
variable, an expression, a call, a set, a bytes literal or f-string, a number that is
not finite — raises :class:`Refused` with the reason, and the caller refuses the call
it belongs to.  Nesting deeper than ``max_depth`` is refused as ``limit_exceeded``
before anything deeper is visited, and the walk keeps its own stack: no value costs
Python stack, whatever ``max_depth`` a policy allows.
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Any

from .lalr import Node, Tok

__all__ = ["CONSTANTS", "Refused", "decode_string", "literal", "number"]

#: The words that are literals: Python's and JSON's spellings.
CONSTANTS: dict[str, Any] = {"True": True, "False": False, "None": None, "true": True, "false": False, "null": None}

_TEXT_PREFIXES = ("", "r", "u")  # lower-cased: prefixes that still make a text string
_SPECIAL = re.compile(r"[\\\r\n]")
_SIMPLE = {"\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_HEX = re.compile(r"[0-9A-Fa-f]+")
_OCTAL = re.compile(r"[0-7]{1,3}")
_PAIR = re.compile(r"[\ud800-\udbff][\udc00-\udfff]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_RADIX = re.compile(r"[+-]?0[xXoObB]")


class Refused(ValueError):
    """A value that is not a literal (``kind`` is the diagnostic it becomes)."""

    def __init__(self, reason: str, kind: str = "arguments_invalid") -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind


def literal(node: Node, max_depth: int, constants: dict[str, Any] = CONSTANTS) -> Any:
    """The JSON value of a ``py_value`` node.

    The walk keeps its own stack (no recursion), so a value as deep as any policy allows
    costs no Python stack; values are read in source order, so the first refusal is the
    first one written.
    """
    root: list[Any] = [None]
    # (py_value node, containers around it, where its value goes: holder and slot)
    stack: list[tuple[Node, int, Any, Any]] = [(node, 0, root, 0)]
    while stack:
        value_node, depth, holder, slot = stack.pop()
        atom = _scalar_or_container(value_node, constants)
        if not isinstance(atom, Node):
            holder[slot] = atom[0]
            continue
        if depth + 1 > max_depth:
            raise Refused(f"nesting deeper than max_depth={max_depth}", "limit_exceeded")
        tasks: list[tuple[Node, int, Any, Any]] = []
        if atom.name == "py_dict":
            out: Any = {}
            for entry in (c for c in atom.children if isinstance(c, Node)):
                parts = [c for c in entry.children if isinstance(c, Node)]
                if len(parts) != 2:
                    raise Refused("a set, not a dict")
                key = _key(parts[0], constants)
                out[key] = None  # the first occurrence fixes the order, the last one the value
                tasks.append((parts[1], depth + 1, out, key))
        else:
            items = [c for c in atom.children if isinstance(c, Node)]
            if any(item.name == "py_kwarg" for item in items):
                raise Refused("a keyword argument inside a list or tuple")
            if atom.name == "py_tuple" and len(items) == 1 and not _has_comma(atom):
                stack.append((items[0], depth, holder, slot))  # (x) is x
                continue
            out = [None] * len(items)
            tasks = [(item, depth + 1, out, i) for i, item in enumerate(items)]
        holder[slot] = out
        stack.extend(reversed(tasks))
    return root[0]


def _scalar_or_container(node: Node, constants: dict[str, Any]) -> tuple[Any] | Node:
    """A value that holds no other value, as ``(value,)``, or the container atom to open."""
    atoms = [c for c in node.children if isinstance(c, Node)]
    text = _strings(atoms)
    if text is not None:
        return (text,)
    if len(atoms) != 1:
        raise Refused(_why_not(atoms))
    atom = atoms[0]
    if atom.name == "py_number":
        return (number(_token(atom).value),)
    if atom.name == "py_name":
        word = _token(atom).value
        if word in constants:
            return (constants[word],)
        raise Refused(f"{word!r} is a name, not a literal")
    if atom.name == "py_op":
        raise Refused(f"{_token(atom).value!r} is an operator, not a literal")
    return atom


def _key(node: Node, constants: dict[str, Any]) -> str:
    """A dict key: a string (anything else is refused without being opened)."""
    got = _scalar_or_container(node, constants)
    if isinstance(got, Node):
        raise Refused(f"a dict key that is not a string ({got.name.removeprefix('py_')})")
    if not isinstance(got[0], str):
        raise Refused(f"a dict key that is not a string ({type(got[0]).__name__})")
    return got[0]


def _strings(atoms: list[Node]) -> str | None:
    """The text of a run of adjacent string literals (each maybe prefixed), else None."""
    parts = []
    i = 0
    while i < len(atoms):
        atom = atoms[i]
        prefix = ""
        if atom.name == "py_name" and i + 1 < len(atoms) and atoms[i + 1].name == "py_string":
            nxt = atoms[i + 1]
            if atom.end != nxt.start:
                return None
            prefix = _token(atom).value
            low = prefix.lower()
            if low not in _TEXT_PREFIXES:
                if set(low) <= set("rb") and "b" in low and len(low) <= 2:
                    raise Refused("a bytes literal is not text")
                if set(low) <= set("rf") and "f" in low and len(low) <= 2:
                    raise Refused("an f-string is an expression, not a literal")
                return None
            i += 1
            atom = nxt
        if atom.name != "py_string":
            return None
        parts.append(decode_string(_token(atom).value, raw="r" in prefix.lower()))
        i += 1
    return "".join(parts) if parts else None


def _why_not(atoms: list[Node]) -> str:
    names = [a.name for a in atoms]
    for i in range(len(names) - 1):
        if names[i] == "py_name" and names[i + 1] == "py_tuple":
            return f"a call ({_token(atoms[i]).value}(…)) inside an argument"
    signed = any(a.name == "py_number" and _token(a).value[:1] in "+-" for a in atoms[1:])
    if "py_op" in names or signed:  # 1+2 reads as the numbers 1 and +2
        return "an expression, not a literal"
    return "several values side by side, not one literal"


def number(text: str) -> int | float:
    """A Python number literal (with an optional sign) as a JSON number."""
    try:
        if _RADIX.match(text) or not any(c in text for c in ".eE"):
            return int(text, 0)
        value = float(text)
    except ValueError:
        raise Refused(f"{text!r} is not a valid number") from None
    if not math.isfinite(value):
        raise Refused(f"{text!r} is not a finite number")
    return value


def decode_string(token: str, raw: bool = False) -> str:
    """The text of a quoted string literal (quotes included in ``token``), as Python
    reads it; escaped UTF-16 surrogate pairs are joined (JSON's habit), a lone one is refused."""
    quote = token[:3] if token[:3] in ("'''", '"""') and len(token) >= 6 else token[:1]
    body = token[len(quote) : len(token) - len(quote)]
    triple = len(quote) == 3
    out: list[str] = []
    pos = 0
    n = len(body)
    while True:
        m = _SPECIAL.search(body, pos)
        if m is None:
            out.append(body[pos:])
            break
        at = m.start()
        out.append(body[pos:at])
        ch = body[at]
        if ch != "\\":
            if not triple:
                raise Refused("a raw line break inside a one-line string")
            out.append(ch)
            pos = at + 1
            continue
        if at + 1 >= n:
            raise Refused("a string that ends in a backslash")
        if raw:
            out.append(body[at : at + 2])  # kept as written; the backslash only hid the quote
            pos = at + 2
            continue
        piece, pos = _escape(body, at + 1)
        out.append(piece)
    text = "".join(out)
    if not raw and _SURROGATE.search(text):
        text = _PAIR.sub(lambda m: m.group().encode("utf-16", "surrogatepass").decode("utf-16"), text)
        if _SURROGATE.search(text):
            raise Refused("a lone UTF-16 surrogate escape")
    return text


def _escape(body: str, at: int) -> tuple[str, int]:
    """One escape sequence whose letter is at ``at``: (its text, where to go on)."""
    ch = body[at]
    if ch in _SIMPLE:
        return _SIMPLE[ch], at + 1
    if ch == "\n":
        return "", at + 1
    if ch == "\r":
        return "", at + 2 if body.startswith("\r\n", at) else at + 1
    octal = _OCTAL.match(body, at)
    if octal is not None:
        return chr(int(octal.group(), 8)), octal.end()
    width = {"x": 2, "u": 4, "U": 8}.get(ch)
    if width is not None:
        digits = body[at + 1 : at + 1 + width]
        if len(digits) != width or not _HEX.fullmatch(digits):
            raise Refused(f"a malformed \\{ch} escape")
        code = int(digits, 16)
        if code > 0x10FFFF:
            raise Refused(f"\\{ch}{digits} is not a character")
        return chr(code), at + 1 + width
    if ch == "N":
        close = body.find("}", at + 2, at + 2 + 128)
        if not body.startswith("{", at + 1) or close < 0:
            raise Refused("a malformed \\N{…} escape")
        try:
            return unicodedata.lookup(body[at + 2 : close]), close + 1
        except (KeyError, UnicodeError):  # a name with characters no name has (lone surrogates)
            raise Refused("an unknown character name in \\N{…}") from None
    return "\\" + ch, at + 1  # an unknown escape keeps its backslash (C:\dir survives)


def _token(atom: Node) -> Tok:
    tok = atom.children[0]
    assert isinstance(tok, Tok)
    return tok


def _has_comma(node: Node) -> bool:
    return any(isinstance(c, Tok) and c.type == "COMMA" for c in node.children)

