"""Tables in README.md and docs/ are generated from the code, so they cannot go stale.

``python -m tooldialect._docs --write`` rewrites every generated section in place;
the test suite fails when a section differs from what the code says.  A section is
delimited by ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->`` comment lines.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from .explain import REGION_KINDS
from .families import Family, all_families, grammar_dir
from .models import DIAGNOSTIC_KINDS, Policy

__all__ = ["SECTIONS", "render", "sync"]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;")


def _builtin() -> list[Family]:
    """The families this project ships; plugin families are documented by their authors."""
    return [fam for fam in all_families() if fam.source is None]


def families_table() -> str:
    rows = ["| family | what it reads | models (globs from the grammar header) |", "| --- | --- | --- |"]
    for fam in _builtin():
        models = ", ".join(f"`{m}`" for m in fam.models) or "—"
        rows.append(f"| `{fam.name}` | {_cell(fam.title)} | {models} |")
    return "\n".join(rows)


def diagnostics_table() -> str:
    rows = ["| kind | meaning |", "| --- | --- |"]
    for kind, meaning in DIAGNOSTIC_KINDS.items():
        rows.append(f"| `{kind}` | {meaning} |")
    return "\n".join(rows)


def region_kinds_table() -> str:
    rows = ["| region | what it is |", "| --- | --- |"]
    rows += [f"| `{kind}` | {_cell(meaning)} |" for kind, meaning in REGION_KINDS.items()]
    return "\n".join(rows)


def _choices(ann: Any) -> list[str]:
    """The values a Literal field takes, shown (a model class in a union: ``td.Name``)."""
    out: list[str] = []
    for arg in getattr(ann, "__args__", None) or ():
        if isinstance(arg, type):
            out.append(f"`td.{arg.__name__}(name=…)` or a tool name")
        elif getattr(arg, "__args__", None):
            out.extend(_choices(arg))
        else:
            out.append(f"`{arg!r}`".replace("'", '"'))
    return out


def policy_table() -> str:
    rows = ["| field | default | values |", "| --- | --- | --- |"]
    for name, field in Policy.model_fields.items():
        ann = field.annotation
        values = _choices(ann)
        if values:
            shown = " \\| ".join(values)
        else:
            shown = {"bool": "boolean", "int": "integer"}.get(getattr(ann, "__name__", ""), str(ann))
            for bound in field.metadata:
                for attr, sign in (("ge", "≥"), ("le", "≤"), ("gt", ">"), ("lt", "<")):
                    if getattr(bound, attr, None) is not None:
                        shown += f", {sign} {getattr(bound, attr)}"
        default = field.default
        rows.append(f"| `{name}` | `{default!r}` | {shown} |".replace("'", '"'))
    return "\n".join(rows)


def family_sections() -> str:
    out = []
    for fam in _builtin():
        h = fam.header
        out.append(f"## {fam.name}\n")
        out.append(f"{_cell(h.title)}.\n")
        out.append("- models: " + (", ".join(f"`{m}`" for m in h.models) or "—"))
        for checked in h.checked_against:
            out.append(f"- checked against: {_cell(checked)}")
        for glob, pairs in h.policies:
            out.append(f"- suggested policy for `{glob}`: " + ", ".join(f"`{k}={v}`" for k, v in pairs))
        for i, (variant, globs) in enumerate(h.variants):
            models = ", ".join(f"`{g}`" for g in globs) or "named only"
            out.append(f"- variant `{variant}`{' (default)' if i == 0 else ''}: {models}")
        if h.gated:
            out.append("- registry-gated: read only against a toolset, binding offered tools by exact name")
        if h.no_tool:
            out.append(
                "- no tool: "
                + ", ".join(f"`{n}`" for n in h.no_tool)
                + " (a call by this name is not returned unless the toolset offers it; an `unknown_tool` diagnostic records it)"
            )
        starts = fam.grammar.starts
        out.append(
            "- rules: " + ", ".join(f"`{s}`" for s in starts) + (f" (reply: {h.reply})" if "reply" in starts else "")
        )
        openers = [t.name for t in fam.grammar.openers.get("start", ())]
        if openers:
            out.append("- openers: " + ", ".join(f"`{o}`" for o in sorted(openers)))
        if h.notes:
            out.append("")
            out.append(_cell(" ".join(n.strip() for n in h.notes if n.strip())))
        out.append("")
        out.append(_written(fam))
        out.append("")
        for variant in fam.variants[1:]:
            out.append(_written(fam, variant))
            out.append("")
    return "\n".join(out).rstrip()


def export_table() -> str:
    """What each family's export looks like, for a sample tool ``get_weather(city)``."""
    from . import export
    from . import shape as sh
    from .errors import ExportError
    from .toolset import Tool

    tool = Tool(
        name="get_weather",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    )
    rows = [
        "| family | arguments | prose before calls | parallel | GBNF trigger (for `get_weather`) | structural tag |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for fam, variant in ((f, v) for f in _builtin() for v in (None, *f.variants[1:])):
        shape = fam.writer(variant).shape
        syntax: list[str] = []
        for part in shape.call:
            if isinstance(part, sh.Arguments):
                syntax.append(part.syntax)
            elif isinstance(part, sh.Params):
                values = [p.syntax for p in part.item if isinstance(p, sh.Value)]
                syntax.append(f"parameters ({', '.join(values)})")
        lazy = export.grammar(fam.name, [tool], format="gbnf", variant=variant)
        assert isinstance(lazy, export.LazyGrammar)  # what format="gbnf" returns
        trigger = "; ".join(f"{t.type} `{t.value}`" for t in lazy.triggers).replace("|", "\\|")
        try:
            content = {
                t["content"]["type"] for t in _tags(export.structural_tag(fam.name, [tool], variant=variant)["format"])
            }
            tag = ", ".join(sorted(content))
        except ExportError:
            tag = "refused (weak trigger)"
        yes = {True: "yes", False: "no"}
        rows.append(
            f"| `{fam.name}`{f' ({variant})' if variant else ''} | {', '.join(syntax)} | {yes[shape.prose_before]} | {yes[shape.parallel]} "
            f"| {trigger} | {tag} |"
        )
    return "\n".join(rows)


def _tags(fmt: dict[str, Any]) -> list[dict[str, Any]]:
    if fmt["type"] == "or":  # text without the opening, or the calls
        fmt = fmt["elements"][-1]
    out: list[dict[str, Any]] = []
    for tag in fmt["tags"]:
        inner = tag["content"]
        out.extend(inner["tags"] if inner.get("type") == "tags_with_separator" else [tag])
    return out


#: The calls every family's example shows (generated, so it is what render_calls writes).
_EXAMPLE_CALLS: tuple[dict[str, Any], ...] = (
    {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}},
    {"name": "get_time", "arguments": {"zone": "CET"}},
)


def _written(fam: Family, variant: str | None = None) -> str:
    """How ``render_call`` writes a call (two calls where the family writes several)."""
    shape = fam.writer(variant).shape
    calls = _EXAMPLE_CALLS if shape.parallel else _EXAMPLE_CALLS[:1]
    if variant is not None:  # a spelling may write the call's id
        calls = tuple({**c, "id": i} for c, i in zip(calls, _EXAMPLE_IDS))
    text = fam.render_calls(list(calls), variant=variant)
    what = "two calls" if len(calls) > 1 else "one call (the family writes one per reply)"
    fence = "~~~~" if "```" in text else "```"
    spelled = f", variant `{variant}`" if variant is not None else ""
    return f"Written back (`render_call`{spelled}, {what}):\n\n{fence}\n{text}\n{fence}"


_EXAMPLE_IDS = ("a1B2c3D4e", "f5G6h7J8k")


_PIECE_NOTE = re.compile(r"//\s?Shared piece:\s*(.*?)(?:\.\s|\n\s*//\s*\n|\n(?!//))", re.DOTALL)


def pieces_table() -> str:
    """Every shared piece a grammar can ``%import``: what it is, the terminals and rules it
    defines itself (an imported name is its owner's), and which built-in grammars import it."""
    from .grammar import read_definitions
    from .grammar_check import imported_names

    texts = {p.stem: p.read_text(encoding="utf-8") for p in sorted(grammar_dir().glob("*.lark"))}
    rows = ["| piece | what it is | terminals | rules | imported by |", "| --- | --- | --- | --- | --- |"]
    for path in sorted(grammar_dir().glob("_*.lark")):
        text = texts[path.stem]
        terminals, rule_names = read_definitions(path)
        imported = imported_names(text)
        terms = [t for t in terminals if t not in imported]
        rules = [r for r in rule_names if r not in imported]
        m = _PIECE_NOTE.search(text)
        note = " ".join(m.group(1).replace("//", " ").split()) if m else ""
        users = [
            stem
            for stem, other in texts.items()
            if stem != path.stem and re.search(rf"%import\s+\.{path.stem}\b", other)
        ]
        rows.append(
            f"| `{path.name}` | {_cell(note)} | {', '.join(f'`{t}`' for t in terms)} "
            f"| {', '.join(f'`{r}`' for r in rules) or '—'} | {', '.join(f'`{u}`' for u in users) or '— (the library reads it)'} |"
        )
    return "\n".join(rows)


def table_commands() -> str:
    """``--help`` of the table commands and the audit, as a fixed-width terminal shows it."""
    import argparse
    import os

    from .cli import _build

    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        parser = _build()
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        helps = [sub.choices[name].format_help().rstrip() for name in ("parse-table", "render-table", "audit")]
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    return "```text\n" + "\n\n".join(helps) + "\n```"


SECTIONS = {
    "export": export_table,
    "family_sections": family_sections,
    "families": families_table,
    "diagnostics": diagnostics_table,
    "policy": policy_table,
    "pieces": pieces_table,
    "region_kinds": region_kinds_table,
    "table_commands": table_commands,
}

_SECTION = re.compile(r"(<!-- (\w+):begin -->\n)(.*?)(<!-- \2:end -->)", re.S)


def render(text: str) -> str:
    def sub(m: re.Match[str]) -> str:
        make = SECTIONS.get(m.group(2))
        if make is None:
            return m.group(0)
        return m.group(1) + make() + "\n" + m.group(4)

    return _SECTION.sub(sub, text)


def sync(root: Path, write: bool) -> list[Path]:
    """Files whose generated sections are stale (rewritten when ``write``)."""
    stale = []
    for path in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        new = render(text)
        if new != text:
            stale.append(path)
            if write:
                path.write_text(new, encoding="utf-8")
    return stale


if __name__ == "__main__":  # pragma: no cover
    root = Path(sys.argv[sys.argv.index("--root") + 1]) if "--root" in sys.argv else Path.cwd()
    changed = sync(root, write="--write" in sys.argv)
    for p in changed:
        print(("rewrote " if "--write" in sys.argv else "stale: ") + str(p))
