"""The errors a caller can cause.  Model text never raises; these are for the caller."""

from __future__ import annotations

__all__ = [
    "CorpusError",
    "ExportError",
    "GrammarError",
    "MissingDependencyError",
    "PolicyError",
    "StreamClosedError",
    "ToolDialectError",
    "ToolsetError",
    "UnknownFamilyError",
]


class ToolDialectError(Exception):
    """Root of every error tooldialect raises on purpose."""


class UnknownFamilyError(ToolDialectError, KeyError):
    """A family name that no grammar in the registry defines."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class ToolsetError(ToolDialectError, ValueError):
    """A tool list that cannot be used: wrong shape, duplicate names, invalid schema."""


class PolicyError(ToolDialectError, ValueError):
    """An option outside its documented range (a bad Policy field or argument)."""


class GrammarError(ToolDialectError):
    """A grammar that does not load or compile, or that breaks the engine's conventions."""


class CorpusError(ToolDialectError, ValueError):
    """A golden-vector file that does not follow the corpus format, or names a toolset it lacks."""


class StreamClosedError(ToolDialectError):
    """``feed()`` or ``close()`` on a stream that was already closed."""


class ExportError(ToolDialectError, ValueError):
    """A constrained-decoding export that the target format cannot express exactly (a
    schema keyword it lacks, a family shape it cannot follow): never a looser grammar."""


class MissingDependencyError(ToolDialectError, ImportError):
    """An optional part of tooldialect used without the package it needs; the message says
    which extra to install (``pip install 'tooldialect[table]'`` …)."""
