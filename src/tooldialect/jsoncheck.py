"""A compiled validator for the JSON Schema tool catalogues are written in, with
jsonschema's verdicts (DESIGN §7, docs/decisions.md 96).

jsonschema is the reference for which arguments a tool accepts, but it walks the schema
through Python generators on every call (about 100 µs for a five-property tool). A tool's
schema is fixed, so it is compiled here once into nested closures that answer only *is
this instance valid*, in a few µs. Only valid arguments are decided here; for invalid ones
the caller asks jsonschema, whose errors (path and message) are the diagnostics.

Two rules keep the verdicts jsonschema's:

- A keyword is compiled only when the validator class maps it to the jsonschema callable
  whose semantics the closure repeats (``_BUILDERS`` is keyed by those callables), and
  only when the class's type checker is the one of drafts 6 to 2020-12. A draft that
  means something else by a keyword (draft 4's boolean ``exclusiveMinimum``) or a
  jsonschema that changes one is therefore not compiled.
- A schema that uses anything else — an unknown keyword that jsonschema applies, a
  float ``multipleOf`` (it raises on ``inf``), ``$ref`` that recurses or meets a ``$id``
  or anchor, ``prefixItems``, ``contains``, ``unevaluated*``, ``$dynamicRef``, a nesting
  deeper than ``MAX_DEPTH`` — is not compiled at all: :func:`compile_check` returns None
  and the caller uses jsonschema. ``format`` is an annotation, as for the validator the
  toolset builds (no format checker). ``pattern`` uses Python's ``re``, as jsonschema does.

tests/test_validation.py checks the verdicts against jsonschema's on every schema the
tests use and on generated ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sized
from numbers import Number
from typing import TYPE_CHECKING, Any, Final

import jsonschema

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = ["MAX_DEPTH", "Check", "compile_check"]

Check = Callable[[Any], bool]

MAX_DEPTH: Final = 40  # schema levels; deeper schemas are left to jsonschema
_MAX_NODES: Final = 2000  # subschemas compiled per schema ($ref targets are compiled where used)
_IDENTIFIERS: Final = frozenset({"$id", "id", "$anchor", "$dynamicAnchor", "$recursiveAnchor"})


class Unsupported(Exception):
    """The schema uses something this module does not compile."""


def compile_check(schema: Any, cls: type[Validator]) -> Check | None:
    """A function that tells whether an instance is valid under ``schema`` exactly as
    ``cls(schema).is_valid`` would (``cls`` built without a format checker), or None when
    the schema uses something not compiled here."""
    applicable = getattr(cls, "_APPLICABLE_VALIDATORS", None)
    if not _BUILDERS or applicable is None or getattr(cls, "TYPE_CHECKER", None) is not _TYPE_CHECKER:
        return None
    try:
        return _Compiler(schema, cls, applicable).node(schema, 0)
    except Exception:  # noqa: BLE001 - Unsupported, or a value no builder expected: jsonschema decides
        return None


class _Compiler:
    """The state of one compilation: the root (where ``$ref`` points), the validator
    class, the ``$ref`` targets being compiled (a cycle is not compiled) and a budget."""

    __slots__ = ("root", "cls", "applicable", "keywords", "open", "nodes", "_identified", "_validator")

    def __init__(self, root: Any, cls: type[Validator], applicable: Callable[[Any], Any]) -> None:
        self.root = root
        self.cls = cls
        self.applicable = applicable
        self.keywords: dict[str, Any] = dict(cls.VALIDATORS)
        self.open: set[int] = set()
        self.nodes = 0
        self._identified: bool | None = None
        self._validator: Any = None

    def node(self, node: Any, depth: int) -> Check:
        """The check of one subschema: all the keywords jsonschema applies to it."""
        if node is True:
            return _always
        if node is False:
            return _never
        if not isinstance(node, dict) or depth > MAX_DEPTH:
            raise Unsupported(node)
        self.nodes += 1
        if self.nodes > _MAX_NODES:
            raise Unsupported("too many subschemas")
        checks = []
        for key, value in self.applicable(node):
            fn = self.keywords.get(key)
            if fn is None:
                continue  # jsonschema ignores what it does not know
            build = _BUILDERS.get(fn)
            if build is None:
                raise Unsupported(key)
            check = build(self, value, node, depth + 1)
            if check is not None and check is not _always:
                checks.append(check)
        return _every(checks)

    def nodes_of(self, values: Any, depth: int) -> list[Check]:
        if not isinstance(values, list):
            raise Unsupported(values)
        return [self.node(v, depth) for v in values]

    def validator(self) -> Any:
        """A jsonschema validator of the root, for the keywords delegated to jsonschema."""
        if self._validator is None:
            self._validator = self.cls(self.root)
        return self._validator

    def identified(self) -> bool:
        """Whether the schema names a resource anywhere (``$id``, anchors): a ``$ref`` is
        then resolved against more than the root, which is not compiled here."""
        if self._identified is None:
            self._identified = any(key in _IDENTIFIERS for key in _keys(self.root, 0))
        return self._identified


def _keys(node: Any, depth: int) -> Iterator[Any]:
    if depth > 200:
        raise Unsupported("too deep")
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from _keys(value, depth + 1)
    elif isinstance(node, list):
        for value in node:
            yield from _keys(value, depth + 1)


# -- combinators ------------------------------------------------------------------------------


def _always(x: Any) -> bool:
    return True


def _never(x: Any) -> bool:
    return False


def _every(checks: list[Check]) -> Check:
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    kinds = [_CLASS_OF[check] for check in checks if check in _CLASS_OF]
    if len(kinds) == 1:
        # a type beside other keywords (an object with properties): tested inline, first
        # (the checks are pure, so the order changes no verdict)
        return _of_class(kinds[0], [check for check in checks if check not in _CLASS_OF])
    if len(checks) == 2:
        first, second = checks
        return lambda x: first(x) and second(x)
    fixed = tuple(checks)

    def every(x: Any) -> bool:
        return all(check(x) for check in fixed)

    return every


def _of_class(cls: type, rest: list[Check]) -> Check:
    """``isinstance(x, cls)`` and every check of ``rest``."""
    rest_check = _every(rest)
    return lambda x: isinstance(x, cls) and rest_check(x)


def _passes(fn: Any, validator: Any, value: Any, instance: Any, schema: Any) -> bool:
    """Whether jsonschema's own keyword callable finds no error (a delegated keyword)."""
    return next(iter(fn(validator, value, instance, schema) or ()), None) is None


def _bound(value: Any) -> Any:
    """A numeric keyword value (a bound, a length, a count), as jsonschema compares it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Unsupported(value)
    return value


# -- types ------------------------------------------------------------------------------------


def _is_number(x: Any) -> bool:
    t = type(x)
    if t is int or t is float:
        return True
    return not isinstance(x, bool) and isinstance(x, Number)


def _is_integer(x: Any) -> bool:
    if isinstance(x, bool):
        return False
    return isinstance(x, int) or (isinstance(x, float) and x.is_integer())


def _instance_of(cls: type) -> Check:
    return lambda x: isinstance(x, cls)


_CLASSES: Final = {"string": str, "object": dict, "array": list, "boolean": bool, "null": type(None)}
#: One ``isinstance`` check per class a ``type`` names alone, and the class of each: where
#: such a check stands beside others (``_every``) or under ``properties``, the class is
#: tested inline rather than through the check.
_INSTANCE: Final[dict[type, Check]] = {cls: _instance_of(cls) for cls in _CLASSES.values()}
_CLASS_OF: Final[dict[Check, type]] = {check: cls for cls, check in _INSTANCE.items()}


def _type(c: _Compiler, types: Any, node: Any, depth: int) -> Check:
    names = [types] if isinstance(types, str) else types
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise Unsupported(types)
    if any(n not in _CLASSES and n not in ("number", "integer") for n in names):
        raise Unsupported(types)
    classes = tuple(_CLASSES[n] for n in names if n in _CLASSES)
    numeric = _is_number if "number" in names else _is_integer if "integer" in names else None
    if numeric is None:
        if len(classes) == 1:
            return _INSTANCE[classes[0]]
        return lambda x: isinstance(x, classes)
    if not classes:
        return numeric
    return lambda x: isinstance(x, classes) or numeric(x)


# -- objects ----------------------------------------------------------------------------------


def _properties(c: _Compiler, props: Any, node: Any, depth: int) -> Check | None:
    if not isinstance(props, dict):
        raise Unsupported(props)
    subs: dict[str, tuple[type | None, Check]] = {}
    for key, sub in props.items():
        check = c.node(sub, depth)
        if check is not _always:
            subs[key] = (_CLASS_OF.get(check), check)  # a value of one type: its class
    if not subs:
        return None
    get = subs.get

    def properties(x: Any) -> bool:
        if isinstance(x, dict):
            for key, value in x.items():
                entry = get(key)
                if entry is not None:
                    cls, check = entry
                    if not (isinstance(value, cls) if cls is not None else check(value)):
                        return False
        return True

    return properties


def _required(c: _Compiler, required: Any, node: Any, depth: int) -> Check | None:
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise Unsupported(required)
    if not required:
        return None
    keys = tuple(dict.fromkeys(required))

    def required_(x: Any) -> bool:  # (a look-up per key: no keys view, no set per call)
        return not isinstance(x, dict) or all(key in x for key in keys)

    return required_


def _search(pattern: Any) -> Callable[[str], Any]:
    if not isinstance(pattern, str):
        raise Unsupported(pattern)
    try:
        return re.compile(pattern).search
    except (re.error, RecursionError, OverflowError, ValueError):
        raise Unsupported(pattern) from None


def _additional(c: _Compiler, extra: Any, node: Any, depth: int) -> Check | None:
    """``additionalProperties``: keys neither in ``properties`` nor matched by the
    ``patternProperties`` joined with ``|`` (jsonschema's ``find_additional_properties``)."""
    props = node.get("properties", {})
    patterns = node.get("patternProperties", {})
    if not isinstance(props, dict) or not isinstance(patterns, dict):
        raise Unsupported(node)
    joined = "|".join(_text(p) for p in patterns)
    matched = _search(joined) if joined else None
    if extra is True:
        return None
    if extra is False:
        if matched is None:
            known = frozenset(props)
            return lambda x: not isinstance(x, dict) or x.keys() <= known
        return lambda x: not isinstance(x, dict) or all(k in props or matched(k) for k in x)
    if not isinstance(extra, dict):
        raise Unsupported(extra)
    sub = c.node(extra, depth)

    def additional(x: Any) -> bool:
        if isinstance(x, dict):
            for key, value in x.items():
                if key not in props and not (matched is not None and matched(key)) and not sub(value):
                    return False
        return True

    return additional


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise Unsupported(value)
    return value


def _pattern_properties(c: _Compiler, patterns: Any, node: Any, depth: int) -> Check | None:
    if not isinstance(patterns, dict):
        raise Unsupported(patterns)
    pairs = tuple((_search(p), c.node(sub, depth)) for p, sub in patterns.items())

    def pattern_properties(x: Any) -> bool:
        if isinstance(x, dict):
            for search, check in pairs:
                for key, value in x.items():
                    if search(key) and not check(value):
                        return False
        return True

    return pattern_properties


def _property_names(c: _Compiler, sub: Any, node: Any, depth: int) -> Check:
    check = c.node(sub, depth)
    return lambda x: not isinstance(x, dict) or all(check(k) for k in x)


def _dependent_required(c: _Compiler, value: Any, node: Any, depth: int) -> Check:
    if not isinstance(value, dict) or not all(
        isinstance(deps, list) and all(isinstance(d, str) for d in deps) for deps in value.values()
    ):
        raise Unsupported(value)
    pairs = tuple((key, frozenset(deps)) for key, deps in value.items())
    return lambda x: not isinstance(x, dict) or all(key not in x or x.keys() >= deps for key, deps in pairs)


def _size(kind: type[Sized], at_least: bool) -> Callable[..., Check]:
    """``min``/``max`` ``Properties``, ``Items`` and ``Length``: a bound on ``len`` of one kind
    of instance (a string's length counts code points, as jsonschema's does)."""

    def build(c: _Compiler, value: Any, node: Any, depth: int) -> Check:
        bound = _bound(value)
        if at_least:
            return lambda x: not (isinstance(x, kind) and len(x) < bound)
        return lambda x: not (isinstance(x, kind) and len(x) > bound)

    return build


_min_properties, _max_properties = _size(dict, True), _size(dict, False)
_min_items, _max_items = _size(list, True), _size(list, False)
_min_length, _max_length = _size(str, True), _size(str, False)


# -- arrays -----------------------------------------------------------------------------------


def _items(c: _Compiler, items: Any, node: Any, depth: int) -> Check | None:
    """``items`` as one schema for every element (a list of schemas, and ``prefixItems``
    beside it, are not compiled)."""
    if isinstance(items, list) or "prefixItems" in node:
        raise Unsupported(items)
    check = c.node(items, depth)
    if check is _always:
        return None
    return lambda x: not isinstance(x, list) or all(map(check, x))


def _unique_items(c: _Compiler, value: Any, node: Any, depth: int) -> Check | None:
    """Delegated to jsonschema's own callable (its equality of 1, 1.0 and True)."""
    if not isinstance(value, bool):
        raise Unsupported(value)
    if not value:
        return None
    fn, validator = c.keywords["uniqueItems"], c.validator()
    return lambda x: not isinstance(x, list) or _passes(fn, validator, value, x, node)


# -- strings ----------------------------------------------------------------------------------


def _pattern(c: _Compiler, value: Any, node: Any, depth: int) -> Check:
    search = _search(value)
    return lambda x: not isinstance(x, str) or search(x) is not None


def _annotation(c: _Compiler, value: Any, node: Any, depth: int) -> None:
    """``format`` without a format checker: an annotation, never an error."""
    return None


# -- numbers ----------------------------------------------------------------------------------
# Each is written as jsonschema's failure test negated (``not x < m``, not ``x >= m``), so
# NaN passes exactly where it passes there.


def _minimum(c: _Compiler, value: Any, node: Any, depth: int) -> Check:
    m = _bound(value)
    return lambda x: not (_is_number(x) and x < m)


def _maximum(c: _Compiler, value: Any, node: Any, depth: int) -> Check:
    m = _bound(value)
    return lambda x: not (_is_number(x) and x > m)


def _exclusive_minimum(c: _Compiler, value: Any, node: Any, depth: int) -> Check:
    m = _bound(value)
    return lambda x: not (_is_number(x) and x <= m)


def _exclusive_maximum(c: _Compiler, value: Any, node: Any, depth: int) -> Check:
    m = _bound(value)
    return lambda x: not (_is_number(x) and x >= m)


def _multiple_of(c: _Compiler, value: Any, node: Any, depth: int) -> Check:
    """An integer divisor only: jsonschema divides by a float one, which raises on ``inf``,
    NaN and integers too large for a float (left to jsonschema, which reports it)."""
    if type(value) is not int or not 0 < value < 2**53:
        raise Unsupported(value)
    return lambda x: not (_is_number(x) and x % value)


# -- enum and const ---------------------------------------------------------------------------


def _members(values: list[Any], delegate: Check) -> Check:
    """Membership with jsonschema's equality (``1 == 1.0``, ``True != 1``) for scalar
    instances; lists, objects and anything unusual go to jsonschema's own callable."""
    strings, numbers, flags, null = set(), set(), set(), False
    for value in values:
        t = type(value)
        if t is str:
            strings.add(value)
        elif t is int or t is float:
            numbers.add(value)
        elif t is bool:
            flags.add(value)
        elif value is None:
            null = True
        elif t is not list and t is not dict:
            return delegate

    def member(x: Any) -> bool:
        t = type(x)
        if t is str:
            return x in strings
        if t is int or t is float:
            return x in numbers
        if t is bool:
            return x in flags
        if x is None:
            return null
        return delegate(x)

    return member


def _enum(c: _Compiler, value: Any, node: Any, depth: int) -> Check:
    if not isinstance(value, list):
        raise Unsupported(value)
    fn, validator = c.keywords["enum"], c.validator()
    return _members(value, lambda x: _passes(fn, validator, value, x, node))


def _const(c: _Compiler, value: Any, node: Any, depth: int) -> Check:
    fn, validator = c.keywords["const"], c.validator()
    return _members([value], lambda x: _passes(fn, validator, value, x, node))


# -- applicators ------------------------------------------------------------------------------


def _all_of(c: _Compiler, value: Any, node: Any, depth: int) -> Check:
    return _every([check for check in c.nodes_of(value, depth) if check is not _always])


def _any_of(c: _Compiler, value: Any, node: Any, depth: int) -> Check:
    checks = tuple(c.nodes_of(value, depth))
    if _always in checks:
        return _always
    return lambda x: any(check(x) for check in checks)


def _one_of(c: _Compiler, value: Any, node: Any, depth: int) -> Check:
    checks = tuple(c.nodes_of(value, depth))

    def one_of(x: Any) -> bool:
        found = False
        for check in checks:
            if check(x):
                if found:
                    return False
                found = True
        return found

    return one_of


def _not(c: _Compiler, value: Any, node: Any, depth: int) -> Check:
    check = c.node(value, depth)
    return lambda x: not check(x)


def _if(c: _Compiler, value: Any, node: Any, depth: int) -> Check | None:
    test = c.node(value, depth)
    then = c.node(node["then"], depth) if "then" in node else _always
    other = c.node(node["else"], depth) if "else" in node else _always
    if then is _always and other is _always:
        return None
    return lambda x: then(x) if test(x) else other(x)


def _ref(c: _Compiler, ref: Any, node: Any, depth: int) -> Check:
    """A ``$ref`` to a JSON Pointer inside the schema, in a schema that names no resource
    (no ``$id``, no anchor); its target is compiled where it is used. A cycle is not
    compiled (recursive schemas are left to jsonschema)."""
    if not isinstance(ref, str) or not ref.startswith("#") or "%" in ref or c.identified():
        raise Unsupported(ref)
    target = _pointer(c.root, ref[1:])
    if id(target) in c.open:
        raise Unsupported(ref)
    c.open.add(id(target))
    try:
        return c.node(target, depth)
    finally:
        c.open.discard(id(target))


def _pointer(root: Any, pointer: str) -> Any:
    """What a JSON Pointer names, read as the ``referencing`` library reads it."""
    if not pointer:
        return root
    if not pointer.startswith("/"):
        raise Unsupported(pointer)
    node = root
    for part in pointer[1:].split("/"):
        if isinstance(node, list):
            if not (part.isdigit() and part.isascii()) or int(part) >= len(node):
                raise Unsupported(pointer)
            node = node[int(part)]
        elif isinstance(node, dict):
            part = part.replace("~1", "/").replace("~0", "~")
            if part not in node:
                raise Unsupported(pointer)
            node = node[part]
        else:
            raise Unsupported(pointer)
    return node


# -- the table --------------------------------------------------------------------------------

_TYPE_CHECKER: Final = jsonschema.Draft202012Validator.TYPE_CHECKER  # the same object for drafts 6 to 2020-12


def _builders() -> dict[Any, Callable[..., Check | None]]:
    """jsonschema's keyword callables, each with the builder that repeats it. Their module
    is private to jsonschema: if it moves, nothing is compiled and jsonschema decides."""
    try:
        from jsonschema import _keywords as kw
        from jsonschema import _legacy_keywords as legacy
    except ImportError:  # pragma: no cover - a jsonschema that reorganised its modules
        return {}
    table = {
        "type": _type, "properties": _properties, "required": _required,
        "additionalProperties": _additional, "patternProperties": _pattern_properties,
        "propertyNames": _property_names, "minProperties": _min_properties,
        "maxProperties": _max_properties, "dependentRequired": _dependent_required,
        "items": _items, "minItems": _min_items, "maxItems": _max_items, "uniqueItems": _unique_items,
        "minLength": _min_length, "maxLength": _max_length, "pattern": _pattern, "format": _annotation,
        "minimum": _minimum, "maximum": _maximum, "exclusiveMinimum": _exclusive_minimum,
        "exclusiveMaximum": _exclusive_maximum, "multipleOf": _multiple_of,
        "enum": _enum, "const": _const, "allOf": _all_of, "anyOf": _any_of, "oneOf": _one_of,
        "not_": _not, "if_": _if, "ref": _ref,
    }  # fmt: skip
    out: dict[Any, Callable[..., Check | None]] = {}
    for name, build in table.items():
        fn = getattr(kw, name, None)
        if fn is not None:
            out[fn] = build
    items = getattr(legacy, "items_draft6_draft7_draft201909", None)
    if items is not None:
        out[items] = _items
    return out


_BUILDERS = _builders()
