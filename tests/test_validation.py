"""Validation at native speed with jsonschema's verdicts (DESIGN §7, docs/decisions.md 96).

The compiled validator (tooldialect.jsoncheck) and the meta-schema table
(tooldialect.metaschema) may decide only what jsonschema would decide. Here both are
compared with a reference that calls jsonschema directly, the way the library did before
they existed: on every schema the tests use, on generated schemas (valid and broken), and
on instances that nearly fit (1, 1.0 and True; a missing required key; an extra key; NaN).
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import json
import math
import sys
import threading
import uuid
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema_specifications import REGISTRY
from support import ROOT, budget, toolsets

import tooldialect as td
from tooldialect import jsoncheck, metaschema
from tooldialect import toolset as toolset_module
from tooldialect.binding import Binder
from tooldialect.toolset import _openapi_nullable, _refs, _resolves
from tooldialect.transform import RawCall, excerpt

DEFAULT = jsonschema.Draft202012Validator

# -- the reference: jsonschema called the way the library called it before ---------------------


def reference_schema_error(name: str, schema: dict[str, Any]) -> str | None:
    """The ToolsetError message building a toolset gave for this schema, or None (and for
    a root ``$schema`` that is not a string, where jsonschema's AttributeError escaped
    before, the ToolsetError that replaced it)."""
    if not isinstance(schema.get("$schema", ""), str):
        return f"tool {name!r}: invalid JSON Schema at $schema: {schema['$schema']!r} is not of type 'string'"
    cls = jsonschema.validators.validator_for(schema, default=DEFAULT)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        path = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        return f"tool {name!r}: invalid JSON Schema at {path}: {exc.message}"
    except RecursionError:
        return f"tool {name!r}: the JSON Schema nests too deeply"
    for ref in _refs(schema, 0):
        if not _resolves(schema, ref):
            return (
                f"tool {name!r}: $ref {ref!r} does not resolve inside the schema "
                f"(only local references such as '#/$defs/name' are supported)"
            )
    return None


def reference_validator(schema: dict[str, Any]) -> Any:
    nullable = _openapi_nullable(schema, 0)
    return jsonschema.validators.validator_for(nullable, default=DEFAULT)(nullable)


def reference_diagnostics(validator: Any, name: str, arguments: Any) -> list[tuple[dict[str, Any], str]]:
    """(detail, message) of each ``arguments_invalid`` the binding pass reported."""
    try:
        errors = sorted(validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.absolute_path])
    except Exception as exc:
        reason = excerpt(f"the schema could not be applied: {exc}")
        return [({"name": name, "path": "$", "reason": reason}, f"{name}: the tool's schema could not be applied")]
    out = []
    for err in errors:
        path = "$" + "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
        reason = excerpt(err.message)
        out.append(({"name": name, "path": path, "reason": reason}, f"{name}: {path}: {reason}"))
    return out


def reference_is_valid(validator: Any, instance: Any) -> bool | None:
    """jsonschema's verdict, or None when it raises."""
    try:
        return bool(validator.is_valid(instance))
    except Exception:
        return None


# -- what the library does now ------------------------------------------------------------------


def build_error(name: str, schema: dict[str, Any]) -> str | None:
    try:
        td.Toolset([td.Tool(name=name, parameters=schema)])
    except td.ToolsetError as exc:
        return str(exc)
    return None


def diagnostics(tools: td.Toolset, name: str, arguments: dict[str, Any]) -> tuple[Any, list[Any]]:
    raw = RawCall(name=name, arguments=arguments, arguments_json=None, id=None, span=(0, 0), family="hermes")
    call, diags = Binder(tools, td.Policy()).bind(raw)
    assert call is not None
    return call.arguments, [(d.detail, d.message) for d in diags if d.kind == "arguments_invalid"]


def compiled(schema: dict[str, Any]) -> Any:
    validator = reference_validator(schema)
    return jsoncheck.compile_check(validator.schema, type(validator))


_UNKNOWN = object()


def agree(schema: dict[str, Any], instances: list[Any], name: str = "f", error: Any = _UNKNOWN) -> None:
    """The library's schema check, verdicts and diagnostics equal the reference's, for each
    instance (``error``: the reference's schema error, when the caller has it already)."""
    expected_error = reference_schema_error(name, schema) if error is _UNKNOWN else error
    assert build_error(name, schema) == expected_error
    if expected_error is not None:
        return
    tools = td.Toolset([td.Tool(name=name, parameters=schema)])
    binder = Binder(tools, td.Policy())
    validator = reference_validator(schema)
    check = jsoncheck.compile_check(validator.schema, type(validator))
    for instance in instances:
        arguments = instance if isinstance(instance, dict) else {"v": instance}
        if endless(validator, arguments):
            continue
        bound, got = diagnostics(tools, name, arguments)
        want = reference_diagnostics(validator, name, bound)
        assert got == want, (schema, arguments)
        assert tools.accepts(name, bound) is (want == [])
        assert binder._accepts(tools, name, bound) is (want == [])  # (the check it keeps per tool)
        if check is None:
            continue
        raised = any(message.endswith("could not be applied") for _, message in want)
        expected = (want == []) if bound is instance and not raised else reference_is_valid(validator, instance)
        if expected is not None:
            assert check(instance) is expected, (schema, instance)


def endless(validator: Any, instance: Any) -> bool:
    """Whether jsonschema itself cannot decide: a ``$ref`` that comes back to itself
    without consuming the instance recurses until Python's limit, which inside ``rpds``
    becomes a pyo3 PanicException (a BaseException). Such a schema is left to jsonschema
    alone (it is never compiled), as before, so there is nothing to compare."""
    try:
        validator.is_valid(instance)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception:
        return False
    except BaseException:
        return True
    return False


def typical(schema: Any, depth: int = 0) -> Any:
    """A plain instance read off a schema: each property, the first enum member …"""
    if not isinstance(schema, dict) or depth > 6:
        return None
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return typical(schema[key][0], depth + 1)
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    props = schema.get("properties")
    if isinstance(props, dict) or kind == "object":
        return {k: typical(v, depth + 1) for k, v in (props or {}).items()}
    if kind == "array" or "items" in schema:
        return [typical(schema.get("items"), depth + 1)]
    return {"string": "x", "integer": 1, "number": 1.5, "boolean": True}.get(kind) if isinstance(kind, str) else None


# -- instances that nearly fit ------------------------------------------------------------------

NEAR: list[Any] = [
    0, 1, -1, 1.0, 2.5, -0.0, 3, 100, 101, 2**64, -(2**70), 1e300, True, False, None,
    "", "a", "ab", "1", "true", "Paris", "é", "A1", [], [1], [1, 1.0], [True, 1], ["a", "a"],
    {}, {"a": 1}, math.inf, math.nan,
]  # fmt: skip
json_values = st.recursive(
    st.sampled_from(NEAR),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "x"]), inner, max_size=3),
    max_leaves=6,
)


TWINS: list[tuple[Any, list[Any]]] = [
    (1, [1.0, True, "1"]), (0, [0.0, False, -0.0]), (True, [1, "true"]), (False, [0, None]),
    (None, ["null", 0, False]), ("a", ["A", "a "]), ([1], [[1.0], [True], 1]),
]  # fmt: skip


def near_miss(value: Any) -> st.SearchStrategy[Any]:
    """The value, or one that differs only in a way JSON Schema may notice."""
    others = [o for k, twins in TWINS if type(k) is type(value) and k == value for o in twins]
    return st.sampled_from([value, value, *others, *NEAR[:6]])


def pointer(root: Any, ref: str) -> Any:
    try:
        return jsoncheck._pointer(root, ref[1:])
    except jsoncheck.Unsupported:
        return {}


@st.composite
def instance_for(draw: Any, schema: Any, root: Any, depth: int = 0) -> Any:
    """A value shaped by ``schema``: valid often, off by one detail often."""
    if depth > 4 or not isinstance(schema, dict) or draw(st.integers(0, 11)) == 0:
        return draw(json_values)
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#") and draw(st.booleans()):
        return draw(instance_for(pointer(root, ref), root, depth + 1))
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key] and draw(st.booleans()):
            return draw(instance_for(draw(st.sampled_from(schema[key])), root, depth + 1))
    if isinstance(schema.get("enum"), list) and schema["enum"] and draw(st.integers(0, 3)):
        return draw(near_miss(draw(st.sampled_from(schema["enum"]))))
    if "const" in schema and draw(st.integers(0, 3)):
        return draw(near_miss(schema["const"]))
    kind = schema.get("type")
    kind = draw(st.sampled_from(kind)) if isinstance(kind, list) and kind else kind
    if isinstance(schema.get("properties"), dict) or kind == "object":
        return draw(object_for(schema, root, depth))
    if "items" in schema or kind == "array":
        return draw(st.lists(instance_for(schema.get("items", {}), root, depth + 1), max_size=3))
    if kind == "string" or "pattern" in schema or "minLength" in schema:
        return draw(st.text(alphabet="aZ1 é_-", max_size=5) | st.sampled_from(["abc", "ABC", "a1", "2024-01-01"]))
    if kind in ("integer", "number") or any(k in schema for k in ("minimum", "maximum", "multipleOf")):
        return draw(st.integers(-3, 103) | st.sampled_from([1.0, 2.5, 4.0, -0.0, 2**64, math.inf, math.nan, True]))
    return draw(json_values)


@st.composite
def object_for(draw: Any, schema: dict[str, Any], root: Any, depth: int) -> dict[str, Any]:
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    out: dict[str, Any] = {}
    for key, sub in props.items():
        if draw(st.integers(0, 4)):
            out[key] = draw(instance_for(sub, root, depth + 1))
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    for key in required:
        if isinstance(key, str) and key not in out and draw(st.integers(0, 3)):
            out[key] = draw(json_values)
    if draw(st.integers(0, 3)) == 0:
        out[draw(st.sampled_from(["extra", "x1", "zz", "a"]))] = draw(json_values)
    return out


# -- schemas the tests use ----------------------------------------------------------------------

SCHEMA_WORDS = {"type", "properties", "anyOf", "oneOf", "allOf", "enum", "const", "$ref", "items", "required",
                "minimum", "maximum", "pattern", "nullable", "additionalProperties"}  # fmt: skip
ENVELOPES = ("parameters", "input_schema", "inputSchema")


_LITERAL_NODES = (ast.Dict, ast.List, ast.Tuple, ast.Constant, ast.Name, ast.Load, ast.UnaryOp, ast.USub, ast.UAdd)


def _literal(node: ast.AST, names: dict[str, Any]) -> Any:
    """The value of a literal expression in a test, names bound to module-level literals."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if not all(isinstance(n, _LITERAL_NODES) for n in ast.walk(node)):
        return None  # an operation or a call: not evaluated
    try:
        code = compile(ast.Expression(body=node), "<test>", "eval")  # type: ignore[arg-type]
        return eval(code, {"__builtins__": {}}, names)
    except Exception:
        return None


def _constants(tree: ast.Module) -> dict[str, Any]:
    names: dict[str, Any] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = _literal(stmt.value, names)
            if value is not None:
                names[stmt.targets[0].id] = value
    return names


def _schemas_in(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        return []
    found = [value[k] for k in ENVELOPES if isinstance(value.get(k), dict)]
    if not found and SCHEMA_WORDS & set(value) and "name" not in value:
        found.append(value if value.get("type") == "object" else {"type": "object", "properties": {"v": value}})
    return found


def schemas_the_tests_use() -> list[dict[str, Any]]:
    """Every schema written in tests/ (literal dicts that are schemas or carry one as
    ``parameters``, ``input_schema`` or ``inputSchema``) and in the corpus toolsets."""
    found: dict[str, dict[str, Any]] = {}

    def add(schema: dict[str, Any]) -> None:
        with contextlib.suppress(TypeError, ValueError):  # not JSON (a set, a tuple key): not a tool schema
            found.setdefault(json.dumps(schema, sort_keys=True), schema)

    for tools in toolsets().values():
        for tool in td.Toolset.coerce(tools):
            add(tool.parameters)
    for path in sorted((ROOT / "tests").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = _constants(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                for schema in _schemas_in(_literal(node, names)):
                    add(schema)
            elif isinstance(node, ast.keyword) and node.arg == "parameters":
                value = _literal(node.value, names)
                if isinstance(value, dict):
                    add(value)
    return list(found.values())


TEST_SCHEMAS = schemas_the_tests_use()


def test_the_tests_use_many_schemas_and_the_corpus_ones_compile():
    assert len(TEST_SCHEMAS) > 40
    for tools in toolsets().values():
        for tool in td.Toolset.coerce(tools):
            cls = jsonschema.validators.validator_for(tool.parameters, default=DEFAULT)
            assert metaschema.certainly_valid(tool.parameters, cls), tool.name
            assert compiled(tool.parameters) is not None, tool.name


def test_every_schema_the_tests_use_by_hand():
    """Each schema once: its check, and a plain instance, an empty one and near misses."""
    for schema in TEST_SCHEMAS:
        plain = typical(schema)
        near = {k: (1.0 if v == 1 else v) for k, v in plain.items()} if isinstance(plain, dict) else plain
        agree(schema, [plain, {}, near, {"extra": None}])


USABLE = [s for s in TEST_SCHEMAS if build_error("f", s) is None]  # the same as the reference's: above


@budget(100)
@given(data=st.data())
def test_every_schema_the_tests_use_with_near_misses(data):
    schema = data.draw(st.sampled_from(USABLE))
    agree(schema, [data.draw(instance_for(schema, schema)) for _ in range(4)], error=None)


# -- generated schemas --------------------------------------------------------------------------

PATTERNS = ["^[a-z]+$", "\\d", "^\\w+$", "é", "^.{2}$", "[A-Z]", "(?i)^ab", "^$", "a|b"]
DIALECTS = [
    None, None, None, "https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-07/schema#",
    "https://json-schema.org/draft/2019-09/schema", "http://json-schema.org/draft-06/schema#",
    "http://json-schema.org/draft-04/schema#",
]  # fmt: skip
NAMES = ["a", "b", "city", "n", "v"]
bounds = st.sampled_from([0, 1, 2, 3, 2.0, 100, -1, 0.5, 2**64])


@st.composite
def leaf(draw: Any) -> Any:
    kind = draw(st.sampled_from(["type", "types", "string", "number", "enum", "const", "bool", "empty"]))
    if kind == "type":
        return {"type": draw(st.sampled_from(["string", "integer", "number", "boolean", "null", "object", "array"]))}
    if kind == "types":
        return {"type": draw(st.lists(st.sampled_from(["string", "integer", "number", "null", "boolean"]),
                                      min_size=1, max_size=3, unique=True))}  # fmt: skip
    if kind == "string":
        out: dict[str, Any] = {"type": "string"}
        for key in ("minLength", "maxLength"):
            if draw(st.booleans()):
                out[key] = draw(st.sampled_from([0, 1, 2, 3, 2.0]))
        if draw(st.booleans()):
            out["pattern"] = draw(st.sampled_from(PATTERNS))
        if draw(st.booleans()):
            out["format"] = draw(st.sampled_from(["date", "email", "uri", "uuid", "date-time"]))
        return out
    if kind == "number":
        out = {"type": draw(st.sampled_from(["integer", "number"]))}
        for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
            if draw(st.integers(0, 3)) == 0:
                out[key] = draw(st.sampled_from([0, 1, 3, 100, 2.5, -1, 2**64] if key != "multipleOf" else [2, 3, 0.5]))
        return out
    if kind == "enum":
        return {"enum": draw(st.lists(json_values, min_size=1, max_size=4))}
    if kind == "const":
        return {"const": draw(json_values)}
    if kind == "bool":
        return draw(st.booleans())
    return {}


@st.composite
def node(draw: Any, depth: int = 0) -> Any:
    if depth >= 3 or draw(st.integers(0, 2)) == 0:
        out = draw(leaf())
    else:
        kind = draw(st.sampled_from(["object", "array", "anyOf", "oneOf", "allOf", "not", "if", "ref"]))
        out = draw(compound(kind, depth))
    if isinstance(out, dict) and "type" in out and draw(st.integers(0, 5)) == 0:
        out["nullable"] = True
    return out


@st.composite
def compound(draw: Any, kind: str, depth: int) -> Any:
    sub = node(depth + 1)
    if kind == "object":
        return draw(object_schema(depth + 1))
    if kind == "array":
        out: dict[str, Any] = {"type": "array", "items": draw(sub)}
        for key in ("minItems", "maxItems", "uniqueItems"):
            if draw(st.integers(0, 3)) == 0:
                out[key] = True if key == "uniqueItems" else draw(st.sampled_from([0, 1, 2]))
        return out
    if kind in ("anyOf", "oneOf", "allOf"):
        return {kind: draw(st.lists(sub, min_size=1, max_size=3))}
    if kind == "not":
        return {"not": draw(sub)}
    if kind == "if":
        out = {"if": draw(sub), "then": draw(sub)}
        if draw(st.booleans()):
            out["else"] = draw(sub)
        return out
    return {"$ref": draw(st.sampled_from(["#/$defs/a", "#/$defs/b", "#/properties/a"]))}


@st.composite
def object_schema(draw: Any, depth: int = 0) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(NAMES), max_size=4, unique=True))
    out: dict[str, Any] = {"type": "object", "properties": {n: draw(node(depth + 1)) for n in names}}
    if draw(st.booleans()):
        out["required"] = draw(st.lists(st.sampled_from(NAMES), max_size=3, unique=True))
    extra = draw(st.integers(0, 5))
    if extra == 0:
        out["additionalProperties"] = False
    elif extra == 1:
        out["additionalProperties"] = draw(node(depth + 1))
    elif extra == 2:
        out["patternProperties"] = {draw(st.sampled_from(["^x", "^z", "\\d"])): draw(node(depth + 1))}
        out["additionalProperties"] = draw(st.booleans())
    for key, values in (("minProperties", [0, 1, 2]), ("maxProperties", [1, 3])):
        if draw(st.integers(0, 5)) == 0:
            out[key] = draw(st.sampled_from(values))
    if draw(st.integers(0, 7)) == 0:
        out["propertyNames"] = {"pattern": "^[a-z]+$"}
    if draw(st.integers(0, 7)) == 0:
        out["dependentRequired"] = {"a": ["b"]}
    return out


UNSUPPORTED = [
    {"contains": {"type": "integer"}}, {"prefixItems": [{"type": "string"}]}, {"unevaluatedProperties": False},
    {"multipleOf": 0.1}, {"$schema": "http://json-schema.org/draft-07/schema#", "dependencies": {"a": ["b"]}},
    {"$id": "https://example.com/s", "properties": {"a": {"$ref": "#/$defs/i"}}, "$defs": {"i": {"type": "integer"}}},
    {"properties": {"self": {"$ref": "#"}}}, {"items": [{"type": "string"}]},
]  # fmt: skip


@st.composite
def tool_schema(draw: Any) -> dict[str, Any]:
    """A tool's parameters: an object schema, now and then with ``$defs``, a draft named in
    ``$schema``, or a keyword that is not compiled (jsonschema decides those)."""
    out = draw(object_schema())
    if draw(st.booleans()):
        out["$defs"] = {"a": draw(node(2)), "b": draw(leaf())}
    dialect = draw(st.sampled_from(DIALECTS))
    if dialect is not None:
        out = {"$schema": dialect, **out}
    if draw(st.integers(0, 5)) == 0:
        out.update(draw(st.sampled_from(UNSUPPORTED)))
    return out


@budget(80)
@given(schema=tool_schema(), data=st.data())
def test_generated_schemas_get_jsonschemas_verdicts_and_diagnostics(schema, data):
    agree(schema, [data.draw(instance_for(schema, schema)) for _ in range(5)])


def test_keywords_outside_the_subset_are_left_to_jsonschema():
    base = {"type": "object", "properties": {"a": {"type": "integer"}}}
    for extra in UNSUPPORTED:
        schema = {**base, **extra}
        assert compiled(schema) is None, extra
        agree(schema, [{}, {"a": 1}, {"a": "x"}, {"a": [1, 2]}, {"self": {"self": 1}}, {"b": 1.5}])
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", **base}
    assert compiled(draft4) is None
    agree(draft4, [{"a": 1.0}, {"a": 1}])


def test_near_misses_by_hand():
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 1},
            "x": {"type": "number", "maximum": 10},
            "e": {"enum": [1, "1", None, [1]]},
            "c": {"const": True},
            "s": {"type": "string", "maxLength": 2, "pattern": "^\\w+$"},
            "l": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
        },
        "required": ["n"],
        "additionalProperties": False,
    }
    cases = [
        {"n": 1}, {"n": 1.0}, {"n": True}, {"n": "1"}, {"n": 0}, {"n": 2**70}, {"n": 1.5}, {},
        {"n": 1, "x": math.nan}, {"n": 1, "x": math.inf}, {"n": 1, "x": 10.0}, {"n": 1, "x": 10 + 1e-9},
        {"n": 1, "e": 1.0}, {"n": 1, "e": True}, {"n": 1, "e": [1.0]}, {"n": 1, "e": [True]}, {"n": 1, "e": "1"},
        {"n": 1, "c": 1}, {"n": 1, "c": True}, {"n": 1, "s": "é1"}, {"n": 1, "s": "😀😀"}, {"n": 1, "s": "ab c"},
        {"n": 1, "l": [1, 1.0]}, {"n": 1, "l": [1, True]}, {"n": 1, "l": [[1], [1]]}, {"n": 1, "extra": 1},
        {"n": 1, "l": [1, 2], "s": "a", "x": 3, "e": None, "c": True},
    ]  # fmt: skip
    assert compiled(schema) is not None
    agree(schema, cases)


# -- the meta-schema table ----------------------------------------------------------------------

BREAKAGES: list[dict[str, Any]] = [
    {"minLength": -1}, {"minLength": 2.5}, {"minLength": 2.0}, {"minLength": True}, {"maxItems": "3"},
    {"type": "strin"}, {"type": []}, {"type": ["string", "string"]}, {"type": ["string", "null"]},
    {"required": "a"}, {"required": ["a", "a"]}, {"required": [1]}, {"enum": "a"}, {"enum": []},
    {"anyOf": []}, {"oneOf": {}}, {"pattern": "("}, {"pattern": "(?i)a"}, {"properties": {"a": 5}},
    {"patternProperties": {"(": {}}}, {"multipleOf": 0}, {"multipleOf": -1}, {"multipleOf": 0.5},
    {"items": [{}]}, {"additionalProperties": 3}, {"$ref": 5}, {"$ref": "#/properties"},
    {"description": 3}, {"title": None}, {"format": 1}, {"readOnly": "x"}, {"deprecated": 1},
    {"$defs": {"a": 3}}, {"definitions": []}, {"dependentRequired": {"a": ["b", "b"]}},
    {"minimum": "1"}, {"minimum": True}, {"examples": {}}, {"$comment": 5}, {"not": 5}, {"if": []},
    {"contentEncoding": 1}, {"$schema": 5}, {"x-anything": object}, {"propertyNames": "a"},
]  # fmt: skip


@st.composite
def broken(draw: Any) -> dict[str, Any]:
    """A tool schema with one keyword somewhere replaced by a value from BREAKAGES."""
    schema = draw(tool_schema())
    spots = [schema] + [s for s in schema["properties"].values() if isinstance(s, dict)]
    spot = draw(st.sampled_from(spots))
    spot.update(draw(st.sampled_from(BREAKAGES)))
    return schema


@budget(100)
@given(schema=broken())
def test_the_meta_schema_table_says_valid_only_when_jsonschema_does(schema):
    if isinstance(schema.get("$schema", ""), str):
        cls = jsonschema.validators.validator_for(schema, default=DEFAULT)
        if metaschema.certainly_valid(schema, cls):
            cls.check_schema(schema)
    assert build_error("f", schema) == reference_schema_error("f", schema)


def _meta_keywords(document: dict[str, Any]) -> set[str]:
    found = set(document.get("properties", {}))
    for part in document.get("allOf", []):
        uri = document["$id"].rsplit("/", 1)[0] + "/" + part["$ref"]
        found |= _meta_keywords(REGISTRY[uri].contents)
    return found


@pytest.mark.parametrize("cls", list(metaschema.tables()), ids=lambda c: c.__name__)
def test_each_table_names_exactly_the_keywords_of_its_meta_schema(cls):
    meta = cls.META_SCHEMA
    assert set(metaschema.tables()[cls]) == _meta_keywords(meta)
    # and the meta-schemas constrain nothing but their named keywords
    base = meta["$id"].rsplit("/", 1)[0]
    documents = [meta] + [REGISTRY[base + "/" + part["$ref"]].contents for part in meta.get("allOf", [])]
    for document in documents:
        assert set(document) <= {"$schema", "$id", "$vocabulary", "$dynamicAnchor", "title", "allOf", "type",
                                 "$comment", "properties", "$defs", "definitions", "default"}  # fmt: skip
        assert document["type"] == ["object", "boolean"]


# -- the cache and the fallback -----------------------------------------------------------------

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def test_same_json_shares_one_checked_schema_and_its_validators():
    a = td.Toolset([td.Tool(name="w", parameters=json.loads(json.dumps(WEATHER)))])
    b = td.Toolset([td.Tool(name="other", parameters=json.loads(json.dumps(WEATHER)))])
    assert a.validator("w") is b.validator("other")
    reordered = {"required": ["city"], "type": "object", "properties": {"city": {"type": "string"}}}
    c = td.Toolset([td.Tool(name="w", parameters=reordered)])
    assert c.validator("w") is not a.validator("w")  # key order is the order of jsonschema's errors


def test_the_cache_keeps_its_own_copy():
    params = json.loads(json.dumps(WEATHER)) | {"description": "mutated later"}
    tools = td.Toolset([td.Tool(name="w", parameters=params)])
    params["properties"]["city"]["type"] = "integer"  # the caller reuses its dict
    same = json.loads(json.dumps(WEATHER)) | {"description": "mutated later"}
    again = td.Toolset([td.Tool(name="w", parameters=same)])
    assert again.accepts("w", {"city": "Paris"}) and tools.accepts("w", {"city": "Paris"})


def test_schemas_that_are_not_plain_json_are_checked_every_time(monkeypatch):
    calls = []
    real = toolset_module._check_schema
    monkeypatch.setattr(toolset_module, "_check_schema", lambda tool: calls.append(tool.name) or real(tool))
    odd = {"type": "object", "properties": {"a": {"enum": (1, 2)}}}  # a tuple is no JSON array
    for _ in range(2):
        with pytest.raises(td.ToolsetError, match="is not of type 'array'"):
            td.Toolset([td.Tool(name="t", parameters=odd)])
    nan = {"type": "object", "properties": {"a": {"maximum": math.nan}}}
    td.Toolset([td.Tool(name="n", parameters=nan)])
    td.Toolset([td.Tool(name="n", parameters=nan)])
    assert calls == ["t", "t", "n", "n"]


def test_the_cache_is_bounded(monkeypatch):
    cache = toolset_module._Cache(3)
    monkeypatch.setattr(toolset_module, "_SCHEMAS", cache)
    for i in range(5):
        td.Toolset([td.Tool(name="t", parameters={"type": "object", "description": str(i)})])
    assert len(cache) == 3


def test_first_use_from_many_threads_compiles_once(monkeypatch):
    compiles = []
    real = toolset_module.compile_check
    monkeypatch.setattr(toolset_module, "compile_check", lambda *a: compiles.append(1) or real(*a))
    fresh = {**WEATHER, "description": str(uuid.uuid4())}  # a schema no other test built
    tools = td.Toolset([td.Tool(name="t", parameters=fresh)])
    barrier = threading.Barrier(8)
    results = []

    def use() -> None:
        barrier.wait()
        results.append(tools.accepts("t", {"city": "x"}))

    threads = [threading.Thread(target=use) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 8 and len(compiles) == 1


def test_without_the_compiler_jsonschema_decides_alone(monkeypatch):
    monkeypatch.setattr(jsoncheck, "_BUILDERS", {})
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    schema["description"] = str(uuid.uuid4())  # a schema no other test built
    assert compiled(schema) is None
    agree(schema, [{"n": 1}, {"n": 1.0}, {"n": True}, {}, {"n": "1", "x": 2}])
    tools = td.Toolset([td.Tool(name="f", parameters=schema)])
    r = td.parse('<tool_call>{"name": "f", "arguments": {"n": "x"}}</tool_call>', tools=tools)
    assert [d.detail["path"] for d in r.diagnostics] == ["$.n"]


def test_without_the_meta_table_jsonschema_checks_alone(monkeypatch):
    monkeypatch.setattr(metaschema, "_TABLES", {})
    fresh = str(uuid.uuid4())  # schemas no other test built
    for schema in ({"type": "object", "description": fresh}, {"type": "object", "required": "a", "title": fresh}):
        assert build_error("f", schema) == reference_schema_error("f", schema)


def test_the_benchmark_catalogue_builds_from_the_cheap_paths():
    """The realistic tool list of benchmarks/toolsets.py passes the meta-schema table and
    compiles: its toolset is built and its calls validated without jsonschema's walk."""
    bench = _load(ROOT / "benchmarks" / "toolsets.py")
    for tool in bench.catalogue(50):
        params = tool["function"]["parameters"]
        assert metaschema.certainly_valid(params, DEFAULT) and compiled(params) is not None
        agree(params, [bench.arguments(tool)], name=tool["function"]["name"])


def _load(path: Any) -> Any:
    """A script as a module, leaving sys.path as it was (benchmarks/ has its own run.py)."""
    saved = list(sys.path)
    try:
        spec = importlib.util.spec_from_file_location("_bench_toolsets", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path[:] = saved
