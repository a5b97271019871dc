"""How a family writes calls: the one description ``render_call`` and ``td.export`` read.

A family's grammar header holds its *shape*, the canonical way the family writes a
call (``// write …`` lines, see docs/authoring.md).  The shape is parsed into the parts
below.  ``Family.render_call`` fills the parts with a call's name and arguments;
``td.export`` turns the same parts into a grammar that constrains a model to write
exactly that, so writer and constraint cannot drift apart.

Every marker in a shape is a terminal of the family's grammar, referred to by name:
the literal text is read from the compiled grammar, never written twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Union

__all__ = ["Arguments", "Id", "Index", "Key", "Lit", "Name", "Params", "Part", "Shape", "Value"]


@dataclass(frozen=True)
class Lit:
    """Fixed text: a marker (from a grammar terminal) or glue such as a newline."""

    text: str


@dataclass(frozen=True)
class Name:
    """The tool's name: ``raw`` as is, or ``json`` as a JSON string literal with its quotes."""

    encoding: Literal["raw", "json"] = "raw"


@dataclass(frozen=True)
class Arguments:
    """The whole argument object in one syntax.

    ``json``: a JSON object.  ``python``: the inside of a Python call's parentheses
    (keyword arguments, or one dict when a key is not an identifier).  ``keywords``:
    Python keyword arguments only (pythonic reads no positional dict, so a key that is
    not an identifier cannot be written).  ``typescript``: a
    TypeScript call's argument (an object literal).  ``pformat``: P-Format slots
    ``0|v0|1|v1`` keyed by parameter position.
    """

    syntax: Literal["json", "python", "keywords", "typescript", "pformat"] = "json"


@dataclass(frozen=True)
class Key:
    """Inside :class:`Params`: the parameter's name, ``raw`` or as a ``json`` string literal."""

    encoding: Literal["raw", "json"] = "raw"


@dataclass(frozen=True)
class Value:
    """Inside :class:`Params`: the parameter's value.

    ``text``: a string as its raw characters, any other value as compact JSON (the value
    runs up to the next fixed part, which it may not contain).  ``json``: always JSON.
    ``python``: a Python literal.
    """

    syntax: Literal["text", "json", "python"] = "text"


@dataclass(frozen=True)
class Params:
    """One ``item`` per argument, in the call's key order, ``sep`` between items."""

    item: tuple[Part, ...]
    sep: str = ""


@dataclass(frozen=True)
class Id:
    """The call's id as the model writes it (Mistral v11 ``[CALL_ID]``); ``pattern`` is the
    regex of ids the family writes, for exports."""

    pattern: str = r"[A-Za-z0-9]{9}"


@dataclass(frozen=True)
class Index:
    """The call's 0-based position in the reply (Kimi's ``functions.f:0``)."""


Part = Union[Lit, Name, Arguments, Params, Key, Value, Id, Index]  # noqa: UP007 - a runtime alias


@dataclass(frozen=True)
class Shape:
    """A family's canonical reply with calls.

    A reply is: optional prose (``prose_before``), then ``block_open``, the calls each
    written as ``call`` with ``sep`` between them, then ``block_close``.  A family that
    writes one block per call (Hermes) has empty ``block_open``/``block_close`` and the
    markers inside ``call``.  ``parallel`` False: the family writes one call per reply.
    A family that writes several spellings (``// variant`` lines) has one shape for each.
    """

    family: str
    call: tuple[Part, ...]
    block_open: tuple[Part, ...] = ()
    block_close: tuple[Part, ...] = ()
    sep: str = ""
    parallel: bool = True
    prose_before: bool = True
    notes: tuple[str, ...] = field(default=())
    variant: str = ""  # the spelling (a `// variant` name of the grammar); "" when it has none
