"""What the contract promises about any reply, as checks that return the problems they find.

The stream invariants of DESIGN §4 live in :mod:`tooldialect.corpus` (``stream_problem``);
this module adds what a truncated, limited or generated reply must also satisfy, so that the
property tests and the fuzz harnesses search for the same failures with the same words:

* :func:`stream_problems` / :func:`detect_problems`: a stream (or ``DetectStream``) cut a
  given way equals the batch reading, diagnostics' details included.
* :func:`prefix_problems`: a reply cut off anywhere never yields a call the whole reply does
  not write: a cut-off name, a name or value the whole reply reads otherwise (DESIGN §7).
* :func:`lost_prose_problems`: prose the whole reply shows is not lost by cutting it off.
* :func:`lost_word_problems` / :func:`invented_problems`: for generated replies, whose prose
  words and call regions are known, nothing written is lost and nothing is made up.

Every check returns a list of one-line problems (empty when the contract holds) and
:func:`describe` prints the input, options and chunking a failure needs to be replayed.
"""

from __future__ import annotations

import functools
import json
import random
import re
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from support import run_stream, stream_problem

import tooldialect as td
from tooldialect.catalog import catalog_for

__all__ = [
    "CHUNKINGS",
    "LIMITS",
    "VARIANTS",
    "cuts",
    "describe",
    "details_problem",
    "detect_problems",
    "invented_problems",
    "lost_prose_problems",
    "lost_word_problems",
    "policy_with",
    "prefix_problems",
    "stream_problems",
    "words_outside_markers",
]

#: How a stream is cut: whole, one character at a time, three at a time, seeded random cuts.
CHUNKINGS = ("whole", "chars", "threes", "random")

#: Every Policy variant the guide documents, one field each (the smallest limits allowed).
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "keep": {"truncated": "keep"},
    "accept": {"calls_in_reasoning": "accept"},
    "in_reasoning": {"start_in_reasoning": True},
    "no_bare_json": {"bare_json": False},
    "drop_unknown": {"unknown_tool": "drop"},
    "error_unknown": {"unknown_tool": "error"},
    "depth_2": {"max_depth": 2},
    "depth_8": {"max_depth": 8},
    "block_256": {"max_block_chars": 256},
    "block_512": {"max_block_chars": 512},
    "calls_1": {"max_calls": 1},
    "calls_2": {"max_calls": 2},
    "repeats_1": {"max_repeats": 1},
}

#: The variants that only set a limit: the limits differential runs these.
LIMITS = ("depth_2", "depth_8", "block_256", "block_512", "calls_1", "calls_2", "repeats_1")


def policy_with(base: td.Policy | None, variant: str) -> td.Policy:
    """``base`` (a case's own policy) with one documented variant laid over it."""
    fields = (base or td.Policy()).model_dump()
    fields.update(VARIANTS[variant])
    return td.Policy(**fields)


def cuts(text: str, chunking: str, seed: int = 0) -> list[int]:
    """Where ``chunking`` cuts ``text``.  ``random`` is seeded by ``seed`` and the length only
    (``corpus.cuts_for`` seeds with the text, which fails on lone surrogates)."""
    n = len(text)
    if chunking == "whole" or n < 2:
        return []
    if chunking == "chars":
        return list(range(1, n))
    if chunking == "threes":
        return list(range(3, n, 3))
    rng = random.Random(seed * 1_000_003 + n)
    return sorted(rng.sample(range(1, n), min(n - 1, rng.randint(1, max(1, n // 2)))))


def describe(text: str, opts: dict[str, Any], chunking: str | None = None, **more: Any) -> str:
    """Everything a failure needs to be replayed: the input, the options, the chunking."""
    policy = opts.get("policy") or td.Policy()
    changed = {k: v for k, v in policy.model_dump().items() if v != td.Policy.model_fields[k].default}
    lines = [f"input    {text!r}", f"policy   td.Policy(**{changed!r})"]
    if "families" in opts:
        lines.append(f"families {list(opts['families'])!r}")
    if opts.get("tools") is not None:
        lines.append(f"tools    {list(opts['tools'].names)!r}")
    if chunking is not None:
        lines.append(f"chunking {chunking}")
    lines += [f"{k:<8} {v!r}" for k, v in more.items()]
    return "\n".join(lines)


# -- stream and detect against batch --------------------------------------------------------------


def details_problem(events: Sequence[Any], batch_diagnostics: Sequence[td.Diagnostic]) -> str | None:
    """Diagnostics must agree in detail, not only in kind: family, span, detail and message
    do not depend on the cuts (``DetectStream.result()`` promises to equal ``scan()``)."""
    streamed = [e.diagnostic.model_dump() for e in events if isinstance(e, td.DiagnosticEvent)]
    batch = [d.model_dump() for d in batch_diagnostics]
    if streamed == batch:
        return None
    for i, (s, b) in enumerate(zip(streamed, batch)):
        if s != b:
            diff = {k: (b[k], s[k]) for k in b if b[k] != s[k]}
            return f"diagnostic {i} ({b['kind']}) differs from the batch one (batch, stream): {diff}"
    return f"{len(streamed)} diagnostics streamed, {len(batch)} in the batch parse"


def stream_problems(
    text: str, opts: dict[str, Any], chunkings: Iterable[str], seed: int = 0, batch: td.ParseResult | None = None
) -> list[str]:
    """DESIGN §4 at each chunking, and diagnostics equal in detail (``batch``: the parse of
    ``text`` with ``opts``, when the caller has it)."""
    batch = batch if batch is not None else td.parse(text, **opts)
    problems = []
    for chunking in chunkings:
        events = run_stream(text, cuts(text, chunking, seed), **opts)
        problem = stream_problem(text, events, batch) or details_problem(events, batch.diagnostics)
        if problem is not None:
            problems.append(f"[{chunking}] {problem}")
    return problems


def detect_problems(
    text: str, opts: dict[str, Any], chunkings: Iterable[str], seed: int = 0, batch: td.ParseResult | None = None
) -> list[str]:
    """``td.detect.scan`` shows what ``parse`` shows, and ``DetectStream`` fed at each
    chunking equals ``scan`` (DESIGN §9: detect mode is the same engine, read once)."""
    scanned = td.detect.scan(text, **opts)
    batch = batch if batch is not None else td.parse(text, **opts)
    problems = []
    if (scanned.visible, scanned.reasoning) != (batch.text, batch.reasoning):
        problems.append("scan() shows other text or reasoning than parse()")
    if [(i.name, i.arguments, i.span) for i in scanned.intents] != [(c.name, c.arguments, c.span) for c in batch.calls]:
        problems.append("scan() intents differ from parse() calls")
    for chunking in chunkings:
        stream = td.detect.DetectStream(**opts)
        pos = 0
        for cut in [*cuts(text, chunking, seed), len(text)]:
            stream.feed(text[pos:cut])
            pos = cut
        stream.close()
        got = stream.result()
        if got != scanned:
            field = next((f for f in type(got).model_fields if getattr(got, f) != getattr(scanned, f)), "?")
            problems.append(f"[{chunking}] DetectStream differs from scan() in {field}")
    return problems


# -- prefixes: a reply cut off anywhere (DESIGN §7) -----------------------------------------------

_NAME_CHAR = re.compile(r"[\w.\-]")


def _written_name(call: td.ToolCall, result: td.ParseResult) -> str:
    """The name as the model wrote it: before a reported repair, ``call.name`` otherwise."""
    for diag in result.diagnostics:
        if diag.kind == "name_repaired" and diag.span is not None and _overlap(diag.span, call.span):
            return str(diag.detail.get("from", call.name))
    return call.name


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return (a[0] < b[1] and b[0] < a[1]) or a[0] == b[0]


_ABSENT = object()


def _counterpart(call: td.ToolCall, full: td.ParseResult) -> tuple[list[td.ToolCall], td.ToolCall | None]:
    """The calls of the whole reply whose text overlaps ``call``'s, and the one of them
    with the same name nearest to it (spans of a kept cut-off call and of the whole call
    may start at different places: the block, the invoke, the payload); of those equally
    near (calls of one repaired payload share its span), the one whose arguments differ
    least from ``call``'s."""
    near = [f for f in full.calls if _overlap(f.span, call.span)]

    def differ(f: td.ToolCall) -> int:
        return sum(1 for k, v in call.arguments.items() if f.arguments.get(k, _ABSENT) != v)

    same = sorted((f for f in near if f.name == call.name), key=lambda f: (abs(f.span[0] - call.span[0]), differ(f)))
    return near, (same[0] if same else None)


def _closer_in_value(cut: Any, whole: Any) -> bool:
    """DESIGN §7 / decisions 21: a text value ends at a closer where the text could end, so a
    prefix that ends right after ``</parameter>`` reads the value up to it, while the whole
    reply, which goes on after the closer, keeps the closer and what follows in the value.
    The value read up to the closer is typed as any text value is (`-500` a number, `[]` a
    list), while the whole one, closer and all, stays a string: the prefix's value is then
    compared as it was written."""
    if not isinstance(whole, str):
        return False
    if isinstance(cut, str):
        written = {cut}
    else:  # a typed value (3, true, [], {"a": 1}), as JSON or Python would have written it,
        # with the white space around it that typing drops (`> 7 </parameter>` is 7)
        written = {str(cut)} | {
            json.dumps(cut, ensure_ascii=False, separators=sep) for sep in ((", ", ": "), (",", ":"))
        }
        whole = whole.lstrip()
    return any(whole.startswith(w) and whole[len(w) :].lstrip().startswith(("<", "]")) for w in written)


def _json_bodied(family: str) -> bool:
    """Families whose arguments are one self-delimiting object or literal (JSON, Python,
    P-Format): a complete one in a prefix is the whole call's, member for member."""
    from tooldialect import shape

    return not any(isinstance(p, shape.Params) for p in td.families.get(family).shape.call)


def prefix_problems(
    full_text: str, full: td.ParseResult, prefix_text: str, prefix: td.ParseResult, policy: td.Policy
) -> list[str]:
    """A call read from a prefix of a reply is the whole reply's call, cut at most:

    * its name is complete: never the part of a name the end of the prefix cut off, and the
      name the whole reply gives the call at that place;
    * its arguments are the whole call's: under ``truncated="keep"`` a subset (each member
      present has the whole call's value: no value made up from a cut-off one); under
      ``"drop"`` also a subset for text-valued families (a call whose closer was eaten is
      complete, DESIGN §7) and all of them for JSON-bodied ones.

    A call the whole reply does not return at all is allowed (a prefix may be a complete
    reply of its own: bare JSON that is the whole reply, a body refused whole by what
    follows, a call shown in an inline code span closed later), but not with a cut-off name.
    So is any reading of a block the whole reply releases as text for running past
    ``max_block_chars`` (DESIGN §10): the prefix's block fits under the cap, the whole
    reply's does not, and what the whole reply then reads inside it is another reading.
    """
    problems = []
    released = [
        d.span
        for d in full.diagnostics
        if d.kind == "limit_exceeded" and d.detail.get("limit") == "max_block_chars" and d.span is not None
    ]
    for i, call in enumerate(prefix.calls):
        if any(a <= call.span[0] and call.span[1] <= b for a, b in released):
            continue
        near, twin = _counterpart(call, full)
        if twin is not None:
            at_end = call.span[1] == len(prefix_text)
            written = full_text[twin.span[0] : twin.span[1]]
            problems += [f"call {i} ({call.name}) {p}" for p in _argument_problems(call, twin, policy, at_end, written)]
        elif near:
            problems.append(f"call {i} is named {call.name!r}; the whole reply names it {[f.name for f in near]}")
        elif _cut_name(call, prefix, prefix_text, full_text):
            problems.append(f"call {i} is named {call.name!r}, a name the end of the text cut off")
    return problems


def _cut_name(call: td.ToolCall, prefix: td.ParseResult, prefix_text: str, full_text: str) -> bool:
    """The call's text ends with its name at the end of the prefix, and the whole reply
    goes on with a character of a name there."""
    cut = len(prefix_text)
    written = _written_name(call, prefix)
    return call.span[1] == cut and prefix_text.endswith(written) and bool(_NAME_CHAR.match(full_text, cut))


def _line_cut(call: td.ToolCall, at_end: bool, cut: Any, whole: Any) -> bool:
    """decisions.md, "GLM lines at the end of the text": a GLM line on its own ends at its
    line break or at the end of the text, so a line cut off inside its value reads the value
    up to the cut (typed by the schema: `math/x>4` cut from `math/x>42` reads 4)."""
    if not (at_end and call.family == "glm_lines"):
        return False
    if isinstance(cut, str) and isinstance(whole, str):
        return whole.startswith(cut)
    return json.dumps(whole).startswith(json.dumps(cut))


def _written_as_key(key: str, text: str) -> int:
    """How often ``key`` stands in ``text`` as a key is written: a whole word followed by
    what ends a key in some family (``"city":``, ``<parameter=city>``, ``<arg_key>city<``,
    ``city=``), not a word of a value."""
    return len(re.findall(r"(?<!\w)" + re.escape(key) + r"(?!\w)[\"'>:=<]", text))


def _argument_problems(
    call: td.ToolCall, twin: td.ToolCall, policy: td.Policy, at_end: bool = False, written: str = ""
) -> list[str]:
    """``call``'s arguments against its ``twin`` in the whole reply, whose text is
    ``written``: a key the whole call writes again later has its last value there (decision
    39), which a prefix that ends before the repeat cannot know."""
    problems = []
    for key, value in call.arguments.items():
        if key not in twin.arguments:
            problems.append(f"has argument {key!r}={value!r}, which the whole call has not")
        elif (
            value != twin.arguments[key]
            and _written_as_key(key, written) < 2
            and not _closer_in_value(value, twin.arguments[key])
            and not _line_cut(call, at_end, value, twin.arguments[key])
        ):
            problems.append(f"has {key!r}={value!r}; the whole call has {twin.arguments[key]!r}")
    missing = [k for k in twin.arguments if k not in call.arguments]
    if missing and policy.truncated == "drop" and _json_bodied(call.family):
        problems.append(f"is returned without {missing} under truncated='drop' (JSON-bodied: whole or dropped)")
    return problems


# -- nothing lost ------------------------------------------------------------------------------

_WORD = re.compile(r"\w+")
_marker_cache: list[re.Pattern[str]] = []


def _marker_regexes() -> list[re.Pattern[str]]:
    """Every marker, closer and piece of reply furniture the grammars declare: text that
    may be removed without a diagnostic (as :func:`tooldialect.corpus.marker_chars` counts)."""
    if not _marker_cache:
        cat = catalog_for(None)
        terms = [m.terminal for m in cat.markers] + [t for g in cat.grammars for t in g.closers]
        terms += list(cat.reply_furniture)
        regexes = {t.pattern.regex.pattern: t.pattern.regex for t in terms if t.pattern is not None}
        _marker_cache.extend(regexes.values())
    return _marker_cache


def words_outside_markers(text: str) -> dict[str, tuple[int, int]]:
    """The words of ``text`` outside every marker, where they are (the last place of a
    repeated one): the prose words of a reply written by hand."""
    mark = _marker_mask(text)
    return {m.group(): m.span() for m in _WORD.finditer(text) if not any(mark[m.start() : m.end()])}


@functools.lru_cache(maxsize=256)
def _marker_mask(text: str) -> bytes:
    """1 for each character of ``text`` inside a marker (a whole reply is asked again for
    each of its prefixes: kept)."""
    mark = bytearray(len(text))
    for rx in _marker_regexes():
        for m in rx.finditer(text):
            mark[m.start() : m.end()] = b"\1" * (m.end() - m.start())
    return bytes(mark)


_FENCE_INFO = re.compile(r"(?m)^ {0,3}(?:`{3,}|~{3,})[ \t]*(\w+)")


#: A JSON envelope's key right before the call object it holds (`{"tool_call": {…}}`): the
#: envelope is the call's furniture, removed with it.
_ENVELOPE_KEY = re.compile(r'\{\s*"[^"\\]{1,64}"\s*:\s*\Z')


@functools.lru_cache(maxsize=1)
def _call_prefix() -> re.Pattern[str]:
    """The ``call:`` a Gemma-style body writes before a call (``<|tool_call>call:NAME{…}``),
    as the grammars' ``CALL_PREFIX`` spells it, right before a place: furniture of the
    block, removed with it."""
    cat = catalog_for(None)
    spelled = {
        t.pattern.literal
        for g in cat.grammars
        for t in g.terminals.values()
        if t.name == "CALL_PREFIX" and t.pattern is not None and t.pattern.literal
    }
    assert spelled, "no grammar declares CALL_PREFIX"
    return re.compile("(?:" + "|".join(map(re.escape, sorted(spelled))) + r")\s{0,8}\Z")


def _covered(text: str, result: td.ParseResult, markers: bool) -> bytearray:
    """1 for each character inside a call span, a diagnostic span or (``markers``) a marker,
    and in the key of an envelope around a call object or the ``call:`` before a call (a
    call returned, or one a diagnostic reports: ``unknown_tool="drop"`` removes the call
    with its envelope and reports it over the call's own span)."""
    mark = bytearray(_marker_mask(text)) if markers else bytearray(len(text))
    removed = [tuple(d.detail["removed"]) for d in result.diagnostics if "removed" in d.detail]
    envelopes = []
    reported = [d.span for d in result.diagnostics if d.kind == "unknown_tool" and d.span is not None]
    for a, _ in [c.span for c in result.calls] + reported:
        for rx in (_ENVELOPE_KEY, _call_prefix()):
            m = rx.search(text, max(0, a - 80), a)
            if m is not None:
                envelopes.append((m.start(), a))
    for a, b in (
        [c.span for c in result.calls]
        + [d.span for d in result.diagnostics if d.span is not None]
        + removed
        + envelopes
    ):
        mark[a:b] = b"\1" * (b - a)
    return mark


def _shown(result: td.ParseResult) -> str:
    return result.text + "\0" + result.reasoning


def _prose_words(text: str, result: td.ParseResult) -> list[re.Match[str]]:
    """Words outside every call, diagnostic and marker that ``result`` shows as words (each
    as often as it occurs there): the prose of this reading.  Counting whole words, never
    parts of longer ones, errs towards asking for less (``call`` in ``<start_function_call>``
    does not make a removed ``call:`` prose)."""
    mark = _covered(text, result, markers=True)
    words = [m for m in _WORD.finditer(text) if not any(mark[m.start() : m.end()])]
    shown = Counter(m.group() for m in _WORD.finditer(_shown(result)))
    counts = Counter(m.group() for m in words)
    return [m for m in words if shown[m.group()] >= counts[m.group()]]


def lost_prose_problems(full_text: str, full: td.ParseResult, prefix_text: str, prefix: td.ParseResult) -> list[str]:
    """Prose the whole reply shows, written before the cut, is shown by the prefix too, or
    lies in a call or diagnostic of the prefix (a block cut off by the end of the text is
    removed and reported: its diagnostic covers what it removed).  Words the whole reply
    itself removes (block furniture, fence info strings, envelope keys) are not asked for."""
    mark = _covered(prefix_text, prefix, markers=True)
    # a fence's info string is the furniture of a call block the fence opens: a prefix may
    # read a fenced example of the whole reply as a reply of its own (nothing but a ```json
    # fence holding a call, DESIGN §6)
    first_call = min((c.span[0] for c in prefix.calls), default=len(prefix_text))
    for m in _FENCE_INFO.finditer(prefix_text, 0, first_call):
        mark[m.start(1) : m.end(1)] = b"\1" * (m.end(1) - m.start(1))
    need = Counter(
        m.group()
        for m in _prose_words(full_text, full)
        if m.end() <= len(prefix_text) and not any(mark[m.start() : m.end()])
    )
    shown = _shown(prefix)
    lost = sorted(w for w, n in need.items() if shown.count(w) < n)
    return [f"prose the whole reply shows is lost, with no call or diagnostic over it: {lost}"] if lost else []


def lost_word_problems(text: str, result: td.ParseResult, words: dict[str, tuple[int, int]]) -> list[str]:
    """Each prose word (unique, at a known place) is shown as text or reasoning, or lies in
    the span of a returned call or of a diagnostic: a removed block is reported over what
    it removed."""
    mark = _covered(text, result, markers=False)
    shown = _shown(result)
    lost = [w for w, (a, b) in words.items() if w not in shown and not any(mark[a:b])]
    return [f"prose words lost, with no call or diagnostic over them: {lost}"] if lost else []


# -- nothing invented ----------------------------------------------------------------------------


_JSON_ESCAPE = re.compile(r'\\(["\\/bfnrt])')
_JSON_CHARS = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _unescaped(text: str) -> tuple[str, ...]:
    """``text`` with its backslash escapes resolved four ways: each escaped character as
    itself (P-Format ``\\|``); JSON's escapes only, any other backslash kept as written
    (what JSON repair does with ``\\0``); P-Format's then JSON's (a JSON value in a slot);
    and as Python reads them (``\\6`` is U+0006)."""
    plain = re.sub(r"\\(.)", r"\1", text, flags=re.S)
    json_only = _JSON_ESCAPE.sub(lambda m: _JSON_CHARS.get(m.group(1), m.group(1)), text)
    # a JSON value inside a P-Format slot: the slot's escapes, then JSON's
    nested = _JSON_ESCAPE.sub(lambda m: _JSON_CHARS.get(m.group(1), m.group(1)), re.sub(r"\\([\\|\]])", r"\1", text))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an escape Python does not know stays as written
            python = text.encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError:
        return plain, json_only, nested
    return plain, json_only, nested, python


def _written(value: str, text: str, unescaped: tuple[str, ...]) -> bool:
    """Whether the reply writes ``value``: as is, JSON- or Python-escaped, or with its
    backslash escapes resolved."""
    return any(value in u for u in unescaped) or any(form in text for form in _spellings(value))


def _spellings(value: str) -> set[str]:
    """How a string may be written in model text: as is, JSON-escaped, Python-escaped."""
    quoted = {json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1], repr(value)[1:-1]}
    return {value, *quoted, *(q.replace('\\"', '"') for q in quoted), *(q.replace("\\'", "'") for q in quoted)}


def invented_problems(
    text: str, result: td.ParseResult, regions: Sequence[tuple[int, int, str]], tools: td.Toolset | None
) -> list[str]:
    """Every call comes from call markup the reply holds and says only what it wrote:

    * its span meets one of ``regions`` (where call markup was written; prose that quotes a
      marker, a fenced example or an inline code span is not one);
    * its name is written in the reply, as is or escaped as a string (or is the toolset's,
      through a reported repair);
    * each non-empty string in its arguments is written in the reply, and each key too (or
      is a parameter of the tool: P-Format slots are numbered).  Calls read from a region
      of kind ``"corpus"`` (golden texts, with Python escapes and implicit concatenation)
      are checked for their region and name only.
    """
    problems = []
    unescaped = _unescaped(text)
    for i, call in enumerate(result.calls):
        met = [kind for a, b, kind in regions if _overlap(call.span, (a, b))]
        if not met:
            problems.append(f"call {i} ({call.name!r}, span {call.span}) is read from text that holds no call markup")
        if not _written(call.name, text, unescaped) and (tools is None or call.name not in tools.names):
            # (a name is a JSON string in many formats: `"\\read_file"` writes `\read_file`)
            problems.append(f"call {i} is named {call.name!r}, which the reply does not write")
        if "corpus" in met:
            continue
        params = _parameters(tools, call.name)
        for s in _strings(call.arguments, params):
            if s and not _written(s, text, unescaped):
                problems.append(f"call {i} ({call.name}) holds {s!r}, which the reply does not write")
    return problems


def _parameters(tools: td.Toolset | None, name: str) -> set[str]:
    tool = tools.get(name) if tools is not None else None
    return set((tool.parameters or {}).get("properties", {})) if tool is not None else set()


def _strings(value: Any, known_keys: set[str] = frozenset()) -> Iterable[str]:
    """The strings of a JSON value, keys included (except ``known_keys``)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, dict):
        for k, v in value.items():
            if k not in known_keys:
                yield k
            yield from _strings(v)
