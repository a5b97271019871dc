"""Reading what a cut-off or broken block held: the calls a reader rebuilds from what the
parser had read when the end of the text cut a body off (their names, and for
``Policy.truncated="keep"`` their complete arguments), and the complete call objects of
a cut-off payload.  The base of :class:`tooldialect.transform.Reader`: what it asks of
the reader (``announce``, ``params``, ``keyword_arguments``, ``args_text``,
``read_payload``, ``_load``) is declared here and read there."""

from __future__ import annotations

import json
from typing import Any, Final

from mypy_extensions import mypyc_attr

from .argstream import member
from .compiled_grammar import EXTERNALS
from .jsonscan import JsonValueError
from .jsonspans import complete_elements_end, last_element, partial_object
from .lalr import Node, Tok
from .pyliteral import Refused
from .records import ARGUMENT_KEYS, ID_KEYS, NAME_KEYS, Issue, RawCall
from .tree import first_token, node_text

__all__ = ["Salvage"]

#: Brackets whose tokens a reduced call's value stack may still hold.
OPENERS: Final = ("(", "[", "{")


@mypyc_attr(allow_interpreted_subclasses=True)
class Salvage:
    """Calls rebuilt from a body the end of the text cut off."""

    __slots__ = ()
    family: str
    known: frozenset[str]
    keyed: bool

    # -- what it asks of the reader (transform.Reader reads them) --------------------------------

    def announce(self, node: Node) -> str | None:
        """The call name a node announces (None: it announces none)."""
        raise NotImplementedError

    def params(self, nodes: list[Node]) -> list[tuple[str, str, bool | None]]:
        """(key, text, string flag) of each text-valued parameter node."""
        raise NotImplementedError

    def keyword_arguments(self, items: list[Node], repairs: list[str] | None = None) -> dict[str, Any]:
        """The arguments keyword-argument nodes write, as literals."""
        raise NotImplementedError

    def args_text(self, text: str, value: Any, *, call_object: bool, elem: int = 0) -> str | None:
        """The JSON text of arguments read from ``text`` (None: ``value`` serialised)."""
        raise NotImplementedError

    def read_payload(
        self, text: str, base: int, *, bare: bool, keyed: bool = False
    ) -> tuple[list[RawCall], list[Issue]]:
        """The calls and issues of a JSON payload."""
        raise NotImplementedError

    def _load(self, text: str) -> tuple[Any, list[str]]:
        """JSON text read as a value, repaired where it must be (with the repairs made)."""
        raise NotImplementedError

    def salvage(self, values: list[Any]) -> tuple[str | None, RawCall | None]:
        """A call cut off by the end of the text, from what the parser had read: its name
        and, with its complete parameters only, the call (for ``Policy.truncated="keep"``)."""
        items: list[Any] = []
        for v in values:
            if isinstance(v, Node) and v.name.startswith("_"):
                items.extend(v.children)
            else:
                items.append(v)
        name = None
        start = None
        params: list[Node] = []
        kwargs: list[Node] = []  # keyword arguments of the call itself (bracket depth 1)
        depth = 0
        code = False
        name_start = None
        args: Tok | None = None
        call_id = None
        prev: Any = None
        for v in items:
            if isinstance(v, Node) and self.announce(v) is not None:
                # the call begins at the token before its name (its opener), when there is one
                opener = prev.start if isinstance(prev, Tok) and prev.start is not None else None
                name, start, params, args, call_id = (
                    self.announce(v),
                    opener if opener is not None else v.start,
                    [],
                    None,
                    None,
                )
                kwargs, depth, name_start, code = [], 0, v.start, False
                if v.name == "call_id":  # an id that names the call (Kimi's functions.NAME:IDX)
                    call_id = node_text(v).strip() or None
            elif isinstance(v, Node) and v.name == "param" and name is not None:
                params.append(v)
            elif isinstance(v, Tok) and v.value in OPENERS and name is not None:
                code = code or (depth == 0 and v.value == "(")  # name( : a call written as code
                depth += 1  # brackets still open (a closed one was reduced into a node)
            elif isinstance(v, Node) and v.name == "py_kwarg" and name is not None and depth == 1:
                kwargs.append(v)
            elif isinstance(v, Node) and v.name == "call_id":
                call_id = node_text(v).strip() or None
            elif name is not None and (
                (isinstance(v, Node) and v.name == "arguments") or (isinstance(v, Tok) and v.type in EXTERNALS)
            ):
                # JSON arguments read whole before the cut (a closer cut off after them)
                args = first_token(v) if isinstance(v, Node) else v
            prev = v
        if name is None:
            return None, None
        if kwargs or (code and not params):
            # a call written as code begins at its name, as its node does (``name(…)``)
            return name, self._salvaged_literals(name, kwargs, call_id, name_start or 0)
        if args is not None and not params:
            return name, self._salvaged_arguments(name, args, call_id, start or 0)
        end = params[-1].end if params else start
        raw = RawCall(name, None, None, call_id, (start or 0, end or 0), self.family, text_params=self.params(params))
        return name, raw

    def _salvaged_literals(self, name: str, kwargs: list[Node], call_id: str | None, start: int) -> RawCall:
        """A cut-off call with the keyword arguments that were complete and are literals,
        written as a stream sent them: one member per argument."""
        args: dict[str, Any] = {}
        parts: list[str] = []
        for kw in kwargs:
            try:
                ((key, value),) = self.keyword_arguments([kw]).items()
            except Refused:
                continue
            args[key] = value
            parts.append(member(key, value, not parts))
        end = kwargs[-1].end or start if kwargs else start
        return RawCall(name, args, "{" + "".join(parts) + "}", call_id, (start, end), self.family)

    def _salvaged_arguments(self, name: str, tok: Tok, call_id: str | None, start: int) -> RawCall | None:
        """A cut-off call whose JSON arguments were complete: the call with them, written
        as a stream sent them (the model's text, or its strict prefix and a tail)."""
        try:
            value, repairs = self._load(tok.value)
        except JsonValueError:
            return None
        if not isinstance(value, dict):
            return None
        text = tok.value if not repairs else self.args_text(tok.value, value, call_object=False)
        return RawCall(name, value, text, call_id, (start, tok.end or start), self.family)

    def name_end(self, values: list[Any]) -> int | None:
        """Where the name of the last call the parser announced ends (None: no name read)."""
        end = None
        for v in values:
            for item in v.children if isinstance(v, Node) and v.name.startswith("_") else (v,):
                if isinstance(item, Node) and self.announce(item) is not None:
                    end = item.end
        return end

    def cut_arguments(self, values: list[Any], text: str, end: int) -> tuple[str | None, RawCall | None]:
        """A call whose name the parser read and whose JSON arguments ``text`` were cut off by
        the end of the text (at ``end``): its name, and the call with the arguments whose
        values were complete."""
        name, raw = self.salvage(values)
        if name is None or raw is None:
            return None, None
        args = partial_object(text, 0)[0] if text.startswith("{") else {}
        args_json = self.args_text(text, args, call_object=False) if text.startswith("{") else "{}"
        return name, RawCall(name, args, args_json or "{}", raw.id, (raw.span[0], end), self.family)

    def cut_elements(self, text: str, base: int, *, bare: bool) -> tuple[list[RawCall], list[Issue]]:
        """The call objects of an array cut off by the end of the text that were complete
        before the cut: they stand, like the complete calls of any block cut off later."""
        end = complete_elements_end(text) if text.startswith("[") else 0
        if end <= 0:
            return [], []
        calls, issues = self.read_payload(text[:end] + "]", base, bare=bare, keyed=self.keyed)
        # the closing bracket was not written: spans end before it
        for call in calls:
            call.span = (call.span[0], min(call.span[1], base + end))
        for issue in (*issues, *(note for call in calls for note in call.notes)):
            if issue.span is not None:
                issue.span = (issue.span[0], min(issue.span[1], base + end))
        return calls, issues

    def completed(self, values: list[Any]) -> list[RawCall]:
        """Calls of a body read whole (all or nothing) that were complete before the end of
        the text cut the body off; none unless a family's body is read that way."""
        return []

    def cut_call(self, text: str, base: int, *, bare: bool) -> tuple[str | None, RawCall | None]:
        """For a payload cut off by the end of the text: the call's name when it was complete
        (and, for a bare payload, when the object says it is a call), and the call rebuilt
        from the arguments whose values were complete (for ``Policy.truncated="keep"``)."""
        start = elem = 0
        if text.startswith("["):
            start, elem = last_element(text)
            if start < 0:
                return None, None
        if text[start : start + 1] != "{":
            return None, None
        members, open_key, vstart = partial_object(text, start)
        holder = members
        name = next((members[k] for k in NAME_KEYS if isinstance(members.get(k), str)), None)
        if name is None and self.keyed:
            return self._cut_keyed(text, base, start, members, open_key, vstart)
        if not isinstance(name, str) or not name.strip():
            return None, None
        keys = [k for k in ARGUMENT_KEYS if k in holder] + ([open_key] if open_key in ARGUMENT_KEYS else [])
        if bare and not any(k in ("arguments", "parameters") for k in keys) and name.strip() not in self.known:
            return None, None
        call_id = next((str(members[k]) for k in ID_KEYS if isinstance(members.get(k), (str, int))), None)
        args: dict[str, Any] = {}
        complete = next((k for k in holder if k in ARGUMENT_KEYS), None)  # the first one written
        if complete is not None and isinstance(holder[complete], dict):
            args = holder[complete]
        elif open_key in ARGUMENT_KEYS and text[vstart : vstart + 1] == "{":
            args = partial_object(text, vstart)[0]
        args_json = self.args_text(text, args, call_object=True, elem=elem)
        raw = RawCall(
            name,
            args,
            args_json or json.dumps(args, ensure_ascii=False),
            call_id,
            (base + start, base + len(text)),
            self.family,
        )
        raw.elem = elem
        return name, raw

    def _cut_keyed(
        self, text: str, base: int, start: int, members: dict[str, Any], open_key: str | None, vstart: int
    ) -> tuple[str | None, RawCall | None]:
        """A cut-off ``{"NAME": {…}}`` object: its name, and its complete arguments."""
        if members and open_key is None and len(members) == 1:
            name, args = next(iter(members.items()))
        elif not members and open_key is not None and text[vstart : vstart + 1] == "{":
            # a key is a tool's name once its arguments object has begun (`"name":` alone may
            # be an ordinary call object's first key)
            name = open_key
            args = partial_object(text, vstart)[0]
        else:
            return None, None
        if not name.strip() or not isinstance(args, dict):
            return None, None
        raw = RawCall(
            name, args, json.dumps(args, ensure_ascii=False), None, (base + start, base + len(text)), self.family
        )
        return name, raw
