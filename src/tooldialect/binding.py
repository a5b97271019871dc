"""Binding: a neutral call record meets the toolset and the policy.

A pass of its own, shared by every family: it resolves the name, checks that the
arguments are an object, validates them against the tool's schema, and reports each
decision as a diagnostic.  Nothing here reads model text; it works on records.
"""

from __future__ import annotations

from typing import Any

from .models import Diagnostic, Policy, ToolCall
from .toolset import Toolset
from .transform import Issue, RawCall, excerpt

__all__ = ["Binder"]


class Binder:
    __slots__ = ("tools", "policy", "known")

    def __init__(self, tools: Toolset | None, policy: Policy) -> None:
        self.tools = tools
        self.policy = policy
        self.known: frozenset[str] = frozenset(tools.names) if tools is not None else frozenset()

    def resolve(self, name: str) -> tuple[str, bool]:
        """The name to report, and whether the toolset offers it (True without a toolset)."""
        name = name.strip()
        if self.tools is None:
            return name, True
        return name, name in self.known

    def announce(self, name: str) -> str | None:
        """The name a stream may announce before the call completes, or None to wait."""
        resolved, known = self.resolve(name)
        if not known and self.policy.unknown_tool != "keep":
            return None
        return resolved

    def bind(self, raw: RawCall) -> tuple[ToolCall | None, list[Diagnostic]]:
        diags = [self.diagnostic(note, raw.family) for note in raw.notes]
        name, known = self.resolve(raw.name)
        if not known:
            action = self.policy.unknown_tool
            detail: dict[str, Any] = {"name": name, "policy": action}
            if action == "error":
                detail["arguments"] = raw.arguments
            msg = f"{name!r} is not in the toolset" + ("" if action == "keep" else "; the call is not returned")
            diags.append(self.diagnostic(Issue("unknown_tool", detail, raw.span, msg), raw.family))
            if action != "keep":
                return None, diags
        elif self.tools is not None:
            diags.extend(self._validate(name, raw))
        call = ToolCall.model_construct(
            name=name,
            arguments=raw.arguments,
            arguments_json=raw.arguments_json,
            id=raw.id,
            family=raw.family,
            span=raw.span,
        )
        return call, diags

    def _validate(self, name: str, raw: RawCall) -> list[Diagnostic]:
        assert self.tools is not None
        validator = self.tools.validator(name)
        out = []
        try:
            errors = sorted(validator.iter_errors(raw.arguments), key=lambda e: [str(p) for p in e.absolute_path])
        except Exception as exc:  # a schema the validator cannot apply; never let it raise
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
        return Diagnostic.model_construct(
            kind=issue.kind, family=family, detail=issue.detail, span=issue.span, message=issue.message
        )
