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

from collections.abc import Sequence
from typing import Any

from . import table
from .errors import MissingDependencyError
from .tableio import Columns, decode_lines

__all__ = ["audit_dataset", "init", "parse_dataset", "read_jsonl", "render_dataset"]

_FUNCTIONS = {"parse": table.parse_batch, "audit": table.audit_batch, "render": table.render_batch}


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


def _apply(ds: Any, which: str, options: dict[str, Any], batch_size: int | None) -> Any:
    _ray()
    tools = options.get("tools")
    if tools is not None and not isinstance(tools, str):
        if isinstance(tools, table.Toolset):
            raise table.TableError("pass tools as a tool list or its JSON text: workers build their own toolset")
        options = {**options, "tools": table._json(list(tools))}
    return ds.map_batches(
        _run,
        batch_format="pyarrow",
        batch_size=batch_size,
        fn_kwargs={"which": which, "options": options},
        zero_copy_batch=True,
    )


def _run(batch: Any, *, which: str, options: dict[str, Any]) -> Any:
    return _FUNCTIONS[which](batch, **options)


def parse_dataset(ds: Any, *, batch_size: int | None = 4096, **options: Any) -> Any:
    """:func:`tooldialect.table.parse_batch` over every block of ``ds``."""
    return _apply(ds, "parse", options, batch_size)


def audit_dataset(ds: Any, *, batch_size: int | None = 4096, **options: Any) -> Any:
    """:func:`tooldialect.table.audit_batch` over every block of ``ds``."""
    return _apply(ds, "audit", options, batch_size)


def render_dataset(ds: Any, *, batch_size: int | None = 4096, **options: Any) -> Any:
    """:func:`tooldialect.table.render_batch` over every block of ``ds``."""
    return _apply(ds, "render", options, batch_size)


def read_jsonl(paths: Sequence[str], columns: Columns) -> Any:
    """JSON Lines files (plain, gzip or zstd) as a Dataset of ``columns``, read as the
    embedded reader reads them: a line that is not a JSON object is a row with the error
    column set."""
    ray = _ray()
    compression = {"gz": "gzip", "zst": "zstd"}
    streams = []
    for path in paths:
        tail = str(path).rsplit(".", 1)[-1].lower()
        streams.append(ray.data.read_text(str(path), arrow_open_stream_args={"compression": compression.get(tail)}))
    ds = streams[0].union(*streams[1:]) if len(streams) > 1 else streams[0]
    return ds.map_batches(_decode, batch_format="pyarrow", fn_kwargs={"columns": columns})


def _decode(batch: Any, *, columns: Columns) -> Any:
    return table.pa.Table.from_batches([decode_lines(batch.column("text").to_pylist(), columns, first=0)])


def audit_files(paths: Sequence[str], *, address: str | None = None, **options: Any) -> Any:
    """``tooldialect audit`` on Ray: one task per store file at ``paths``, the reports
    merged in file order (:func:`tooldialect.audit.audit_across`); ``options`` are
    :func:`tooldialect.audit.audit_file`'s."""
    from .audit import audit_across, audit_task

    def run(names: list[str]) -> list[Any]:
        init(address)
        task = _ray().remote(audit_task)
        return _ray().get([task.remote(name, options) for name in names])

    return audit_across(paths, run)
