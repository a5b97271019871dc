"""Typing text-valued parameters by the tool's JSON Schema (docs/typing.md)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from support import count_calls, sweep

from tooldialect.coerce import strip_template_newlines, type_arguments, type_value

S = {"type": "string"}
I = {"type": "integer"}  # noqa: E741 - S, I, N, B, Z: the initials of the schema types
N = {"type": "number"}
B = {"type": "boolean"}
Z = {"type": "null"}


@pytest.mark.parametrize(
    "text,schema,value",
    [
        ("  Paris  ", S, "  Paris  "),  # a string keeps every character
        ("02139", S, "02139"),
        ("123", S, "123"),
        ("true", S, "true"),
        (" 42 ", I, 42),
        ("-7", I, -7),
        ("5.0", I, 5),  # an integral number is narrowed
        ("02139", I, "02139"),  # not an integer spelling: stays the text (validation reports it)
        ("4.5", I, "4.5"),
        ("1e3", N, 1000.0),
        ("3.25", N, 3.25),
        ("12", N, 12),
        ("inf", N, "inf"),  # not finite: stays the text
        ("NaN", N, "NaN"),
        ("1e999", N, "1e999"),
        ("true", B, True),
        ("False", B, False),
        ("yes", B, "yes"),  # only true/false are booleans
        ("1", B, "1"),
        ("null", Z, None),
        ("None", Z, "None"),
        ('{"a": 1}', {"type": "object"}, {"a": 1}),
        ("[1, 2]", {"type": "array"}, [1, 2]),
        ("{a: 1,}", {"type": "object"}, {"a": 1}),  # repaired JSON inside a value
        ("[1, 2]", {"type": "object"}, "[1, 2]"),
        ("null", {"type": ["string", "null"]}, None),
        ("Smith", {"type": ["string", "null"]}, "Smith"),
        ("null", {"anyOf": [{"type": "string"}, {"type": "null"}]}, None),
        ("7", {"oneOf": [{"type": "integer"}, {"type": "string"}]}, 7),
        ("seven", {"oneOf": [{"type": "integer"}, {"type": "string"}]}, "seven"),
        ("null", {"type": "string", "nullable": True}, None),
        ("2", {"enum": [1, 2, 3]}, 2),
        ("2", {"enum": ["1", "2"]}, "2"),
        ("4", {"enum": [1, 2, 3]}, "4"),
        (
            '{"n": "7", "s": "7", "l": ["1", 2]}',
            {"type": "object", "properties": {"n": I, "s": S, "l": {"type": "array", "items": I}}},
            {"n": 7, "s": "7", "l": [1, 2]},
        ),
        ('[{"ok": "true"}]', {"type": "array", "items": {"type": "object", "properties": {"ok": B}}}, [{"ok": True}]),
    ],
)
def test_typing_table(text, schema, value):
    got = type_value(text, schema)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize(
    "text,value",
    [
        ("42", 42),
        ("-1.5", -1.5),
        ("true", True),
        ("null", None),
        ('{"a": [1]}', {"a": [1]}),
        ("[1]", [1]),
        (" 42 ", 42),
        ("hello", "hello"),
        ('"quoted"', '"quoted"'),  # a JSON string literal is not unwrapped without a schema
        ("  spaced  ", "  spaced  "),
        ("1e999", "1e999"),
    ],
)
def test_without_a_schema_json_literals_are_typed(text, value):
    assert type_value(text, None) == value
    assert type_value(text, {}) == value


def test_dsml_string_flag():
    """Seed crate gap 5: string="true" always means string, "false" means a JSON value."""
    assert type_value("123", I, string=True) == "123"
    assert type_value('["x"]', {"type": "array"}, string=True) == '["x"]'
    assert type_value(" 123 ", S, string=False) == 123
    assert type_value("not json", S, string=False) == "not json"


def test_number_spellings_are_symmetric():
    """Seed crate gap 12: one rule for every family."""
    for text in ("yes", "no", "1", "0", "TRUE "):
        assert type_value(text, B) == (True if text.strip().lower() == "true" else text)
    for text in ("inf", "-inf", "Infinity", "NaN", "nan"):
        assert type_value(text, N) == text
    assert type_value("5.0", I) == 5 and type_value("5.5", I) == "5.5"


def test_template_newlines():
    assert strip_template_newlines("\nDallas\n") == "Dallas"
    assert strip_template_newlines("\n\n  code  \n\n") == "\n  code  \n"
    assert strip_template_newlines("\r\nx\r\n") == "\r\nx\r"
    assert strip_template_newlines("x") == "x"


def test_type_arguments_by_object_schema():
    schema = {"type": "object", "properties": {"n": I, "s": S}}
    assert type_arguments([("n", "3"), ("s", "3"), ("x", "3")], schema) == {"n": 3, "s": "3", "x": 3}
    assert type_arguments([("n", "3")], None) == {"n": 3}


def test_typing_megabyte_values_is_linear():
    def ops(text, schema):
        return count_calls(lambda: type_value(text, schema))

    n = sweep(90_000, 22_500)  # a quarter of the size in the quick tier
    for schema, unit in ((S, "text \n"), ({"type": "array"}, "1, "), ({"type": "array", "items": I}, '"1", ')):
        small = "[" + unit * n + "0]" if schema is not S else unit * n
        large = "[" + unit * 4 * n + "0]" if schema is not S else unit * 4 * n
        assert len(large) >= 1_000_000 * n // 90_000
        a, b = ops(small, schema), ops(large, schema)
        assert b <= 4.8 * max(a, 1), (schema, a, b)


# -- the property: render as text, type back ----------------------------------------------------

SCALARS = {
    "string": st.text(max_size=12),
    "integer": st.integers(-(10**9), 10**9),
    "number": st.floats(allow_nan=False, allow_infinity=False, width=64),
    "boolean": st.booleans(),
    "null": st.none(),
}


@st.composite
def schema_and_value(draw, depth=0):
    kinds = ["string", "integer", "number", "boolean", "null", "nullable_string", "enum"]
    if depth < 2:
        kinds += ["array", "object"]
    kind = draw(st.sampled_from(kinds))
    if kind in SCALARS:
        return {"type": kind}, draw(SCALARS[kind])
    if kind == "nullable_string":
        schema = {"anyOf": [{"type": "string"}, {"type": "null"}]}
        return schema, draw(st.one_of(st.none(), st.text(max_size=8)))
    if kind == "enum":
        options = draw(st.lists(st.one_of(st.integers(0, 9), st.text(max_size=4)), min_size=1, max_size=4))
        return {"enum": options}, draw(st.sampled_from(options))
    if kind == "array":
        item = draw(st.sampled_from(sorted(SCALARS)))
        return {"type": "array", "items": {"type": item}}, draw(st.lists(SCALARS[item], max_size=3))
    props = {}
    value = {}
    for key in draw(st.lists(st.text(min_size=1, max_size=5), unique=True, max_size=3)):
        sub, v = draw(schema_and_value(depth + 1))
        props[key] = sub
        value[key] = v
    return {"type": "object", "properties": props}, value


def render(value) -> str:
    """Write a value the way an XML-parameter template does."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return "\n" + text + "\n"


def representable(schema, value) -> bool:
    """A string that also spells a value of another type the schema allows is ambiguous."""
    if isinstance(value, str):
        kinds = set()
        if isinstance(schema.get("type"), str):
            kinds.add(schema["type"])
        for alt in schema.get("anyOf", []):
            kinds.add(alt.get("type"))
        if "enum" in schema:
            return type_value(value, schema) == value
        return "string" in kinds and (
            kinds == {"string"} or type_value(value, {"type": sorted(kinds - {"string"})}) == value
        )
    if isinstance(value, float) and (math.isnan(value) or value != value):
        return False
    if isinstance(value, (dict, list)):
        return json.loads(json.dumps(value)) == value and _no_nested_ambiguity(schema, value)
    return True


def _no_nested_ambiguity(schema, value) -> bool:
    if isinstance(value, dict):
        props = schema.get("properties", {})
        return all(_no_nested_ambiguity(props.get(k, {}), v) for k, v in value.items())
    if isinstance(value, list):
        return all(_no_nested_ambiguity(schema.get("items", {}), v) for v in value)
    if isinstance(value, str):
        # a nested string stays a string only where the schema allows one
        return schema.get("type") in (None, "string")
    return True


@given(pair=schema_and_value())
def test_render_then_type_gives_the_value_back(pair):
    schema, value = pair
    assume(representable(schema, value))
    got = type_value(strip_template_newlines(render(value)), schema)
    assert got == value
    if isinstance(value, float):
        assert isinstance(got, (int, float))
    elif value is not None:
        assert type(got) is type(value)
