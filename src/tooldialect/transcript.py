"""Transcripts: the three entries a tool-calling history needs, and the repair that
keeps it acceptable to providers.

    td.transcript.Chat("user", "Weather in Paris?")
    td.transcript.AssistantToolCalls(tool_calls=[td.transcript.AssistantCall(id="call_1",
        name="get_weather", arguments='{"city": "Paris"}')], reasoning_content="…")
    td.transcript.ToolResults([td.ToolResult("call_1", "get_weather", "18C")])
    td.transcript.pair_tool_cycles(entries)   # incomplete cycles dropped, both halves
    td.transcript.from_openai(messages)       # OpenAI-format chat messages as entries

The entries are deliberately poorer than a provider's message: they carry exactly the
fields providers reject a request over, unchanged — ``reasoning_content`` (thinking-mode
APIs refuse an assistant turn with calls but without it), each call's ``extra_content``
(where Gemini's thought signature rides) and each call's ``arguments`` as the exact string
the model wrote.  A dialect (``td.dialects``) turns a transcript into messages.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError

from .errors import PolicyError
from .models import ToolCall

__all__ = [
    "AssistantCall",
    "AssistantToolCalls",
    "Chat",
    "Entry",
    "ToolResult",
    "ToolResults",
    "from_openai",
    "pair_tool_cycles",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)
#: Message members a dialect writes itself; ``extra`` may not replace them.
RESERVED_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", "reasoning_content"})


def _build(init: Any, kind: str, **data: Any) -> None:
    """Run pydantic's validation; a caller mistake becomes a PolicyError naming the field."""
    try:
        init(**data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err.get("loc", ())) or kind
        raise PolicyError(f"invalid {kind}: {where}: {err.get('msg', 'invalid value')}") from None


def _check_extra(value: Any) -> Any:
    """``extra``: members added to a replayed message as they are; never one the dialect writes."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise PolicyError("extra must be a mapping with string keys (members added to the replayed message)")
    clash = sorted(RESERVED_KEYS & set(value))
    if clash:
        raise PolicyError(f"extra may not set {', '.join(clash)}: the dialect writes those members itself")
    return value


class ToolResult(BaseModel):
    """What one tool call returned: ``ToolResult(tool_call_id, name, output, status="ok")``.

    ``status`` is ``"ok"`` or ``"error"``.  ``verbatim=True`` sends ``output`` to the model
    raw, as a turn of its own, with no envelope and no rewrite — for output the host
    trusts and that must reach the model byte for byte (a contract, a prompt fragment).
    """

    model_config = _FROZEN

    tool_call_id: StrictStr = Field(min_length=1)
    name: StrictStr = Field(min_length=1)
    output: StrictStr
    status: Literal["ok", "error"] = "ok"
    verbatim: StrictBool = False

    def __init__(
        self, tool_call_id: str, name: str, output: str, status: str = "ok", *, verbatim: bool = False
    ) -> None:
        _build(
            super().__init__,
            "ToolResult",
            tool_call_id=tool_call_id,
            name=name,
            output=output,
            status=status,
            verbatim=verbatim,
        )


class Chat(BaseModel):
    """A message with no tool calls: ``Chat("user", "…")``; ``extra`` members are added to
    the replayed message as they are (``name``, a provider's cache hints …)."""

    model_config = _FROZEN

    role: Literal["system", "developer", "user", "assistant"]
    content: StrictStr
    extra: Any = None

    def __init__(self, role: str, content: str, *, extra: Mapping[str, Any] | None = None) -> None:
        _build(super().__init__, "Chat", role=role, content=content, extra=_check_extra(extra))


class AssistantCall(BaseModel):
    """One call of an assistant turn, as it will be replayed.

    ``arguments`` is the exact string (JSON text) — never re-serialised on the native
    path; ``extra_content`` is passed through as the same object.  Ids are the host's:
    ``td.parse`` never mints them.
    """

    model_config = _FROZEN

    id: StrictStr = Field(min_length=1)
    name: StrictStr = Field(min_length=1)
    arguments: StrictStr = "{}"
    extra_content: Any = None

    def __init__(self, *, id: str, name: str, arguments: str = "{}", extra_content: Any = None) -> None:
        _build(super().__init__, "AssistantCall", id=id, name=name, arguments=arguments, extra_content=extra_content)

    @classmethod
    def from_call(cls, call: ToolCall, *, id: str | None = None, extra_content: Any = None) -> AssistantCall:
        """The record of a parsed call: its ``arguments_json`` byte for byte, and ``id``
        (or the model's own ``call.id``)."""
        if not isinstance(call, ToolCall):
            raise PolicyError(f"from_call() takes a td.ToolCall, got {type(call).__name__}")
        got = id if id is not None else call.id
        if got is None:
            raise PolicyError(f"call {call.name!r} has no id (td.parse never mints one): pass id=…")
        return cls(id=got, name=call.name, arguments=call.arguments_json, extra_content=extra_content)

    def decoded_arguments(self) -> dict[str, Any] | None:
        """The arguments as a dict, or None when the string is not one JSON object."""
        return decode_object(self.arguments)


def decode_object(text: str) -> dict[str, Any] | None:
    """``text`` decoded when it is exactly one strict JSON object (no NaN), else None."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class AssistantToolCalls(BaseModel):
    """An assistant turn that called tools: its visible ``content`` (the text without call
    markup, or None), its calls, and ``reasoning_content`` replayed byte for byte."""

    model_config = _FROZEN

    tool_calls: tuple[AssistantCall, ...] = Field(min_length=1)
    content: StrictStr | None = None
    reasoning_content: StrictStr | None = None
    extra: Any = None

    def __init__(
        self,
        *,
        tool_calls: Sequence[AssistantCall],
        content: str | None = None,
        reasoning_content: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        if isinstance(tool_calls, (str, bytes, Mapping)) or not isinstance(tool_calls, Iterable):
            raise PolicyError("AssistantToolCalls needs tool_calls=[AssistantCall(…), …]")
        calls = tuple(tool_calls)
        for call in calls:
            if not isinstance(call, AssistantCall):
                raise PolicyError(
                    f"tool_calls holds {type(call).__name__}: use AssistantCall (or AssistantCall.from_call)"
                )
        _build(
            super().__init__,
            "AssistantToolCalls",
            tool_calls=calls,
            content=content,
            reasoning_content=reasoning_content,
            extra=_check_extra(extra),
        )

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(c.id for c in self.tool_calls)


class ToolResults(BaseModel):
    """The results answering the assistant turn right before: ``ToolResults([…])``."""

    model_config = _FROZEN

    results: tuple[ToolResult, ...] = Field(min_length=1)

    def __init__(self, results: Sequence[ToolResult]) -> None:
        if isinstance(results, (str, bytes, Mapping)) or not isinstance(results, Iterable):
            raise PolicyError("ToolResults needs a list of td.ToolResult")
        items = tuple(results)
        for item in items:
            if not isinstance(item, ToolResult):
                raise PolicyError(
                    f"ToolResults holds {type(item).__name__}: use td.ToolResult(tool_call_id, name, output)"
                )
        _build(super().__init__, "ToolResults", results=items)

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(r.tool_call_id for r in self.results)


Entry = Union[Chat, AssistantToolCalls, ToolResults]  # noqa: UP007 - a runtime alias (isinstance, pydantic)


def entries(transcript: Iterable[Any]) -> list[Entry]:
    """The transcript as a list, every entry checked (a caller mistake raises)."""
    if isinstance(transcript, (str, bytes, Mapping)) or not isinstance(transcript, Iterable):
        raise PolicyError("a transcript is a list of Chat, AssistantToolCalls and ToolResults entries")
    out = list(transcript)
    for i, entry in enumerate(out):
        if not isinstance(entry, (Chat, AssistantToolCalls, ToolResults)):
            raise PolicyError(
                f"transcript entry #{i} is {type(entry).__name__}: use td.transcript.Chat, AssistantToolCalls or ToolResults"
            )
    return out


def pair_tool_cycles(transcript: Iterable[Entry]) -> list[Entry]:
    """The transcript without its incomplete tool cycles, ready to serialise.

    A cycle is an ``AssistantToolCalls`` and the ``ToolResults`` entries right after it.
    It is kept only when the ids its results answer are exactly the ids of its calls, as
    sets — coverage, not adjacency.  Otherwise both halves go: the calls (a provider
    refuses calls left unanswered) and their results (a result answering a call the model
    never sees is as malformed); so does a ``ToolResults`` with no calls right before it.
    ``Chat`` entries always stay.  A transcript with nothing to drop comes back equal.
    """
    items = entries(transcript)
    out: list[Entry] = []
    i = 0
    while i < len(items):
        entry = items[i]
        if isinstance(entry, AssistantToolCalls):
            j = i + 1
            while j < len(items) and isinstance(items[j], ToolResults):
                j += 1
            answered = frozenset().union(*(r.ids for r in items[i + 1 : j] if isinstance(r, ToolResults)))
            if j > i + 1 and answered == entry.ids:
                out.extend(items[i:j])
            i = j
        elif isinstance(entry, ToolResults):
            i += 1  # an orphan: nothing it answers is left right before it
        else:
            out.append(entry)
            i += 1
    return out


def from_openai(messages: Sequence[Any]) -> list[Entry]:
    """OpenAI-format chat messages as transcript entries: an assistant message with
    ``tool_calls`` becomes :class:`AssistantToolCalls` (its ``reasoning_content`` kept),
    each ``tool`` message a :class:`ToolResults` (its tool's name taken from the call it
    answers when it has none), every other message a :class:`Chat`.  Arguments given as a
    JSON value are written as compact JSON with sorted keys.  A message that is not an
    object, a content that is not text, a tool call (or its ``function``) that is not an
    object, or a role ``Chat`` does not take raises :class:`~tooldialect.PolicyError`."""
    names: dict[str, str] = {}
    out: list[Any] = []
    for n, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise PolicyError(f"message #{n} is not an object")
        # members are taken as they are: each entry's constructor checks them (PolicyError)
        role: Any = msg.get("role")
        content = _openai_content(msg.get("content"))
        if role == "assistant" and msg.get("tool_calls"):
            calls = []
            for k, call in enumerate(_tool_calls(msg["tool_calls"], n)):
                if not isinstance(call, dict):
                    raise PolicyError(f"message #{n}: tool call #{k} is {type(call).__name__}, not an object{_CALL}")
                fn: Any = call.get("function") or {}
                if not isinstance(fn, dict):
                    raise PolicyError(
                        f"message #{n}: tool call #{k}'s function is {type(fn).__name__}, not an object{_CALL}"
                    )
                # the members as they are: AssistantCall checks them
                cid: Any = call.get("id")
                fn_name: Any = fn.get("name")
                args = fn.get("arguments", "{}")
                args = args if isinstance(args, str) else compact_json(args)
                calls.append(AssistantCall(id=cid, name=fn_name, arguments=args))
                names[cid] = fn_name
            out.append(
                AssistantToolCalls(
                    tool_calls=calls, content=content or None, reasoning_content=msg.get("reasoning_content")
                )
            )
        elif role == "tool":
            call_id: Any = msg.get("tool_call_id")
            name: Any = msg.get("name") or names.get(call_id)
            out.append(ToolResults([ToolResult(call_id, name, content)]))
        else:
            out.append(Chat(role, content))  # a role Chat does not take raises PolicyError
    return out


#: What an OpenAI tool call looks like, for the errors about one that does not.
_CALL = ' (an OpenAI tool call: {"id": …, "type": "function", "function": {"name": …, "arguments": …}})'


def _tool_calls(tool_calls: Any, n: int) -> Iterable[Any]:
    """An assistant message's ``tool_calls``: a list of tool calls, else PolicyError."""
    if isinstance(tool_calls, (str, bytes, Mapping)) or not isinstance(tool_calls, Iterable):
        raise PolicyError(f"message #{n}: tool_calls is {type(tool_calls).__name__}, not a list of tool calls{_CALL}")
    return tool_calls


def _openai_content(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, list):  # content parts
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict))
    if not isinstance(content, str):
        raise PolicyError(f"a message content is {type(content).__name__}, not text")
    return content


def compact_json(value: Any) -> str:
    """A JSON value as one compact line with sorted keys (anything JSON cannot hold as its
    ``str``): how arguments given as a value, and table cells, are written."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
