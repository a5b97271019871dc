"""Whether a reply is past its reasoning, answered from token ids as they are generated:
what vLLM's structured output asks a reasoning parser (``is_reasoning_end``) before it
starts constraining the output to a ``response_format`` or to a required tool call.

The reasoning markers are the shared piece's (``_reasoning.lark``: ``<think>``/``</think>``,
``[THINK]``/``[/THINK]``, Harmony's analysis channel …), read in the text the ids decode to
with special tokens written out, as the stream reads them: the reply starts in reasoning when
the policy says so (``start_in_reasoning``: the chat template opened it), an opener outside
reasoning opens it, and inside it only a closer of the same pair ends it (any closer, when
the policy opened it).  The prompt's last :data:`PROMPT_TAIL` tokens come first: a template
that opens reasoning in the prompt (``<think>\\n``) or closes it there (``<think></think>``,
thinking switched off) decides where the reply starts, the newest marker winning.

A server asks again at every step with the whole sequence and the newest tokens, which may
be speculative (not yet accepted); the gate reads each accepted token once, and the newest
ones on a copy of its small state, so an answer costs the new tokens plus the longest
marker, never a re-read of the reply.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import ToolDialectError
from ..markerpattern import MarkerPattern
from ..models import Policy
from ..pieces import piece
from ..tokens import Detokenizer

__all__ = ["PROMPT_TAIL", "ReasoningGate"]

#: How many of the prompt's last tokens are read for a reasoning marker the template wrote.
PROMPT_TAIL = 16
_log = logging.getLogger("tooldialect.integrations")
_OPEN = "REASONING_OPEN_"
_CLOSE = "REASONING_CLOSE_"
#: Any closer ends reasoning the policy opened (the engine's ``rclose == "*"``).
_ANY = "*"


@dataclass(frozen=True)
class _State:
    reasoning: bool
    close: str | None  # the pair whose closer ends the reasoning (_ANY: any)
    tail: str  # the text after the last marker that a marker arriving next may begin in


class ReasoningGate:
    """Reads token ids for reasoning markers; :meth:`ended` says whether the reply is past
    its reasoning.  One gate per reply (vLLM builds one reasoning parser per request)."""

    def __init__(self, tokenizer: Any, policy: Policy) -> None:
        self.policy = policy
        terms = piece("_reasoning")
        self._opens = [(n[len(_OPEN) :], t.pattern) for n, t in terms.items() if n.startswith(_OPEN) and t.pattern]
        self._closes = [(n[len(_CLOSE) :], t.pattern) for n, t in terms.items() if n.startswith(_CLOSE) and t.pattern]
        self._keep = max(p.max_width for _, p in self._opens + self._closes) - 1
        self._tokenizer = tokenizer
        try:
            self._detok: Detokenizer | None = Detokenizer(tokenizer)
        except ToolDialectError as exc:  # a tokenizer tooldialect cannot read: never in the way
            _log.warning("tooldialect: reasoning is taken to have ended at once: %s", exc)
            self._detok = None
        self._prompt: int | None = None  # the prompt's length, once known
        self._read = 0  # how many of the reply's tokens _state has read
        self._state = _State(policy.start_in_reasoning, _ANY if policy.start_in_reasoning else None, "")

    def ended(self, ids: Sequence[int], newest: Sequence[int] = ()) -> bool:
        """Whether the reply is past its reasoning after ``ids`` (the prompt, then the reply
        so far; the first call's ``ids`` less ``newest`` are the prompt).  ``newest`` are the
        last of ``ids``, which the server may still reject: they are read on a copy."""
        if self._detok is None:
            return True
        settled = len(ids) - len(newest)
        if self._prompt is None:
            self._prompt = settled
            self._state = self._scan(self._state, self._decode(ids[max(0, settled - PROMPT_TAIL) : settled]))
        done = self._prompt + self._read
        try:
            if settled > done:
                text = self._detok.feed([int(i) for i in ids[done:settled]])
                self._state = self._scan(self._state, text)
                self._read = settled - self._prompt
            state = self._state
            if newest:
                state = self._scan(state, self._detok.peek([int(i) for i in newest]))
        except (ToolDialectError, LookupError, ValueError, TypeError) as exc:  # an id the tokenizer has not
            _log.warning("tooldialect: reasoning is taken to have ended: the tokenizer could not decode: %s", exc)
            self._detok = None
            return True
        return not state.reasoning

    def _decode(self, ids: Sequence[int]) -> str:
        detok = Detokenizer(self._tokenizer)
        try:
            return detok.feed([int(i) for i in ids]) + detok.close()
        except (ToolDialectError, LookupError, ValueError, TypeError):
            return ""  # a prompt the tokenizer cannot decode holds no marker we can read

    def _scan(self, state: _State, text: str) -> _State:
        """``state`` after ``text``: each marker switches it, in the order they come."""
        s = state.tail + text
        pos = 0
        reasoning, close = state.reasoning, state.close
        while True:
            found = self._next(s, pos, reasoning, close)
            if found is None:
                break
            key, end = found
            reasoning, close = (False, None) if reasoning else (True, key)
            pos = end
        return replace(state, reasoning=reasoning, close=close, tail=s[max(pos, len(s) - self._keep) :])

    def _next(self, s: str, pos: int, reasoning: bool, close: str | None) -> tuple[str, int] | None:
        """The first marker at or after ``pos`` that switches the state (the longest of
        those that begin there): its pair and where it ends."""
        best: tuple[int, int, str] | None = None
        pats: list[tuple[str, MarkerPattern]] = self._closes if reasoning else self._opens
        for key, pat in pats:
            if reasoning and close not in (_ANY, key):
                continue
            m = pat.regex.search(s, pos)
            if m is not None and m.end() > m.start() and (best is None or (m.start(), -m.end()) < best[:2]):
                best = (m.start(), -m.end(), key)
        return None if best is None else (best[2], -best[1])
