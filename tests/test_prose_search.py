"""Prose is searched for markers by a character class near where a search begins and by
``str.find`` further on (``markerpattern.Leads``): the same places, and past ``NEAR``
characters the class is not tried at every position."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st
from support import budget

import tooldialect as td
from tooldialect.catalog import catalog_for
from tooldialect.engine.search import Skipping
from tooldialect.markerpattern import NEAR, Leads, lead_seconds

HERMES = catalog_for(("hermes",))
EVERY = catalog_for(None)


class _Spans:
    """A regex that notes how many characters each search was given."""

    def __init__(self, rx: re.Pattern[str]) -> None:
        self.rx = rx
        self.looked = 0

    def search(self, text: str, pos: int, end: int) -> re.Match[str] | None:
        self.looked += min(end, len(text)) - pos
        return self.rx.search(text, pos, end)


# prose with, now and then, a character a marker begins with, or a whole marker
_PIECES = st.sampled_from(
    [
        "The build finished. ",
        "x" * 300,
        "y" * 700,
        "<",
        "[",
        "`",
        "~",
        "é",
        "<tool_call>",
        "[TOOL_CALLS]",
        "f",
        "A",
        "fu",
        "Action:",
        "functools[",
    ]
)


def _first_lead(cat, text: str, pos: int, end: int) -> int:
    """Where ``Leads.find`` must answer, worked out a character at a time: the first
    character a marker begins with; with every family read together, in text that is all
    ASCII, a letter only where one of the characters a marker may have after it follows
    (or the end does)."""
    seconds = lead_seconds([m.pattern for m in cat.markers]) or {}
    end = min(end, len(text))
    for p in range(pos, end):
        ch = text[p]
        if ch not in cat.leads.chars:
            continue
        paired = cat.leads.pairs and text.isascii() and ch.isalnum()
        if paired and p + 1 < end and text[p + 1] not in seconds[ch]:
            continue
        return p
    return -1


@st.composite
def _spans(draw: st.DrawFn) -> tuple[str, int, int]:
    """Prose of the pieces above, and a span of it to search (its end may pass the text's)."""
    text = "".join(draw(st.lists(_PIECES, max_size=30)))
    pos = draw(st.integers(0, len(text)))
    return text, pos, draw(st.integers(pos, len(text) + 2))


@given(span=_spans())
@budget(300)
def test_leads_find_the_first_place_a_marker_may_begin(span):
    text, pos, end = span
    for cat in (HERMES, EVERY):
        assert cat.leads.find(text, pos, end) == _first_lead(cat, text, pos, end)


@given(span=_spans())
@budget(300)
def test_a_search_with_leads_finds_the_match_the_class_alone_finds(span):
    text, pos, end = span
    for cat in (HERMES, EVERY):
        plain = Skipping(cat.prose, cat.first_rx).search(text, pos, end)
        led = Skipping(cat.prose, cat.first_rx, leads=cat.leads).search(text, pos, end)
        assert (led and (led.start(), led.end())) == (plain and (plain.start(), plain.end()))


def test_past_near_characters_the_class_is_not_tried():
    text = "The build finished after the cache was warmed. " * 5000  # no character a marker begins with
    leads = Leads("".join(HERMES.leads.chars))
    spans = _Spans(leads.first)
    leads.first = spans  # type: ignore[assignment]
    assert leads.find(text, 0, len(text)) == -1
    assert spans.looked == NEAR
    found = leads.find(text + "<tool_call>", 0, len(text) + 11)
    assert found == len(text) and spans.looked == 2 * NEAR
    # a search with leads tries the pattern at the one place and the class over NEAR characters
    search_spans = _Spans(HERMES.first_rx)
    m = Skipping(HERMES.prose, search_spans, leads=HERMES.leads).search(text + "<tool_call>", 0)  # type: ignore[arg-type]
    assert m is not None and m.start() == len(text)
    assert search_spans.looked == NEAR


def test_a_marker_may_begin_with_a_letter_then_it_is_looked_for_with_what_follows_it():
    """Read together, some families' markers begin with a letter (``Action:``,
    ``functools[``): prose has one every few characters.  The marker search tries the
    class all the way (``far`` is False); ``find`` looks for the letters with what may
    follow them, and for the other characters by the class near and ``str.find`` beyond."""
    assert any(c.isalnum() for c in EVERY.leads.chars) and not EVERY.leads.far
    assert set(EVERY.leads.pairs) >= {"Ac", "fu"} and HERMES.leads.far and not HERMES.leads.pairs
    text = "Of the five files, the first is fine. " * 1000
    leads = Leads("".join(EVERY.leads.chars), lead_seconds([m.pattern for m in EVERY.markers]))
    spans = _Spans(leads.bare)
    leads.bare = spans  # type: ignore[assignment]
    assert leads.find(text, 0, len(text)) == -1
    assert spans.looked == NEAR
    assert leads.find(text + "functools[", 0, len(text) + 10) == len(text)
    assert leads.find(text + "Act", 0, len(text) + 3) == len(text)
    assert leads.find(text + "f", 0, len(text) + 1) == len(text)  # (it may be one, cut off)
    # not all ASCII: any character may follow a letter, and the class is tried all the way
    spans.looked = 0
    class_spans = _Spans(leads.first)
    leads.first = class_spans  # type: ignore[assignment]
    assert leads.find(text + "é", 0, len(text) + 1) == 1  # (the f of "Of")
    assert spans.looked == 0 and class_spans.looked == len(text) + 1
    # letters whose followers are not known: the class alone
    bare = Leads("".join(EVERY.leads.chars))
    assert not bare.pairs
    plain = _Spans(bare.first)
    bare.first = plain  # type: ignore[assignment]
    assert bare.find("xyz " * 1000, 0, 4000) == -1 and plain.looked == 4000


def test_long_prose_parsed_whole_keeps_every_character_and_finds_the_call_after_it():
    prose = "Nothing here is a call; the report lists every module. " * 4000
    call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    for families in (["hermes"], None):
        got = td.parse(prose + call + prose, families=families)
        assert got.text == prose + prose
        assert [c.name for c in got.calls] == ["get_weather"]
        # a stream fed the same text in one long delta and then two
        s = td.ToolStream(families=families)
        s.feed(prose[:100])
        events = s.feed(prose[100:] + call + prose) + s.close()
        assert "".join(e.text for e in events if e.type == "text") == prose[100:] + prose
