"""Output of the table commands: the format the name's suffix says, never a guess.

``.parquet`` is Parquet; ``.jsonl`` is JSON Lines (``.jsonl.gz`` gzip, ``.jsonl.zst``
zstandard); ``.csv`` is CSV with a header, whose nested columns (``calls``,
``diagnostics``, ``leaks``) are written as JSON text.  Any other name is refused, and so
is an output that exists, unless the caller says to replace it.  In this process the
output is one file written batch by batch; an engine writes a directory of part files
of the same format.
"""

from __future__ import annotations

import gzip
import io
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .table import TableError

# isort: split
# pyarrow after .table, which says what to install when it is missing
import pyarrow as pa

__all__ = ["ENGINE_FORMATS", "FORMATS", "TableWriter", "count_rows", "flat", "flat_schema", "output_format"]

#: Output suffixes and the format each names.
FORMATS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".jsonl.gz": "jsonl.gz",
    ".ndjson.gz": "jsonl.gz",
    ".jsonl.zst": "jsonl.zst",
    ".ndjson.zst": "jsonl.zst",
    ".csv": "csv",
}
#: The formats Spark and Ray write (a directory of part files).
ENGINE_FORMATS = ("parquet", "jsonl", "jsonl.gz", "csv")


def output_format(path: str, engine: str = "inprocess") -> str:
    """The format ``path``'s suffix names (``-``: JSON Lines on standard output), or a
    TableError saying which suffixes there are."""
    if path == "-":
        if engine != "inprocess":
            raise TableError(f"--engine {engine} writes a directory of part files: give -o a name, not -")
        return "jsonl"
    name = Path(path).name.lower()
    fmt = next((FORMATS[s] for s in sorted(FORMATS, key=len, reverse=True) if name.endswith(s)), None)
    if fmt is None:
        raise TableError(
            f"cannot tell what to write to {path}: end the name in .parquet, .jsonl, .jsonl.gz, .jsonl.zst or .csv"
        )
    if engine != "inprocess" and fmt not in ENGINE_FORMATS:
        raise TableError(f"--engine {engine} writes .parquet, .jsonl, .jsonl.gz or .csv, not {path}")
    return fmt


def claim_output(path: str, *, force: bool, engine: str, inputs: Sequence[Path]) -> None:
    """Refuse an output that exists unless ``force``; with ``force``, an engine's output
    directory is removed first (as Spark's overwrite mode does), never one that holds an input."""
    if path == "-":
        return
    target = Path(path)
    if not target.exists() and not target.is_symlink():
        return
    if not force:
        raise TableError(f"{path} exists: give --force to replace it")
    if target.is_dir() and not target.is_symlink():
        if engine == "inprocess":
            raise TableError(f"{path} is a directory: give -o a file name")
        inside = [p for p in inputs if target.resolve() in p.resolve().parents]
        if inside:
            raise TableError(f"--force would remove {path}, which holds the input {inside[0]}")
        shutil.rmtree(target)
    elif engine != "inprocess":
        target.unlink()


# -- nested columns as JSON text, for CSV -------------------------------------------------------


def _nested(t: Any) -> bool:
    return bool(pa.types.is_nested(t))


def flat_schema(schema: Any) -> Any:
    """``schema`` with each nested column (list, struct, map) a string of its JSON text."""
    return pa.schema([f.with_type(pa.string()) if _nested(f.type) else f for f in schema])


def flat(batch: Any) -> Any:
    """``batch`` with each nested column's cells written as compact JSON text (null stays null)."""
    if not any(_nested(t) for t in batch.schema.types):
        return batch
    arrays = []
    for col, f in zip(batch.columns, batch.schema):
        if _nested(f.type):
            col = pa.array([None if v is None else _json(v) for v in col.to_pylist()], pa.string())
        arrays.append(col)
    if isinstance(batch, pa.Table):
        return pa.Table.from_arrays(arrays, schema=flat_schema(batch.schema))
    return pa.RecordBatch.from_arrays(arrays, schema=flat_schema(batch.schema))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def json_lines(batch: Any) -> str:
    """The rows of ``batch`` as JSON Lines, keys in column order."""
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in batch.to_pylist())


# -- in this process ------------------------------------------------------------------------------


class TableWriter:
    """One output file written batch by batch, in the format its name says."""

    def __init__(self, path: str, schema: Any, fmt: str | None = None) -> None:
        self.path = path
        self.schema = schema
        self.format = fmt or output_format(path)
        self.rows = 0
        self._parquet: Any = None
        self._csv: Any = None
        self._fh: Any = None
        self._raw: Any = None
        try:
            self._open()
        except OSError as exc:
            self.close()
            raise TableError(f"cannot write {path}: {exc.strerror or exc}") from None

    def _open(self) -> None:
        if self.format == "parquet":
            import pyarrow.parquet as pq

            self._parquet = pq.ParquetWriter(self.path, self.schema)
        elif self.format == "csv":
            import pyarrow.csv as pcsv

            self._csv = pcsv.CSVWriter(self.path, flat_schema(self.schema))
        elif self.path == "-":
            import sys

            self._fh = sys.stdout
        elif self.format == "jsonl.gz":
            self._fh = gzip.open(self.path, "wt", encoding="utf-8")  # noqa: SIM115 - closed by close()
        elif self.format == "jsonl.zst":
            import zstandard

            self._raw = open(self.path, "wb")  # noqa: SIM115 - closed by close()
            stream = zstandard.ZstdCompressor().stream_writer(self._raw, closefd=False)
            self._fh = io.TextIOWrapper(stream, encoding="utf-8")
        else:
            self._fh = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()

    def write(self, batch: Any) -> None:
        self.rows += batch.num_rows
        if self._parquet is not None:
            self._parquet.write_batch(batch)
        elif self._csv is not None:
            self._csv.write(flat(batch))
        else:
            self._fh.write(json_lines(batch))

    def close(self) -> None:
        for part in (self._parquet, self._csv):
            if part is not None:
                part.close()
        if self._fh is not None and self.path != "-":
            self._fh.close()
        if self._raw is not None:
            self._raw.close()


# -- what an engine wrote -----------------------------------------------------------------------------


def count_rows(path: str, fmt: str) -> int:
    """The rows of an engine's output: a directory of part files (those whose name starts
    with ``_`` or ``.`` are the engine's own bookkeeping), or one file."""
    root = Path(path)
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    return sum(_rows_in(p, fmt) for p in files if not p.name.startswith(("_", ".")))


def _rows_in(path: Path, fmt: str) -> int:
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return int(pq.ParquetFile(path).metadata.num_rows)
    opener = gzip.open if path.name.endswith(".gz") else open
    if fmt == "csv":
        import csv

        with opener(path, "rt", encoding="utf-8", newline="") as fh:
            return max(0, sum(1 for _ in csv.reader(fh)) - 1)  # less the header
    count = 0
    with opener(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            count += chunk.count(b"\n")
    return count
