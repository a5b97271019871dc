"""The strict literal reader: a ``py_value`` node of ``grammars/_pyliteral.lark`` becomes
a JSON value, or is refused.

Calls written as code are data, never code: only literals are values.  In Python: a
string (any quote, with escapes, ``r``/``u`` prefixes, adjacent strings joined), a
number (underscores, hex/octal/binary, no leading zeros), the constants
``True``/``False``/``None`` and JSON's ``true``/``false``/``null``, lists, tuples (as
lists) and dicts with string keys.  In TypeScript: ``'…'``/``"…"`` strings and backtick
templates without ``${…}``, the same numbers, ``true``/``false``/``null``/``undefined``,
arrays and objects with quoted or bare keys.  Anything else the grammar read — a
variable, an expression, a call, a set, a bytes literal or f-string, a number that is
not finite, a spelling of the other language — raises :class:`Refused` with the reason,
and the caller refuses the call it belongs to.  Nesting deeper than ``max_depth`` is
refused as ``limit_exceeded`` before anything deeper is visited, and the walk keeps its
own stack: no value costs Python stack, whatever ``max_depth`` a policy allows.

:func:`spellings` says which language a call is written in, from the spellings only one
language has; the token rules themselves (what a name, a number or a string is) are the
grammar's, never repeated here.
"""

from __future__ import annotations

import keyword
import math
import re
import unicodedata
from typing import Any

from .lalr import Node, Tok
from .pieces import piece

__all__ = [
    "CONSTANTS",
    "PYTHON",
    "RAW_BREAK",
    "TS_CONSTANTS",
    "TYPESCRIPT",
    "Refused",
    "decode_string",
    "is_identifier",
    "keyword_argument",
    "keyword_name",
    "literal",
    "name_pattern",
    "number",
    "spellings",
]

PYTHON, TYPESCRIPT = "python", "typescript"

#: The words that are literals in Python calls: Python's and JSON's spellings.
CONSTANTS: dict[str, Any] = {"True": True, "False": False, "None": None, "true": True, "false": False, "null": None}
#: The words that are literals in TypeScript calls.
TS_CONSTANTS: dict[str, Any] = {"true": True, "false": False, "null": None, "undefined": None}

_TEXT_PREFIXES = ("", "r", "u")  # lower-cased: prefixes that still make a text string
_SPECIAL = re.compile(r"[\\\r\n]")
_SIMPLE = {"\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_TS_SIMPLE = {
    "\\": "\\",
    "'": "'",
    '"': '"',
    "`": "`",
    "$": "$",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
}
_HEX = re.compile(r"[0-9A-Fa-f]+")
_OCTAL = re.compile(r"[0-7]{1,3}")
_PAIR = re.compile(r"[\ud800-\udbff][\udc00-\udfff]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_RADIX = re.compile(r"[+-]?0[xXoObB]")
_LEADING_ZERO = re.compile(r"[+-]?0[0-9_]*[1-9]")  # a zero before another digit of the integer part
_ESCAPES = re.compile(r"\\([\s\S])")  # escape pairs, left to right
_INTERPOLATION = re.compile(r"\\[\s\S]|\$\{")
_LINE_BREAKS = ("\n", "\r", "\u2028", "\u2029")
#: The repair a reader that takes ``notes`` reports for a raw line break in a one-line string.
RAW_BREAK = "raw line break in a string"


class Refused(ValueError):
    """A value that is not a literal (``kind`` is the diagnostic it becomes)."""

    def __init__(self, reason: str, kind: str = "arguments_invalid") -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind


def literal(
    node: Node,
    max_depth: int,
    constants: dict[str, Any] | None = None,
    *,
    language: str = PYTHON,
    templates: bool = False,
    notes: list[str] | None = None,
) -> Any:
    """The JSON value of a ``py_value`` node, read as ``language`` reads it (``templates``:
    a backtick template without ``${…}`` is a string in Python too, as code calls read it;
    ``notes``: a raw line break in a one-line string is read as written and noted there,
    :data:`RAW_BREAK`, rather than refused).

    The walk keeps its own stack (no recursion), so a value as deep as any policy allows
    costs no Python stack; values are read in source order, so the first refusal is the
    first one written.
    """
    if constants is None:
        constants = TS_CONSTANTS if language == TYPESCRIPT else CONSTANTS
    root: list[Any] = [None]
    # (py_value node, containers around it, where its value goes: holder and slot)
    stack: list[tuple[Node, int, Any, Any]] = [(node, 0, root, 0)]
    while stack:
        value_node, depth, holder, slot = stack.pop()
        atom = _scalar_or_container(value_node, constants, language, templates, notes)
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
                key = _key(parts[0], constants, language, notes)
                out[key] = None  # the first occurrence fixes the order, the last one the value
                tasks.append((parts[1], depth + 1, out, key))
        else:
            items = [c for c in atom.children if isinstance(c, Node)]
            if any(item.name == "py_kwarg" for item in items):
                raise Refused("a keyword argument inside a list or tuple")
            if atom.name == "py_tuple" and len(items) == 1 and not _has_comma(atom):
                stack.append((items[0], depth, holder, slot))  # (x) is x
                continue
            if atom.name == "py_tuple" and language == TYPESCRIPT:
                raise Refused("a tuple is Python, not TypeScript (write an array)")
            out = [None] * len(items)
            tasks = [(item, depth + 1, out, i) for i, item in enumerate(items)]
        holder[slot] = out
        stack.extend(reversed(tasks))
    return root[0]


def _scalar_or_container(
    node: Node, constants: dict[str, Any], language: str, templates: bool = False, notes: list[str] | None = None
) -> tuple[Any] | Node:
    """A value that holds no other value, as ``(value,)``, or the container atom to open."""
    atoms = [c for c in node.children if isinstance(c, Node)]
    text = _strings(atoms, language, notes)
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
    if atom.name == "py_template":
        if language != TYPESCRIPT and not templates:
            raise Refused("a backtick template is TypeScript, not Python")
        return (decode_template(_token(atom).value),)
    return atom


def _key(node: Node, constants: dict[str, Any], language: str, notes: list[str] | None = None) -> str:
    """A dict key: a string, or in TypeScript a bare identifier (anything else is refused
    without being opened)."""
    atoms = [c for c in node.children if isinstance(c, Node)]
    if len(atoms) == 1 and atoms[0].name == "py_name":
        word = _token(atoms[0]).value
        if language == TYPESCRIPT:
            return word  # {class: 1} and {$x: 1} are object keys, reserved words included
        if word not in constants:
            raise Refused(f"the dict key {word!r} is a name in Python, not a string (quote it)")
    if len(atoms) == 1 and atoms[0].name == "py_template":
        raise Refused("a template is not an object key")
    got = _scalar_or_container(node, constants, language, notes=notes)
    if isinstance(got, Node):
        raise Refused(f"a dict key that is not a string ({got.name.removeprefix('py_')})")
    if not isinstance(got[0], str):
        raise Refused(f"a dict key that is not a string ({type(got[0]).__name__})")
    return got[0]


def _strings(atoms: list[Node], language: str, notes: list[str] | None = None) -> str | None:
    """The text of a run of adjacent string literals (each maybe prefixed), else None."""
    parts: list[str] = []
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
            if language == TYPESCRIPT:
                raise Refused(f"a string prefix ({prefix}) is Python, not TypeScript")
            i += 1
            atom = nxt
        if atom.name != "py_string":
            return None
        token = _token(atom).value
        if language == TYPESCRIPT and (parts or (i + 1 < len(atoms) and atoms[i + 1].name == "py_string")):
            raise Refused("adjacent strings are joined in Python only; TypeScript needs +")
        if language == TYPESCRIPT and token[:3] in ("'''", '"""') and len(token) >= 6:
            raise Refused("a triple-quoted string is Python, not TypeScript")
        parts.append(decode_string(token, raw="r" in prefix.lower(), language=language, notes=notes))
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
    """A number literal (with an optional sign) as a JSON number: Python's spellings, and
    no leading zero before a digit or a separator (``01``, ``0_1``, ``0_1.5``), which
    neither Python integers nor TypeScript accept."""
    if _LEADING_ZERO.match(text) and not _RADIX.match(text):
        raise Refused(f"{text!r} is not a valid number (a leading zero)")
    try:
        if _RADIX.match(text) or not any(c in text for c in ".eE"):
            return int(text, 0)
        value = float(text)
    except ValueError:
        raise Refused(f"{text!r} is not a valid number") from None
    if not math.isfinite(value):
        raise Refused(f"{text!r} is not a finite number")
    return value


def decode_string(token: str, raw: bool = False, language: str = PYTHON, notes: list[str] | None = None) -> str:
    """The text of a quoted string literal (quotes included in ``token``), as ``language``
    reads it; escaped UTF-16 surrogate pairs are joined (JSON's habit), a lone one is refused.
    A raw line break in a one-line string is refused, or, given ``notes``, kept as written
    and noted there."""
    quote = token[:3] if token[:3] in ("'''", '"""') and len(token) >= 6 else token[:1]
    body = token[len(quote) : len(token) - len(quote)]
    return _decode(body, raw, multiline=len(quote) == 3, language=language, notes=notes)


def decode_template(token: str) -> str:
    """The text of a TypeScript backtick template without substitutions: ``${…}`` is an
    expression and is refused; a raw line break is the template's (CRLF read as LF)."""
    body = token[1:-1]
    for m in _INTERPOLATION.finditer(body):
        if m.group() == "${":
            raise Refused("a template with ${…} is an expression, not a literal")
    return _decode(body.replace("\r\n", "\n"), False, multiline=True, language=TYPESCRIPT)


def _decode(body: str, raw: bool, multiline: bool, language: str, notes: list[str] | None = None) -> str:
    escape = _escape_ts if language == TYPESCRIPT else _escape
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
            if not multiline:
                if notes is None:
                    raise Refused("a raw line break inside a one-line string")
                if RAW_BREAK not in notes:  # (kept as written, like a triple-quoted one's)
                    notes.append(RAW_BREAK)
            out.append(ch)
            pos = at + 1
            continue
        if at + 1 >= n:
            raise Refused("a string that ends in a backslash")
        if raw:
            out.append(body[at : at + 2])  # kept as written; the backslash only hid the quote
            pos = at + 2
            continue
        piece, pos = escape(body, at + 1)
        out.append(piece)
    text = "".join(out)
    if not raw and _SURROGATE.search(text):
        text = _PAIR.sub(lambda m: m.group().encode("utf-16", "surrogatepass").decode("utf-16"), text)
        if _SURROGATE.search(text):
            raise Refused("a lone UTF-16 surrogate escape")
    return text


def _escape(body: str, at: int) -> tuple[str, int]:
    """One Python escape sequence whose letter is at ``at``: (its text, where to go on)."""
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
        return _hex(body, at, ch, width)
    if ch == "N":
        close = body.find("}", at + 2, at + 2 + 128)
        if not body.startswith("{", at + 1) or close < 0:
            raise Refused("a malformed \\N{…} escape")
        try:
            return unicodedata.lookup(body[at + 2 : close]), close + 1
        except (KeyError, UnicodeError):  # a name with characters no name has (lone surrogates)
            raise Refused("an unknown character name in \\N{…}") from None
    return "\\" + ch, at + 1  # an unknown escape keeps its backslash (C:\dir survives)


def _escape_ts(body: str, at: int) -> tuple[str, int]:
    """One TypeScript (strict-mode ECMAScript) escape sequence whose letter is at ``at``."""
    ch = body[at]
    if ch in _TS_SIMPLE:
        return _TS_SIMPLE[ch], at + 1
    if ch in _LINE_BREAKS:  # a line continuation
        return "", at + 2 if body.startswith("\r\n", at) else at + 1
    if ch == "0" and not body[at + 1 : at + 2].isdigit():
        return "\0", at + 1
    if ch.isdigit():
        raise Refused(f"an octal escape (\\{ch}…) is not allowed in TypeScript")
    if ch == "x":
        return _hex(body, at, ch, 2)
    if ch == "u":
        if body.startswith("{", at + 1):
            close = body.find("}", at + 2, at + 2 + 16)
            digits = body[at + 2 : close] if close >= 0 else ""
            if not digits or not _HEX.fullmatch(digits) or int(digits, 16) > 0x10FFFF:
                raise Refused("a malformed \\u{…} escape")
            return chr(int(digits, 16)), close + 1
        return _hex(body, at, ch, 4)
    return "\\" + ch, at + 1  # an unknown escape keeps its backslash, as in Python (C:\dir survives)


def _hex(body: str, at: int, ch: str, width: int) -> tuple[str, int]:
    digits = body[at + 1 : at + 1 + width]
    if len(digits) != width or not _HEX.fullmatch(digits):
        raise Refused(f"a malformed \\{ch} escape")
    code = int(digits, 16)
    if code > 0x10FFFF:
        raise Refused(f"\\{ch}{digits} is not a character")
    return chr(code), at + 1 + width


# -- which language a call is written in ---------------------------------------------------


def spellings(node: Node) -> tuple[list[str], list[str]]:
    """The spellings under ``node`` that only Python has, and those only TypeScript has
    (each described for a diagnostic).  Comments, ``'…'``/``"…"`` strings, backtick
    strings (code calls read them in both; ``${…}`` is refused in both), numbers,
    ``true``/``false``/``null``, lists and dicts with quoted keys are both languages'."""
    python: list[str] = []
    typescript: list[str] = []
    stack: list[Any] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Tok):
            if item.type == "PY_NAME" and "$" in item.value:
                typescript.append(f"$ in the name {item.value!r}")
            continue
        name = item.name
        if name == "py_kwarg":
            python.append("a keyword argument")
        elif name == "py_name":
            word = _token(item).value
            if word in ("True", "False", "None"):
                python.append(word)
            elif word == "undefined":
                typescript.append(word)
        elif name == "py_string":
            _string_spellings(_token(item).value, python, typescript)
        elif name == "py_tuple" and (_has_comma(item) or not any(isinstance(c, Node) for c in item.children)):
            python.append("a tuple")
        elif name == "py_value":
            atoms = [c for c in item.children if isinstance(c, Node)]
            kinds = [a.name for a in atoms]
            if "py_string" in kinds and len(kinds) > 1 and set(kinds) <= {"py_string", "py_name"}:
                python.append("a string prefix or adjacent strings")
        elif name == "py_entry":
            key = next((c for c in item.children if isinstance(c, Node)), None)
            parts = [c for c in key.children if isinstance(c, Node)] if key is not None else []
            if (
                len(parts) == 1
                and parts[0].name == "py_name"
                and _token(parts[0]).value not in ("True", "False", "None")
            ):
                typescript.append(f"the bare key {_token(parts[0]).value!r}")
        stack.extend(reversed(item.children))
    return python, typescript


def _string_spellings(token: str, python: list[str], typescript: list[str]) -> None:
    if token[:3] in ("'''", '"""') and len(token) >= 6:
        python.append("a triple-quoted string")
    for m in _ESCAPES.finditer(token, 1, len(token) - 1):
        ch = m.group(1)
        if ch == "u" and token.startswith("{", m.end()):
            typescript.append("a \\u{…} escape")
        elif ch == "`":
            typescript.append("the escape \\`")
        elif ch in "aNU" or ch in "1234567" or (ch == "0" and token[m.end() : m.end() + 1].isdigit()):
            python.append(f"the escape \\{ch}")


def is_identifier(name: str, language: str) -> bool:
    """Whether ``name`` can be written as a function or parameter name in ``language``:
    it is a name as the grammar reads one (``PY_NAME`` in ``_pyliteral.lark``), holds
    ``$`` only in TypeScript, and is not a reserved word of the language."""
    if not isinstance(name, str) or name_pattern().fullmatch(name) is None:
        return False
    if language == TYPESCRIPT:
        return _terminal("TS_RESERVED").fullmatch(name) is None
    return "$" not in name and not keyword.iskeyword(name)


def keyword_name(tok: Tok) -> str:
    """The name of a keyword argument (``name=value``): a Python identifier, since keyword
    arguments are Python's; ``$value=1`` or ``class=1`` is refused."""
    if not is_identifier(tok.value, PYTHON):
        raise Refused(f"{tok.value!r} is not a Python identifier, so not a keyword argument")
    return tok.value


def keyword_argument(
    item: Node, max_depth: int, *, language: str = PYTHON, templates: bool = False, notes: list[str] | None = None
) -> tuple[str, Any]:
    """A ``py_kwarg`` node (``name=value``): its keyword and the JSON value of its literal
    (``notes``: as :func:`literal` takes it)."""
    key = item.children[0]
    value = item.children[-1]
    assert isinstance(key, Tok) and isinstance(value, Node)
    return keyword_name(key), literal(value, max_depth, language=language, templates=templates, notes=notes)


def name_pattern() -> re.Pattern[str]:
    """The grammar's name terminal (what a name is), loaded once from the shared piece."""
    return _terminal("PY_NAME")


_TERMINALS: dict[str, re.Pattern[str]] = {}


def _terminal(name: str) -> re.Pattern[str]:
    """A terminal of ``_pyliteral.lark``: the grammar says what a name or a reserved word is."""
    got = _TERMINALS.get(name)
    if got is None:
        term = piece("_pyliteral")[name]
        assert term.pattern is not None
        got = _TERMINALS[name] = term.pattern.regex
    return got


def _token(atom: Node) -> Tok:
    tok = atom.children[0]
    assert isinstance(tok, Tok)
    return tok


def _has_comma(node: Node) -> bool:
    return any(isinstance(c, Tok) and c.type == "COMMA" for c in node.children)
