"""Shared test helpers: the golden-corpus format, stream runners and the stream invariants."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tooldialect as td
from tooldialect.stream import collect

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
RULE = "=" * 80
SEP = "-" * 80

# -- corpus files --------------------------------------------------------------------------


@dataclass
class Case:
    family: str
    title: str
    attrs: dict[str, str]
    text: str
    expected: dict[str, Any] | None
    line: int = 0
    flags: set[str] = field(default_factory=set)

    @property
    def id(self) -> str:
        return f"{self.family}:{self.title}"


_HEADER = re.compile(r"^={80}\n(.*?)\n={80}\n", re.S | re.M)


def read_corpus(path: Path) -> list[Case]:
    """Parse a corpus file: title and attributes between two ``=`` rules, the raw model
    text, a ``-`` rule, then the expected result as JSON."""
    data = path.read_text(encoding="utf-8")
    cases = []
    heads = list(_HEADER.finditer(data))
    for i, m in enumerate(heads):
        head = m.group(1).split("\n")
        title = head[0].strip()
        attrs: dict[str, str] = {}
        flags: set[str] = set()
        for line in head[1:]:
            line = line.strip()
            if not line.startswith(":"):
                raise ValueError(f"{path.name}: bad attribute line {line!r} in {title!r}")
            key, _, value = line[1:].partition(" ")
            if value:
                attrs[key] = value.strip()
            else:
                flags.add(key)
        body_end = heads[i + 1].start() if i + 1 < len(heads) else len(data)
        body = data[m.end() : body_end]
        sep = body.find("\n" + SEP + "\n")
        if sep < 0:
            if body.startswith(SEP + "\n"):
                text, rest = "", body[len(SEP) + 1 :]
            else:
                raise ValueError(f"{path.name}: case {title!r} has no {SEP[:8]}… separator")
        else:
            text, rest = body[:sep], body[sep + len(SEP) + 2 :]
        rest = rest.strip()
        expected = json.loads(rest) if rest else None
        cases.append(
            Case(path.stem, title, attrs, text, expected, data.count("\n", 0, m.start()) + 1, flags)
        )
    return cases


def write_corpus(path: Path, cases: list[Case]) -> None:
    out = []
    for c in cases:
        out.append(RULE)
        out.append(c.title)
        for k, v in c.attrs.items():
            out.append(f":{k} {v}")
        for f in sorted(c.flags):
            out.append(f":{f}")
        out.append(RULE)
        out.append(c.text)
        out.append(SEP)
        out.append(canonical(c.expected) if c.expected is not None else "")
        out.append("")
    path.write_text("\n".join(out), encoding="utf-8")


def canonical(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=True)


def all_cases() -> list[Case]:
    cases = []
    for path in sorted(CORPUS.glob("*.txt")):
        cases.extend(read_corpus(path))
    return cases


_TOOLSETS: dict[str, Any] | None = None


def toolsets() -> dict[str, Any]:
    global _TOOLSETS
    if _TOOLSETS is None:
        _TOOLSETS = json.loads((CORPUS / "_tools.json").read_text(encoding="utf-8"))
    return _TOOLSETS


def options(case: Case) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    if "tools" in case.attrs:
        opts["tools"] = td.Toolset.coerce(toolsets()[case.attrs["tools"]])
    if "families" in case.attrs:
        opts["families"] = [f.strip() for f in case.attrs["families"].split(",")]
    if "policy" in case.attrs:
        fields: dict[str, Any] = {}
        for item in case.attrs["policy"].split(","):
            k, _, v = item.strip().partition("=")
            low = v.lower()
            fields[k] = (low == "true") if low in ("true", "false") else int(v) if v.isascii() and v.isdigit() else v
        opts["policy"] = td.Policy(**fields)
    return opts


def summary(result: td.ParseResult) -> dict[str, Any]:
    """What a golden vector records of a result."""
    return {
        "text": result.text,
        "reasoning": result.reasoning,
        "calls": [
            {"name": c.name, "arguments": c.arguments, "id": c.id, "family": c.family} for c in result.calls
        ],
        "diagnostics": [d.kind for d in result.diagnostics],
    }


# -- streaming -----------------------------------------------------------------------------


def run_stream(text: str, cuts: Iterable[int], **opts: Any) -> list[td.Event]:
    stream = td.ToolStream(**opts)
    events: list[td.Event] = []
    pos = 0
    for cut in cuts:
        events += stream.feed(text[pos:cut])
        pos = cut
    events += stream.feed(text[pos:])
    events += stream.close()
    return events


def cuts_for(text: str, mode: str, seed: int = 0) -> list[int]:
    n = len(text)
    if mode == "whole":
        return []
    if mode == "chars":
        return list(range(1, n))
    rng = random.Random(f"{seed}:{n}:{text[:32]}")
    if n < 2:
        return []
    k = rng.randint(1, max(1, n // 2))
    return sorted(rng.sample(range(1, n), min(k, n - 1)))


def check_invariants(text: str, events: list[td.Event], batch: td.ParseResult) -> None:
    """The stream invariants of DESIGN §4, for one way of cutting ``text``."""
    streamed = collect(events)
    assert streamed.text == batch.text, "concatenated TextDeltas differ from parse().text"
    assert streamed.reasoning == batch.reasoning, "concatenated ReasoningDeltas differ from parse().reasoning"
    assert [c.model_dump() for c in streamed.calls] == [c.model_dump() for c in batch.calls], "calls differ"
    assert [d.kind for d in streamed.diagnostics] == [d.kind for d in batch.diagnostics], "diagnostic kinds differ"
    fragments: dict[int, list[str]] = {}
    started: set[int] = set()
    ended: set[int] = set()
    announced: dict[int, td.CallStart] = {}
    for ev in events:
        if isinstance(ev, td.CallStart):
            assert ev.index not in started, f"call {ev.index} started twice"
            started.add(ev.index)
            announced[ev.index] = ev
        elif isinstance(ev, td.ArgumentsDelta):
            assert ev.index in started and ev.index not in ended
            fragments.setdefault(ev.index, []).append(ev.fragment)
        elif isinstance(ev, td.CallEnd):
            assert ev.index in started and ev.index not in ended, f"call {ev.index} ended twice or never started"
            ended.add(ev.index)
            start = announced[ev.index]
            assert start.name == ev.call.name, f"call {ev.index} announced as {start.name!r}, ended as {ev.call.name!r}"
            assert start.id is None or start.id == ev.call.id, f"call {ev.index} announced with id {start.id!r}"
            assert "".join(fragments.get(ev.index, [])) == ev.call.arguments_json
            assert json.loads(ev.call.arguments_json) == ev.call.arguments
        elif isinstance(ev, td.CallAbort):
            assert ev.index in started and ev.index not in ended, f"abort of call {ev.index} that is not open"
            ended.add(ev.index)
    assert started == ended, f"calls started but never ended or aborted: {sorted(started - ended)}"
    # nothing the model wrote silently disappears: with no call and no diagnostic, only
    # markers (reasoning wrappers, furniture, closers) may have been removed
    if not batch.calls and not batch.diagnostics:
        removed = len(text) - len(batch.text) - len(batch.reasoning)
        assert removed <= marker_chars(text), "text removed with no call or diagnostic to account for it"
    # no text is released that a later call block took back: every call's own text is absent
    # from the released text at its position (spans are in input offsets)
    for call in batch.calls:
        start, end = call.span
        assert 0 <= start < end <= len(text)


_MARKER_RXS: list[re.Pattern[str]] | None = None


def marker_chars(text: str) -> int:
    """How many characters of ``text`` the catalogue's markers and the grammars' closers
    match (overlaps counted twice: an upper bound of what may be removed as furniture)."""
    global _MARKER_RXS
    if _MARKER_RXS is None:
        from tooldialect.catalog import catalog_for

        cat = catalog_for(None)
        terms = [m.terminal for m in cat.markers] + [t for g in cat.grammars for t in g.closers]
        terms += list(cat.reply_furniture)
        _MARKER_RXS = list({t.pattern.regex.pattern: t.pattern.regex for t in terms if t.pattern is not None}.values())
    return sum(m.end() - m.start() for rx in _MARKER_RXS for m in rx.finditer(text))


# -- counting work -----------------------------------------------------------------------------


def count_calls(fn) -> int:
    """How many Python and C function calls ``fn()`` makes: a deterministic measure of work
    (tests compare it between input sizes; they never time anything)."""
    import sys

    n = 0

    def counter(frame, event, arg):
        nonlocal n
        if event in ("call", "c_call"):
            n += 1

    sys.setprofile(counter)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return n
