"""Where chat templates live: a ``.jinja`` file, a ``tokenizer_config.json``, or a model
directory holding either (read by :func:`tooldialect.families.from_template_file`)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import PolicyError

__all__ = ["pick_template", "read_template_file", "special_tokens"]

#: The files of a model directory that hold a chat template, in the order they are tried
#: (transformers saves ``chat_template.jinja`` beside the config and prefers it).
_IN_DIRECTORY = ("chat_template.jinja", "tokenizer_config.json", "chat_template.json")


def read_template_file(path: str | os.PathLike[str]) -> tuple[str, dict[str, str]]:
    """The template text at ``path`` and the variables its config gives (``bos_token``,
    ``eos_token``); ``PolicyError`` saying what is wrong when there is none."""
    where = Path(path).expanduser()
    if where.is_dir():
        found = [where / name for name in _IN_DIRECTORY if (where / name).is_file()]
        if not found:
            listed = ", ".join(_IN_DIRECTORY)
            raise PolicyError(f"{where} holds no chat template (looked for {listed})")
        variables = _config_tokens(where / "tokenizer_config.json")
        source, more = _read(found[0])
        return source, {**variables, **more}
    return _read(where)


def _read(path: Path) -> tuple[str, dict[str, str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if path.suffix != ".json":
        return text, {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise PolicyError(f"{path} is not JSON: {exc}") from None
    if not isinstance(data, Mapping) or "chat_template" not in data:
        raise PolicyError(f"{path} has no chat_template")
    return pick_template(data["chat_template"], str(path)), special_tokens(data)


def pick_template(value: Any, where: str = "the tokenizer") -> str:
    """A ``chat_template`` as configs and tokenizers hold it: the text itself, or named
    templates (a list of ``{"name", "template"}`` or a mapping of name to text), of which
    ``tool_use`` where present, else ``default``."""
    if isinstance(value, str):
        return value
    named: dict[str, Any] = {}
    if isinstance(value, Mapping):
        named = dict(value)
    elif isinstance(value, list):
        named = {
            str(item["name"]): item.get("template")
            for item in value
            if isinstance(item, Mapping) and isinstance(item.get("name"), str)
        }
    for name in ("tool_use", "default"):
        if isinstance(named.get(name), str):
            return str(named[name])
    known = ", ".join(sorted(str(n) for n in named)) or "none"
    raise PolicyError(f"{where}: chat_template names no 'tool_use' or 'default' template (it has {known})")


def special_tokens(config: Mapping[str, Any]) -> dict[str, str]:
    """``bos_token`` and ``eos_token`` as a tokenizer config spells them (text, or an added
    token's ``{"content": …}``)."""
    out = {}
    for key in ("bos_token", "eos_token"):
        value = config.get(key)
        if isinstance(value, Mapping):
            value = value.get("content")
        if isinstance(value, str):
            out[key] = value
    return out


def _config_tokens(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return special_tokens(data) if isinstance(data, Mapping) else {}
