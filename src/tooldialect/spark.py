"""The table functions on Spark: a DataFrame in, a DataFrame out, through ``mapInArrow``.

    from tooldialect import spark as tds
    session = tds.session("local[*]")             # or a cluster's master URL
    out = tds.parse_dataframe(df, text_column="completion", model_column="model")
    out = tds.audit_dataframe(df, column="messages")
    out = tds.render_dataframe(df, column="messages", tools_column="tools", dialect="xml")

The options are those of :mod:`tooldialect.table`; the output schema is the one its
``*_schema`` functions give, so Spark knows it before any row is read.  Each Python worker
imports tooldialect once and keeps its compiled grammars and toolsets for every batch it
is given.  pyspark is imported here only when used: ``pip install 'tooldialect[spark]'``.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from . import table
from .errors import MissingDependencyError
from .tablecells import BATCH_BYTES, batch_slices
from .tableio import Columns, decode_lines
from .toolset import Toolset

# isort: split
# pyarrow after .table, which says what to install when it is missing
import pyarrow as pa

__all__ = [
    "audit_dataframe",
    "bound_batches",
    "parse_dataframe",
    "read_jsonl",
    "render_dataframe",
    "session",
    "spread",
    "write",
]

_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "parse": table.parse_batch,
    "audit": table.audit_batch,
    "render": table.render_batch,
}
_SCHEMAS: dict[str, Callable[[Any, Sequence[str]], Any]] = {
    "parse": table.parse_schema,
    "audit": table.audit_schema,
    "render": table.render_schema,
}


def _pyspark() -> Any:
    try:
        import pyspark.sql
    except ImportError:
        raise MissingDependencyError("tooldialect.spark needs pyspark: pip install 'tooldialect[spark]'") from None
    return pyspark.sql


def session(master: str = "local[*]", *, app_name: str = "tooldialect", config: dict[str, str] | None = None) -> Any:
    """A SparkSession on ``master`` (``local[*]``: every core of this machine), its Python
    workers running this interpreter unless PYSPARK_PYTHON says otherwise."""
    sql = _pyspark()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = sql.SparkSession.builder.master(master).appName(app_name)
    for key, value in {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", **(config or {})}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _apply(df: Any, which: str, options: dict[str, Any], batch_bytes: int | None = BATCH_BYTES) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    options = _portable(options)
    keep = options.get("keep", ())
    schema = _SCHEMAS[which](to_arrow_schema(df.schema), keep)
    _FUNCTIONS[which](to_arrow_schema(df.schema).empty_table(), **options)  # a bad option raises here, not in a task
    return df.mapInArrow(functools.partial(_run, which, options, batch_bytes), from_arrow_schema(schema))


def _portable(options: dict[str, Any]) -> dict[str, Any]:
    """The options as workers receive them: a tool list as its JSON text (built once per worker)."""
    tools = options.get("tools")
    if tools is not None and not isinstance(tools, str):
        if isinstance(tools, Toolset):
            raise table.TableError("pass tools as a tool list or its JSON text: workers build their own toolset")
        options = {**options, "tools": table._json(list(tools))}
    return options


def _run(which: str, options: dict[str, Any], batch_bytes: int | None, batches: Iterable[Any]) -> Iterator[Any]:
    fn = _FUNCTIONS[which]
    for batch in batches:
        for piece in batch_slices(batch, batch_bytes):
            yield fn(piece, **options)


def parse_dataframe(df: Any, *, batch_bytes: int | None = BATCH_BYTES, **options: Any) -> Any:
    """:func:`tooldialect.table.parse_batch` over every partition of ``df``, each Arrow
    batch Spark hands a worker read in pieces of at most ``batch_bytes`` bytes."""
    return _apply(df, "parse", options, batch_bytes)


def audit_dataframe(df: Any, *, batch_bytes: int | None = BATCH_BYTES, **options: Any) -> Any:
    """:func:`tooldialect.table.audit_batch` over every partition of ``df`` (``batch_bytes`` as for parse)."""
    return _apply(df, "audit", options, batch_bytes)


def render_dataframe(df: Any, *, batch_bytes: int | None = BATCH_BYTES, **options: Any) -> Any:
    """:func:`tooldialect.table.render_batch` over every partition of ``df`` (``batch_bytes`` as for parse)."""
    return _apply(df, "render", options, batch_bytes)


def bound_batches(spark: Any, rows: int, batch_bytes: int | None) -> None:
    """The Arrow batches Spark hands the Python workers: at most ``rows`` rows and, where
    this Spark has the setting, ``batch_bytes`` bytes."""
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(rows))
    if batch_bytes is not None:  # a Spark without the setting ignores it: the workers cut the batches too
        spark.conf.set("spark.sql.execution.arrow.maxBytesPerBatch", str(batch_bytes))


def spread(df: Any) -> Any:
    """``df`` over at least as many partitions as the cluster's default parallelism (its
    cores), so that one input file is not one core's work: a round-robin repartition when it
    has fewer (the output's rows are then not in the input's order)."""
    cores = df.sparkSession.sparkContext.defaultParallelism
    return df.repartition(cores) if df.rdd.getNumPartitions() < cores else df


def write(df: Any, out: str, fmt: str) -> None:
    """``df`` written to the directory ``out`` as part files of ``fmt``
    (:data:`tooldialect.tableout.ENGINE_FORMATS`; CSV with nested columns as JSON text)."""
    if fmt == "parquet":
        df.write.mode("errorifexists").parquet(out)
        return
    if fmt == "csv":
        from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

        from .tableout import flat_schema

        flat_df = df.mapInArrow(_flat, from_arrow_schema(flat_schema(to_arrow_schema(df.schema))))
        writer = flat_df.write.mode("errorifexists").option("header", "true").option("escape", '"')
        # Spark trims the spaces around a CSV value it writes unless told not to
        writer.option("ignoreLeadingWhiteSpace", "false").option("ignoreTrailingWhiteSpace", "false").csv(out)
        return
    writer = df.write.mode("errorifexists").option("ignoreNullFields", "false")
    if fmt == "jsonl.gz":
        writer = writer.option("compression", "gzip")
    writer.json(out)


def _flat(batches: Iterable[Any]) -> Iterator[Any]:
    from .tableout import flat

    for batch in batches:
        yield flat(batch)


def read_jsonl(spark: Any, paths: Sequence[str], columns: Columns) -> Any:
    """JSON Lines files (plain or gzip) as a DataFrame of ``columns``, read as the embedded
    reader reads them: a line that is not a JSON object is a row with the error column set."""
    from pyspark.sql.pandas.types import from_arrow_schema

    lines = spark.read.option("lineSep", "\n").text(list(paths))
    return lines.mapInArrow(functools.partial(_decode, columns), from_arrow_schema(columns.schema()))


def _decode(columns: Columns, batches: Iterable[Any]) -> Iterator[Any]:
    for batch in batches:  # the lines' bytes as they are: a line that is not UTF-8 is a row saying so
        yield decode_lines(batch.column(0).cast(pa.binary()).to_pylist(), columns, first=0)


def audit_files(paths: Sequence[str], *, master: str = "local[*]", **options: Any) -> Any:
    """``tooldialect audit`` on Spark: one task per store file at ``paths``, the reports
    merged in file order (:func:`tooldialect.audit.audit_across`); ``options`` are
    :func:`tooldialect.audit.audit_file`'s."""
    from .audit import audit_across, audit_task

    def run(names: list[str]) -> list[Any]:
        work = session(master).sparkContext.parallelize(names, len(names))
        reports: list[Any] = work.map(functools.partial(audit_task, options=options)).collect()
        return reports

    return audit_across(paths, run)
