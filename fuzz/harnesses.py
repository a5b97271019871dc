"""The fuzz harnesses: one plain function per entry point, taking the fuzzer's bytes.

Each function raises when an invariant breaks and returns None otherwise; model text
never makes the library raise, so any exception is a finding.  The functions import
nothing from atheris: ``make test`` runs them over their seed corpora
(``tests/test_fuzz_harnesses.py``) and ``fuzz/run.py`` runs them under atheris, or
under its own mutation driver where atheris is not installed.

Inputs that carry model text (``parse``, ``stream``, ``detect``, ``truncation``,
``limits``) share one layout: an 8-byte header, then the text as UTF-8 (undecodable bytes
become lone surrogates, which a Python ``str`` may hold):

    byte 0   even: every family; odd: one family, ``names()[(b // 2) % n]``
    byte 1   policy flags (see :func:`policy_from_flags`)
    byte 2   toolset: 0 none, else ``TOOLSET_NAMES[(b - 1) % n]`` from tests/corpus/_tools.json
    byte 3   how the stream is cut: 0 whole, 1 one character at a time, 2 random cuts,
             3 a fixed delta size
    4–7      the seed of the random cuts (``truncation`` also cuts the text off at
             ``seed % (len + 1)``; ``limits`` lays ``LIMITS[seed % n]`` over the policy)

``replies`` reads no header: its bytes are the choices of the reply generator
(``tests/replies.py``).  The checks of the last three harnesses are shared with the
property tests that search for the same failures (``tests/contract.py``).
"""

from __future__ import annotations

import ast
import io
import json
import math
import random
import sys
import tokenize
import warnings
from itertools import pairwise
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _p in (ROOT / "src", ROOT / "tests"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from contract import (
    CHUNKINGS,
    LIMITS,
    describe,
    details_problem,
    detect_problems,
    invented_problems,
    lost_prose_problems,
    lost_word_problems,
    policy_with,
    prefix_problems,
    stream_problems,
)
from pydantic import BaseModel
from replies import Reply, from_bytes
from support import check_invariants, toolsets

import tooldialect as td
from tooldialect.binding import Binder
from tooldialect.jsonscan import DONE, MORE, JsonScanner, JsonValueError, loads_strict
from tooldialect.repair import RepairFailed, repair_json
from tooldialect.transform import RawCall, Reader

__all__ = [
    "HARNESSES",
    "TOOLSET_NAMES",
    "binding_input",
    "check_detect",
    "check_limits",
    "check_prefix",
    "check_reply",
    "envelope_input",
    "fuzz_binding",
    "fuzz_detect",
    "fuzz_envelope",
    "fuzz_limits",
    "fuzz_literal",
    "fuzz_parse",
    "fuzz_repair",
    "fuzz_replies",
    "fuzz_roundtrip",
    "fuzz_stream",
    "fuzz_truncation",
    "literal_input",
    "policy_flags",
    "repair_input",
    "roundtrip_input",
    "text_input",
]

TOOLSET_NAMES = sorted(toolsets())
HEADER = 8
#: One character at a time costs a Python call per character: longer texts are cut at random.
ONE_BY_ONE_MAX = 4096

_toolsets: dict[str, td.Toolset] = {}


def _toolset(index: int) -> td.Toolset | None:
    if index == 0:
        return None
    name = TOOLSET_NAMES[(index - 1) % len(TOOLSET_NAMES)]
    got = _toolsets.get(name)
    if got is None:
        got = _toolsets[name] = td.Toolset.coerce(toolsets()[name])
    return got


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


# -- model text inputs -------------------------------------------------------------------------

_UNKNOWN = ("keep", "drop", "error", "keep")
_TIGHT = {"max_repeats": 2, "max_depth": 3, "max_block_chars": 256, "max_calls": 2}


def policy_from_flags(flags: int) -> td.Policy:
    """bit 0 start_in_reasoning · bit 1 truncated="keep" · bit 2 calls_in_reasoning="accept"
    · bit 3 bare_json=False · bits 4–5 unknown_tool · bit 6 tight limits · bit 7 max_repeats=1."""
    fields: dict[str, Any] = {
        "start_in_reasoning": bool(flags & 1),
        "truncated": "keep" if flags & 2 else "drop",
        "calls_in_reasoning": "accept" if flags & 4 else "report",
        "bare_json": not flags & 8,
        "unknown_tool": _UNKNOWN[(flags >> 4) & 3],
    }
    if flags & 64:
        fields.update(_TIGHT)
    if flags & 128:
        fields["max_repeats"] = 1
    return td.Policy(**fields)


def policy_flags(policy: td.Policy) -> int:
    """The flags byte closest to ``policy`` (for seeds)."""
    flags = int(policy.start_in_reasoning) | (2 if policy.truncated == "keep" else 0)
    flags |= 4 if policy.calls_in_reasoning == "accept" else 0
    flags |= 0 if policy.bare_json else 8
    flags |= _UNKNOWN.index(policy.unknown_tool) << 4
    flags |= 128 if policy.max_repeats == 1 else 0
    return flags


def text_input(text: str, family: int = 0, flags: int = 0, tools: int = 0, mode: int = 0, seed: int = 0) -> bytes:
    """The bytes a text harness reads as ``text`` with these options (see the module docstring)."""
    head = bytes([family & 255, flags & 255, tools & 255, mode & 255]) + (seed & 0xFFFFFFFF).to_bytes(4, "little")
    return head + text.encode("utf-8", "surrogateescape")


def _read_text(data: bytes) -> tuple[str, dict[str, Any], int, int]:
    head = data[:HEADER].ljust(HEADER, b"\0")
    text = _decode(data[HEADER:])
    opts: dict[str, Any] = {"policy": policy_from_flags(head[1])}
    if head[0] & 1:
        names = td.families.names()
        opts["families"] = [names[(head[0] // 2) % len(names)]]
    tools = _toolset(head[2])
    if tools is not None:
        opts["tools"] = tools
    return text, opts, head[3] % 4, int.from_bytes(head[4:8], "little")


def _cuts(text: str, mode: int, seed: int) -> list[int]:
    n = len(text)
    if mode == 0 or n < 2:
        return []
    if mode == 1 and n <= ONE_BY_ONE_MAX:
        return list(range(1, n))
    rng = random.Random(seed)
    if mode == 3:
        step = 1 + seed % 97
        return list(range(step, n, step))
    return sorted(rng.sample(range(1, n), min(n - 1, rng.randint(1, 64))))


def _is_subsequence(part: str, whole: str) -> bool:
    it = iter(whole)
    return all(ch in it for ch in part)


def check_result(text: str, result: td.ParseResult, opts: dict[str, Any]) -> None:
    """What holds for every parse result, whatever the text."""
    policy: td.Policy = opts["policy"]
    tools: td.Toolset | None = opts.get("tools")
    families = set(td.families.names())
    assert isinstance(result.text, str) and isinstance(result.reasoning, str)
    assert _is_subsequence(result.text, text), "text holds characters the model did not write there"
    assert _is_subsequence(result.reasoning, text), "reasoning holds characters the model did not write there"
    assert len(result.calls) <= policy.max_calls
    unknown = sum(1 for d in result.diagnostics if d.kind == "unknown_tool")
    for call in result.calls:
        assert isinstance(call.arguments, dict), "arguments must always be an object"
        assert json.loads(call.arguments_json) == call.arguments, "arguments_json does not parse to arguments"
        assert 0 <= call.span[0] < call.span[1] <= len(text), f"span {call.span} outside the text"
        assert call.family in families
        if tools is not None and call.name not in tools.names:
            assert policy.unknown_tool == "keep" and unknown, "a call to an unknown tool with no unknown_tool"
    for diag in result.diagnostics:
        assert diag.kind in td.DIAGNOSTIC_KINDS, diag.kind
        json.dumps(diag.detail)  # details are JSON-serialisable
        if diag.span is not None:
            assert 0 <= diag.span[0] <= diag.span[1] <= len(text), f"diagnostic span {diag.span} outside the text"


def fuzz_parse(data: bytes) -> None:
    """``td.parse``: never raises; the result keeps the model's characters and is well formed."""
    text, opts, _mode, _seed = _read_text(data)
    check_result(text, td.parse(text, **opts), opts)


def fuzz_stream(data: bytes) -> None:
    """``td.ToolStream`` at fuzzer-chosen cuts equals ``td.parse`` (DESIGN §4 invariants)."""
    text, opts, mode, seed = _read_text(data)
    batch = td.parse(text, **opts)
    stream = td.ToolStream(**opts)
    bound = _window_bound(stream)
    events: list[td.Event] = []
    pos = 0
    for cut in [*_cuts(text, mode, seed), len(text)]:
        events += stream.feed(text[pos:cut])
        pos = cut
        # held back between deltas: a partial marker, a fence line, a backtick run; an open
        # block's text is kept in its own pieces, never in the window that grows per delta
        assert len(stream._engine.window.win) <= bound, (
            f"{len(stream._engine.window.win)} characters held in the window"
        )
    events += stream.close()
    check_invariants(text, events, batch)
    # stronger than the kinds DESIGN §4 asks for: details, spans and messages agree too
    # (DetectStream.result() promises to equal scan())
    problem = details_problem(events, batch.diagnostics)
    assert problem is None, f"diagnostic details depend on the cuts: {problem}"


def _window_bound(stream: td.ToolStream) -> int:
    from tooldialect.engine import fences

    return stream._engine.cat.max_width + fences.MAX_FENCE_LINE + fences.MAX_RUN + 1


def fuzz_detect(data: bytes) -> None:
    """``td.detect.scan``: content never executes, the stream form agrees, the audit holds no values."""
    text, opts, mode, seed = _read_text(data)
    native = [{"id": "n1"}] if seed & 1 else []
    result = td.detect.scan(text, native_calls=native, **opts)
    batch = td.parse(text, **opts)
    assert result.visible == batch.text and result.reasoning == batch.reasoning
    assert [(i.name, i.arguments, i.family, i.span) for i in result.intents] == [
        (c.name, c.arguments, c.family, c.span) for c in batch.calls
    ]
    assert not _holds_a_call(result), "detect returned something that is a ToolCall"
    assert result.mixed == (bool(result.intents) and bool(native))
    record = result.audit.to_json()
    json.dumps(record)
    assert "arguments" not in record, "the audit holds argument values it was not asked for"
    stream = td.detect.DetectStream(native_calls=native, **opts)
    pos = 0
    for cut in [*_cuts(text, mode, seed), len(text)]:
        stream.feed(text[pos:cut])
        pos = cut
    stream.close()
    assert stream.result() == result, "DetectStream differs from scan()"


def _holds_a_call(value: Any) -> bool:
    if isinstance(value, td.ToolCall):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_a_call(v) for v in value)
    if isinstance(value, BaseModel):
        return any(_holds_a_call(getattr(value, f)) for f in type(value).model_fields)
    return False


# -- binding -------------------------------------------------------------------------------------


def binding_input(
    tools: int, flags: int, name: str, arguments: str = "", params: list[tuple[str, str]] | None = None
) -> bytes:
    """``flags`` bit 0: the arguments are text values (``params``) rather than JSON text;
    bit 1: a registry-gated body; bits 2–3: unknown_tool; bits 4–7: string flags of the
    first text values (each: 0 none, else true/false)."""
    parts = [name] + ([x for kv in params for x in kv] if params is not None else [arguments])
    return bytes([tools & 255, flags & 255]) + "\0".join(parts).encode("utf-8", "surrogateescape")


def fuzz_binding(data: bytes) -> None:
    """Reading a payload and binding it (names, repair ladder, schema typing, validation)."""
    head = data[:2].ljust(2, b"\0")
    parts = _decode(data[2:]).split("\0")
    tools = _toolset(head[0])
    policy = td.Policy(unknown_tool=_UNKNOWN[(head[1] >> 2) & 3])
    binder = Binder(tools, policy)
    name = parts[0]
    if head[1] & 1:
        pairs = parts[1:]
        params = []
        for i in range(0, len(pairs) - 1, 2):
            bits = (head[1] >> (4 + min(i // 2, 1) * 2)) & 3
            params.append((pairs[i], pairs[i + 1], None if bits == 0 else bits == 1))
        raws = [RawCall(name, None, None, None, (0, 1), "fuzz", gated=bool(head[1] & 2), text_params=params)]
    else:
        payload = '{"name": ' + json.dumps(name) + ', "arguments": ' + "\0".join(parts[1:]) + "}"
        reader = Reader("fuzz", binder.known, policy.max_depth, (), tools)
        raws, issues = reader.read_payload(payload, 0, bare=False)
        for issue in issues:
            assert issue.kind in td.DIAGNOSTIC_KINDS
            json.dumps(issue.detail)
    for raw in raws:
        call, diags = binder.bind(raw)
        for diag in diags:
            assert diag.kind in td.DIAGNOSTIC_KINDS, diag.kind
            json.dumps(diag.detail)
        if call is None:
            assert policy.unknown_tool != "keep" or diags, "a call dropped with nothing said"
            continue
        assert isinstance(call.arguments, dict), "arguments must always be an object"
        assert json.loads(call.arguments_json) == call.arguments, "arguments_json does not parse to arguments"
        if raw.gated:
            assert call.name == raw.name, "a registry-gated name was rewritten"
        if tools is not None and call.name not in tools.names:
            assert any(d.kind == "unknown_tool" for d in diags)
        flags = {key: flag for key, _text, flag in raw.text_params or ()}  # the last value of a key wins
        for key, flag in flags.items():
            if flag is True and key in call.arguments:
                assert isinstance(call.arguments[key], str), 'string="true" always means string'


# -- JSON: the incremental scanner and the repair ladder -------------------------------------------

_QUOTES: tuple[str, ...] | None = None


def _quotes() -> tuple[str, ...]:
    global _QUOTES
    if _QUOTES is None:
        _QUOTES = tuple(
            sorted({q for f in td.families.all_families() for q in f.grammar.quotes}, key=len, reverse=True)
        )
    return _QUOTES


def repair_input(text: str, flags: int = 0, seed: int = 0) -> bytes:
    """``flags`` bit 0: the grammars' quote sentinels are on; byte 1: max_depth; 2–5: cuts."""
    return (
        bytes([flags & 255, 64]) + (seed & 0xFFFFFFFF).to_bytes(4, "little") + text.encode("utf-8", "surrogateescape")
    )


def _depth(value: Any) -> int:
    depth, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (dict, list)):
            depth = max(depth, d)
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return depth


def fuzz_repair(data: bytes) -> None:
    """The JSON scanner finds the same end at every chunking; the repair ladder returns
    strict, finite JSON no deeper than the limit, or says it cannot."""
    head = data[:6].ljust(6, b"\0")
    quotes = _quotes() if head[0] & 1 else ()
    max_depth = 1 + head[1] % 96
    text = _decode(data[6:])
    seed = int.from_bytes(head[2:6], "little")
    whole = JsonScanner(max_depth, quotes)
    expected = whole.scan(text, 0, True)
    chunked = JsonScanner(max_depth, quotes)
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, 1 + seed % 16))) if len(text) > 1 else []
    pos, got = 0, None
    for cut in [*cuts, len(text)]:
        got = chunked.scan(text, pos, cut == len(text), cut)
        if got[0] != MORE:
            break
        pos = got[1]
    assert got == expected, f"scanner: whole {expected}, in chunks {got}"
    assert chunked.names == whole.names
    if expected[0] == DONE:
        assert 0 < expected[1] <= len(text)
    try:
        value, repairs = repair_json(text, quotes=quotes, max_depth=max_depth)
    except RepairFailed:
        return
    out = json.dumps(value, allow_nan=False)  # strict JSON: nothing infinite or NaN
    assert loads_strict(out) == value
    assert _depth(value) <= max_depth, "the repair ladder returned a value over max_depth"
    assert isinstance(repairs, list) and all(isinstance(r, str) for r in repairs)
    try:
        strict = loads_strict(text)
    except JsonValueError:
        return
    assert strict == value and not [r for r in repairs if r != "removed a code fence"], "strict JSON was changed"


# -- the Python literal reader ----------------------------------------------------------------------


#: Characters Python's source reading treats otherwise than the literal reader: NUL (refused),
#: \r (turned into \n), and white space the grammars skip that Python does not (\v, NBSP,
#: BOM; _json.lark's WS).
_NOT_PYTHON_TEXT = "\0\r\v\u00a0\ufeff"


def literal_input(value: str) -> bytes:
    return value.encode("utf-8", "surrogateescape")


class _JsonNames(ast.NodeTransformer):
    """JSON's spellings of the constants, which the reader takes as Olmo 3 writes them."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in ("true", "false", "null"):
            return ast.copy_location(ast.Constant({"true": True, "false": False, "null": None}[node.id]), node)
        return node


_NOT_JSON = object()


def _as_json(value: Any, depth: int = 0) -> Any:
    if depth > 512:
        return _NOT_JSON
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else _NOT_JSON
    if isinstance(value, str):
        # escaped UTF-16 pairs are one character to the reader (docs/decisions.md); a
        # lone surrogate has no JSON form
        value = value.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")
        return _NOT_JSON if any(0xD800 <= ord(c) <= 0xDFFF for c in value) else value
    if isinstance(value, (list, tuple)):
        items = [_as_json(v, depth + 1) for v in value]
        return _NOT_JSON if any(v is _NOT_JSON for v in items) else items
    if isinstance(value, dict):
        if not all(isinstance(k, str) and _as_json(k) == k for k in value):
            return _NOT_JSON
        out = {k: _as_json(v, depth + 1) for k, v in value.items()}
        return _NOT_JSON if any(v is _NOT_JSON for v in out.values()) else out
    return _NOT_JSON


def python_literal(source: str) -> Any:
    """Python's own reading of ``f(v=X)``: the value of ``v`` when it is the call's only
    argument and a literal (JSON constants allowed), as JSON; ``_NOT_JSON`` when Python
    reads something else or the value has no JSON form."""
    if _outside_strings(source, "#\\"):
        return _NOT_JSON  # comments and line continuations are Python syntax, not literals
    if _signed_apart(source):
        return _SKIP  # "- 5", "05.5": spellings Python reads and the reader refuses on purpose
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes: Python warns, and so reads them
            call = ast.parse("f(v=" + source + ")", mode="eval").body
        if not (isinstance(call, ast.Call) and not call.args and [k.arg for k in call.keywords] == ["v"]):
            return _NOT_JSON  # "1, 2" is a second (positional) argument, not a tuple
        tree = _JsonNames().visit(ast.Expression(call.keywords[0].value))
        return _as_json(ast.literal_eval(tree))
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return _NOT_JSON


_SKIP = object()


def _signed_apart(source: str) -> bool:
    """A sign with white space before its number, or a number with a leading zero, outside
    strings: Python reads both."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, ValueError):
        return False
    apart = any(a.type == tokenize.OP and a.string in "+-" and b.start != a.end for a, b in pairwise(tokens))
    # a leading zero before a digit (05.5): Python floats allow it, the reader never does
    # (pyliteral.number: neither Python integers nor TypeScript accept one)
    zero = any(
        t.type == tokenize.NUMBER and len(t.string) > 1 and t.string[0] == "0" and t.string[1] in "0123456789_"
        for t in tokens
    )
    return apart or zero


def _outside_strings(source: str, chars: str) -> bool:
    """Whether any of ``chars`` appears in ``source`` outside its string literals (True
    when Python cannot tokenize it: the answer is then unknown, so assume it does)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, ValueError):
        return True
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    blanked = list(source)
    for tok in tokens:
        if tok.type == tokenize.STRING:
            a = starts[tok.start[0] - 1] + tok.start[1]
            b = starts[tok.end[0] - 1] + tok.end[1]
            blanked[a:b] = " " * (b - a)
    rest = "".join(blanked)
    return any(ch in rest for ch in chars)


def fuzz_literal(data: bytes) -> None:
    """The literal reader against Python's ``ast.literal_eval``: ``[f(v=X)]`` is a call with
    ``v`` = Python's value of X exactly when X is a literal with a JSON value."""
    source = _decode(data)
    reply = "[f(v=" + source + ")]"
    result = td.parse(reply, families=["pythonic"])
    check_result(reply, result, {"policy": td.Policy()})
    if any(ch in source for ch in _NOT_PYTHON_TEXT) or _has_surrogates(source):
        # Python refuses NUL characters in source text, and turns \r\n and \r into \n
        # before reading a literal; the reader keeps a string's characters as written
        # (docs/decisions.md, Python calls); text with lone surrogates is not Unicode
        return
    expected = python_literal(source)
    if expected is _SKIP:
        return
    one = (
        len(result.calls) == 1
        and not result.diagnostics
        and result.text == ""
        and result.calls[0].name == "f"
        and list(result.calls[0].arguments) == ["v"]
    )
    if expected is not _NOT_JSON and not _spellable(expected):
        return  # the number terminal reads at most 64 digits (docs/decisions.md, Python calls)
    if expected is not _NOT_JSON and _depth(expected) < td.Policy().max_depth:
        assert one, f"Python reads {source!r} as a literal; the reader gave {result.calls} {result.diagnostics}"
        assert result.calls[0].arguments["v"] == expected and _same_types(result.calls[0].arguments["v"], expected)
    elif one:
        assert expected is not _NOT_JSON, f"the reader took {source!r}, which Python does not read as a literal"


def _same_types(a: Any, b: Any) -> bool:
    """1 and 1.0 and True are equal in Python; a literal keeps its type."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return all(_same_types(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return all(_same_types(a[k], b[k]) for k in a)
    return True


# -- rendering: the <tool_result> envelope and render → parse per dialect --------------------------

_STATUS = ("ok", "error")


def envelope_input(name: str, tool_call_id: str, bodies: list[str], status: int = 0) -> bytes:
    """A results turn: one envelope per body, all with this name and id."""
    return bytes([status & 255]) + "\0".join([name, tool_call_id, *bodies]).encode("utf-8", "surrogateescape")


def fuzz_envelope(data: bytes) -> None:
    """Tool output cannot forge the envelope: the rendered turn holds exactly one opening and
    one closing protocol tag per result, and reading it back gives the results (bodies with
    the documented ``&lt;`` rewrite)."""
    from tooldialect.render.tool_results import guard_body, spelling

    head = data[:1].ljust(1, b"\0")
    parts = _decode(data[1:]).split("\0")
    name, call_id, bodies = parts[0], (parts[1] if len(parts) > 1 else ""), parts[2:] or [""]
    try:
        items = [td.ToolResult(call_id, name, body, _STATUS[(head[0] >> i) & 1]) for i, body in enumerate(bodies[:8])]
    except td.ToolDialectError:
        # a caller's mistake: an empty name or id, or a str that is not valid Unicode
        fields = [name, call_id, *bodies[:8]]
        assert not name or not call_id or any(_has_surrogates(f) for f in fields), "a valid result was refused"
        return
    (turn,) = td.render.results(items)
    from tooldialect.render._fold import fold

    # as written, and as a normalising tokenizer (NFKC, case folding) may hand it to the model
    for text in (turn, fold(turn)):
        tags = spelling().tag.findall(text)
        assert len(tags) == 2 * len(items), f"{len(tags)} protocol tags for {len(items)} results: the body forged one"
    back = td.render.read_results(turn)
    assert back is not None, "a rendered turn does not read back"
    assert [(r.name, r.tool_call_id, r.status, r.output) for r in back] == [
        (r.name, r.tool_call_id, r.status, guard_body(r.output)) for r in items
    ]


def _has_surrogates(text: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in text)


_ROUNDTRIP_KINDS = {
    "text": ({"type": "string"}, lambda v: isinstance(v, str)),
    "count": ({"type": "integer"}, lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "ratio": ({"type": "number"}, lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)),
    "flag": ({"type": "boolean"}, lambda v: isinstance(v, bool)),
    "tags": (
        {"type": "array", "items": {"type": "string"}},
        lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    ),
    "extra": ({"type": "object"}, lambda v: isinstance(v, dict)),
}
_ROUNDTRIP_NAMES = ("get_weather", "run", "search_docs", "$find", "read-file", "class")
_ROUNDTRIP_DIALECTS = {"xml": "hermes", "pformat": "pformat", "python": "codecall", "typescript": "codecall"}


_roundtrip_toolsets: dict[str, td.Toolset] = {}


def _roundtrip_tools(name: str) -> td.Toolset:
    got = _roundtrip_toolsets.get(name)
    if got is None:
        params = {key: schema for key, (schema, _ok) in _ROUNDTRIP_KINDS.items()}
        tool = td.Tool(name=name, description="fuzz", parameters={"type": "object", "properties": params})
        got = _roundtrip_toolsets[name] = td.Toolset([tool])
    return got


#: Digits the code-call number terminal reads (PY_NUMBER in _pyliteral.lark); td.render
#: writes longer integers anyway, which then do not read back (a known finding).
_NUMBER_DIGITS = 64


def _spellable(value: Any) -> bool:
    if isinstance(value, int) and not isinstance(value, bool):
        return len(str(abs(value))) <= _NUMBER_DIGITS
    if isinstance(value, list):
        return all(_spellable(v) for v in value)
    if isinstance(value, dict):
        return all(_spellable(v) for v in value.values())
    return True


def roundtrip_input(values: list[Any], dialect: int = 0, name: int = 0) -> bytes:
    return bytes([dialect & 255, name & 255]) + json.dumps(values, ensure_ascii=False).encode("utf-8")


def fuzz_roundtrip(data: bytes) -> None:
    """render → parse is the identity in every text dialect: JSON values from the fuzzer go
    to the parameters whose schema admits them, the call is rendered and read back."""
    head = data[:2].ljust(2, b"\0")
    try:
        values = loads_strict(_decode(data[2:]))
    except (JsonValueError, RecursionError):
        return
    values = values if isinstance(values, list) else [values]
    name = _ROUNDTRIP_NAMES[head[1] % len(_ROUNDTRIP_NAMES)]
    tools = _roundtrip_tools(name)
    arguments = {}
    for value, (key, (_schema, ok)) in zip(values, _ROUNDTRIP_KINDS.items()):
        # lone surrogates are not Unicode: the code-call reader refuses them (decisions.md)
        if ok(value) and _as_json(value) is not _NOT_JSON and _as_json(value) == value and _spellable(value):
            arguments[key] = value
    if _depth(arguments) > 16:
        return
    dialect = list(_ROUNDTRIP_DIALECTS)[head[0] % len(_ROUNDTRIP_DIALECTS)]
    d = td.dialects.get(dialect)
    try:
        text = d.render_call({"name": name, "arguments": arguments}, tools)
    except td.PolicyError as exc:
        assert dialect != "xml" and "cannot write" in str(exc), exc  # a name or blank value the style cannot spell
        return
    got = d.parse(text, tools)
    if [x.kind for x in got.diagnostics] == ["repetition_loop"]:
        return  # a value that repeats the call opener past max_repeats reads as a loop (DESIGN §9)
    assert [(c.name, c.arguments, c.family) for c in got.calls] == [(name, arguments, _ROUNDTRIP_DIALECTS[dialect])], (
        text,
        got.diagnostics,
    )
    assert got.text == ""


# -- the contract beyond §4: cut-off replies, limits, generated replies ---------------------------
#
# Each ``check_*`` raises AssertionError listing every problem with the input, options and
# chunking needed to replay it; the tests call them directly, the harnesses from bytes.

#: The mode byte of a text input as a chunking of :mod:`contract`.
_CHUNKING = ("whole", "chars", "random", "threes")


def _parse(text: str, opts: dict[str, Any]) -> td.ParseResult:
    """``td.parse`` and the checks of every result; a raise is a finding, with its input."""
    try:
        result = td.parse(text, **opts)
        check_result(text, result, {"policy": td.Policy(), **opts})
    except Exception as exc:
        raise AssertionError(f"{type(exc).__name__}: {exc}\n{describe(text, opts)}") from exc
    return result


def _fail(problems: list[str], text: str, opts: dict[str, Any], **more: Any) -> None:
    if problems:
        raise AssertionError("\n".join(problems) + "\n" + describe(text, opts, **more))


def _affordable(text: str, chunkings: tuple[str, ...]) -> tuple[str, ...]:
    """One character at a time costs a Python call per character: long texts are cut at random."""
    return tuple("random" if c == "chars" and len(text) > ONE_BY_ONE_MAX else c for c in chunkings)


def check_prefix(
    text: str,
    cut: int,
    opts: dict[str, Any],
    chunkings: tuple[str, ...] = CHUNKINGS,
    seed: int = 0,
    full: td.ParseResult | None = None,
) -> None:
    """``text`` cut off at ``cut`` (DESIGN §7): parse never raises, a call read from the prefix
    is the whole reply's call cut at most, prose the whole reply shows is not lost, and the
    prefix streamed at each chunking equals its batch parse (§4).  ``full``: the parse of
    ``text`` with ``opts``, when the caller cuts one text many times."""
    prefix = text[:cut]
    full = full if full is not None else _parse(text, opts)
    got = _parse(prefix, opts)
    problems = prefix_problems(text, full, prefix, got, opts.get("policy") or td.Policy())
    problems += lost_prose_problems(text, full, prefix, got)
    problems += stream_problems(prefix, opts, _affordable(prefix, chunkings), seed, batch=got)
    _fail(problems, prefix, opts, whole=text, seed=seed)


def check_limits(text: str, opts: dict[str, Any], chunkings: tuple[str, ...] = CHUNKINGS, seed: int = 0) -> None:
    """Stream against batch and ``DetectStream`` against ``scan()`` at each chunking (meant
    for policies with small limits, where a block is cut short, released or dropped)."""
    batch = _parse(text, opts)
    chunkings = _affordable(text, chunkings)
    problems = stream_problems(text, opts, chunkings, seed, batch) + detect_problems(text, opts, chunkings, seed, batch)
    _fail(problems, text, opts, seed=seed)


def check_detect(text: str, opts: dict[str, Any], chunkings: tuple[str, ...] = CHUNKINGS, seed: int = 0) -> None:
    """``DetectStream`` against ``scan()``, and ``scan()`` against ``parse()``, alone."""
    batch = _parse(text, opts)
    _fail(detect_problems(text, opts, _affordable(text, chunkings), seed, batch), text, opts, seed=seed)


def check_reply(reply: Reply, chunkings: tuple[str, ...] = CHUNKINGS, seed: int = 0) -> None:
    """A generated reply: the §4 invariants at each chunking and detect mode at the last,
    nothing lost, nothing invented, and, when it was cut off, everything
    :func:`check_prefix` asks."""
    result = _parse(reply.text, reply.opts)
    chunkings = _affordable(reply.text, chunkings)
    problems = lost_word_problems(reply.text, result, reply.words)
    problems += invented_problems(reply.text, result, reply.regions, reply.opts.get("tools"))
    problems += stream_problems(reply.text, reply.opts, chunkings, seed, result)
    # DetectStream wraps ToolStream: one chunking finds what the stream checks do not
    problems += detect_problems(reply.text, reply.opts, chunkings[-1:], seed, result)
    if reply.text != reply.whole:
        full = _parse(reply.whole, reply.opts)
        problems += prefix_problems(reply.whole, full, reply.text, result, reply.opts["policy"])
        problems += lost_prose_problems(reply.whole, full, reply.text, result)
    _fail(problems, reply.text, reply.opts, whole=reply.whole, plan=reply.plan, seed=seed)


def fuzz_truncation(data: bytes) -> None:
    """A text input cut off where the seed bytes say (``seed % (len + 1)``): :func:`check_prefix`."""
    text, opts, mode, seed = _read_text(data)
    check_prefix(text, seed % (len(text) + 1), opts, (_CHUNKING[mode],), seed)


def fuzz_limits(data: bytes) -> None:
    """A text input under its flags' policy with one small limit (``LIMITS[seed % n]``) laid
    over it: :func:`check_limits` at the mode's chunking and three characters at a time."""
    text, opts, mode, seed = _read_text(data)
    opts["policy"] = policy_with(opts["policy"], LIMITS[seed % len(LIMITS)])
    check_limits(text, opts, (_CHUNKING[mode], "threes"), seed)


def fuzz_replies(data: bytes) -> None:
    """A reply built by the grammar-aware generator from the fuzzer's bytes: :func:`check_reply`."""
    check_reply(from_bytes(data), ("whole", "threes", "random"), seed=len(data))


HARNESSES = {
    "parse": fuzz_parse,
    "stream": fuzz_stream,
    "binding": fuzz_binding,
    "repair": fuzz_repair,
    "literal": fuzz_literal,
    "detect": fuzz_detect,
    "envelope": fuzz_envelope,
    "roundtrip": fuzz_roundtrip,
    "truncation": fuzz_truncation,
    "limits": fuzz_limits,
    "replies": fuzz_replies,
}
