"""The table functions on Ray Data: a Dataset in, a Dataset out, through
``map_batches(batch_format="pyarrow")``.

    from tooldialect import ray as tdr
    tdr.init()                                    # a local Ray, or init(address="ray://…")
    out = tdr.parse_dataset(ds, text_column="completion", model_column="model")
    out = tdr.audit_dataset(ds, column="messages")
    out = tdr.render_dataset(ds, column="messages", tools_column="tools", family="hermes")

The options are those of :mod:`tooldialect.table`.  Each Ray worker imports tooldialect
once and keeps its compiled grammars and toolsets for every batch it is given.  ray is
imported here only when used: ``pip install 'tooldialect[ray]'``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from . import table
from .errors import MissingDependencyError
from .tablecells import BATCH_BYTES, batch_slices
from .tableio import Columns, decode_lines
from .toolset import Toolset

# isort: split
# pyarrow after .table, which says what to install when it is missing
import pyarrow as pa

__all__ = ["audit_dataset", "init", "parse_dataset", "read_jsonl", "render_dataset", "spread", "write"]

_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "parse": table.parse_batch,
    "audit": table.audit_batch,
    "render": table.render_batch,
}


def _ray() -> Any:
    try:
        import ray
        import ray.data
    except ImportError:
        raise MissingDependencyError("tooldialect.ray needs ray[data]: pip install 'tooldialect[ray]'") from None
    return ray


def init(address: str | None = None, *, num_cpus: int | None = None) -> None:
    """Connect to the Ray cluster at ``address``, or start a local one (``num_cpus`` cores)."""
    ray = _ray()
    if ray.is_initialized():
        return
    if address is None:
        ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    else:
        ray.init(address=address, log_to_driver=False, configure_logging=False)


def _apply(
    ds: Any, which: str, options: dict[str, Any], batch_size: int | None, batch_bytes: int | None = BATCH_BYTES
) -> Any:
    _ray()
    tools = options.get("tools")
    if tools is not None and not isinstance(tools, str):
        if isinstance(tools, Toolset):
            raise table.TableError("pass tools as a tool list or its JSON text: workers build their own toolset")
        options = {**options, "tools": table._json(list(tools))}
    return ds.map_batches(
        _run,
        batch_format="pyarrow",
        batch_size=batch_size,
        fn_kwargs={"which": which, "options": options, "batch_bytes": batch_bytes},
        zero_copy_batch=True,
    )


def _run(batch: Any, *, which: str, options: dict[str, Any], batch_bytes: int | None) -> Any:
    pieces = [_FUNCTIONS[which](piece, **options) for piece in batch_slices(batch, batch_bytes)]
    return pieces[0] if len(pieces) == 1 else pa.concat_tables(pieces)


def parse_dataset(
    ds: Any, *, batch_size: int | None = 4096, batch_bytes: int | None = BATCH_BYTES, **options: Any
) -> Any:
    """:func:`tooldialect.table.parse_batch` over every block of ``ds``, ``batch_size`` rows
    at a time, each batch read in pieces of at most ``batch_bytes`` bytes."""
    return _apply(ds, "parse", options, batch_size, batch_bytes)


def audit_dataset(
    ds: Any, *, batch_size: int | None = 4096, batch_bytes: int | None = BATCH_BYTES, **options: Any
) -> Any:
    """:func:`tooldialect.table.audit_batch` over every block of ``ds`` (batches as for parse)."""
    return _apply(ds, "audit", options, batch_size, batch_bytes)


def render_dataset(
    ds: Any, *, batch_size: int | None = 4096, batch_bytes: int | None = BATCH_BYTES, **options: Any
) -> Any:
    """:func:`tooldialect.table.render_batch` over every block of ``ds`` (batches as for parse)."""
    return _apply(ds, "render", options, batch_size, batch_bytes)


def spread(ds: Any, rows: int | None, batch_rows: int) -> tuple[Any, int]:
    """``ds`` in blocks of at most ``batch_rows`` rows, and of ``rows / cores`` when ``rows``
    (the dataset's, when known) is fewer, so every core of the cluster has a block: the
    dataset, and the rows per batch to map it with (no more than a block holds)."""
    cores = max(1, int(_ray().cluster_resources().get("CPU", 1)))
    per_block = batch_rows if rows is None else max(1, min(batch_rows, -(-rows // cores)))
    return ds.repartition(target_num_rows_per_block=per_block), per_block


def write(ds: Any, out: str, fmt: str) -> None:
    """``ds`` written to the directory ``out`` as part files of ``fmt``
    (:data:`tooldialect.tableout.ENGINE_FORMATS`), JSON Lines and CSV written as in this process."""
    if fmt == "parquet":
        ds.write_parquet(out)
        return
    from ray.data.datasource import BlockBasedFileDatasink

    class Sink(BlockBasedFileDatasink):
        def write_block_to_file(self, block: Any, file: Any) -> None:
            file.write(_encode(block.to_arrow(), fmt))

    gz = {"compression": "gzip"} if fmt == "jsonl.gz" else None
    ds.write_datasink(Sink(out, file_format="csv" if fmt == "csv" else "jsonl", open_stream_args=gz))


def _encode(data: Any, fmt: str) -> bytes:
    from .tableout import flat, json_lines

    if fmt != "csv":
        return json_lines(data).encode("utf-8")
    import io

    import pyarrow.csv as pcsv

    sink = io.BytesIO()
    pcsv.write_csv(flat(data), sink)
    return sink.getvalue()


def read_jsonl(paths: Sequence[str], columns: Columns) -> Any:
    """JSON Lines files (plain, gzip or zstd) as a Dataset of ``columns``, read as the
    embedded reader reads them: a line that is not a JSON object is a row with the error
    column set."""
    ray = _ray()
    compression = {"gz": "gzip", "zst": "zstd"}
    files = []
    for path in paths:
        tail = str(path).rsplit(".", 1)[-1].lower()
        stream_args = {"compression": compression.get(tail)}
        files.append(ray.data.read_binary_files(str(path), arrow_open_stream_args=stream_args))
    ds = files[0].union(*files[1:]) if len(files) > 1 else files[0]
    return ds.map_batches(_decode, batch_format="pyarrow", batch_size=1, fn_kwargs={"columns": columns})


def _decode(batch: Any, *, columns: Columns) -> Any:
    """Each file's bytes cut at line feeds, as this process cuts them (a line that is not
    UTF-8 is a row saying so; Ray's text reader would fail the job)."""
    lines: list[bytes] = []
    for data in batch.column("bytes").to_pylist():
        pieces = data.split(b"\n")
        lines.extend(pieces[:-1] if pieces and not pieces[-1] else pieces)
    return pa.Table.from_batches([decode_lines(lines, columns, first=0)])


def audit_files(paths: Sequence[str], *, address: str | None = None, **options: Any) -> Any:
    """``tooldialect audit`` on Ray: one task per store file at ``paths``, the reports
    merged in file order (:func:`tooldialect.audit.audit_across`); ``options`` are
    :func:`tooldialect.audit.audit_file`'s."""
    from .audit import audit_across, audit_task

    def run(names: list[str]) -> list[Any]:
        init(address)
        task = _ray().remote(audit_task)
        reports: list[Any] = _ray().get([task.remote(name, options) for name in names])
        return reports

    return audit_across(paths, run)
