"""What the ``tooldialect`` commands share: reading files and tool lists, policies, writing
text and JSON whatever the terminal's encoding, and the one-line usage error."""

from __future__ import annotations

import argparse
import codecs
import json
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from .models import Diagnostic, Policy, ToolCall
from .toolset import Toolset

PROG = "tooldialect"
_SURROGATE = re.compile(r"[\ud800-\udfff]")


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Usage(message)


def _read(path: str) -> str:
    try:
        if path == "-":
            data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode()
            return data.decode("utf-8")
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        name = "standard input" if path == "-" else path
        raise _Usage(f"cannot read {name}: {getattr(exc, 'strerror', None) or exc}") from None


def _tools(path: str | None, name: str | None = None) -> Toolset | None:
    """The toolset a ``--tools`` file holds: a tool list, ``{"tools": [...]}``, or named
    toolsets as a corpus's ``_tools.json`` holds them (``--toolset NAME`` picks one)."""
    data = _tool_data(path, name)
    return None if data is None else Toolset.coerce(data)


def _tool_data(path: str | None, name: str | None = None) -> Any:
    """The tool list a ``--tools`` file holds (see :func:`_tools`), as JSON data."""
    if path is None:
        if name is not None:
            raise _Usage("--toolset NAME picks a toolset of a --tools file; give the file")
        return None
    raw = _read(path)
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise _Usage(f"{path} is not JSON: {exc}") from None
    if isinstance(data, dict) and isinstance(data.get("tools"), list) and name is None:
        data = data["tools"]
    else:
        from .corpus import toolsets_in

        named = toolsets_in(data)
        if named is not None:
            if name is None and len(named) != 1:
                choices = ", ".join(sorted(named))
                raise _Usage(f"{path} holds named toolsets ({choices}): choose one with --toolset NAME")
            if name is not None and name not in named:
                raise _Usage(f"{path} has no toolset {name!r} (it has {', '.join(sorted(named))})")
            data = named[name] if name is not None else next(iter(named.values()))
        elif name is not None:
            raise _Usage(f"{path} holds one tool list, not named toolsets: drop --toolset {name}")
    return data


def _template_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--template",
        metavar="PATH",
        help="families and policy from a chat template (.jinja, tokenizer_config.json or a model directory)",
    )


def _reading_setup(args: argparse.Namespace) -> tuple[list[str] | None, Policy]:
    """The families and policy to read with: ``--family`` and ``--policy``, over what the
    ``--template`` chat template's profile says when one is given."""
    policy = _policy(args.policy)
    if getattr(args, "template", None) is None:
        return args.family or None, policy
    from .families import from_template_file

    profile = from_template_file(args.template)
    fields = {k: getattr(profile.policy, k) for k in profile.policy.model_fields_set}
    fields.update(policy.model_dump(exclude_unset=True))
    return args.family or profile.families, Policy(**fields)


def _policy(items: Sequence[str]) -> Policy:
    fields: dict[str, Any] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq:
            raise _Usage(f"--policy needs FIELD=VALUE, got {item!r}")
        fields[key.strip()] = _scalar(value)
    return Policy(**fields)


def _scalar(value: str) -> Any:
    low = value.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low.isascii() and low.lstrip("-").isdigit():
        return int(low)
    return value


def _print(text: str) -> None:
    """``text`` on standard output.  What its encoding cannot hold (a lone surrogate from a
    ``\\ud800`` escape in a reply or a tools file, or any non-ASCII character on an ASCII
    terminal) is written as a backslash escape, never a traceback."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    sys.stdout.write(text.encode(encoding, "backslashreplace").decode(encoding))


def _print_json(value: Any, **options: Any) -> None:
    """``value`` as JSON on standard output, then a newline: characters as they are where
    standard output is UTF-8 (escaped otherwise), and a lone surrogate, which no encoding
    writes, as its ``\\uXXXX`` escape, so the output is valid JSON and reads back the same."""
    text = json.dumps(value, ensure_ascii=not _utf8(sys.stdout), **options)
    _print(_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n")


def _utf8(stream: Any) -> bool:
    encoding = getattr(stream, "encoding", None)
    return encoding is None or codecs.lookup(encoding).name == "utf-8"  # None: a text buffer holds anything


def call_json(call: ToolCall) -> dict[str, Any]:
    return {"name": call.name, "arguments": call.arguments, "id": call.id, "family": call.family}


def diagnostic_json(diag: Diagnostic) -> dict[str, Any]:
    return {"kind": diag.kind, "family": diag.family, "detail": diag.detail}


def _toolset_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--toolset",
        metavar="NAME",
        help="the toolset NAME of a --tools file of named toolsets (a corpus's _tools.json)",
    )


def _reading_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", nargs="?", default="-", help="model output (default: standard input)")
    p.add_argument("--tools", metavar="TOOLS.json", help="tool list (OpenAI, Anthropic, MCP or bare objects)")
    _toolset_arg(p)
    p.add_argument("--family", action="append", metavar="NAME", help="only this family (repeatable)")
    p.add_argument("--policy", action="append", default=[], metavar="FIELD=VALUE", help="a Policy field")


def print_profile(profile: Any, *, as_json: bool) -> None:
    """A ``families.from_template`` profile: as JSON, or as lines a person reads."""
    if as_json:
        _print_json(profile.model_dump(mode="json"), indent=2)
        return
    fields = profile.policy.model_dump(exclude_unset=True)
    lines = [
        f"families: {', '.join(profile.families)}",
        "policy: " + (", ".join(f"{k}={json.dumps(v)}" for k, v in fields.items()) or "default"),
    ]
    lines += [f"variant of {family}: {variant}" for family, variant in profile.variants.items()]
    report = profile.template
    if report is not None:
        lines.append(f"chat template: {report.verdict}: {report.detail}")
        lines.append(f"sandbox: {report.sandbox}; arguments: {report.arguments}; ids: {report.ids}")
        lines.append(f"generation prompt: {json.dumps(report.generation_prompt, ensure_ascii=False)}")
        if report.reasoning:
            lines.append(f"reasoning: {', '.join(report.reasoning)}")
        width = max((len(p.name) for p in report.probes), default=0)
        for probe in report.probes:
            state = "read" if probe.read else f"not read: {probe.problem}"
            lines.append(f"  probe {probe.name:<{width}}  {state}")
        for step in report.progress:
            failure = f"; first failure: {step.first_failure}" if step.first_failure else ""
            lines.append(f"  family {step.family}: {step.read} of {step.of} probes{failure}")
        if report.fallback:
            lines.append(f"fallback: {report.fallback}")
    _print("\n".join(lines) + "\n")
