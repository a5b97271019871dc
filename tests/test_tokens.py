"""Token ids in (ToolStream.feed_tokens, td.parse_tokens): the same result as the text with
special tokens kept, whatever a server's decoded text would have dropped."""

from __future__ import annotations

import re
from typing import Any

import pytest
from o200k import FIRST_ADDED, encoding, tokenized
from support import all_cases, options, sweep

import tooldialect as td
from tooldialect.stream import collect

pytest.importorskip("tiktoken", reason="tiktoken is in the dev extra")
pytest.importorskip("bpe_openai", reason="bpe-openai (the o200k vocabulary, no download) is in the dev extra")

CASES = all_cases()
ENCODABLE = [c for c in CASES if not re.search(r"[\ud800-\udfff]", c.text)]  # a lone surrogate has no UTF-8


@pytest.mark.exhaustive
@pytest.mark.parametrize("case", ENCODABLE, ids=[c.id for c in ENCODABLE])
def test_token_ids_read_like_the_text_with_special_tokens_kept(case):
    opts = options(case)
    enc, ids, specials = tokenized(case.text)
    want = td.parse(case.text, **opts)
    assert td.parse_tokens(ids, tokenizer=enc, **opts) == want
    if not specials:
        return
    # one id per delta, as a server's engine hands them out
    stream = td.ToolStream(tokenizer=enc, **opts)
    events = [ev for i in ids for ev in stream.feed_tokens([i])] + stream.close()
    assert collect(events) == want


def test_calls_are_found_where_the_servers_text_lost_the_markers():
    """With skip_special_tokens the server's text has no markers left; the ids still do."""
    lost = 0
    for case in ENCODABLE[:: sweep(1, 3)]:  # a third of the corpus in the quick tier
        enc, ids, specials = tokenized(case.text)
        if not specials:
            continue
        opts = options(case)
        want = td.parse(case.text, **opts)
        stripped = "".join(enc.decode([i]) for i in ids if i < FIRST_ADDED and i not in enc._special_tokens.values())
        if len(td.parse(stripped, **opts).calls) < len(want.calls):
            lost += 1
            assert td.parse_tokens(ids, tokenizer=enc, **opts).calls == want.calls
    assert lost >= sweep(20, 6)  # the corpus has many replies whose calls need their special tokens


def test_a_character_split_between_tokens_is_held_until_complete():
    enc = encoding(("<|tool_call_begin|>",))
    text = "Parrots 🦜 and geese 🪿, 𠜎 ꙮ: café"
    ids = enc.encode(text)
    pieces = [enc.decode_single_token_bytes(i) for i in ids]
    assert any(not _utf8(p) for p in pieces)  # some token ends inside a character
    stream = td.ToolStream(tokenizer=enc)
    events = [ev for i in ids for ev in stream.feed_tokens([i])] + stream.close()
    assert collect(events).text == text
    assert all("\ufffd" not in ev.text for ev in events if isinstance(ev, td.TextDelta))


def _utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


class SentencePieceLike:
    """A tokenizer that decodes a token differently alone and in context (a SentencePiece
    ``▁word`` loses its space at the start of a decode), with byte tokens for the rest."""

    def __init__(self) -> None:
        self.pieces = [
            "▁Sure",
            ".",
            "▁I",
            "'ll",
            "▁check",
            "▁the",
            "▁weather",
            "<0xE2>",
            "<0x9C>",
            "<0x93>",
            "{",
            '"',
            "city",
            ":",
            "▁",
            "Paris",
            "}",
        ]
        self.added_tokens_decoder = {100: _Added("<tool_call>"), 101: _Added("</tool_call>"), 102: _Added("<s>")}

    def encode_pieces(self, pieces: list[str]) -> list[int]:
        return [self.pieces.index(p) for p in pieces]

    def decode(self, ids: list[int]) -> str:
        out = bytearray()
        for i in ids:
            p = self.pieces[i]
            if p.startswith("<0x"):
                out.append(int(p[3:5], 16))
            else:
                out += p.replace("▁", " ").encode()
        return out.decode("utf-8", "replace").removeprefix(" ")


class _Added:
    def __init__(self, content: str) -> None:
        self.content = content
        self.special = True


def test_a_tokenizer_that_decodes_in_context():
    tok = SentencePieceLike()
    ids = [102, *tok.encode_pieces(["▁Sure", ".", "▁I", "'ll", "▁check", "<0xE2>", "<0x9C>", "<0x93>"])]
    ids += [100, *tok.encode_pieces(["{", '"', "city", '"', ":", "▁", '"', "Paris", '"', "}"]), 101]
    want = '<s>Sure. I\'ll check✓<tool_call>{"city": "Paris"}</tool_call>'
    stream = td.ToolStream(tokenizer=tok, families=["hermes"])
    events = [ev for i in ids for ev in stream.feed_tokens([i])] + stream.close()
    assert collect(events) == td.parse(want, families=["hermes"])


def test_special_tokens_alone_and_caller_mistakes():
    specials = {7: "[TOOL_CALLS]", 8: "[ARGS]"}

    class Chars:
        def decode(self, ids: list[int]) -> str:
            return "".join(map(chr, ids))

    text = 'get_weather{"city": "Paris"}'
    ids = [7, *map(ord, "get_weather"), 8, *map(ord, '{"city": "Paris"}')]
    got = td.parse_tokens(ids, tokenizer=Chars(), special_tokens=specials, families=["mistral"])
    assert [(c.name, c.arguments) for c in got.calls] == [("get_weather", {"city": "Paris"})]
    assert td.parse(text, families=["mistral"]).calls == []  # the text alone has no marker
    with pytest.raises(td.PolicyError, match="tokenizer="):
        td.ToolStream().feed_tokens([1])
    with pytest.raises(td.PolicyError, match="decode"):
        td.ToolStream(tokenizer=object())
    with pytest.raises(td.PolicyError, match="not in special_tokens"):
        td.parse_tokens([7, 9], special_tokens=specials)
    with pytest.raises(td.PolicyError, match="int"):
        td.parse_tokens(["7"], special_tokens=specials)
    with pytest.raises(td.PolicyError, match="special_tokens"):
        td.ToolStream(special_tokens={1: ""})
    stream = td.ToolStream(special_tokens=specials)
    stream.close()
    with pytest.raises(td.StreamClosedError):
        stream.feed_tokens([7])


# -- markers spelled with ordinary tokens ---------------------------------------------------------

ONLY = {name for name in td.families.names() if td.families.get(name).grammar.header.special_tokens == "only"}


def _ordinary(enc: Any, text: str) -> list[int]:
    """``text`` in ordinary tokens only: each special token's text spelled out."""
    return enc.encode(text, disallowed_special=())


def test_the_families_that_read_special_tokens_only():
    assert {"kimi_k2", "deepseek", "harmony", "mistral"} == ONLY


SPECIAL_ONLY_CASES = [c for c in ENCODABLE if c.path.stem in ONLY]


@pytest.mark.exhaustive(every=4)
@pytest.mark.parametrize("case", SPECIAL_ONLY_CASES, ids=[c.id for c in SPECIAL_ONLY_CASES])
def test_a_reply_spelling_its_markers_in_ordinary_tokens_holds_no_call(case):
    """Every call of these families needs a special token: spelled out, read by the family
    alone, nothing is a call."""
    opts = {**options(case), "families": [case.path.stem]}
    enc, ids, specials = tokenized(case.text)
    if not any(s in case.text for s in specials):
        pytest.skip("no special token in this reply")
    got = td.parse_tokens(_ordinary(enc, case.text), tokenizer=enc, **opts)
    assert got.calls == []
    assert td.parse_tokens(ids, tokenizer=enc, **opts) == td.parse(case.text, **opts)


KIMI_CALL = (
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
    '{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>'
)


def test_a_quoted_marker_is_text_and_the_real_call_is_read():
    quote = "Kimi opens calls with <|tool_calls_section_begin|> and ends with <|tool_calls_section_end|>. "
    enc, ids, specials = tokenized(quote + KIMI_CALL)
    ids = _ordinary(enc, quote) + enc.encode(KIMI_CALL, allowed_special=set(specials))
    want_calls = td.parse(KIMI_CALL, families=["kimi_k2"]).calls
    got = td.parse_tokens(ids, tokenizer=enc, families=["kimi_k2"])
    assert got.text == quote and got.diagnostics == []
    assert [(c.name, c.arguments, c.id) for c in got.calls] == [(c.name, c.arguments, c.id) for c in want_calls]
    # as text, the same reply reads the quoted opener as a block (nothing tells them apart)
    assert td.parse(quote + KIMI_CALL, families=["kimi_k2"]).text != quote
    # one id per delta, as a server hands them out: the same
    stream = td.ToolStream(tokenizer=enc, families=["kimi_k2"])
    events = [ev for i in ids for ev in stream.feed_tokens([i])] + stream.close()
    assert collect(events) == got


def test_a_family_that_reads_any_spelling_reads_an_ordinary_one():
    text = 'Sure.<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    enc = encoding(("<tool_call>", "</tool_call>"))
    got = td.parse_tokens(_ordinary(enc, text), tokenizer=enc, families=["hermes"])
    assert [c.name for c in got.calls] == ["get_weather"]


def test_text_fed_as_text_to_a_token_stream_counts_every_marker():
    enc, _ids, _specials = tokenized(KIMI_CALL)
    stream = td.ToolStream(tokenizer=enc, families=["kimi_k2"])
    events = stream.feed_tokens(_ordinary(enc, "Plain <|tool_calls_section_begin|> prose. "))
    events += stream.feed(KIMI_CALL) + stream.close()
    got = collect(events)
    assert got.text == "Plain <|tool_calls_section_begin|> prose. "
    assert [c.name for c in got.calls] == ["get_weather"]


def test_what_is_known_of_ordinary_tokens_stays_bounded():
    enc, _, _ = tokenized(KIMI_CALL)
    stream = td.ToolStream(tokenizer=enc, families=["kimi_k2"])
    piece = _ordinary(enc, "word <|tool_call_end|> ") + enc.encode("<|tool_call_end|>", allowed_special="all")
    for _ in range(2000):
        stream.feed_tokens(piece)
    stream.close()
    assert len(stream._engine.window.specials.starts) < 200


# -- mistral-common's tokenizers (vLLM's --tokenizer-mode mistral) ---------------------------

MISTRAL_SPECIALS = [
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[TOOL_CALLS]",
    "[ARGS]",
    "[CALL_ID]",
    "[THINK]",
    "[/THINK]",
]


def _tekkenizer(tmp_path: Any) -> Any:
    """A real Tekkenizer, loaded by mistral-common from a small tekken file written here: every
    byte a token, a few merges, and the special tokens a Mistral tool call uses."""
    tekken = pytest.importorskip("mistral_common.tokens.tokenizers.tekken", reason="mistral-common is in the dev extra")
    import base64
    import json

    pieces = [bytes([b]) for b in range(256)] + [b"ge", b"get", b"Pa", b"Par", b"Paris", b"ci", b"city"]
    vocab = [
        {"rank": i, "token_bytes": base64.b64encode(p).decode("ascii"), "token_str": p.decode("latin-1")}
        for i, p in enumerate(pieces)
    ]
    specials = [{"rank": i, "token_str": s, "is_control": True} for i, s in enumerate(MISTRAL_SPECIALS)]
    config = {
        "pattern": r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s+",
        "num_vocab_tokens": len(pieces),
        "default_vocab_size": len(pieces) + 16,
        "default_num_special_tokens": 16,
        "version": "v11",
    }
    path = tmp_path / "tekken.json"
    path.write_text(json.dumps({"vocab": vocab, "special_tokens": specials, "config": config}), encoding="utf-8")
    return tekken.Tekkenizer.from_file(path)


def _mistral_ids(tok: Any, parts: list[str]) -> tuple[list[int], str]:
    """Token ids of ``parts`` (a special token's text is that token) and the text they stand for."""
    ids: list[int] = []
    for part in parts:
        if part in MISTRAL_SPECIALS:
            ids.append(tok.get_special_token(part))
        else:
            ids += tok.encode(part, False, False)
    return ids, "".join(parts)


MISTRAL_REPLY = ["Sure, in Zürich 🦜.", "[TOOL_CALLS]", "get_weather", "[ARGS]", '{"city": "Paris"}', "</s>"]


def test_a_tekkenizer_is_read_byte_by_byte_with_its_special_tokens(tmp_path):
    tok = _tekkenizer(tmp_path)
    ids, text = _mistral_ids(tok, MISTRAL_REPLY)
    want = td.parse(text, families=["mistral"])
    assert [(c.name, c.arguments) for c in want.calls] == [("get_weather", {"city": "Paris"})]
    assert td.parse_tokens(ids, tokenizer=tok, families=["mistral"]) == want
    stream = td.ToolStream(tokenizer=tok, families=["mistral"])  # one id per delta
    events = [ev for i in ids for ev in stream.feed_tokens([i])] + stream.close()
    assert collect(events) == want
    assert all("\ufffd" not in ev.text for ev in events if isinstance(ev, td.TextDelta))
    # inside a MistralTokenizer: mistral-common's (instruct_tokenizer) and vLLM's (instruct)
    for attr in ("instruct_tokenizer", "instruct"):
        holder = type("Holder", (), {attr: type("Instruct", (), {"tokenizer": tok})()})()
        assert td.parse_tokens(ids, tokenizer=holder, families=["mistral"]) == want


def test_a_mistral_common_sentencepiece_tokenizer_is_read_in_context():
    pytest.importorskip("sentencepiece", reason="sentencepiece is in the dev extra")
    mistral_common = pytest.importorskip("mistral_common", reason="mistral-common is in the dev extra")
    from pathlib import Path

    from mistral_common.tokens.tokenizers.sentencepiece import SentencePieceTokenizer

    # the v3 tokenizer model mistral-common ships in its package (nothing is downloaded)
    model = Path(mistral_common.__file__).parent / "data" / "mistral_instruct_tokenizer_240323.model.v3"
    tok = SentencePieceTokenizer(str(model))
    parts = ["Sure, in Zürich.", "[TOOL_CALLS]", ' [{"name": "get_weather", "arguments": {"city": "Paris"}}]', "</s>"]
    ids, _ = _mistral_ids(tok, parts)
    # each run of ordinary tokens reads as SentencePiece decodes it whole
    text = "".join(p if p in MISTRAL_SPECIALS else tok.decode(tok.encode(p, False, False)) for p in parts)
    want = td.parse(text, families=["mistral"])
    assert [(c.name, c.arguments) for c in want.calls] == [("get_weather", {"city": "Paris"})]
    assert td.parse_tokens(ids, tokenizer=tok, families=["mistral"]) == want
    stream = td.ToolStream(tokenizer=tok, families=["mistral"])
    events = [ev for i in ids for ev in stream.feed_tokens([i])] + stream.close()
    assert collect(events) == want


def test_a_tokenizer_whose_special_tokens_cannot_be_found_is_refused():
    class DecodeOnly:  # what a Tekkenizer looked like to the reader before it was known
        def decode(self, ids: list[int]) -> str:
            return "".join(map(chr, ids))

    for tokenizer in (DecodeOnly(), object(), "o200k_base"):
        with pytest.raises(td.PolicyError) as err:
            td.parse_tokens([104, 105], tokenizer=tokenizer, families=["mistral"])
        message = str(err.value)
        assert type(tokenizer).__name__ in message
        for readable in ("tiktoken", "Hugging Face", "Tekkenizer", "SentencePieceTokenizer", "MistralTokenizer"):
            assert readable in message
    # with the special tokens named, a tokenizer that only decodes is read
    got = td.parse_tokens([104, 105], tokenizer=DecodeOnly(), special_tokens={7: "[TOOL_CALLS]"})
    assert got.text == "hi"
