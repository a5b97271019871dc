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
import sys
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Final, cast

from mypy_extensions import mypyc_attr

from .argstream import args_prefix, finish_json
from .coerce import strip_template_newlines
from .compiled_grammar import CALL_PAYLOADS, NodeReads
from .families import generation, reader_module, set_reads_lookup
from .jsonscan import JsonValueError, depth_exceeds, loads_strict
from .jsonspans import Spans, member_span, strict_element_spans
from .lalr import Node, Tok
from .pyliteral import Refused, keyword_argument
from .reader_issues import invalid_json, refusal, unread_payload
from .records import (  # also transform's: readers import them here
    ARGUMENT_KEYS,
    NAME_KEYS,
    Issue,
    RawCall,
    call_id_of,
    excerpt,
    is_tool_definition,
    not_object_issue,
    not_returned_issue,
    repaired_issue,
)
from .repair import RepairFailed, repair_json
from .salvage import OPENERS, Salvage
from .tree import LITERAL_ITEMS, LITERAL_KEY, call_parts, chain_items, first_token, literal_items, node_text

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
    "reader_in",
    "refusal",
]

#: The conventional rule whose payload holds objects keyed by the tool name.
KEYED_RULE: Final = "keyed_json_calls"
#: payloads a reader keeps decoded for its next loads (a block's, found before it is read)
_DECODED_KEPT: Final = 32
#: The conventional rules :meth:`Reader.read` reads as calls (every other node is None).
CALL_NODES: Final = CALL_PAYLOADS | {"call", "bare_call"}
#: The parts of a ``call`` the reader reads: its name, JSON arguments, id, text parameters
#: (``unpadded_value``: a value whose spelling writes no padding newlines).
_CALL_PARTS: Final = frozenset(
    {"name", "arguments", "call_id", "param", "param_name", "param_value", "unpadded_value", "string_flag"}
)
#: The nodes of a literal value (``_pyliteral.lark``), read by :func:`tooldialect.pyliteral.literal`.
_LITERAL_PARTS: Final = frozenset(
    {"py_name", "py_string", "py_template", "py_number", "py_op", "py_list", "py_tuple", "py_dict", "py_entry"}
)
#: Every node name the generic reader reads, in one place (docs/authoring.md, "Rule names
#: the generic transformer reads"): the call rules and the parts it reads in them.  A
#: grammar whose call holds a node not named here is refused when it compiles
#: (``grammar.unread``): what it parsed would be dropped.  A name added here is read under a call.
READ_NODES: Final[frozenset[str]] = CALL_NODES | _CALL_PARTS | frozenset(LITERAL_ITEMS) | _LITERAL_PARTS
#: The nodes whose children the reader picks by name, each with the children one of which
#: it must hold (a call without a ``name`` has no tool name).
PICKED_NODES: Final[Mapping[str, frozenset[str]]] = MappingProxyType(
    {"call": frozenset({"name"}), "bare_call": frozenset({"name"}), "param": frozenset({"param_name"})}
)


@mypyc_attr(allow_interpreted_subclasses=True)
class Reader(Salvage):
    """Turns reduced nodes into records for one family; knows the toolset's names only.

    A family module that reads other nodes says which (``call_nodes``, ``read_nodes``,
    ``picked_nodes``, as :class:`tooldialect.grammar.NodeReads` describes them), so that a
    grammar that drops what it parses is refused when it compiles."""

    #: Nodes that spell one argument as a literal a stream may send as soon as it is
    #: reduced (see :meth:`literal_member`); ``param`` nodes stream without it.
    member_nodes: ClassVar[tuple[str, ...]] = ("py_kwarg",)
    #: The nodes read as calls, every node read, and the nodes read child by child.
    call_nodes: ClassVar[frozenset[str]] = CALL_NODES
    read_nodes: ClassVar[frozenset[str]] = READ_NODES
    picked_nodes: ClassVar[Mapping[str, frozenset[str]]] = PICKED_NODES
    #: The nodes :meth:`announce` may read a tool name from.
    announce_nodes: ClassVar[frozenset[str]] = frozenset({"name"})
    #: Every node a candidate hands to this reader (set per class: ``_reacts_to``).
    reacts_to: ClassVar[frozenset[str]]
    #: The stops whose verdict (:meth:`stop_ok`) reads ``tool``, the tool being called: a
    #: whole block read in one step does not know it, and leaves such a stop undecided.
    tool_stops: ClassVar[frozenset[str]] = frozenset()

    __slots__ = ("coarse", "family", "keyed", "known", "max_depth", "quotes", "strip_newlines", "tools",
                 "_decoded", "reacting", "announcing", "members")  # fmt: skip

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.reacts_to = _reacts_to(cls)

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
        # (text, value, spans): payloads decoded as they were found, and where their members lie
        self._decoded: list[tuple[str, Any, Spans | None]] = []
        # the class's node sets on the instance (asked per node: read natively when compiled)
        self.reacting: frozenset[str] = type(self).reacts_to
        self.announcing: frozenset[str] = type(self).announce_nodes
        self.members: tuple[str, ...] = type(self).member_nodes

    # -- hooks a family module may override -------------------------------------------------

    def announce(self, node: Node) -> str | None:
        """The tool name a node announces before its call completes (a ``name`` node; a
        reader that announces from other nodes names them in ``announce_nodes``)."""
        if node.name == "name":
            return node_text(node).strip() or None
        return None

    def literal_member(self, node: Node, context: list[Any]) -> tuple[str, Any] | None:
        """One argument of a call being read, as (key, JSON value), for a node named in
        ``member_nodes`` (``context``: the parser's value stack before it); None when it
        is not an argument the call will keep: a keyword argument of a call nested in a
        value, or one whose value is not a literal."""
        depth = 0
        for i in range(len(context) - 1, -1, -1):  # (the newest first)
            v = context[i]
            if isinstance(v, Node) and v.name == "name":
                break
            if isinstance(v, Tok) and v.value in OPENERS:
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
        if node.name in CALL_PAYLOADS:
            tok = first_token(node)
            if tok is None:
                return [], unread_payload(node, None, (node.start or 0, node.end or 0))
            bare = node.name == "bare_json_calls"
            calls, issues = self.read_payload(tok.value, tok.start, bare=bare, keyed=node.name == KEYED_RULE)
            if not calls and not issues and not bare:
                issues.append(
                    Issue(
                        "malformed_block",
                        # the grammar read it whole: it is the payload that is no call
                        {"reason": "the payload holds no call", "excerpt": excerpt(tok.value), "at": tok.start},
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
        parts = call_parts(node)
        name_node = parts.get("name")
        return self.call_named(node, parts, node_text(name_node).strip() if name_node is not None else "")

    def call_named(self, node: Node, parts: dict[str, Any], name: str) -> tuple[list[RawCall], list[Issue]]:
        """``read_call`` of a call whose parts (``call_parts``) are read and whose name is
        known (a family may find it elsewhere than in a ``name`` node: Kimi K2's id)."""
        args_node, id_node = parts.get("arguments"), parts.get("call_id")
        span = (node.start or 0, node.end or 0)
        if not name:
            detail = {"reason": "call without a name", "at": span[0]}
            return [], [Issue("malformed_block", detail, span, "call without a name")]
        call_id = node_text(id_node).strip() or None if id_node is not None else None
        params = parts.get("param")
        if params:
            return [RawCall(name, None, None, call_id, span, self.family, text_params=self.params(params))], []
        items = parts.get(LITERAL_KEY)
        if not items and type(args_node) is Node and node.name != "arguments":
            items = literal_items(args_node)  # the arguments written as code inside an ``arguments`` node
        if items:
            return self.literal_call(name, items, call_id, span)
        if args_node is None:
            return [RawCall(name, {}, "{}", call_id, span, self.family)], []
        tok = first_token(args_node) if isinstance(args_node, Node) else args_node
        if tok is None or not isinstance(tok, Tok):
            dropped = unread_payload(args_node, name, span)
            return ([], dropped) if dropped else ([RawCall(name, {}, "{}", call_id, span, self.family)], [])
        try:
            value, repairs = self._load(tok.value)
        except JsonValueError as exc:
            issue = invalid_json(tok, exc, name)
            issue.span = (
                min(span[0], tok.start or span[0]),
                max(span[1], tok.end or span[1]),
            )  # the call, name included
            return [], [issue]
        notes = [repaired_issue(name, repairs, span)] if repairs else []
        raw = tok.value if not repairs else self.args_text(tok.value, value, call_object=False)
        return self._finish(name, value, raw, call_id, span, notes)

    def literal_call(
        self, name: str, items: list[Node], call_id: str | None, span: tuple[int, int]
    ) -> tuple[list[RawCall], list[Issue]]:
        """A call whose arguments are written as code: the call, or no call and the reason."""
        repairs: list[str] = []
        try:
            args = self.keyword_arguments(items, repairs)
        except Refused as refused:
            return [], [refusal(name, refused, span, self.max_depth, "; the call is not returned")]
        call = RawCall(name, args, json.dumps(args, ensure_ascii=False), call_id, span, self.family)
        if repairs:
            call.notes.append(repaired_issue(name, repairs, span))
        return [call], []

    def keyword_arguments(self, items: list[Node], repairs: list[str] | None = None) -> dict[str, Any]:
        """Keyword arguments (``py_kwarg`` nodes) to a JSON object; a positional argument or
        a repeated keyword raises :class:`~tooldialect.pyliteral.Refused`.  A raw line break
        in a one-line string is read as written (LFM2.5's template writes values as they
        are), and ``repairs`` says so."""
        args: dict[str, Any] = {}
        notes: list[str] = [] if repairs is None else repairs
        for item in items:
            if item.name != "py_kwarg":
                raise Refused("a positional argument (calls take keyword arguments only)")
            name, value = keyword_argument(item, self.max_depth, notes=notes)
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
        ``string_flag`` (``true``/``false``, DSML's string attribute).  Each node's reading
        is kept in its ``data``: a parameter a stream sent is not read again with its call."""
        out = []
        for p in nodes:
            if p.data is None:
                p.data = self._param(p)
            out.append(p.data)
        return out

    def _param(self, p: Node) -> tuple[str, str, bool | None]:
        key = node_text(p.find("param_name")).strip()
        node = p.find("param_value")
        if node is None:  # a spelling whose template writes no padding newlines
            value = node_text(p.find("unpadded_value"))
        else:
            value = node_text(node)
            if self.strip_newlines:
                value = strip_template_newlines(value)
        flag_node = p.find("string_flag")
        flag = None if flag_node is None else node_text(flag_node).strip().lower() == "true"
        return key, value, flag

    # -- JSON payloads ----------------------------------------------------------------------

    def read_payload(
        self, text: str, base: int, *, bare: bool, keyed: bool = False
    ) -> tuple[list[RawCall], list[Issue]]:
        try:
            value, repairs, spans = self._load_spans(text)
        except JsonValueError as exc:
            tok = Tok("JSON", text, base, base + len(text))
            return [], [invalid_json(tok, exc, None)]
        calls: list[RawCall] = []
        issues: list[Issue] = []
        skipped: list[tuple[int, int, int]] = []
        # spans inside the payload are known only when the model's text was strict JSON
        exact = None if repairs else text
        # a payload that is one call object, or an array of them, streams (RawCall.elem)
        places = {id(v): i for i, v in enumerate(value)} if isinstance(value, list) else {}
        for obj, start, end in self._call_objects(value, exact, spans, 0, len(text), []):
            elem = 0 if obj is value else places.get(id(obj), -1)
            got, notes = (
                self._read_object(obj, exact, spans, start, end, base, bare, keyed, elem, text)
                if isinstance(obj, dict)
                else ([], [])
            )
            for one in got:
                one.elem = elem
            for note in notes:
                note.elem = elem
            if not got and not notes:
                skipped.append((start, end, elem))
            for call in got:
                if repairs:
                    call.notes.insert(0, repaired_issue(call.name, repairs, call.span))
            calls += got
            issues += notes
        if calls:
            # an element that is not a call, beside ones that are, is reported, not dropped
            for start, end, elem in skipped:
                issues.append(
                    Issue(
                        "malformed_block",
                        {
                            "reason": "an element that is not a call object",
                            "excerpt": excerpt(text[start:end]),
                            "at": base + start,
                        },
                        (base + start, base + end),
                        "an element of the payload is not a call object; ignored",
                        elem,
                    )
                )
            if len(issues) > 1:
                issues.sort(key=lambda i: i.span[0] if i.span else 0)
        return calls, issues

    def decoded(self, text: str, value: Any, spans: Spans | None = None) -> None:
        """``text`` is strict JSON that ``loads_strict`` reads as ``value`` (found where its end
        was looked for, and nested no deeper than ``max_depth``), an object whose members'
        values lie at ``spans`` when given: the next ``_load`` of it takes the value, once."""
        if len(self._decoded) < _DECODED_KEPT:
            self._decoded.append((text, value, spans))

    def _load(self, text: str) -> tuple[Any, list[str]]:
        """Strict JSON, else the repair ladder: the value and the repairs made."""
        value, repairs, _ = self._load_spans(text)
        return value, repairs

    def _load_spans(self, text: str) -> tuple[Any, list[str], Spans | None]:
        """``_load``, and where the members of the object lie when it was decoded as it was
        found, member by member (``decoded``; None otherwise)."""
        kept = self._decoded
        if kept:  # (read in the order they were found: those before a match were never read)
            for i, (known, value, spans) in enumerate(kept):
                if known == text:
                    del kept[: i + 1]
                    return value, [], spans  # (its depth was checked where it was found)
        if depth_exceeds(text, self.max_depth):
            raise JsonValueError(f"nesting deeper than {self.max_depth}")
        try:
            return loads_strict(text), [], None
        except JsonValueError as strict:
            try:
                value, repairs = repair_json(text, quotes=self.quotes, max_depth=self.max_depth)
            except RepairFailed:
                raise strict from None
            return value, repairs, None

    def _call_objects(
        self,
        value: Any,
        text: str | None,
        spans: Spans | None,
        start: int,
        end: int,
        out: list[tuple[Any, int, int]],
    ) -> list[tuple[Any, int, int]]:
        """(element, start, end) of every candidate call object in a payload value, added
        to ``out``.

        ``text`` is the payload when it is strict JSON (for exact spans), else None (every
        element then spans the whole payload); ``spans``: where the members of the object it
        begins with lie, when known."""
        if isinstance(value, list):
            at = strict_element_spans(text, start) if text is not None else [(start, end)] * len(value)
            out += ((item, s, e) for item, (s, e) in zip(value, at))
            return out
        if not isinstance(value, dict):
            return out
        if "tool_calls" in value:
            wrapped = value["tool_calls"]
            if isinstance(wrapped, list) and wrapped:
                inner = member_span(text, start, "tool_calls", spans) if text is not None else (start, end)
                if inner is not None:
                    return self._call_objects(wrapped, text, spans, inner[0], inner[1], out)
        if "tool_call" in value:
            single = value["tool_call"]
            if isinstance(single, dict) and len(value) == 1:
                inner = member_span(text, start, "tool_call", spans) if text is not None else (start, end)
                if inner is not None:
                    out.append((single, inner[0], inner[1]))
                    return out
        out.append((value, start, end))
        return out

    def _read_object(
        self,
        obj: Mapping[str, Any],
        text: str | None,
        spans: Spans | None,
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
            tool, value = next(iter(obj.items()))
            if not tool.strip() or not isinstance(value, (dict, str)):
                return [], []
            key_span = member_span(text, start, tool, spans) if text is not None else None
            written = text[key_span[0] : key_span[1]] if text is not None and key_span else None
            return self._finish(tool, value, written, None, span, [])
        fn = obj.get("function")
        holder: Mapping[str, Any] = obj
        holder_start = start
        name: str | None = None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str) and "arguments" in fn:
            holder = fn
            fn_span = member_span(text, start, "function", spans) if text is not None else None
            holder_start = fn_span[0] if fn_span is not None else start
            name = fn["name"]
        else:
            for k in NAME_KEYS:
                value = obj.get(k)
                if isinstance(value, str):
                    name = value
                    break
        if name is None or not name.strip():
            return [], []
        key = None
        for k in holder:
            if k in ARGUMENT_KEYS:
                key = k  # the first one written
                break
        if key == "parameters" and is_tool_definition(holder, key):
            return [], []
        if bare and holder is obj and key not in ("arguments", "parameters") and name.strip() not in self.known:
            return [], []
        call_id = call_id_of(obj)
        if key is None:
            return [RawCall(name, {}, "{}", call_id, span, self.family)], []
        raw: str | None = None
        if elem >= 0 and holder is obj and text is None:
            # repaired: the model's strict prefix and a tail (what a stream sent, then the rest)
            raw = self.args_text(payload, obj[key], call_object=True, elem=elem)
        elif text is not None:
            args_span = member_span(text, holder_start, key, spans)
            if args_span is not None:
                raw = text[args_span[0] : args_span[1]]
        return self._finish(name, holder[key], raw, call_id, span, [])

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
                return [], [not_object_issue(name, value, span)]
            if isinstance(decoded, dict):
                if repairs:
                    notes = [*notes, repaired_issue(name, repairs, span)]
                text = stripped if not repairs else json.dumps(decoded, ensure_ascii=False)
                return [RawCall(name, decoded, text, call_id, span, self.family, notes)], []
            if isinstance(decoded, str):
                try:
                    twice = loads_strict(decoded.strip())
                except JsonValueError:
                    twice = None
                if isinstance(twice, dict):
                    return [], [not_returned_issue(name, "arguments are a JSON string encoded twice", value, span)]
            return [], [not_object_issue(name, value, span)]
        if isinstance(value, dict):
            text = raw if raw is not None else json.dumps(value, ensure_ascii=False)
            return [RawCall(name, value, text, call_id, span, self.family, notes)], []
        return [], [not_object_issue(name, value, span)]


def _reacts_to(cls: type[Reader]) -> frozenset[str]:
    """The nodes a ``cls`` reader acts on: announced names, arguments, members, calls."""
    return cls.announce_nodes | cls.call_nodes | frozenset(cls.member_nodes) | {"param", "arguments"}


Reader.reacts_to = _reacts_to(Reader)

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
        cls = reader_in(reader_module(family))
        _READERS[family] = cls
    return cls


def reader_in(module: str | None) -> type[Reader]:
    """The ``Reader`` module ``module`` defines, when it exists and defines one, else the
    generic one (None: a family whose grammars are data, read by the generic reader)."""
    if module is not None and (module in sys.modules or importlib.util.find_spec(module) is not None):
        custom = getattr(importlib.import_module(module), "Reader", None)
        if isinstance(custom, type) and issubclass(custom, Reader):
            return custom
    return Reader


# The registry (below this module) checks a grammar against what its reader reads: handed the lookup.
def _reads_in(module: str | None) -> NodeReads:
    """What the reader ``module`` defines reads: its class declares it (``NodeReads``)."""
    return cast(NodeReads, reader_in(module))


set_reads_lookup(_reads_in)
