"""The payload scanners read the same whatever the chunking: whole, a character at a time,
or cut anywhere (inside a string, between a backslash and what it escapes, inside
``\\u12…``, a number or a run of white space).  And the string and depth helpers they
share agree with a plain character-by-character reading."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from tooldialect import jsonscan
from tooldialect.argstream import StrictPrefix
from tooldialect.jsonscan import CUT, DONE, FAIL, MORE, JsonScanner, depth_exceeds, string_end
from tooldialect.strscan import StringScanner

TEXT = st.text(
    alphabet=st.one_of(st.sampled_from("\"\\/\n\t\x01 {}[]:,'é漢🙂"), st.characters(blacklist_categories=("Cs",))),
    max_size=12,
)
KEYS = st.one_of(st.sampled_from(["name", "tool_name", "arguments", "parameters", 'a"b', "\\"]), TEXT)
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12,
)
CONTAINERS = st.one_of(st.dictionaries(KEYS, VALUES, max_size=4), st.lists(VALUES, max_size=4))


@st.composite
def json_texts(draw) -> str:
    """JSON as models write it (any escaping, spacing, single quotes, comments), maybe cut
    short or followed by more."""
    value = draw(CONTAINERS)
    text = json.dumps(
        value,
        ensure_ascii=draw(st.booleans()),
        indent=draw(st.sampled_from([None, 0, 2])),
    )
    lenient = draw(st.sampled_from(["", "single quotes", "comment"]))
    if lenient == "single quotes":
        text = text.replace('"', "'")
    elif lenient == "comment":
        at = draw(st.sampled_from([i for i, ch in enumerate(text) if ch in "{[,"]))
        text = text[: at + 1] + draw(st.sampled_from(["/* a */", "// a\n", "/**/", "/"])) + text[at + 1 :]
    if draw(st.booleans()):
        text = text[: draw(st.integers(0, len(text)))]
    return text + draw(st.sampled_from(["", " ", "\n</tool_call>", "}", '"', "\\", ",1]"]))


@st.composite
def cut_up(draw, text: str) -> list[str]:
    """``text`` in pieces: whole, one character at a time, or cut anywhere."""
    how = draw(st.sampled_from(["whole", "chars", "random"]))
    if how == "whole" or len(text) < 2:
        return [text]
    if how == "chars":
        return list(text)
    cuts = sorted(set(draw(st.lists(st.integers(1, len(text) - 1), max_size=16))))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]


def scan_pieces(scanner, pieces: list[str], fresh=None) -> tuple[str, int]:
    """Feed the pieces the way the tokenizer does: the text so far, from where it stopped;
    a ``fresh()`` scanner fed the text so far in one piece must agree at every step."""
    text, pos = "", 0
    for k, piece in enumerate(pieces):
        text += piece
        eof = k == len(pieces) - 1
        status, pos = scanner.scan(text, pos, eof)
        if fresh is not None:
            whole = fresh()
            assert whole.scan(text, 0, eof) == (status, pos)
            assert (whole.stack, whole.names, whole.escape, whole.quote) == (
                scanner.stack,
                scanner.names,
                scanner.escape,
                scanner.quote,
            )
        if status != MORE:
            return status, pos
    return MORE, pos


@given(data=st.data())
def test_json_scanner_reads_the_same_at_any_chunking(data):
    text = data.draw(json_texts())
    quotes = data.draw(st.sampled_from([(), ('<|"|>',)]))
    whole = JsonScanner(quotes=quotes)
    expected = whole.scan(text, 0, True)
    pieces = JsonScanner(quotes=quotes)
    assert scan_pieces(pieces, data.draw(cut_up(text)), lambda: JsonScanner(quotes=quotes)) == expected
    assert (pieces.names, pieces.error, pieces.stack) == (whole.names, whole.error, whole.stack)


@given(value=CONTAINERS, ascii_only=st.booleans())
def test_json_scanner_ends_json_where_it_ends(value, ascii_only):
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert JsonScanner(max_depth=10_000).scan(text + " tail", 0, True) == (DONE, len(text))
    assert JsonScanner(max_depth=10_000).scan(text[:-1], 0, True)[0] in (CUT, FAIL)


def _strict_state(sp: StrictPrefix) -> tuple:
    return (sp.safe, sp.broken, sp.done, sp.args, sp.elem, sp.consumed, sp.in_plain_string())


@given(data=st.data(), coarse=st.booleans(), call=st.booleans())
def test_strict_prefix_reads_the_same_at_any_chunking(data, coarse, call):
    text = data.draw(json_texts())
    keys = ("arguments", "parameters") if call else ()
    pieces = StrictPrefix(64, keys, coarse)
    read = ""
    for piece in data.draw(cut_up(text)):
        pieces.feed(piece)
        read += piece
        whole = StrictPrefix(64, keys, coarse)  # what was read so far, in one piece
        whole.feed(read)
        assert _strict_state(pieces) == _strict_state(whole)
    whole.flush()
    pieces.flush()
    assert _strict_state(pieces) == _strict_state(whole)


@given(value=CONTAINERS, ascii_only=st.booleans(), data=st.data())
def test_strict_prefix_reads_strict_json_to_its_end(value, ascii_only, data):
    text = json.dumps(value, ensure_ascii=ascii_only)
    sp = StrictPrefix(10_000)
    for piece in data.draw(cut_up(text)):
        sp.feed(piece)
    sp.flush()
    assert not sp.broken and sp.done and sp.safe == len(text)


LITERAL_BODY = st.text(alphabet=st.sampled_from("ab\\'\"`\n é"), max_size=12)


#: A string literal's opening quote, then text that may hold its closing quote and more.
LITERAL = st.tuples(st.sampled_from(["'", '"', "`", "'''", '"""']), LITERAL_BODY, LITERAL_BODY).map("".join)


@given(text=LITERAL, data=st.data())
def test_string_scanner_reads_the_same_at_any_chunking(text, data):
    expected = StringScanner().scan(text, 0, True)
    assert scan_pieces(StringScanner(), data.draw(cut_up(text)), StringScanner) == expected


def _run_pieces(fresh, pieces: list[str]) -> int:
    """Each piece read as the engine's one-step run reads it (``string_run`` then
    ``read_run``) where the scanner says it may be, else by ``scan``: after each piece it
    is where a scanner that only scans is.  Returns how many pieces the run took."""
    fast, slow = fresh(), fresh()
    text, pos, slow_pos, taken = "", 0, 0, 0
    for piece in pieces[:-1]:
        at = len(text)
        text += piece
        status, slow_pos = slow.scan(text, slow_pos, False)
        pending = fast.string_run(piece) if pos == at and fast.quote else -1
        if pending >= 0:
            fast.read_run(piece, pending)
            pos, taken = len(text), taken + 1
            assert status == MORE  # the run was only the value going on
        else:
            status, pos = fast.scan(text, pos, False)
        assert (pos, fast.escape, fast.quote) == (slow_pos, slow.escape, slow.quote)
        if status != MORE:
            return taken
    return taken


@given(text=LITERAL, data=st.data())
def test_string_scanner_string_run_reads_as_scan_does(text, data):
    _run_pieces(StringScanner, data.draw(cut_up(text)))


def test_string_scanner_string_run_takes_plain_pieces_and_a_last_backslash():
    sc = StringScanner()
    sc.scan("'ab", 0, False)
    assert sc.string_run("cd") == 0
    assert sc.string_run("c\\") == 1  # the backslash escapes the next piece's first character
    assert sc.string_run("c'd") == -1  # the string ends in it
    assert sc.string_run('c"d') == 0  # the other quote is plain text here
    assert sc.string_run("\\nx") == -1  # an escape inside the piece: scan reads it
    sc.read_run("c\\", 1)
    assert sc.string_run("'x") == 0  # the quote is escaped by the last piece's backslash
    triple = StringScanner()
    triple.scan("'''ab", 0, False)
    assert triple.string_run("cd") == -1  # a triple-quoted string is left to scan
    assert _run_pieces(StringScanner, ["'a", "bc", "d\\", "'e", "f'", " "]) == 3


@given(body=LITERAL_BODY, tail=LITERAL_BODY, data=st.data())
def test_json_scanner_string_run_reads_as_scan_does(body, tail, data):
    _run_pieces(lambda: JsonScanner(max_depth=64), data.draw(cut_up(json.dumps([body + tail]))))


def _string_end_by_hand(text: str, pos: int) -> int:
    i = pos + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return i + 1
        else:
            i += 1
    return len(text)


def _depth_by_hand(text: str) -> int:
    deepest = depth = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            i = _string_end_by_hand(text, i)
            continue
        if ch in "{[":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "}]":
            depth -= 1
        i += 1
    return deepest


SNIPPETS = st.lists(st.sampled_from(['"', "\\", "\\\\", '\\"', "{", "[", "}", "]", "a", "é"]), max_size=30).map("".join)


@given(text=SNIPPETS, limit=st.integers(0, 6))
def test_string_end_and_depth_exceeds_read_as_by_hand(text, limit):
    for pos, ch in enumerate(text):
        if ch == '"':
            assert string_end(text, pos) == _string_end_by_hand(text, pos)
    assert depth_exceeds(text, limit) == (_depth_by_hand(text) > limit)


# -- strict loads ---------------------------------------------------------------------------------

_WS_TEXT = st.text(alphabet=" \t\n\r", max_size=3)
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)


def _decoder_says(text: str) -> tuple[str, object]:
    """What the strict decoder's own ``decode`` (two Python frames around its C scanner)
    says of ``text``: its value, or its error's words and place."""
    try:
        return "value", jsonscan._STRICT.decode(text)
    except jsonscan.JsonValueError as exc:
        return "refused", (str(exc), exc.pos)
    except (ValueError, RecursionError) as exc:
        return "refused", (str(exc), getattr(exc, "pos", -1))


def _loads_says(text: str) -> tuple[str, object]:
    try:
        return "value", jsonscan.loads_strict(text)
    except jsonscan.JsonValueError as exc:
        return "refused", (str(exc), exc.pos)


@given(_WS_TEXT, _JSON_VALUES, _WS_TEXT, st.sampled_from(["", "x", ",", " 1", "]", "NaN", "1e999"]))
def test_loads_strict_reads_and_refuses_as_the_decoder_does(lead: str, value: object, trail: str, junk: str) -> None:
    """``loads_strict`` calls the C scanner itself: the same value, or the same words at the
    same place, as the decoder's ``decode``, with white space around, extra data after, a
    constant or a number strict JSON refuses."""
    for text in (lead + json.dumps(value) + trail + junk, lead + junk + trail, junk + json.dumps(value)):
        assert _loads_says(text) == _decoder_says(text), text
