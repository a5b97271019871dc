"""The four text dialects: each one style of the shared text machinery."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..toolset import Toolset
from ._base import TextDialect, _json_body

__all__ = ["PFormat", "Python", "TypeScript", "Xml"]


@dataclass(frozen=True, repr=False)
class Xml(TextDialect):
    """``<tool_call>{"arguments": {…}, "name": "f"}</tool_call>``; the catalogue holds the full
    JSON Schema of every tool.  Writes a call without needing the toolset."""

    name: ClassVar[str] = "xml"
    style: ClassVar[str] = "xml"

    def _body(
        self, name: str, arguments: dict[str, Any], exact: str | None, tools: Toolset | None, strict: bool
    ) -> str:
        return _json_body(name, arguments, exact)


@dataclass(frozen=True, repr=False)
class PFormat(TextDialect):
    """``<tool_call>f[0|v0|1|v1]</tool_call>``: values in numbered slots; P-Format signatures."""

    name: ClassVar[str] = "pformat"
    style: ClassVar[str] = "pformat"


@dataclass(frozen=True, repr=False)
class Python(TextDialect):
    """``<tool_call>f(a="x", b=1)</tool_call>``: Python calls; Python stubs as the catalogue."""

    name: ClassVar[str] = "python"
    style: ClassVar[str] = "python"


@dataclass(frozen=True, repr=False)
class TypeScript(TextDialect):
    """``<tool_call>f({a: "x", b: 1})</tool_call>``: TypeScript calls; declarations as the catalogue."""

    name: ClassVar[str] = "typescript"
    style: ClassVar[str] = "typescript"
