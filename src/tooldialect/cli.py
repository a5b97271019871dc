"""The ``tooldialect`` command: parse, stream, explain, render, export, families, grammar check, audit,
and the table commands (parse-table, render-table) over Parquet and JSON Lines.

Usage errors, unreadable files, an invalid toolset and an unknown family exit 2 with
one line on stderr.  Parsing itself never fails: a reply with no calls exits 0.  Output
never fails either: JSON is valid whatever the strings hold (a lone surrogate stays the
``\\ud800`` escape it was written as), and text is written with backslash escapes for
what the terminal's encoding cannot hold.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from . import __version__
from . import families as registry
from .cli_io import (
    PROG,
    _Parser,
    _policy,
    _print,
    _print_json,
    _read,
    _reading_args,
    _reading_setup,
    _template_arg,
    _tools,
    _toolset_arg,
    _Usage,
    call_json,
    diagnostic_json,
)
from .cli_tables import _add_tables
from .errors import ToolDialectError
from .models import Policy
from .stream import ToolStream, parse
from .toolset import Toolset

__all__ = ["main"]


def _cmd_parse(args: argparse.Namespace) -> int:
    text = _read(args.file)
    families, policy = _reading_setup(args)
    result = parse(text, _tools(args.tools, args.toolset), families=families, policy=policy)
    out = {
        "text": result.text,
        "reasoning": result.reasoning,
        "calls": [call_json(c) for c in result.calls],
        "diagnostics": [diagnostic_json(d) for d in result.diagnostics],
    }
    _print_json(out, indent=2)
    return 0


def _cmd_stream(args: argparse.Namespace) -> int:
    if args.chunk < 1:
        raise _Usage("--chunk must be at least 1")
    text = _read(args.file)
    families, policy = _reading_setup(args)
    stream = ToolStream(_tools(args.tools, args.toolset), families=families, policy=policy)
    for i in range(0, len(text), args.chunk):
        for ev in stream.feed(text[i : i + args.chunk]):
            _print_json(ev.to_json())
    for ev in stream.close():
        _print_json(ev.to_json())
    return 0


def _cmd_explain(args: argparse.Namespace) -> int:
    from .explain import explain

    if args.chunk is not None and args.chunk < 1:
        raise _Usage("--chunk must be at least 1")
    text = _read(args.file)
    tools = _tools(args.tools, args.toolset)
    families = args.family or None
    policy = _policy(args.policy) if args.policy else None
    if args.model is not None:
        from .families import for_model

        profile = for_model(args.model)
        families = families or profile.families
        # the model's settings, then each --policy field over them
        fields = {k: getattr(profile.policy, k) for k in profile.policy.model_fields_set}
        fields.update(_policy(args.policy).model_dump(exclude_unset=True))
        policy = Policy(**fields)
    chunk = args.chunk if args.chunk is not None or args.html is None else 16  # the page always has its timeline
    ex = explain(text, tools, families=families, policy=policy, chunk=chunk)
    if args.json:
        _print_json(ex.to_json(), indent=2)
        return 0
    if args.html is not None:
        from .explain_view import html_page

        try:
            with open(args.html, "w", encoding="utf-8", errors="surrogatepass") as fh:
                fh.write(html_page(ex))
        except OSError as exc:
            raise _Usage(f"cannot write {args.html}: {exc.strerror or exc}") from None
        _print(f"wrote {args.html}\n")
        return 0
    from rich.console import Console

    from .explain_view import print_explanation

    print_explanation(ex, Console(highlight=False))
    return 0


def _cmd_render(args: argparse.Namespace) -> int:
    from . import dialects

    tools = _tools(args.tools, args.toolset)
    turn = _tools(args.turn_tools) if args.turn_tools else Toolset()
    dialect = dialects.get(args.dialect, host_renders_catalogue=args.host_renders_catalogue)
    choice: Any = {"name": args.force_tool} if args.force_tool is not None else args.tool_choice
    text = dialect.instructions(tools, tool_choice=choice, turn_tools=turn)
    if args.json:
        every = Toolset([*(tools or ()), *(turn or ())])
        out = {
            "dialect": dialect.name,
            "instructions": text,
            "request": dialect.request_fields(every, tool_choice=choice),
        }
        _print_json(out, indent=2, sort_keys=True)
    else:
        _print(text)
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from . import export

    registry.get(args.family)  # an unknown family is a usage error, before any work
    tools = _tools(args.tools, args.toolset)
    mode: Any = {"name": args.force_tool} if args.force_tool is not None else args.mode
    parallel = not args.no_parallel
    spelling = {"variant": args.variant, "model": args.model}
    if args.format == "structural-tag":
        out: Any = export.structural_tag(args.family, tools, mode=mode, parallel=parallel, **spelling)
    else:
        got = export.grammar(args.family, tools, format=args.format, mode=mode, parallel=parallel, **spelling)
        if isinstance(got, str):
            _print(got)
            return 0
        out = got.to_json()
    _print_json(out, indent=2)
    return 0


def _cmd_families(args: argparse.Namespace) -> int:
    if args.template is not None:
        from .cli_io import print_profile

        print_profile(registry.from_template_file(args.template, model_id=args.model), as_json=args.json)
        return 0
    if args.model is not None:
        raise _Usage("--model goes with --template (the fallback when the template renders no call)")
    fams = registry.all_families()
    if args.json:
        entries = [
            {
                "family": f.name,
                "title": f.title,
                "models": list(f.models),
                "checked_against": list(f.checked_against),
                "variants": {name: list(globs) for name, globs in f.header.variants},
                "source": f.source.label if f.source is not None else "built-in",
            }
            for f in fams
        ]
        _print_json(entries, indent=2)
        return 0
    # one row per family; under it, the documents its grammar was checked against
    rows = [("family", "title", "models")] + [(f.name, f.title, ", ".join(f.models)) for f in fams]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    docs = [()] + [f.checked_against for f in fams]
    origins = [None] + [f.source for f in fams]
    spellings = [()] + [f.header.variants for f in fams]
    for (name, title, models), checked, origin, variants in zip(rows, docs, origins, spellings):
        _print(f"{name:<{w0}}  {title:<{w1}}  {models}".rstrip() + "\n")
        for doc in checked:
            _print(f"{'':<{w0}}  checked against: {doc}\n")
        for variant, globs in variants:
            _print(f"{'':<{w0}}  variant {variant}: {', '.join(globs) or '(named only)'}\n")
        if origin is not None:  # a plugin family: say where it comes from
            _print(f"{'':<{w0}}  from: {origin.label}\n")
    return 0


def _cmd_grammar_check(args: argparse.Namespace) -> int:
    from .grammar_check import check_grammar

    updates = args.update or []
    titles = [t for t in updates if t is not None]
    report = check_grammar(args.grammar, args.corpus, update_new=None in updates, update_titles=titles)
    _print(report.text())
    return 0 if report.ok else 1


def _build() -> _Parser:
    parser = _Parser(
        prog=PROG, description="Read the tool calls in model output, and write the prompts that ask for them."
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    _add_reading(sub)
    _add_writing(sub)
    _add_registry(sub)
    _add_tables(sub)
    return parser


def _add_reading(sub: Any) -> None:
    """Parse, stream, explain: reading one reply."""
    p_parse = sub.add_parser("parse", help="print text, reasoning, calls and diagnostics as one JSON object")
    _reading_args(p_parse)
    _template_arg(p_parse)
    p_parse.set_defaults(run=_cmd_parse)
    p_stream = sub.add_parser("stream", help="print stream events, one JSON object per line")
    _reading_args(p_stream)
    _template_arg(p_stream)
    p_stream.add_argument("--chunk", type=int, default=16, metavar="N", help="characters per delta (default 16)")
    p_stream.set_defaults(run=_cmd_stream)
    p_explain = sub.add_parser(
        "explain", help="show why a reply was read as it was: its regions, each block's verdict, every diagnostic"
    )
    _reading_args(p_explain)
    p_explain.add_argument("--model", metavar="MODEL_ID", help="families and policy for this model (`families` globs)")
    p_explain.add_argument(
        "--chunk",
        type=int,
        metavar="N",
        help="also show the stream's events at N characters per delta (--html: default 16)",
    )
    p_explain.add_argument("--html", metavar="OUT.html", help="write the explanation as one self-contained HTML page")
    p_explain.add_argument("--json", action="store_true", help="print the explanation as one JSON object")
    p_explain.set_defaults(run=_cmd_explain)


def _add_writing(sub: Any) -> None:
    """Render, export: writing prompts and grammars."""
    p_render = sub.add_parser("render", help="print a dialect's tool section of the system prompt: protocol, catalogue")
    p_render.add_argument("--dialect", required=True, choices=["xml", "pformat", "python", "typescript", "native"])
    p_render.add_argument(
        "--tools", required=True, metavar="TOOLS.json", help="tool list (OpenAI, Anthropic, MCP or bare objects)"
    )
    _toolset_arg(p_render)
    choice = p_render.add_mutually_exclusive_group()
    choice.add_argument("--tool-choice", choices=["auto", "required", "none"], default="auto", help="default auto")
    choice.add_argument("--force-tool", metavar="NAME", help="the reply must call this tool")
    p_render.add_argument(
        "--host-renders-catalogue", action="store_true", help="print only what the host's prompt lacks"
    )
    p_render.add_argument("--turn-tools", metavar="TOOLS.json", help="tools made for this turn (always catalogued)")
    p_render.add_argument(
        "--json", action="store_true", help="print {dialect, instructions, request} as one JSON object"
    )
    p_render.set_defaults(run=_cmd_render)
    p_export = sub.add_parser(
        "export", help="print a constrained-decoding grammar for a family's replies with calls (docs/export.md)"
    )
    p_export.add_argument("--family", required=True, metavar="NAME", help="the family whose replies to constrain")
    p_export.add_argument(
        "--tools", required=True, metavar="TOOLS.json", help="tool list (OpenAI, Anthropic, MCP or bare objects)"
    )
    _toolset_arg(p_export)
    p_export.add_argument(
        "--format",
        choices=["lark", "gbnf", "ebnf", "structural-tag"],
        default="lark",
        help="llguidance Lark (default, printed as is); GBNF or EBNF with triggers, or an xgrammar structural tag (JSON)",
    )
    mode = p_export.add_mutually_exclusive_group()
    mode.add_argument("--mode", choices=["auto", "required"], default="auto", help="default auto")
    mode.add_argument("--force-tool", metavar="NAME", help="the reply must call this tool")
    p_export.add_argument("--no-parallel", action="store_true", help="one call per reply")
    spelling = p_export.add_mutually_exclusive_group()
    spelling.add_argument(
        "--variant",
        metavar="NAME",
        help="the spelling to write, for a family that writes several (`tooldialect families --json`)",
    )
    spelling.add_argument(
        "--model", metavar="MODEL_ID", help="pick the spelling this model writes (by the variants' model globs)"
    )
    p_export.set_defaults(run=_cmd_export)


def _add_registry(sub: Any) -> None:
    """Families, grammar check: the grammar registry."""
    p_fam = sub.add_parser(
        "families", help="list the grammar registry: models and what each grammar was checked against"
    )
    p_fam.add_argument("--json", action="store_true", help="print the registry as a JSON array")
    p_fam.add_argument(
        "--template",
        metavar="PATH",
        help="print the profile a chat template calls for (.jinja, tokenizer_config.json or a model directory)",
    )
    p_fam.add_argument("--model", metavar="MODEL_ID", help="with --template: the id to fall back on")
    p_fam.set_defaults(run=_cmd_families)
    p_grammar = sub.add_parser("grammar", help="work on a grammar file: 'grammar check FILE.lark'")
    grammar_sub = p_grammar.add_subparsers(dest="grammar_command", metavar="ACTION", parser_class=_Parser)
    grammar_sub.required = True
    p_check = grammar_sub.add_parser(
        "check", help="compile strictly, check header and markers, run the corpus four ways"
    )
    p_check.add_argument("grammar", metavar="FILE.lark", help="the grammar to check")
    p_check.add_argument("--corpus", metavar="FILE.txt", help="golden vectors to run (the tests/corpus format)")
    p_check.add_argument(
        "--update",
        nargs="?",
        action="append",
        metavar="TITLE",
        help="write the expected results of the corpus cases that have none; with a TITLE (repeatable), "
        "write or rewrite that case's (every write is shown in the report: review it)",
    )
    p_check.set_defaults(run=_cmd_grammar_check)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _build().parse_args(argv)
        return int(args.run(args))
    except _Usage as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return 2
    except ToolDialectError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return 2
    except BrokenPipeError:  # pragma: no cover - e.g. piped into `head`
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
