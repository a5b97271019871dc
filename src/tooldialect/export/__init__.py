"""Constrained-decoding grammars for a family's replies with tool calls.

    td.export.grammar("hermes", tools)                      # llguidance Lark: the whole reply
    td.export.grammar("hermes", tools, format="gbnf")       # llama.cpp: LazyGrammar(grammar, triggers)
    td.export.grammar("hermes", tools, format="ebnf")       # xgrammar EBNF: LazyGrammar
    td.export.structural_tag("hermes", tools)               # xgrammar structural tag (dict)

Every export is built from the family's :class:`~tooldialect.shape.Shape`, the same parts
``render_call`` writes, so what the grammar allows is what the family writes and the
parser reads.  A schema keyword or a shape the target cannot express raises
:class:`~tooldialect.ExportError`; an export is never looser than the schema.  See
docs/export.md for what each format covers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..errors import ExportError, PolicyError
from ..render.protocol import check_tool_choice
from ..shape import Shape
from ..toolset import Tool, Toolset

__all__ = ["FORMATS", "LazyGrammar", "Trigger", "grammar", "openers_of", "shape_of", "stops_of", "structural_tag"]

#: The grammar formats :func:`grammar` writes.
FORMATS = ("lark", "gbnf", "ebnf")


class Trigger(BaseModel):
    """What starts a lazy grammar: a ``word`` (a literal string) or a ``pattern`` (a regex
    whose first group starts where the grammar begins), as llama.cpp's
    ``grammar_triggers`` take them."""

    model_config = ConfigDict(frozen=True)

    type: Literal["word", "pattern"]
    value: str


class LazyGrammar(BaseModel):
    """A GBNF or EBNF grammar for the block of calls.  ``lazy``: the grammar applies from
    the first match of a trigger on (free text before it is unconstrained); when False
    (``mode`` required or a named tool) it applies from the first character and
    ``triggers`` is empty."""

    model_config = ConfigDict(frozen=True)

    format: Literal["gbnf", "ebnf"]
    grammar: str
    lazy: bool
    triggers: tuple[Trigger, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "grammar": self.grammar,
            "lazy": self.lazy,
            "triggers": [t.model_dump() for t in self.triggers],
        }


def shape_of(family: Any) -> Shape:
    """The shape of a family given by name (or a Family, or a Shape as is)."""
    if isinstance(family, Shape):
        return family
    from .. import families

    fam = families.get(family) if isinstance(family, str) else family
    got = getattr(fam, "shape", None)
    if got is None:
        raise ExportError(f"family {getattr(fam, 'name', family)!r} does not describe how it writes calls (no shape)")
    return got


def _prepare(family: Any, tools: Any, mode: Any, parallel: Any) -> tuple[Shape, list[Tool], bool]:
    if not isinstance(family, (str, Shape)) and not hasattr(family, "shape"):
        raise PolicyError(f"family must be a family name such as 'hermes', got {type(family).__name__}")
    shape = shape_of(family)
    toolset = Toolset.coerce(tools)
    if not len(toolset):
        raise ExportError("an export needs at least one tool: with no tools there is no call to constrain")
    if not isinstance(parallel, bool):
        raise PolicyError("parallel must be True or False")
    if isinstance(mode, Mapping) or isinstance(mode, str):
        choice = check_tool_choice(mode, toolset.names)
    else:
        raise PolicyError(f"mode must be 'auto', 'required' or {{'name': TOOL}}, got {mode!r}")
    if choice == "none":
        raise PolicyError("mode 'none' allows no call, so there is nothing to export: send no grammar")
    allowed = [toolset.get(choice["name"])] if isinstance(choice, dict) else list(toolset)
    _check_names(family, shape, allowed)  # type: ignore[arg-type]
    return shape, allowed, isinstance(choice, dict) or choice == "required"  # type: ignore[return-value]


def stops_of(family: Any) -> dict[int, tuple[str, ...]]:
    """Where the family's reader ends each raw value of its shape (regexes, by part id):
    a text value in the grammar may hold none of them."""
    if isinstance(family, Shape):
        return {}
    from .. import families
    from .. import shape as sh

    fam = families.get(family) if isinstance(family, str) else family
    writer = fam.writer()
    out: dict[int, tuple[str, ...]] = {}
    for part in fam.shape.call:
        for inner in part.item if isinstance(part, sh.Params) else ():
            checks = writer.raw.get(id(inner))
            if isinstance(inner, sh.Value) and checks is not None:
                # a stop is fixed text or a terminal's own pattern: as regexes, both
                out[id(inner)] = tuple(re.escape(p) if isinstance(p, str) else p.pattern for p in checks.stops)
    return out


def _strips(family: Any) -> bool:
    """Whether the family's reader drops the newline a template writes around a text value."""
    if isinstance(family, Shape):
        return False
    from .. import families

    fam = families.get(family) if isinstance(family, str) else family
    return bool(fam.grammar.header.value_newlines == "strip")


def openers_of(family: Any) -> tuple[str, ...]:
    """The regexes of every block opener the family's reader finds anywhere in text."""
    if isinstance(family, Shape):
        return ()
    from .. import families

    fam = families.get(family) if isinstance(family, str) else family
    return tuple(t.pattern.source for t in fam.grammar.openers.get("start", ()) if t.pattern is not None)


def _check_names(family: Any, shape: Shape, tools: list[Tool]) -> None:
    """A tool or parameter name the family cannot write (a raw name holding what ends it)
    cannot be in its grammar either: the family's own writer says which."""
    if isinstance(family, Shape):
        return
    from .. import families
    from .. import shape as sh

    fam = families.get(family) if isinstance(family, str) else family
    writer = fam.writer()
    for tool in tools:
        try:
            for part in shape.call:
                if isinstance(part, sh.Name) and part.encoding == "raw":
                    writer.check_raw(part, tool.name, f"the tool name {tool.name!r}")
                if isinstance(part, sh.Params):
                    for key in (tool.parameters.get("properties") or {}):
                        for inner in part.item:
                            if isinstance(inner, sh.Key) and inner.encoding == "raw":
                                writer.check_raw(inner, key, f"the parameter name {key!r}")
        except PolicyError as exc:
            raise ExportError(f"tool {tool.name!r}: {exc}") from None


def grammar(
    family: Any, tools: Any, *, format: str = "lark", mode: Any = "auto", parallel: bool = True
) -> str | LazyGrammar:
    """A grammar for a reply of ``family`` that calls ``tools``.

    ``format="lark"`` returns llguidance Lark text for the whole reply: prose where the
    family writes prose (never holding the marker that opens a call), then the calls,
    each naming an offered tool with arguments that follow its JSON Schema (``%json``).
    ``"gbnf"`` (llama.cpp) and ``"ebnf"`` (xgrammar) return a :class:`LazyGrammar` for the
    block of calls, with the triggers that start it.

    ``mode``: ``"auto"`` (text, or text then calls), ``"required"`` (at least one call),
    or ``{"name": TOOL}`` (calls of that tool only) — a dict, so a tool named ``auto``
    is never ambiguous.  ``parallel=False``: one call.  Raises ``PolicyError`` for a bad
    option (an unknown format included), ``UnknownFamilyError`` for an unknown family and
    ``ExportError`` for what the format cannot express.
    """
    if format not in FORMATS:
        raise PolicyError(f"unknown export format {format!r}; use one of {', '.join(FORMATS)}")
    from ._reply import ReplyBuilder  # the grammar builders load on first export, not at import

    shape, allowed, required = _prepare(family, tools, mode, parallel)
    builder = ReplyBuilder(shape, allowed, format, stops_of(family), openers_of(family), _strips(family))
    rules = builder.build(allowed, required=required, parallel=parallel)
    if format == "lark":
        text = rules.lark()
        _validate_lark(text)
        return text
    lazy = not required
    triggers = tuple(Trigger(**t) for t in builder.triggers(allowed)) if lazy else ()
    body = rules.gbnf() if format == "gbnf" else rules.ebnf()
    return LazyGrammar(format=format, grammar=body, lazy=lazy, triggers=triggers)  # type: ignore[arg-type]


def _validate_lark(text: str) -> None:
    """Where llguidance is installed, let it build a matcher for the grammar (its JSON
    Schema support is the final word on ``%json``, and building the lexer finds a regex
    too costly to match): a grammar it refuses is an :class:`ExportError`."""
    try:
        import llguidance
    except ImportError:  # the export extra is not installed: the grammar is still written
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:  # llguidance would refuse it with the whole grammar as its message
        raise ExportError(
            f"the grammar holds {text[exc.start]!r}, a lone surrogate (from a tool name or schema) that UTF-8 "
            "cannot encode, so llguidance cannot read it: remove it from the tools"
        ) from None
    matcher = llguidance.LLMatcher(_byte_tokenizer(llguidance), text, log_level=0)
    if matcher.is_error():
        raise ExportError(f"llguidance refuses the exported grammar: {matcher.get_error().strip().splitlines()[0]}")


_TOKENIZER: Any = None


def _byte_tokenizer(llguidance: Any) -> Any:
    """A tokenizer of 256 byte tokens and an end token: enough to build a matcher, no
    model needed (built once)."""
    global _TOKENIZER
    if _TOKENIZER is None:

        class _Bytes:
            eos_token_id = 256
            bos_token_id = None
            tokens = [bytes([i]) for i in range(256)] + [b""]
            special_token_ids = [256]

            def __call__(self, text: Any) -> list[int]:
                return list(text.encode("utf-8") if isinstance(text, str) else text)

        _TOKENIZER = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_Bytes()))
    return _TOKENIZER


def structural_tag(family: Any, tools: Any, *, mode: Any = "auto", parallel: bool = True) -> dict[str, Any]:
    """The structural tag for replies of ``family`` calling ``tools`` (a JSON-ready dict,
    the value of an OpenAI-style ``response_format``).  ``mode`` and ``parallel`` as for
    :func:`grammar`."""
    from ._structural import build_structural_tag

    return build_structural_tag(family, tools, mode=mode, parallel=parallel)
