"""A generator of near-valid model replies, for the properties and the ``replies`` fuzz harness.

A reply is a row of pieces: prose made of unique tagged words (``w001``), call blocks of
every family written by the family's own writer (``td.families.get(f).render_call``) or
taken whole from the golden corpus, reasoning blocks, fenced examples with and without a
language, inline code spans, and prose that quotes a marker ("Wrap each call in
<tool_call> and </tool_call> tags.").  Blocks are then broken the ways models break them
(a marker dropped, doubled or cut, an unbalanced quote, a stray backslash) and the reply
may be cut off anywhere.  Because the generator places every piece itself, it knows which
words are prose and where call markup was written, which is what lets the checks say
"nothing lost" and "nothing invented" precisely (:mod:`contract`).

One builder serves two sources of choices: :func:`replies` draws them from hypothesis
(which shrinks a failure to a small reply), :func:`from_bytes` reads them from a fuzzer's
bytes.  A choice is an integer in ``[lo, hi]`` and ``lo`` is always the simplest one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from contract import VARIANTS, policy_with
from hypothesis import strategies as st
from support import all_cases
from test_render_call import toolset as toolset_for

import tooldialect as td

__all__ = ["Reply", "build", "from_bytes", "replies"]

Choose = Callable[[int, int], int]

NAMES = ("get_weather", "search", "read_file", "send_message", "f", "lookup_v2")
KEYS = ("city", "query", "path", "count", "flag", "tags", "opts")
#: Characters a model writes in string values that stress a family's escaping.
SPECIALS = ('"', "'", "\\", "\n", "<", "é", "{}", "</p>")
REASONING = (
    ("<think>", "</think>"),
    ("[THINK]", "[/THINK]"),
    ("<seed:think>", "</seed:think>"),
    ("<think:opensource>", "</think:opensource>"),
)
FENCES = ("python", "xml", "bash", "json", "", "tool_call")
#: Languages whose fence holds examples, never calls (DESIGN §6, protected regions).
PROTECTING = ("python", "xml", "bash", "json")
#: XML-like openers and closers prose may quote: such a block after prose, with more prose
#: after it on its line, is prose (decisions 93), so a call read from it is invented.
QUOTED = (
    ("<tool_call>", "</tool_call>"),
    ("<function_calls>", "</function_calls>"),
    ("<tool_calls>", "</tool_calls>"),
    ("<start_function_call>", "<end_function_call>"),
)
#: A model's special-token sentinels commit wherever they are written (decisions 93): prose
#: quoting one may become a block, so the words after it are call markup too.
SENTINELS = (
    ("<|tool_call|>", ""),
    ("[TOOL_CALLS]", ""),
    ("<|python_tag|>", ""),
    ("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"),
    ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"),
    ("<|START_ACTION|>", "<|END_ACTION|>"),
)
#: What a mutation takes as a marker inside a written block.
MARKUP = re.compile(r"<[^<>\s][^<>\n]{0,60}>|\[[A-Z_/]{2,20}\]|```")
MUTATIONS = ("none", "drop", "double", "cut", "quote", "backslash")


@dataclass
class Reply:
    """A generated reply and what the generator knows about it."""

    text: str  #: what the parser reads (broken, maybe cut off)
    whole: str  #: the same reply before it was cut off (``text`` when it was not)
    words: dict[str, tuple[int, int]]  #: prose words and where they are in ``text``
    regions: list[tuple[int, int, str]]  #: where call markup was written in ``text``: "block" or "corpus"
    opts: dict[str, Any]  #: tools, policy (and families) to parse it with
    variant: str
    plan: list[str] = field(default_factory=list)  #: the pieces, for a failure message

    def __repr__(self) -> str:
        tools = list(self.opts["tools"].names) if self.opts.get("tools") is not None else None
        cut = f", cut at {len(self.text)} of {len(self.whole)}" if self.text != self.whole else ""
        return f"Reply({self.text!r}, variant={self.variant}, tools={tools}{cut}, plan={self.plan})"


class _Builder:
    """Appends pieces, keeping track of prose words and call regions as offsets."""

    def __init__(self, choose: Choose) -> None:
        self.choose = choose
        self.parts: list[str] = []
        self.size = 0
        self.words: dict[str, tuple[int, int]] = {}
        self.regions: list[tuple[int, int, str]] = []  # (start, end, kind): block, corpus or example
        self.calls: list[dict[str, Any]] = []
        self.plan: list[str] = []
        self.tainted = False  # a broken block or a corpus text came before: examples may be read
        self.starts: list[int] = []  # where each piece begins

    def pick(self, options: tuple[Any, ...] | list[Any]) -> Any:
        return options[self.choose(0, len(options) - 1)]

    def add(self, text: str, kind: str | None = None) -> None:
        if kind is not None:
            self.regions.append((self.size, self.size + len(text), kind))
        self.parts.append(text)
        self.size += len(text)

    def word(self) -> None:
        w = f"w{len(self.words):03d}"
        self.words[w] = (self.size, self.size + len(w))
        self.add(w)

    def prose(self, n: int | None = None) -> None:
        for i in range(n if n is not None else self.choose(1, 5)):
            if i:
                self.add(self.pick((" ", " ", ", ", ".\n", "\n\n", ' "', " \\")))
            self.word()

    # -- values and calls ------------------------------------------------------------------

    def string(self) -> str:
        out = " ".join(f"v{self.choose(0, 999):03d}" for _ in range(self.choose(1, 2)))
        if self.choose(0, 3) == 3:
            at = self.choose(0, len(out))
            out = out[:at] + self.pick(SPECIALS) + out[at:]
        return out

    def value(self, depth: int = 0) -> Any:
        kind = self.choose(0, 5 if depth == 0 else 3)
        if kind == 0:
            return self.string()
        if kind == 1:
            return self.choose(0, 10**6) - 500
        if kind == 2:
            return bool(self.choose(0, 1))
        if kind == 3:
            return None if depth else self.string()
        if kind == 4:
            return [self.value(depth + 1) for _ in range(self.choose(0, 3))]
        return {f"k{i}": self.value(depth + 1) for i in range(self.choose(0, 2))}

    def call(self) -> dict[str, Any]:
        keys = [k for k in KEYS if self.choose(0, 2) == 2][:3]
        call = {"name": self.pick(NAMES), "arguments": {k: self.value() for k in keys}}
        self.calls.append(call)
        return call

    def block_text(self, family: str) -> str:
        """One block of ``family`` with one or two calls; a JSON family writes what another refuses."""
        fam = td.families.get(family)
        calls = [self.call() for _ in range(self.choose(1, 2) if fam.shape.parallel else 1)]
        try:
            return fam.render_calls(calls, toolset_for(*calls))
        except td.PolicyError:
            return td.families.get("hermes").render_calls(calls)

    # -- pieces --------------------------------------------------------------------------------

    def piece(self) -> None:
        """One piece, of a kind chosen evenly (a block twice as often: it is what breaks)."""
        kind = self.choose(0, 7)
        if kind == 0:
            self.prose()
        elif kind in (1, 2):
            family = self.pick(td.families.names())
            text, how = self.mutate(self.block_text(family))
            self.plan.append(f"{family} block, {how}")
            self.tainted |= how != "none"
            self.add(text, "block")
        elif kind == 3:
            self.reasoning()
        elif kind == 4:
            self.fence()
        elif kind == 5:
            self.inline_code()
        elif kind == 6:
            self.quoted()
        else:
            case = self.pick(_corpus_texts())
            self.plan.append("corpus text")
            self.tainted = True
            self.add(case, "corpus")

    def reasoning(self) -> None:
        opener, closer = self.pick(REASONING)
        self.plan.append(f"reasoning {opener}")
        self.add(opener)
        self.prose()
        if self.choose(0, 2) == 2:
            self.add("\n")
            self.add(self.block_text(self.pick(td.families.names())), "block")
            self.add("\n")
        self.add(closer)

    def fence(self) -> None:
        lang = self.pick(FENCES)
        live = lang not in PROTECTING or self.tainted
        self.plan.append(f"fence {lang!r}")
        self.add("```" + lang + "\n")
        block = self.block_text(self.pick(td.families.names())) if lang != "json" and self.choose(0, 1) else ""
        if block and "```" not in block:
            self.add(block, "block" if live else "example")
        else:
            self.prose()
        self.add("\n```\n")

    def inline_code(self) -> None:
        block = self.block_text(self.pick(td.families.names()))
        if "\n" in block or "`" in block:
            block = self.pick(QUOTED + SENTINELS)[0]
        self.plan.append("inline code")
        self.add(" ")
        self.add("`" + block + "`", "block" if self.tainted else "example")
        self.add(" ")

    def quoted(self) -> None:
        """Prose that names a marker: "Wrap each call in <tool_call> and </tool_call> tags."."""
        sentinel = self.choose(0, 1)
        opener, closer = self.pick(SENTINELS if sentinel else QUOTED)
        self.plan.append(f"prose quoting {opener}")
        self.prose(2)
        start = self.size
        self.add(" " + opener + " ")
        self.prose(self.choose(1, 2))
        if closer and self.choose(0, 1):
            self.add(" " + closer + " ")
            self.prose(1)
        if sentinel:
            self.regions.append((start, self.size, "block"))

    # -- breaking a block ---------------------------------------------------------------------

    def mutate(self, block: str) -> tuple[str, str]:
        how = MUTATIONS[self.choose(0, len(MUTATIONS) - 1)]
        marks = list(MARKUP.finditer(block))
        if how in ("drop", "double", "cut") and marks:
            m = marks[self.choose(0, len(marks) - 1)]
            middle = {"drop": "", "double": m.group() * 2, "cut": m.group()[: self.choose(1, len(m.group()) - 1)]}[how]
            return block[: m.start()] + middle + block[m.end() :], f"{how} {m.group()!r}"
        if how in ("quote", "backslash"):
            at = self.choose(0, len(block))
            return block[:at] + ('"' if how == "quote" else "\\") + block[at:], f"{how} at {at}"
        return block, "none"

    # -- the reply -------------------------------------------------------------------------------

    def reply(self) -> Reply:
        for _ in range(self.choose(1, 6)):
            self.starts.append(self.size)
            self.piece()
            if self.choose(0, 1):
                self.add(self.pick((" ", "\n", "\n\n")))
        whole = "".join(self.parts)
        variant = self.pick(list(VARIANTS))
        opts: dict[str, Any] = {"policy": policy_with(None, variant)}
        if self.calls and self.choose(0, 1):
            opts["tools"] = toolset_for(*self.calls)
        cut = self.choose(0, len(whole)) if self.choose(0, 2) == 2 else len(whole)
        return self.cut_off(whole, cut, opts, variant)

    def cut_off(self, whole: str, cut: int, opts: dict[str, Any], variant: str) -> Reply:
        """The reply up to ``cut``.  Words past the cut are gone, and the piece the cut falls
        in may be read any way: an example cut off is no longer closed by its fence or
        backtick, and prose quoting a block may end right after it, where the block is a
        call (decisions 93: it is prose only while more prose follows on its line)."""
        words = {w: (a, b) for w, (a, b) in self.words.items() if b <= cut}
        regions = [(a, min(b, cut), kind) for a, b, kind in self.regions if a < cut and kind != "example"]
        if cut < len(whole):
            regions.append((max(a for a in self.starts if a < cut) if cut else 0, cut, "block"))
            self.plan.append(f"cut at {cut}")
        return Reply(whole[:cut], whole, words, regions, opts, variant, self.plan)


_CORPUS: list[str] = []


def _corpus_texts() -> list[str]:
    if not _CORPUS:
        _CORPUS.extend(case.text for case in all_cases() if case.text and len(case.text) <= 400)
    return _CORPUS


def build(choose: Choose) -> Reply:
    """A reply built from ``choose``'s answers."""
    return _Builder(choose).reply()


@st.composite
def replies(draw: Callable[[Any], Any]) -> Reply:
    """Hypothesis replies: every choice is a drawn integer, so a failure shrinks to a short one."""
    return build(lambda lo, hi: draw(st.integers(lo, hi)))


class _Bytes:
    """Choices read from a fuzzer's bytes; when they run out, every choice is the simplest."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def __call__(self, lo: int, hi: int) -> int:
        if hi <= lo:
            return lo
        width = 1 if hi - lo < 256 else 4
        chunk = self.data[self.pos : self.pos + width]
        self.pos += width
        if len(chunk) < width:
            return lo
        return lo + int.from_bytes(chunk, "little") % (hi - lo + 1)


def from_bytes(data: bytes) -> Reply:
    return build(_Bytes(data))
