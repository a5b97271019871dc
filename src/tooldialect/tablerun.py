"""The table functions run over files: in this process (the default), on Spark or on Ray.

In this process, files are read and written batch by batch (:mod:`tooldialect.tableio`),
so memory is bounded by the batch, whatever the size of the input.  On Spark and Ray the
engine reads and writes (a directory of part files) and runs the same functions, the
input spread over every core of the cluster.  Before any of them starts, every Parquet
file's schema is checked on this machine, so a missing column or a column of the wrong
type is one line here, never an engine's stack trace.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import table
from .errors import ToolDialectError
from .table import TableError
from .tablecells import BATCH_BYTES
from .tableio import BATCH_ROWS, ERROR_COLUMN, Columns, input_files, is_parquet, parquet_batch_rows, read_batches
from .tableout import TableWriter, claim_output, count_rows, output_format

# isort: split
# pyarrow after .table, which says what to install when it is missing
import pyarrow as pa

__all__ = ["Job", "run"]

_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "parse": table.parse_batch,
    "audit": table.audit_batch,
    "render": table.render_batch,
}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_RAISED = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?([A-Z]\w*(?:Error|Exception)): (.+)$")


@dataclass
class Job:
    """What to run: ``which`` function, its ``options``, the input columns it reads, and
    how: rows and bytes per batch, the first ``limit`` rows only, ``force`` to replace the output."""

    which: str
    options: dict[str, Any]
    text: tuple[str, ...]  # columns that must hold strings
    other: tuple[str, ...] = ()  # columns read as they are (JSON text in JSON Lines)
    batch_rows: int = BATCH_ROWS
    batch_bytes: int | None = BATCH_BYTES
    limit: int | None = None
    force: bool = False
    rows: int = field(default=0, init=False)
    files: int = field(default=0, init=False)

    @property
    def columns(self) -> Columns:
        return Columns(self.text, self.other)

    @property
    def needed(self) -> list[str]:
        return list(dict.fromkeys([*self.text, *self.other]))


def run(
    job: Job,
    paths: Sequence[str],
    out: str,
    *,
    engine: str = "inprocess",
    master: str | None = None,
    address: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> Job:
    files = input_files(paths)
    job.files = len(files)
    if engine not in ("inprocess", "spark", "ray"):
        raise TableError(f"unknown engine {engine!r}; use inprocess, spark or ray")
    # a bad option or column name is found on an empty batch, before any file is read
    _FUNCTIONS[job.which](job.columns.schema().empty_table(), error_column=ERROR_COLUMN, **job.options)
    kinds = {is_parquet(p) for p in files}
    if engine != "inprocess" and len(kinds) > 1:
        raise TableError(f"--engine {engine} reads one kind of file per run: give Parquet files or JSON Lines files")
    for path in files:
        if is_parquet(path):
            _check_parquet(job, path)
    fmt = output_format(out, engine)
    claim_output(out, force=job.force, engine=engine, inputs=files)
    if engine == "inprocess":
        return _inprocess(job, files, out, fmt, progress)
    try:
        if engine == "spark":
            _spark(job, files, kinds.pop(), out, fmt, master or "local[*]")
        else:
            _ray(job, files, kinds.pop(), out, fmt, address)
    except Exception as exc:
        if isinstance(exc, ToolDialectError) or not type(exc).__module__.startswith(("pyspark", "py4j", "ray")):
            raise
        raise TableError(f"{engine}: {engine_cause(exc)}") from None
    job.rows = count_rows(out, fmt)
    return job


def _check_parquet(job: Job, path: Path) -> None:
    """The file's schema holds the columns the job reads, of types the function takes."""
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException) as exc:
        raise TableError(
            f"cannot read {path}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        ) from None
    missing = [c for c in job.needed if c not in schema.names]
    if missing:
        raise TableError(f"{path} has no column {missing[0]!r} (columns: {', '.join(schema.names)})")
    try:
        _FUNCTIONS[job.which](schema.empty_table().select(job.needed), **job.options)
    except TableError as exc:
        raise TableError(f"{path}: {exc}") from None


def engine_cause(exc: BaseException) -> str:
    """The cause of an engine's failure in one line: the tooldialect error a task raised,
    else the last Python exception its traceback names, else the first line (colour codes
    removed)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ToolDialectError):
            return str(cause).splitlines()[0]
        cause = getattr(cause, "cause", None) or cause.__cause__ or cause.__context__
    lines = [line.strip() for line in _ANSI.sub("", str(exc)).splitlines() if line.strip()]
    raised = [m for m in map(_RAISED.match, lines) if m]
    ours = [m for m in raised if m.group(0).startswith("tooldialect.")]
    if ours:  # a task's traceback, as text: what tooldialect raised there
        return ours[-1].group(2)
    engines = ("org.", "java.", "scala.", "py4j.", "pyspark.", "ray.")
    theirs = [m for m in raised if not m.group(0).startswith(engines)]
    if theirs:
        return "{}: {}".format(*theirs[-1].groups())
    return lines[0] if lines else type(exc).__name__


def _inprocess(job: Job, files: Sequence[Path], out: str, fmt: str, progress: Callable[[int], None] | None) -> Job:
    fn = _FUNCTIONS[job.which]
    writer: TableWriter | None = None
    try:
        for path in files:
            for batch in read_batches(
                path,
                job.columns,
                parquet_columns=job.needed,
                batch_rows=job.batch_rows,
                batch_bytes=job.batch_bytes,
                progress=progress,
            ):
                if job.limit is not None and job.rows + batch.num_rows > job.limit:
                    batch = batch.slice(0, job.limit - job.rows)
                error = ERROR_COLUMN if ERROR_COLUMN in batch.schema.names else None
                got = fn(batch, error_column=error, **job.options)
                if writer is None:
                    writer = TableWriter(out, got.schema, fmt)
                elif got.schema != writer.schema:
                    got = _cast(got, writer.schema, path)
                writer.write(got)
                job.rows += got.num_rows
                if job.limit is not None and job.rows >= job.limit:
                    return job
        if writer is None:  # no rows at all: an empty output with the schema
            empty = fn(job.columns.schema().empty_table(), error_column=ERROR_COLUMN, **job.options)
            writer = TableWriter(out, empty.schema, fmt)
    finally:
        if writer is not None:
            writer.close()
    return job


def _cast(batch: Any, schema: Any, path: Any) -> Any:
    try:
        return batch.cast(schema)
    except (pa.ArrowException, ValueError) as exc:
        raise TableError(
            f"{path} does not have the columns of the files before it ({str(exc).splitlines()[0]})"
        ) from None


def _batch_rows(job: Job, files: Sequence[Path], parquet: bool) -> int:
    """Rows per batch on an engine: ``batch_rows``, fewer where the Parquet metadata says
    that many rows would pass ``batch_bytes``."""
    if not parquet:
        return job.batch_rows
    return min(parquet_batch_rows(p, job.needed, job.batch_rows, job.batch_bytes) for p in files)


def _spark(job: Job, files: Sequence[Path], parquet: bool, out: str, fmt: str, master: str) -> None:
    from . import spark as tds

    session = tds.session(master)
    tds.bound_batches(session, _batch_rows(job, files, parquet), job.batch_bytes)
    names = [str(p) for p in files]
    if parquet:
        df = session.read.parquet(*names).select(*job.needed)
        options = job.options
    else:
        df = tds.read_jsonl(session, names, job.columns)
        options = {**job.options, "error_column": ERROR_COLUMN}
    if job.limit is not None:
        df = df.limit(job.limit)
    got = tds._apply(tds.spread(df), job.which, options, batch_bytes=job.batch_bytes)
    tds.write(got, out, fmt)


def _ray(job: Job, files: Sequence[Path], parquet: bool, out: str, fmt: str, address: str | None) -> None:
    from . import ray as tdr

    tdr.init(address)
    import ray.data

    names = [str(p) for p in files]
    rows: int | None = None
    if parquet:
        import pyarrow.parquet as pq

        ds = ray.data.read_parquet(names, columns=job.needed)
        rows = sum(pq.ParquetFile(p).metadata.num_rows for p in files)
        options = job.options
    else:
        ds = tdr.read_jsonl(names, job.columns)
        options = {**job.options, "error_column": ERROR_COLUMN}
    if job.limit is not None:
        ds = ds.limit(job.limit)
        rows = job.limit if rows is None else min(rows, job.limit)
    ds, batch_size = tdr.spread(ds, rows, _batch_rows(job, files, parquet))
    got = tdr._apply(ds, job.which, options, batch_size, batch_bytes=job.batch_bytes)
    tdr.write(got, out, fmt)
