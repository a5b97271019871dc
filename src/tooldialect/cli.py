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
import codecs
import json
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from . import families as registry
from .errors import ToolDialectError
from .models import Diagnostic, Policy, ToolCall
from .stream import ToolStream, parse
from .toolset import Toolset

__all__ = ["main"]

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


def _cmd_parse(args: argparse.Namespace) -> int:
    text = _read(args.file)
    result = parse(text, _tools(args.tools, args.toolset), families=args.family or None, policy=_policy(args.policy))
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
    stream = ToolStream(_tools(args.tools, args.toolset), families=args.family or None, policy=_policy(args.policy))
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
        every = Toolset([*(tools or ()), *turn])
        out = {"dialect": dialect.name, "instructions": text, "request": dialect.request_fields(every, tool_choice=choice)}
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
    fams = registry.all_families()
    if args.json:
        rows = [
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
        _print_json(rows, indent=2)
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


def _cmd_audit(args: argparse.Namespace) -> int:
    from .audit import audit_paths, total_bytes

    policy = _policy(args.policy)
    families = args.family or None
    if families:
        for name in families:
            registry.get(name)  # an unknown family is a usage error, before any work
    options = {"text_field": args.field, "families": families, "policy": policy, "parquet": _parquet_reader()}
    if args.engine != "inprocess":
        report = _audit_on(args, options)
    else:
        bar, progress = _progress_bar("auditing", total_bytes(args.paths), args.no_progress)
        try:
            report = audit_paths(args.paths, progress=progress, **options)
        finally:
            if bar is not None:
                bar.stop()
    unreadable = report.unreadable_files
    if unreadable and not report.records:  # nothing read: one error line, no warnings before it
        more = f" (and {len(unreadable) - 1} more)" if len(unreadable) > 1 else ""
        raise _Usage(f"cannot read {unreadable[0]}{more}: no readable transcript store among the paths given")
    for line in unreadable:
        sys.stderr.write(f"{PROG}: warning: cannot read {line}\n")
    if args.json:
        _print_json(report.to_json(), indent=2)
    else:
        _print(report.to_text())
    return 1 if args.fail_on_leak and report.leaks else 0


def _audit_on(args: argparse.Namespace, options: dict[str, Any]) -> Any:
    """The audit on Spark or Ray: one task per store file (docs/scale.md)."""
    try:
        if args.engine == "spark":
            from .spark import audit_files

            return audit_files(args.paths, master=args.master or "local[*]", **options)
        from .ray import audit_files as ray_audit_files

        return ray_audit_files(args.paths, address=args.address, **options)
    except Exception as exc:
        if not type(exc).__module__.startswith(("pyspark", "py4j", "ray")):
            raise
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise _Usage(f"{args.engine}: {first}") from None


def _parquet_reader() -> Any:
    try:
        from .tableio import parquet_records
    except ImportError:  # no pyarrow: a Parquet file is reported unreadable, and why
        return None
    return parquet_records


def _progress_bar(what: str, total: int, off: bool) -> tuple[Any, Any]:
    """A byte progress bar on standard error when it is a terminal: (bar, advance)."""
    if off or not sys.stderr.isatty():
        return None, None
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    bar = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = bar.add_task(what, total=total or None)
    bar.start()
    return bar, lambda n: bar.advance(task, n)


def _run_table(args: argparse.Namespace, job: Any) -> int:
    from . import tablerun
    from .audit import total_bytes

    if args.batch_rows < 1:
        raise _Usage("--batch-rows must be at least 1")
    job.batch_rows = args.batch_rows
    if args.engine != "inprocess":
        bar, progress = None, None
    else:
        bar, progress = _progress_bar(f"{job.which} table", total_bytes(args.paths), args.no_progress)
    try:
        tablerun.run(job, args.paths, args.output, engine=args.engine, master=args.master, address=args.address, progress=progress)
    finally:
        if bar is not None:
            bar.stop()
    if args.engine == "inprocess":
        sys.stderr.write(f"{PROG}: {job.rows} rows from {job.files} file(s) written to {args.output}\n")
    else:
        sys.stderr.write(f"{PROG}: {job.files} file(s) read on {args.engine}, written to {args.output}\n")
    return 0


def _tools_option(args: argparse.Namespace) -> str | None:
    """``--tools`` as JSON text (what workers build their toolset from), checked here first."""
    data = _tool_data(args.tools, args.toolset)
    if data is None:
        return None
    Toolset.coerce(data)  # an invalid toolset is a usage error, before any row
    return json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _cmd_parse_table(args: argparse.Namespace) -> int:
    from .tablerun import Job

    if args.tools and args.tools_column:
        raise _Usage("give --tools (one toolset for every row) or --tools-column, not both")
    options = {
        "text_column": args.text_column,
        "model_column": args.model_column,
        "tools_column": args.tools_column,
        "tools": _tools_option(args),
        "families": tuple(args.family) if args.family else None,
        "policy": _policy(args.policy) if args.policy else None,
        "keep": tuple(args.keep),
    }
    text = tuple(c for c in (args.text_column, args.model_column) if c)
    other = tuple(c for c in (args.tools_column, *args.keep) if c)
    return _run_table(args, Job("parse", options, text, other))


def _cmd_render_table(args: argparse.Namespace) -> int:
    from .tablerun import Job

    if args.tools and args.tools_column:
        raise _Usage("give --tools (one toolset for every row) or --tools-column, not both")
    if (args.dialect is None) == (args.family is None):
        raise _Usage("give one of --dialect NAME or --family NAME")
    options = {
        "column": args.column,
        "tools_column": args.tools_column,
        "tools": _tools_option(args),
        "dialect": args.dialect,
        "family": args.family,
        "variant": args.variant,
        "tool_choice": args.tool_choice,
        "keep": tuple(args.keep),
    }
    other = tuple(c for c in (args.column, args.tools_column, *args.keep) if c)
    return _run_table(args, Job("render", options, (), other))


def _toolset_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--toolset", metavar="NAME", help="the toolset NAME of a --tools file of named toolsets (a corpus's _tools.json)"
    )


def _reading_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", nargs="?", default="-", help="model output (default: standard input)")
    p.add_argument("--tools", metavar="TOOLS.json", help="tool list (OpenAI, Anthropic, MCP or bare objects)")
    _toolset_arg(p)
    p.add_argument("--family", action="append", metavar="NAME", help="only this family (repeatable)")
    p.add_argument("--policy", action="append", default=[], metavar="FIELD=VALUE", help="a Policy field")


def _table_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH", help="Parquet or JSON Lines (.jsonl, .gz, .zst) files, or directories of them")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="output: .parquet, else JSON Lines (a directory on spark/ray)")
    p.add_argument("--keep", action="append", default=[], metavar="COLUMN", help="an input column to copy to the output (repeatable)")
    p.add_argument("--batch-rows", type=int, default=4096, metavar="N", help="rows per batch (default 4096)")
    p.add_argument("--engine", choices=["inprocess", "spark", "ray"], default="inprocess", help="default inprocess")
    p.add_argument("--master", metavar="URL", help="Spark master for --engine spark (default local[*])")
    p.add_argument("--address", metavar="ADDR", help="Ray cluster for --engine ray (default: a local Ray)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--tools", metavar="TOOLS.json", help="one tool list for every row")
    _toolset_arg(p)
    p.add_argument("--tools-column", metavar="COLUMN", help="each row's tool list, as JSON")


def _build() -> _Parser:
    parser = _Parser(prog=PROG, description="Read the tool calls in model output, and write the prompts that ask for them.")
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
    p_parse.set_defaults(run=_cmd_parse)
    p_stream = sub.add_parser("stream", help="print stream events, one JSON object per line")
    _reading_args(p_stream)
    p_stream.add_argument("--chunk", type=int, default=16, metavar="N", help="characters per delta (default 16)")
    p_stream.set_defaults(run=_cmd_stream)
    p_explain = sub.add_parser(
        "explain", help="show why a reply was read as it was: its regions, each block's verdict, every diagnostic"
    )
    _reading_args(p_explain)
    p_explain.add_argument("--model", metavar="MODEL_ID", help="families and policy for this model (`families` globs)")
    p_explain.add_argument("--chunk", type=int, metavar="N", help="also show the stream's events at N characters per delta (--html: default 16)")
    p_explain.add_argument("--html", metavar="OUT.html", help="write the explanation as one self-contained HTML page")
    p_explain.add_argument("--json", action="store_true", help="print the explanation as one JSON object")
    p_explain.set_defaults(run=_cmd_explain)


def _add_writing(sub: Any) -> None:
    """Render, export: writing prompts and grammars."""
    p_render = sub.add_parser("render", help="print a dialect's tool section of the system prompt: protocol, catalogue")
    p_render.add_argument("--dialect", required=True, choices=["xml", "pformat", "python", "typescript", "native"])
    p_render.add_argument("--tools", required=True, metavar="TOOLS.json", help="tool list (OpenAI, Anthropic, MCP or bare objects)")
    _toolset_arg(p_render)
    choice = p_render.add_mutually_exclusive_group()
    choice.add_argument("--tool-choice", choices=["auto", "required", "none"], default="auto", help="default auto")
    choice.add_argument("--force-tool", metavar="NAME", help="the reply must call this tool")
    p_render.add_argument("--host-renders-catalogue", action="store_true", help="print only what the host's prompt lacks")
    p_render.add_argument("--turn-tools", metavar="TOOLS.json", help="tools made for this turn (always catalogued)")
    p_render.add_argument("--json", action="store_true", help="print {dialect, instructions, request} as one JSON object")
    p_render.set_defaults(run=_cmd_render)
    p_export = sub.add_parser(
        "export", help="print a constrained-decoding grammar for a family's replies with calls (docs/export.md)"
    )
    p_export.add_argument("--family", required=True, metavar="NAME", help="the family whose replies to constrain")
    p_export.add_argument("--tools", required=True, metavar="TOOLS.json", help="tool list (OpenAI, Anthropic, MCP or bare objects)")
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
        "--variant", metavar="NAME", help="the spelling to write, for a family that writes several (`tooldialect families --json`)"
    )
    spelling.add_argument("--model", metavar="MODEL_ID", help="pick the spelling this model writes (by the variants' model globs)")
    p_export.set_defaults(run=_cmd_export)


def _add_registry(sub: Any) -> None:
    """Families, grammar check: the grammar registry."""
    p_fam = sub.add_parser("families", help="list the grammar registry: models and what each grammar was checked against")
    p_fam.add_argument("--json", action="store_true", help="print the registry as a JSON array")
    p_fam.set_defaults(run=_cmd_families)
    p_grammar = sub.add_parser("grammar", help="work on a grammar file: 'grammar check FILE.lark'")
    grammar_sub = p_grammar.add_subparsers(dest="grammar_command", metavar="ACTION", parser_class=_Parser)
    grammar_sub.required = True
    p_check = grammar_sub.add_parser("check", help="compile strictly, check header and markers, run the corpus four ways")
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


def _add_tables(sub: Any) -> None:
    """Parse-table, render-table, audit: many records at once."""
    p_ptable = sub.add_parser("parse-table", help="read the text column of Parquet / JSON Lines rows into calls (docs/scale.md)")
    _table_args(p_ptable)
    p_ptable.add_argument("--text-column", default="text", metavar="COLUMN", help="the model's text (default: text)")
    p_ptable.add_argument("--model-column", metavar="COLUMN", help="each row's model id: its families and policy")
    p_ptable.add_argument("--family", action="append", metavar="NAME", help="only this family (repeatable)")
    p_ptable.add_argument("--policy", action="append", default=[], metavar="FIELD=VALUE", help="a Policy field")
    p_ptable.set_defaults(run=_cmd_parse_table)
    p_rtable = sub.add_parser("render-table", help="write OpenAI-format conversations as a dialect or family writes them")
    _table_args(p_rtable)
    p_rtable.add_argument("--column", default="messages", metavar="COLUMN", help="each row's message list (default: messages)")
    speaker = p_rtable.add_mutually_exclusive_group()
    speaker.add_argument("--dialect", choices=["xml", "pformat", "python", "typescript", "native"], help="a text dialect")
    speaker.add_argument("--family", metavar="NAME", help="a model family (`tooldialect families`)")
    p_rtable.add_argument("--variant", metavar="NAME", help="the family's spelling to write")
    p_rtable.add_argument("--tool-choice", choices=["auto", "required", "none"], default="auto", help="default auto")
    p_rtable.set_defaults(run=_cmd_render_table)
    p_audit = sub.add_parser("audit", help="find call markup leaked into assistant content of transcript stores")
    p_audit.add_argument(
        "paths", nargs="+", metavar="PATH", help="JSON, JSON Lines (.jsonl, .gz, .zst) or Parquet files, or directories of them"
    )
    p_audit.add_argument("--field", metavar="PATH", help="the text field of each record (dotted path), instead of messages")
    p_audit.add_argument("--family", action="append", metavar="NAME", help="only this family (repeatable)")
    p_audit.add_argument("--policy", action="append", default=[], metavar="FIELD=VALUE", help="a Policy field")
    p_audit.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p_audit.add_argument("--fail-on-leak", action="store_true", help="exit 1 when any leak is found")
    p_audit.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p_audit.add_argument("--engine", choices=["inprocess", "spark", "ray"], default="inprocess", help="default inprocess (spark, ray: one task per file)")
    p_audit.add_argument("--master", metavar="URL", help="Spark master for --engine spark (default local[*])")
    p_audit.add_argument("--address", metavar="ADDR", help="Ray cluster for --engine ray (default: a local Ray)")
    p_audit.set_defaults(run=_cmd_audit)

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
