"""Dialects: one complete way of speaking tools each — catalogue, call syntax, result
envelope and replay on one object, so they cannot disagree.

    d = td.dialects.get("pformat")                     # or td.dialects.PFormat()
    system += d.instructions(tools, tool_choice="auto")
    reply = d.parse(text, tools)
    messages = d.replay(transcript, tools=tools)      # pair_tool_cycles applied first

``Xml``, ``PFormat``, ``Python`` and ``TypeScript`` speak in text; ``Native`` uses the
provider's structured channel.  ``host_renders_catalogue=True`` (an option of each) says
the host's system prompt already holds the dialect's block and catalogue.
"""

from __future__ import annotations

from ..errors import PolicyError
from ._base import CONTINUATION, Dialect, TextDialect
from .native import Native
from .text import PFormat, Python, TypeScript, Xml

__all__ = ["CONTINUATION", "Dialect", "Native", "PFormat", "Python", "TextDialect", "TypeScript", "Xml", "get", "names"]

_BY_NAME: dict[str, type[TextDialect] | type[Native]] = {
    cls.name: cls for cls in (Xml, PFormat, Python, TypeScript, Native)
}


def names() -> list[str]:
    """The dialect names ``get`` takes."""
    return list(_BY_NAME)


def get(name: str, *, host_renders_catalogue: bool = False) -> TextDialect | Native:
    """The dialect called ``name``: ``"xml" | "pformat" | "python" | "typescript" | "native"``."""
    cls = _BY_NAME.get(name) if isinstance(name, str) else None
    if cls is None:
        raise PolicyError(f"unknown dialect {name!r}; use one of {', '.join(_BY_NAME)}")
    return cls(host_renders_catalogue=host_renders_catalogue)
