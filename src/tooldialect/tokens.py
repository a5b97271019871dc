"""Token ids to text for the engine, special tokens kept: :meth:`ToolStream.feed_tokens`.

A server that decodes with ``skip_special_tokens=True`` drops the special tokens many
formats use as markers (Kimi's ``<|tool_call_begin|>``, Harmony's ``<|call|>``, Mistral's
``[TOOL_CALLS]``), and the calls are left as prose. Fed token ids instead, the stream
decodes them itself: a special token becomes its text, whatever the server would show,
and ordinary tokens are decoded incrementally — bytes kept until they complete a
character, and, for tokenizers that decode a token differently in context (SentencePiece's
leading space), each piece decoded after the few tokens before it.

The tokenizers read (:data:`READABLE`): tiktoken's ``Encoding`` (``decode_single_token_bytes``,
its special tokens from ``_special_tokens``: decoded byte by byte, exactly); mistral-common's
``Tekkenizer`` (``id_to_byte_piece``, byte by byte, its special tokens from ``special_ids``)
and ``SentencePieceTokenizer`` (``decode`` in context, ``special_ids``), also inside a
``MistralTokenizer`` (mistral-common's, or vLLM's for ``--tokenizer-mode mistral``); and a
Hugging Face tokenizer (``decode``, its special tokens from ``added_tokens_decoder`` /
``all_special_ids`` and ``convert_ids_to_tokens``). Any other object is refused
(``PolicyError``), unless it has ``decode`` and ``special_tokens={id: text}`` says which
tokens are special: a tokenizer whose special tokens cannot be found would drop the
markers silently. ``special_tokens`` adds or overrides special tokens (and with no
tokenizer, the stream takes only those ids: another id is a caller error).
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .errors import PolicyError

__all__ = ["READABLE", "Detokenizer"]

#: ordinary tokens decoded with this many tokens before them as context (HF tokenizers)
CONTEXT = 4
#: ids held back at most while their text ends inside a character
MAX_HELD = 8
#: What ``tokenizer=`` may be, as error messages say it.
READABLE = (
    "a tiktoken Encoding, a Hugging Face tokenizer, or a mistral-common Tekkenizer, "
    "SentencePieceTokenizer or MistralTokenizer (mistral-common's or vLLM's)"
)


def _mistral_common(tokenizer: Any) -> Any:
    """The mistral-common tokenizer (Tekken or SentencePiece) ``tokenizer`` is or holds
    (``MistralTokenizer.instruct_tokenizer.tokenizer``, vLLM's ``MistralTokenizer.instruct``),
    or None."""
    seen: set[int] = set()
    for _ in range(4):
        if tokenizer is None or id(tokenizer) in seen:
            return None
        seen.add(id(tokenizer))
        if callable(getattr(tokenizer, "id_to_piece", None)) and isinstance(
            getattr(tokenizer, "special_ids", None), (set, frozenset, list, tuple)
        ):
            return tokenizer
        instruct = getattr(tokenizer, "instruct_tokenizer", None) or getattr(tokenizer, "instruct", None)
        tokenizer = (
            getattr(instruct, "tokenizer", None) if instruct is not None else getattr(tokenizer, "tokenizer", None)
        )
    return None


def _hf_specials(tokenizer: Any) -> dict[int, str] | None:
    """The special tokens a Hugging Face tokenizer declares, id to text (None: it does not
    look like one)."""
    added = getattr(tokenizer, "added_tokens_decoder", None)  # id -> AddedToken
    ids = getattr(tokenizer, "all_special_ids", None)
    convert = getattr(tokenizer, "convert_ids_to_tokens", None)
    if not isinstance(added, Mapping) and not (ids is not None and callable(convert)):
        return None
    out: dict[int, str] = {}
    if isinstance(added, Mapping):
        for i, tok in added.items():
            if getattr(tok, "special", True):
                out[int(i)] = str(getattr(tok, "content", tok))
    if ids and callable(convert):
        for i in ids:
            out.setdefault(int(i), str(convert(int(i))))
    return out


def _reading(tokenizer: Any, given: bool) -> tuple[dict[int, str], Callable[[int], bytes] | None, Any]:
    """How to read ``tokenizer``: its special tokens (id to text), and either the bytes of
    one ordinary token or the tokenizer whose ``decode`` reads ordinary tokens in context.
    ``given``: the caller named the special tokens (``special_tokens=``)."""
    if tokenizer is None:
        return {}, None, None
    bytes_of = getattr(tokenizer, "decode_single_token_bytes", None)
    if callable(bytes_of):  # tiktoken: text -> id
        table = getattr(tokenizer, "_special_tokens", None)
        specials = {int(i): str(t) for t, i in table.items()} if isinstance(table, Mapping) else {}
        return specials, bytes_of, None
    mistral = _mistral_common(tokenizer)
    if mistral is not None:
        specials = {int(i): str(mistral.id_to_piece(int(i))) for i in sorted(mistral.special_ids)}
        byte_piece = getattr(mistral, "id_to_byte_piece", None)
        if callable(byte_piece):  # Tekken: ordinary ids are tiktoken ranks past the special ones
            return specials, byte_piece, None
        if callable(getattr(mistral, "decode", None)):  # SentencePiece
            return specials, None, mistral
    if callable(getattr(tokenizer, "decode", None)):
        hf = _hf_specials(tokenizer)
        if hf is not None or given:
            return hf or {}, None, tokenizer
    raise PolicyError(
        f"tokenizer= must be {READABLE} (or any object with decode(ids) given with "
        f"special_tokens={{id: text}}), got {type(tokenizer).__name__}"
    )


class Detokenizer:
    """Turns token ids into text, delta by delta, special tokens written out."""

    __slots__ = ("_tok", "_specials", "_bytes", "_utf8", "_context", "_held", "marks", "special_texts")

    def __init__(self, tokenizer: Any = None, special_tokens: Mapping[int, str] | None = None) -> None:
        if tokenizer is None and not special_tokens:
            raise PolicyError("feed_tokens needs a tokenizer= (or special_tokens={id: text}) given to the ToolStream")
        specials, bytes_of, decoder = _reading(tokenizer, bool(special_tokens))
        if special_tokens:
            for i, text in special_tokens.items():
                if not isinstance(i, int) or isinstance(i, bool) or not isinstance(text, str) or not text:
                    raise PolicyError(f"special_tokens maps int ids to non-empty str, got {i!r}: {text!r}")
                specials[i] = text
        self._tok = decoder  # decodes ordinary ids in context (None: bytes_of reads them)
        self._specials = specials
        self.special_texts = frozenset(specials.values())
        self._bytes = bytes_of  # the bytes of one ordinary id (tiktoken, Tekken)
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        self._context: list[int] = []  # ordinary ids already decoded (the last CONTEXT kept)
        self._held: list[int] = []  # ordinary ids whose text is not complete yet
        # the spans of the text the last feed() returned that ordinary tokens wrote
        self.marks: list[tuple[int, int]] = []

    def feed(self, ids: Iterable[int]) -> str:
        out: list[str] = []
        marks: list[tuple[int, int]] = []
        size = 0  # the length of the text in ``out``
        lo = 0  # where the ordinary text since the last special token begins
        for i in ids:
            if not isinstance(i, int) or isinstance(i, bool):
                raise PolicyError(f"token ids must be int, got {type(i).__name__}")
            special = self._specials.get(i)
            if special is not None:
                before = self._flush()
                out.append(before)
                size += len(before)
                if size > lo:
                    marks.append((lo, size))
                out.append(special)
                size += len(special)
                lo = size
                self._context.clear()  # a special token breaks what ordinary text follows
            elif self._bytes is not None:
                piece = self._utf8.decode(self._bytes(i))
                out.append(piece)
                size += len(piece)
            elif self._tok is None:
                raise PolicyError(f"token id {i} is not in special_tokens, and no tokenizer= decodes it")
            else:
                self._held.append(i)
                piece = self._decode(final=False)
                out.append(piece)
                size += len(piece)
        if size > lo:
            marks.append((lo, size))
        self.marks = marks
        return "".join(out)

    def peek(self, ids: Iterable[int]) -> str:
        """The text ``ids`` would give if fed next, leaving the decoder as it was (a server
        asks about tokens it may still reject: speculative ones)."""
        saved = (self._utf8.getstate(), list(self._context), list(self._held), self.marks)
        try:
            return self.feed(ids)
        finally:
            self._utf8.setstate(saved[0])
            self._context, self._held, self.marks = saved[1], saved[2], saved[3]

    def close(self) -> str:
        return self._flush()

    def _flush(self) -> str:
        if self._bytes is not None:
            return self._utf8.decode(b"", final=True)
        return self._decode(final=True)

    def _decode(self, final: bool) -> str:
        """The text of the held ids, decoded after the context ids: held while it ends in a
        replacement character (a character cut between tokens), unless ``final``."""
        if not self._held:
            return ""
        ctx = self._context[-CONTEXT:]
        before: str = self._tok.decode(ctx) if ctx else ""
        whole: str = self._tok.decode(ctx + self._held)
        if not final and whole.endswith("\ufffd") and len(self._held) < MAX_HELD:
            return ""
        text: str = whole[len(before) :] if whole.startswith(before) else self._tok.decode(self._held)
        self._context = (ctx + self._held)[-CONTEXT:]
        self._held = []
        return text
