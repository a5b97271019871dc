"""Streaming a call's arguments as they arrive, without ever taking a fragment back.

A stream sends a call's ``arguments_json`` in fragments whose concatenation is exactly
the final ``arguments_json`` (DESIGN §4).  Two kinds of bodies stream:

* **JSON arguments** (``{…}`` written by the model).  :class:`StrictPrefix` follows the
  text as strict JSON and marks *safe points*: places where everything before is a
  prefix of valid JSON that can still be finished to say whatever the arguments turn out
  to be.  The text up to the last safe point is sent as it arrives.  When the model's
  JSON is strict, the fragments are its text byte for byte.  When it needed repairs
  (single quotes, a trailing comma …), streaming stops before the first character strict
  JSON refuses, and :func:`finish_json` writes the rest so that the whole parses to the
  repaired arguments: ``arguments_json`` is the model's strict prefix followed by a
  canonical tail.  Both depend only on the text, never on how it was cut.
* **Text-valued parameters** (XML parameters, GLM values …).  :func:`member` encodes one
  ``"key": value`` member the way ``json.dumps`` writes it; the object is written member
  by member in the order the model wrote them (a repeated key is written again: the
  last one wins, in ``arguments`` and for any JSON reader).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Final, cast

__all__ = ["StrictPrefix", "args_prefix", "finish_json", "member"]

_WS: Final = " \t\r\n"
_ESCAPES: Final = '"\\/bfnrt'
_HEX: Final = "0123456789abcdefABCDEF"
_LITERALS: Final = ("true", "false", "null")
_SCALAR_CHARS: Final = "0123456789+-.eE"
_MISSING: Final = object()
#: ``match`` of a pattern that matches the empty string, so it finds a match at any offset.
#: The runs below are asked for where their first character is, where ``*`` reads as ``+``.
_AlwaysMatch = Callable[[str, int], "re.Match[str]"]
_plain_run_match: Final = cast(
    _AlwaysMatch, re.compile(r'[^"\\\x00-\x1f]*').match
)  # string characters that need no look
_number_run_match: Final = cast(_AlwaysMatch, re.compile(r"[0-9+\-.eE]*").match)  # _SCALAR_CHARS
_ws_run_match: Final = cast(_AlwaysMatch, re.compile(r"[ \t\r\n]*").match)  # _WS
_MAX_NUMBER: Final = 4096  # a number token longer than this breaks strict reading


class StrictPrefix:
    """Follows one JSON value as strict JSON, one piece at a time, in linear time.

    ``safe`` is the length of the longest prefix read so far that ends at a safe point:
    right after a bracket opens, right after a value ends, or inside a string value after
    a whole character.  ``coarse`` keeps only the safe points where a member of the
    arguments object ends (or that object opens or closes): what a reader that keeps
    complete members only (``Policy(truncated="keep")``) can stand by.  ``broken``
    says strict JSON refused a character; no safe point comes after it.

    With ``arg_keys``, the value is read as a call object, or an array of them:
    ``args[elem]`` is ``[start, end]``, where the value of the first member named by one
    of those keys begins and ends (end -1 while open) in the call object ``elem`` (0 for
    a root object, the element's index in a root array), when that value is an object.
    """

    __slots__ = (
        "max_depth",
        "arg_keys",
        "coarse",
        "safe",
        "broken",
        "done",
        "args",
        "elem",
        "_n",
        "_stack",
        "_state",
        "_in_key",
        "_esc",
        "_tok",
        "_key",
        "_arg_seen",
    )

    def __init__(self, max_depth: int = 64, arg_keys: tuple[str, ...] = (), coarse: bool = False) -> None:
        self.max_depth = max_depth
        self.arg_keys = arg_keys
        self.coarse = coarse
        self.safe = 0
        self.broken = False
        self.done = False
        self.args: dict[int, list[int]] = {}
        self.elem = 0  # the call object being read (an element of a root array)
        self._n = 0  # characters consumed
        self._stack: list[str] = []
        # "value", "value[" (after "["), "key" (after "{"), "key!" (after "," in an
        # object), "colon", "comma" (after a value), "str", "num", "lit"
        self._state = "value"
        self._in_key = False
        self._esc = ""  # inside a string: the escape read so far ("\\", "\\u12" …)
        self._tok = ""  # the number or literal being read
        self._key: list[str] | str | None = (
            None  # the root object's member key: its characters while read, then the key
        )
        self._arg_seen = False

    @property
    def consumed(self) -> int:
        return self._n

    def feed(self, piece: str) -> None:
        if self.broken or self.done:
            return
        i, n = 0, len(piece)
        while i < n:
            # a run that needs no character-by-character look is read in one step
            ch = piece[i]
            state = self._state
            if state == "str":
                if not self._esc:
                    if ch != '"' and ch != "\\" and ch >= " ":
                        # plain characters: what _string and _char do for each, once
                        end = _plain_run_match(piece, i).end()
                        if not self._in_key:
                            self._mark(self._n + end - i, len(self._stack) + 1)
                        elif isinstance(self._key, list):
                            self._key.extend(piece[i:end])
                            if len(self._key) > 256:
                                self._key = None
                        self._n += end - i
                        i = end
                        continue
                    if ch == "\\" and i + 1 < n and piece[i + 1] in _ESCAPES:
                        # a whole two-character escape
                        self._n += 1
                        self._char(piece[i : i + 2])
                        self._n += 1
                        i += 2
                        continue
            elif state == "num":
                if ch in _SCALAR_CHARS:
                    i = self._number_run(piece, i)
                    if self.broken:
                        return
                    continue
            elif state != "lit" and ch in _WS:  # white space between tokens: nothing to note
                end = _ws_run_match(piece, i).end() if i + 1 < n and piece[i + 1] in _WS else i + 1
                self._n += end - i
                i = end
                continue
            self._step(ch)
            if self.broken or self.done:
                return
            self._n += 1
            i += 1

    def _number_run(self, piece: str, i: int) -> int:
        """Read the characters of a number as _scalar reads each, up to the length cap:
        where it stopped."""
        run = _number_run_match(piece, i).end() - i
        room = _MAX_NUMBER + 1 - len(self._tok)  # characters it may still take
        if run > room:
            run = room
            self.broken = True  # no number is that long
        self._tok += piece[i : i + run]
        self._n += run
        return i + run

    def in_plain_string(self) -> bool:
        """Inside a string value (not a key), still reading, with no escape pending but
        perhaps the backslash that begins one (a two-character escape or ``\\u`` follows)."""
        return (
            self._state == "str" and self._esc in ("", "\\") and not self._in_key and not self.broken and not self.done
        )

    def flush(self) -> None:
        """The text ends here: a number or literal read to its end is a whole value."""
        if self._state in ("num", "lit") and not self.broken:
            tok = self._tok
            if (tok in _LITERALS) if self._state == "lit" else _is_number(tok):
                self._tok = ""
                self._n -= 1
                self._end_value()
                self._n += 1

    # -- one character ------------------------------------------------------------------

    def _mark(self, end: int, depth: int) -> None:
        """A safe point at ``end``, reached with ``depth`` containers open."""
        if not self.coarse or depth <= self._members_depth():
            self.safe = end

    def _members_depth(self) -> int:
        """How deep the arguments object's members are: what ``coarse`` keeps."""
        if not self.arg_keys:
            return 1
        return 2 if not self._stack or self._stack[0] == "{" else 3

    def _step(self, ch: str) -> None:
        st = self._state
        if st == "str":
            self._string(ch)
            return
        if st == "num" or st == "lit":
            if self._scalar(ch):
                return
            if self.broken:
                return
            st = self._state
        if ch in _WS:
            return
        if st == "value[":
            if ch == "]":
                self._close()
                return
            st = self._state = "value"
        if ch == '"' and st in ("value", "key", "key!"):
            self._in_key = st != "value"
            self._state = "str"
            self._esc = ""
            if self._in_key:
                if self._at_call_depth():
                    self._key = []
            else:
                self._begin_value()
                self._mark(self._n + 1, len(self._stack) + 1)
            return
        if st == "value":
            if ch == "{" or ch == "[":
                if len(self._stack) >= self.max_depth:
                    self.broken = True
                    return
                self._begin_value(ch)
                self._stack.append(ch)
                self._state = "key" if ch == "{" else "value["
                self._mark(self._n + 1, len(self._stack))
                return
            if ch == "-" or "0" <= ch <= "9" or ch in "tfn":
                self._begin_value()
                self._state = "lit" if ch in "tfn" else "num"
                self._tok = ch
                return
            self.broken = True
            return
        if st == "key":
            if ch == "}":
                self._close()
                return
            self.broken = True
            return
        if st == "colon":
            if ch == ":":
                self._state = "value"
                return
            self.broken = True
            return
        if st == "comma":
            top = self._stack[-1]
            if ch == ",":
                self._state = "key!" if top == "{" else "value"
                if self.arg_keys and top == "[" and len(self._stack) == 1:
                    self.elem += 1  # an element that was not an object
                    self._arg_seen = False
                return
            if (ch == "}" and top == "{") or (ch == "]" and top == "["):
                self._close()
                return
        self.broken = True

    def _at_call_depth(self) -> bool:
        """Inside a call object: the root object, or an object element of a root array."""
        stack = self._stack
        return (len(stack) == 1 and stack[0] == "{") or (len(stack) == 2 and stack[0] == "[" and stack[1] == "{")

    def _begin_value(self, ch: str = "") -> None:
        """A member's value begins at ``self._n`` (``ch``: its bracket, if any)."""
        if self.arg_keys and not self._arg_seen and self._at_call_depth() and self._key_is_arg():
            self._arg_seen = True
            if ch == "{":
                self.args[self.elem] = [self._n, -1]

    def _key_is_arg(self) -> bool:
        key = self._key
        if not isinstance(key, str):
            return False
        return key in self.arg_keys

    def _end_value(self) -> None:
        """A value ended at ``self._n + 1``."""
        if not self._stack:
            self.done = True
            self.safe = self._n + 1
            return
        self._state = "comma"
        self._mark(self._n + 1, len(self._stack))

    def _close(self) -> None:
        self._stack.pop()
        if self.arg_keys and self._at_call_depth():
            span = self.args.get(self.elem)
            if span is not None and span[1] < 0:
                span[1] = self._n + 1  # the arguments object closed
            self._key = None
        self._end_value()

    def _string(self, ch: str) -> None:
        esc = self._esc
        if esc:
            if esc == "\\":
                if ch == "u":
                    self._esc = "\\u"
                    return
                if ch not in _ESCAPES:
                    self.broken = True
                    return
                self._esc = ""
                self._char("\\" + ch)
                return
            if ch not in _HEX:
                self.broken = True
                return
            esc += ch
            if len(esc) < 6:
                self._esc = esc
                return
            self._esc = ""
            self._char(esc)
            return
        if ch == "\\":
            self._esc = "\\"
            return
        if ch == '"':
            if self._in_key:
                self._in_key = False
                if isinstance(self._key, list):
                    try:
                        self._key = json.loads('"' + "".join(self._key) + '"')
                    except ValueError:
                        self._key = None
                self._state = "colon"
                return
            self._end_value()
            return
        if ch < " ":
            self.broken = True  # a raw control character
            return
        self._char(ch)

    def _char(self, s: str) -> None:
        """One whole character (or escape) of a string."""
        if self._in_key:
            if isinstance(self._key, list):
                self._key.append(s)
                if len(self._key) > 256:
                    self._key = None  # no arguments key is that long
            return
        self._mark(self._n + 1, len(self._stack) + 1)

    def _scalar(self, ch: str) -> bool:
        """Go on reading a number or literal; False when ``ch`` ends it (read ``ch`` next)."""
        tok = self._tok
        if self._state == "lit":
            if any(lit.startswith(tok + ch) for lit in _LITERALS):
                self._tok = tok + ch
                return True
            if tok not in _LITERALS:
                self.broken = True
                return False
        elif ch in _SCALAR_CHARS:
            if len(tok) > _MAX_NUMBER:
                self.broken = True  # no number is that long
                return False
            self._tok = tok + ch
            return True
        elif not _is_number(tok):
            self.broken = True
            return False
        if ch not in _WS and ch not in ",]}":
            # the scalar runs into a character no JSON value may be followed by (`nullc`,
            # `1x`): it never ended, so no safe point comes after it
            self.broken = True
            return False
        self._tok = ""
        self._n -= 1  # the scalar ended before this character
        self._end_value()
        self._n += 1
        return False


def _is_number(tok: str) -> bool:
    """Strict JSON number syntax, read by hand."""
    i, n = 0, len(tok)
    if i < n and tok[i] == "-":
        i += 1
    if i >= n or not "0" <= tok[i] <= "9":
        return False
    if tok[i] == "0":
        i += 1
    else:
        while i < n and "0" <= tok[i] <= "9":
            i += 1
    if i < n and tok[i] == ".":
        i += 1
        if i >= n or not "0" <= tok[i] <= "9":
            return False
        while i < n and "0" <= tok[i] <= "9":
            i += 1
    if i < n and tok[i] in "eE":
        i += 1
        if i < n and tok[i] in "+-":
            i += 1
        if i >= n or not "0" <= tok[i] <= "9":
            return False
        while i < n and "0" <= tok[i] <= "9":
            i += 1
    return i == n


# -- finishing a prefix --------------------------------------------------------------------


#: one encoder (json.dumps with a keyword builds a new one per call)
#: ``json.dumps(value, ensure_ascii=False)``, without building an encoder per call; and
#: what it writes for a string (a member's key), in one C call.
_dumps: Final = json.JSONEncoder(ensure_ascii=False).encode
_quoted: Final = json.encoder.encode_basestring


def args_prefix(text: str, *, keys: tuple[str, ...], coarse: bool, elem: int = 0, max_depth: int = 64) -> str:
    """The part of a model's arguments that a stream sends as it arrives: the longest
    safe strict prefix of the arguments object in ``text``, the whole JSON value: with
    ``keys`` (the members that hold arguments), a call object or an array of them whose
    element ``elem`` is meant; without, the arguments object itself."""
    if keys:
        sp = StrictPrefix(max_depth, keys, coarse)
        sp.feed(text)
        span = sp.args.get(elem)
        if span is None:
            return ""
        end = sp.safe if span[1] < 0 else min(sp.safe, span[1])
        return text[span[0] : end] if end > span[0] else ""
    if not text.startswith("{"):
        return ""
    sp = StrictPrefix(max_depth, (), coarse)
    sp.feed(text)
    return text[: sp.safe]


def finish_json(prefix: str, value: Any) -> str | None:
    """The text that, written after ``prefix`` (strict JSON cut at a safe point), makes
    JSON that reads as ``value``; None when none does (the prefix says something
    ``value`` does not)."""
    if not prefix:
        return _dumps(value)
    sp = StrictPrefix(10_000)
    sp.feed(prefix)
    sp.flush()
    if sp.broken or sp.safe != len(prefix):
        return None
    if sp.done:
        try:
            return "" if json.loads(prefix) == value and _same_types(json.loads(prefix), value) else None
        except ValueError:
            return None
    in_string = sp._state == "str"
    stack = sp._stack
    steps = _steps(prefix)
    if steps is None or len(steps) != len(stack):
        return None
    closing = ('"' if in_string else "") + "".join("}" if c == "{" else "]" for c in reversed(stack))
    try:
        partial = json.loads(prefix + closing)
    except ValueError:
        return None
    out: list[str] = []
    child: Any = None  # the step into the innermost open thing, already finished
    if in_string:
        child = steps[-1]
        have = _descend(partial, steps)
        want = _descend(value, steps)
        if not isinstance(have, str) or not isinstance(want, str) or not want.startswith(have):
            return None
        out.append(_dumps(want[len(have) :])[1:-1] + '"')
    for depth in range(len(stack) - 1, -1, -1):
        path = steps[:depth]
        have = _descend(partial, path)
        want = _descend(value, path)
        if isinstance(want, dict) and isinstance(have, dict):
            if any(k not in want for k in have):
                return None
            written = bool(have)
            for k, v in want.items():
                if k == child or (k in have and have[k] == v and _same_types(have[k], v)):
                    continue
                out.append((", " if written else "") + _dumps(k) + ": " + _dumps(v))
                written = True
            out.append("}")
        elif isinstance(want, list) and isinstance(have, list):
            done = len(have) if child is None else child + 1
            kept = have if child is None else have[:child]
            if len(want) < done or kept != want[: len(kept)] or not _same_types(kept, want[: len(kept)]):
                return None
            for v in want[done:]:
                out.append((", " if done else "") + _dumps(v))
                done += 1
            out.append("]")
        else:
            return None
        child = steps[depth - 1] if depth > 0 else None
    return "".join(out)


def _same_types(a: Any, b: Any) -> bool:
    """Equal values that JSON writes the same way (1 and 1.0 and True compare equal in Python)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return all(_same_types(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return all(_same_types(x, y) for x, y in zip(a, b))
    return True


def _descend(value: Any, path: list[Any]) -> Any:
    for step in path:
        if isinstance(value, dict):
            if isinstance(step, str) and step in value:
                value = value[step]
                continue
        elif isinstance(value, list) and isinstance(step, int) and 0 <= step < len(value):
            value = value[step]
            continue
        return _MISSING
    return value


def _steps(prefix: str) -> list[Any] | None:
    """For each open container of a strict prefix, the step to its current child: the key
    of the member being read (objects) or the index of the element (arrays)."""
    stack: list[str] = []
    steps: list[Any] = []
    expect_key = False
    i, n = 0, len(prefix)
    while i < n:
        ch = prefix[i]
        if ch == "{" or ch == "[":
            stack.append(ch)
            steps.append(None if ch == "{" else 0)
            expect_key = ch == "{"
        elif ch == "}" or ch == "]":
            stack.pop()
            steps.pop()
            expect_key = False
        elif ch == ",":
            if stack[-1] == "[":
                steps[-1] += 1
            else:
                expect_key = True
        elif ch == ":":
            expect_key = False
        elif ch == '"':
            j = i + 1
            while j < n and prefix[j] != '"':
                j += 2 if prefix[j] == "\\" else 1
            if expect_key:
                try:
                    steps[-1] = json.loads(prefix[i : j + 1])
                except ValueError:
                    return None
            i = j
        i += 1
    return steps


def member(key: str, value: Any, first: bool) -> str:
    """One ``"key": value`` member of an arguments object, as ``json.dumps`` writes it."""
    kind = type(value)
    if kind is str:
        written = _quoted(value)
    elif kind is int:
        written = int.__repr__(value)  # (what json writes for an int)
    elif value is None or kind is bool:
        written = "null" if value is None else "true" if value else "false"
    else:
        written = _dumps(value)
    return ("" if first else ", ") + _quoted(key) + ": " + written
