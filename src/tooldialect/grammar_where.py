"""Where in a grammar file a compile error points: the line of the use, definition or
statement a message is about, so that every :class:`~tooldialect.GrammarError` a grammar
raises cites ``FILE:LINE`` (``nexusraven.lark:12``).

lark's own messages name symbols but not lines (``Rule 'name' used but not defined (in
rule call)``); this module finds the line by reading the file's text, the way a reader
would: a definition is a line that begins with the symbol and a colon, and runs on over
the lines that continue it (indented, or beginning with ``|``)."""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["definition_line", "locate", "undefined_hint"]

_UNDEFINED = re.compile(r"(?:Rule|Terminal) '([^']+)' used but not defined \(in (?:rule|terminal) ([^)\s]+)\)")
_UNDEFINED_TERMINAL = re.compile(r"Terminal used but not defined: (\w+)")
_TWICE = re.compile(r"(?:Rule|Terminal) '([^']+)' defined more than once")
_AT_LINE = re.compile(r"at line (\d+),? column (\d+)")
_IGNORED = re.compile(r"Terminals \{([^}]*)\} were marked to ignore")
_TERMINAL = re.compile(r"\b(?:terminal|opener) ([A-Z_][A-Z0-9_]*)\b")
_DECLARE = re.compile(r"%declare ([A-Z_][A-Z0-9_]*)")
_IGNORE = re.compile(r"%ignore ([A-Z_][A-Z0-9_]*)")
_RULES = re.compile(r"LALR conflict in rules? '([\w.]+)'")
_START = re.compile(r"rule 'start' begins with")
_RULE = re.compile(r"rule '(\w+)'")
_WRITE = re.compile(r"line '// (write [a-z]+(?: [a-z0-9._-]+)?):")
_WRITE_LINE = re.compile(r"//[ ]?(write [a-z]+(?: [a-z0-9._-]+)?)[ \t]*:")
#: The head of a definition (``?name.2:``), and a line that goes on with it.
_HEAD = re.compile(r"[ \t]*[?!]?([A-Za-z_][A-Za-z0-9_]*)(?:\.-?[0-9]+)?[ \t]*:")
_GOES_ON = re.compile(r"[ \t]+\S|[ \t]*\|")
#: A rule or terminal name where a grammar uses it (not a dotted import path's part).
_NAME = re.compile(r"(?<![\w.])[A-Za-z_][A-Za-z0-9_]*")


def _code(line: str) -> str:
    """A line without its ``//`` comment (quoted strings may hold ``//``)."""
    out = re.sub(r'"(?:[^"\\\n]|\\.)*"i?|/(?:[^/\\\n]|\\.)+/[imslux]*', lambda m: " " * len(m.group(0)), line)
    cut = out.find("//")
    return line[:cut] if cut >= 0 else line


def _definitions(lines: list[str], symbol: str) -> Iterator[tuple[int, int]]:
    """(first, last) 0-based line numbers of each definition of ``symbol``."""
    for i, line in enumerate(lines):
        m = _HEAD.match(line)
        if m and m.group(1) == symbol:
            j = i + 1
            while j < len(lines) and _GOES_ON.match(lines[j]) and not lines[j].lstrip().startswith("//"):
                j += 1
            yield i, j - 1


def definition_line(text: str, symbol: str) -> int | None:
    """The 1-based line that defines ``symbol`` (its first definition), or None."""
    for first, _last in _definitions(text.splitlines(), symbol):
        return first + 1
    return None


def _use_line(text: str, symbol: str, within: str | None) -> int | None:
    """The 1-based line of the first use of ``symbol``: inside the definition of ``within``
    when given, else anywhere but its own definition and comments."""
    lines = text.splitlines()
    if within is not None:
        for first, last in _definitions(lines, within):
            for i in range(first, last + 1):
                code = _code(lines[i])
                body = code.split(":", 1)[1] if i == first and ":" in code else code
                if symbol in _NAME.findall(body):
                    return i + 1
        return None
    own = {i for first, last in _definitions(lines, symbol) for i in range(first, last + 1)}
    for i, line in enumerate(lines):
        if i not in own and not line.lstrip().startswith(("//", "%ignore")) and symbol in _NAME.findall(_code(line)):
            return i + 1
    return None


def locate(text: str, message: str) -> int | None:
    """The 1-based line of ``text`` (a grammar file) that ``message`` (a compile error, lark's
    or ours) is about, or None when it names nothing found in this file."""
    m = _AT_LINE.search(message)
    if m:
        return int(m.group(1))
    m = _UNDEFINED.search(message)
    if m:
        return _use_line(text, m.group(1), m.group(2))
    m = _UNDEFINED_TERMINAL.search(message)
    if m:
        return _use_line(text, m.group(1), None)
    m = _TWICE.search(message)
    if m:
        found = list(_definitions(text.splitlines(), m.group(1)))
        return found[-1][0] + 1 if found else None
    m = _IGNORED.search(message)
    if m:
        return next((i + 1 for i, line in enumerate(text.splitlines()) if line.startswith("%ignore")), None)
    for rx, directive in ((_DECLARE, "%declare"), (_IGNORE, "%ignore")):
        m = rx.search(message)
        if m:
            named = m.group(1)
            lines = text.splitlines()
            return next((i + 1 for i, ln in enumerate(lines) if ln.startswith(directive) and named in ln.split()), None)
    for rx in (_TERMINAL, _RULES):
        m = rx.search(message)
        if m:
            return definition_line(text, m.group(1))
    if _START.search(message):
        return definition_line(text, "start")
    m = _WRITE.search(message)
    if m:
        kind = m.group(1).split()
        for i, line in enumerate(text.splitlines()):
            head = _WRITE_LINE.match(line.strip())
            if head and head.group(1).split() == kind:
                return i + 1
        return None
    m = _RULE.search(message)
    return definition_line(text, m.group(1)) if m else None


def undefined_hint(message: str) -> str:
    """What to do about a symbol lark says is used but not defined ('' for other messages)."""
    m = _UNDEFINED.search(message) or _UNDEFINED_TERMINAL.search(message)
    if m is None:
        return ""
    symbol = m.group(1)
    return f": define it in this file ('{symbol}: …') or %import it by name from the grammar that defines it"
