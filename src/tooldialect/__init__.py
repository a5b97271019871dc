"""tooldialect: read and write the text dialects in which language models call tools.

    import tooldialect as td
    result = td.parse(reply, tools=td.Toolset.from_openai(tools))
    result.text, result.reasoning, result.calls, result.diagnostics

Importing the package compiles no grammar; each compiles on first use.
"""

from __future__ import annotations

from . import anthropic, detect, dialects, export, families, jsonscan, openai, render, transcript
from .errors import (
    CorpusError,
    ExportError,
    GrammarError,
    MissingDependencyError,
    PolicyError,
    StreamClosedError,
    ToolDialectError,
    ToolsetError,
    UnknownFamilyError,
)
from .explain import Explanation, explain
from .models import (
    DIAGNOSTIC_KINDS,
    ArgumentsDelta,
    CallAbort,
    CallEnd,
    CallStart,
    Diagnostic,
    DiagnosticEvent,
    Event,
    ParseResult,
    Policy,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolChoice,
)
from .stream import ToolStream, parse, parse_tokens
from .toolset import Tool, Toolset
from .transcript import ToolResult


def _installed_version() -> str:
    """The version in the installed distribution's metadata: pyproject.toml's ``version``,
    the one place it is written."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tooldialect")
    except PackageNotFoundError:  # a checkout's src/ put on sys.path without installing it
        return "0+unknown"


__version__ = _installed_version()

#: Whether the modules the compiled build compiles with mypyc (``make compiled``; the list is
#: ``[tool.hatch.build.targets.wheel.hooks.mypyc]`` in pyproject.toml) are the ones imported:
#: False for the default, pure-Python install. Every one of them is compiled or none is.
compiled: bool = not jsonscan.__file__.endswith(".py")

__all__ = [
    "DIAGNOSTIC_KINDS",
    "ArgumentsDelta",
    "CallAbort",
    "CallEnd",
    "CallStart",
    "CorpusError",
    "Diagnostic",
    "DiagnosticEvent",
    "Event",
    "Explanation",
    "ExportError",
    "GrammarError",
    "MissingDependencyError",
    "ParseResult",
    "Policy",
    "PolicyError",
    "ReasoningDelta",
    "StreamClosedError",
    "TextDelta",
    "Tool",
    "ToolCall",
    "ToolChoice",
    "ToolDialectError",
    "ToolResult",
    "ToolStream",
    "Toolset",
    "ToolsetError",
    "UnknownFamilyError",
    "anthropic",
    "compiled",
    "detect",
    "dialects",
    "explain",
    "export",
    "families",
    "openai",
    "parse",
    "parse_tokens",
    "render",
    "transcript",
]
