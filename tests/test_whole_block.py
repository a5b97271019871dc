"""Reading a whole JSON payload in one step changes nothing a reader can see.

When a payload's whole text is in the window as its reading begins, ``json``'s C decoder
reads it in one step (``Cursor.whole_payload``), but only where the character scanner
``JsonScanner`` would read it exactly the same way; anything else goes through the
scanner.  A payload read in one look is announced complete either way (the call's id on
``CallStart``, the arguments in one ``ArgumentsDelta``), so the two readings must give the
same events, one for one, at every chunking: not only the same ``ParseResult``.  A
difference would make what a client sees depend on a speed-up.

``Shared.whole_steps`` turns the one-step reading off.  Every golden case and generated
canonical and near-canonical JSON blocks of every JSON-payload family run both ways, and
a last test shows the one-step reading is the one canonical JSON actually takes, so the
comparison is not the scanner against itself.  The same holds for whole blocks (section
4) and for the text values read in them (section 5).
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from contract import CHUNKINGS, cuts, describe
from hypothesis import given
from hypothesis import strategies as st
from support import all_cases, budget, long_search, options, run_stream, sweep
from test_render_call import toolset as toolset_for

import tooldialect as td
from tooldialect import catalog
from tooldialect.catalog import catalog_for
from tooldialect.engine import plans, whole
from tooldialect.engine.cursor import Cursor
from tooldialect.engine.shared import Shared
from tooldialect.engine.whole import MAX_TOKENS
from tooldialect.grammar import JSON_EXTERNALS
from tooldialect.jsonscan import JsonScanner
from tooldialect.lalr import Node, Tok

CASES = all_cases()
#: Tests that count the reading path's steps by patching its methods or limits: a compiled
#: build's classes and constants are not patched, so they run on the pure build only.
COUNTS = pytest.mark.skipif(
    td.compiled, reason="counts steps by patching methods a compiled build does not let be patched"
)
#: The chunkings that cut a reply; each golden case runs whole and at two of them.
CUT = ("chars", "threes", "random")
#: The families whose grammar reads a payload with the JSON scanner.
JSON_FAMILIES = tuple(
    name for name in td.families.names() if JSON_EXTERNALS & set(td.families.get(name).grammar.terminals)
)


@pytest.fixture(autouse=True)
def fresh_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no plans made: the plans a catalog keeps are capped
    (``whole.MAX_PLANS``), and after a long run of generated blocks (a thorough profile)
    a new token sequence is read token by token, which the tests that count tokens read
    one by one would take for a plan not taken."""
    for cat in {id(c): c for c in catalog._cache.values()}.values():
        monkeypatch.setitem(cat.engine_cache, "whole blocks", whole.Plans())


@contextmanager
def whole_steps(on: bool) -> Iterator[None]:
    """The one-step reading on or off for what runs inside (a context, not the fixture:
    hypothesis runs many examples in one test call)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Shared, "whole_steps", on)
        yield


def _dump(events: list[td.Event]) -> list[list[Any]]:
    return [[type(e).__name__, e.model_dump()] for e in events]


def _parted(fast: list[Any], slow: list[Any]) -> str:
    """Where two event lists first part, both sides shown."""
    i = next((i for i, (a, b) in enumerate(zip(fast, slow)) if a != b), min(len(fast), len(slow)))
    return (
        f"the readings part at event {i} ({len(fast)} events in one step, {len(slow)} by the scanner)\n"
        f"one step {fast[i : i + 3]!r}\nscanner  {slow[i : i + 3]!r}"
    )


def difference(text: str, opts: dict[str, Any], at: list[int]) -> str | None:
    """How the events of ``text`` cut at ``at`` differ between the two readings, or None."""
    with whole_steps(True):
        fast = _dump(run_stream(text, at, **opts))
    with whole_steps(False):
        slow = _dump(run_stream(text, at, **opts))
    return None if fast == slow else _parted(fast, slow)


def batch_difference(text: str, opts: dict[str, Any]) -> str | None:
    """How ``td.parse`` differs between the two readings, or None."""
    with whole_steps(True):
        fast = td.parse(text, **opts).model_dump()
    with whole_steps(False):
        slow = td.parse(text, **opts).model_dump()
    if fast == slow:
        return None
    field = next(k for k in fast if fast[k] != slow[k])
    return f"parse() differs in {field}: one step {fast[field]!r}, scanner {slow[field]!r}"


# -- 1. the golden corpus ------------------------------------------------------------------------


def _chunkings(i: int) -> tuple[str, ...]:
    """Whole and two cutting chunkings, turning over from case to case (one in the quick
    tier, every one in a long search): each chunking meets two thirds of the corpus."""
    if long_search():
        return CHUNKINGS
    return sweep(("whole", CUT[i % 3], CUT[(i + 1) % 3]), ("whole", CUT[i % 3]))


@pytest.mark.parametrize("family", sorted({case.family for case in CASES}))
def test_golden_cases_read_the_same_either_way(family):
    """The golden cases hold every family's payloads as models wrote them, broken ones too:
    fed whole and cut, and parsed, each gives the same result both ways."""
    failures = []
    for i, case in enumerate(CASES):
        if case.family != family:
            continue
        opts = options(case)
        problems = [batch_difference(case.text, opts)]
        for chunking in _chunkings(i):
            found = difference(case.text, opts, cuts(case.text, chunking, len(case.text)))
            problems.append(found and f"[{chunking}] {found}")
        failures += [f"{case.id}\n{describe(case.text, opts)}\n{p}" for p in problems if p]
    assert not failures, f"{len(failures)} differences; the shortest:\n\n" + "\n\n".join(sorted(failures, key=len)[:3])


# -- 2. canonical and near-canonical JSON blocks ---------------------------------------------------

#: The argument every generated call carries, for the mutations to find and rewrite.
SLOT_KEY, SLOT_VALUE = "_slot_7", 918273645
_SLOT = re.compile(r'(?P<member>"_slot_7"\s*:\s*(?P<value>918273645))')
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
#: Where white space may go: after an opener, a comma or a colon, before a closer.
_BETWEEN_TOKENS = re.compile(r"(?<=[{\[,:])|(?=[}\]])")

CHARS = st.characters(exclude_categories=("Cs",)) | st.sampled_from(
    "\"\\/\b\f\n\r\t\x00\x1f\x7f\u2028\u2029\ufeff\U0001f600\U00010000é<|>{}[]:,'"
)
STRINGS = st.text(CHARS, max_size=12) | st.builds(
    operator.mul, st.text(CHARS, min_size=1, max_size=3), st.integers(40, 300)
)  # long ones cross max_block_chars
NUMBERS = (
    st.integers()
    | st.integers(-(2**80), 2**80)
    | st.sampled_from((0, -1, 2**53 + 1, -(2**63), 10**30))
    | st.floats(allow_nan=False, allow_infinity=False)
)
KEYS = st.sampled_from(("name", "arguments", "id", "parameters", "function", "a", "")) | st.text(CHARS, max_size=6)
VALUES = st.recursive(
    st.none() | st.booleans() | NUMBERS | STRINGS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=10,
)

#: What a model writes in place of a value that strict JSON refuses, or reads otherwise.
RAW_VALUES = (
    "NaN", "-NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1E+400", "1.5e-400", "-0", "-0.0", "0e0",
    "123456789012345678901234567890", "01", "1.", ".5", "+1", "0x1F", "1_000", "True", "None", "undefined",
    "nul", "tru", "'single'", "'it\\'s'", '"raw\nnewline"', '"raw\ttab"', '"raw\rcr"', '"nul\x00"',
    '"\u2028\u2029"', '"\\ud800"', '"\\udc00\\ud800"', '"\\ud83d\\ude00"', '"\\u2028"', '"\\/"', '"\\x41"',
    '"\\u12"', '"\\U0001F600"', '"\\a"', '<|"|>gemma<|"|>', '<|">gemma<|">', '"a<|\\"|>b"', '"<|"|>"',
    "[1,]", '{"a": 1,}', "[,]", "{}", "[]", "[[]]", '{"": {}}', "{'a': 1}", "{a: 1}", '{"a" 1}', '{"a": }',
    "// note\n1", "/* note */ 1", '"a" "b"', '"unterminated', "[1, 2", "{", "}", "]", '"</tool_call>"', '"}"',
)  # fmt: skip
#: Members a model writes that strict JSON refuses, or that repeat a key.
RAW_MEMBERS = (
    '"a": 1, "a": 2', '"name": "shadow"', '"name": "x", "name": "y"', '"arguments": {}', '"id": "call_9"',
    "'k': 1", "k: 1", '"k": 1,', '"k": NaN', ",", '"k" : 1 , ', '"k":1,"k":1', '"arguments": {"a": 1}',
)  # fmt: skip
QUOTE_TOKENS = ('<|"|>', '<|">')
RAW_CHARS = ("\n", "\t", "\r", "\x00", "\x1f", "\x7f", "\u2028", "\u2029", "\ud800")
WHITESPACE = ("", " ", "\n", "\r\n", "\t", "  \n\t ", "\u00a0", "\ufeff", "\x0b", "\x0c")
PREFIXES = ("", "Let me check.\n", "<think>\nfirst the weather\n</think>\n")
TAILS = (" Done.", "\n\nThe weather is", "}", "]", ",", '{"a": 1}', "<tool_call>", "</tool_call>", "\n")
INNER = (
    "value", "member", "deep", "trailing comma", "single quotes", "raw character", "quote token",
    "reformat", "whitespace", "id", "second payload", "cut payload",
)  # fmt: skip
OUTER = ("none", "none", "text after", "cut anywhere")


@dataclass
class Block:
    """A generated reply holding one family's JSON block, and how it is fed."""

    text: str
    opts: dict[str, Any]
    chunking: str
    at: list[int]
    plan: list[str]

    def __repr__(self) -> str:
        return f"Block(\n{describe(self.text, self.opts, self.chunking, cuts=self.at, plan=self.plan)})"


def _payload(text: str) -> tuple[int, int] | None:
    """The first JSON value of the block: the payload the mutations break (None once an
    earlier mutation broke them all)."""
    decoder = json.JSONDecoder()
    for m in re.finditer(r"[{\[]", text):
        try:
            return m.start(), decoder.raw_decode(text, m.start())[1]
        except ValueError:
            continue
    return None


def _open_at(text: str, start: int, pos: int) -> int:
    """How many containers are open at ``pos`` in the JSON beginning at ``start``."""
    depth = 0
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"|[{\[]|[}\]]', text[start:pos]):
        token = m.group()
        depth += 1 if token in "{[" else -1 if token in "}]" else 0
    return depth


def _nested(levels: int, choose: Callable[[Any], Any]) -> str:
    """A value ``levels`` containers deep, of arrays and objects as drawn."""
    out = "0"
    for _ in range(levels):
        out = "[" + out + "]" if choose(st.booleans()) else '{"d": ' + out + "}"
    return out


def _reformat(payload: str, draw: Callable[[Any], Any]) -> str:
    """The payload written again with other white space, separators and escaping."""
    value = json.loads(payload)
    indent = draw(st.sampled_from((None, 0, 2, "\t")))
    separators = draw(st.sampled_from(((",", ":"), (", ", ": "), (" , ", " : "))))
    return json.dumps(value, indent=indent, separators=separators, ensure_ascii=draw(st.booleans()))


def _in_string(draw: Callable[[Any], Any], text: str, ps: int, pe: int) -> tuple[int, int] | None:
    strings = [m.span() for m in _STRING.finditer(text, ps, pe)]
    return draw(st.sampled_from(strings)) if strings else None


def _inner(draw: Callable[[Any], Any], text: str, how: str, max_depth: int) -> str:
    """``text`` with its payload broken the way ``how`` says (unchanged where it cannot be)."""
    payload = _payload(text)
    if payload is None:
        return text
    ps, pe = payload
    slot = _SLOT.search(text, ps, pe)
    if how in ("value", "member", "deep") and slot is not None:
        if how == "member":
            return text[: slot.start()] + draw(st.sampled_from(RAW_MEMBERS)) + text[slot.end() :]
        if how == "value":
            raw = draw(st.sampled_from(RAW_VALUES) | st.text(CHARS, max_size=8).map(lambda s: '"' + s + '"'))
        else:  # nested to max_depth, one less or one more, counting the containers around it
            raw = _nested(max(0, max_depth - _open_at(text, ps, slot.start("value")) + draw(st.integers(-1, 1))), draw)
        return text[: slot.start("value")] + raw + text[slot.end("value") :]
    if how == "trailing comma":
        closers = [m.start() for m in re.finditer(r"[}\]]", text[ps:pe])]
        at = ps + draw(st.sampled_from(closers))
        return text[:at] + draw(st.sampled_from((",", ", ", ",\n"))) + text[at:]
    if how in ("single quotes", "raw character", "quote token"):
        span = _in_string(draw, text, ps, pe)
        if span is None:
            return text
        a, b = span
        if how == "single quotes":
            return text[:a] + "'" + text[a + 1 : b - 1] + "'" + text[b:]
        if how == "raw character":
            at = draw(st.integers(a + 1, b - 1))
            return text[:at] + draw(st.sampled_from(RAW_CHARS)) + text[at:]
        quote = draw(st.sampled_from(QUOTE_TOKENS))
        if draw(st.booleans()):
            return text[:a] + quote + text[a + 1 : b - 1] + quote + text[b:]
        at = draw(st.integers(a + 1, b - 1))
        return text[:at] + quote + text[at:]
    if how == "reformat":
        return text[:ps] + _reformat(text[ps:pe], draw) + text[pe:]
    if how == "whitespace":
        at = draw(st.sampled_from([m.start() for m in _BETWEEN_TOKENS.finditer(text, ps, pe)]))
        return text[:at] + draw(st.sampled_from(WHITESPACE)) + text[at:]
    if how == "id" and text[ps] == "{":
        member = '"id": ' + json.dumps(draw(st.sampled_from(("call_1", "", "a1B2c3D4e")) | STRINGS))
        return text[: ps + 1] + member + ", " + text[ps + 1 :]
    if how == "second payload":
        return text[:pe] + draw(st.sampled_from(("", " ", "\n", ",", ", "))) + text[ps:pe] + text[pe:]
    if how == "cut payload":
        return text[: draw(st.integers(ps, pe))]
    return text


def _policy(draw: Callable[[Any], Any], text: str) -> td.Policy:
    """Small limits as drawn; a cap may fall right around the end of the payload (the
    rendered block begins at its opener)."""
    cap = draw(st.sampled_from(("default", "small", "around")))
    fields: dict[str, Any] = {
        "max_depth": draw(st.sampled_from((64, 64, 2, 3, 4, 5, 8))),
        "truncated": draw(st.sampled_from(("drop", "keep"))),
    }
    if cap == "small":
        fields["max_block_chars"] = 256
    elif cap == "around":
        payload = _payload(text)
        end = payload[1] if payload is not None else len(text)
        fields["max_block_chars"] = max(256, end + draw(st.integers(-2, 2)))
    return td.Policy(**fields)


def _calls(draw: Callable[[Any], Any], parallel: bool) -> list[dict[str, Any]]:
    """One call whose arguments hold the slot the mutations rewrite, and maybe a second."""
    items = list(draw(st.dictionaries(KEYS.filter(lambda k: k != SLOT_KEY), VALUES, max_size=4)).items())
    items.insert(draw(st.integers(0, len(items))), (SLOT_KEY, SLOT_VALUE))
    calls = [{"name": draw(st.sampled_from(("get_weather", "f", "lookup_v2"))), "arguments": dict(items)}]
    if parallel and draw(st.booleans()):
        calls.append({"name": "f", "arguments": {"a": draw(VALUES)}})
    return calls


@st.composite
def blocks(draw: Callable[[Any], Any], mutations: tuple[str, ...], outer: tuple[str, ...]) -> Block:
    """A block of a JSON-payload family as its writer renders it, broken by up to two of
    ``mutations`` (none: canonical) and one of ``outer``, after prose as drawn."""
    family = draw(st.sampled_from(JSON_FAMILIES))
    fam = td.families.get(family)
    calls = _calls(draw, fam.shape.parallel)
    text = fam.render_calls(calls)
    plan = [family]
    policy = _policy(draw, text)  # limits first: the deep mutation aims at max_depth
    for how in draw(st.lists(st.sampled_from(mutations), min_size=1, max_size=2)) if mutations else ():
        plan.append(how)
        text = _inner(draw, text, how, policy.max_depth)
    after = draw(st.sampled_from(outer))
    if after == "text after":
        text += draw(st.sampled_from(TAILS) | st.text(CHARS, max_size=8))
    elif after == "cut anywhere":
        text = text[: draw(st.integers(0, len(text)))]
    if after != "none":
        plan.append(after)
    text = draw(st.sampled_from(PREFIXES)) + text
    opts: dict[str, Any] = {"policy": policy}
    if family == "glm_lines" or draw(st.booleans()):  # glm_lines reads only the toolset's names
        opts["tools"] = toolset_for(*calls)
    chunking = draw(st.sampled_from(("random", "random", "threes", "chars")))
    at = cuts(text, chunking, draw(st.integers(0, 2**16)))
    return Block(text, opts, chunking, at, plan)


def _check(block: Block) -> None:
    """Parsed, fed whole and fed at the block's cuts (the same cuts both ways): one result."""
    problems = [batch_difference(block.text, block.opts)]
    problems += [difference(block.text, block.opts, at) for at in ([], block.at)]
    found = [p for p in problems if p]
    assert not found, f"{block!r}\n" + "\n".join(found)


@budget(200)
@given(block=blocks((), ("none", "text after")))
def test_canonical_blocks_read_the_same_either_way(block):
    """What a writer renders is what the one step reads: it must announce the very calls
    the scanner announces, ids and argument text included."""
    _check(block)


@budget(700)
@given(block=blocks(INNER, OUTER))
def test_near_canonical_blocks_read_the_same_either_way(block):
    """Near the edge of strict JSON (what json accepts and the scanner reads otherwise, a
    limit just met or just passed, a payload cut off or followed by more) the one step
    must either read exactly what the scanner reads or leave the payload to it."""
    _check(block)


# -- 3. the one-step reading is the one taken -------------------------------------------------------


def counting(
    owner: type, method: str, text: str, on: bool, feed: list[int] | None, **opts: Any
) -> tuple[int, list[list[Any]]]:
    """How many times ``owner.method`` runs while ``text`` is read (fed at ``feed``, or
    parsed) with the one-step readings on or off, and the events."""
    count = 0
    original = getattr(owner, method)

    def counted(self: Any, *args: Any) -> Any:
        nonlocal count
        count += 1
        return original(self, *args)

    with pytest.MonkeyPatch.context() as mp, whole_steps(on):
        mp.setattr(owner, method, counted)
        events = run_stream(text, feed or [], **opts)
    return count, _dump(events)


def scans(text: str, on: bool, feed: list[int] | None = None, **opts: Any) -> tuple[int, list[list[Any]]]:
    """How many times ``JsonScanner.scan`` runs while ``text`` is read, and the events."""
    return counting(JsonScanner, "scan", text, on, feed, **opts)


CALL = {"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2], "opts": {"unit": None}}}


@COUNTS
@pytest.mark.parametrize("family", JSON_FAMILIES)
def test_a_canonical_block_takes_no_scanner_step(family):
    """Each JSON-payload family's own rendering is read in one step, and calls come back."""
    text = td.families.get(family).render_calls([CALL])
    tools = toolset_for(CALL)
    fast, fast_events = scans(text, True, tools=tools)
    slow, slow_events = scans(text, False, tools=tools)
    assert fast == 0 and slow > 0, (fast, slow)
    assert fast_events == slow_events
    assert [c.name for c in td.parse(text, tools=tools).calls] == ["get_weather"]


@COUNTS
def test_a_payload_arriving_in_one_delta_takes_no_scanner_step():
    """The opener in one delta and the payload in the next: the payload is whole when its
    reading begins, so a stream takes the one step too."""
    text = '<tool_call>\n{"name": "f", "arguments": {"a": [1, {"b": "x"}]}}\n</tool_call>'
    fast, fast_events = scans(text, True, feed=[12])
    slow, slow_events = scans(text, False, feed=[12])
    assert fast == 0 and slow > 0, (fast, slow)
    assert fast_events == slow_events


@COUNTS
@pytest.mark.parametrize("families", [["qwen3_coder", "hermes"], None])
def test_a_candidate_whose_first_token_matches_nothing_fails_in_the_one_step(families):
    """A family sharing the opener whose terminals may begin at the body's first character
    (`<` begins the closer) but none of which matches there ends where its first
    token-by-token step would, in the one step: no candidate is read token by token."""
    reply = "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>"
    fast, fast_events = counting(Cursor, "_read_token", reply, True, None, families=families)
    slow, slow_events = counting(Cursor, "_read_token", reply, False, None, families=families)
    assert fast == 0 < slow, (fast, slow)
    assert fast_events == slow_events


@COUNTS
def test_a_text_value_read_in_one_step_takes_its_stops_from_the_plan():
    """The stops of a raw text value read in one step are the plan's, worked out once per
    plan, not looked up by the parser's stack for every value."""
    from tooldialect.engine.values import TextValues

    call = "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n<parameter=b>\nx y\n</parameter>\n</function>\n</tool_call>\n"
    reply = "Two calls.\n" + call * 20
    fast, fast_events = counting(TextValues, "stops", reply, True, None, families=["qwen3_coder"])
    slow, slow_events = counting(TextValues, "stops", reply, False, None, families=["qwen3_coder"])
    assert fast <= 2 and slow >= 40, (fast, slow)
    assert fast_events == slow_events


def _hermes(arguments: str) -> str:
    return '<tool_call>{"name": "f", "arguments": ' + arguments + "}</tool_call>"


FALLBACKS = {
    "single quotes": ("<tool_call>{'name': 'f', 'arguments': {'a': 1}}</tool_call>", {}),
    "NaN": (_hermes('{"a": NaN}'), {}),
    "Infinity": (_hermes('{"a": -Infinity}'), {}),
    "a trailing comma": (_hermes('{"a": 1,}'), {}),
    "a raw newline in a string": (_hermes('{"a": "x\ny"}'), {}),
    "nesting past max_depth": (_hermes('{"a": [[1]]}'), {"max_depth": 3}),
    "past max_block_chars": (_hermes('{"a": "' + "x" * 300 + '"}'), {"max_block_chars": 256}),
    "cut off": ('<tool_call>{"name": "f", "arguments": {"a": 1', {}),
}


@COUNTS
@pytest.mark.parametrize("title", list(FALLBACKS))
def test_a_near_canonical_block_falls_back_to_the_scanner(title):
    """What strict JSON reads otherwise than the scanner (or cannot read) is the scanner's,
    with the one-step reading on, and gives the same events as with it off."""
    text, fields = FALLBACKS[title]
    policy = td.Policy(**fields)
    fast, fast_events = scans(text, True, policy=policy)
    slow, slow_events = scans(text, False, policy=policy)
    assert fast > 0 and slow > 0, (fast, slow)
    assert fast_events == slow_events


@COUNTS
def test_nesting_at_max_depth_is_still_one_step():
    """A payload exactly ``max_depth`` deep is within the limit: the one step reads it."""
    text = _hermes('{"a": [1]}')
    fast, _ = scans(text, True, policy=td.Policy(max_depth=3))
    assert fast == 0


# -- 4. a whole block read in one step --------------------------------------------------------------
#
# A block whose tokens are all in the window when its opener is found (markers, bare tokens,
# strict JSON payloads, raw text values; no quoted string) is read by one plan per token sequence
# (engine/whole.py): the candidate's own lexing finds the tokens, and the nodes the parser
# would build are built from the plan.  The differential tests above turn it off with the
# payload step; here it is shown taken, and checked where a plan must give way.


def reads(text: str, on: bool, feed: list[int] | None = None, **opts: Any) -> tuple[int, list[list[Any]]]:
    """How many tokens the candidates look for one by one (``Cursor._read_token``) while
    ``text`` is read, and the events."""
    return counting(Cursor, "_read_token", text, on, feed, **opts)


#: Families whose own rendering of calls is read whole (text values too: the last seven), what
#: follows the calls, and the tokens still looked for one by one: a block that may go on at
#: the end of the text (Mistral's calls end with their payload) waits, and its end is read
#: when the stream closes.
WHOLE = [
    ("hermes", "\nDone.", 0), ("kimi_k2", "\nDone.", 0), ("harmony", "", 0), ("mistral", "", 2),
    ("deepseek", "\nDone.", 0), ("functionary", "\nDone.", 0), ("json_array", "\nDone.", 0),
    ("solar_open", "\nDone.", 0), ("apertus", "\nDone.", 0), ("qwen3_coder", "\nDone.", 0),
    ("invoke_xml", "\nDone.", 0), ("glm", "\nDone.", 0), ("minimax_m3", "\nDone.", 0),
    ("functiongemma", "\nDone.", 0), ("hy3", "\nDone.", 0), ("minicpm5", "\nDone.", 0),
]  # fmt: skip


@COUNTS
@pytest.mark.parametrize(("family", "tail", "looks"), WHOLE)
def test_a_whole_block_reads_no_token_one_by_one(family, tail, looks):
    """Each of these families' rendering, one call or two, is read by a plan: no token of
    the block is looked for one by one, and the events are those of the token-by-token
    reading."""
    fam = td.families.get(family)
    calls = [CALL, CALL] if fam.shape.parallel else [CALL]
    text = fam.render_calls(calls) + tail
    tools = toolset_for(CALL)
    fast, fast_events = reads(text, True, tools=tools, families=[family])
    slow, slow_events = reads(text, False, tools=tools, families=[family])
    assert fast == looks and slow > looks, (fast, slow)
    assert fast_events == slow_events
    assert [c.name for c in td.parse(text, tools=tools, families=[family]).calls] == ["get_weather"] * len(calls)


#: Long enough for a size cap (at least 256 characters) to fall at its closer.
HERMES_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "' + "Paris " * 45 + '"}}\n</tool_call>'
#: Around a block a plan reads: what follows it, where it stands, and the limits met at its end.
EDGES = {
    "a doubled closer": HERMES_CALL + "</tool_call>\nok",
    "a closer in another spelling": HERMES_CALL.replace("</tool_call>", "</TOOL_CALL>") + " ok",
    "an opener after the closer": HERMES_CALL + "<tool_call>",
    "a second block on the next line": HERMES_CALL + "\n" + HERMES_CALL,
    "prose right after the closer": HERMES_CALL + "Done.",
    "a cut marker after the closer": HERMES_CALL + "\n</tool_ca",
    "a second payload in the block": HERMES_CALL.replace(
        "\n</tool_call>", '{"name": "f", "arguments": {}}</tool_call>'
    ),
    "no closer": HERMES_CALL.replace("\n</tool_call>", "") + "\n\nThat is all.",
    "a payload that is no call": '<tool_call>{"city": "Paris"}</tool_call> ok',
    "an empty name": '<tool_call>{"name": "", "arguments": {}}</tool_call>',
    "arguments not an object": '<tool_call>{"name": "f", "arguments": 5}</tool_call>',
    "after prose on its line": "Calling " + HERMES_CALL + " now",
    "inside reasoning": "<think>maybe " + HERMES_CALL + "</think>\nok",
    "every family on": "Sure.\n" + HERMES_CALL + "\n" + HERMES_CALL,
    "a Kimi section of forty calls": "<|tool_calls_section_begin|>"
    + "".join(
        f'<|tool_call_begin|>functions.get_weather:{i}<|tool_call_argument_begin|>{{"city": "P{i}"}}<|tool_call_end|>'
        for i in range(40)
    )
    + "<|tool_calls_section_end|>",
    "Mistral calls then prose": '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}\nDone.',
    # words after the call and then the end: where the block could end before them is noted
    # as they are read (Cand.shift), so they are prose, not a call cut off
    "Mistral calls then prose ending in a space": '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}\nDone. ',
    # the first block is decided at close() (its payload is cut off), so the second opens
    # once the end of the text is known: a name and no arguments at the end is cut off
    "a block opened after one decided at the end": (
        '<function=write_file>{"path": "notes.md", "content": "Close with </function>; open with <function=name>'
    ),
}
EDGE_POLICIES = {
    "default": {},
    "a cap at the closer": {"max_block_chars": len(HERMES_CALL)},
    "a cap one short": {"max_block_chars": len(HERMES_CALL) - 1},
    "one call at most": {"max_calls": 1},
    "calls in reasoning accepted": {"calls_in_reasoning": "accept"},
}


@pytest.mark.parametrize("policy", list(EDGE_POLICIES))
@pytest.mark.parametrize("title", list(EDGES))
def test_the_edges_of_a_whole_block_read_the_same_either_way(title, policy):
    """Where a plan ends (what may follow a block, a cap met at its closer, a block the
    reader refuses), the one step reads what the token-by-token reading reads, fed whole,
    cut in two after the block's opener and its payload, and a character at a time."""
    text = EDGES[title]
    opts: dict[str, Any] = {"policy": td.Policy(**EDGE_POLICIES[policy])}
    if title != "every family on":
        opts["tools"] = toolset_for({"name": "get_weather", "arguments": {"city": "x"}})
    cut = text.find("{") + 1
    for at in ([], [cut], cuts(text, "chars", len(text))):
        found = difference(text, opts, at)
        assert found is None, f"{title}, {policy}, cut at {at[:3]}: {found}"
    assert batch_difference(text, opts) is None


def _dsml(n: int, param: str = "city") -> str:
    """A DeepSeek V4 DSML block of ``n`` calls (every call of a turn in one block)."""
    calls = "".join(
        f'<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="{param}" string="true">Paris {i}'
        "</｜DSML｜parameter>\n</｜DSML｜invoke>\n"
        for i in range(n)
    )
    return f"<｜DSML｜tool_calls>\n{calls}</｜DSML｜tool_calls>"


def _rendered(family: str, n: int) -> str:
    return td.families.get(family).render_calls(
        [{"name": "get_weather", "arguments": {"city": f"P{i}"}} for i in range(n)]
    )


#: Blocks of many more tokens than ``MAX_TOKENS``, the calls a block holds, and the tokens still
#: looked for one by one, as in a short block of the family: Mistral's last call waits at the
#: end of the text, and prose after its calls begins like a name (a short block is then read
#: token by token, and a long one's last chunk: None).
LONG_BLOCKS = {
    "DSML, 20 calls": ("invoke_xml", _dsml(20), 20, (0, 0)),
    "DSML, 40 calls": ("invoke_xml", _dsml(40), 40, (0, 0)),
    "DSML, 100 calls": ("invoke_xml", _dsml(100), 100, (0, 0)),
    "a Kimi K2 section of 40 calls": ("kimi_k2", _rendered("kimi_k2", 40), 40, (0, 0)),
    "Mistral v11, 40 calls": ("mistral", _rendered("mistral", 40), 40, (2, None)),
}


@COUNTS
@pytest.mark.parametrize("title", list(LONG_BLOCKS))
@pytest.mark.parametrize("tail", ["", "\nDone."])
def test_a_long_block_is_read_in_chunks_with_no_token_one_by_one(title, tail):
    """A plan covers at most ``MAX_TOKENS`` tokens; a longer block is read in chunks, each
    from the parser's stack where the last left it: no token is looked for one by one past
    the first chunk (no more than in a short block), and the events are those of the
    token-by-token reading."""
    family, block, calls, looks = LONG_BLOCKS[title]
    text = "Sure.\n" + block + tail
    fast, fast_events = reads(text, True, families=[family])
    slow, slow_events = reads(text, False, families=[family])
    expected = looks[1 if tail else 0]
    if expected is None:
        assert 0 < fast < MAX_TOKENS // 2 < slow, (fast, slow)  # the last chunk only
    else:
        assert fast == expected and slow > MAX_TOKENS, (fast, slow)
    assert fast_events == slow_events
    assert len(td.parse(text, families=[family]).calls) == calls


@pytest.mark.parametrize("title", list(LONG_BLOCKS))
def test_long_blocks_read_the_same_either_way(title):
    """Fed whole, in random cuts and (the shorter ones) a character at a time."""
    family, block, _, _ = LONG_BLOCKS[title]
    text = "Sure.\n" + block + "\nDone."
    feeds = [[], cuts(text, "random", 1), cuts(text, "random", 2)]
    if len(text) < 6000:
        feeds.append(cuts(text, "chars"))
    for at in feeds:
        found = difference(text, {"families": [family]}, at)
        assert found is None, f"{title}, {len(at)} cuts: {found}"
    assert batch_difference(text, {"families": [family]}) is None


_WORDS = st.sampled_from(["Paris", "a b", "x\ny", "1", "<b>", "日本", "  v  "])


@st.composite
def long_blocks(draw: st.DrawFn) -> tuple[str, str]:
    """A block of 30 to 60 calls of DSML, Kimi K2 or Mistral v11 (each call with its own
    number of arguments and values), then prose or nothing: far longer than one plan."""
    family = draw(st.sampled_from(["invoke_xml", "kimi_k2", "mistral"]))
    calls = []
    for i in range(draw(st.integers(30, 60))):
        args = {f"k{j}": draw(_WORDS) for j in range(draw(st.integers(0, 3)))}
        calls.append((f"f{i % 3}", args))
    if family == "invoke_xml":
        body = "".join(
            f'<｜DSML｜invoke name="{name}">\n'
            + "".join(f'<｜DSML｜parameter name="{k}" string="true">{v}</｜DSML｜parameter>\n' for k, v in args.items())
            + "</｜DSML｜invoke>\n"
            for name, args in calls
        )
        block = f"<｜DSML｜tool_calls>\n{body}</｜DSML｜tool_calls>"
    else:
        block = td.families.get(family).render_calls([{"name": name, "arguments": args} for name, args in calls])
    return family, block + draw(st.sampled_from(["", "\n\nDone.", "\n"]))


@budget(12)
@given(long_blocks(), st.integers(0, 1000))
def test_generated_long_blocks_read_the_same_either_way(block, seed):
    """Long generated blocks read the same with the one-step reading on and off, fed whole
    and in random cuts."""
    family, text = block
    for at in ([], cuts(text, "random", seed)):
        found = difference(text, {"families": [family]}, at)
        assert found is None, f"{len(at)} cuts: {found}"


_FORTY = "Sure.\n" + _dsml(40) + "\nDone."
_CALL30 = _FORTY.index('name="get_weather">', _FORTY.index("Paris 29"))
#: A later chunk that does not fit: damage, the end of the text, the size cap.
LONG_EDGES = {
    "a broken parameter closer in call 30": (
        _FORTY[:_CALL30] + _FORTY[_CALL30:].replace("</｜DSML｜parameter>", "</｜DSML｜paramter>", 1),
        {},
    ),
    "prose inside call 30": (_FORTY[:_CALL30] + "oops " + _FORTY[_CALL30:], {}),
    "a parameter name never closed in call 30": (
        _FORTY[:_CALL30] + _FORTY[_CALL30:].replace('name="city"', 'name="city', 1),
        {},
    ),
    "cut off inside call 30": (_FORTY[: _CALL30 + 40], {}),
    "cut off inside a value": (_FORTY[: _FORTY.index("Paris 33") + 3], {}),
    "cut off after a call": (_FORTY[: _FORTY.index("</｜DSML｜invoke>", _CALL30) + 16], {}),
    "the size cap inside chunk 3": (_FORTY, {"policy": td.Policy(max_block_chars=_FORTY.index("Paris 25"))}),
    "the size cap at a call's end": (
        _FORTY,
        {"policy": td.Policy(max_block_chars=_FORTY.index("</｜DSML｜invoke>", _CALL30) + 16 - len("Sure.\n"))},
    ),
    "one call at most": (_FORTY, {"policy": td.Policy(max_calls=1)}),
}


@pytest.mark.parametrize("title", list(LONG_EDGES))
def test_a_later_chunk_that_does_not_fit_reads_the_same_either_way(title):
    """Where a chunk past the first meets damage, the end of the text or the size cap, the
    reading goes on token by token from where the last chunk left it, or begins again on a
    new candidate: the same events as the token-by-token reading, fed whole, in random cuts
    and two parts."""
    text, opts = LONG_EDGES[title]
    opts = {"families": ["invoke_xml"], **opts}
    for at in ([], cuts(text, "random", 3), [len(text) // 2]):
        found = difference(text, opts, at)
        assert found is None, f"{title}, cut at {at[:3]}: {found}"
    assert batch_difference(text, opts) is None


def test_a_chained_plan_stands_only_for_values_a_reduction_reads_as_it_does():
    """A value on the stack a chained plan starts from is a token, or a node by name, by
    whether its children are all its own and by how many it has (up to two); a node whose
    lone child is a node or lies elsewhere than the node (a reduction may put the child in
    its place), or a value with no place in the text, ends the chaining."""
    tok = Tok("NAME", "f", 4, 5)
    assert plans.shape_of(tok) is None
    assert plans.shape_of(Node("name", [tok], 4, 5)) == ("name", True, 1)
    assert plans.shape_of(Node("name", [tok], 3, 6)) is False  # (a quote kept out of its children)
    assert plans.shape_of(Node("outer", [Node("name", [tok], 4, 5)], 4, 5)) is False
    assert plans.shape_of(Node("__list", [tok, tok, tok], 4, 5)) == ("__list", True, 2)
    assert plans.shape_of(Node("empty", [], None, None)) is False
    grown = Node("__list", [tok, tok], 4, 5)
    grown.size = 1
    assert plans.shape_of(grown) == ("__list", False, 2)


@COUNTS
def test_a_chunk_that_does_not_fit_is_read_token_by_token():
    """Damage in call 30 of 40 leaves the chunks before it read in one step and the rest
    token by token: some tokens are looked for one by one, far fewer than with no step."""
    text = LONG_EDGES["prose inside call 30"][0]
    fast, fast_events = reads(text, True, families=["invoke_xml"])
    slow, slow_events = reads(text, False, families=["invoke_xml"])
    assert 0 < fast < slow // 2 and fast_events == slow_events, (fast, slow)


@COUNTS
def test_many_long_blocks_keep_the_plans_within_budget(monkeypatch):
    """Distinct long blocks make chained roots and plans from them, all counted against
    ``MAX_PLANS``: past it, the rest of a block is read token by token, with the same
    events."""
    monkeypatch.setattr(whole, "MAX_PLANS", 600)
    plans = whole.Plans()
    monkeypatch.setitem(catalog_for(("invoke_xml",)).engine_cache, "whole blocks", plans)
    looks = []
    for n in range(6, 60, 3):
        params = "".join(
            f'<｜DSML｜parameter name="p{j}" string="true">v{j}</｜DSML｜parameter>\n' for j in range(n % 7 + 1)
        )
        text = _dsml(n).replace("</｜DSML｜invoke>", params + "</｜DSML｜invoke>", n % 5 + 1)
        count, events = reads(text, True, families=["invoke_xml"])
        assert reads(text, False, families=["invoke_xml"])[1] == events
        looks.append(count)
    assert 0 < plans.made <= 600 and plans.chained
    assert 0 in looks and looks[-1] > 0, looks  # some read in one step; the last past the budget


@COUNTS
@pytest.mark.parametrize("limit", ["MAX_PLANS", "MAX_ENDING_TOKENS"])
def test_plans_are_bounded(monkeypatch, limit):
    """Plans are kept per token sequence, at most ``MAX_PLANS`` per catalog, and the
    endings worked out for them hold at most ``MAX_ENDING_TOKENS`` tokens in all: past
    either, a new sequence is read token by token, with the same events."""
    monkeypatch.setattr(whole, limit, 10)
    plans = whole.Plans()
    monkeypatch.setitem(catalog_for(("kimi_k2",)).engine_cache, "whole blocks", plans)
    section = "<|tool_calls_section_begin|>{}<|tool_calls_section_end|>"
    body = '<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{"a": 1}<|tool_call_end|>'
    looks = []
    for n in range(1, 5):
        text = section.format(body * n)
        count, events = reads(text, True, families=["kimi_k2"])
        assert reads(text, False, families=["kimi_k2"])[1] == events
        looks.append(count)
    assert getattr(plans, {"MAX_PLANS": "made", "MAX_ENDING_TOKENS": "tokens"}[limit]) <= 10
    assert looks[0] == 0 and looks[-1] > 0, looks  # the first in one step; the last past the limit


# -- 5. text values in a whole block ---------------------------------------------------------------
#
# A value written as raw text is found by the text-values room's own search (its stops, the
# reader's ``stop_ok``), and only a stop that surely ends it lets the plan go on; a stop
# still undecided, one that only may end it (``Stop.MAYBE``), one whose verdict depends on
# the tool being called, or no stop at all leaves the block to the token-by-token reading.

#: The families whose values are raw text, spelled as three models write them.
TEXT_FAMILIES = {
    "qwen3_coder": (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\n{v}\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"
    ),
    "invoke_xml": (
        '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_weather">\n'
        '<｜DSML｜parameter name="city" string="true">{v}</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜tool_calls>"
    ),
    "glm": "<tool_call>get_weather<arg_key>city</arg_key><arg_value>{v}</arg_value>"
    "<arg_key>days</arg_key><arg_value>3</arg_value></tool_call>",
}
#: Each family's closer of the value above, to cut or break.
VALUE_CLOSERS = {"qwen3_coder": "</parameter>", "invoke_xml": "</｜DSML｜parameter>", "glm": "</arg_value>"}
FILE_CONTENT = 'def f(a, b):\n    """<tool_call> is text here"""\n    return a < b > 0\n\n\n# </tool_call\n'
#: Values a model writes, and texts around them (``{c}``: the family's value closer).
TEXT_VALUES = {
    "plain": "Paris",
    "an empty value": "",
    "only newlines": "\n\n\n",
    "a partial closer": "Paris {c_}",
    "a partial closer then more": "a {c_} b",
    "another family's marker": "<tool_call></arg_value></parameter><|tool_call_end|>]<]minimax[>[</x>",
    "a multi-line file": FILE_CONTENT,
    "past the smallest cap": "Paris, " * 36,
    "backslashes and quotes": 'C:\\\\new\\n "q" \\\\',
    "a parameter opener": "x\n<parameter=days>\n4",
    "a stray opener": "x\n<parameter=unknown>\ny",
    "a closer followed by text": "a{c}b",
}
TEXT_AROUND = {
    "whole": "{block}\nDone.",
    "at the end of the text": "{block}",
    "a cut stop": "{cut}",
    "no value closer at the end": "{bare}",
    "no block closer at the end": "{open}",
    "two blocks": "{block}\n{block}",
    "after prose": "Sure. {block} ok",
}


def _text_reply(family: str, value: str, around: str) -> str:
    closer = VALUE_CLOSERS[family]
    value = value.replace("{c_}", closer[:-1]).replace("{c}", closer)
    block = TEXT_FAMILIES[family].replace("{v}", value)
    first = block.index(closer, block.index(value) + len(value))  # where the value's closer is
    cut, bare, unclosed = block[: first + len(closer) - 2], block[:first], block[: block.rindex("<")]
    return around.format(block=block, cut=cut, bare=bare, open=unclosed)


TEXT_POLICIES = {
    "default": {},
    "the smallest cap": {"max_block_chars": 256},
    "one call at most": {"max_calls": 1},
    "partial calls kept": {"truncated": "keep"},
    "calls in reasoning accepted": {"calls_in_reasoning": "accept"},
}


@pytest.mark.exhaustive
@pytest.mark.parametrize("policy", list(TEXT_POLICIES))
@pytest.mark.parametrize("around", list(TEXT_AROUND))
@pytest.mark.parametrize("value", list(TEXT_VALUES))
@pytest.mark.parametrize("family", list(TEXT_FAMILIES))
def test_the_edges_of_a_text_value_read_the_same_either_way(family, value, around, policy):
    """A text value at the edges of its stops (cut, partial, another family's, empty, only
    newlines, a file's lines, a parameter's opener inside it, no closer at all), fed whole,
    cut after the opener and a character at a time, and parsed: the same events both ways."""
    text = _text_reply(family, TEXT_VALUES[value], TEXT_AROUND[around])
    opts: dict[str, Any] = {"policy": td.Policy(**TEXT_POLICIES[policy]), "families": [family, "hermes"]}
    if policy != "default":
        opts["tools"] = toolset_for({"name": "get_weather", "arguments": {"city": "x", "days": 1}})
    for at in ([], [text.find(">") + 1], cuts(text, "chars", len(text))):
        found = difference(text, opts, at)
        assert found is None, f"{family}, {value}, {around}, {policy}, cut at {at[:3]}: {found}"
    assert batch_difference(text, opts) is None


WEATHER_TOOLS = {"name": "get_weather", "arguments": {"city": "x", "days": 1}}


@COUNTS
@pytest.mark.parametrize("family", list(TEXT_FAMILIES))
def test_a_text_block_reads_no_token_one_by_one(family):
    """These spellings, a file's lines in a value, are read by a plan, and the call is the
    token-by-token reading's."""
    text = _text_reply(family, FILE_CONTENT, TEXT_AROUND["whole"])
    tools = toolset_for(WEATHER_TOOLS)
    fast, fast_events = reads(text, True, tools=tools, families=[family])
    slow, slow_events = reads(text, False, tools=tools, families=[family])
    assert fast == 0 and slow > 0, (fast, slow)
    assert fast_events == slow_events
    (call,) = td.parse(text, tools=tools, families=[family]).calls
    assert call.arguments["city"].strip("\n") == FILE_CONTENT.strip("\n")


#: Text values whose end the plan does not decide: (family, value, with the toolset).
TEXT_FALLBACKS = {
    "a stop whose verdict depends on the tool": ("qwen3_coder", "x\n<parameter=days>\n4", True),
    "a closer that only may end the value": ("qwen3_coder", "a{c}b", False),
    "a closer followed by text it cannot precede": ("glm", "a{c}b", False),
    "a value cut off": ("invoke_xml", "Paris", False),
}


@COUNTS
@pytest.mark.parametrize("title", list(TEXT_FALLBACKS))
def test_an_undecided_text_value_is_read_token_by_token(title):
    """Where the first stop does not surely end the value (or none comes), the block is
    read token by token, with the same events as with the one step off."""
    family, value, with_tools = TEXT_FALLBACKS[title]
    around = TEXT_AROUND["a cut stop" if title == "a value cut off" else "whole"]
    text = _text_reply(family, value, around)
    opts: dict[str, Any] = {"families": [family]}
    if with_tools:
        opts["tools"] = toolset_for(WEATHER_TOOLS)
    fast, fast_events = reads(text, True, **opts)
    slow, slow_events = reads(text, False, **opts)
    assert fast > 0 and fast_events == slow_events, (fast, slow)


#: Pieces of text values: characters, and markers of these families whole and cut.
TEXT_PIECES = CHARS | st.sampled_from(
    ("</parameter>", "</parameter", "<parameter=days>", "<parameter=", "</function>", "</arg_value>",
     "<arg_key>", "</｜DSML｜parameter>", "</｜DSML｜invoke>", "<tool_call>", "</tool_call>", "\\", "\n", "\r\n")
)  # fmt: skip


@st.composite
def text_blocks(draw: Callable[[Any], Any], broken: bool) -> Block:
    """A block of a text-value family as its writer renders it (values of text and of
    markers), then, when ``broken``, cut anywhere, followed by text, or with a character
    taken out; after prose as drawn."""
    family = draw(st.sampled_from(("qwen3_coder", "invoke_xml", "glm", "minimax_m3", "hy3", "minicpm5")))
    fam = td.families.get(family)
    # text values are written in after rendering (the writer refuses a value holding its stops)
    raw = [draw(st.lists(TEXT_PIECES, max_size=6).map("".join)) for _ in range(4)]
    values = st.sampled_from([f"VALUE{i}" for i in range(len(raw))]) | st.integers(-5, 5) | st.booleans()
    args = draw(st.dictionaries(st.sampled_from(("city", "days", "path", "q")), values, min_size=1, max_size=3))
    calls = [{"name": draw(st.sampled_from(("get_weather", "f"))), "arguments": args}]
    if fam.shape.parallel and draw(st.booleans()):
        calls.append({"name": "f", "arguments": {"a": draw(values)}})
    text = fam.render_calls(calls)
    for i, value in enumerate(raw):
        text = text.replace(f"VALUE{i}", value)
    plan = [family]
    if broken:
        how = draw(st.sampled_from(("cut anywhere", "text after", "a character out")))
        plan.append(how)
        if how == "cut anywhere":
            text = text[: draw(st.integers(0, len(text)))]
        elif how == "text after":
            text += draw(st.sampled_from(TAILS) | st.lists(TEXT_PIECES, max_size=4).map("".join))
        else:
            at = draw(st.integers(0, len(text) - 1))
            text = text[:at] + text[at + 1 :]
    text = draw(st.sampled_from(PREFIXES)) + text
    opts: dict[str, Any] = {"policy": _policy(draw, text)}
    if draw(st.booleans()):
        opts["tools"] = toolset_for(*calls)
    chunking = draw(st.sampled_from(("random", "threes", "chars")))
    return Block(text, opts, chunking, cuts(text, chunking, draw(st.integers(0, 2**16))), plan)


@budget(150)
@given(block=text_blocks(False))
def test_canonical_text_blocks_read_the_same_either_way(block):
    """What a writer of text values renders is what the one step reads."""
    _check(block)


@budget(400)
@given(block=text_blocks(True))
def test_near_canonical_text_blocks_read_the_same_either_way(block):
    """A text block cut, followed by text or missing a character: the one step reads what
    the token-by-token reading reads, or leaves the block to it."""
    _check(block)
