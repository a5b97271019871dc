"""A family's whole reply as a grammar, from its :class:`~tooldialect.shape.Shape`.

The reply is prose (where the family writes prose before its calls), then the block of
calls: ``block_open``, the calls with ``sep`` between them, ``block_close``.  Each call
is the family's ``call`` parts filled with an offered tool: its name, and arguments that
follow the tool's JSON Schema in the family's value syntax.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from .. import shape as sh
from ..errors import ExportError
from ..pyliteral import PYTHON, is_identifier
from ..render.signatures import parameter_order
from ..toolset import Tool
from ._ir import EMPTY, Alt, Class, Grammar, Lit, Node, Pattern, Prose, Rep, Seq, Until, alt, seq
from ._rx import rust_regex, rx_escape
from ._values import ANNOTATIONS, ValueCompiler, _compact

__all__ = ["Opening", "ReplyBuilder"]

_DIGIT = Class(((ord("0"), ord("9")),))
_DIGIT19 = Class(((ord("1"), ord("9")),))
_WORD = re.compile(r"\w")
_QUANTIFIER = re.compile(r"\{(\d{1,4})(?:,(\d{0,4}))?\}|[+*?]?")
#: A name of any tool, offered or not, as the raw and JSON encodings write it.
_NAME_RX = {"raw": r"[A-Za-z_$][A-Za-z0-9_.$\-]*", "json": r'"[^"\n]*"'}


@dataclass(frozen=True)
class Opening:
    """How a block begins: the fixed text before anything tool-specific (``lead``), the
    marker inside it that prose may not contain (``marker``, empty when the lead is too
    weak to mark a call, as ``[`` is), and whether a tool name follows the lead."""

    lead: str
    marker: str
    name_follows: bool


class ReplyBuilder:
    """Builds the rules of one export: ``target`` is ``lark``, ``gbnf`` or ``ebnf``."""

    def __init__(
        self,
        shape: sh.Shape,
        tools: list[Tool],
        target: str,
        stops: dict[int, tuple[str, ...]] | None = None,
        openers: tuple[str, ...] = (),
        strip: bool = False,
    ) -> None:
        self.shape = shape
        #: the family's reader drops the newline a template writes around a text value
        self.strip = strip
        #: every spelling of a block opener the family's reader knows (regexes): free text
        #: holds none of them, so no call hides in the text in another spelling
        self.openers = openers
        #: per raw value part (by id): the regexes at which the family's reader ends it
        self.stops = stops or {}
        self.tools = tools
        self.target = target
        self.g = Grammar()
        self.g.rules["start"] = EMPTY  # first rule, filled last
        self.values = {t.name: ValueCompiler(self.g, target, t.name, t.parameters) for t in tools}

    # -- calls ----------------------------------------------------------------------------------

    def call(self, tool: Tool, parts: tuple[sh.Part, ...]) -> Node:
        """One call of ``tool`` written with ``parts`` (the shape's call, or its tail)."""
        comp = self.values[tool.name]
        out: list[Node] = []
        for part in parts:
            if isinstance(part, sh.Lit):
                out.append(Lit(part.text))
            elif isinstance(part, sh.Name):
                out.append(Lit(self.name(tool.name, part.encoding)))
            elif isinstance(part, sh.Arguments):
                out.append(self.arguments(tool, comp, part.syntax))
            elif isinstance(part, sh.Params):
                out.append(self.params(tool, comp, part))
            elif isinstance(part, sh.Id):
                out.append(self.id_pattern(part.pattern))
            elif isinstance(part, sh.Index):
                out.append(self.g.rule("index", alt(Lit("0"), seq(_DIGIT19, Rep(_DIGIT)))))
            else:
                raise ExportError(f"family {self.shape.family}: a {type(part).__name__} part outside a parameter")
        return seq(*out)

    @staticmethod
    def name(name: str, encoding: str) -> str:
        return json.dumps(name, ensure_ascii=False) if encoding == "json" else name

    def arguments(self, tool: Tool, comp: ValueCompiler, syntax: str) -> Node:
        schema = comp.root
        if syntax == "json":
            if self.target == "lark":
                return comp.lark_json(schema)
            return comp.value(schema, "json", ("parameters",))
        order = list((schema.get("properties") or {}).keys()) if isinstance(schema, dict) else []
        self.plain_object(comp, schema)
        props = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        code_call = syntax in ("python", "typescript")
        if syntax == "keywords":  # keyword arguments only, in a call whose name is an identifier
            if not is_identifier(tool.name, PYTHON):
                raise ExportError(
                    f"tool {tool.name!r}: {self.shape.family} writes it as a Python call, and it is not an identifier"
                )
            bad = [k for k in order if not is_identifier(k, PYTHON)]
            if bad:
                raise comp.refuse(
                    f"the parameter name {bad[0]!r}, which keyword arguments cannot write", ("properties",)
                )
            syntax = "python"
        if syntax == "python":
            if code_call:  # a code call reads a top-level None as "not given": never written
                props = {k: _without_null(comp, v, ("properties", k)) for k, v in props.items()}
            if all(is_identifier(k, PYTHON) for k in order):
                members = [
                    (seq(Lit(f"{k}="), comp.value(props[k], "python", ("properties", k))), k in required) for k in order
                ]
                return comp.members(members, Lit(", "))
            whole = comp.value({**schema, "properties": props}, "python", ())
            return whole if required else alt(whole, EMPTY)
        if syntax == "typescript":
            from ..render.signatures import _ts_key

            props = {k: _without_null(comp, v, ("properties", k)) for k, v in props.items()}

            members = [
                (seq(Lit(f"{_ts_key(k)}: "), self.json_value(comp, props[k], ("properties", k))), k in required)
                for k in order
            ]
            body = seq(Lit("{"), comp.members(members, Lit(", ")), Lit("}"))
            return body if required else alt(body, EMPTY)
        if syntax == "pformat":
            slots = parameter_order(schema)
            members = [
                (seq(Lit(f"{i}|"), self.pformat_value(comp, props[k], ("properties", k))), k in required)
                for i, k in enumerate(slots)
            ]
            return comp.members(members, Lit("|"))
        raise ExportError(f"family {self.shape.family}: unknown argument syntax {syntax!r}")

    def plain_object(self, comp: ValueCompiler, schema: Any) -> None:
        if not isinstance(schema, dict) or schema.get("type", "object") != "object":
            raise comp.refuse("parameters that are not an object schema", ("parameters",))
        if schema.get("additionalProperties") not in (None, False):
            raise comp.refuse("additionalProperties written as separate parameters", ("parameters",))
        for key in schema:
            if (
                key not in ("type", "properties", "required", "additionalProperties")
                and key not in ANNOTATIONS
                and not key.startswith("x-")
            ):
                raise comp.refuse(f"the keyword {key!r} on the parameters object", ("parameters",))

    def json_value(self, comp: ValueCompiler, schema: Any, path: tuple[str, ...]) -> Node:
        if self.target == "lark":
            return comp.lark_json(schema)
        return comp.value(schema, "json", path)

    def pformat_value(self, comp: ValueCompiler, schema: Any, path: tuple[str, ...]) -> Node:
        """A P-Format slot: text with ``\\``, ``|`` and ``]`` escaped, never blank."""
        schema, path = comp.resolve(schema, path)
        if isinstance(schema, dict) and ("enum" in schema or "const" in schema):
            values = [schema["const"]] if "const" in schema else schema["enum"]
            return alt(*(Lit(_pf_escape(v if isinstance(v, str) else _compact(v))) for v in values))
        kinds = comp.types(schema, path) if isinstance(schema, dict) and schema else ["string"]
        out: list[Node] = []
        for kind in kinds:
            if kind in ("array", "object"):
                raise comp.refuse(f"an {kind} value in a P-Format slot", path)
            if kind == "string":
                for key in ("pattern", "format", "minLength", "maxLength"):
                    if key in schema:
                        raise comp.refuse(f"the keyword {key!r}", path)
                plain = Class(((ord("\\"), ord("\\")), (ord("|"), ord("|")), (ord("]"), ord("]"))), negated=True)
                blank = Class(((0x20, 0x20), (0x09, 0x0D)))
                visible = Class(
                    ((ord("\\"), ord("\\")), (ord("|"), ord("|")), (ord("]"), ord("]")), (0x20, 0x20), (0x09, 0x0D)),
                    negated=True,
                )
                escaped = seq(Lit("\\"), Class(((ord("\\"), ord("\\")), (ord("|"), ord("|")), (ord("]"), ord("]")))))
                char = self.g.rule("pf_char", alt(plain, escaped))
                out.append(seq(Rep(blank), alt(visible, escaped), Rep(char)))
            else:
                out.append(comp.typed(kind, schema, "json", path, 0))
        return alt(*out)

    def params(self, tool: Tool, comp: ValueCompiler, part: sh.Params) -> Node:
        schema = comp.root
        self.plain_object(comp, schema)
        props = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        members = [(self.param(comp, key, sub, part.item), key in required) for key, sub in props.items()]
        return comp.members(members, Lit(part.sep))

    def param(self, comp: ValueCompiler, key: str, schema: Any, item: tuple[sh.Part, ...]) -> Node:
        out: list[Node] = []
        path = ("properties", key)
        i = 0
        while i < len(item):
            part = item[i]
            if isinstance(part, sh.Lit):
                out.append(Lit(part.text))
            elif isinstance(part, sh.Key):
                out.append(Lit(self.name(key, part.encoding)))
            elif isinstance(part, sh.Value) and part.syntax == "text":
                nxt = item[i + 1] if i + 1 < len(item) else None
                if not isinstance(nxt, sh.Lit) or not nxt.text.strip():
                    raise ExportError(f"family {self.shape.family}: a text value must be followed by fixed text")
                pre, core, post = _split_marker(nxt.text)
                out.append(self.text_value(comp, schema, pre, core, path, self.stops.get(id(part), ())))
                out.append(Lit(post))
                i += 1
            elif isinstance(part, sh.Value):
                out.append(
                    self.json_value(comp, schema, path) if part.syntax == "json" else comp.value(schema, "python", path)
                )
            else:
                raise ExportError(f"family {self.shape.family}: a {type(part).__name__} part inside a parameter")
            i += 1
        return seq(*out)

    def text_value(
        self, comp: ValueCompiler, schema: Any, pre: str, core: str, path: tuple[str, ...], avoid: tuple[str, ...] = ()
    ) -> Node:
        """Raw text up to ``core`` for a string (white space before the marker is part of the
        text, and the reader drops the template's newline); compact JSON then ``pre + core``
        for any other value."""
        # a marker that begins the value's own closer (MiniMax-M3's "]<]minimax[>[<" before
        # "]<]minimax[>[</") is met only as that closer, which ends the value first
        avoid = tuple(a for a in avoid if re.match(a, core) is None)
        node = comp.text(schema, core, path, avoid)
        if self.strip:
            node = _stripped(node)
        return node if not pre else _insert_pre(node, pre, core)

    def id_pattern(self, pattern: str) -> Node:
        """The family's id regex, when it is one character class repeated (``[A-Za-z0-9]{9}``):
        the one form every target can write."""
        refuse = ExportError(
            f"family {self.shape.family}: the id pattern {pattern!r} is not a character class repetition"
        )
        close = pattern.find("]")
        if not pattern.startswith("[") or close < 2:
            raise refuse
        body, tail = pattern[1:close], pattern[close + 1 :]
        ranges: list[tuple[int, int]] = []
        k = 0
        while k < len(body):
            if not (body[k].isascii() and (body[k].isalnum() or body[k] == "_")):
                raise refuse
            if k + 2 < len(body) and body[k + 1] == "-":
                ranges.append((ord(body[k]), ord(body[k + 2])))
                k += 3
            else:
                ranges.append((ord(body[k]), ord(body[k])))
                k += 1
        m = _QUANTIFIER.fullmatch(tail)
        if m is None:
            raise refuse
        if m.group(1):
            lo = int(m.group(1))
            hi: int | None = lo if m.group(2) is None else (int(m.group(2)) if m.group(2) else None)
        else:
            lo, hi = {"+": (1, None), "*": (0, None), "?": (0, 1), "": (1, 1)}[tail]
        return Pattern(Class(tuple(ranges)), lo, hi)

    # -- the block and the reply ------------------------------------------------------------------

    def literal_prefix(self, parts: tuple[sh.Part, ...]) -> tuple[str, tuple[sh.Part, ...]]:
        text = ""
        i = 0
        while i < len(parts):
            part = parts[i]
            if not isinstance(part, sh.Lit):
                break
            text += part.text
            i += 1
        return text, parts[i:]

    def opening(self) -> Opening:
        s = self.shape
        if s.block_open:
            lead, rest = self.literal_prefix(s.block_open)
            if rest:
                raise ExportError(f"family {s.family}: block_open holds more than fixed text")
            more, call_rest = self.literal_prefix(s.call)
            lead += more
        else:
            lead, call_rest = self.literal_prefix(s.call)
        name_follows = bool(call_rest) and isinstance(call_rest[0], sh.Name)
        stripped = lead.lstrip()
        marker = re.split(r"\s", stripped, maxsplit=1)[0] if stripped else ""
        if sum(ch.isalnum() for ch in marker) < 2 and not any(ord(ch) > 0x7F for ch in marker):
            marker = ""  # "[" or "{" alone marks nothing: prose writes them all the time
        return Opening(lead, marker, name_follows)

    def build(self, allowed: list[Tool], *, required: bool, parallel: bool) -> Grammar:
        """The rules of the reply.  Lark: the whole reply, prose included.  GBNF/EBNF: the
        block of calls from its marker on (a lazy grammar, started by :meth:`triggers`)."""
        s = self.shape
        opening = self.opening()
        lark = self.target == "lark"
        lead = opening.lead
        _, rest = self.literal_prefix(s.call)
        # Lark: the first lexeme of a call holds its lead and the tool's name, so free text
        # (which may not hold them) and a call part ways on one lexeme; with prose before a
        # weak lead, the prose runs lazily up to the lead and a name
        split = lark and opening.name_follows and not (s.prose_before and opening.marker)
        any_call = self.g.rule("call", alt(*(self.g.rule(f"call_{t.name}", self.call(t, s.call)) for t in allowed)))
        more = Rep(seq(Lit(s.sep), any_call)) if s.parallel and parallel else EMPTY
        close = seq(*self.closing(s.block_close))
        after = self.after_name() if split else ""
        skip = 2 if after else 1
        tails = {t.name: seq(self.call(t, rest[skip:] if split else rest), more, close) for t in allowed}
        if split:
            heads = [(lead + self.name(t.name, self._name_encoding()) + after, tails[t.name]) for t in allowed]
        else:
            heads = [(lead, alt(*tails.values()))]
        if not lark:
            self.g.rules["start"] = alt(*(seq(Lit(text.lstrip()), node) for text, node in heads))
            return self.g
        # what free text may never hold: the marker, or (behind a weak lead) anything that
        # looks like the lead, a name and what follows the name — an offered tool or not
        if opening.marker:
            avoid = rx_escape(opening.marker)
        elif opening.name_follows:
            avoid = rx_escape(lead) + _NAME_RX[self._name_encoding()] + rx_escape(self.after_name())
        elif lead.strip():
            avoid = rx_escape(lead)
        else:
            raise ExportError(
                f"family {s.family}: its calls begin with no fixed text, so free text cannot be told from a call"
            )
        if self.openers:
            avoid = "|".join([avoid, *(rust_regex(p) for p in self.openers)])
        if s.prose_before and opening.marker:
            i = lead.index(opening.marker) + len(opening.marker)
            with_calls = seq(Prose(avoid=avoid, then=rx_escape(lead[:i])), Lit(lead[i:]), heads[0][1])
        elif s.prose_before and split:
            with_calls = alt(*(seq(Prose(avoid=avoid, then=rx_escape(text)), node) for text, node in heads))
        else:  # the first lexeme of the block holds the whole head: text and call part on it
            with_calls = alt(*(seq(Lit(text), node) for text, node in heads))
        text_only = Prose(avoid=avoid)
        self.g.rules["start"] = with_calls if required else alt(text_only, with_calls)
        return self.g

    def closing(self, parts: tuple[sh.Part, ...]) -> list[Node]:
        out: list[Node] = []
        for part in parts:
            if not isinstance(part, sh.Lit):
                raise ExportError(f"family {self.shape.family}: block_close holds more than fixed text")
            out.append(Lit(part.text))
        return out

    def after_name(self) -> str:
        """The fixed text right after the name in a call (``(`` in ``f(…)``), so a trigger
        holds the whole word: ``[auto(`` does not fire inside ``[automatic]``."""
        _, rest = self.literal_prefix(self.shape.call)
        return rest[1].text if len(rest) > 1 and isinstance(rest[1], sh.Lit) else ""

    def _name_encoding(self) -> str:
        _, rest = self.literal_prefix(self.shape.call)
        part = rest[0] if rest else None
        return part.encoding if isinstance(part, sh.Name) else "raw"

    def triggers(self, allowed: list[Tool]) -> list[dict[str, str]]:
        """What starts the lazy grammar: the marker as a word, or, when the lead is weak, a
        pattern of the lead and each tool's name, word-bounded where it begins with a word
        character (so ``get`` does not fire inside ``forget``)."""
        opening = self.opening()
        lead = opening.lead.lstrip()
        if opening.marker and not _WORD.match(lead[:1]):
            return [{"type": "word", "value": opening.marker}]
        if opening.name_follows:
            names = "|".join(_re_escape(self.name(t.name, self._name_encoding())) for t in allowed)
            body = f"{_re_escape(lead)}(?:{names}){_re_escape(self.after_name())}"
        elif lead:
            body = _re_escape(lead)
        else:
            raise ExportError(
                f"family {self.shape.family}: a reply whose calls begin with no fixed text cannot trigger a lazy grammar"
            )
        if _WORD.match(lead[:1] or "x"):
            return [{"type": "pattern", "value": f"(?:^|[^A-Za-z0-9_])({body})"}]
        return [{"type": "pattern", "value": f"({body})"}]


def _without_null(comp: ValueCompiler, schema: Any, path: tuple[str, ...]) -> Any:
    """``schema`` less its null values (a top-level ``None`` in a code call means "not
    given").  A parameter that can only be null cannot be written."""
    schema, path = comp.resolve(schema, path)
    if schema is True or schema == {}:
        return {"type": ["string", "number", "boolean", "object", "array"]}
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    kind = out.get("type")
    if isinstance(kind, list) and "null" in kind:
        out["type"] = [k for k in kind if k != "null"]
    if isinstance(out.get("enum"), list):
        out["enum"] = [v for v in out["enum"] if v is not None]
    for key in ("anyOf", "oneOf"):
        if isinstance(out.get(key), list):
            out[key] = [b for b in out[key] if not (isinstance(b, dict) and b.get("type") == "null" and len(b) == 1)]
    if (
        kind == "null"
        or out.get("type") == []
        or out.get("enum") == []
        or ("const" in out and out["const"] is None)
        or any(out.get(k) == [] for k in ("anyOf", "oneOf"))
    ):
        raise comp.refuse("a parameter that can only be None, which a code call reads as not given", path)
    return out


def _re_escape(text: str) -> str:
    """A literal in ECMAScript/std::regex syntax (llama.cpp compiles triggers with std::regex)."""
    return "".join("\\" + c if c in "\\^$.|?*+()[]{}/-" else c for c in text).replace("\n", "\\n").replace("\t", "\\t")


def _split_marker(text: str) -> tuple[str, str, str]:
    """Fixed text after a text value: white space, the marker the value runs up to, the rest."""
    stripped = text.lstrip()
    pre = text[: len(text) - len(stripped)]
    core = re.split(r"\s", stripped, maxsplit=1)[0]
    return pre, core, stripped[len(core) :]


def _stripped(node: Node) -> Node:
    """The text of a string value, read without the template's last newline."""
    if isinstance(node, Alt):
        return Alt(tuple(_stripped(n) for n in node.items))
    return replace(node, strip=True) if isinstance(node, Until) else node


def _insert_pre(node: Node, pre: str, core: str) -> Node:
    """Non-string branches end with ``core``; the template's white space goes before it."""
    if isinstance(node, Alt):
        return Alt(tuple(_insert_pre(n, pre, core) for n in node.items))
    if isinstance(node, Until):
        return node
    if isinstance(node, Rep):
        return node
    if isinstance(node, Seq) and isinstance(node.items[-1], Lit) and node.items[-1].text.endswith(core):
        last = node.items[-1].text
        return Seq((*node.items[:-1], Lit(last[: len(last) - len(core)] + pre + core)))
    if isinstance(node, Lit) and node.text.endswith(core):
        return Lit(node.text[: len(node.text) - len(core)] + pre + core)
    return node


def _pf_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("]", "\\]")
