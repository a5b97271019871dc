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
from tooldialect.markerpattern import NEAR, Leads

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
    ["The build finished. ", "x" * 300, "y" * 700, "<", "[", "`", "~", "é", "<tool_call>", "[TOOL_CALLS]", "f", "A"]
)


@given(pieces=st.lists(_PIECES, max_size=30), data=st.data())
@budget(300)
def test_leads_find_the_first_character_the_class_finds(pieces, data):
    for cat in (HERMES, EVERY):
        text = "".join(pieces)
        pos = data.draw(st.integers(0, len(text)))
        end = data.draw(st.integers(pos, len(text) + 2))
        f = cat.first_rx.search(text, pos, end)
        assert cat.leads.find(text, pos, end) == (-1 if f is None else f.start())


@given(pieces=st.lists(_PIECES, max_size=30), data=st.data())
@budget(300)
def test_a_search_with_leads_finds_the_match_the_class_alone_finds(pieces, data):
    text = "".join(pieces)
    pos = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(pos, len(text) + 2))
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


def test_a_marker_may_begin_with_a_letter_then_the_class_alone_searches():
    """Read together, some families' markers begin with a letter (``Action:``): prose has
    one every few characters, so the class is tried all the way, as cheap as it is."""
    assert any(c.isalnum() for c in EVERY.leads.chars) and not EVERY.leads.far
    assert HERMES.leads.far
    text = "xyz " * 1000
    spans = _Spans(EVERY.first_rx)
    leads = Leads("".join(EVERY.leads.chars))
    leads.first = spans  # type: ignore[assignment]
    assert leads.find(text, 0, len(text)) == -1
    assert spans.looked == len(text)


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
