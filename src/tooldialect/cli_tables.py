"""The ``tooldialect`` commands over many records: parse-table, render-table and audit, in
this process or on Spark or Ray (docs/scale.md)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from . import families as registry
from .cli_io import PROG, _policy, _print, _print_json, _reading_setup, _template_arg, _tool_data, _toolset_arg, _Usage
from .toolset import Toolset


def _cmd_audit(args: argparse.Namespace) -> int:
    from .audit import audit_paths, total_bytes

    policy = _policy(args.policy)
    families = args.family or None
    if families:
        for name in families:
            registry.get(name)  # an unknown family is a usage error, before any work
    if args.json and args.jsonl:
        raise _Usage("give --json (one object) or --jsonl (a line per leak), not both")
    if args.limit is not None and (args.limit < 0 or args.engine != "inprocess"):
        raise _Usage("--limit takes 0 or more records, read in this process (not with --engine)")
    options = {
        "text_field": args.field,
        "families": families,
        "policy": policy,
        "parquet": _parquet_reader(),
        "id_field": args.id_field,
    }
    printed = [0]  # leaks written as JSON Lines so far

    def print_leak(leak: Any) -> None:
        _print_json(leak.to_json())
        printed[0] += 1

    if args.engine != "inprocess":
        report = _audit_on(args, options)
    else:
        bar, progress = _progress_bar("auditing", total_bytes(args.paths), args.no_progress)
        # --jsonl keeps no leak in memory: each is written as it is found; the text keeps its samples
        keep = None if args.json else 0 if args.jsonl else 10
        try:
            report = audit_paths(
                args.paths,
                progress=progress,
                keep=keep,
                on_leak=print_leak if args.jsonl else None,
                limit=args.limit,
                **options,
            )
        finally:
            if bar is not None:
                bar.stop()
    unreadable = report.unreadable_files
    if unreadable and not report.records:  # nothing read: one error line, no warnings before it
        more = f" (and {len(unreadable) - 1} more)" if len(unreadable) > 1 else ""
        raise _Usage(f"cannot read {unreadable[0]}{more}: no readable transcript store among the paths given")
    for line in unreadable:
        sys.stderr.write(f"{PROG}: warning: cannot read {line}\n")
    if args.jsonl:
        for leak in report.leaks[printed[0] :]:  # an engine's leaks come back with its report
            print_leak(leak)
        _print_json({"summary": report.summary_json()})
    elif args.json:
        _print_json(report.to_json(), indent=2)
    else:
        _print(report.to_text())
    return 1 if args.fail_on_leak and report.leaked_contents else 0


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
    if args.limit is not None and args.limit < 0:
        raise _Usage("--limit must be 0 or more")
    job.batch_rows, job.batch_bytes = args.batch_rows, _size(args.batch_bytes)
    job.limit, job.force = args.limit, args.force
    if args.engine != "inprocess":
        bar, progress = None, None
    else:
        bar, progress = _progress_bar(f"{job.which} table", total_bytes(args.paths), args.no_progress)
    try:
        tablerun.run(
            job,
            args.paths,
            args.output,
            engine=args.engine,
            master=args.master,
            address=args.address,
            progress=progress,
        )
    finally:
        if bar is not None:
            bar.stop()
    where = "" if args.engine == "inprocess" else f" on {args.engine}"
    sys.stderr.write(f"{PROG}: {job.rows} rows from {job.files} file(s) written to {args.output}{where}\n")
    return 0


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def _size(text: str) -> int:
    """``--batch-bytes``: a number of bytes, or of KiB, MiB, GiB with a K, M or G after it."""
    number, unit = text.strip().upper().removesuffix("B").removesuffix("I"), ""
    if number[-1:] in _UNITS:
        number, unit = number[:-1], number[-1]
    if not number.isdigit() or int(number) * _UNITS[unit] < 1:
        raise _Usage(f"--batch-bytes takes a size such as 33554432, 64K or 32M, not {text!r}")
    return int(number) * _UNITS[unit]


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
    if args.template is not None:  # the template's families and policy, under --family and --policy
        families, policy = _reading_setup(args)
        options.update(families=tuple(families) if families else None, policy=policy)
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


def _table_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="Parquet or JSON Lines (.jsonl, .gz, .zst) files, or directories of them",
    )
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="output: .parquet, .jsonl, .jsonl.gz, .jsonl.zst or .csv (a directory of part files on spark/ray)",
    )
    p.add_argument("--force", action="store_true", help="replace the output if it exists")
    p.add_argument(
        "--keep",
        action="append",
        default=[],
        metavar="COLUMN",
        help="an input column to copy to the output (repeatable)",
    )
    p.add_argument("--batch-rows", type=int, default=4096, metavar="N", help="rows per batch (default 4096)")
    p.add_argument("--batch-bytes", default="32M", metavar="SIZE", help="bytes per batch at most (default 32M: 32 MiB)")
    p.add_argument("--limit", type=int, metavar="N", help="read the first N rows only")
    p.add_argument("--engine", choices=["inprocess", "spark", "ray"], default="inprocess", help="default inprocess")
    p.add_argument("--master", metavar="URL", help="Spark master for --engine spark (default local[*])")
    p.add_argument("--address", metavar="ADDR", help="Ray cluster for --engine ray (default: a local Ray)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--tools", metavar="TOOLS.json", help="one tool list for every row")
    _toolset_arg(p)
    p.add_argument("--tools-column", metavar="COLUMN", help="each row's tool list, as JSON")


def _add_tables(sub: Any) -> None:
    """Parse-table, render-table, audit: many records at once."""
    p_ptable = sub.add_parser(
        "parse-table", help="read the text column of Parquet / JSON Lines rows into calls (docs/scale.md)"
    )
    _table_args(p_ptable)
    p_ptable.add_argument("--text-column", default="text", metavar="COLUMN", help="the model's text (default: text)")
    p_ptable.add_argument("--model-column", metavar="COLUMN", help="each row's model id: its families and policy")
    p_ptable.add_argument("--family", action="append", metavar="NAME", help="only this family (repeatable)")
    _template_arg(p_ptable)
    p_ptable.add_argument("--policy", action="append", default=[], metavar="FIELD=VALUE", help="a Policy field")
    p_ptable.set_defaults(run=_cmd_parse_table)
    p_rtable = sub.add_parser(
        "render-table", help="write OpenAI-format conversations as a dialect or family writes them"
    )
    _table_args(p_rtable)
    p_rtable.add_argument(
        "--column", default="messages", metavar="COLUMN", help="each row's message list (default: messages)"
    )
    speaker = p_rtable.add_mutually_exclusive_group()
    speaker.add_argument(
        "--dialect", choices=["xml", "pformat", "python", "typescript", "native"], help="a text dialect"
    )
    speaker.add_argument("--family", metavar="NAME", help="a model family (`tooldialect families`)")
    p_rtable.add_argument("--variant", metavar="NAME", help="the family's spelling to write")
    p_rtable.add_argument("--tool-choice", choices=["auto", "required", "none"], default="auto", help="default auto")
    p_rtable.set_defaults(run=_cmd_render_table)
    p_audit = sub.add_parser("audit", help="find call markup leaked into assistant content of transcript stores")
    p_audit.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="JSON, JSON Lines (.jsonl, .gz, .zst) or Parquet files, or directories of them",
    )
    p_audit.add_argument(
        "--field", metavar="PATH", help="the text field of each record (dotted path), instead of messages"
    )
    p_audit.add_argument("--family", action="append", metavar="NAME", help="only this family (repeatable)")
    p_audit.add_argument("--policy", action="append", default=[], metavar="FIELD=VALUE", help="a Policy field")
    p_audit.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p_audit.add_argument(
        "--jsonl",
        action="store_true",
        help="print each leak as a JSON line as it is found, then a line of the summary (flat memory)",
    )
    p_audit.add_argument(
        "--id-field", metavar="PATH", help="a record's field (dotted path) that names it in each leak: an id column"
    )
    p_audit.add_argument("--limit", type=int, metavar="N", help="read the first N records only")
    p_audit.add_argument("--fail-on-leak", action="store_true", help="exit 1 when any leak is found")
    p_audit.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p_audit.add_argument(
        "--engine",
        choices=["inprocess", "spark", "ray"],
        default="inprocess",
        help="default inprocess (spark, ray: one task per file)",
    )
    p_audit.add_argument("--master", metavar="URL", help="Spark master for --engine spark (default local[*])")
    p_audit.add_argument("--address", metavar="ADDR", help="Ray cluster for --engine ray (default: a local Ray)")
    p_audit.set_defaults(run=_cmd_audit)
