"""Token ids to text for the engine, special tokens kept: :meth:`ToolStream.feed_tokens`.

A server that decodes with ``skip_special_tokens=True`` drops the special tokens many
formats use as markers (Kimi's ``<|tool_call_begin|>``, Harmony's ``<|call|>``, Mistral's
``[TOOL_CALLS]``), and the calls are left as prose. Fed token ids instead, the stream
decodes them itself: a special token becomes its text, whatever the server would show,
and ordinary tokens are decoded incrementally — bytes kept until they complete a
character, and, for tokenizers that decode a token differently in context (SentencePiece's
leading space), each piece decoded after the few tokens before it.

What counts as a tokenizer: anything with ``decode_single_token_bytes`` (tiktoken's
``Encoding``: decoded byte by byte, exactly), or with ``decode`` (a Hugging Face tokenizer;
its special tokens from ``added_tokens_decoder`` / ``all_special_ids`` and
``convert_ids_to_tokens``). ``special_tokens={id: text}`` adds or overrides special tokens
(and with no tokenizer, the stream takes only those ids: another id is a caller error).
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Mapping
from typing import Any

from .errors import PolicyError

__all__ = ["Detokenizer"]

#: ordinary tokens decoded with this many tokens before them as context (HF tokenizers)
CONTEXT = 4
#: ids held back at most while their text ends inside a character
MAX_HELD = 8


def _specials(tokenizer: Any) -> dict[int, str]:
    """The special tokens a tokenizer declares, id to text."""
    out: dict[int, str] = {}
    if tokenizer is None:
        return out
    table = getattr(tokenizer, "_special_tokens", None)  # tiktoken: text -> id
    if isinstance(table, Mapping):
        out.update({int(i): str(t) for t, i in table.items()})
    added = getattr(tokenizer, "added_tokens_decoder", None)  # HF: id -> AddedToken
    if isinstance(added, Mapping):
        for i, tok in added.items():
            if getattr(tok, "special", True):
                out[int(i)] = str(getattr(tok, "content", tok))
    ids = getattr(tokenizer, "all_special_ids", None)
    convert = getattr(tokenizer, "convert_ids_to_tokens", None)
    if ids and callable(convert):
        for i in ids:
            out.setdefault(int(i), str(convert(int(i))))
    return out


class Detokenizer:
    """Turns token ids into text, delta by delta, special tokens written out."""

    __slots__ = ("_tok", "_specials", "_bytes", "_utf8", "_context", "_held", "marks", "special_texts")

    def __init__(self, tokenizer: Any = None, special_tokens: Mapping[int, str] | None = None) -> None:
        if tokenizer is None and not special_tokens:
            raise PolicyError("feed_tokens needs a tokenizer= (or special_tokens={id: text}) given to the ToolStream")
        if tokenizer is not None and not (
            callable(getattr(tokenizer, "decode_single_token_bytes", None))
            or callable(getattr(tokenizer, "decode", None))
        ):
            raise PolicyError(
                f"tokenizer= must have decode_single_token_bytes (tiktoken) or decode (Hugging Face), got {type(tokenizer).__name__}"
            )
        specials = _specials(tokenizer)
        if special_tokens:
            for i, text in special_tokens.items():
                if not isinstance(i, int) or isinstance(i, bool) or not isinstance(text, str) or not text:
                    raise PolicyError(f"special_tokens maps int ids to non-empty str, got {i!r}: {text!r}")
                specials[i] = text
        self._tok = tokenizer
        self._specials = specials
        self.special_texts = frozenset(specials.values())
        self._bytes = tokenizer is not None and callable(getattr(tokenizer, "decode_single_token_bytes", None))
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
            elif self._tok is None:
                raise PolicyError(f"token id {i} is not in special_tokens, and no tokenizer= decodes it")
            elif self._bytes:
                piece = self._utf8.decode(self._tok.decode_single_token_bytes(i))
                out.append(piece)
                size += len(piece)
            else:
                self._held.append(i)
                piece = self._decode(final=False)
                out.append(piece)
                size += len(piece)
        if size > lo:
            marks.append((lo, size))
        self.marks = marks
        return "".join(out)

    def close(self) -> str:
        return self._flush()

    def _flush(self) -> str:
        if self._bytes:
            return self._utf8.decode(b"", final=True)
        return self._decode(final=True)

    def _decode(self, final: bool) -> str:
        """The text of the held ids, decoded after the context ids: held while it ends in a
        replacement character (a character cut between tokens), unless ``final``."""
        if not self._held:
            return ""
        ctx = self._context[-CONTEXT:]
        before = self._tok.decode(ctx) if ctx else ""
        whole = self._tok.decode(ctx + self._held)
        if not final and whole.endswith("\ufffd") and len(self._held) < MAX_HELD:
            return ""
        text = whole[len(before) :] if whole.startswith(before) else self._tok.decode(self._held)
        self._context = (ctx + self._held)[-CONTEXT:]
        self._held = []
        return text
