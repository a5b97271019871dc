"""Whether a tool's schema is valid JSON Schema, without jsonschema's walk of the
meta-schema (docs/decisions.md 96).

``check_schema`` validates a schema against its draft's meta-schema with jsonschema's
generators, about 2 ms for a small tool: building a toolset of 50 tools cost 100 ms.
:func:`certainly_valid` reads the meta-schema's rules for drafts 7 and 2020-12 as a table
(each keyword the meta-schema constrains, with the test its value must pass) and says
True only when every keyword of every subschema passes; keywords the meta-schema does not
name are free, as they are there. Anything it does not decide — another draft, ``$id``,
anchors, ``dependencies``, a value of an unusual type — is False, and the caller asks
jsonschema, whose error is the one reported. So True is always jsonschema's verdict too:
tests/test_validation.py checks it on generated schemas, valid and broken, and checks
that each table names exactly the keywords of its meta-schema.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jsonschema

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = ["certainly_valid", "tables"]

_DEPTH = 64  # deeper schemas are left to jsonschema
_SIMPLE_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})

Rule = Callable[["_Meta", Any, int], bool]


def certainly_valid(schema: Any, cls: type[Validator]) -> bool:
    """True when ``cls.check_schema(schema)`` would pass; False when it might not."""
    table = _TABLES.get(cls)
    if table is None:
        return False
    meta = jsonschema.validators.validator_for(cls.META_SCHEMA, default=cls)  # as check_schema does
    try:
        return _Meta(table, meta.FORMAT_CHECKER).schema(schema, 0)
    except Exception:  # noqa: BLE001 - a format checker that raised, a recursion: jsonschema decides
        return False


def tables() -> dict[type[Validator], dict[str, Rule | None]]:
    """The keyword tables by validator class (the tests compare them to the meta-schemas)."""
    return dict(_TABLES)


class _Meta:
    __slots__ = ("table", "formats")

    def __init__(self, table: dict[str, Rule | None], formats: Any) -> None:
        self.table = table
        self.formats = formats

    def schema(self, node: Any, depth: int) -> bool:
        """A subschema: a boolean, or an object whose constrained keywords all pass."""
        if node is True or node is False:
            return True
        if type(node) is not dict or depth > _DEPTH:
            return False
        table = self.table
        for key, value in node.items():
            if type(key) is not str:
                return False
            if key not in table:
                continue  # a keyword the meta-schema does not name: anything goes
            rule = table[key]
            if rule is None or not rule(self, value, depth + 1):
                return False
        return True

    def conforms(self, value: Any, fmt: str) -> bool:
        return bool(self.formats.conforms(value, fmt))


# -- the rules: each a test a keyword's value must pass -----------------------------------------


def _any(m: _Meta, v: Any, depth: int) -> bool:
    return True


def _string(m: _Meta, v: Any, depth: int) -> bool:
    return isinstance(v, str)


def _boolean(m: _Meta, v: Any, depth: int) -> bool:
    return isinstance(v, bool)


def _array(m: _Meta, v: Any, depth: int) -> bool:
    return isinstance(v, list)


def _number(m: _Meta, v: Any, depth: int) -> bool:
    return type(v) is int or type(v) is float


def _positive(m: _Meta, v: Any, depth: int) -> bool:
    return _number(m, v, depth) and v > 0


def _count(m: _Meta, v: Any, depth: int) -> bool:
    """``nonNegativeInteger``: an integer (``2.0`` is one) that is not below 0."""
    return (type(v) is int or (type(v) is float and v.is_integer())) and v >= 0


def _regex(m: _Meta, v: Any, depth: int) -> bool:
    return isinstance(v, str) and m.conforms(v, "regex")


def _uri(m: _Meta, v: Any, depth: int) -> bool:
    return isinstance(v, str) and m.conforms(v, "uri")


def _uri_reference(m: _Meta, v: Any, depth: int) -> bool:
    return isinstance(v, str) and m.conforms(v, "uri-reference")


def _names(m: _Meta, v: Any, depth: int) -> bool:
    """``stringArray``: distinct strings."""
    return type(v) is list and all(type(s) is str for s in v) and len(set(v)) == len(v)


def _types(m: _Meta, v: Any, depth: int) -> bool:
    if type(v) is str:
        return v in _SIMPLE_TYPES
    return _names(m, v, depth) and len(v) >= 1 and all(t in _SIMPLE_TYPES for t in v)


def _schema(m: _Meta, v: Any, depth: int) -> bool:
    return m.schema(v, depth)


def _schemas(m: _Meta, v: Any, depth: int) -> bool:
    """``schemaArray``: at least one schema."""
    return type(v) is list and len(v) >= 1 and all(m.schema(s, depth) for s in v)


def _schema_map(m: _Meta, v: Any, depth: int) -> bool:
    return type(v) is dict and all(m.schema(s, depth) for s in v.values())


def _pattern_map(m: _Meta, v: Any, depth: int) -> bool:
    return _schema_map(m, v, depth) and all(m.conforms(k, "regex") for k in v)


def _names_map(m: _Meta, v: Any, depth: int) -> bool:
    return type(v) is dict and all(_names(m, s, depth) for s in v.values())


def _items_draft7(m: _Meta, v: Any, depth: int) -> bool:
    return m.schema(v, depth) or _schemas(m, v, depth)


# -- the tables: every keyword each meta-schema names (None: left to jsonschema) ----------------

_COMMON: dict[str, Rule | None] = {
    "$id": None, "$schema": _uri, "$ref": _uri_reference, "$comment": _string,
    "title": _string, "description": _string, "default": _any, "readOnly": _boolean, "examples": _array,
    "multipleOf": _positive, "maximum": _number, "exclusiveMaximum": _number, "minimum": _number,
    "exclusiveMinimum": _number, "maxLength": _count, "minLength": _count, "pattern": _regex,
    "maxItems": _count, "minItems": _count, "uniqueItems": _boolean, "contains": _schema,
    "maxProperties": _count, "minProperties": _count, "required": _names, "additionalProperties": _schema,
    "definitions": _schema_map, "properties": _schema_map, "patternProperties": _pattern_map,
    "dependencies": None, "propertyNames": _schema, "const": _any, "enum": _array, "type": _types,
    "format": _string, "contentMediaType": _string, "contentEncoding": _string,
    "if": _schema, "then": _schema, "else": _schema,
    "allOf": _schemas, "anyOf": _schemas, "oneOf": _schemas, "not": _schema,
}  # fmt: skip

_DRAFT7: dict[str, Rule | None] = {**_COMMON, "additionalItems": _schema, "items": _items_draft7}

_DRAFT202012: dict[str, Rule | None] = {
    **_COMMON,
    "$anchor": None, "$dynamicRef": None, "$dynamicAnchor": None, "$vocabulary": None,
    "$recursiveAnchor": None, "$recursiveRef": None, "$defs": _schema_map,
    "prefixItems": _schemas, "items": _schema, "dependentSchemas": _schema_map,
    "unevaluatedItems": _schema, "unevaluatedProperties": _schema,
    "maxContains": _count, "minContains": _count, "dependentRequired": _names_map,
    "deprecated": _boolean, "writeOnly": _boolean, "contentSchema": _schema,
}  # fmt: skip

_TABLES: dict[type[Validator], dict[str, Rule | None]] = {
    jsonschema.Draft7Validator: _DRAFT7,
    jsonschema.Draft202012Validator: _DRAFT202012,
}
