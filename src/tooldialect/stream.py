"""``ToolStream`` (sans-IO streaming) and ``parse()``, which is a stream fed once."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from mypy_extensions import mypyc_attr

from .binding import binder_for
from .catalog import catalog_for
from .engine import Engine
from .engine.events import parse_result
from .errors import PolicyError, StreamClosedError
from .families import generation, get
from .models import CallEnd, DiagnosticEvent, Event, ParseResult, Policy, ReasoningDelta, TextDelta
from .tokens import Detokenizer
from .toolset import Toolset

__all__ = ["ToolStream", "Translator", "parse", "parse_tokens"]


#: the policy of a stream given none (a frozen model: one instance serves every stream)
_DEFAULT_POLICY: Final = Policy()


#: the families selections found known, each at the registry's generation then (most
#: streams ask for one of a few selections: each is looked up in the registry once)
_KNOWN: Final[dict[tuple[str, ...], int]] = {}


def _families(families: Iterable[str] | None) -> tuple[str, ...] | None:
    if families is None:
        return None
    out = (families,) if isinstance(families, str) else tuple(families)
    for name in out:
        if not isinstance(name, str):
            raise PolicyError(f"family names must be strings, got {type(name).__name__}")
    if not out:
        raise PolicyError("families=[] selects nothing; pass None for every family")
    current = generation()
    if _KNOWN.get(out) != current:
        for name in out:
            get(name)  # raises UnknownFamilyError with the list of known names
        if len(_KNOWN) >= 256:
            _KNOWN.clear()
        _KNOWN[out] = current
    return out


@mypyc_attr(allow_interpreted_subclasses=True)
class ToolStream:
    """Feed model output as it arrives; get text, reasoning and call events back.

    ``feed(delta)`` returns the events that delta decided; ``""`` is a no-op, not the
    end.  ``close()`` ends the stream and flushes what was held.  The stream owns no
    I/O and no threads.
    """

    __slots__ = ("_engine", "_closed", "_detok", "tools", "policy", "families")

    def __init__(
        self,
        tools: Toolset | Iterable[Any] | None = None,
        *,
        families: Iterable[str] | None = None,
        policy: Policy | None = None,
        tokenizer: Any = None,
        special_tokens: Mapping[int, str] | None = None,
    ) -> None:
        if policy is None:
            policy = _DEFAULT_POLICY
        elif not isinstance(policy, Policy):
            raise PolicyError(f"policy must be a td.Policy, got {type(policy).__name__}")
        toolset = Toolset.coerce(tools) if tools is not None else None
        self.tools = toolset
        self.policy = policy
        self.families = _families(families)
        catalog = catalog_for(self.families)
        self._engine = Engine(catalog, binder_for(toolset, policy, catalog.no_tool), policy)
        self._closed = False
        # feed_tokens: token ids decoded here, special tokens written out (tokens.py)
        self._detok = Detokenizer(tokenizer, special_tokens) if tokenizer is not None or special_tokens else None

    def feed(self, delta: str) -> list[Event]:
        if self._closed:
            raise StreamClosedError("feed() after close(): start a new ToolStream for a new response")
        if not isinstance(delta, str):
            raise PolicyError(f"feed() takes str deltas, got {type(delta).__name__}")
        return self._engine.feed(delta)

    def feed_tokens(self, ids: Iterable[int]) -> list[Event]:
        """Feed token ids (the stream was given ``tokenizer=`` or ``special_tokens=``): a
        special token is read as its text even where a server's decoded text drops it."""
        if self._closed:
            raise StreamClosedError("feed_tokens() after close(): start a new ToolStream for a new response")
        if self._detok is None:
            raise PolicyError("feed_tokens() needs the ToolStream built with tokenizer= (or special_tokens={id: text})")
        text = self._detok.feed(ids)
        self._engine.ordinary_tokens(self._detok.special_texts, self._detok.marks)
        return self._engine.feed(text)

    def close(self) -> list[Event]:
        if self._closed:
            raise StreamClosedError("close() called twice")
        self._closed = True
        detok = self._detok
        rest = detok.close() if detok is not None else ""
        if rest and detok is not None:
            self._engine.ordinary_tokens(detok.special_texts, [(0, len(rest))])
        events = self._engine.feed(rest) if rest else []
        return events + self._engine.close()

    @property
    def closed(self) -> bool:
        return self._closed


@mypyc_attr(allow_interpreted_subclasses=True)
class Translator:
    """What the protocol adapters (``td.openai.ChatStream``, ``td.anthropic.MessageStream``)
    share: a :class:`ToolStream` of their own, or the caller's, whose events
    :meth:`translate` turns into the protocol's messages and :meth:`finish` ends."""

    stream: ToolStream

    def _adopt(
        self,
        stream: ToolStream | None,
        tools: Toolset | Iterable[Any] | None,
        families: Iterable[str] | None,
        policy: Policy | None,
    ) -> None:
        if stream is None:
            stream = ToolStream(tools, families=families, policy=policy)
        elif not isinstance(stream, ToolStream):
            raise PolicyError(f"stream must be a td.ToolStream, got {type(stream).__name__}")
        elif tools is not None or families is not None or policy is not None:
            raise PolicyError(
                f"pass tools, families and policy to the ToolStream given as stream=, not to {type(self).__name__}"
            )
        self.stream = stream

    def feed(self, text: str) -> list[dict[str, Any]]:
        return self.translate(self.stream.feed(text))

    def close(self) -> list[dict[str, Any]]:
        return self.translate(self.stream.close()) + self.finish()

    def translate(self, events: Iterable[Event]) -> list[dict[str, Any]]:
        raise NotImplementedError

    def finish(self) -> list[dict[str, Any]]:
        raise NotImplementedError


_TEXT, _REASONING, _CALL_END, _DIAGNOSTIC = TextDelta.type, ReasoningDelta.type, CallEnd.type, DiagnosticEvent.type
#: each event class's tag by the class: a look-up by ``type(ev)`` spares reading the tag
#: through pydantic's ``__getattr__`` hook, which every attribute of a model pays
_TAGS: Final[dict[type, str]] = {
    TextDelta: _TEXT,
    ReasoningDelta: _REASONING,
    CallEnd: _CALL_END,
    DiagnosticEvent: _DIAGNOSTIC,
}


def collect(events: Iterable[Event]) -> ParseResult:
    """Fold a complete event sequence into the result ``parse()`` returns."""
    text: list[str] = []
    reasoning: list[str] = []
    calls = []
    diagnostics = []
    ev: Any  # (an annotation, not a cast: nothing called per parse)
    for ev in events:
        kind = _TAGS.get(type(ev))  # (an event of another class, or a subclass: its tag)
        if kind is None:
            kind = ev.type
        if kind == _TEXT:
            text.append(ev.text)
        elif kind == _REASONING:
            reasoning.append(ev.text)
        elif kind == _CALL_END:
            calls.append(ev.call)
        elif kind == _DIAGNOSTIC:
            diagnostics.append(ev.diagnostic)
    return parse_result("".join(text), "".join(reasoning), calls, diagnostics)


def parse(
    text: str,
    tools: Toolset | Iterable[Any] | None = None,
    *,
    families: Iterable[str] | None = None,
    policy: Policy | None = None,
) -> ParseResult:
    """Read a whole model reply: the stream fed once and closed."""
    if not isinstance(text, str):
        raise PolicyError(f"parse() takes the model's text as str, got {type(text).__name__}")
    stream = ToolStream(tools, families=families, policy=policy)
    stream._engine.fold()  # (what collect() would keep of the events, kept as it is made)
    stream.feed(text)
    stream.close()
    return stream._engine.result()


def parse_tokens(
    ids: Iterable[int],
    tools: Toolset | Iterable[Any] | None = None,
    *,
    tokenizer: Any = None,
    special_tokens: Mapping[int, str] | None = None,
    families: Iterable[str] | None = None,
    policy: Policy | None = None,
) -> ParseResult:
    """Read a whole model reply given as token ids: :meth:`ToolStream.feed_tokens` fed once
    and closed (spans are offsets in the decoded text, special tokens written out)."""
    stream = ToolStream(tools, families=families, policy=policy, tokenizer=tokenizer, special_tokens=special_tokens)
    stream._engine.fold()
    stream.feed_tokens(ids)
    stream.close()
    return stream._engine.result()
