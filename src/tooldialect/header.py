"""A grammar's header: the ``//`` comment lines at its top, read into a :class:`Header`
(the family's name, models, policies, write lines, spellings, and the switches the
engine reads; docs/authoring.md lists every key)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from .errors import GrammarError

__all__ = ["VARIANT_NAME", "WRITE_KINDS", "Header", "read_header"]


@dataclass(frozen=True)
class Header:
    """Metadata from a grammar's leading comment block."""

    family: str
    title: str = ""
    models: tuple[str, ...] = ()
    checked_against: tuple[str, ...] = ()
    rank: int = 100
    reply: str = "start"  # "whole": a `reply` block must be all of the reply
    reply_header: bool = False  # the `reply` rule opens with a header the prompt began
    value_newlines: str = "keep"  # "strip": the template writes a newline around each text value
    text_escapes: str = "none"  # "backslash": a backslash in a TEXT value takes the next character
    gated: bool = False  # a registry-gated body: read only against a toolset, by exact name
    no_tool: tuple[str, ...] = ()  # names the model writes to call no tool (a sentinel its template lists)
    # "only": read from token ids, a marker whose text the tokenizer holds as a special
    # token counts only where the ids wrote that token (spelled in ordinary tokens, it is text)
    special_tokens: str = "any"
    policies: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()  # (model glob, ((field, value), ...))
    writes: tuple[tuple[str, str], ...] = ()  # `// write KIND: SPEC` lines, read by render/family.py
    # `// variant NAME: GLOB, …` lines: the spellings the family writes (the first is the one
    # the plain write lines say) and the model ids that write each
    variants: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # `// write KIND VARIANT: SPEC` lines: (variant, kind, spec), a variant's own lines
    variant_writes: tuple[tuple[str, str, str], ...] = ()
    notes: tuple[str, ...] = ()


_HEADER_LINE: Final = re.compile(r"//\s?(.*)")
_WRITE_LINE: Final = re.compile(
    r"write\s+([a-z]+)(?:\s+([a-z0-9][a-z0-9._-]{0,31}))?\s*(?::\s*(.*))?|write\s*", re.DOTALL
)
#: The kinds of ``// write`` line (docs/authoring.md, "Writing calls back").
WRITE_KINDS: Final = ("call", "block", "sep", "param", "single")
_POLICY_KEY: Final = re.compile(r"policy\s+(\S+)", re.IGNORECASE)
_VARIANT_KEY: Final = re.compile(r"variant\s+(\S+)")
#: A variant's name: lowercase letters, digits, '.', '-', '_' (``v3.1``, ``longcat``).
VARIANT_NAME: Final = re.compile(r"[a-z0-9][a-z0-9._-]{0,31}")


def read_header(text: str, stem: str) -> Header:
    """Parse the ``//`` comment lines at the top of a grammar (stops at the first rule)."""
    fields: dict[str, Any] = {"family": stem}
    lists: dict[str, list[Any]] = {k: [] for k in _LISTS}
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        m = _HEADER_LINE.fullmatch(line)
        if m is None:
            break
        body = m.group(1)
        wm = _WRITE_LINE.fullmatch(body.strip())
        if wm is not None:
            kind, spec = _write_line(stem, body.strip(), wm)
            if wm.group(2):
                lists["variant_writes"].append((wm.group(2), kind, spec))
            else:
                lists["writes"].append((kind, spec))
            continue
        key, sep, value = body.partition(":")
        if not sep:
            lists["notes"].append(body)
            continue
        _read_key(stem, key.strip(), value.strip(), body, fields, lists)
    _check_variant_writes(stem, lists["variants"], lists["variant_writes"])
    listed: dict[str, Any] = {k: tuple(v) for k, v in lists.items()}
    return Header(**listed, **fields)


#: The header's repeatable parts, gathered in order (Header's field names).
_LISTS: Final = ("models", "checked_against", "policies", "writes", "variants", "variant_writes", "notes")
#: Keys with one of a few words as their value: (Header field, the words allowed).
_CHOICES: Final = {
    "value newlines": ("value_newlines", ("keep", "strip")),
    "text escapes": ("text_escapes", ("none", "backslash")),
    "special tokens": ("special_tokens", ("any", "only")),
}


def _read_key(
    stem: str, raw_key: str, value: str, body: str, fields: dict[str, Any], lists: dict[str, list[Any]]
) -> None:
    """One ``// key: value`` line into ``fields`` (single values) or ``lists``."""
    key = raw_key.lower()
    pm = _POLICY_KEY.fullmatch(raw_key)
    vm = _VARIANT_KEY.fullmatch(raw_key)
    if vm:
        lists["variants"].append(_variant(stem, vm.group(1), value, lists["variants"]))
    elif pm:
        lists["policies"].append((pm.group(1), _policy_pairs(stem, value)))
    elif key in ("family", "title"):
        fields[key] = value
    elif key == "models":
        lists["models"].extend(v.strip() for v in value.split(",") if v.strip())
    elif key in ("checked against", "checked-against", "checked"):
        lists["checked_against"].append(value)
    elif key == "rank":
        try:
            fields["rank"] = int(value)
        except ValueError as exc:
            raise GrammarError(f"grammar {stem!r}: rank must be an integer, got {value!r}") from exc
    elif key in _CHOICES:
        name, allowed = _CHOICES[key]
        if value not in allowed:
            either = " or ".join(repr(w) for w in allowed)
            raise GrammarError(f"grammar {stem!r}: {key} must be {either}, got {value!r}")
        fields[name] = value
    elif key == "no tool":
        names = tuple(v.strip() for v in value.split(",") if v.strip())
        if not names or any(len(n.split()) != 1 for n in names):
            # a tool name has no white space: a wrapped note that starts a line with
            # "no tool:" is refused rather than read as names
            raise GrammarError(f"grammar {stem!r}: no tool needs one or more comma-separated tool names, got {value!r}")
        fields["no_tool"] = names
    elif key == "gated":
        if value != "toolset":
            raise GrammarError(f"grammar {stem!r}: gated must be 'toolset', got {value!r}")
        fields["gated"] = True
    elif key == "reply":
        words = value.split()
        if not words or words[0] not in ("start", "whole") or words[1:] not in ([], ["header"]):
            raise GrammarError(
                f"grammar {stem!r}: reply must be 'start' or 'whole', optionally followed by 'header', got {value!r}"
            )
        fields["reply"] = words[0]
        fields["reply_header"] = words[1:] == ["header"]
    else:
        lists["notes"].append(body)


def _variant(stem: str, name: str, value: str, seen: list[tuple[str, tuple[str, ...]]]) -> tuple[str, tuple[str, ...]]:
    if VARIANT_NAME.fullmatch(name) is None:
        raise GrammarError(f"grammar {stem!r}: variant name {name!r}: use lowercase letters, digits, '.', '-' and '_'")
    if any(name == v for v, _ in seen):
        raise GrammarError(f"grammar {stem!r}: variant {name!r} is declared twice")
    return name, tuple(v.strip() for v in value.split(",") if v.strip())


def _policy_pairs(stem: str, value: str) -> tuple[tuple[str, str], ...]:
    pairs = []
    for item in value.split(","):
        name, eq, val = item.strip().partition("=")
        if not eq:
            raise GrammarError(f"grammar {stem!r}: policy line needs field=value, got {item!r}")
        pairs.append((name.strip(), val.strip()))
    return tuple(pairs)


def _check_variant_writes(
    stem: str, variants: list[tuple[str, tuple[str, ...]]], writes: list[tuple[str, str, str]]
) -> None:
    """A ``write KIND VARIANT`` line names a declared variant other than the first (whose
    spelling the plain write lines say), once per kind."""
    declared = [v for v, _ in variants]
    seen = set()
    for variant, kind, _spec in writes:
        if variant not in declared:
            known = ", ".join(declared) or "none"
            raise GrammarError(
                f"grammar {stem!r}: line '// write {kind} {variant}: …' names no declared variant "
                f"(declared: {known}); add '// variant {variant}: MODEL-GLOB, …'"
            )
        if variant == declared[0]:
            raise GrammarError(
                f"grammar {stem!r}: line '// write {kind} {variant}: …': {variant} is the first variant, "
                "whose spelling the plain write lines say; drop the variant name"
            )
        if (variant, kind) in seen:
            raise GrammarError(f"grammar {stem!r}: a second 'write {kind} {variant}' line; keep one")
        seen.add((variant, kind))


def _write_line(stem: str, line: str, m: re.Match[str]) -> tuple[str, str]:
    """A ``// write KIND [VARIANT]: SPEC`` line as (kind, spec); its items are read on first use."""
    kind, spec = m.group(1), (m.group(3) or "").strip()
    if kind not in WRITE_KINDS:
        raise GrammarError(
            f"grammar {stem!r}: line '// {line}': unknown write line; write one of "
            + ", ".join(f"'write {k}'" for k in WRITE_KINDS)
        )
    if (kind == "single") != (not spec):
        want = (
            "'// write single' takes nothing after it"
            if kind == "single"
            else f"'// write {kind}: …' needs items after the colon"
        )
        raise GrammarError(f"grammar {stem!r}: line '// {line}': {want}")
    return kind, spec
