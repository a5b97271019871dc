"""Regexes in the Rust syntax llguidance reads (inside a Lark export's ``/…/``).

Grammars and writers spell markers as Python regexes; a Lark export writes text as a regex
that matches it literally (:func:`rx_escape`) and text to avoid as its Python regex
rewritten (:func:`rust_regex`).  The grammar notation (:mod:`._ir`) and the reply builder
both spell regexes through here.
"""

from __future__ import annotations

import re

__all__ = ["rust_regex", "rx_escape"]

_RX_META = set("\\.+*?()|[]{}^$/-&~#")


def rx_escape(text: str) -> str:
    """``text`` as a regex that matches it literally (Rust regex syntax, inside ``/…/``)."""
    out = []
    for ch in text:
        if ch in _RX_META:
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{{{ord(ch):x}}}")
        else:
            out.append(ch)
    return "".join(out)


def rust_regex(pattern: str) -> str:
    """A Python regex (as grammars and writers spell markers) in the Rust syntax llguidance
    reads, for text to *avoid*: an escaped punctuation character or a control character is
    written the Rust way, a lazy quantifier becomes greedy (the same set of matches), and a
    repetition bounded above 16 becomes unbounded — a wider set, so the text avoiding it is
    stricter, never looser, and llguidance's negation stays small."""
    out = []
    i = 0
    in_class = False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            out.append("\\" + nxt if nxt.isascii() and nxt.isalnum() else rx_escape(nxt))
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "{":
            m = _BOUNDS.match(pattern, i)
            if m is not None:
                lo, hi = m.group(1), m.group(2)
                wide = hi is not None and hi != "" and int(hi) > 16
                out.append(f"{{{lo},}}" if wide else m.group(0))
                i = m.end()
                if i < len(pattern) and pattern[i] == "?":
                    i += 1  # lazy: the same matches
                continue
        elif ch in "*+?" and i + 1 < len(pattern) and pattern[i + 1] == "?" and out and out[-1] != "(":
            out.append(ch)
            i += 2
            continue
        out.append(rx_escape(ch) if ch in "\n\r\t/" or ord(ch) < 0x20 else ch)
        i += 1
    return "".join(out)


_BOUNDS = re.compile(r"\{(\d{1,6})(?:,(\d{0,6}))?\}")
