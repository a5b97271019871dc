"""The public data types: calls, diagnostics, results, policy and stream events.

All are frozen pydantic v2 models.  The engine builds them without validation (its
values are already checked): with ``model_construct``, or, for what it builds per call
and per delta, ``construct.constructor``, which builds the same instance in fewer steps.
Callers building them get full validation, and a bad ``Policy`` raises
:class:`~tooldialect.errors.PolicyError`, never a pydantic error.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import PolicyError

__all__ = [
    "DIAGNOSTIC_KINDS",
    "ArgumentsDelta",
    "CallAbort",
    "CallEnd",
    "CallStart",
    "Diagnostic",
    "DiagnosticEvent",
    "Event",
    "ParseResult",
    "Policy",
    "ReasoningDelta",
    "TextDelta",
    "ToolCall",
    "ToolChoice",
]

#: Every diagnostic kind, with what it means.  docs/diagnostics.md is generated from this.
DIAGNOSTIC_KINDS: dict[str, str] = {
    "malformed_block": "A recognised block whose body is not a valid call (or holds text that is not); "
    "the block is removed from the visible text and its calls, if any, kept.",
    "unterminated_block": "An opener with no body and no closer before the end of the text; the text is kept "
    "as written and scanning continues after the opener.",
    "truncated": "A payload cut off by the end of the text. By default the call is not returned and the block "
    "is removed from the text; the tool name is in the detail when it was readable.",
    "unknown_tool": "A call whose name is not in the toolset. Policy.unknown_tool decides whether it is kept; a family's no-tool name (its `no tool` header) is never kept.",
    "name_repaired": "A call name rewritten to resolve against the toolset (detail: from, to).",
    "arguments_repaired": "Arguments that needed a repair to parse (detail says which).",
    "arguments_invalid": "Arguments that are not a JSON object, or do not validate against the tool's schema.",
    "call_in_reasoning": "A call written inside a reasoning block. Not returned unless "
    "Policy.calls_in_reasoning is 'accept'.",
    "repetition_loop": "A block's opener repeated more than Policy.max_repeats times inside it without its "
    "closer (a model stuck in a loop): the loop is removed from the text and nothing in it is dispatched; "
    "calls completed before it stand.",
    "limit_exceeded": "A Policy limit was reached (block size, nesting depth, number of calls); what was over "
    "the limit is released as text or dropped, as the detail says.",
    "tool_choice": "A call that Policy.tool_choice does not allow (any call under 'none', a call to another "
    "tool than the one named), not returned; or no call at all under 'required'.",
}


_FROZEN = ConfigDict(frozen=True, extra="forbid")


class ToolCall(BaseModel):
    """One call the model wrote, bound to the toolset when one was given."""

    model_config = _FROZEN

    name: str
    arguments: dict[str, Any]
    arguments_json: str
    id: str | None = None
    family: str
    span: tuple[int, int]


class Diagnostic(BaseModel):
    """Something the parser noticed or changed. ``detail`` is structured and JSON-serialisable."""

    model_config = _FROZEN

    kind: str
    family: str | None = None
    detail: dict[str, Any] = Field(default_factory=dict)
    span: tuple[int, int] | None = None
    message: str = ""


class ParseResult(BaseModel):
    model_config = _FROZEN

    text: str
    reasoning: str
    calls: list[ToolCall]
    diagnostics: list[Diagnostic]


def _explain(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err.get("loc", ()))
        parts.append(f"{loc}: {err.get('msg', 'invalid value')}" if loc else err.get("msg", "invalid value"))
    return "invalid Policy: " + "; ".join(parts)


class ToolChoice(BaseModel):
    """A ``tool_choice`` that names one tool: only calls to it are returned."""

    model_config = _FROZEN

    name: str = Field(min_length=1)


def _tool_choice(value: Any) -> Any:
    """``tool_choice`` as a request spells it: ``"auto"``, ``"none"``, ``"required"`` (also
    Anthropic's ``"any"``), a tool's name, OpenAI's ``{"type": "function", "function":
    {"name": …}}`` or Anthropic's ``{"type": "tool", "name": …}`` / ``{"type": "auto"}`` …"""
    if isinstance(value, str):
        if value == "any":
            return "required"
        return value if value in ("auto", "none", "required") else ToolChoice(name=value)
    if isinstance(value, dict):
        kind = value.get("type")
        if kind == "function" and isinstance(value.get("function"), dict):
            return ToolChoice(name=value["function"].get("name", ""))
        if kind == "tool" or (kind is None and "name" in value):
            return ToolChoice(name=value.get("name", ""))
        if kind in ("auto", "none", "any", "required"):
            return _tool_choice(kind)
    return value  # ToolChoice, or what validation will refuse


class Policy(BaseModel):
    """How the parser decides what it was not told.  Every field has a documented default."""

    model_config = _FROZEN

    unknown_tool: Literal["keep", "drop", "error"] = "keep"
    truncated: Literal["drop", "keep"] = "drop"
    calls_in_reasoning: Literal["report", "accept"] = "report"
    start_in_reasoning: bool = False
    bare_json: bool = True
    max_depth: int = Field(default=64, ge=1, le=512)
    max_block_chars: int = Field(default=1 << 20, ge=256)
    max_calls: int = Field(default=1024, ge=1)
    max_repeats: int = Field(default=16, ge=1)
    tool_choice: Literal["auto", "none", "required"] | ToolChoice = "auto"

    @field_validator("tool_choice", mode="before")
    @classmethod
    def _spelled(cls, value: Any) -> Any:
        return _tool_choice(value)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise PolicyError(_explain(exc)) from None


def json_data(model: BaseModel) -> dict[str, Any]:
    """``model.model_dump(mode="json")`` without pydantic's depth limit (about 255 levels),
    which a call's arguments may pass (``Policy.max_depth`` goes to 512): the fields here
    are JSON values already, or tuples, turned into lists with a stack of its own."""
    out = model.model_dump()
    stack: list[Any] = [out]
    while stack:
        item = stack.pop()
        for key, value in item.items() if isinstance(item, dict) else enumerate(item):
            if isinstance(value, tuple):
                value = item[key] = list(value)
            if isinstance(value, (dict, list)):
                stack.append(value)
    return out


class _Event(BaseModel):
    model_config = _FROZEN
    type: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, **json_data(self)}


class TextDelta(_Event):
    type: ClassVar[str] = "text"
    text: str


class ReasoningDelta(_Event):
    type: ClassVar[str] = "reasoning"
    text: str


class CallStart(_Event):
    type: ClassVar[str] = "call_start"
    index: int
    name: str
    id: str | None = None


class ArgumentsDelta(_Event):
    type: ClassVar[str] = "arguments"
    index: int
    fragment: str


class CallEnd(_Event):
    type: ClassVar[str] = "call_end"
    index: int
    call: ToolCall


class CallAbort(_Event):
    type: ClassVar[str] = "call_abort"
    index: int
    reason: str


class DiagnosticEvent(_Event):
    type: ClassVar[str] = "diagnostic"
    diagnostic: Diagnostic


Event = TextDelta | ReasoningDelta | CallStart | ArgumentsDelta | CallEnd | CallAbort | DiagnosticEvent
