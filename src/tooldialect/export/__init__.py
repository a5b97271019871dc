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
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from ..errors import ExportError, PolicyError
from ..render.protocol import check_tool_choice
from ..shape import Shape
from ..toolset import Tool, Toolset

__all__ = [
    "FORMATS",
    "LazyGrammar",
    "Trigger",
    "grammar",
    "openers_of",
    "shape_of",
    "stops_of",
    "structural_tag",
    "variant_of",
]

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


def shape_of(family: Any, variant: str | None = None) -> Shape:
    """The shape of a family given by name (or a Family, or a Shape as is); ``variant``: the
    shape of that spelling of the family."""
    if isinstance(family, Shape):
        return family
    from .. import families

    fam = families.get(family) if isinstance(family, str) else family
    if variant is not None:
        shape: Shape = fam.writer(variant).shape
        return shape
    got: Shape | None = getattr(fam, "shape", None)
    if got is None:
        raise ExportError(f"family {getattr(fam, 'name', family)!r} does not describe how it writes calls (no shape)")
    return got


def variant_of(family: Any, variant: Any = None, model: Any = None) -> str | None:
    """The spelling an export writes: ``variant`` as named, or the one ``model`` (a model id)
    writes, by the globs of the grammar's ``// variant`` lines; None for the family's first
    (its default).  A family with one spelling takes a ``model`` and ignores it.  Raises
    ``PolicyError`` for an unknown variant, a model that matches no variant of a family with
    several, or both options at once."""
    if variant is None and model is None:
        return None
    if variant is not None and model is not None:
        raise PolicyError("give the variant or the model id, not both: the model id only picks the variant")
    if isinstance(family, Shape):
        raise PolicyError("a Shape is one spelling already: variant and model apply to a family name")
    from .. import families

    fam = families.get(family) if isinstance(family, str) else family
    if model is not None:
        if not isinstance(model, str):
            raise PolicyError(f"model must be a model id string, got {type(model).__name__}")
        if not fam.variants:
            return None  # one spelling: whatever the model, it writes that one
        variant = fam.variant_for(model)
    if not isinstance(variant, str):
        raise PolicyError(f"variant must be a name such as 'v3.1', got {type(variant).__name__}")
    return fam._own_variant(variant)


def _prepare(
    family: Any, tools: Any, mode: Any, parallel: Any, variant: str | None = None
) -> tuple[Shape, list[Tool], bool]:
    if not isinstance(family, (str, Shape)) and not hasattr(family, "shape"):
        raise PolicyError(f"family must be a family name such as 'hermes', got {type(family).__name__}")
    shape = shape_of(family, variant)
    toolset = Toolset.coerce(tools)
    if not len(toolset):
        raise ExportError("an export needs at least one tool: with no tools there is no call to constrain")
    if not isinstance(parallel, bool):
        raise PolicyError("parallel must be True or False")
    if isinstance(mode, (Mapping, str)):
        choice = check_tool_choice(mode, toolset.names)
    else:
        raise PolicyError(f"mode must be 'auto', 'required' or {{'name': TOOL}}, got {mode!r}")
    if choice == "none":
        raise PolicyError("mode 'none' allows no call, so there is nothing to export: send no grammar")
    if isinstance(choice, dict):
        chosen = toolset.get(choice["name"])
        assert chosen is not None  # check_tool_choice found the name among the tools
        allowed = [chosen]
    else:
        allowed = list(toolset)
    _check_names(family, shape, allowed, variant)
    return shape, allowed, isinstance(choice, dict) or choice == "required"


def stops_of(family: Any, variant: str | None = None) -> dict[int, tuple[str, ...]]:
    """Where the family's reader ends each raw value of its shape (regexes, by part id):
    a text value in the grammar may hold none of them."""
    if isinstance(family, Shape):
        return {}
    from .. import families
    from .. import shape as sh

    fam = families.get(family) if isinstance(family, str) else family
    writer = fam.writer(variant)
    out: dict[int, tuple[str, ...]] = {}
    for part in writer.shape.call:
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


def _check_names(family: Any, shape: Shape, tools: list[Tool], variant: str | None = None) -> None:
    """A tool or parameter name the family cannot write (a raw name holding what ends it)
    cannot be in its grammar either: the family's own writer says which."""
    if isinstance(family, Shape):
        return
    from .. import families
    from .. import shape as sh

    fam = families.get(family) if isinstance(family, str) else family
    writer = fam.writer(variant)
    for tool in tools:
        try:
            for part in shape.call:
                if isinstance(part, sh.Name) and part.encoding == "raw":
                    writer.check_raw(part, tool.name, f"the tool name {tool.name!r}")
                if isinstance(part, sh.Params):
                    for key in tool.parameters.get("properties") or {}:
                        for inner in part.item:
                            if isinstance(inner, sh.Key) and inner.encoding == "raw":
                                writer.check_raw(inner, key, f"the parameter name {key!r}")
        except PolicyError as exc:
            raise ExportError(f"tool {tool.name!r}: {exc}") from None


def grammar(
    family: Any,
    tools: Any,
    *,
    format: str = "lark",
    mode: Any = "auto",
    parallel: bool = True,
    variant: str | None = None,
    model: str | None = None,
) -> str | LazyGrammar:
    """A grammar for a reply of ``family`` that calls ``tools``.

    ``format="lark"`` returns llguidance Lark text for the whole reply: prose where the
    family writes prose (never holding the marker that opens a call), then the calls,
    each naming an offered tool with arguments that follow its JSON Schema (``%json``).
    ``"gbnf"`` (llama.cpp) and ``"ebnf"`` (xgrammar) return a :class:`LazyGrammar` for the
    block of calls, with the triggers that start it.

    ``mode``: ``"auto"`` (text, or text then calls), ``"required"`` (at least one call),
    or ``{"name": TOOL}`` (calls of that tool only) — a dict, so a tool named ``auto``
    is never ambiguous.  ``parallel=False``: one call.  ``variant`` (a name from
    ``td.families.get(family).variants``) or ``model`` (a model id, matched against the
    variants' globs) picks the spelling of a family that writes several (DeepSeek R1/V3 or
    V3.1 …); without either, the family's first.  Raises ``PolicyError`` for a bad option
    (an unknown format or variant, a model no variant matches), ``UnknownFamilyError`` for
    an unknown family and ``ExportError`` for what the format cannot express.
    """
    if format not in FORMATS:
        raise PolicyError(f"unknown export format {format!r}; use one of {', '.join(FORMATS)}")
    from ._reply import ReplyBuilder  # the grammar builders load on first export, not at import

    spelling = variant_of(family, variant, model)
    shape, allowed, required = _prepare(family, tools, mode, parallel, spelling)
    builder = ReplyBuilder(shape, allowed, format, stops_of(family, spelling), openers_of(family), _strips(family))
    rules = builder.build(allowed, required=required, parallel=parallel)
    if format == "lark":
        text = rules.lark()
        _validate_lark(text)
        return text
    lazy = not required
    triggers = tuple(Trigger.model_validate(t) for t in builder.triggers(allowed)) if lazy else ()
    lazy_format: Literal["gbnf", "ebnf"] = "gbnf" if format == "gbnf" else "ebnf"
    body = rules.gbnf() if lazy_format == "gbnf" else rules.ebnf()
    return LazyGrammar(format=lazy_format, grammar=body, lazy=lazy, triggers=triggers)


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
            tokens: ClassVar[list[bytes]] = [*(bytes([i]) for i in range(256)), b""]
            special_token_ids: ClassVar[list[int]] = [256]

            def __call__(self, text: Any) -> list[int]:
                return list(text.encode("utf-8") if isinstance(text, str) else text)

        _TOKENIZER = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_Bytes()))
    return _TOKENIZER


def structural_tag(
    family: Any,
    tools: Any,
    *,
    mode: Any = "auto",
    parallel: bool = True,
    variant: str | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """The structural tag for replies of ``family`` calling ``tools`` (a JSON-ready dict,
    the value of an OpenAI-style ``response_format``).  ``mode``, ``parallel``, ``variant``
    and ``model`` as for :func:`grammar`."""
    from ._structural import build_structural_tag

    spelling = variant_of(family, variant, model)
    return build_structural_tag(family, tools, mode=mode, parallel=parallel, variant=spelling)
