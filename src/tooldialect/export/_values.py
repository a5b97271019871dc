"""JSON Schema → grammar, for the value syntaxes families write.

``json`` values in the Lark format are llguidance ``%json`` schemas: llguidance checks the
schema itself.  Everything else — JSON for GBNF/EBNF, Python literals, raw text values
that run up to the next fixed text, P-Format slots — is compiled here, for the common
subset of JSON Schema.  A keyword outside the subset raises :class:`ExportError` naming
the keyword, the tool and the place in the schema: the grammar is never looser than the
schema (fail closed).  It may be stricter in one documented way: an object schema that
does not say ``additionalProperties`` gets only its declared properties, as OpenAI's strict
mode does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..coerce import json_type
from ..errors import ExportError
from ..toolset import _openapi_nullable
from . import _ir
from ._ir import EMPTY, Class, Grammar, Json, Lit, Node, Pattern, Rep, Until, alt, seq

__all__ = ["ANNOTATIONS", "MAX_WS", "ValueCompiler"]

#: Keywords that say nothing about which values are valid.
ANNOTATIONS = frozenset(
    {
        "title", "description", "default", "examples", "example", "$schema", "$id", "$comment", "deprecated",
        "readOnly", "writeOnly", "$defs", "definitions", "contentMediaType", "contentEncoding", "strict",
        "propertyOrdering", "$anchor",
    }
)  # fmt: skip

#: Keywords this compiler turns into grammar.
HANDLED = frozenset(
    {
        "type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "properties", "required",
        "additionalProperties", "items", "minItems", "maxItems", "minLength", "maxLength",
    }
)  # fmt: skip

#: Keywords llguidance refuses or cannot enforce, so the Lark export refuses them too.
LARK_REFUSED = frozenset(
    {
        "not", "if", "then", "else", "dependentRequired", "dependentSchemas", "dependencies", "uniqueItems",
        "contains", "minContains", "maxContains", "unevaluatedProperties", "unevaluatedItems", "propertyNames",
        "$dynamicRef", "$recursiveRef", "additionalItems",
    }
)  # fmt: skip

_TYPES = ("string", "integer", "number", "boolean", "null", "object", "array")
#: the most white space between two JSON tokens, so a model cannot stall on blanks
MAX_WS = 16
_WS = Pattern(Class(((0x20, 0x20), (0x09, 0x0A), (0x0D, 0x0D))), 0, MAX_WS)
_WS_LARK = f"[\\x20\\x0A\\x0D\\x09]{{0,{MAX_WS}}}"
_HEX = Class(((ord("0"), ord("9")), (ord("a"), ord("f")), (ord("A"), ord("F"))))
_DIGIT = Class(((ord("0"), ord("9")),))
_DIGIT19 = Class(((ord("1"), ord("9")),))
_MAX_DEPTH = 64


def _where(path: tuple[str, ...]) -> str:
    return "/".join(path) if path else "(root)"


class ValueCompiler:
    """Values of one tool's parameters, as rules of ``grammar``.

    ``target``: ``lark``, ``gbnf`` or ``ebnf``; ``tool``: the tool's name, for messages.
    """

    def __init__(self, grammar: Grammar, target: str, tool: str, schema: Mapping[str, Any]) -> None:
        self.g = grammar
        self.target = target
        self.tool = tool
        self.root = _openapi_nullable(dict(schema), 0)
        self.refs: dict[tuple[str, str], _ir.Ref] = {}
        self.prefix = f"t_{tool}"
        #: characters a JSON string may not hold literally (inside a value written as text,
        #: where they could begin a stop marker); set while such a value is compiled
        self.exclude: frozenset[str] = frozenset()

    # -- errors and checks ------------------------------------------------------------------

    def refuse(self, what: str, path: tuple[str, ...]) -> ExportError:
        return ExportError(
            f"tool {self.tool!r}: {what} at {_where(path)} cannot be expressed in the {self.target} format; "
            "remove it from the schema or use another format (the export never writes a looser grammar)"
        )

    def check_lark(self, schema: Any, path: tuple[str, ...] = (), depth: int = 0) -> None:
        """Refuse, before llguidance sees it, what llguidance cannot enforce."""
        if depth > _MAX_DEPTH:
            raise self.refuse("a schema nested too deeply", path)
        if isinstance(schema, Mapping):
            for key, value in schema.items():
                if key in LARK_REFUSED:
                    raise self.refuse(f"the keyword {key!r}", path)
                if key == "$ref" and isinstance(value, str) and not value.startswith("#"):
                    raise self.refuse(f"the non-local $ref {value!r}", path)
                if key in ("enum", "const", "default", "examples", "example"):
                    continue
                self.check_lark(value, (*path, str(key)), depth + 1)
        elif isinstance(schema, list):
            for i, value in enumerate(schema):
                self.check_lark(value, (*path, str(i)), depth + 1)

    def lark_json(self, schema: Any, *, compact: bool = False) -> Json:
        """A ``%json`` node for a sub-schema of the tool (its ``$defs`` carried along)."""
        self.check_lark(schema)
        if schema is True or schema == {}:
            schema = {}
        if not isinstance(schema, Mapping):
            raise self.refuse("a schema that accepts nothing", ())
        node = dict(schema)
        for key in ("$defs", "definitions"):
            if key in self.root and key not in node:
                node[key] = self.root[key]
        node["x-guidance"] = {"whitespace_flexible": False} if compact else {"whitespace_pattern": _WS_LARK}
        return Json(_ir.json_text(node))

    # -- the schema walk ---------------------------------------------------------------------

    def resolve(self, schema: Any, path: tuple[str, ...]) -> tuple[Any, tuple[str, ...]]:
        """Follow ``$ref`` (local references only)."""
        seen = 0
        while isinstance(schema, Mapping) and "$ref" in schema:
            extra = set(schema) - {"$ref"} - ANNOTATIONS
            if extra:
                raise self.refuse(f"$ref beside {sorted(extra)}", path)
            ref = schema["$ref"]
            if not isinstance(ref, str) or not ref.startswith("#"):
                raise self.refuse(f"the non-local $ref {ref!r}", path)
            node: Any = self.root
            for part in [p for p in ref[1:].split("/") if p]:
                part = part.replace("~1", "/").replace("~0", "~")
                node = node[int(part)] if isinstance(node, list) else node[part]
            schema, path = node, (ref,)
            seen += 1
            if seen > 32:
                raise self.refuse("a chain of $ref that does not end", path)
        return schema, path

    def value(self, schema: Any, syntax: str, path: tuple[str, ...] = (), depth: int = 0) -> Node:
        """A value following ``schema`` in ``syntax``: ``json`` or ``python``."""
        if depth > _MAX_DEPTH:
            raise self.refuse("a schema nested too deeply", path)
        if isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str):
            ref_key = (schema["$ref"], syntax)
            ref = self.refs.get(ref_key)
            if ref is None:  # one rule per reference, so recursive schemas stay finite
                name = self.g.fresh(f"{self.prefix}_{syntax}_{schema['$ref'].rsplit('/', 1)[-1]}")
                ref = self.refs[ref_key] = _ir.Ref(name)
                target, tpath = self.resolve(schema, path)
                self.g.define(name, self.value(target, syntax, tpath, depth + 1))
            return ref
        if schema is True or schema == {}:
            return self.any_value(syntax)
        if schema is False or not isinstance(schema, Mapping):
            raise self.refuse("a schema that accepts nothing", path)
        for key in schema:
            if key not in HANDLED and key not in ANNOTATIONS and not key.startswith("x-") and key != "nullable":
                raise self.refuse(f"the keyword {key!r}", path)
        if "const" in schema:
            return self.literal_choice([schema["const"]], syntax, schema, path)
        if "enum" in schema:
            if not isinstance(schema["enum"], list) or not schema["enum"]:
                raise self.refuse("an empty enum", path)
            return self.literal_choice(schema["enum"], syntax, schema, path)
        for key in ("anyOf", "oneOf", "allOf"):
            if key in schema:
                return self.combination(key, schema, syntax, path, depth)
        branches = [self.typed(t, schema, syntax, path, depth) for t in self.types(schema, path)]
        return alt(*branches)

    def types(self, schema: Mapping[str, Any], path: tuple[str, ...]) -> list[str]:
        kind = schema.get("type")
        if kind is None:
            if "properties" in schema or "additionalProperties" in schema or "required" in schema:
                return ["object"]
            if "items" in schema:
                return ["array"]
            if "minLength" in schema or "maxLength" in schema:
                return ["string"]
            return list(_TYPES)
        kinds = [kind] if isinstance(kind, str) else list(kind)
        for k in kinds:
            if k not in _TYPES:
                raise self.refuse(f"the type {k!r}", path)
        if "integer" in kinds and "number" in kinds:
            kinds.remove("integer")  # every integer is a number
        return kinds

    def combination(self, key: str, schema: Mapping[str, Any], syntax: str, path: tuple[str, ...], depth: int) -> Node:
        branches = schema[key]
        extra = set(schema) - {key} - ANNOTATIONS - {"nullable"}
        if extra:
            raise self.refuse(f"{key} beside {sorted(extra)}", path)
        if not isinstance(branches, list) or not branches:
            raise self.refuse(f"an empty {key}", path)
        if key == "allOf":
            if len(branches) != 1:
                raise self.refuse("allOf with more than one schema", path)
            return self.value(branches[0], syntax, (*path, "allOf", "0"), depth + 1)
        if key == "oneOf" and len(branches) > 1:
            seen: set[str] = set()
            for i, branch in enumerate(branches):
                kinds = self.kinds(branch, (*path, "oneOf", str(i)))
                if kinds is None or kinds & seen:
                    raise self.refuse(
                        "oneOf whose branches may overlap (only branches of different types are exact)", path
                    )
                seen |= kinds
        return alt(*(self.value(b, syntax, (*path, key, str(i)), depth + 1) for i, b in enumerate(branches)))

    def kinds(self, schema: Any, path: tuple[str, ...]) -> set[str] | None:
        """The JSON types a schema can accept, when that is plain to see."""
        schema, path = self.resolve(schema, path)
        if not isinstance(schema, Mapping):
            return None
        values = [schema["const"]] if "const" in schema else schema.get("enum")
        if isinstance(values, list) and (len(values) == 1 or "type" not in schema):
            return {json_type(v) for v in values} if len(values) == 1 else None
        if "type" in schema and not any(k in schema for k in ("anyOf", "oneOf", "allOf")):
            out = set(self.types(schema, path))
            return out | ({"integer"} if "number" in out else set())
        return None

    def literal_choice(self, values: list[Any], syntax: str, schema: Mapping[str, Any], path: tuple[str, ...]) -> Node:
        kinds = self.types(schema, path) if "type" in schema else None
        picked = [
            v
            for v in values
            if kinds is None or json_type(v) in kinds or (json_type(v) == "integer" and "number" in kinds)
        ]
        if not picked:
            raise self.refuse("an enum none of whose values has the schema's type", path)
        return alt(*(self.spell(v, syntax) for v in picked))

    def spell(self, value: Any, syntax: str) -> Node:
        """One fixed value in ``syntax`` (strings in every quoting the syntax allows)."""
        if syntax == "python":
            if isinstance(value, str):  # as written, or with non-ASCII escaped (as the Python writer does)
                return alt(Lit(json.dumps(value, ensure_ascii=False)), Lit(json.dumps(value)), Lit(_py_single(value)))
            if isinstance(value, bool) or value is None:
                return Lit({True: "True", False: "False", None: "None"}[value])
            if isinstance(value, (int, float)):
                return Lit(repr(value))
            if isinstance(value, list):
                return seq(Lit("["), *_join([self.spell(v, syntax) for v in value], seq(Lit(","), Lit(" "))), Lit("]"))
            items = [seq(self.spell(str(k), syntax), Lit(": "), self.spell(v, syntax)) for k, v in value.items()]
            return seq(Lit("{"), *_join(items, Lit(", ")), Lit("}"))
        return Lit(json.dumps(value, ensure_ascii=False, separators=(", ", ": ") if syntax == "json" else (",", ":")))

    def typed(self, kind: str, schema: Mapping[str, Any], syntax: str, path: tuple[str, ...], depth: int) -> Node:
        py = syntax == "python"
        if kind == "string":
            return self.string(schema, syntax, path)
        if kind == "integer":
            self.no_bounds(schema, path)
            return self.g.rule("integer", seq(Rep(Lit("-"), 0, 1), alt(Lit("0"), seq(_DIGIT19, Rep(_DIGIT)))))
        if kind == "number":
            self.no_bounds(schema, path)
            frac = Rep(seq(Lit("."), Rep(_DIGIT, 1)), 0, 1)
            exp = Rep(
                seq(
                    Class(((ord("e"), ord("e")), (ord("E"), ord("E")))),
                    Rep(Class(((ord("+"), ord("+")), (ord("-"), ord("-")))), 0, 1),
                    Rep(_DIGIT, 1),
                ),
                0,
                1,
            )
            return self.g.rule("number", seq(Rep(Lit("-"), 0, 1), alt(Lit("0"), seq(_DIGIT19, Rep(_DIGIT))), frac, exp))
        if kind == "boolean":
            return alt(Lit("True"), Lit("False")) if py else alt(Lit("true"), Lit("false"))
        if kind == "null":
            return Lit("None" if py else "null")
        if kind == "array":
            return self.array(schema, syntax, path, depth)
        return self.obj(schema, syntax, path, depth)

    def no_bounds(self, schema: Mapping[str, Any], path: tuple[str, ...]) -> None:
        for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
            if key in schema:
                raise self.refuse(f"the keyword {key!r}", path)

    def string(self, schema: Mapping[str, Any], syntax: str, path: tuple[str, ...]) -> Node:
        for key in ("pattern", "format"):
            if key in schema:
                raise self.refuse(f"the keyword {key!r}", path)
        lo, hi = _lengths(schema, self, path)
        if syntax == "python":
            dq = self.g.rule(
                "py_dq_char",
                alt(Class(((ord('"'), ord('"')), (ord("\\"), ord("\\")), (0, 0x1F)), negated=True), self.py_escape()),
            )
            sq = self.g.rule(
                "py_sq_char",
                alt(Class(((ord("'"), ord("'")), (ord("\\"), ord("\\")), (0, 0x1F)), negated=True), self.py_escape()),
            )
            return alt(seq(Lit('"'), Rep(dq, lo, hi), Lit('"')), seq(Lit("'"), Rep(sq, lo, hi), Lit("'")))
        banned = tuple((ord(c), ord(c)) for c in sorted(self.exclude))
        char = self.g.rule(
            "json_char" if not banned else "json_char_in_text",
            alt(
                Class(((ord('"'), ord('"')), (ord("\\"), ord("\\")), (0, 0x1F), *banned), negated=True),
                seq(
                    Lit("\\"), alt(Class(tuple((ord(c), ord(c)) for c in '"\\/bfnrt')), seq(Lit("u"), Rep(_HEX, 4, 4)))
                ),
            ),
        )
        return seq(Lit('"'), Rep(char, lo, hi), Lit('"'))

    def py_escape(self) -> Node:
        return seq(Lit("\\"), alt(Class(tuple((ord(c), ord(c)) for c in "\"'\\bfnrt")), seq(Lit("u"), Rep(_HEX, 4, 4))))

    def array(self, schema: Mapping[str, Any], syntax: str, path: tuple[str, ...], depth: int) -> Node:
        for key in ("prefixItems", "contains", "uniqueItems"):
            if key in schema:
                raise self.refuse(f"the keyword {key!r}", path)
        items = schema.get("items", True)
        item = self.g.rule(f"{self.prefix}_item", self.value(items, syntax, (*path, "items"), depth + 1))
        lo = schema.get("minItems", 0)
        hi = schema.get("maxItems")
        if not isinstance(lo, int) or (hi is not None and not isinstance(hi, int)):
            raise self.refuse("minItems/maxItems that are not integers", path)
        ws = self.ws(syntax)
        more = seq(Lit(","), ws, item)
        if hi == 0:
            body: Node = EMPTY
        else:
            rest = Rep(more, max(lo - 1, 0), None if hi is None else hi - 1)
            body = seq(item, rest) if lo >= 1 else Rep(seq(item, rest), 0, 1)
        return seq(Lit("["), ws, body, ws, Lit("]"))

    def ws(self, syntax: str) -> Node:
        return self.g.rule("ws", _WS)

    def obj(self, schema: Mapping[str, Any], syntax: str, path: tuple[str, ...], depth: int) -> Node:
        for key in ("patternProperties", "propertyNames", "minProperties", "maxProperties", "dependentRequired"):
            if key in schema:
                raise self.refuse(f"the keyword {key!r}", path)
        props = schema.get("properties") or {}
        required = [r for r in schema.get("required") or [] if isinstance(r, str)]
        missing = [r for r in required if r not in props]
        extra = schema.get("additionalProperties")
        ws = self.ws(syntax)
        if not props and not required:
            if extra is False:
                return seq(Lit("{"), ws, Lit("}"))
            value = self.value(True if extra is None else extra, syntax, (*path, "additionalProperties"), depth + 1)
            any_key = self.string({}, syntax, path)
            member = seq(any_key, ws, Lit(":"), ws, value)
            return seq(Lit("{"), ws, Rep(seq(member, Rep(seq(Lit(","), ws, member)))), ws, Lit("}"))
        if missing:
            raise self.refuse(f"required properties {missing} that 'properties' does not declare", path)
        if extra not in (None, False):
            raise self.refuse("additionalProperties beside declared properties", path)
        members = []
        for name, sub in props.items():
            value = self.value(sub, syntax, (*path, "properties", name), depth + 1)
            members.append((seq(self.spell(name, syntax), ws, Lit(":"), ws, value), name in required))
        return seq(Lit("{"), ws, self.members(members, seq(Lit(","), ws)), ws, Lit("}"))

    def members(self, members: list[tuple[Node, bool]], sep: Node) -> Node:
        """Members in order, the optional ones skippable, ``sep`` between those written."""
        # after(i): the members from i on, each preceded by sep; first(i): the same where
        # nothing was written yet (no sep before the first one written)
        after: Node = EMPTY
        first: Node = EMPTY
        for member, req in reversed(members):
            with_sep = seq(sep, member, after)
            new_first = seq(member, after) if req else alt(seq(member, after), first)
            after = self.g.rule(f"{self.prefix}_m", with_sep if req else alt(with_sep, after))
            first = self.g.rule(f"{self.prefix}_m", new_first) if new_first != EMPTY else EMPTY
        return first

    def any_value(self, syntax: str) -> Node:
        name = f"any_{syntax}"
        if name in self.g.rules:
            return _ir.Ref(name)
        ref = _ir.Ref(name)
        self.g.rules[name] = EMPTY  # placeholder, so the recursion below refers to it
        ws = self.ws(syntax)
        key = self.string({}, syntax, ())
        member = seq(key, ws, Lit(":"), ws, ref)
        body = alt(
            self.string({}, syntax, ()),
            self.typed("number", {}, syntax, (), 0),
            self.typed("boolean", {}, syntax, (), 0),
            self.typed("null", {}, syntax, (), 0),
            seq(Lit("["), ws, Rep(seq(ref, Rep(seq(Lit(","), ws, ref)))), ws, Lit("]")),
            seq(Lit("{"), ws, Rep(seq(member, Rep(seq(Lit(","), ws, member)))), ws, Lit("}")),
        )
        self.g.rules[name] = body
        return ref

    # -- values written as raw text ------------------------------------------------------------

    def json_in_text(self, schema: Mapping[str, Any], stop: str, path: tuple[str, ...], avoid: tuple[str, ...]) -> Node:
        """A JSON value inside a text value: its strings may not hold a character that can
        begin the marker or a stop (stricter than the schema, never looser: the reader ends
        the value at the first stop, even inside a JSON string)."""
        import re as _re

        from ._stops import first_chars

        if self.target == "lark" and not _could_hold_text(schema):
            return self.lark_json(schema)
        starts = first_chars((_re.escape(stop), *avoid))
        if starts is None:
            raise self.refuse("a non-string value in text whose stops can begin with any character", path)
        saved, self.exclude = self.exclude, frozenset(starts)
        try:
            return self.value(schema, "json", path)
        finally:
            self.exclude = saved

    def text(self, schema: Any, stop: str, path: tuple[str, ...], avoid: tuple[str, ...] = ()) -> Node:
        """A value written as text up to ``stop`` (which the node includes): a string as its
        raw characters, any other value as JSON (the family writes it compact; white space
        between tokens is allowed, as the reader allows it)."""
        schema, path = self.resolve(schema, path)
        if schema is True or schema == {}:
            return Until(stop, avoid=avoid)
        if not isinstance(schema, Mapping):
            raise self.refuse("a schema that accepts nothing", path)
        if "const" in schema or "enum" in schema:
            values = [schema["const"]] if "const" in schema else schema["enum"]
            return alt(
                *(
                    seq(Lit(v if isinstance(v, str) else _compact(v)), Lit(stop))
                    for v in values
                    if not isinstance(v, str) or stop not in v
                )
            )
        if "anyOf" in schema or "oneOf" in schema:
            key = "anyOf" if "anyOf" in schema else "oneOf"
            self.combination(key, schema, "json", path, 0)  # the same checks as a JSON value
            return alt(*(self.text(b, stop, (*path, key, str(i)), avoid) for i, b in enumerate(schema[key])))
        if "allOf" in schema:
            self.combination("allOf", schema, "json", path, 0)  # one schema, nothing beside it
            return self.text(schema["allOf"][0], stop, (*path, "allOf", "0"), avoid)
        kinds = self.types(schema, path)
        out: list[Node] = []
        if "string" in kinds:
            for key in ("pattern", "format"):
                if key in schema:
                    raise self.refuse(f"the keyword {key!r}", path)
            lo, hi = _lengths(schema, self, path)
            out.append(Until(stop, lo, hi, avoid))
        rest = [k for k in kinds if k != "string"]
        if rest:
            sub = {k: v for k, v in schema.items() if k not in ("minLength", "maxLength")}
            sub["type"] = rest
            out.append(seq(self.json_in_text(sub, stop, path, avoid), Lit(stop)))
        return alt(*out)


def _could_hold_text(schema: Any) -> bool:
    """Whether a JSON value of ``schema`` can hold a string (a text marker could hide in it)."""
    if not isinstance(schema, Mapping):
        return True
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    return not (isinstance(kinds, list) and set(kinds) <= {"integer", "number", "boolean", "null"})


def _lengths(schema: Mapping[str, Any], comp: ValueCompiler, path: tuple[str, ...]) -> tuple[int, int | None]:
    lo = schema.get("minLength", 0)
    hi = schema.get("maxLength")
    if not isinstance(lo, int) or (hi is not None and not isinstance(hi, int)):
        raise comp.refuse("minLength/maxLength that are not integers", path)
    return lo, hi


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _py_single(text: str) -> str:
    body = json.dumps(text, ensure_ascii=False)[1:-1].replace('\\"', '"').replace("'", "\\'")
    return f"'{body}'"


def _join(items: list[Node], sep: Node) -> list[Node]:
    out: list[Node] = []
    for i, item in enumerate(items):
        if i:
            out.append(sep)
        out.append(item)
    return out
