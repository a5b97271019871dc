"""A real tokenizer with no download: tiktoken's o200k_base, its ranks read from the
bpe-openai wheel, with a model's special tokens added after its own.  Shared by the
token-id tests and the server integration tests (token-granularity deltas)."""

from __future__ import annotations

import base64
import codecs
import gzip
import re
from functools import cache, lru_cache
from importlib import resources
from typing import Any

# what models' tokenizers hold as single special tokens: <|…|>, <｜…｜> and Mistral's [NAME]
SPECIAL = re.compile(r"<\|[A-Za-z_:▁ ]{1,40}\|>|<｜[^｜<>\n]{1,40}｜>|\[(?:TOOL_CALLS|ARGS|CALL_ID|THINK|/THINK)\]")
#: the first id given to a model's special tokens (o200k's own end below it)
FIRST_ADDED = 200100


def missing() -> str | None:
    """Why the tokenizer cannot be built here (None: it can)."""
    try:
        import bpe_openai  # noqa: F401
        import tiktoken  # noqa: F401
    except ImportError as exc:
        return f"tiktoken and bpe-openai (the o200k vocabulary, no download) are needed: {exc}"
    return None


@lru_cache(maxsize=1)
def o200k() -> dict[str, Any]:
    """tiktoken's o200k_base constructor arguments, its ranks read from the bpe-openai wheel."""
    import tiktoken_ext.openai_public as openai_public

    data = gzip.decompress((resources.files("bpe_openai") / "data" / "o200k_base.tiktoken.gz").read_bytes())
    ranks = {base64.b64decode(tok): int(rank) for tok, rank in (line.split() for line in data.splitlines() if line)}
    real = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda *args, **kwargs: ranks
    try:
        return openai_public.o200k_base()
    finally:
        openai_public.load_tiktoken_bpe = real


@cache
def encoding(specials: tuple[str, ...]) -> Any:
    """o200k with a model's special tokens added after its own."""
    import tiktoken

    spec = o200k()
    extra = {s: FIRST_ADDED + n for n, s in enumerate(specials)}
    return tiktoken.Encoding(
        "o200k-test-" + str(hash(specials)),
        pat_str=spec["pat_str"],
        mergeable_ranks=spec["mergeable_ranks"],
        special_tokens={**spec["special_tokens"], **extra},
    )


def tokenized(text: str) -> tuple[Any, list[int], tuple[str, ...]]:
    """The encoding for ``text``'s special tokens, its ids, and those special tokens."""
    specials = tuple(sorted(set(SPECIAL.findall(text))))
    enc = encoding(specials)
    return enc, enc.encode(text, allowed_special=set(specials)), specials


def token_pieces(text: str) -> list[str]:
    """``text`` cut where its tokens end, as a server's detokenizer hands it out: a token
    that ends inside a character adds nothing until the character is complete."""
    enc, ids, _ = tokenized(text)
    dec = codecs.getincrementaldecoder("utf-8")()
    out: list[str] = []
    for i in ids:
        piece = dec.decode(enc.decode_single_token_bytes(i))
        if piece:
            out.append(piece)
    rest = dec.decode(b"", final=True)
    if rest:
        out.append(rest)
    assert "".join(out) == text
    return out
