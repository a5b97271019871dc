"""Families and policy from a model's own chat template (DESIGN §3: a model's template is
configuration).

The template is rendered in jinja2's sandbox (``tooldialect.jinja``) three ways: the user's
turn alone, the same with the generation prompt, and the same followed by an assistant turn
for each probe (``_probes``).  What the assistant turn adds after the generation prompt,
up to the end-of-turn token a server stops at, is what the model writes; each is read with
the families, and the smallest set that reads every probe back exactly is kept.  The
generation prompt says whether the model starts inside a reasoning block.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ToolDialectError
from ..jinja import Renderer, RenderError
from ..models import ParseResult, Policy
from ..stream import parse
from ..toolset import Toolset
from . import ModelProfile, for_model, get, names, piece
from ._probes import PROBE_TOOLS, PROBES, USER, Probe, judge, message, rendered_calls
from ._report import FamilyProgress, ProbeReport, TemplateReport

__all__ = ["from_template"]

#: The ways a template may want a call given, tried in this order until one reads whole:
#: arguments as a mapping or as JSON text, ids of nine characters or functions.NAME:INDEX.
_FORMS = (("object", "plain"), ("string", "plain"), ("object", "functions"), ("string", "functions"))
#: A plain answer, rendered to learn what the template writes after an assistant's turn.
_ANSWER = "The forecast for Paris is sunny."
#: What a model thinks before it answers, when the generation prompt leaves reasoning open
#: and the template's history drops it.
_THOUGHT = "The user wants the weather."


@dataclass(frozen=True)
class _Prompt:
    """The conversation before the reply: without and with the generation prompt."""

    base: str
    gen: str

    @property
    def tail(self) -> str:
        return self.gen[_common(self.base, self.gen) :]


@dataclass(frozen=True)
class _Opened:
    """A reasoning block the generation prompt leaves open."""

    key: str  # the pair's name in _reasoning.lark (REASONING_OPEN_<key>)
    start: int  # where its opener begins in the generation prompt
    closer: re.Pattern[str]
    closing: str | None  # the closer's text, when it is one string


@dataclass
class _Turn:
    probe: Probe
    text: str = ""
    problem: str | None = None  # why it is not rendered

    @property
    def rendered(self) -> bool:
        return self.problem is None


@dataclass
class _Selection:
    families: tuple[str, ...]
    read: dict[int, str | None]  # probe index -> None (read) or why not
    policy: Policy
    progress: list[FamilyProgress] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(1 for why in self.read.values() if why is None)

    @property
    def complete(self) -> bool:
        return all(why is None for why in self.read.values())


def _common(a: str, b: str) -> int:
    """The length of the longest common prefix of ``a`` and ``b``."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class _Session:
    """Renders one template with the variables a server gives it."""

    def __init__(self, renderer: Renderer, tools: list[dict[str, Any]], variables: Mapping[str, Any]) -> None:
        self.renderer = renderer
        self.variables = {"bos_token": "", "eos_token": "", **variables, "tools": tools}

    def render(self, messages: list[dict[str, Any]], generation: bool) -> str:
        return self.renderer.render(**self.variables, messages=messages, add_generation_prompt=generation)

    def prompt(self) -> _Prompt:
        user = [{"role": "user", "content": USER}]
        return _Prompt(self.render(user, False), self.render(user, True))

    def turn(self, prompt: _Prompt, assistant: dict[str, Any], opened: _Opened | None) -> str:
        """What the model writes for ``assistant``: the rendering after the generation prompt."""
        full = self.render([{"role": "user", "content": USER}, assistant], False)
        k = _common(prompt.gen, full)
        if k < len(prompt.gen) and opened is not None and opened.start < k:
            k = opened.start  # the history leaves out the reasoning the prompt opened
        return full[k:]


def _opened(prompt: _Prompt) -> _Opened | None:
    """The reasoning block the generation prompt leaves open, if any: the last opener in it
    that no closer follows (``start`` counted in the whole prompt)."""
    tail = prompt.tail
    offset = len(prompt.gen) - len(tail)
    terminals = piece("_reasoning")
    best: _Opened | None = None
    for name, term in terminals.items():
        if not name.startswith("REASONING_OPEN_") or term.pattern is None:
            continue
        key = name[len("REASONING_OPEN_") :]
        close = terminals["REASONING_CLOSE_" + key].pattern
        assert close is not None
        opens = list(re.finditer(term.pattern.source, tail))
        if not opens:
            continue
        closer = re.compile(close.source)
        last = opens[-1]
        if any(c.start() >= last.end() for c in closer.finditer(tail)):
            continue
        if best is None or offset + last.start() > best.start:
            best = _Opened(key, offset + last.start(), closer, close.literal)
    return best


def _reasoning_keys(texts: Iterable[str], opened: _Opened | None) -> list[str]:
    """The reasoning wrappers in play (lowercase pair names): the one the prompt opened and
    those whose opener the turns write."""
    joined = "\n".join(texts)
    found = {opened.key.lower()} if opened is not None else set()
    for name, term in piece("_reasoning").items():
        if name.startswith("REASONING_OPEN_") and term.pattern is not None and re.search(term.pattern.source, joined):
            found.add(name[len("REASONING_OPEN_") :].lower())
    return sorted(found)


def _model_turn(text: str, stop: str, opened: _Opened | None) -> str:
    """The rendered turn as the model writes it: the end-of-turn token a server stops at
    taken off the end, and, when the prompt opened reasoning the turn never closes, a thought
    and its closer in front."""
    if stop:
        trimmed = text.rstrip()
        if trimmed.endswith(stop):
            text = trimmed[: -len(stop)]
    if opened is not None and opened.closing and not opened.closer.search(text):
        text = _THOUGHT + opened.closing + text
    return text


def _end_of_turn(session: _Session, prompt: _Prompt, opened: _Opened | None) -> str:
    """What the template writes after a plain answer (stripped): the end-of-turn token."""
    try:
        turn = session.turn(prompt, {"role": "assistant", "content": _ANSWER}, opened)
    except RenderError:
        return ""
    at = turn.rfind(_ANSWER)
    return turn[at + len(_ANSWER) :].strip() if at >= 0 else ""


def _render_probe(
    session: _Session, prompt: _Prompt, probe: Probe, form: tuple[str, str], opened: _Opened | None
) -> str:
    """A probe's turn, its content None when it has no prose (what clients send), or an empty
    string where the template cannot take None."""
    arguments, ids = form
    try:
        return session.turn(prompt, message(probe, arguments=arguments, ids=ids), opened)
    except RenderError as exc:
        if exc.bound or probe.content:
            raise
    return session.turn(prompt, message(probe, arguments=arguments, ids=ids, empty=""), opened)


def _turns(session: _Session, prompt: _Prompt, form: tuple[str, str], stop: str, opened: _Opened | None) -> list[_Turn]:
    """Each probe rendered in one form: its model turn, or why the template gave none."""
    out = []
    for probe in PROBES:
        try:
            raw = _render_probe(session, prompt, probe, form, opened)
        except RenderError as exc:
            if exc.bound:
                raise  # every later render would stop there too
            out.append(_Turn(probe, problem=f"the template raised: {exc}"))
            continue
        text = _model_turn(raw, stop, opened)
        if not rendered_calls(probe, text):
            out.append(_Turn(probe, text, problem="the template wrote none of its calls"))
        else:
            out.append(_Turn(probe, text))
    return out


class _Reader:
    """Reads the rendered turns with sets of families (each reading done once)."""

    def __init__(self, turns: list[_Turn], tools: Toolset, policy: Policy) -> None:
        self.turns = [(i, t) for i, t in enumerate(turns) if t.rendered]
        self.tools = tools
        self.policy = policy
        self._seen: dict[tuple[int, tuple[str, ...] | None], ParseResult] = {}

    def result(self, index: int, families: tuple[str, ...] | None) -> ParseResult:
        key = (index, families)
        got = self._seen.get(key)
        if got is None:
            turn = dict(self.turns)[index]
            got = parse(turn.text, self.tools, families=families, policy=self.policy)
            self._seen[key] = got
        return got

    def verdicts(self, families: tuple[str, ...] | None) -> dict[int, str | None]:
        return {i: judge(t.probe, t.text, self.result(i, families)) for i, t in self.turns}

    def readers(self) -> tuple[str, ...]:
        """The families that read a call in some turn with every family on, in rank order."""
        seen = {c.family for i, _ in self.turns for c in self.result(i, None).calls}
        return tuple(n for n in names() if n in seen)

    def select(self) -> _Selection:
        """The smallest set of families that reads the most probes exactly."""
        everyone = self.verdicts(None)
        candidates = self.readers()
        best = self._smallest(candidates) if all(why is None for why in everyone.values()) and candidates else None
        if best is not None:
            return best
        progress = self.progress(candidates)
        chosen = self._cover(candidates)
        read = self.verdicts(chosen) if chosen else everyone
        union = self.verdicts(candidates) if candidates else everyone
        if _count(union) > _count(read):
            chosen, read = candidates, union
        if not chosen or not _count(read):
            return _Selection((), everyone, self.policy, progress)
        return _Selection(chosen, read, self.policy, progress)

    def _smallest(self, used: tuple[str, ...]) -> _Selection | None:
        """``used`` less every family the others read without (tried from the last rank)."""
        if not all(why is None for why in self.verdicts(used).values()):
            return None
        for name in reversed(used):
            fewer = tuple(n for n in used if n != name)
            if fewer and all(why is None for why in self.verdicts(fewer).values()):
                used = fewer
        for name in used:
            if "*" in get(name).header.models:  # a family for any model: one for this one instead?
                used = self._specific(used, name)
        return _Selection(used, self.verdicts(used), self.policy)

    def _specific(self, used: tuple[str, ...], generic: str) -> tuple[str, ...]:
        """``used`` with ``generic`` (a family for any model, such as bare JSON) replaced by
        the first family written for particular models that reads every probe in its place."""
        rest = [n for n in used if n != generic]
        for name in names():
            if name in used or "*" in get(name).header.models:
                continue
            swapped = tuple(n for n in names() if n in rest or n == name)
            if all(why is None for why in self.verdicts(swapped).values()):
                return swapped
        return used

    def _cover(self, candidates: tuple[str, ...]) -> tuple[str, ...]:
        """Families added one at a time, each reading most of the probes still unread."""
        alone = {f: {i for i, why in self.verdicts((f,)).items() if why is None} for f in candidates}
        chosen: list[str] = []
        covered: set[int] = set()
        while True:
            gains = [(len(alone[f] - covered), -rank, f) for rank, f in enumerate(candidates) if f not in chosen]
            gain, _, name = max(gains, default=(0, 0, ""))
            if not gain:
                break
            chosen.append(name)
            covered |= alone[name]
        return tuple(n for n in names() if n in chosen)

    def progress(self, candidates: tuple[str, ...]) -> list[FamilyProgress]:
        """How far each family that read a call got on its own, best first."""
        out = []
        for name in candidates:
            verdicts = self.verdicts((name,))
            probes = dict(self.turns)
            failures = [f"{probes[i].probe.name}: {why}" for i, why in verdicts.items() if why is not None]
            read = len(verdicts) - len(failures)
            out.append(
                FamilyProgress(family=name, read=read, of=len(verdicts), first_failure=next(iter(failures), None))
            )
        return sorted(out, key=lambda p: -p.read)


def _count(read: Mapping[int, str | None]) -> int:
    return sum(1 for why in read.values() if why is None)


def _variants(families: Iterable[str], turns: list[_Turn], tools: Toolset) -> dict[str, str]:
    """For each family that writes several spellings, the one whose rendering of a probe is
    closest to the template's (white space aside)."""
    out: dict[str, str] = {}
    sample = next((t for t in turns if t.rendered and len(t.probe.calls) == 1 and not t.probe.content), None)
    if sample is None:
        return out
    calls = [{"name": n, "arguments": a, "id": "call00000"} for n, a in sample.probe.calls]
    target = "".join(sample.text.split())[:4000]
    for name in families:
        fam = get(name)
        scores = []
        for variant in fam.variants:
            try:
                written = fam.render_calls(calls, tools, variant=variant)
            except ToolDialectError:
                continue
            flat = "".join(written.split())[:4000]
            scores.append((difflib.SequenceMatcher(None, flat, target, autojunk=False).ratio(), variant))
        if scores:
            out[name] = max(scores, key=lambda s: s[0])[1]
    return out


def _policy_for(model_id: str | None) -> dict[str, Any]:
    """The policy fields the model id's grammar headers set (none without an id)."""
    if not model_id:
        return {}
    policy = for_model(model_id).policy
    return {k: getattr(policy, k) for k in policy.model_fields_set}


def _fallback(model_id: str | None, policy: Policy, report: TemplateReport) -> ModelProfile:
    """The profile when the template says nothing usable: ``for_model`` on the id, else every family."""
    if model_id:
        hint = for_model(model_id)
        if hint.matched:
            report = report.model_copy(update={"fallback": "model id"})
            return ModelProfile(model=model_id, matched=False, families=hint.families, policy=policy, template=report)
    report = report.model_copy(update={"fallback": "every family"})
    return ModelProfile(model=model_id or "", matched=False, families=names(), policy=policy, template=report)


def _probe_reports(turns: list[_Turn], read: Mapping[int, str | None]) -> list[ProbeReport]:
    out = []
    for i, t in enumerate(turns):
        why = t.problem if not t.rendered else read.get(i)
        out.append(
            ProbeReport(
                name=t.probe.name, rendered=t.rendered, read=t.rendered and why is None, turn=t.text[:4000], problem=why
            )
        )
    return out


def from_template(
    source: str,
    *,
    tools: Any = None,
    model_id: str | None = None,
    variables: Mapping[str, Any] | None = None,
) -> ModelProfile:
    """The families and policy a chat template's own tool-call syntax calls for
    (``td.families.from_template``; docs/families.md, "Reading a chat template")."""
    if variables is not None and not isinstance(variables, Mapping):
        from ..errors import PolicyError

        raise PolicyError(f"variables is a mapping of template variables, got {type(variables).__name__}")
    offered = _offered(tools)
    toolset = Toolset.coerce(PROBE_TOOLS + offered)
    settings = _policy_for(model_id)
    renderer: Renderer | None = None
    try:
        renderer = Renderer(source)
        session = _Session(renderer, PROBE_TOOLS + offered, variables or {})
        prompt = session.prompt()
    except RenderError as exc:
        report = TemplateReport(verdict="error", detail=f"the template cannot render a user's turn: {exc}")
        return _fallback(model_id, Policy(**settings), report)
    opened = _opened(prompt)
    policy = Policy(**{**settings, "start_in_reasoning": opened is not None})
    head: dict[str, Any] = {"generation_prompt": prompt.tail[:2000]}
    try:
        found = _read_forms(session, prompt, opened, toolset, policy)
    except RenderError as exc:
        report = TemplateReport(verdict="error", detail=str(exc), sandbox=_sandbox(renderer), **head)
        return _fallback(model_id, policy, report)
    return _profile(found, model_id, toolset, opened, head, _sandbox(renderer))


def _sandbox(renderer: Renderer) -> Any:
    return "mutable" if renderer.mutable else "immutable"


def _offered(tools: Any) -> list[dict[str, Any]]:
    """The caller's tools in OpenAI's shape, less any named like a probe's tool."""
    if tools is None:
        return []
    taken = {t["function"]["name"] for t in PROBE_TOOLS}
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in Toolset.coerce(tools)
        if t.name not in taken
    ]


@dataclass
class _Found:
    """The best reading of the probes: in which form, the turns, the selection (None when
    no form rendered a call)."""

    form: tuple[str, str]
    turns: list[_Turn]
    selection: _Selection | None


def _read_forms(session: _Session, prompt: _Prompt, opened: _Opened | None, toolset: Toolset, policy: Policy) -> _Found:
    """Each form in turn until one reads every probe; the best reading of them."""
    stop = _end_of_turn(session, prompt, opened)
    best: _Found | None = None
    for form in _FORMS:
        turns = _turns(session, prompt, form, stop, opened)
        if not any(t.rendered for t in turns):
            best = best or _Found(form, turns, None)
            continue
        selection = _Reader(turns, toolset, policy).select()
        if not selection.complete and _in_reasoning(turns, toolset, policy):
            accepting = policy.model_copy(update={"calls_in_reasoning": "accept"})
            other = _Reader(turns, toolset, accepting).select()
            if other.count > selection.count:
                selection = other
        if best is None or best.selection is None or selection.count > best.selection.count:
            best = _Found(form, turns, selection)
        if selection.complete:
            break
    assert best is not None
    return best


def _in_reasoning(turns: list[_Turn], toolset: Toolset, policy: Policy) -> bool:
    """Whether some turn holds calls the reading found inside reasoning."""
    return any(
        d.kind == "call_in_reasoning"
        for t in turns
        if t.rendered
        for d in parse(t.text, toolset, policy=policy).diagnostics
    )


def _profile(
    found: _Found, model_id: str | None, toolset: Toolset, opened: _Opened | None, head: dict[str, Any], sandbox: Any
) -> ModelProfile:
    turns, selection = found.turns, found.selection
    texts = [t.text for t in turns]
    common = {**head, "sandbox": sandbox, "reasoning": _reasoning_keys(texts, opened)}
    policy = Policy(**{**_policy_for(model_id), "start_in_reasoning": opened is not None})
    if selection is None:
        raised = [t.problem for t in turns if t.problem and t.problem.startswith("the template raised")]
        verdict: Any = "error" if len(raised) == len(turns) else "no_calls"
        detail = (
            raised[0] if verdict == "error" else "the template renders no tool call: it drops the calls it is given"
        )
        report = TemplateReport(verdict=verdict, detail=detail, probes=_probe_reports(turns, {}), **common)
        return _fallback(model_id, policy, report)
    arguments, ids = found.form
    common.update(arguments=arguments, ids=ids, progress=selection.progress)
    failed = [turns[i].probe.name for i, why in selection.read.items() if why is not None]
    probes = _probe_reports(turns, selection.read)
    if not selection.families:
        first = next(p for p in probes if p.rendered)
        detail = f"no family reads the template's calls; {first.name}: {first.problem}"
        report = TemplateReport(verdict="unread", detail=detail, probes=probes, failed=failed, **common)
        return _fallback(model_id, selection.policy, report)
    names_ = list(selection.families)
    read = f"{selection.count} of {len(selection.read)} probes read by {', '.join(names_)}"
    verdict = "read" if selection.complete else "partial"
    detail = read if selection.complete else f"{read}; not read: {', '.join(failed)}"
    if not selection.complete and model_id and for_model(model_id).matched:
        wider = set(names_) | set(for_model(model_id).families)
        names_ = [n for n in names() if n in wider]
    report = TemplateReport(verdict=verdict, detail=detail, probes=probes, failed=failed, **common)
    return ModelProfile(
        model=model_id or "",
        matched=True,
        families=names_,
        policy=selection.policy,
        variants=_variants(selection.families, turns, toolset),
        template=report,
    )
