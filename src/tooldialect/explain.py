"""``td.explain``: why a reply was read the way it was.

The explanation is the parse itself, watched: the same engine, with a
:class:`~tooldialect.engine.observe.Recorder` as its observer, reads the reply once and tells where
each piece of text and reasoning was, which block each call and diagnostic came from, and
how each block was decided (docs/decisions.md #7: among the candidates that found calls,
one that read the block to its end beats one that stopped at text it could not read, then
the one that skipped less, then the best rank).  ``regions`` cut the reply into pieces,
each character in exactly one; ``blocks`` give each block's verdict.  The CLI's
``tooldialect explain`` and its HTML page render this structure (``explain_view``).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict

from .engine import Engine
from .engine.observe import BlockNote, CandidateNote, Recorder
from .errors import PolicyError
from .models import CallEnd, Diagnostic, DiagnosticEvent, ParseResult, Policy, json_data
from .stream import ToolStream, _families, collect
from .toolset import Toolset

__all__ = ["REGION_KINDS", "Candidate", "Explanation", "Region", "StreamStep", "Verdict", "explain"]

#: Every region kind, with what it means (the legend of the terminal view and the page).
REGION_KINDS: dict[str, str] = {
    "text": "visible text: in result.text as written",
    "reasoning": "reasoning: in result.reasoning",
    "example": "a fenced code block or inline code span: visible text, never read for calls",
    "call_name": "a call's name as written",
    "call_arguments": "a call's arguments as written",
    "call": "the rest of a call's own text (call.span)",
    "markup": "a block's markup around its calls (openers, closers, separators): removed",
    "dropped": "text a diagnostic removed (a truncated, malformed or looping block, a call not returned)",
    "furniture": "format furniture removed from the text (reasoning markers, framing, a stray closer)",
}

# diagnostics whose span is text taken out of the reply without a call returned for it
_DROPPING = frozenset(
    {"malformed_block", "truncated", "repetition_loop", "limit_exceeded", "unknown_tool", "tool_choice"}
)
_FROZEN = ConfigDict(frozen=True, extra="forbid")


class Region(BaseModel):
    """A run of the reply's characters that went the same way: ``text[start:end]``."""

    model_config = _FROZEN

    kind: str  # a key of REGION_KINDS
    start: int
    end: int
    call: int | None = None  # the index in result.calls of the call this is part of
    block: int | None = None  # the index in blocks of the block this is part of


class Candidate(BaseModel):
    """One family's reading of a block, and why it won or lost."""

    model_config = _FROZEN

    family: str
    won: bool
    calls: int
    state: str  # how its reading ended: "done" or "failed"
    reason: str  # why it won, or why it lost (docs/decisions.md #7)


class Verdict(BaseModel):
    """A block: where a family's opener was found, and what became of it."""

    model_config = _FROZEN

    start: int
    end: int
    opener: str
    channel: str  # "text" or "reasoning": where the opener was found
    outcome: str  # "calls", "text", "quoted", "truncated", "malformed_block", … (see docs/guide.md)
    family: str | None  # the family whose reading stands; None when no family took the block
    summary: str
    candidates: list[Candidate]
    calls: list[int]  # indices in result.calls
    diagnostics: list[int]  # indices in result.diagnostics


class StreamStep(BaseModel):
    """The events the stream returned for one delta (``delta`` -1: ``close()``)."""

    model_config = _FROZEN

    delta: int
    start: int
    end: int
    events: list[dict[str, Any]]


class Explanation(BaseModel):
    """What :func:`explain` returns: the parse, the reply cut into regions, each block's verdict."""

    model_config = _FROZEN

    source: str
    result: ParseResult
    regions: list[Region]
    blocks: list[Verdict]
    chunk: int | None = None
    stream: list[StreamStep] | None = None

    def to_json(self) -> dict[str, Any]:
        """The explanation as JSON data (a harness's log line)."""
        return json_data(self)


def explain(
    text: str,
    tools: Toolset | Iterable[Any] | None = None,
    *,
    families: Iterable[str] | None = None,
    policy: Policy | None = None,
    model: str | None = None,
    chunk: int | None = None,
) -> Explanation:
    """Read ``text`` as :func:`~tooldialect.parse` does and say why: regions, blocks, verdicts.

    ``model`` picks families and policy with :func:`tooldialect.families.for_model` (an
    explicit ``families`` or ``policy`` wins).  ``chunk`` adds the stream's events as they
    arrive when the reply comes ``chunk`` characters per delta.
    """
    if not isinstance(text, str):
        raise PolicyError(f"explain() takes the model's text as str, got {type(text).__name__}")
    if chunk is not None and (not isinstance(chunk, int) or chunk < 1):
        raise PolicyError("chunk must be a whole number of characters, at least 1")
    if model is not None:
        from .families import for_model

        profile = for_model(model)
        families = profile.families if families is None else families
        policy = profile.policy if policy is None else policy
    stream = ToolStream(tools, families=_families(families), policy=policy)
    engine = stream._engine
    observer = Recorder(text)
    watched = Engine(engine.cat, engine.binder, engine.shared.policy, observer)
    observer.watch(watched)
    events = observer.handed_out(watched.feed(text))
    events += observer.handed_out(watched.close())
    observer.unwatch()
    result = collect(events)
    blocks, call_block, diag_block = _verdicts(text, observer, result)
    regions = _regions(text, observer, result, blocks, call_block, diag_block)
    steps = _stream(text, stream, chunk) if chunk is not None else None
    # built from values this module made: no validation pass over thousands of regions
    return Explanation.model_construct(
        source=text, result=result, regions=regions, blocks=blocks, chunk=chunk, stream=steps
    )


# -- blocks -----------------------------------------------------------------------------------------


def _verdicts(
    text: str, observer: Recorder, result: ParseResult
) -> tuple[list[Verdict], dict[int, int], dict[int, int]]:
    call_index = {id(c): i for i, c in enumerate(result.calls)}
    diag_index = {id(d): i for i, d in enumerate(result.diagnostics)}
    starts = sorted(n.start for n in observer.texts)
    blocks: list[Verdict] = []
    call_block: dict[int, int] = {}
    diag_block: dict[int, int] = {}
    for note in observer.blocks:
        calls = [call_index[id(ev.call)] for ev in note.events if isinstance(ev, CallEnd) and id(ev.call) in call_index]
        diags = [
            diag_index[id(ev.diagnostic)]
            for ev in note.events
            if isinstance(ev, DiagnosticEvent) and id(ev.diagnostic) in diag_index
        ]
        outcome = _outcome(note, [result.diagnostics[i].kind for i in diags], bool(calls))
        stopped = next((result.diagnostics[i] for i in diags if result.diagnostics[i].kind == "malformed_block"), None)
        if outcome == "text" and not diags:
            continue  # an opener no family took, kept as text: nothing to explain
        anchor = note.opener_end if note.accepted_to is None else max(note.opener_end, note.accepted_to)
        for i in calls:
            anchor = max(anchor, result.calls[i].span[1])
        for i in diags:
            span = result.diagnostics[i].span
            if span is not None and span[0] >= note.start:
                anchor = max(anchor, span[1])
        end = anchor
        if outcome not in ("text", "quoted", "unterminated", "in_reasoning"):
            k = bisect.bisect_left(starts, anchor)  # the removed text runs on to where text resumes
            end = starts[k] if k < len(starts) else len(text)
        b = len(blocks)
        for i in calls:
            call_block[i] = b
        for i in diags:
            diag_block[i] = b
        blocks.append(
            Verdict.model_construct(
                start=note.start,
                end=max(end, note.opener_end),
                opener=note.opener,
                channel=note.channel,
                outcome=outcome,
                family=note.winner if outcome != "text" else None,
                summary=_summary(note, outcome, len(calls), stopped),
                candidates=_candidates(note, outcome, stopped),
                calls=calls,
                diagnostics=diags,
            )
        )
    return blocks, call_block, diag_block


def _outcome(note: BlockNote, kinds: list[str], calls: bool) -> str:
    if calls:
        return "calls"
    for kind in ("repetition_loop", "truncated", "malformed_block", "limit_exceeded", "unknown_tool", "tool_choice"):
        if kind in kinds:
            return kind
    if note.quoted:
        return "quoted"
    if "unterminated_block" in kinds:
        return "unterminated"
    if "call_in_reasoning" in kinds:
        return "in_reasoning"
    if note.winner is None or not note.decided:
        return "text"
    return "no_call"


_OUTCOMES = {
    "calls": "{family} read {n} call{s}",
    "text": "no family read a call here: the opener is kept as text",
    "quoted": "prose quoting the format ({family}'s syntax with no argument, mid-line): kept as text",
    "truncated": "{family}'s payload is cut off by the end of the text: removed, not returned (truncated)",
    "malformed_block": "{family}'s block holds no valid call{at}: removed up to its closer (malformed_block)",
    "repetition_loop": "the opener repeats without its closer: the loop is removed (repetition_loop)",
    "limit_exceeded": "a Policy limit was reached (limit_exceeded)",
    "unknown_tool": "{family} read a call to a tool the toolset lacks, not returned (unknown_tool)",
    "tool_choice": "{family} read a call tool_choice does not allow, not returned (tool_choice)",
    "unterminated": "an opener with no valid body and no closer: kept as text (unterminated_block)",
    "in_reasoning": "{family} read a call inside reasoning: reported, not dispatched (call_in_reasoning)",
    "no_call": "{family} read the block but it holds no call",
}


def _summary(note: BlockNote, outcome: str, n: int, stopped: Diagnostic | None) -> str:
    family = note.winner or (note.candidates[0].family if note.candidates else "?")
    at = f" (its grammar stopped at offset {stopped.detail['at']})" if stopped is not None else ""
    return _OUTCOMES[outcome].format(family=family, n=n, s="" if n == 1 else "s", at=at)


def _candidates(note: BlockNote, outcome: str, stopped: Diagnostic | None) -> list[Candidate]:
    won = next((c for c in note.candidates if c.family == note.winner), None) if outcome != "text" else None
    return [
        Candidate.model_construct(
            family=c.family, won=c is won, calls=c.calls, state=c.state, reason=_why(c, won, note, stopped)
        )
        for c in note.candidates
    ]


def _why(c: CandidateNote, won: CandidateNote | None, note: BlockNote, stopped: Diagnostic | None = None) -> str:
    """Why ``c`` won or lost, in the arbitration order of docs/decisions.md #7 (``stopped``:
    the block's ``malformed_block``, which the winner's line agrees with)."""
    if c.failure is not None:
        pos = c.at if c.failure == "syntax" and c.at is not None else c.fail_pos  # where the grammar stopped
        where = f" at offset {pos}" if pos is not None and pos >= 0 else ""
        read = f"could not read the block ({c.failure}{where})"
        reason = f"{read}: {c.reason}" if c.reason else read
    elif c.calls == 0 and c is won and stopped is not None:
        reason = f"read the block, but it holds no valid call: {stopped.detail['reason']}"
        reason += f" (at offset {stopped.detail['at']})"
    elif c.calls == 0:
        reason = "read the block but found no call in it"
    else:
        reason = f"read {c.calls} call{'' if c.calls == 1 else 's'}"
    if won is None:
        if c.tentative and c.calls == 0:
            return reason + "; a tentative opener (generic word or registry-gated body) needs a call to count"
        return reason
    if c is won:
        return ("won: " if note.winner is not None and c.calls else "took the block: ") + reason
    if c.calls and won.calls and c.failure is None:
        if c.trail and not won.trail:
            return reason + f" but stopped at text it could not read; lost: {won.family} read the block to its end"
        if c.junk > won.junk:
            return reason + f"; lost: it skipped more ({c.junk} issues or stray pieces, {won.family} {won.junk})"
        if c.rank > won.rank:
            return reason + f"; lost: {won.family} ranks before it ({won.rank} < {c.rank})"
    if c.tentative and c.calls == 0 and c.failure is not None:
        return reason + "; a tentative reading counts only when it finds a call"
    return reason


# -- regions ------------------------------------------------------------------------------------------


def _regions(
    text: str,
    observer: Recorder,
    result: ParseResult,
    blocks: list[Verdict],
    call_block: dict[int, int],
    diag_block: dict[int, int],
) -> list[Region]:
    """Each character of ``text`` in exactly one region, painted in order of precedence:
    furniture, a block's markup, text a diagnostic removed, calls, text and reasoning."""
    n = len(text)
    labels: list[tuple[str, int | None, int | None]] = [("furniture", None, None)]
    index: dict[tuple[str, int | None, int | None], int] = {labels[0]: 0}
    codes: list[int] = [0] * n

    def code(kind: str, call: int | None, block: int | None) -> int:
        key = (kind, call, block)
        got = index.get(key)
        if got is None:
            got = index[key] = len(labels)
            labels.append(key)
        return got

    def fill(start: int, end: int, c: int) -> None:
        start, end = max(0, start), min(n, end)
        if end > start:
            codes[start:end] = [c] * (end - start)

    for b, v in enumerate(blocks):
        if v.outcome not in ("text", "quoted", "unterminated", "in_reasoning"):
            fill(v.start, v.end, code("markup", None, b))
    for i, d in enumerate(result.diagnostics):
        if d.kind in _DROPPING and d.span is not None:
            fill(d.span[0], d.span[1], code("dropped", None, diag_block.get(i)))
    for i, call in enumerate(result.calls):
        owner = call_block.get(i)
        a, z = call.span
        fill(a, z, code("call", i, owner))
        name = _find(text, a, z, call.name)
        if name is not None:
            fill(name[0], name[1], code("call_name", i, owner))
        args = _arguments(text, a, z, call.arguments_json, name[1] if name is not None else a)
        if args is not None:
            fill(args[0], args[1], code("call_arguments", i, owner))
    for note in observer.texts:
        kind = "reasoning" if note.reasoning else ("example" if note.example else "text")
        fill(note.start, note.end, code(kind, None, None))
    regions = []
    pos = 0
    for c, run in itertools.groupby(codes):
        length = sum(1 for _ in run)
        kind, call_no, block_no = labels[c]
        regions.append(Region.model_construct(kind=kind, start=pos, end=pos + length, call=call_no, block=block_no))
        pos += length
    return regions


def _find(text: str, start: int, end: int, name: str) -> tuple[int, int] | None:
    at = text.find(name, start, end) if name else -1
    return (at, at + len(name)) if at >= 0 else None


def _arguments(text: str, start: int, end: int, arguments_json: str, after: int) -> tuple[int, int] | None:
    """Where a call's arguments were written: the model's own JSON when it is there as
    written, else from the first ``{`` after the name to the call's last ``}``."""
    at = text.find(arguments_json, after, end) if arguments_json else -1
    if at >= 0:
        return at, at + len(arguments_json)
    if text.startswith("{", start):
        end -= 1  # a call object: its own closing brace is not the arguments'
    lo = text.find("{", after, end)
    hi = text.rfind("}", after, end)
    if lo >= 0 and hi > lo:
        return lo, hi + 1
    return None


# -- the stream ---------------------------------------------------------------------------------------


def _stream(text: str, like: ToolStream, chunk: int) -> list[StreamStep]:
    stream = ToolStream(like.tools, families=like.families, policy=like.policy)
    steps = []
    for k, i in enumerate(range(0, len(text), chunk)):
        events = stream.feed(text[i : i + chunk])
        steps.append(
            StreamStep.model_construct(
                delta=k, start=i, end=min(len(text), i + chunk), events=[e.to_json() for e in events]
            )
        )
    events = stream.close()
    steps.append(
        StreamStep.model_construct(delta=-1, start=len(text), end=len(text), events=[e.to_json() for e in events])
    )
    return steps
