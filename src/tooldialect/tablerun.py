"""The table functions run over files: in this process (the default), on Spark or on Ray.

In this process, files are read and written batch by batch (:mod:`tooldialect.tableio`),
so memory is bounded by the batch, whatever the size of the input.  On Spark and Ray the
engine reads and writes (a directory of part files) and runs the same functions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import table
from .table import TableError, pa
from .tableio import ERROR_COLUMN, Columns, TableWriter, input_files, is_parquet, read_batches

__all__ = ["Job", "run"]

_FUNCTIONS = {"parse": table.parse_batch, "audit": table.audit_batch, "render": table.render_batch}


@dataclass
class Job:
    """What to run: ``which`` function, its ``options``, and the input columns it reads."""

    which: str
    options: dict[str, Any]
    text: tuple[str, ...]  # columns that must hold strings
    other: tuple[str, ...] = ()  # columns read as they are (JSON text in JSON Lines)
    batch_rows: int = 4096
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
    # a bad option or column name is found on an empty batch, before any file is read
    _FUNCTIONS[job.which](job.columns.schema().empty_table(), error_column=ERROR_COLUMN, **job.options)
    if engine == "inprocess":
        return _inprocess(job, files, out, progress)
    kinds = {is_parquet(p) for p in files}
    if len(kinds) > 1:
        raise TableError(f"--engine {engine} reads one kind of file per run: give Parquet files or JSON Lines files")
    if engine not in ("spark", "ray"):
        raise TableError(f"unknown engine {engine!r}; use inprocess, spark or ray")
    for path in files:  # a missing column or a corrupt file is found here, as in this process
        if is_parquet(path):
            next(read_batches(path, job.columns, parquet_columns=job.needed, batch_rows=1), None)
    try:
        if engine == "spark":
            return _spark(job, [str(p) for p in files], kinds.pop(), out, master or "local[*]")
        return _ray(job, [str(p) for p in files], kinds.pop(), out, address)
    except Exception as exc:
        if not type(exc).__module__.startswith(("pyspark", "py4j", "ray")):
            raise
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise TableError(f"{engine}: {first}") from None


def _inprocess(job: Job, files: Sequence[Any], out: str, progress: Callable[[int], None] | None) -> Job:
    fn = _FUNCTIONS[job.which]
    writer: TableWriter | None = None
    try:
        for path in files:
            for batch in read_batches(
                path, job.columns, parquet_columns=job.needed, batch_rows=job.batch_rows, progress=progress
            ):
                error = ERROR_COLUMN if ERROR_COLUMN in batch.schema.names else None
                got = fn(batch, error_column=error, **job.options)
                if writer is None:
                    writer = TableWriter(out, got.schema)
                elif got.schema != writer.schema:
                    got = _cast(got, writer.schema, path)
                writer.write(got)
                job.rows += got.num_rows
        if writer is None:  # no rows at all: an empty output with the schema
            empty = fn(job.columns.schema().empty_table(), error_column=ERROR_COLUMN, **job.options)
            writer = TableWriter(out, empty.schema)
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


def _spark(job: Job, files: list[str], parquet: bool, out: str, master: str) -> Job:
    from . import spark as tds

    session = tds.session(master)
    if parquet:
        df = session.read.parquet(*files).select(*job.needed)
        options = job.options
    else:
        df = tds.read_jsonl(session, files, job.columns)
        options = {**job.options, "error_column": ERROR_COLUMN}
    got = tds._apply(df, job.which, options)
    writer = got.write.mode("errorifexists")
    (writer.json if out.lower().endswith((".jsonl", ".json")) else writer.parquet)(out)
    return job


def _ray(job: Job, files: list[str], parquet: bool, out: str, address: str | None) -> Job:
    from . import ray as tdr

    tdr.init(address)
    import ray.data

    if parquet:
        ds = ray.data.read_parquet(files, columns=job.needed)
        options = job.options
    else:
        ds = tdr.read_jsonl(files, job.columns)
        options = {**job.options, "error_column": ERROR_COLUMN}
    got = tdr._apply(ds, job.which, options, job.batch_rows)
    (got.write_json if out.lower().endswith((".jsonl", ".json")) else got.write_parquet)(out)
    return job
