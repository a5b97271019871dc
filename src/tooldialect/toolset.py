"""Tools offered to the model, read from the shapes providers use."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import ToolsetError
from .jsoncheck import Check, compile_check
from .metaschema import certainly_valid
from .names import NameIndex

__all__ = ["Tool", "Toolset", "parameter_order"]


class Tool(BaseModel):
    """A tool: its name, what it does, and the JSON Schema of its arguments."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise ToolsetError(f"invalid tool {data.get('name')!r}: {exc.errors()[0].get('msg')}") from None


def parameter_order(schema: Any) -> list[str]:
    """The parameters of an object schema in binding order: required ones in the order
    ``required`` lists them, then the optional ones alphabetically.  Catalogues number
    P-Format slots and order code-call arguments by it, and the readers of those bodies
    bind by it, so it lives with the tools rather than with either side."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(props, Mapping):
        return []
    required = schema.get("required")
    first = (
        list(dict.fromkeys(r for r in required if isinstance(r, str) and r in props))
        if isinstance(required, list)
        else []
    )
    return first + sorted(k for k in props if k not in first)


def _tool(name: Any, description: Any, parameters: Any, where: str) -> Tool:
    if not isinstance(name, str) or not name.strip():
        raise ToolsetError(f"{where}: a tool needs a non-empty string 'name'")
    if description is None:
        description = ""
    if not isinstance(description, str):
        raise ToolsetError(f"{where}: tool {name!r} has a 'description' that is not a string")
    if parameters is None:
        parameters = {"type": "object", "properties": {}}
    if not isinstance(parameters, Mapping):
        raise ToolsetError(f"{where}: tool {name!r} has parameters that are not a JSON Schema object")
    return Tool(name=name, description=description, parameters=dict(parameters))


_EDIT_PROPERTIES: dict[str, Any] = {
    "path": {"type": "string", "description": "Absolute path to the file or directory."},
    "file_text": {"type": "string", "description": "The file's content, for create."},
    "old_str": {"type": "string", "description": "The text to replace, for str_replace: it must occur exactly once."},
    "new_str": {"type": "string", "description": "The replacement, for str_replace; the text to insert, for insert."},
    "insert_line": {"type": "integer", "description": "The line after which new_str is inserted, for insert."},
    "view_range": {
        "type": "array",
        "items": {"type": "integer"},
        "description": "The lines to show, for view: [start, end], end -1 for the end of the file.",
    },
}


def _editor(commands: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "command": {"type": "string", "enum": commands, "description": "What to do."},
            **_EDIT_PROPERTIES,
        },
        "required": ["command", "path"],
    }


#: Anthropic's versioned client tools ({"type": "bash_20250124", "name": "bash"}), by type
#: prefix: the input schema the model is trained to call them with, as Anthropic publishes it
_ANTHROPIC_CLIENT_TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "bash_": (
        "Run a command in a persistent bash shell.",
        {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The bash command to run."},
                "restart": {"type": "boolean", "description": "Restart the shell instead of running a command."},
            },
        },
    ),
    # text_editor_20241022 and text_editor_20250124 (named str_replace_editor) have undo_edit;
    # text_editor_20250429 and later (str_replace_based_edit_tool) do not
    "text_editor_2024": (
        "View, create and edit files.",
        _editor(["view", "create", "str_replace", "insert", "undo_edit"]),
    ),
    "text_editor_20250124": (
        "View, create and edit files.",
        _editor(["view", "create", "str_replace", "insert", "undo_edit"]),
    ),
    "text_editor_": ("View, create and edit files.", _editor(["view", "create", "str_replace", "insert"])),
}
#: Anthropic's server tools: its API runs them itself, so a model served elsewhere cannot
_ANTHROPIC_SERVER_TOOLS = ("web_search_", "web_fetch_", "code_execution_", "tool_search_tool_")


def _builtin(entry: Mapping[str, Any], where: str) -> Tool | None:
    """An Anthropic built-in tool (a versioned ``type`` and no ``input_schema``) with the
    input schema Anthropic publishes for it; a ToolsetError for one it cannot be given;
    None for any other entry."""
    kind = entry.get("type")
    if not isinstance(kind, str) or kind in ("function", "custom") or "input_schema" in entry:
        return None
    name = entry.get("name")
    for prefix, (description, schema) in _ANTHROPIC_CLIENT_TOOLS.items():
        if kind.startswith(prefix):
            return _tool(name, entry.get("description") or description, schema, where)
    if kind.startswith(_ANTHROPIC_SERVER_TOOLS):
        raise ToolsetError(
            f"{where}: {kind!r} is an Anthropic server tool, run by Anthropic's API itself; a model served "
            "elsewhere cannot call it. Leave it out, or offer your own tool with an 'input_schema'"
        )
    raise ToolsetError(
        f"{where}: {kind!r} is a built-in tool type whose input schema tooldialect does not know "
        f"(it knows {', '.join(p + '*' for p in _ANTHROPIC_CLIENT_TOOLS)}); give the tool an 'input_schema'"
    )


def _from_entry(entry: Any, index: int) -> Tool:
    """Detect the shape of one tool object (OpenAI, Anthropic, MCP or bare)."""
    where = f"tool #{index}"
    if isinstance(entry, Tool):
        return entry
    if not isinstance(entry, Mapping):
        raise ToolsetError(f"{where}: expected a JSON object, got {type(entry).__name__}")
    builtin = _builtin(entry, where)
    if builtin is not None:
        return builtin
    if "function" in entry and isinstance(entry["function"], Mapping):
        fn = entry["function"]
        return _tool(fn.get("name"), fn.get("description"), fn.get("parameters"), where)
    if "input_schema" in entry:
        return _tool(entry.get("name"), entry.get("description"), entry.get("input_schema"), where)
    if "inputSchema" in entry:
        return _tool(entry.get("name"), entry.get("description"), entry.get("inputSchema"), where)
    if "name" in entry:
        return _tool(entry.get("name"), entry.get("description"), entry.get("parameters"), where)
    raise ToolsetError(
        f"{where}: not a tool object (expected OpenAI {{'type':'function','function':{{...}}}}, "
        f"Anthropic 'input_schema', MCP 'inputSchema', or {{'name','description','parameters'}})"
    )


class Toolset:
    """An ordered set of tools with unique names.

    Build it from provider shapes with :meth:`from_openai`, :meth:`from_anthropic`,
    :meth:`from_mcp`, or :meth:`coerce` (any of them, detected per entry).
    """

    __slots__ = ("_tools", "_by_name", "_schemas", "_index", "typings", "_binder")

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        items = list(tools)
        by_name: dict[str, Tool] = {}
        schemas: dict[str, _Schema] = {}
        for i, tool in enumerate(items):
            if not isinstance(tool, Tool):
                raise ToolsetError(f"tool #{i}: expected td.Tool, got {type(tool).__name__} (use Toolset.coerce)")
            if tool.name in by_name:
                raise ToolsetError(f"duplicate tool name {tool.name!r}: each tool in a toolset needs its own name")
            schemas[tool.name] = _schema_of(tool)
            by_name[tool.name] = tool
        self._tools = tuple(items)
        self._by_name = by_name
        self._schemas = schemas
        self._index: NameIndex | None = None
        # how each parameter written as text is typed (coerce.ValueTyping), by (tool, key):
        # filled by binding as values are typed, shared by every parse with this toolset
        self.typings: dict[tuple[str, str], Any] = {}
        # the binder the last stream over this toolset made, with the policy and the no-tool
        # names it was made for (binding.binder_for)
        self._binder: tuple[Any, Any, Any] | None = None

    @classmethod
    def coerce(cls, tools: Any) -> Toolset:
        """A Toolset from a Toolset, or from a list of tool objects of any supported shape."""
        if isinstance(tools, Toolset):
            return tools
        if isinstance(tools, (str, bytes)) or not isinstance(tools, Iterable):
            raise ToolsetError("tools must be a td.Toolset or a list of tool objects")
        if isinstance(tools, Mapping):
            raise ToolsetError("tools must be a list of tool objects, not a single object")
        return cls(_from_entry(entry, i) for i, entry in enumerate(tools))

    @classmethod
    def cached(cls, tools: Any) -> Toolset:
        """:meth:`coerce` for a server that receives the same tools with every request: the
        Toolset built for equal tool objects (the same JSON, in the same order) is returned
        again, with what parses learnt about it (its name index, how its values are typed).
        Kept process-wide, the least recently used of TOOLSET_CACHE_SIZE dropped first."""
        if isinstance(tools, Toolset):
            return tools
        try:
            key = json.dumps(tools, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError, RecursionError):
            return cls.coerce(tools)  # not plain JSON data: nothing to key it by
        got = _TOOLSETS.get(key)
        if got is None:
            got = _TOOLSETS.put(key, cls.coerce(json.loads(key)))  # its own copy of the tools
        return got

    @classmethod
    def from_openai(cls, tools: Iterable[Mapping[str, Any]]) -> Toolset:
        return cls.coerce(tools)

    @classmethod
    def from_anthropic(cls, tools: Iterable[Mapping[str, Any]]) -> Toolset:
        return cls.coerce(tools)

    @classmethod
    def from_mcp(cls, tools: Iterable[Mapping[str, Any]]) -> Toolset:
        return cls.coerce(tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def get(self, name: str) -> Tool | None:
        return self._by_name.get(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self._tools)

    def name_index(self) -> NameIndex:
        """The names indexed for resolving what a model wrote: built on first use, once
        (a race builds the same index twice, harmlessly)."""
        index = self._index
        if index is None:
            index = self._index = NameIndex(self._by_name)
        return index

    def validator(self, name: str) -> Any:
        """The jsonschema validator of a tool's schema: the reference for its verdicts and
        the source of every ``arguments_invalid`` path and message. Built on first use,
        once per distinct schema in the process (toolsets with the same schema share it)."""
        return self._schemas[name].validator()

    def check_of(self, name: str) -> Check:
        """``accepts(name, …)`` as one function of the arguments: the schema's compiled check
        where it has one (a binder keeps it, sparing two Python calls per call), else
        ``accepts`` itself.  The check may raise where ``accepts`` says False."""
        schema = self._schemas[name]
        try:
            check = schema.check()
        except Exception:  # noqa: BLE001 - accepts() says False, and the validator why
            check = None
        return check if check is not None else lambda arguments: self.accepts(name, arguments)

    def accepts(self, name: str, arguments: Any) -> bool:
        """Whether ``arguments`` are valid under tool ``name``'s schema: jsonschema's
        verdict, decided by a validator compiled from the schema where it can be
        (:mod:`tooldialect.jsoncheck`), by jsonschema elsewhere. False too when the schema
        cannot be applied: :meth:`validator` says why."""
        schema = self._schemas[name]
        try:
            check = schema.check()
            return check(arguments) if check is not None else bool(schema.validator().is_valid(arguments))
        except Exception:  # noqa: BLE001 - the caller asks jsonschema, which reports it
            return False

    def __repr__(self) -> str:
        return f"Toolset({list(self.names)!r})"


class _Schema:
    """One distinct parameters schema, checked when first seen. Its jsonschema validator
    and its compiled check are built on first use, once, under a lock: a toolset is
    shared by the threads of a server."""

    __slots__ = ("schema", "_validator", "_check", "_compiled", "_lock")

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self._validator: Any = None
        self._check: Check | None = None
        self._compiled = False
        self._lock = threading.Lock()

    def validator(self) -> Any:
        if self._validator is None:
            with self._lock:
                if self._validator is None:
                    schema = _openapi_nullable(self.schema, 0)
                    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
                    self._validator = cls(schema)
        return self._validator

    def check(self) -> Check | None:
        """The compiled validator, or None when the schema uses what is not compiled."""
        if not self._compiled:
            validator = self.validator()
            with self._lock:
                if not self._compiled:
                    self._check = compile_check(validator.schema, type(validator))
                    self._compiled = True
        return self._check


_E = TypeVar("_E")


class _Cache(Generic[_E]):
    """Entries by their canonical JSON, process-wide, least recently used first out:
    checked schemas (a server that builds a toolset per request checks each distinct
    schema once) and whole toolsets (:meth:`Toolset.cached`)."""

    __slots__ = ("size", "_entries", "_lock")

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[str, _E] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> _E | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, key: str, entry: _E) -> _E:
        """The entry kept for ``key``: ``entry``, or the one another thread put first."""
        with self._lock:
            kept = self._entries.setdefault(key, entry)
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
            return kept

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


SCHEMA_CACHE_SIZE = 1024
_SCHEMAS: _Cache[_Schema] = _Cache(SCHEMA_CACHE_SIZE)
TOOLSET_CACHE_SIZE = 64
_TOOLSETS: _Cache[Toolset] = _Cache(TOOLSET_CACHE_SIZE)


def clear_caches() -> None:
    """Forget every checked schema and cached toolset (benchmarks measure a first build with it)."""
    _SCHEMAS.clear()
    _TOOLSETS.clear()


def _schema_of(tool: Tool) -> _Schema:
    """The checked schema of a tool: from the cache when the same JSON was checked before,
    else checked now (raising ToolsetError) and cached. A schema that is not plain JSON
    data (a tuple, a subclass, NaN) is checked every time and shared with no one: its
    canonical JSON would not say everything jsonschema sees."""
    key = _canonical(tool.parameters)
    if key is not None:
        entry = _SCHEMAS.get(key)
        if entry is not None:
            return entry
    _check_schema(tool)
    if key is None:
        return _Schema(tool.parameters)
    return _SCHEMAS.put(key, _Schema(json.loads(key)))  # its own copy: the caller may mutate theirs


_SCALARS = (str, int, float, bool, type(None))


def _canonical(schema: dict[str, Any]) -> str | None:
    """The schema's JSON, keys in their order (jsonschema reports errors in that order), or
    None when the schema is not plain JSON data that this text describes exactly."""
    if not _plain(schema):
        return None
    try:
        return json.dumps(schema, separators=(",", ":"), allow_nan=False)
    except (ValueError, TypeError, RecursionError):
        return None


def _plain(root: Any) -> bool:
    """Whether a value is made of exactly dict (str keys), list, str, int, float, bool and
    None, at most 200 levels deep (type() is, not isinstance: a subclass may compare or
    print differently)."""
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        kind = type(node)
        if kind is dict:
            if depth >= 200 or not all(type(k) is str for k in node):
                return False
            stack.extend((v, depth + 1) for v in node.values())
        elif kind is list:
            if depth >= 200:
                return False
            stack.extend((v, depth + 1) for v in node)
        elif kind not in _SCALARS:
            return False
    return True


def _check_schema(tool: Tool) -> None:
    """Raise ToolsetError unless the schema is valid JSON Schema whose ``$ref``s resolve
    inside it. A schema the meta-schema table accepts skips jsonschema's walk (its verdict
    is the same, :mod:`tooldialect.metaschema`); any other is checked by jsonschema, whose
    error is reported."""
    schema = tool.parameters
    dialect = schema.get("$schema", "")
    if not isinstance(dialect, str):  # jsonschema's validator_for would raise AttributeError
        raise ToolsetError(f"tool {tool.name!r}: invalid JSON Schema at $schema: {dialect!r} is not of type 'string'")
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        if not certainly_valid(schema, cls):
            cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        path = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        raise ToolsetError(f"tool {tool.name!r}: invalid JSON Schema at {path}: {exc.message}") from None
    except RecursionError:
        raise ToolsetError(f"tool {tool.name!r}: the JSON Schema nests too deeply") from None
    for ref in _refs(schema, 0):
        if not _resolves(schema, ref):
            raise ToolsetError(
                f"tool {tool.name!r}: $ref {ref!r} does not resolve inside the schema "
                f"(only local references such as '#/$defs/name' are supported)"
            )


_DATA_KEYS = frozenset({"enum", "const", "default", "examples", "example"})


def _openapi_nullable(node: Any, depth: int) -> Any:
    """The schema with OpenAPI's ``nullable: true`` spelled in JSON Schema (null allowed),
    as tool catalogues written for OpenAPI mean it."""
    if depth > 200:
        raise ToolsetError("a JSON Schema nests more than 200 levels deep")
    if isinstance(node, list):
        return [_openapi_nullable(v, depth + 1) for v in node]
    if not isinstance(node, Mapping):
        return node
    out = {k: (v if k in _DATA_KEYS else _openapi_nullable(v, depth + 1)) for k, v in node.items()}
    if out.get("nullable") is not True:
        return out
    del out["nullable"]
    kind = out.get("type")
    if isinstance(kind, str):
        out["type"] = [kind, "null"]
    elif isinstance(kind, list):
        out["type"] = kind if "null" in kind else [*kind, "null"]
    else:
        return {"anyOf": [out, {"type": "null"}]}
    if isinstance(out.get("enum"), list) and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


def _refs(node: Any, depth: int) -> Iterator[str]:
    if depth > 200:
        raise ToolsetError("a JSON Schema nests more than 200 levels deep")
    if isinstance(node, Mapping):
        ref = node.get("$ref")
        if isinstance(ref, str):
            yield ref
        for value in node.values():
            yield from _refs(value, depth + 1)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value, depth + 1)


def _resolves(schema: Mapping[str, Any], ref: str) -> bool:
    """Whether a ``$ref`` points inside the schema (JSON Pointer after ``#``)."""
    if not ref.startswith("#"):
        return False
    node: Any = schema
    pointer = ref[1:]
    if not pointer:
        return True
    if not pointer.startswith("/"):
        return False
    for part in pointer[1:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and part.isascii() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False
    return True
