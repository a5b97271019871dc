"""The partial-match simulator agrees with an independent automaton (interegular)."""

from __future__ import annotations

from contextlib import contextmanager

import interegular
import pytest
from hypothesis import given
from hypothesis import strategies as st
from interegular.fsm import anything_else
from support import budget

import tooldialect as td
from tooldialect.families import piece
from tooldialect.markers import analyse, samples


def _patterns() -> list[str]:
    seen = []
    for fam in td.families.all_families():
        for term in fam.grammar.terminals.values():
            if term.pattern is not None and term.pattern.max_width < 600 and term.pattern.source not in seen:
                seen.append(term.pattern.source)
    for term in piece("_reasoning").values():
        seen.append(term.pattern.source)
    return seen


PATTERNS = _patterns()
_FSM: dict[str, object] = {}


def fsm_wants_more(pattern: str, text: str) -> bool:
    """Independent answer: after reading ``text``, can the automaton read one more character
    and still reach an accepting state?"""
    fsm = _FSM.get(pattern)
    if fsm is None:
        fsm = interegular.parse_pattern(pattern).to_fsm()
        _FSM[pattern] = fsm
    state = fsm.initial
    for ch in text:
        sym = fsm.alphabet[ch] if ch in fsm.alphabet else fsm.alphabet[anything_else]
        nxt = fsm.map[state].get(sym)
        if nxt is None:
            return False
        state = nxt
    return any(fsm.islive(s) for s in fsm.map[state].values())


def _oracle_agrees(ch: str) -> bool:
    """interegular reads \\s and \\w as ASCII classes, Python's re as Unicode ones; draw only
    characters on which the two readings agree."""
    import re

    return bool(re.match(r"\s", ch)) == (ch in " \t\n\r\f\v") and bool(re.match(r"\w", ch)) == (
        ch.isascii() and (ch.isalnum() or ch == "_")
    )


_ALPHABET = "".join(ch for ch in map(chr, range(0x2500)) if _oracle_agrees(ch)) + "｜▁"


def _sample_texts(pattern: str):
    """Strings over the pattern's own characters, and prefixes of real matches with a tail."""
    chars = sorted(set(pattern) | set("<>|/_ -=\n\"'abtlco"))
    noise = st.text(alphabet=st.sampled_from(chars), max_size=24)
    # CJK letters are \w to Python's re but not to interegular: not drawn for \w patterns
    alphabet = _ALPHABET.replace("中文", "") if "\\w" in pattern else _ALPHABET
    matches = st.from_regex(pattern, fullmatch=True, alphabet=alphabet)
    prefix = st.tuples(matches, st.integers(0, 40), noise).map(lambda t: t[0][: t[1]] + t[2][: t[1] % 3])
    return st.one_of(noise, prefix)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_analyse_supports_every_marker(pattern):
    m = analyse(pattern)
    assert m.first is None or m.first


@budget(60, deadline=None)
@given(data=st.data())
@pytest.mark.parametrize("pattern", PATTERNS)
def test_a_literal_is_found_by_comparison_where_the_regex_finds_it(pattern, data):
    """``exact`` (a literal whose case counts) stands in for the regex in the lexer: it
    must end a match where the regex does, and only there."""
    marker = analyse(pattern)
    if marker.exact is None:
        assert marker.literal is None or marker.ignorecase
        return
    assert marker.regex.fullmatch(marker.exact) and marker.max_width == len(marker.exact)
    text = data.draw(st.one_of(_sample_texts(pattern), st.just(marker.exact.upper() + "x")))
    for pos in range(len(text) + 1):
        m = marker.regex.match(text, pos)
        assert marker.match_end(text, pos) == (m.end() if m else None), (pattern, text, pos)


@budget(60, deadline=None)
@given(data=st.data())
@pytest.mark.exhaustive(every=4)
@pytest.mark.parametrize("pattern", PATTERNS)
def test_needs_more_matches_the_automaton(pattern, data):
    marker = analyse(pattern)
    text = data.draw(_sample_texts(pattern))
    assert marker.needs_more(text, 0) == fsm_wants_more(pattern, text), (pattern, text)


@pytest.mark.parametrize(
    "pattern,text,expected",
    [
        (r"(?i:</tool_call>)", "</TOO", True),
        (r"(?i:</tool_call>)", "</tox", False),
        (r"(?i:</tool_call>)", "</tool_call>", False),
        (r"<[|\s]{0,3}tool[_-]?call[|\s]{0,3}>", "<tool_call", True),
        (r"<[|\s]{0,3}tool[_-]?call[|\s]{0,3}>", "<tool_calls", False),
        (r"a(?:bc)?", "a", True),
        (r"a(?:bc)?", "ab", True),
        (r"a(?:bc)?", "abc", False),
    ],
)
def test_needs_more_examples(pattern, text, expected):
    assert analyse(pattern).needs_more(text, 0) is expected
    assert fsm_wants_more(pattern, text) is expected


def test_needs_more_is_false_when_the_text_goes_past_the_longest_match():
    marker = analyse(r"<\|python_tag\|>")
    assert marker.needs_more("x" * 40 + "<|pyth", 40) is True
    assert marker.needs_more("<|python_tag|> and more text", 0) is False


@given(
    pats=st.lists(st.sampled_from(PATTERNS), min_size=0, max_size=4, unique=True),
    texts=st.lists(st.text(alphabet="<|/tolcaN_ >\n\\x", max_size=80), min_size=1, max_size=6),
    data=st.data(),
)
@budget(200)
def test_arriving_answers_as_its_patterns_do_however_often_asked(pats, texts, data):
    """``Arriving.at`` is any pattern's ``needs_more``, for short tails it remembers and
    long ones it does not, asked again and again (as at the end of a growing text)."""
    from tooldialect.markers import Arriving

    compiled = tuple(analyse(p) for p in pats)
    arriving = Arriving(compiled)
    for _ in range(2):
        for text in texts:
            pos = data.draw(st.integers(0, len(text)))
            assert arriving.at(text, pos) == any(p.needs_more(text, pos) for p in compiled)


def test_arriving_keeps_a_bounded_number_of_answers():
    from tooldialect.markers import Arriving

    arriving = Arriving((analyse("</parameter>"),))
    assert arriving.at("ab</par", 2) and not arriving.at("ab</px", 2)
    for k in range(2 * Arriving.MAX_SEEN):
        arriving.at(f"<{k}", 0)
    assert len(arriving._seen) == Arriving.MAX_SEEN
    long_tail = "</parameter" + " " * Arriving.MAX_TAIL
    assert not arriving.at(long_tail, 0)  # past MAX_TAIL: asked, not kept
    assert long_tail not in arriving._seen


# -- runs of a character class -----------------------------------------------------------------

_RUNS = [r"[ \t\r\n\f\v\u00a0\ufeff]+", r"x+", r"[ab]+"]
_NOT_RUNS = [r"\s+", r"[ab]{1,4}", r"[ab]*", r"[ab]+?", r"(?i:[ab]+)", r"(?i)[ab]+", r"[a-z]+", r"(?:ab)+", r"[ab]+c"]


@pytest.mark.parametrize("source", _RUNS + _NOT_RUNS)
def test_a_run_is_known_only_where_stepping_over_it_is_the_regex(source: str) -> None:
    """A greedy, unbounded run of one or more characters of a listed class, case kept, is
    a run (white space between tokens, stepped over without a regex call); anything else
    (a category, a bound, a lazy or optional repeat, a range, ignored case, more than the
    run) is not."""
    run = analyse(source).run
    assert (run is not None) is (source in _RUNS)


@given(st.sampled_from(_RUNS), st.text(alphabet=" \t\n\u00a0xabz", max_size=24), st.integers(0, 24))
def test_a_run_ends_where_its_regex_match_ends(source: str, text: str, pos: int) -> None:
    """``match_end`` of a run steps over its characters (a long one by the regex from its
    fifth): where the regex's match ends, at every place, a run at the text's end included."""
    pat = analyse(source)
    pos = min(pos, len(text))
    m = pat.regex.match(text, pos)
    want = m.end() if m is not None and m.end() > pos else None
    assert pat.match_end(text, pos) == want


#: The patterns written to be searched differently from their source.
MOVED = [p for p in PATTERNS if analyse(p).search not in (None, p)]


def test_case_blind_markers_are_written_for_searching():
    """The case-blind openers and closers (``(?i:<…)``) have a searchable spelling, and a
    pattern whose first character is itself case-blind or quantified keeps its own."""
    from tooldialect.markers import searchable

    assert len(MOVED) >= 2
    assert all(analyse(p).search.startswith(p[4]) for p in MOVED)
    for kept in ("(?i:<a|<b)", "(?i:<+a)", "(?i:a<)", "(?i:[<]a)", "x(?i:<a)"):
        assert searchable(kept) == kept


@budget(60, deadline=None)
@given(data=st.data())
@pytest.mark.parametrize("pattern", MOVED)
def test_a_searchable_spelling_matches_where_its_source_matches(pattern, data):
    import re

    marker = analyse(pattern)
    moved = re.compile(marker.search)
    text = data.draw(st.one_of(_sample_texts(pattern), st.just(pattern.upper())))
    for pos in range(len(text) + 1):
        a, b = marker.regex.match(text, pos), moved.match(text, pos)
        assert (a and a.end()) == (b and b.end()), (pattern, text, pos)
        a, b = marker.regex.search(text, pos), moved.search(text, pos)
        assert (a and a.span()) == (b and b.span()), (pattern, text, pos)


def _loop_cases() -> list[tuple[list[str], list[str]]]:
    """Each grammar's openers with the closers that pair with them, as the loop watch
    writes them."""
    cases = []
    for fam in td.families.all_families():
        g = fam.grammar
        for openers in g.openers.values():
            pats = [t.pattern for t in openers if t.pattern is not None]
            stems = {t.stem for t in openers}
            closers = [t.pattern for t in g.closers if t.pattern is not None and t.stem in stems]
            case = (sorted({p.search or p.source for p in pats}), sorted({p.search or p.source for p in closers}))
            if case[0] and case not in cases:
                cases.append(case)
    return cases


LOOP_CASES = _loop_cases()


@budget(40, deadline=None)
@given(data=st.data())
@pytest.mark.parametrize("case", LOOP_CASES, ids=lambda c: c[0][0][:24])
def test_the_loop_watch_pattern_finds_what_the_plain_alternation_finds(case, data):
    """An opener or a closer found at the same place, to the same end, and the same one
    (group 1 an opener, group 2 a closer) whether the first character they share is
    written once before them or not."""
    import re

    from tooldialect.engine.loops import _loop_pattern

    opens, closes = case
    factored, direct = _loop_pattern(opens, closes)
    cl = "|".join(f"(?:{p})" for p in closes) or "(?!)"
    plain = re.compile("(" + "|".join(f"(?:{p})" for p in opens) + f")|({cl})")
    pieces = [s for p in opens + closes for s in samples(p)] + ["<", "</", "x", "\n", " ", "<|", "[", "｜"]
    text = "".join(data.draw(st.lists(st.sampled_from(pieces), max_size=12)))
    for pos in range(len(text) + 1):
        a, b = plain.search(text, pos), factored.search(text, pos)
        assert (a and (a.span(), a.group(1) is None)) == (b and (b.span(), b.group(1) is None)), (case, text, pos)
    if all(p[:1] == "<" for p in opens + closes) and not any(p.startswith("(?i:") for p in opens + closes):
        assert direct


def _probed() -> list[tuple[str, int, frozenset[str], str]]:
    """Every terminal's probe, once per pattern: (pattern, place, ruled out, a name)."""
    seen: dict[tuple[str, int, frozenset[str]], str] = {}
    for fam in td.families.all_families():
        for name, term in fam.grammar.terminals.items():
            if term.probe is not None:
                seen.setdefault((term.marker.source, *term.probe), f"{fam.name}.{name}")
    return [(*key, name) for key, name in seen.items()]


PROBED = _probed()


def test_a_probe_rules_out_what_no_match_holds():
    """Each sample match of a probed terminal, its character at the probe's place changed to
    each one the probe rules out, is no match at all (its every match reaches that place)."""
    import re

    assert len(PROBED) > 100
    for source, k, ruled_out, name in PROBED:
        regex = re.compile(source)
        for text in samples(source):
            assert len(text) > k and text[k] not in ruled_out, name
            for ch in ruled_out:
                assert regex.match(text[:k] + ch + text[k + 1 :]) is None, (name, text, ch)


@budget(60, deadline=None)
@given(data=st.data())
def test_no_match_holds_what_its_probe_rules_out(data):
    """Matches drawn from the regex itself (white space, case, optional parts) hold at
    the probe's place a character it does not rule out."""
    source, k, ruled_out, name = data.draw(st.sampled_from(PROBED))
    text = data.draw(st.from_regex(source, fullmatch=True))
    assert len(text) > k and text[k] not in ruled_out, (name, text)


def test_a_probe_tells_apart_the_markers_that_begin_alike():
    """Where several of a grammar's markers may begin, those that cannot match there are
    ruled out by one character: Kimi K2's call opener from its closer, Qwen3-Coder's
    tolerant tool-call closer from a parameter's tags and the function's closer."""
    from tooldialect.catalog import catalog_for

    kimi = catalog_for(("kimi_k2",)).grammars[0].terminals
    qwen = catalog_for(("qwen3_coder",)).grammars[0].terminals

    def ruled_out(term, text):
        k, chars = term.probe
        return text[k] in chars

    assert ruled_out(kimi["CALL_OPEN"], "<|tool_call_end|>") and not ruled_out(kimi["CALL_OPEN"], "<|tool_call_begin|>")
    assert ruled_out(kimi["FURNITURE_SECTION_CLOSE"], "<|tool_call_begin|>")
    close = qwen["TOOL_CALL_CLOSE"]
    assert all(ruled_out(close, text) for text in ("<parameter=x>", "</parameter>", "</function>"))
    assert not any(ruled_out(close, text) for text in ("</tool_call>", "< / TOOL-CALL>", "<|/tool_call|>"))


@contextmanager
def _counted(term):
    """``term``'s regex made to note each place it is tried at (the list yielded), and a
    cursor over a text whose end is known."""
    import dataclasses

    from tooldialect.engine.cursor import Cursor

    tried: list[int] = []

    class Counting:
        def __init__(self, regex):
            self.regex = regex

        def match(self, text, pos):
            tried.append(pos)
            return self.regex.match(text, pos)

    original = term.marker
    object.__setattr__(term, "marker", dataclasses.replace(original, regex=Counting(original.regex)))
    try:
        cursor = Cursor.__new__(Cursor)
        cursor.window = type("W", (), {"eof": True})()
        yield cursor, tried
    finally:
        object.__setattr__(term, "marker", original)


def test_a_probe_spares_the_pattern():
    """The cursor does not try a terminal's pattern where its probe rules it out."""
    from tooldialect.catalog import catalog_for

    terms = catalog_for(("qwen3_coder",)).grammars[0].terminals
    close = terms["TOOL_CALL_CLOSE"]
    with _counted(close) as (cursor, tried):
        pair = (terms["PARAM_CLOSE"], close)
        end, best, _external, _wait = cursor.longest(pair, "</parameter>\n", 0)
        assert best is terms["PARAM_CLOSE"] and end == len("</parameter>") and tried == []
        end, best, _external, _wait = cursor.longest(pair, "</tool_call>\n", 0)
        assert best is close and end == len("</tool_call>") and tried == [0]


def test_a_likely_spelling_is_a_match_of_its_length():
    """A pattern's likely spelling (a run of single characters, each with one ASCII
    spelling) is a match over exactly its length, whatever follows it, and every match the
    regex itself draws is as long: equal text decides a match without the regex."""
    import re

    spelled = {}
    for source in _patterns():
        likely = analyse(source).likely
        if likely is None:
            continue
        regex = re.compile(source)
        for tail in ("", ">", "x", "\n", "<|", "｜"):
            m = regex.match(likely + tail)
            assert m is not None and m.end() == len(likely), (source, tail)
        assert {len(text) for text in samples(source)} == {len(likely)}, source
        spelled[source] = likely
    # DeepSeek's markers (Kimi K2's call markers among them) have one; others none
    assert spelled["<[｜|]tool[▁_]call[▁_]begin[｜|]>"] == "<|tool_call_begin|>"
    assert len(spelled) >= 7
    for source in (r"[^\s<>|]{1,256}", r"<\|tool_calls?_section_begin\|>", "<tool_call>", r"(?i:<tool>)x*"):
        assert analyse(source).likely is None, source
    assert analyse("(?i:</tool_call>)").likely == "</tool_call>"


@budget(40, deadline=None)
@given(data=st.data())
def test_a_likely_spelling_agrees_with_the_regex(data):
    """At any place of any text, the likely spelling's answer (a match of its length when
    the text there is equal to it) is the regex's own."""
    import re

    source = data.draw(st.sampled_from([s for s in _patterns() if analyse(s).likely is not None]))
    likely = analyse(source).likely
    pieces = [likely, likely[:-1], "<｜tool▁call▁begin｜>", likely.upper(), "x", " "]
    text = "".join(data.draw(st.lists(st.sampled_from(pieces), max_size=6)))
    regex = re.compile(source)
    for pos in range(len(text) + 1):
        m = regex.match(text, pos)
        if text[pos : pos + len(likely)] == likely:
            assert m is not None and m.end() == pos + len(likely)
        assert analyse(source).match_end(text, pos) == (m.end() if m else None)


def test_the_likely_spelling_spares_the_regex():
    """The cursor compares Kimi K2's call opener as written in ASCII and runs its regex only
    for another spelling (the full-width one DeepSeek writes still matches)."""
    from tooldialect.catalog import catalog_for

    opener = catalog_for(("kimi_k2",)).grammars[0].terminals["CALL_OPEN"]
    with _counted(opener) as (cursor, tried):
        end, best, _external, _wait = cursor.longest((opener,), "<|tool_call_begin|>functions.f:0", 0)
        assert best is opener and end == len("<|tool_call_begin|>") and tried == []
        end, best, _external, _wait = cursor.longest((opener,), "<｜tool▁call▁begin｜>functions.f:0", 0)
        assert best is opener and end == len("<｜tool▁call▁begin｜>") and tried == [0]


def test_the_runs_every_match_holds():
    """``required_runs``: the literal runs of a pattern's sequence and of its groups; a part
    that may vary ends a run; a pattern that ignores case has none."""
    from tooldialect.markers import required_runs

    assert required_runs(r"<\|tool_calls?_section_begin\|>") == ("<|tool_call", "_section_begin|>")
    assert required_runs("a(?:b|c)d") == ("a", "d")
    assert required_runs(r"\s*<tool>(?:x)") == ("<tool>x",)
    assert required_runs("(?i:<tool_call>)") == () and required_runs("(?i)<tool_call>") == ()
    assert required_runs("<(?i:tool_call>)") == ("<",)


@budget(40, deadline=None)
@given(data=st.data())
def test_every_match_holds_its_runs(data):
    """Matches drawn from each terminal's regex hold each of its literal runs, and so do its
    sample matches."""
    from tooldialect.markers import required_runs

    source = data.draw(st.sampled_from([s for s in _patterns() if required_runs(s)]))
    runs = required_runs(source)
    for text in [data.draw(st.from_regex(source, fullmatch=True)), *samples(source)]:
        assert all(run in text for run in runs), (source, text, runs)


@budget(40, deadline=None)
@given(data=st.data())
@pytest.mark.parametrize("case", LOOP_CASES, ids=lambda c: c[0][0][:24])
def test_the_loop_watch_search_with_its_needle_finds_what_the_pattern_finds(case, data):
    """With the text every match holds looked for first (where it is not, no match is; no
    match begins more than ``reach`` before it), the loop watch's search finds at every
    place, up to every end, what the pattern's own search finds."""
    import re

    from tooldialect.engine.loops import _loop_pattern, _needle
    from tooldialect.engine.search import Skipping

    opens, closes = case
    rx, _direct = _loop_pattern(opens, closes)
    needle = _needle(opens + closes, [])
    skipping = Skipping(rx, None)
    skipping.needle = needle
    skipping.reach = max(analyse(p).max_width for p in opens + closes) - len(needle)
    pieces = [s for p in opens + closes for s in samples(p)] + ["<", "x", "\n", " ", "<|", "[", needle[:-1] or "y"]
    text = "".join(data.draw(st.lists(st.sampled_from(pieces), max_size=10)))
    for pos in range(len(text) + 1):
        for end in (len(text), len(text) - 1, pos + 5):
            a, b = rx.search(text, pos, end), skipping.search(text, pos, end)
            assert (a and a.span()) == (b and b.span()), (case, text, pos, end)
    assert re.compile(rx.pattern)  # (the pattern as loop_rx builds it)


def test_kimi_s_loop_watch_looks_for_its_section_markers_own_text():
    """Kimi K2's section markers begin as every call marker does (``<|tool_call``): the text
    looked for first is the one only they hold."""
    from tooldialect.catalog import catalog_for
    from tooldialect.engine.loops import _needle

    g = catalog_for(("kimi_k2",)).grammars[0]
    sources = [g.terminals["SECTION_OPEN"].marker.source, g.terminals["FURNITURE_SECTION_CLOSE"].marker.source]
    spelled = [t.marker.literal or t.marker.likely for t in g.terminals.values()]
    assert _needle(sources, [s for s in spelled if s]) == "_section_"
    assert _needle(sources, []) == "<|tool_call"  # (the longest, where nothing tells them apart)
    assert _needle(["(?i:<tool_call>)", "</tool_call>"], []) == ""
