"""What a server adapter reads with, decided once per parser: families, policy, tools.

A server names its parser once, on its command line (``--tool-call-parser tooldialect``),
and has no place for options; the families come from the environment or from the model
the server loaded, and are checked when the parser is built, so that a misspelt family
stops the server at its first request instead of reading every reply as text.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from .. import families as _families
from ..errors import ToolDialectError
from ..models import Policy
from ..toolset import Toolset

_log = logging.getLogger("tooldialect.integrations")

#: Families to read, comma-separated (``hermes,kimi_k2``); wins over the model id.
FAMILIES_VARIABLE = "TOOLDIALECT_FAMILIES"
#: The model id to choose families and policy by, when the server's own is a local path.
MODEL_VARIABLE = "TOOLDIALECT_MODEL"


_log = logging.getLogger("tooldialect")


@dataclass(frozen=True)
class Setup:
    """The families (None: every family) and policy an adapter reads replies with, the
    model id they were chosen by (``""``: none known) and where the families came from:
    ``"environment"`` (:data:`FAMILIES_VARIABLE`), ``"template"`` (the tokenizer's chat
    template, ``families.from_template``), ``"model"`` (``families.for_model`` matched),
    ``"every family"`` or ``"configured"`` (:func:`fixed`).  ``profile``: what reading the
    chat template found, when one was read."""

    families: tuple[str, ...] | None
    policy: Policy
    model: str
    source: str
    profile: _families.ModelProfile | None = None


def setup(model_id: str | None = None, environ: Mapping[str, str] | None = None) -> Setup:
    """The setup for a server that loaded ``model_id``: :data:`FAMILIES_VARIABLE` when set
    (each name checked: an unknown one raises ``UnknownFamilyError``), else the families
    ``families.for_model`` suggests for :data:`MODEL_VARIABLE` or ``model_id``, else every
    family.  The policy is the one ``for_model`` suggests for that model (the default
    policy when no model id is known)."""
    env = os.environ if environ is None else environ
    model = (env.get(MODEL_VARIABLE) or "").strip() or (model_id or "").strip()
    profile = _families.for_model(model) if model else None
    policy = profile.policy if profile is not None else Policy()
    listed = [name.strip() for name in (env.get(FAMILIES_VARIABLE) or "").split(",") if name.strip()]
    if listed:
        for name in listed:
            _families.get(name)
        return Setup(tuple(dict.fromkeys(listed)), policy, model, "environment")
    if profile is not None and profile.matched:
        return Setup(tuple(profile.families), policy, model, "model")
    return Setup(None, policy, model, "every family")


def setup_for(tokenizer: Any, environ: Mapping[str, str] | None = None) -> Setup:
    """The setup for a server's tokenizer: :data:`FAMILIES_VARIABLE` when set, else what the
    tokenizer's chat template calls for (``families.from_template``, with the model id as its
    fallback), else :func:`setup` on the model id.  A template is read once per process (the
    parsers a server builds per request share it), and the profile is logged at INFO then."""
    env = os.environ if environ is None else environ
    model = (env.get(MODEL_VARIABLE) or "").strip() or model_id_of(tokenizer)
    found = None if (env.get(FAMILIES_VARIABLE) or "").strip() else template_of(tokenizer)
    if found is None:
        return setup(model_id_of(tokenizer), env)
    key = (found[0], tuple(sorted(found[1].items())), model)
    with _lock:
        known = _read.get(key)
    if known is not None:
        return known
    profile = _families.from_template(found[0], model_id=model or None, variables=found[1])
    got = _from_profile(profile, model, env)
    with _lock:
        if key not in _read:
            if len(_read) >= 16:
                _read.clear()
            _read[key] = got
            _log.info("tooldialect: %s", describe(got))
        return _read[key]


_read: dict[tuple[Any, ...], Setup] = {}
_lock = threading.Lock()


def _from_profile(profile: _families.ModelProfile, model: str, env: Mapping[str, str]) -> Setup:
    if profile.matched:
        return Setup(tuple(profile.families), profile.policy, model, "template", profile)
    base = setup(model, env)  # the template said nothing usable: the id decides the families
    return replace(base, policy=profile.policy, profile=profile)


def describe(chosen: Setup) -> str:
    """One line saying what a server reads with and why (the line :func:`setup_for` logs)."""
    families = ", ".join(chosen.families) if chosen.families is not None else "every family"
    fields = chosen.policy.model_dump(exclude_unset=True)
    policy = ", ".join(f"{k}={v}" for k, v in fields.items()) or "default"
    line = f"families {families} (from {chosen.source}); policy {policy}"
    report = chosen.profile.template if chosen.profile is not None else None
    if report is not None:
        line += f"; chat template: {report.verdict}: {report.detail}"
    return line


def template_of(tokenizer: Any) -> tuple[str, dict[str, str]] | None:
    """A Hugging Face tokenizer's chat template (of named ones, ``tool_use`` where present,
    else ``default``) and its ``bos_token`` and ``eos_token``; None when it has none."""
    from ..families._files import pick_template

    for holder in (tokenizer, getattr(tokenizer, "tokenizer", None)):
        value = getattr(holder, "chat_template", None)
        if not value:
            continue
        try:
            source = pick_template(value)
        except ToolDialectError:
            return None
        tokens = {k: v for k in ("bos_token", "eos_token") if isinstance(v := getattr(holder, k, None), str)}
        return source, tokens
    return None


def fixed(families: Iterable[str] | None = None, policy: Policy | None = None) -> Setup:
    """A setup given in code (a server embedded in a program, or a test): each family
    checked as :func:`setup` checks them."""
    names = None if families is None else tuple(dict.fromkeys(families))
    for name in names or ():
        _families.get(name)
    return Setup(names, policy if policy is not None else Policy(), "", "configured")


def model_id_of(tokenizer: Any) -> str:
    """The model id a Hugging Face tokenizer was loaded by (``""`` when it does not say)."""
    for holder in (tokenizer, getattr(tokenizer, "tokenizer", None)):
        name = getattr(holder, "name_or_path", None)
        if isinstance(name, str) and name.strip():
            return name.strip()
    return ""


def toolset_of(tools: Iterable[Any] | None) -> Toolset | None:
    """A request's tools (pydantic models or dicts, OpenAI's shape) as a Toolset, built once
    for the same tools (``Toolset.cached``); None when the request has none.  Tools the
    Toolset refuses raise ``ToolsetError`` (a ``ValueError``), naming the tool."""
    if not tools:
        return None
    return Toolset.cached(_plain(tools))


def _plain(tools: Iterable[Any]) -> list[Any]:
    return [t.model_dump(mode="json", exclude_none=True) if hasattr(t, "model_dump") else t for t in tools]


#: What :func:`lenient_toolset` built for tools the Toolset refuses, by their JSON (so each
#: warning is logged once per distinct tool list), the oldest forgotten past this many.
_LENIENT_KEPT = 64
_lenient: dict[str, Toolset | None] = {}


def lenient_toolset(tools: Iterable[Any] | None) -> Toolset | None:
    """:func:`toolset_of` for a reply already being served, which must not fail: a tool whose
    definition the Toolset refuses (its ``parameters`` are not valid JSON Schema) is read
    without its schema (``{"type": "object"}``: its arguments are neither checked nor typed
    by it); a tool with a name an earlier one has, or with no usable name, is left out; each
    with one warning on the ``tooldialect.integrations`` logger."""
    try:
        return toolset_of(tools)
    except ToolDialectError:
        pass
    plain = _plain(tools or ())
    key = json.dumps(plain, default=repr)
    if key in _lenient:
        return _lenient[key]
    kept: list[Any] = []
    names: set[str] = set()
    for i, tool in enumerate(plain):
        name = _tool_name(tool, i)
        if name is None:
            continue
        if name in names:
            _log.warning("tooldialect: request tool #%d left out: tool %r came before it", i, name)
            continue
        names.add(name)
        kept.append(tool if _accepted(tool) else _without_schema(tool))
    got = Toolset.cached(kept) if kept else None
    if len(_lenient) >= _LENIENT_KEPT:
        _lenient.pop(next(iter(_lenient)))
    _lenient[key] = got
    return got


def _accepted(tool: Any) -> bool:
    try:
        Toolset.coerce([tool])
    except ToolDialectError:
        return False
    return True


def _tool_name(tool: Any, i: int) -> str | None:
    """The tool's name as the Toolset reads it (its schema taken off if that is what it
    refuses, with a warning), or None (left out, with a warning)."""
    try:
        return Toolset.coerce([tool]).names[0]
    except ToolDialectError as exc:
        problem = exc
    try:
        name = Toolset.coerce([_without_schema(tool)]).names[0]
    except ToolDialectError:
        _log.warning("tooldialect: request tool #%d left out: %s", i, problem)
        return None
    _log.warning("tooldialect: request tool %r is read without its schema (not checked, not typed): %s", name, problem)
    return name


def _without_schema(tool: Any) -> Any:
    """``tool`` with its parameters schema replaced by ``{"type": "object"}``."""
    if not isinstance(tool, Mapping):
        return tool
    function = tool.get("function")
    if isinstance(function, Mapping):
        return {**tool, "function": {**function, "parameters": {"type": "object"}}}
    keys = [k for k in ("parameters", "input_schema", "inputSchema") if k in tool]
    return {**tool, **{k: {"type": "object"} for k in keys or ["parameters"]}}


def marker_strings(families: Iterable[str] | None) -> frozenset[str]:
    """Every literal marker the families' grammars read (all families for None)."""
    names = _families.names() if families is None else list(families)
    found: set[str] = set()
    for name in names:
        for terminal in _families.get(name).grammar.terminals.values():
            literal = terminal.pattern.literal if terminal.pattern is not None else None
            if literal and len(literal) > 1:
                found.add(literal)
    return frozenset(found)


def special_markers(tokenizer: Any, families: Iterable[str] | None) -> frozenset[str] | None:
    """The families' markers the tokenizer holds as special tokens (which a server drops
    from the text unless told to keep them); None when the tokenizer does not say which
    tokens are special."""
    specials: set[str] = set()
    known = False
    for holder in (tokenizer, getattr(tokenizer, "tokenizer", None)):
        listed = getattr(holder, "all_special_tokens", None)
        if isinstance(listed, (list, tuple, set, frozenset)):
            known = True
            specials.update(t for t in listed if isinstance(t, str))
        added = getattr(holder, "added_tokens_decoder", None)
        if isinstance(added, Mapping):
            known = True
            specials.update(str(getattr(t, "content", t)) for t in added.values() if getattr(t, "special", False))
    if not known:
        return None
    return frozenset(marker_strings(families) & specials)


def end_token_ids(tokenizer: Any) -> frozenset[int]:
    """The tokenizer's end-of-sequence ids: the token a model stops on, which a server
    puts in the last delta's token ids when generation ended there."""
    out: set[int] = set()
    for holder in (tokenizer, getattr(tokenizer, "tokenizer", None)):
        eos = getattr(holder, "eos_token_id", None)
        if isinstance(eos, int) and not isinstance(eos, bool):
            out.add(eos)
        elif isinstance(eos, (list, tuple)):
            out.update(i for i in eos if isinstance(i, int) and not isinstance(i, bool))
    return frozenset(out)


def record_entry(parser: Any, entry: Mapping[str, Any]) -> str:
    """Keep a server parser's per-call bookkeeping (``prev_tool_call_arr``,
    ``streamed_args_for_tool``, which both servers read at the end of a stream) for one
    ``td.openai`` tool-call entry; the argument fragment it carries."""
    slot = entry["index"]
    fragment: str = entry["function"].get("arguments", "")
    if "id" in entry:  # the call's first entry: id, type and name, once
        parser.prev_tool_call_arr.append({"name": entry["function"]["name"], "arguments": ""})
        parser.streamed_args_for_tool.append("")
        parser.current_tool_id = slot
        parser.current_tool_name_sent = True
    if fragment and slot < len(parser.streamed_args_for_tool):
        parser.streamed_args_for_tool[slot] += fragment
        parser.prev_tool_call_arr[slot]["arguments"] = parser.streamed_args_for_tool[slot]
    return fragment
