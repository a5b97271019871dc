"""The generic transformer: parse-tree nodes and JSON payloads become neutral call records.

It keys on rule names every grammar shares (``docs/authoring.md``):

* ``json_calls`` — a ``JSON`` token inside a marker, read as one or more call objects;
* ``bare_json_calls`` — the same for a payload with no marker around it (a reply that
  is JSON): an object counts only when it says it is a call (an ``arguments`` or
  ``parameters`` member, or a name the toolset offers);
* ``keyed_json_calls`` — a ``JSON`` token whose call objects are keyed by the tool name,
  ``{"NAME": {…arguments…}}`` (Apertus); an object with a ``name`` string reads as above;
* ``call`` — a call spelled by the grammar itself, with children ``name`` (the tool
  name), ``arguments`` (a ``JSON`` object token) and optionally ``call_id``;
* ``bare_call`` — the same with no marker before it (a reply that begins with the
  name): with a toolset it counts only when the toolset offers the name.

A ``call``'s arguments may also be spelled one by one: ``param`` nodes (a key and a text
value, typed later by the tool's schema) or Python keyword arguments (``py_kwarg`` nodes of
``grammars/_pyliteral.lark``, as children of the call or of its ``arguments`` node), whose
literal values :mod:`tooldialect.pyliteral` reads.  Every node name the reader consumes is
in :data:`READ_NODES`.

A record keeps the model's own text: the name as written, the arguments value and,
when the model wrote valid JSON, the exact bytes of its arguments object.  Binding to
a toolset happens later, in :mod:`tooldialect.binding`.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import sys
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from .argstream import args_prefix, finish_json, member
from .jsonscan import (
    JsonValueError,
    depth_exceeds,
    element_spans,
    loads_strict,
    member_spans,
    partial_object,
)
from .families import generation, reader_module, set_reads_lookup
from .grammar import EXTERNALS
from .lalr import Node, Tok
from .coerce import strip_template_newlines
from .pyliteral import Refused, keyword_argument
from .records import ARGUMENT_KEYS, Issue, RawCall, excerpt  # also transform's: readers import them here
from .repair import RepairFailed, repair_json

__all__ = [
    "ARGUMENT_KEYS",
    "CALL_NODES",
    "KEYED_RULE",
    "PICKED_NODES",
    "READ_NODES",
    "Issue",
    "RawCall",
    "Reader",
    "chain_items",
    "reader_class",
    "refusal",
]

_NAME_KEYS = ("name", "tool_name")
_ID_KEYS = ("id", "tool_call_id", "call_id")
#: The conventional rule whose payload holds objects keyed by the tool name.
KEYED_RULE = "keyed_json_calls"
#: The conventional rules :meth:`Reader.read` reads as calls (every other node is None).
CALL_NODES = frozenset({"json_calls", "bare_json_calls", KEYED_RULE, "call", "bare_call"})
#: The parts of a ``call`` the reader reads: its name, JSON arguments, id, text parameters
#: (``unpadded_value``: a value whose spelling writes no padding newlines).
_CALL_PARTS = frozenset(
    {"name", "arguments", "call_id", "param", "param_name", "param_value", "unpadded_value", "string_flag"}
)
#: One argument of a ``call`` written as code: a keyword argument (read; a stream sends it as
#: soon as it is reduced) or a positional value (refused: nothing says which parameter it is).
_LITERAL_ITEMS = ("py_kwarg", "py_value")
#: The nodes of a literal value (``_pyliteral.lark``), read by :func:`tooldialect.pyliteral.literal`.
_LITERAL_PARTS = frozenset(
    {"py_name", "py_string", "py_template", "py_number", "py_op", "py_list", "py_tuple", "py_dict", "py_entry"}
)
#: Every node name the generic reader reads, in one place (docs/authoring.md, "Rule names
#: the generic transformer reads"): the call rules and the parts it reads in them.  A
#: grammar whose call holds a node not named here is refused when it compiles
#: (``grammar.unread``): what it parsed would be dropped.  A name added here is read under a call.
READ_NODES: frozenset[str] = CALL_NODES | _CALL_PARTS | frozenset(_LITERAL_ITEMS) | _LITERAL_PARTS
#: The nodes whose children the reader picks by name, each with the children one of which
#: it must hold (a call without a ``name`` has no tool name).
PICKED_NODES: Mapping[str, frozenset[str]] = MappingProxyType(
    {"call": frozenset({"name"}), "bare_call": frozenset({"name"}), "param": frozenset({"param_name"})}
)
_OPENERS = ("(", "[", "{")  # brackets whose tokens a reduced call's value stack may still hold


class Reader:
    """Turns reduced nodes into records for one family; knows the toolset's names only.

    A family module that reads other nodes says which (``call_nodes``, ``read_nodes``,
    ``picked_nodes``, as :class:`tooldialect.grammar.NodeReads` describes them), so that a
    grammar that drops what it parses is refused when it compiles."""

    #: Nodes that spell one argument as a literal a stream may send as soon as it is
    #: reduced (see :meth:`literal_member`); ``param`` nodes stream without it.
    member_nodes: tuple[str, ...] = ("py_kwarg",)
    #: The nodes read as calls, every node read, and the nodes read child by child.
    call_nodes: frozenset[str] = CALL_NODES
    read_nodes: frozenset[str] = READ_NODES
    picked_nodes: Mapping[str, frozenset[str]] = PICKED_NODES

    __slots__ = ("family", "known", "max_depth", "quotes", "tools", "strip_newlines", "keyed", "coarse")

    def __init__(
        self,
        family: str,
        known: frozenset[str],
        max_depth: int,
        quotes: tuple[str, ...] = (),
        tools: Any = None,
        strip_newlines: bool = False,
        keyed: bool = False,
        coarse: bool = False,
    ) -> None:
        self.family = family
        self.known = known
        self.max_depth = max_depth
        self.quotes = quotes  # quote sentinels the grammar declares (QUOTE_... terminals)
        self.tools = tools  # the Toolset, for families that infer from it (or None)
        self.strip_newlines = strip_newlines  # the template writes a newline around each value
        self.keyed = keyed  # the grammar's payloads are keyed by the tool name (KEYED_RULE)
        # arguments stream member by member (Policy(truncated="keep") keeps complete members)
        self.coarse = coarse

    # -- hooks a family module may override -------------------------------------------------

    def announce(self, node: Node) -> str | None:
        """The tool name a node announces before its call completes (a ``name`` node)."""
        if node.name == "name":
            return _text(node).strip() or None
        return None

    def literal_member(self, node: Node, context: list[Any]) -> tuple[str, Any] | None:
        """One argument of a call being read, as (key, JSON value), for a node named in
        ``member_nodes`` (``context``: the parser's value stack before it); None when it
        is not an argument the call will keep: a keyword argument of a call nested in a
        value, or one whose value is not a literal."""
        depth = 0
        for v in reversed(context):
            if isinstance(v, Node) and v.name == "name":
                break
            if isinstance(v, Tok) and v.value in _OPENERS:
                depth += 1  # brackets still open (a closed one was reduced into a node)
        if depth != 1:
            return None
        try:
            ((key, value),) = self.keyword_arguments([node]).items()
        except Refused:
            return None
        return key, value

    def stop_ok(self, terminal: str, text: str, end: int, tool: str | None, eof: bool) -> bool | None:
        """Whether a marker may end a raw text value here (None: more text is needed)."""
        return True

    def read(self, node: Node) -> tuple[list[RawCall], list[Issue]] | None:
        """Records and issues for a conventional node, or None for any other node."""
        if node.name not in CALL_NODES:  # most nodes: one set lookup
            return None
        if node.name in ("json_calls", "bare_json_calls", KEYED_RULE):
            tok = _first_token(node)
            if tok is None:
                return [], []
            bare = node.name == "bare_json_calls"
            calls, issues = self.read_payload(tok.value, tok.start, bare=bare, keyed=node.name == KEYED_RULE)
            if not calls and not issues and not bare:
                issues.append(
                    Issue(
                        "malformed_block",
                        {"reason": "the payload holds no call", "excerpt": excerpt(tok.value)},
                        (tok.start, tok.end),
                        "a JSON payload that is not a call object",
                    )
                )
            return calls, issues
        if node.name == "call":
            return self.read_call(node)
        if node.name == "bare_call":
            # a call with no marker before it (a reply that begins with NAME …): with a
            # toolset it counts only when the toolset offers that name
            calls, issues = self.read_call(node)
            if self.known and any(c.name.strip() not in self.known for c in calls):
                return [], []
            return calls, issues
        return None

    # -- grammar-spelled calls ------------------------------------------------------------

    def read_call(self, node: Node) -> tuple[list[RawCall], list[Issue]]:
        name_node = node.find("name")
        args_node = node.find("arguments")
        id_node = node.find("call_id")
        name = _text(name_node).strip() if name_node is not None else ""
        span = (node.start or 0, node.end or 0)
        if not name:
            return [], [Issue("malformed_block", {"reason": "call without a name"}, span, "call without a name")]
        call_id = _text(id_node).strip() or None if id_node is not None else None
        params = [c for c in node.children if isinstance(c, Node) and c.name == "param"]
        if params:
            return [RawCall(name, None, None, call_id, span, self.family, text_params=self.params(params))], []
        items = _literal_items(node)
        if items:
            return self.literal_call(name, items, call_id, span)
        if args_node is None:
            return [RawCall(name, {}, "{}", call_id, span, self.family)], []
        tok = _first_token(args_node) if isinstance(args_node, Node) else args_node
        if tok is None or not isinstance(tok, Tok):
            return [RawCall(name, {}, "{}", call_id, span, self.family)], []
        try:
            value, repairs = self._load(tok.value)
        except JsonValueError as exc:
            issue = _invalid_json(tok, str(exc), name)
            issue.span = (min(span[0], tok.start or span[0]), max(span[1], tok.end or span[1]))  # the call, name included
            return [], [issue]
        notes = [_repaired(name, repairs, span)] if repairs else []
        raw = tok.value if not repairs else self.args_text(tok.value, value, call_object=False)
        return self._finish(name, value, raw, call_id, span, notes)

    def literal_call(
        self, name: str, items: list[Node], call_id: str | None, span: tuple[int, int]
    ) -> tuple[list[RawCall], list[Issue]]:
        """A call whose arguments are written as code: the call, or no call and the reason."""
        try:
            args = self.keyword_arguments(items)
        except Refused as refused:
            return [], [refusal(name, refused, span, self.max_depth, "; the call is not returned")]
        return [RawCall(name, args, json.dumps(args, ensure_ascii=False), call_id, span, self.family)], []

    def keyword_arguments(self, items: list[Node]) -> dict[str, Any]:
        """Keyword arguments (``py_kwarg`` nodes) to a JSON object; a positional argument or
        a repeated keyword raises :class:`~tooldialect.pyliteral.Refused`."""
        args: dict[str, Any] = {}
        for item in items:
            if item.name != "py_kwarg":
                raise Refused("a positional argument (calls take keyword arguments only)")
            name, value = keyword_argument(item, self.max_depth)
            if name in args:
                raise Refused(f"the keyword argument {name!r} is repeated")
            args[name] = value
        return args

    def args_text(self, text: str, value: Any, *, call_object: bool, elem: int = 0) -> str | None:
        """``arguments_json`` for arguments a stream sends as they arrive: the model's
        strict prefix of them, finished to say ``value`` (see argstream.py); None when
        ``value`` is not an object."""
        if not isinstance(value, dict):
            return None
        keys = ARGUMENT_KEYS if call_object else ()
        prefix = args_prefix(text, keys=keys, coarse=self.coarse, elem=elem, max_depth=self.max_depth)
        tail = finish_json(prefix, value)
        return prefix + tail if tail is not None else json.dumps(value, ensure_ascii=False)

    def params(self, nodes: list[Node]) -> list[tuple[str, str, bool | None]]:
        """(key, text, string flag) of ``param`` nodes: ``param_name``, ``param_value`` (or
        ``unpadded_value``, which ``value newlines: strip`` leaves whole) and an optional
        ``string_flag`` (``true``/``false``, DSML's string attribute)."""
        out = []
        for p in nodes:
            key = _text(p.find("param_name")).strip()
            node = p.find("param_value")
            if node is None:  # a spelling whose template writes no padding newlines
                value = _text(p.find("unpadded_value"))
            else:
                value = _text(node)
                if self.strip_newlines:
                    value = strip_template_newlines(value)
            flag_node = p.find("string_flag")
            flag = None
            if flag_node is not None:
                flag = _text(flag_node).strip().lower() == "true"
            out.append((key, value, flag))
        return out

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
                name, start, params, args, call_id = self.announce(v), opener if opener is not None else v.start, [], None, None
                kwargs, depth, name_start, code = [], 0, v.start, False
                if v.name == "call_id":  # an id that names the call (Kimi's functions.NAME:IDX)
                    call_id = _text(v).strip() or None
            elif isinstance(v, Node) and v.name == "param" and name is not None:
                params.append(v)
            elif isinstance(v, Tok) and v.value in _OPENERS and name is not None:
                code = code or depth == 0 and v.value == "("  # name( : a call written as code
                depth += 1  # brackets still open (a closed one was reduced into a node)
            elif isinstance(v, Node) and v.name == "py_kwarg" and name is not None and depth == 1:
                kwargs.append(v)
            elif isinstance(v, Node) and v.name == "call_id":
                call_id = _text(v).strip() or None
            elif name is not None and (isinstance(v, Node) and v.name == "arguments" or isinstance(v, Tok) and v.type in EXTERNALS):
                # JSON arguments read whole before the cut (a closer cut off after them)
                args = _first_token(v) if isinstance(v, Node) else v
            prev = v
        if name is None:
            return None, None
        if kwargs or code and not params:
            # a call written as code begins at its name, as its node does (``name(…)``)
            return name, self._salvaged_literals(name, kwargs, call_id, name_start or 0)
        if args is not None and not params:
            return name, self._salvaged_arguments(name, args, call_id, start or 0)
        end = params[-1].end if params else start
        raw = RawCall(
            name, None, None, call_id, (start or 0, end or 0), self.family, text_params=self.params(params)
        )
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

    # -- JSON payloads ----------------------------------------------------------------------

    def read_payload(
        self, text: str, base: int, *, bare: bool, keyed: bool = False
    ) -> tuple[list[RawCall], list[Issue]]:
        try:
            value, repairs = self._load(text)
        except JsonValueError as exc:
            tok = Tok("JSON", text, base, base + len(text))
            return [], [_invalid_json(tok, str(exc), None)]
        calls: list[RawCall] = []
        issues: list[Issue] = []
        skipped: list[tuple[int, int]] = []
        # spans inside the payload are known only when the model's text was strict JSON
        exact = None if repairs else text
        # a payload that is one call object, or an array of them, streams (RawCall.elem)
        places = {id(v): i for i, v in enumerate(value)} if isinstance(value, list) else {}
        for obj, start, end in self._call_objects(value, exact, 0, len(text)):
            elem = 0 if obj is value else places.get(id(obj), -1)
            got, notes = (
                self._read_object(obj, exact, start, end, base, bare, keyed, elem, text) if isinstance(obj, dict) else ([], [])
            )
            for item in (*got, *notes):
                item.elem = elem
            if not got and not notes:
                skipped.append((start, end, elem))
            for call in got:
                if repairs:
                    call.notes.insert(0, _repaired(call.name, repairs, call.span))
            calls.extend(got)
            issues.extend(notes)
        if calls:
            # an element that is not a call, beside ones that are, is reported, not dropped
            for start, end, elem in skipped:
                issues.append(
                    Issue(
                        "malformed_block",
                        {"reason": "an element that is not a call object", "excerpt": excerpt(text[start:end])},
                        (base + start, base + end),
                        "an element of the payload is not a call object; ignored",
                        elem,
                    )
                )
            issues.sort(key=lambda i: i.span[0] if i.span else 0)
        return calls, issues

    def _load(self, text: str) -> tuple[Any, list[str]]:
        """Strict JSON, else the repair ladder: the value and the repairs made."""
        if depth_exceeds(text, self.max_depth):
            raise JsonValueError(f"nesting deeper than {self.max_depth}")
        try:
            return loads_strict(text), []
        except JsonValueError as strict:
            try:
                return repair_json(text, quotes=self.quotes, max_depth=self.max_depth)
            except RepairFailed:
                raise strict from None

    def _call_objects(self, value: Any, text: str | None, start: int, end: int):
        """Yield (element, start, end) for every candidate call object in a payload value.

        ``text`` is the payload when it is strict JSON (for exact spans), else None (every
        element then spans the whole payload)."""
        if isinstance(value, list):
            spans = _element_spans(text, start) if text is not None else [(start, end)] * len(value)
            yield from ((item, s, e) for item, (s, e) in zip(value, spans))
            return
        if not isinstance(value, dict):
            return
        wrapped = value.get("tool_calls")
        if isinstance(wrapped, list) and wrapped:
            inner = _member_span(text, start, "tool_calls") if text is not None else (start, end)
            if inner is not None:
                yield from self._call_objects(wrapped, text, inner[0], inner[1])
                return
        single = value.get("tool_call")
        if isinstance(single, dict) and len(value) == 1:
            inner = _member_span(text, start, "tool_call") if text is not None else (start, end)
            if inner is not None:
                yield single, inner[0], inner[1]
                return
        yield value, start, end

    def _read_object(
        self,
        obj: Mapping[str, Any],
        text: str | None,
        start: int,
        end: int,
        base: int,
        bare: bool,
        keyed: bool = False,
        elem: int = -1,
        payload: str = "",
    ) -> tuple[list[RawCall], list[Issue]]:
        span = (base + start, base + end)
        if keyed and not isinstance(obj.get("name"), str):
            # {"NAME": {…arguments…}}: one member, the tool name its key
            if len(obj) != 1:
                return [], []
            name, value = next(iter(obj.items()))
            if not name.strip() or not isinstance(value, (dict, str)):
                return [], []
            raw = _member_span(text, start, name) if text is not None else None
            return self._finish(name, value, text[raw[0] : raw[1]] if raw else None, None, span, [])
        fn = obj.get("function")
        holder: Mapping[str, Any] = obj
        holder_start = start
        if isinstance(fn, dict) and isinstance(fn.get("name"), str) and "arguments" in fn:
            holder = fn
            holder_start = _member_span(text, start, "function")[0] if text is not None else start
            name = fn["name"]
        else:
            name = next((obj[k] for k in _NAME_KEYS if isinstance(obj.get(k), str)), None)
        if name is None or not name.strip():
            return [], []
        key = next((k for k in holder if k in ARGUMENT_KEYS), None)  # the first one written
        if _looks_like_tool_definition(holder, key):
            return [], []
        if bare and holder is obj and key not in ("arguments", "parameters") and name.strip() not in self.known:
            return [], []
        call_id = next((obj[k] for k in _ID_KEYS if isinstance(obj.get(k), (str, int)) and obj.get(k) != ""), None)
        call_id = str(call_id) if call_id is not None and not isinstance(call_id, bool) else None
        if key is None:
            return [RawCall(name, {}, "{}", call_id, span, self.family)], []
        raw = None
        if elem >= 0 and holder is obj and text is None:
            # repaired: the model's strict prefix and a tail (what a stream sent, then the rest)
            raw = self.args_text(payload, obj[key], call_object=True, elem=elem)
        elif text is not None:
            args_span = _member_span(text, holder_start, key)
            if args_span is not None:
                raw = text[args_span[0] : args_span[1]]
        return self._finish(name, holder[key], raw, call_id, span, [])

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
        end = _complete_elements_end(text) if text.startswith("[") else 0
        if end <= 0:
            return [], []
        calls, issues = self.read_payload(text[:end] + "]", base, bare=bare, keyed=self.keyed)
        # the closing bracket was not written: spans end before it
        for item in (*calls, *issues, *(note for call in calls for note in call.notes)):
            if item.span is not None:
                item.span = (item.span[0], min(item.span[1], base + end))
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
            start, elem = _last_element(text)
            if start < 0:
                return None, None
        if text[start : start + 1] != "{":
            return None, None
        members, open_key, vstart = partial_object(text, start)
        holder = members
        name = next((members[k] for k in _NAME_KEYS if isinstance(members.get(k), str)), None)
        if name is None and self.keyed:
            return self._cut_keyed(text, base, start, members, open_key, vstart)
        if not isinstance(name, str) or not name.strip():
            return None, None
        keys = [k for k in ARGUMENT_KEYS if k in holder] + ([open_key] if open_key in ARGUMENT_KEYS else [])
        if bare and not any(k in ("arguments", "parameters") for k in keys) and name.strip() not in self.known:
            return None, None
        call_id = next((str(members[k]) for k in _ID_KEYS if isinstance(members.get(k), (str, int))), None)
        args: dict[str, Any] = {}
        complete = next((k for k in holder if k in ARGUMENT_KEYS), None)  # the first one written
        if complete is not None and isinstance(holder[complete], dict):
            args = holder[complete]
        elif open_key in ARGUMENT_KEYS and text[vstart : vstart + 1] == "{":
            args = partial_object(text, vstart)[0]
        args_json = self.args_text(text, args, call_object=True, elem=elem)
        raw = RawCall(
            name, args, args_json or json.dumps(args, ensure_ascii=False), call_id, (base + start, base + len(text)), self.family
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
        raw = RawCall(name, args, json.dumps(args, ensure_ascii=False), None, (base + start, base + len(text)), self.family)
        return name, raw

    def _finish(
        self, name: str, value: Any, raw: str | None, call_id: str | None, span: tuple[int, int], notes: list[Issue]
    ) -> tuple[list[RawCall], list[Issue]]:
        """Check the arguments' shape: an object, or a JSON string holding one (decoded once)."""
        if isinstance(value, str):
            stripped = value.strip()
            if not stripped:
                return [RawCall(name, {}, "{}", call_id, span, self.family, notes)], []
            try:
                decoded, repairs = self._load(stripped)
            except JsonValueError:
                return [], [_not_object(name, value, span)]
            if isinstance(decoded, dict):
                if repairs:
                    notes = notes + [_repaired(name, repairs, span)]
                text = stripped if not repairs else json.dumps(decoded, ensure_ascii=False)
                return [RawCall(name, decoded, text, call_id, span, self.family, notes)], []
            if isinstance(decoded, str):
                try:
                    twice = loads_strict(decoded.strip())
                except JsonValueError:
                    twice = None
                if isinstance(twice, dict):
                    return [], [_invalid_shape(name, "arguments are a JSON string encoded twice", value, span)]
            return [], [_not_object(name, value, span)]
        if isinstance(value, dict):
            text = raw if raw is not None else json.dumps(value, ensure_ascii=False)
            return [RawCall(name, value, text, call_id, span, self.family, notes)], []
        return [], [_not_object(name, value, span)]


def _repaired(name: str, repairs: list[str], span: tuple[int, int]) -> Issue:
    return Issue(
        "arguments_repaired",
        {"name": name, "repairs": list(repairs)},
        span,
        f"{name}: arguments repaired ({', '.join(repairs)})",
    )


def _invalid_shape(name: str, reason: str, value: Any, span: tuple[int, int]) -> Issue:
    return Issue(
        "arguments_invalid",
        {"name": name, "reason": reason, "excerpt": excerpt(str(value))},
        span,
        f"{name}: {reason}; the call is not returned",
    )


# -- spans inside strict JSON, each value crossed in one step --------------------------------
# A payload's spans are looked for only in text json.loads read strictly (a payload that
# needed no repair), where json's own scanner finds where each value ends in C; the
# jsonscan walks, which also take text that is not strict, answer if it ever does not.

_scan_value = json.JSONDecoder().scan_once  # (value, end) of the JSON value at an offset
_WS = re.compile(r"[ \t\r\n]*")
_COLON = re.compile(r"[ \t\r\n]*:[ \t\r\n]*")
_COMMA = re.compile(r"[ \t\r\n]*(?:,[ \t\r\n]*)?")


def _member_span(text: str, start: int, key: str) -> tuple[int, int] | None:
    """``member_spans(text, start).get(key)``: the span of the value of member ``key`` of
    the object at ``start`` (its last, the one json.loads keeps)."""
    try:
        found = None
        pos = _WS.match(text, start + 1).end()
        while text[pos] == '"':
            name, pos = _scan_value(text, pos)
            pos = _COLON.match(text, pos).end()
            end = _scan_value(text, pos)[1]
            if name == key:
                found = (pos, end)
            pos = _COMMA.match(text, end).end()
        return found
    except (StopIteration, ValueError, RecursionError, IndexError):  # pragma: no cover - not strict JSON
        return member_spans(text, start).get(key)


def _element_spans(text: str, start: int) -> list[tuple[int, int]]:
    """``element_spans(text, start)``: the spans of the elements of the array at ``start``."""
    try:
        spans = []
        pos = _WS.match(text, start + 1).end()
        while text[pos] != "]":
            end = _scan_value(text, pos)[1]
            spans.append((pos, end))
            pos = _COMMA.match(text, end).end()
        return spans
    except (StopIteration, ValueError, RecursionError, IndexError):  # pragma: no cover - not strict JSON
        return element_spans(text, start)


def _last_element(text: str) -> tuple[int, int]:
    """Offset and index of the element of a cut-off array that the cut fell in (offset
    -1 when unclear)."""
    _done, start, index = _elements(text)
    return start, index


def _complete_elements_end(text: str) -> int:
    """Where the last complete element of a cut-off array ends (0 when none is complete)."""
    return _elements(text)[0]


def _elements(text: str) -> tuple[int, int, int]:
    """One walk over the elements of a cut-off array: where the last complete one ends (0
    when none is), and the offset (-1 when unclear) and index of the one the cut fell in."""
    from .jsonscan import _complete_value_end

    pos, n, index, done = 1, len(text), 0, 0
    while True:
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if pos >= n:
            return done, -1, index
        end = _complete_value_end(text, pos)
        if end is None:
            return done, pos, index
        done = pos = end
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if pos >= n or text[pos] != ",":
            return done, -1, index
        pos += 1
        index += 1


def _looks_like_tool_definition(holder: Mapping[str, Any], key: str | None) -> bool:
    """A catalogue entry echoed back ({"name", "description", "parameters": <schema>}) is not a call."""
    if key != "parameters" or "description" not in holder:
        return False
    params = holder.get("parameters")
    return isinstance(params, dict) and params.get("type") == "object" and "properties" in params


def _not_object(name: str, value: Any, span: tuple[int, int]) -> Issue:
    kind = type(value).__name__ if value is not None else "null"
    kind = {"str": "string", "list": "array", "int": "number", "float": "number", "bool": "boolean"}.get(kind, kind)
    return _invalid_shape(name, f"arguments is a {kind}, not a JSON object", value, span)


def _invalid_json(tok: Tok, reason: str, name: str | None) -> Issue:
    detail: dict[str, Any] = {"reason": f"not valid JSON: {reason}", "excerpt": excerpt(tok.value)}
    if name:
        detail["name"] = name
    return Issue("malformed_block", detail, (tok.start, tok.end), f"payload is not valid JSON ({reason})")


def refusal(name: str, refused: Refused, span: tuple[int, int], max_depth: int, more: str) -> Issue:
    """The diagnostic of a call whose code arguments were refused (``more`` ends its message)."""
    detail: dict[str, Any] = {"name": name, "reason": refused.reason}
    if refused.kind == "limit_exceeded":
        detail.update(limit="max_depth", value=max_depth)
    return Issue(refused.kind, detail, span, f"{name}: {refused.reason}{more}")


def _literal_items(node: Node) -> list[Node]:
    """The arguments of a call written as code: its ``py_kwarg`` and ``py_value`` children,
    or those of its ``arguments`` child."""
    items = [c for c in node.children if isinstance(c, Node) and c.name in _LITERAL_ITEMS]
    if items or node.name == "arguments":
        return items
    args = next((c for c in node.children if isinstance(c, Node) and c.name == "arguments"), None)
    return _literal_items(args) if args is not None else []


def chain_items(node: Node, chain: str, item: str) -> list[Node]:
    """The ``item`` nodes of a body whose ``chain`` rule nests to the left, in source order
    (walked without recursion)."""
    out: list[Node] = []
    link: Node | None = next((c for c in node.children if isinstance(c, Node) and c.name == chain), None)
    while link is not None:
        kids = [c for c in link.children if isinstance(c, Node)]
        out.extend(reversed([c for c in kids if c.name == item]))
        link = next((c for c in kids if c.name == chain), None)
    out.reverse()
    return out


def _first_token(node: Node) -> Tok | None:
    """The first scanned (JSON) token under a node."""
    for child in node.children:
        if isinstance(child, Tok) and child.type in EXTERNALS:
            return child
        if isinstance(child, Node):
            found = _first_token(child)
            if found is not None:
                return found
    return None


def _text(item: Any) -> str:
    if isinstance(item, Tok):
        return item.value
    if isinstance(item, Node):
        return "".join(_text(c) for c in item.children)
    return ""


_READERS: dict[str, type[Reader]] = {}
_readers_generation = -1  # the registry generation the cached readers were found under


def reader_class(family: str) -> type[Reader]:
    """The reader for a family: ``Reader`` from ``tooldialect.families.<family>`` (for a
    plugin family from an entry point, ``<package>.<family>``) when that module exists (a
    family with real quirks), else the generic one."""
    global _readers_generation
    current = generation()
    if current != _readers_generation:
        # the set of families changed (a directory registered, a reload): a name may now be
        # another source's family, with another module
        _READERS.clear()
        _readers_generation = current
    cls = _READERS.get(family)
    if cls is None:
        cls = Reader
        name = reader_module(family)
        if name is not None and (name in sys.modules or importlib.util.find_spec(name) is not None):
            module = importlib.import_module(name)
            custom = getattr(module, "Reader", None)
            if isinstance(custom, type) and issubclass(custom, Reader):
                cls = custom
        _READERS[family] = cls
    return cls


# The registry checks what a family's grammar builds against what its reader reads when
# it compiles the grammar; it sits below this module, so it is handed the lookup.
set_reads_lookup(reader_class)
