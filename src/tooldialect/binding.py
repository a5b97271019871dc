"""Binding: a neutral call record meets the toolset and the policy.

A pass of its own, shared by every family: it resolves the name, checks the shape of
the arguments, unwraps an argument envelope the schema does not expect, validates the
arguments against the tool's schema, and reports each decision as a diagnostic.
Nothing here reads model text; it works on records.
"""

from __future__ import annotations

import json
from typing import Any, Final, NamedTuple

from .argstream import member
from .coerce import ValueTyping
from .construct import constructor
from .errors import PolicyError
from .jsoncheck import Check
from .models import Diagnostic, Policy, ToolCall, ToolChoice
from .names import NameIndex, Resolution
from .records import ARGUMENT_KEYS, Issue, RawCall, excerpt, renamed
from .toolset import Toolset

__all__ = ["Binder", "Typed", "binder_for", "typed"]

# what binding builds from checked values, once per call and per diagnostic
_tool_call: Final = constructor(ToolCall, "name", "arguments", "arguments_json", "id", "family", "span")
_diagnostic: Final = constructor(Diagnostic, "kind", "family", "detail", "span", "message")


_UNTYPED: Final = ValueTyping(None)  # a parameter no schema describes


class Typed(NamedTuple):
    """A text parameter a stream typed as it sent it (``Binder.typed_value``): what it was
    typed from, the value, and the repairs typing it noted."""

    key: str
    text: str
    flag: bool | None
    tool: str | None
    value: Any
    notes: list[str]


def typed(key: str, text: str, flag: bool | None, tool: str | None, value: Any, notes: list[str]) -> Typed:
    """``Typed(key, text, flag, tool, value, notes)``, made without the interpreted
    ``__new__`` a named tuple's class call runs (one per parameter a stream sends)."""
    return tuple.__new__(Typed, (key, text, flag, tool, value, notes))


def binder_for(tools: Toolset | None, policy: Policy, no_tool: dict[str, frozenset[str]]) -> Binder:
    """A stream's binder: the one the last stream over ``tools`` made, when that was for
    the same policy and no-tool names (a binder keeps nothing of a stream's own: what it
    learns, the toolset keeps), else a new one, kept for the next stream."""
    if tools is None:
        return Binder(None, policy, no_tool)
    held = tools._binder
    if held is not None and held[0] is policy and held[1] is no_tool:
        binder: Binder = held[2]
        return binder
    binder = Binder(tools, policy, no_tool)
    tools._binder = (policy, no_tool, binder)
    return binder


class Binder:
    __slots__ = (
        "tools", "policy", "max_depth", "known", "index", "no_tool", "readers", "_typings", "_only", "_checks",
    )  # fmt: skip

    def __init__(self, tools: Toolset | None, policy: Policy, no_tool: dict[str, frozenset[str]] | None = None) -> None:
        self.tools = tools
        self.policy = policy
        self.max_depth = policy.max_depth  # (read per typed value: a Policy's attributes are slow to read)
        # per family, the names its model writes to call no tool (a grammar's `no tool` header)
        self.no_tool: dict[str, frozenset[str]] = no_tool or {}
        # the toolset's own name index and typings: built once per toolset, not per parse
        self.index: NameIndex | None = tools.name_index() if tools is not None else None
        self.known: frozenset[str] = self.index.names if self.index is not None else frozenset()
        # how each parameter of a tool is typed, worked out when first typed
        self._typings: dict[tuple[str, str], ValueTyping] = tools.typings if tools is not None else {}
        # each tool's Toolset.check_of, asked once
        self._checks: dict[str, Check] = {}
        # per grammar, what a stream's reader of its nodes is made from (engine/shared.py):
        # it depends on the toolset and the policy, so it is worked out once per binder
        self.readers: dict[str, Any] = {}
        # Policy.tool_choice: the one tool calls may name ("" for none at all), or None: any
        choice = policy.tool_choice
        self._only: str | None = choice.name if isinstance(choice, ToolChoice) else "" if choice == "none" else None
        if isinstance(choice, ToolChoice) and tools is not None and choice.name not in tools:
            raise PolicyError(
                f"tool_choice names {choice.name!r}, which the toolset does not offer "
                f"(it has {', '.join(map(repr, tools.names)) or 'no tools'})"
            )

    def resolve(self, name: str, gated: bool = False) -> Resolution:
        """What a written name resolves to.  Without a toolset it passes through unchanged;
        a registry-gated body binds its exact name only."""
        if self.index is None:
            return Resolution(name, True, None)
        if gated:
            return Resolution(name, name in self.known, None)
        return self.index.resolve(name)

    def announce(self, name: str, family: str | None = None) -> str | None:
        """The name a stream may announce before the call completes, or None to wait."""
        res = self.resolve(name)
        if (not res.known and self.policy.unknown_tool != "keep") or self.declines(name, family):
            return None
        if self._only is not None and res.name != self._only:
            return None  # it will not be returned: announce nothing
        return res.name

    def declines(self, name: str, family: str | None) -> bool:
        """Whether ``name`` is ``family``'s way of calling no tool (its `no tool` names)
        and the toolset offers no tool of that name: the model answers without a tool."""
        names = self.no_tool.get(family) if family is not None else None
        if not names or name not in names:
            return False
        if self.index is None:
            return True
        res = self.index.resolve(name)
        return not (res.known and res.name in names)

    def bind(self, raw: RawCall, typed: list[Typed] | None = None) -> tuple[ToolCall | None, list[Diagnostic]]:
        """The call ``raw`` records, bound to the toolset, and the diagnostics binding it
        gave.  ``typed``: its first text parameters as a stream already typed them, each
        used where it matches."""
        diags = [self.diagnostic(note, raw.family) for note in raw.notes] if raw.notes else []
        if self.no_tool and self.declines(raw.name, raw.family):
            detail: dict[str, Any] = {"name": raw.name, "policy": "drop", "reason": "no tool"}
            msg = f"{raw.name!r} is how the model says it calls no tool; the call is not returned"
            diags.append(self.diagnostic(Issue("unknown_tool", detail, raw.span, msg), raw.family))
            return None, diags
        res = self.resolve(raw.name, raw.gated)
        name = res.name
        if res.how is not None:
            diags.append(self.diagnostic(renamed(raw.name, name, res.how, raw.span), raw.family))
        arguments_json: str | None  # None only with text_params, whose JSON is written here
        if raw.text_params is not None:
            repairs: list[str] = []
            arguments, arguments_json = self._typed(name if res.known else None, raw.text_params, repairs, typed)
            if repairs:
                diags.append(
                    self.diagnostic(
                        Issue(
                            "arguments_repaired",
                            {"name": name, "repairs": list(dict.fromkeys(repairs))},
                            raw.span,
                            f"{name}: values repaired ({', '.join(dict.fromkeys(repairs))})",
                        ),
                        raw.family,
                    )
                )
        else:
            arguments, arguments_json = raw.arguments, raw.arguments_json
        if not res.known:
            action = self.policy.unknown_tool
            detail = {"name": name, "policy": action}
            if action == "error":
                detail["arguments"] = arguments
            msg = f"{name!r} is not in the toolset" + ("" if action == "keep" else "; the call is not returned")
            diags.append(self.diagnostic(Issue("unknown_tool", detail, raw.span, msg), raw.family))
            if action != "keep":
                return None, diags
        elif self.tools is not None:
            unwrapped = self._unwrap(name, arguments)
            if unwrapped is not None:
                key, arguments = unwrapped
                arguments_json = json.dumps(arguments, ensure_ascii=False)
                diags.append(
                    self.diagnostic(
                        Issue(
                            "arguments_repaired",
                            {"name": name, "repairs": [f"unwrapped the {key!r} envelope"]},
                            raw.span,
                            f"{name}: arguments were wrapped in {key!r}; unwrapped",
                        ),
                        raw.family,
                    )
                )
        if self._only is not None and name != self._only:
            diags.append(self.diagnostic(self._not_chosen(name, arguments, raw), raw.family))
            return None, diags
        if res.known and self.tools is not None and not self._accepts(self.tools, name, arguments):
            diags += self._invalid(name, arguments, raw)
        return _tool_call(name, arguments, arguments_json, raw.id, raw.family, raw.span), diags

    def _accepts(self, tools: Toolset, name: str, arguments: Any) -> bool:
        """``tools.accepts(name, arguments)``, by the check the toolset gave for the tool."""
        check = self._checks.get(name)
        if check is None:
            check = self._checks[name] = tools.check_of(name)
        try:
            return bool(check(arguments))
        except Exception:  # noqa: BLE001 - as Toolset.accepts: the validator reports it
            return False

    def _not_chosen(self, name: str, arguments: Any, raw: RawCall) -> Issue:
        """A call Policy.tool_choice does not allow: reported with its arguments."""
        choice = self.policy.tool_choice
        shown = choice.name if isinstance(choice, ToolChoice) else choice
        why = "no call" if self._only == "" else f"only {self._only!r}"
        return Issue(
            "tool_choice",
            {"tool_choice": shown, "name": name, "arguments": arguments},
            raw.span,
            f"tool_choice={shown!r} allows {why}; the call to {name!r} is not returned",
        )

    def unmet_choice(self, calls: int) -> Issue | None:
        """The issue at the end of a reply when ``tool_choice="required"`` and no call came."""
        if self.policy.tool_choice != "required" or calls:
            return None
        return Issue(
            "tool_choice",
            {"tool_choice": "required", "reason": "the reply holds no call"},
            None,
            "tool_choice='required' but the reply holds no call",
        )

    def _typed(
        self,
        name: str | None,
        params: list[tuple[str, str, bool | None]],
        notes: list[str],
        typed: list[Typed] | None = None,
    ) -> tuple[dict[str, Any], str]:
        """Values written as text, typed by the tool's schema (docs/typing.md): the
        arguments, and their JSON written member by member in the model's order (what a
        stream sends as each value completes; a repeated key is written again).  A value
        ``typed`` holds for the same tool, key, text and flag at its place is not typed again."""
        out: dict[str, Any] = {}
        parts: list[str] = []
        done = len(typed) if typed is not None else 0
        for i, (key, text, flag) in enumerate(params):
            seen = typed[i] if i < done and typed is not None else None
            if seen is not None and (seen.key, seen.text, seen.flag, seen.tool) == (key, text, flag, name):
                value = seen.value
                notes += seen.notes
            else:
                value = self.typed_value(name, key, text, flag, notes)
            parts.append(member(key, value, not parts))
            out[key] = value
        return out, "{" + "".join(parts) + "}"

    def typed_value(self, name: str | None, key: str, text: str, flag: bool | None, notes: list[str]) -> Any:
        """One value written as text, typed by the schema of ``name``'s parameter ``key``."""
        typing: ValueTyping | None
        if name is None:
            typing = _UNTYPED
        else:
            typing = self._typings.get((name, key))
            if typing is None:
                typing = self._typing(name, key)
        return typing.value(text, flag, notes, self.max_depth)

    def _typing(self, name: str, key: str) -> ValueTyping:
        """How ``name``'s parameter ``key`` is typed: kept for the tool's own parameters (a
        key the schema does not name, which the model chooses, is not remembered)."""
        tool = self.tools.get(name) if self.tools is not None else None
        assert self.tools is None or tool is not None  # name is a tool of the toolset
        schema = tool.parameters if tool is not None else None
        props = schema.get("properties") if isinstance(schema, dict) else None
        sub = props.get(key) if isinstance(props, dict) else None
        if not isinstance(sub, dict):
            return _UNTYPED
        typing = self._typings[(name, key)] = ValueTyping(sub)
        return typing

    def _unwrap(self, name: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        """``{"arguments": {…}}`` around the real object, when the schema has no such property."""
        if len(arguments) != 1:
            return None
        ((key, inner),) = arguments.items()
        if key not in ARGUMENT_KEYS or not isinstance(inner, dict):
            return None
        assert self.tools is not None
        tool = self.tools.get(name)
        assert tool is not None  # name is a tool of the toolset
        schema = tool.parameters
        props = schema.get("properties") if isinstance(schema, dict) else None
        if isinstance(props, dict) and key in props:
            return None
        return key, inner

    def _invalid(self, name: str, arguments: dict[str, Any], raw: RawCall) -> list[Diagnostic]:
        """``arguments_invalid`` for each of jsonschema's errors, sorted by path, for
        arguments the tool does not accept. Valid arguments, the common case, are
        recognised by the tool's compiled validator (``Toolset.accepts``), whose verdicts
        are jsonschema's (tests/test_validation.py); only the others pay for jsonschema's
        walk, which gives each error's path and message."""
        assert self.tools is not None
        validator = self.tools.validator(name)
        out = []
        try:
            errors = sorted(validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.absolute_path])
        except Exception as exc:  # noqa: BLE001 - a schema the validator cannot apply; never let it raise
            issue = Issue(
                "arguments_invalid",
                {"name": name, "path": "$", "reason": excerpt(f"the schema could not be applied: {exc}")},
                raw.span,
                f"{name}: the tool's schema could not be applied",
            )
            return [self.diagnostic(issue, raw.family)]
        for err in errors:
            path = "$" + "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
            out.append(
                self.diagnostic(
                    Issue(
                        "arguments_invalid",
                        {"name": name, "path": path, "reason": excerpt(err.message)},
                        raw.span,
                        f"{name}: {path}: {excerpt(err.message)}",
                    ),
                    raw.family,
                )
            )
        return out

    @staticmethod
    def diagnostic(issue: Issue, family: str | None) -> Diagnostic:
        return _diagnostic(issue.kind, family, issue.detail, issue.span, issue.message)
