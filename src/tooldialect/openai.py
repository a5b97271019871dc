"""OpenAI chat-completion shapes: stream chunk deltas and the non-streaming message.

    chat = td.openai.ChatStream(tools=tools, families=["hermes"])
    for text in model_deltas:
        for delta in chat.feed(text):       # a dict for choices[0].delta
            send(td.openai.chunk(delta, id=..., model=..., created=...))
    for delta in chat.close():
        send(td.openai.chunk(delta, ...))
    send(td.openai.chunk({}, finish_reason=chat.finish_reason, ...))

    td.openai.message(td.parse(text, tools=tools))   # the same message, non-streaming

Ids belong to this adapter, never to ``parse()``: the model's id is kept (Kimi, Mistral),
anything else gets an id minted once per response (:class:`Ids`).  An OpenAI client
concatenates every string it receives for a tool call, so a call's id and name go out
exactly once, in its first chunk; a call whose id may still be written by the model
holds that first chunk until the id is known.  A started call that will not complete
keeps its slot and is marked ``"aborted"``; its arguments never parse (the closing
brace goes out only with the call's end).  docs/openai.md has the whole contract.
"""

from __future__ import annotations

import random
import re
import secrets
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from . import families as _families
from .errors import PolicyError, StreamClosedError, UnknownFamilyError
from .models import (
    ArgumentsDelta,
    CallAbort,
    CallEnd,
    CallStart,
    DiagnosticEvent,
    Event,
    ParseResult,
    Policy,
    ReasoningDelta,
    TextDelta,
    ToolCall,
)
from .stream import ToolStream, Translator
from .toolset import Toolset

__all__ = ["ChatStream", "Ids", "chunk", "completion", "finish_reason", "message"]

_ALNUM = string.ascii_letters + string.digits
_MINT_TRIES = 16
#: the names servers give the reasoning field of a message and a delta
REASONING_FIELDS = ("reasoning_content", "reasoning")
#: what a response's white-space-only content becomes next to calls
BLANK_CONTENT = ("keep", "null")


def _reasoning_field(name: str) -> str:
    if name not in REASONING_FIELDS:
        raise PolicyError(f"reasoning_field must be one of {', '.join(map(repr, REASONING_FIELDS))}, got {name!r}")
    return name


def _blank_content(how: str) -> str:
    if how not in BLANK_CONTENT:
        raise PolicyError(f"blank_content must be one of {', '.join(map(repr, BLANK_CONTENT))}, got {how!r}")
    return how


class Ids:
    """How tool-call ids are chosen for one adapter: keep the model's, else mint.

    ``Ids()`` mints ``call_`` plus 24 random letters and digits; ``Ids(prefix="chatcmpl-tool-")``
    changes the prefix, ``Ids(mint=fn)`` calls ``fn()`` for each id instead, and
    ``Ids.mistral()`` mints the 9-character alphanumeric ids Mistral's tokenizer accepts
    (and replaces a model id that is not of that form).  ``seed`` makes minting
    reproducible.  Within one response every id is unique: a model id already used by an
    earlier call, or a minted id that collides, is replaced by a fresh one.
    """

    __slots__ = ("prefix", "length", "valid", "_mint", "_rng")

    def __init__(
        self,
        prefix: str = "call_",
        length: int = 24,
        *,
        mint: Callable[[], str] | None = None,
        valid: str | None = None,
        seed: int | str | None = None,
    ) -> None:
        if not isinstance(prefix, str):
            raise PolicyError(f"Ids(prefix=...) must be a str, got {type(prefix).__name__}")
        if not isinstance(length, int) or isinstance(length, bool) or not 1 <= length <= 256:
            raise PolicyError(f"Ids(length=...) must be an integer from 1 to 256, got {length!r}")
        if mint is not None and not callable(mint):
            raise PolicyError(f"Ids(mint=...) must be a function returning a str id, got {type(mint).__name__}")
        self.prefix = prefix
        self.length = length
        try:
            self.valid = re.compile(valid) if valid is not None else None
        except (re.error, TypeError) as exc:
            raise PolicyError(f"Ids(valid=...) must be a regular expression for acceptable ids: {exc}") from None
        self._mint = mint
        self._rng: random.Random = random.Random(seed) if seed is not None else secrets.SystemRandom()

    @classmethod
    def mistral(cls, *, seed: int | str | None = None) -> Ids:
        """Mistral-compatible ids: exactly 9 letters and digits, minted or kept."""
        return cls(prefix="", length=9, valid=r"[A-Za-z0-9]{9}", seed=seed)

    def new(self, used: set[str]) -> str:
        """A fresh id not in ``used`` (which it joins)."""
        for _ in range(_MINT_TRIES):
            if self._mint is not None:
                got = self._mint()
                if not isinstance(got, str) or not got:
                    raise PolicyError(f"the Ids minting function must return a non-empty str, got {got!r}")
            else:
                got = self.prefix + "".join(self._rng.choice(_ALNUM) for _ in range(self.length))
            if got not in used:
                used.add(got)
                return got
        raise PolicyError(
            f"the Ids minting function returned ids already used in this response {_MINT_TRIES} times in a row; "
            "it must return a different id on each call"
        )

    def keep_or_new(self, model_id: str | None, used: set[str]) -> str:
        """The model's id when it is usable here (unique, and of the ``valid`` form), else a new one."""
        if model_id and model_id not in used and (self.valid is None or self.valid.fullmatch(model_id)):
            used.add(model_id)
            return model_id
        return self.new(used)


def _ids(ids: Ids | str | Callable[[], str] | None) -> Ids:
    if ids is None:
        return Ids()
    if isinstance(ids, Ids):
        return ids
    if isinstance(ids, str):
        return Ids(prefix=ids)
    if callable(ids):
        return Ids(mint=ids)
    raise PolicyError(f"ids must be a td.openai.Ids, a prefix str or a minting function, got {type(ids).__name__}")


# -- non-streaming --------------------------------------------------------------------------


def finish_reason(result: ParseResult) -> str:
    """``length`` when the text was cut off (a ``truncated`` diagnostic), else ``tool_calls``
    when there are calls, else ``stop``."""
    if any(d.kind == "truncated" for d in result.diagnostics):
        return "length"
    return "tool_calls" if result.calls else "stop"


def _tool_call(call: ToolCall, call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments_json}}


def message(
    result: ParseResult,
    *,
    ids: Ids | str | Callable[[], str] | None = None,
    model_ids: bool = True,
    reasoning_field: str = "reasoning_content",
    blank_content: str = "keep",
) -> dict[str, Any]:
    """The ``choices[0].message`` of a non-streaming response: ``role``, ``content`` (None
    when there is no visible text), the reasoning (only when there is some, under
    ``reasoning_field``) and ``tool_calls`` (only when there are calls).

    ``model_ids=False`` mints every id (the model's own are not used);
    ``blank_content="null"`` makes white-space-only content next to calls ``None``."""
    minter = _ids(ids)
    field_name = _reasoning_field(reasoning_field)
    blank = _blank_content(blank_content)
    used: set[str] = set()
    content = result.text or None
    if blank == "null" and result.calls and content is not None and not content.strip():
        content = None
    out: dict[str, Any] = {"role": "assistant", "content": content}
    if result.reasoning:
        out[field_name] = result.reasoning
    if result.calls:
        out["tool_calls"] = [
            _tool_call(c, minter.keep_or_new(_model_id(c) if model_ids else None, used)) for c in result.calls
        ]
    return out


def completion(
    result: ParseResult | Iterable[ParseResult],
    *,
    id: str,
    model: str,
    created: int,
    ids: Ids | str | Callable[[], str] | None = None,
    **shape: Any,
) -> dict[str, Any]:
    """A whole ``chat.completion`` object: one choice, or one per result when given several
    (a request with ``n > 1``), numbered in order.  ``shape`` takes :func:`message`'s
    ``model_ids``, ``reasoning_field`` and ``blank_content``."""
    results = [result] if isinstance(result, ParseResult) else list(result)
    if not results or not all(isinstance(r, ParseResult) for r in results):
        raise PolicyError("completion() takes a td.ParseResult or a non-empty list of them (one per choice)")
    return {
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {"index": i, "message": message(r, ids=ids, **shape), "finish_reason": finish_reason(r)}
            for i, r in enumerate(results)
        ],
    }


def chunk(
    delta: dict[str, Any],
    *,
    id: str,
    model: str,
    created: int,
    finish_reason: str | None = None,
    index: int = 0,
) -> dict[str, Any]:
    """A ``chat.completion.chunk`` object carrying one delta of choice ``index`` (a request
    with ``n > 1`` runs one :class:`ChatStream` per choice and numbers their chunks)."""
    return {
        "id": id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": index, "delta": delta, "finish_reason": finish_reason}],
    }


# -- streaming -------------------------------------------------------------------------------


def _spells_ids(family: str) -> bool:
    """Whether a family's format has call ids: its grammar spells one (a ``call_id`` rule)."""
    try:
        return "call_id" in _families.get(family).grammar.nodes
    except UnknownFamilyError:
        return False


def _model_id(call: ToolCall) -> str | None:
    """The id the model wrote, where its format has ids (Kimi, Mistral); an ``"id"`` member
    that a family without ids happened to read from a JSON payload is not one."""
    return call.id if call.id and _spells_ids(call.family) else None


def _split_tail(text: str) -> int:
    """Where the held tail of an argument text begins: its last non-white-space character.
    Arguments are a JSON object, and no proper prefix of one is valid JSON, so holding the
    closing brace back keeps the arguments of a call that may still abort unparseable."""
    i = len(text)
    while i > 0 and text[i - 1] in " \t\r\n":
        i -= 1
    return max(i - 1, 0)


@dataclass
class _Call:
    """One call this response started: what went out, and what is held."""

    start: CallStart
    slot: int = -1  # position in tool_calls once the first chunk went out
    held_id: bool = False  # the first chunk waits for the model's id
    pending: list[str] = field(default_factory=list)  # argument fragments received, not yet sent
    sent: int = 0  # characters of the argument text already sent
    done: ToolCall | None = None
    aborted: str | None = None


class ChatStream(Translator):
    """A :class:`~tooldialect.ToolStream` whose output is OpenAI ``choices[0].delta`` dicts.

    ``feed(text)`` and ``close()`` return the deltas the model text decided (possibly
    none); after ``close()``, :attr:`finish_reason` says why the response ended.  A caller
    that drives its own ``ToolStream`` (to keep its events, say) passes it as ``stream=``
    and hands the events to :meth:`translate`, then calls :meth:`finish`.
    """

    def __init__(
        self,
        tools: Toolset | Iterable[Any] | None = None,
        *,
        families: Iterable[str] | None = None,
        policy: Policy | None = None,
        ids: Ids | str | Callable[[], str] | None = None,
        stream: ToolStream | None = None,
        model_ids: bool = True,
        reasoning_field: str = "reasoning_content",
        blank_content: str = "keep",
    ) -> None:
        self._adopt(stream, tools, families, policy)
        self.ids = _ids(ids)
        self.finish_reason: str | None = None
        self._reasoning_key = _reasoning_field(reasoning_field)
        self._blank = _blank_content(blank_content) == "null"
        chosen = self.stream.families if self.stream.families is not None else tuple(_families.names())
        with_ids = [name for name in chosen if _spells_ids(name)] if model_ids else []
        # a call announced without its id waits for it when the stream reads only formats
        # with ids; with formats of both kinds every call waits for its end, where its
        # family says whether the model's id counts (an OpenAI client cannot take an id back).
        # model_ids=False: every id is minted, so no call waits for one
        self._model_ids = model_ids
        self._only_ids = bool(with_ids) and len(with_ids) == len(chosen)
        self._some_ids = bool(with_ids)
        # blank_content="null": white-space-only content waits here until content that is
        # not white space follows (then it goes out first) or the response ends
        self._blank_held: list[str] = []
        self._content_seen = False
        self._used: set[str] = set()
        self._calls: dict[int, _Call] = {}
        self._queue: list[_Call] = []  # calls in the order they started, until fully sent
        self._slots = 0
        self._role_sent = False
        self._ended = 0
        self._truncated = False
        self._finished = False

    # feeding ------------------------------------------------------------------------------

    def translate(self, events: Iterable[Event]) -> list[dict[str, Any]]:
        """The deltas for a batch of stream events, in order (adjacent ones merged)."""
        if self._finished:
            raise StreamClosedError("translate() after finish(): start a new ChatStream for a new response")
        out: list[dict[str, Any]] = []
        for ev in events:
            if isinstance(ev, TextDelta):
                if ev.text:
                    self._content(out, ev.text)
            elif isinstance(ev, ReasoningDelta):
                if ev.text:
                    self._put(out, {self._reasoning_key: ev.text})
            elif isinstance(ev, CallStart):
                self._start(ev)
            elif isinstance(ev, ArgumentsDelta):
                call = self._calls.get(ev.index)
                if call is not None:
                    call.pending.append(ev.fragment)
            elif isinstance(ev, CallEnd):
                call = self._calls.get(ev.index)
                if call is None:  # an end with no start: announce it now
                    call = self._start(CallStart.model_construct(index=ev.index, name=ev.call.name, id=ev.call.id))
                call.done = ev.call
                self._ended += 1
            elif isinstance(ev, CallAbort):
                call = self._calls.get(ev.index)
                if call is not None:
                    call.aborted = ev.reason or "aborted"
            elif isinstance(ev, DiagnosticEvent) and ev.diagnostic.kind == "truncated":
                self._truncated = True
            self._pump(out)
        return out

    def finish(self) -> list[dict[str, Any]]:
        """End of the response: whatever is still held goes out, and ``finish_reason`` is set."""
        if self._finished:
            return []
        out: list[dict[str, Any]] = []
        for call in self._queue:
            if call.done is None and call.aborted is None:
                call.aborted = "unfinished"  # the stream ended without the call's end
        self._pump(out)
        self._finished = True
        self.finish_reason = "length" if self._truncated else "tool_calls" if self._ended else "stop"
        if self._blank_held and not self._ended:  # no call: the white space is the content
            self._put(out, {"content": "".join(self._blank_held)})
        self._blank_held.clear()
        if not self._role_sent:
            self._put(out, {})
        return out

    def _content(self, out: list[dict[str, Any]], text: str) -> None:
        if self._blank and not self._content_seen:
            if not text.strip():
                self._blank_held.append(text)
                return
            self._content_seen = True
            text = "".join(self._blank_held) + text
            self._blank_held.clear()
        self._put(out, {"content": text})

    # calls ------------------------------------------------------------------------------------

    def _start(self, ev: CallStart) -> _Call:
        held = self._some_ids and (ev.id is None or not self._only_ids)
        call = _Call(ev, held_id=held)
        self._calls[ev.index] = call
        self._queue.append(call)
        return call

    def _pump(self, out: list[dict[str, Any]]) -> None:
        """Send what the calls at the front of the queue allow, in order: a held call keeps
        the calls after it waiting, so slots are numbered in the order calls started."""
        while self._queue:
            call = self._queue[0]
            if call.slot < 0:
                if call.aborted is not None:  # nothing of it went out: nothing to take back
                    self._forget(call)
                    continue
                if call.held_id and call.done is None:
                    return
                self._first(out, call)
            self._arguments(out, call)
            if call.done is None and call.aborted is None:
                return
            if call.aborted is not None and call.done is None:
                # "function" too: the openai client's stream accumulator requires it in
                # every entry of a function call
                entry = {"index": call.slot, "function": {"arguments": ""}, "aborted": call.aborted}
                self._put(out, {"tool_calls": [entry]})
            self._forget(call)

    def _forget(self, call: _Call) -> None:
        self._queue.pop(0)
        self._calls.pop(call.start.index, None)

    def _first(self, out: list[dict[str, Any]], call: _Call) -> None:
        if not self._model_ids:
            model_id = None
        elif call.done is not None:
            model_id = _model_id(call.done)
        else:
            model_id = call.start.id if self._only_ids else None
        name = call.done.name if call.done is not None else call.start.name
        call.slot = self._slots
        self._slots += 1
        entry = {
            "index": call.slot,
            "id": self.ids.keep_or_new(model_id, self._used),
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        self._put(out, {"tool_calls": [entry]})

    def _arguments(self, out: list[dict[str, Any]], call: _Call) -> None:
        if call.done is not None:
            # the fragments concatenate to arguments_json (a stream invariant), so what is
            # left to send is the rest of the call's own argument text
            fragment = call.done.arguments_json[call.sent :]
            call.pending.clear()
        elif call.aborted is not None:
            return
        else:
            text = "".join(call.pending)
            cut = _split_tail(text)
            fragment = text[:cut]
            call.pending[:] = [text[cut:]] if cut < len(text) else []
        if fragment:
            self._put(out, {"tool_calls": [{"index": call.slot, "function": {"arguments": fragment}}]})
            call.sent += len(fragment)

    # output ------------------------------------------------------------------------------------

    def _put(self, out: list[dict[str, Any]], delta: dict[str, Any]) -> None:
        """Append a delta, merged into the previous one when both carry the same kind of text
        (or arguments of the same call); the first delta of the response carries the role."""
        if not self._role_sent:
            self._role_sent = True
            out.append({"role": "assistant", **delta})
            return
        if out:
            last = out[-1]
            if _merge(last, delta):
                return
        out.append(delta)


def _merge(last: dict[str, Any], delta: dict[str, Any]) -> bool:
    for key in ("content", *REASONING_FIELDS):
        if key in delta and set(last) <= {key, "role"} and key in last:
            last[key] += delta[key]
            return True
    if "tool_calls" in delta and set(last) <= {"tool_calls", "role"} and "tool_calls" in last:
        new = delta["tool_calls"][0]
        old = last["tool_calls"][-1]
        if set(new) == {"index", "function"} and old["index"] == new["index"] and "aborted" not in old:
            old["function"]["arguments"] += new["function"]["arguments"]
            return True
    return False
