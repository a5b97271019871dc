"""Golden vectors: the corpus file format, and running a case the four ways (DESIGN §11).

A corpus file (``tests/corpus/<family>.txt`` for the built-in families, any file for a
plugin's) holds cases readable in review: a title and optional attributes between two
``=`` rules, the raw model text exactly as written, a ``-`` rule, and the expected result
as canonical JSON::

    ================================================================================
    title of the case
    :tools weather
    :error
    ================================================================================
    the raw model text
    --------------------------------------------------------------------------------
    {"calls": [...], "diagnostics": [...], "reasoning": "...", "text": "..."}

``:tools NAME`` names a toolset in ``_tools.json`` beside the corpus file; ``:policy``
and ``:families`` set options; ``:error`` marks a case that expects diagnostics (only
those may).  Every case runs four ways: batch; streamed whole; one character at a time;
seeded random cuts.  Streaming must equal batch.  ``tooldialect grammar check`` and the
project's own tests both use this module, so there is one reading of the format.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .catalog import catalog_for
from .errors import CorpusError
from .families import generation
from .models import ArgumentsDelta, CallAbort, CallEnd, CallStart, Event, ParseResult, Policy
from .stream import ToolStream, collect, parse
from .toolset import Toolset

__all__ = [
    "MODES",
    "RULE",
    "SEP",
    "Case",
    "CorpusError",
    "canonical",
    "case_problem",
    "cuts_for",
    "options",
    "read_corpus",
    "run_stream",
    "set_expectations",
    "stream_problem",
    "summary",
    "toolsets_in",
    "write_corpus",
]

RULE = "=" * 80
SEP = "-" * 80
#: The four ways a case runs.
MODES = ("batch", "whole", "chars", "random")
#: The file of named toolsets, beside the corpus files.
TOOLS_FILE = "_tools.json"


@dataclass
class Case:
    family: str
    title: str
    attrs: dict[str, str]
    text: str
    expected: dict[str, Any] | None
    line: int = 0
    flags: set[str] = field(default_factory=set)
    path: Path | None = None

    @property
    def id(self) -> str:
        return f"{self.family}:{self.title}"


_HEADER = re.compile(r"^={80}\n(.*?)\n={80}\n", re.S | re.M)


def read_corpus(path: Path) -> list[Case]:
    """Parse a corpus file: title and attributes between two ``=`` rules, the raw model
    text, a ``-`` rule, then the expected result as JSON (empty: not written yet)."""
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
                raise CorpusError(f"{path.name}: bad attribute line {line!r} in {title!r}")
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
                raise CorpusError(f"{path.name}: case {title!r} has no {SEP[:8]}… separator")
        else:
            text, rest = body[:sep], body[sep + len(SEP) + 2 :]
        rest = rest.strip()
        try:
            expected = json.loads(rest) if rest else None
        except ValueError as exc:
            raise CorpusError(f"{path.name}: case {title!r}: the expected result is not JSON: {exc}") from None
        line_no = data.count("\n", 0, m.start()) + 1
        cases.append(Case(path.stem, title, attrs, text, expected, line_no, flags, path))
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


def set_expectations(path: Path, expected: dict[int, dict[str, Any]]) -> None:
    """Write the expected results of some cases of a corpus file in place: ``expected`` maps
    a case's position (0-based, in file order, as :func:`read_corpus` lists them) to its new
    expected result.  Every other byte of the file stays as it was (other cases, attribute
    order, the layout of expectations not rewritten)."""
    data = path.read_text(encoding="utf-8")
    heads = list(_HEADER.finditer(data))
    out: list[str] = []
    pos = 0
    for i, m in enumerate(heads):
        if i not in expected:
            continue
        body_end = heads[i + 1].start() if i + 1 < len(heads) else len(data)
        sep = data.find("\n" + SEP + "\n", m.end() - 1, body_end)
        if sep < 0:
            raise CorpusError(f"{path.name}: case {m.group(1).splitlines()[0].strip()!r} has no {SEP[:8]}… separator")
        start = sep + len(SEP) + 2
        old = data[start:body_end]
        lead = len(old) - len(old.lstrip())
        tail = old[len(old.rstrip()) :] if old.strip() else "\n\n" if i + 1 < len(heads) else "\n"
        out.append(data[pos : start + (lead if old.strip() else 0)])
        out.append(canonical(expected[i]) + tail)
        pos = body_end
    out.append(data[pos:])
    path.write_text("".join(out), encoding="utf-8")


def canonical(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=True)


def options(case: Case, toolsets: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``parse()`` keyword arguments a case's attributes ask for.  ``toolsets`` maps
    names to tool lists (default: ``_tools.json`` beside the case's corpus file)."""
    opts: dict[str, Any] = {}
    if "tools" in case.attrs:
        if toolsets is None:
            toolsets = _toolsets_beside(case)
        name = case.attrs["tools"]
        if name not in toolsets:
            raise CorpusError(f"case {case.title!r}: no toolset {name!r} in {TOOLS_FILE}")
        opts["tools"] = Toolset.coerce(toolsets[name])
    if "families" in case.attrs:
        opts["families"] = [f.strip() for f in case.attrs["families"].split(",")]
    if "policy" in case.attrs:
        fields: dict[str, Any] = {}
        for item in case.attrs["policy"].split(","):
            k, _, v = item.strip().partition("=")
            low = v.lower()
            fields[k] = (low == "true") if low in ("true", "false") else int(v) if v.isascii() and v.isdigit() else v
        opts["policy"] = Policy(**fields)
    return opts


def _toolsets_beside(case: Case) -> dict[str, Any]:
    where = (case.path.parent if case.path is not None else Path.cwd()) / TOOLS_FILE
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        named = f"case {case.title!r} names toolset {case.attrs['tools']!r}"
        raise CorpusError(f"{named}: cannot read {where}: {exc}") from None
    found = toolsets_in(data)
    if found is None:
        raise CorpusError(f"{where}: must be a JSON object mapping toolset names to tool lists")
    return found


def toolsets_in(data: Any) -> dict[str, list[Any]] | None:
    """``data`` as named toolsets (the ``_tools.json`` format: a JSON object whose every
    value is a list of tool objects, keyed by the name a case's ``:tools`` gives), or None
    when it is not one (a tool list, or one tool object)."""
    if not isinstance(data, dict) or not data or not all(isinstance(v, list) for v in data.values()):
        return None
    return data


def summary(result: ParseResult) -> dict[str, Any]:
    """What a golden vector records of a result."""
    return {
        "text": result.text,
        "reasoning": result.reasoning,
        "calls": [{"name": c.name, "arguments": c.arguments, "id": c.id, "family": c.family} for c in result.calls],
        "diagnostics": [d.kind for d in result.diagnostics],
    }


def run_stream(text: str, cuts: Iterable[int], **opts: Any) -> list[Event]:
    """Feed ``text`` to a fresh stream, cut at the given offsets, and close it."""
    stream = ToolStream(**opts)
    events: list[Event] = []
    pos = 0
    for cut in cuts:
        events += stream.feed(text[pos:cut])
        pos = cut
    events += stream.feed(text[pos:])
    events += stream.close()
    return events


def cuts_for(text: str, mode: str, seed: int = 0) -> list[int]:
    """Where a mode cuts ``text``: nowhere (``whole``), everywhere (``chars``), or at
    seeded random offsets (``random``: the same cuts on every run)."""
    n = len(text)
    if mode == "whole":
        return []
    if mode == "chars":
        return list(range(1, n))
    # seeded by the text's first characters as written (a lone surrogate included)
    rng = random.Random(f"{seed}:{n}:{text[:32]!r}")
    if n < 2:
        return []
    k = rng.randint(1, max(1, n // 2))
    return sorted(rng.sample(range(1, n), min(k, n - 1)))


def case_problem(case: Case, mode: str, toolsets: dict[str, Any] | None = None) -> str | None:
    """Run one case one way; the first thing wrong with it, or None."""
    opts = options(case, toolsets)
    batch = parse(case.text, **opts)
    if mode == "batch":
        got = summary(batch)
        if case.expected is None:
            return "no expected result written; it reads as:\n" + canonical(got)
        if got != case.expected:
            return "result differs from the expected one; it reads as:\n" + canonical(got)
        if bool(got["diagnostics"]) != ("error" in case.flags):
            return "mark cases that expect diagnostics with :error (and only those)"
        return None
    return stream_problem(case.text, run_stream(case.text, cuts_for(case.text, mode), **opts), batch)


def stream_problem(text: str, events: list[Event], batch: ParseResult) -> str | None:
    """The first stream invariant of DESIGN §4 that ``events`` break, or None."""
    streamed = collect(events)
    if streamed.text != batch.text:
        return "concatenated TextDeltas differ from parse().text"
    if streamed.reasoning != batch.reasoning:
        return "concatenated ReasoningDeltas differ from parse().reasoning"
    if [c.model_dump() for c in streamed.calls] != [c.model_dump() for c in batch.calls]:
        return "calls differ"
    if [d.kind for d in streamed.diagnostics] != [d.kind for d in batch.diagnostics]:
        return "diagnostic kinds differ"
    fragments: dict[int, list[str]] = {}
    started: set[int] = set()
    ended: set[int] = set()
    announced: dict[int, CallStart] = {}
    for ev in events:
        if isinstance(ev, CallStart):
            if ev.index in started:
                return f"call {ev.index} started twice"
            started.add(ev.index)
            announced[ev.index] = ev
        elif isinstance(ev, ArgumentsDelta):
            if ev.index not in started or ev.index in ended:
                return f"arguments for call {ev.index}, which is not open"
            fragments.setdefault(ev.index, []).append(ev.fragment)
        elif isinstance(ev, CallEnd):
            if ev.index not in started or ev.index in ended:
                return f"call {ev.index} ended twice or never started"
            ended.add(ev.index)
            start = announced[ev.index]
            if start.name != ev.call.name:
                return f"call {ev.index} announced as {start.name!r}, ended as {ev.call.name!r}"
            if start.id is not None and start.id != ev.call.id:
                return f"call {ev.index} announced with id {start.id!r}"
            if "".join(fragments.get(ev.index, [])) != ev.call.arguments_json:
                return f"the arguments fragments of call {ev.index} differ from its arguments_json"
            if json.loads(ev.call.arguments_json) != ev.call.arguments:
                return f"arguments_json of call {ev.index} does not read as its arguments"
        elif isinstance(ev, CallAbort):
            if ev.index not in started or ev.index in ended:
                return f"abort of call {ev.index}, which is not open"
            ended.add(ev.index)
    if started != ended:
        return f"calls started but never ended or aborted: {sorted(started - ended)}"
    # nothing the model wrote silently disappears: with no call and no diagnostic, only
    # markers (reasoning wrappers, furniture, closers) may have been removed
    if not batch.calls and not batch.diagnostics:
        removed = len(text) - len(batch.text) - len(batch.reasoning)
        if removed > marker_chars(text):
            return "text removed with no call or diagnostic to account for it"
    for call in batch.calls:
        start_at, end_at = call.span
        if not 0 <= start_at < end_at <= len(text):
            return f"call span {call.span} is outside the text"
    return None


_marker_rxs: tuple[int, list[re.Pattern[str]]] | None = None


def marker_chars(text: str) -> int:
    """How many characters of ``text`` the catalogue's markers and the grammars' closers
    match (overlaps counted twice: an upper bound of what may be removed as furniture)."""
    global _marker_rxs
    cat = catalog_for(None)
    if _marker_rxs is None or _marker_rxs[0] != generation():
        terms = [m.terminal for m in cat.markers] + [t for g in cat.grammars for t in g.closers]
        terms += list(cat.reply_furniture)
        rxs = {t.pattern.regex.pattern: t.pattern.regex for t in terms if t.pattern is not None}
        _marker_rxs = (generation(), list(rxs.values()))
    return sum(m.end() - m.start() for rx in _marker_rxs[1] for m in rx.finditer(text))
