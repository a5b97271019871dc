"""Tools offered to the model, read from the shapes providers use."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import ToolsetError

__all__ = ["Tool", "Toolset"]


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


def _from_entry(entry: Any, index: int) -> Tool:
    """Detect the shape of one tool object (OpenAI, Anthropic, MCP or bare)."""
    where = f"tool #{index}"
    if isinstance(entry, Tool):
        return entry
    if not isinstance(entry, Mapping):
        raise ToolsetError(f"{where}: expected a JSON object, got {type(entry).__name__}")
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

    __slots__ = ("_tools", "_by_name", "_validators")

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        items = list(tools)
        by_name: dict[str, Tool] = {}
        for i, tool in enumerate(items):
            if not isinstance(tool, Tool):
                raise ToolsetError(f"tool #{i}: expected td.Tool, got {type(tool).__name__} (use Toolset.coerce)")
            if tool.name in by_name:
                raise ToolsetError(f"duplicate tool name {tool.name!r}: each tool in a toolset needs its own name")
            _check_schema(tool)
            by_name[tool.name] = tool
        self._tools = tuple(items)
        self._by_name = by_name
        self._validators: dict[str, Any] = {}

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

    def validator(self, name: str) -> Any:
        """The compiled JSON Schema validator of a tool (built once per toolset)."""
        v = self._validators.get(name)
        if v is None:
            schema = _openapi_nullable(self._by_name[name].parameters, 0)
            cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
            v = cls(schema)
            self._validators[name] = v
        return v

    def __repr__(self) -> str:
        return f"Toolset({list(self.names)!r})"


def _check_schema(tool: Tool) -> None:
    schema = tool.parameters
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
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
