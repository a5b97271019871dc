"""The engine's rooms, each on its own: the window, the sink, the loop watch, the bracket
counter, the lexicon and the keys (docs/engine.md).  The whole engine is tested through
its public API everywhere else; these pin what each room promises the others."""

from __future__ import annotations

import re
from typing import ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tooldialect as td
from tooldialect.catalog import catalog_for
from tooldialect.engine import window
from tooldialect.engine.cand import Cand, Lexicon, furthest
from tooldialect.engine.events import Sink
from tooldialect.engine.kinds import Channel, Key, Reading, Source
from tooldialect.engine.search import Skipping
from tooldialect.engine.watches import Balance, LoopWatch
from tooldialect.engine.window import Held, Window

# -- the window ----------------------------------------------------------------------------------


@given(st.text(alphabet="ab\n<>", max_size=60), st.data(), st.sampled_from([1, 5, window.PIECE]))
def test_window_keeps_every_character_once_through_compaction_and_rewind(text, data, piece):
    """Whatever is compacted into a holder and rewound comes back exactly: ``slice`` reads
    the same text wherever it is kept, and nothing is held twice (with pieces joined up to
    ``piece`` characters)."""
    saved, window.PIECE = window.PIECE, piece
    try:
        _compact_and_rewind(text, data)
    finally:
        window.PIECE = saved


def test_a_block_read_in_small_deltas_is_held_in_few_pieces():
    text = "x" * (3 * window.PIECE)
    w = Window()
    held = Held(0, "\n")
    w.hold(held)
    for k in range(0, len(text), 4):
        w.append(text[k : k + 4])
        w.compact(w.end, 0)
    assert held.text() == text and len(held.pieces) == 3
    assert w.slice(10, len(text) - 10) == text[10:-10]
    w.rewind(window.PIECE + 7)
    assert held.text() == text[: window.PIECE + 7] and w.win == text[window.PIECE + 7 :]


def _compact_and_rewind(text: str, data: st.DataObject) -> None:
    w = Window()
    held = Held(0, "\n")
    w.hold(held)
    pos = 0
    while pos < len(text):
        step = data.draw(st.integers(1, 7))
        w.append(text[pos : pos + step])
        pos += step
        look = data.draw(st.integers(w.base, w.base + len(w.win)))
        w.compact(look, 0)
        assert held.text() + w.win == text[:pos]  # the holder keeps from its start
        lo = data.draw(st.integers(0, pos))
        hi = data.draw(st.integers(lo, pos))
        assert w.slice(lo, hi) == text[lo:hi]
    back = data.draw(st.integers(0, len(text)))
    w.rewind(back)
    assert w.base + w.cur == back
    assert held.text() + w.win == text  # rewound text is in the window, not in the holder too
    assert w.tail_at(w.cur) == ("\n" + text[:back])[-4:]


def test_window_skip_and_end():
    w = Window()
    w.skip("hello world")
    assert (w.base, w.end, w.prev_tail) == (11, 11, "orld")
    w.win = "ab"
    assert w.end == 13 and w.tail_at(1) == "rlda"


# -- the sink -------------------------------------------------------------------------------------


def test_sink_merges_prose_per_channel_and_keeps_order():
    s = Sink()
    s.text("a", Channel.TEXT)
    s.text("b", Channel.TEXT)
    s.text("r", Channel.REASONING)
    s.event(td.CallAbort(index=0, reason="x"))
    s.text("", Channel.TEXT)  # nothing to say: no event
    s.text("c", Channel.TEXT)
    out = s.drain()
    assert [type(e).__name__ for e in out] == ["TextDelta", "ReasoningDelta", "CallAbort", "TextDelta"]
    assert [getattr(e, "text", None) for e in out] == ["ab", "r", None, "c"]
    assert s.drain() == []


def test_sink_gives_a_lone_delta_only_when_nothing_waits():
    s = Sink()
    [ev] = s.lone("think", Channel.REASONING)
    assert type(ev).__name__ == "ReasoningDelta" and ev.text == "think"
    assert not s.line_prose  # reasoning is not the visible line
    [ev] = s.lone("Hi", Channel.TEXT)
    assert type(ev).__name__ == "TextDelta" and ev.text == "Hi" and s.line_prose
    assert s.lone("\n ", Channel.TEXT) is not None and not s.line_prose
    s.text("a", Channel.TEXT)
    assert s.lone("b", Channel.TEXT) is None  # "a" waits: "b" must merge with it
    s.text("b", Channel.TEXT)
    assert [e.text for e in s.drain()] == ["ab"]
    s.event(td.CallAbort(index=0, reason="x"))
    assert s.lone("c", Channel.TEXT) is None  # an event waits: order is kept


def test_sink_follows_whether_the_line_has_prose():
    s = Sink()
    s.text("Use ", Channel.TEXT)
    assert s.line_prose
    s.text("done.\n  ", Channel.TEXT)
    assert not s.line_prose  # a new line with only spaces so far
    s.text("x", Channel.TEXT)
    assert s.line_prose
    s.text("y", Channel.TEXT)  # the line goes on, and still holds prose
    assert s.line_prose
    s.text("z\n", Channel.TEXT)
    assert not s.line_prose


# -- held tails ----------------------------------------------------------------------------------

_CAT = catalog_for(None)
_PREFIXES = sorted(
    {m.terminal.pattern.literal[:k] for m in _CAT.markers if m.terminal.pattern.literal for k in range(1, 9)}
)


@given(st.sampled_from(_PREFIXES), st.text(alphabet="<|>/_ab\n", max_size=3), st.booleans())
def test_a_held_tail_is_judged_as_every_marker_would_judge_it(prefix, junk, twice):
    """``Catalog.cut_off`` (remembered per tail) says what asking each marker that begins
    with the tail's first character says: whether one may be cut off by the tail's end."""
    tail = (prefix + junk)[: _CAT.max_width]
    want = any(m.terminal.pattern.needs_more(tail, 0) for m in _CAT.at(tail, 0))
    assert _CAT.cut_off(tail) is want
    if twice:
        assert _CAT.cut_off(tail) is want  # and the same when remembered


_SOURCES = sorted({m.terminal.pattern.literal for m in _CAT.markers if m.terminal.pattern.literal})


@given(st.sampled_from(_SOURCES), st.integers(0, 12), st.text(alphabet="<|>/_abtc\n", max_size=12))
def test_the_markers_viable_at_a_place_are_those_that_match_or_may_be_arriving(marker, cut, after):
    """``Catalog.viable`` (by two characters, then eight and 24 where fewer leave more than
    one) drops only
    markers that can neither match at the place nor be cut off there: every marker that
    matches, or may still grow at the text's end, is among what it returns, in the table's
    order."""
    text = marker[:cut] + after if cut < len(marker) else marker + after
    got = _CAT.viable(text, 0)
    every = _CAT.at(text, 0)
    want = [m for m in every if m.terminal.pattern.needs_more(text, 0) or m.terminal.pattern.match_end(text, 0)]
    assert [m for m in got if m in want] == want
    assert list(got) == [m for m in every if m in got]  # a subset, in order


def test_a_marker_shared_by_many_families_prefix_is_checked_against_few():
    """Every family on, more than fifty markers begin with ``<|``; at a Harmony channel
    header only those its first eight characters allow are tried."""
    assert len(_CAT.viable("<|x", 0)) > 40
    header = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{}"
    got = _CAT.viable(header, 0)
    assert 1 <= len(got) <= 4
    assert any(m.role == "open" and m.terminal.pattern.match_end(header, 0) for m in got)


def test_an_opener_that_shares_its_first_characters_is_told_apart_by_more():
    """Hermes' ``<tool_call>`` shares ``<t`` with ``<think>`` and ``<tools>``: eight
    characters leave it alone, so the prose step tries no pattern there.  Kimi K2's section
    opener and closer share their first twenty characters: 24 tell them apart."""
    hermes = catalog_for(("hermes",))
    text = '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'
    assert len(hermes.at(text, 0)) >= 3
    assert [m.terminal.name for m in hermes.viable(text, 0)] == ["TOOL_CALL_OPEN"]
    kimi = catalog_for(("kimi_k2",))
    opener = "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0"
    assert [m.terminal.name for m in kimi.viable(opener, 0)] == ["SECTION_OPEN"]
    assert len(kimi.viable(opener[:20], 0)) >= 2  # (too short to look at 24: what 8 tell)


@pytest.mark.skipif(td.compiled, reason="rebinds catalog._MAX_PAIRS, which a compiled catalog reads as it was built")
def test_once_its_memory_is_full_viable_answers_by_what_it_remembers(monkeypatch):
    """Past ``_MAX_PAIRS`` remembered beginnings, a new one is not worked out: ``viable``
    gives what fewer characters tell, never fewer markers than may match."""
    from tooldialect import catalog

    cat = catalog.Catalog.__new__(catalog.Catalog)
    cat.__dict__.update(catalog_for(("hermes",)).__dict__)
    cat._keys = {}
    monkeypatch.setattr(catalog, "_MAX_PAIRS", 0)
    text = "<tool_call>\n{}"
    assert len(cat.viable(text, 0)) >= 3
    assert cat._keys == {}


# -- the loop watch -------------------------------------------------------------------------------


def _watch(opener: str = "<a>", closer: str = "</a>") -> LoopWatch:
    pats = catalog_for(("hermes",)).markers[0].terminal.pattern  # any MarkerPattern with a first set
    rx = Skipping(re.compile(f"({re.escape(opener)})|({re.escape(closer)})"), re.compile("<"), (pats,))
    return LoopWatch(rx, opener, 0, len(opener))


class _Lead:
    opened_at: ClassVar[set[int]] = set()


def test_loop_watch_counts_openers_without_a_closer_between():
    text = "<a>" + "x<a>" * 3
    w = _watch()
    assert not w.scan(text, 0, len(text), 8, 5, lambda at: _Lead.opened_at)
    assert w.repeats == 4 and w.at is None  # no loop yet
    text2 = text + "x<a>x<a>"
    assert w.scan(text2, 0, len(text2), 8, 5, lambda at: _Lead.opened_at)
    assert w.repeats == 6 and w.at == len(text2) and w.first == 0


def test_loop_watch_resets_at_a_closer_and_skips_the_blocks_own_openers():
    text = "<a>x<a></a>y<a>z<a>"
    w = _watch()
    assert not w.scan(text, 0, len(text), 8, 2, lambda at: _Lead.opened_at)
    assert w.repeats == 2 and w.first == text.index("y") + 1

    class Own:
        opened_at: ClassVar[set[int]] = {4}  # the grammar read the opener at 4 as its own token

    w = _watch()
    assert not w.scan(text, 0, 8, 8, 1, Own.opened_at)


def test_loop_watch_passes_quiet_text_in_one_step():
    w = _watch()
    assert w.quiet("plain text") and not w.quiet("a <b")
    w.passed(100, 8)
    assert (w.pos, w.seen, w.clear) == (100, 92, 92)


# -- the bracket counter ---------------------------------------------------------------------------


@given(
    st.recursive(
        st.none() | st.text(alphabet="[]{}\"'\\ab"), lambda v: st.lists(v) | st.dictionaries(st.text(max_size=3), v)
    ),
    st.data(),
)
def test_balance_finds_the_end_of_a_payload_at_every_chunking(value, data):
    import json

    payload = json.dumps(value) if isinstance(value, (list, dict)) else "[" + json.dumps(value) + "]"
    text = payload + "] trailing ["
    whole = Balance(0).scan(text, 0, len(text))
    assert whole == len(payload)
    bal = Balance(0)
    lo = 0
    found = -1
    while found < 0 and lo < len(text):
        hi = min(len(text), lo + data.draw(st.integers(1, 5)))
        found = bal.scan(text, lo, hi)
        lo = hi
    assert found == whole


def test_an_explanation_leaves_nothing_for_the_garbage_collector():
    """``explain`` watches the engine with a recorder the engine holds as its observer;
    once the text is read the recorder lets the engine go, so no reference cycle is left
    (the compiled build keeps blocks and candidates out of the collector: one held in a
    cycle of theirs would never be freed)."""
    import gc

    from support import all_cases, options

    from tooldialect.explain import explain

    cases = [c for c in all_cases() if "<tool_call>" in c.text][:40]
    assert len(cases) >= 20
    for case in cases:
        explain(case.text, **options(case))
    gc.collect()
    gc.disable()
    try:
        for case in cases:
            explain(case.text, **options(case))
            assert gc.collect(0) == 0, case.title
    finally:
        gc.enable()


# -- the lexicon ------------------------------------------------------------------------------------


def _cand(family: str) -> Cand:
    """A new candidate of ``family``'s grammar, made as a stream's engine makes one."""
    engine = td.ToolStream(families=[family])._engine
    return engine.shared.cand(engine.cat.grammars[0], "start", 0, False)


def test_lexicon_offers_only_terminals_that_can_begin_with_the_character():
    c = _cand("qwen3_coder")
    lex = c.lexicon()
    assert isinstance(lex, Lexicon) and lex.terms == c.accepted()
    for ch in "<x\n{":
        got = lex.at(ch)
        assert list(got) == [t for t in lex.terms.values() if t in got]  # accepted order kept
        for t in lex.terms.values():
            could = t.pattern is None or t.pattern.first is None or ch in t.pattern.first
            assert (t in got) == (could and not t.external), (ch, t.name)
    assert lex.at("é") == lex.at("é")  # not memoised, same answer


# -- keys and states ---------------------------------------------------------------------------------


def test_keys_tie_a_payloads_call_objects_to_the_payload():
    payload = Key(Source.PAYLOAD, 40)
    first, second = payload.element(0), payload.element(1)
    assert first.payload() == second.payload() == payload
    assert sorted([second, Key(Source.NAMED, 3), first]) == [Key(Source.NAMED, 3), first, second]
    assert Reading.RUN.live and Reading.WAIT.live and not Reading.DONE.live and not Reading.FAILED.live


# -- the loop watch ------------------------------------------------------------------------------


@given(
    st.lists(st.sampled_from(["<tool_call>", "</tool_call>", "<tool", "x", "\n", "<"]), max_size=20),
    st.data(),
)
def test_a_loop_scan_given_no_new_text_finds_what_it_found(parts, data):
    """``Loops.scan`` skips a scan when the text it would be given ends where the
    last scan's did: a second scan to the same end changes nothing and finds no loop."""
    engine = td.ToolStream(families=["hermes"])._engine
    [opener] = [mk for mk in engine.cat.markers if mk.terminal.name == "TOOL_CALL_OPEN"]
    rx = engine.loops.loop_rx([opener], [])
    text = "<tool_call>" + "".join(parts)
    watch = LoopWatch(rx, "<tool_call>", 0, len("<tool_call>"))
    lead = engine.shared.cand(engine.cat.grammars[0], "start", 0, False)
    lead.opened_at = {0}  # the block's own opener, read as its token
    fields = ("pos", "repeats", "first", "at", "clear", "seen", "scanned")
    end = len("<tool_call>")
    while end < len(text):
        end = data.draw(st.integers(end, len(text)))
        if watch.scan(text, 0, end, engine.cat.max_width, 3, lead.opened_at):
            break  # a loop: the block leaves the watch
        state = [getattr(watch, f) for f in fields]
        assert not watch.scan(text, 0, end, engine.cat.max_width, 3, lead.opened_at)
        assert [getattr(watch, f) for f in fields] == state
        if end == len(text):
            break


_STATE = st.sampled_from(list(Reading))
_AT = st.integers(-1, 50)


@given(st.lists(st.tuples(_STATE, _AT, _AT, _AT), min_size=1, max_size=7))
def test_furthest_is_the_greatest_progress(cands):
    """``furthest`` (asked of a block at every step) is ``max(c.progress)``."""
    made = []
    for state, pos, last_end, reach in cands:
        c = _cand("hermes")
        c.state, c.pos, c.last_end, c.reach = state, pos, last_end, reach
        made.append(c)
    assert furthest(made) == max(c.progress for c in made)


# -- no reference cycles ---------------------------------------------------------------------------


def test_a_reply_leaves_nothing_for_the_garbage_collector():
    """The rooms hold one another one way only, and a candidate hands its parser itself, the
    sink of its nodes, per token rather than keeping it there: once a reply is read, every object
    the engine made is freed at once by reference counting, so replies read one after
    another never wait for (or pay for) the cycle collector.  Each golden case, batch and
    streamed three characters at a time, once the caches its first reading fills are full."""
    import gc

    from support import all_cases, options

    def read(case) -> None:
        opts = options(case)
        td.parse(case.text, **opts)
        stream = td.ToolStream(**opts)
        for i in range(0, len(case.text), 3):
            stream.feed(case.text[i : i + 3])
        stream.close()

    cases = all_cases()
    assert len(cases) > 300
    for case in cases:
        read(case)  # grammars loaded, plans and validators made
    gc.collect()
    gc.disable()
    try:
        left = {}
        for case in cases:
            read(case)
            found = gc.collect(0)  # (with the collector off, all the reading made is young)
            if found:
                left[case.title] = found
    finally:
        gc.enable()
    assert not left, f"cyclic garbage left by (case: objects): {dict(list(left.items())[:10])}"


@pytest.mark.skipif(td.compiled, reason="a compiled NodeSink takes no subclass defined here")
def test_a_parser_hands_each_node_to_the_sink_its_token_came_with() -> None:
    """``LRParser.feed(tok, sink)``: the nodes the token's reductions build go to
    ``sink.on_node`` as they are built, and only to the sink that token came with."""
    from tooldialect.lalr import LRParser, Node, NodeSink, Tok

    class Spans(NodeSink):
        def __init__(self) -> None:
            self.got: list[tuple[str, int | None, int | None]] = []

        def on_node(self, node: Node) -> None:
            self.got.append((node.name, node.start, node.end))

    first, last = Spans(), Spans()
    p = LRParser(td.families.get("hermes").grammar.tables, "start")
    assert p.feed(Tok("TOOL_CALL_OPEN", "<tool_call>", 0, 11), first)
    assert p.feed(Tok("JSON", "{}", 11, 13), first)
    assert first.got == [("json_calls", 11, 13)]
    assert p.feed(Tok("TOOL_CALL_CLOSE", "</tool_call>", 13, 25))  # (no sink: nothing to hand over)
    assert p.end(last)
    assert last.got == [("start", 0, 25)] and first.got == [("json_calls", 11, 13)]


@pytest.mark.skipif(td.compiled, reason="counts calls by patching a method a compiled build does not let be patched")
@pytest.mark.parametrize("before", ["", "  \n", "Checking. "])
def test_a_marker_is_matched_once_where_prose_meets_it(monkeypatch: pytest.MonkeyPatch, before: str) -> None:
    """The markers at a place are matched once: where the reply begins with one too (the
    reply's first character is looked at for a reply-anchored grammar, and that look
    is what opens the block)."""
    from tooldialect.engine.prose import Prose

    seen: list[int] = []
    matches = Prose._matches

    def counted(self: Prose, q: int, known: int = -1):
        seen.append(q)
        return matches(self, q, known)

    monkeypatch.setattr(Prose, "_matches", counted)
    text = before + '<tool_call>\n{"name": "get_weather", "arguments": {}}\n</tool_call>'
    assert [c.name for c in td.parse(text, families=["hermes"]).calls] == ["get_weather"]
    assert seen.count(len(before)) == 1, seen
