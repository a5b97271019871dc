"""Files for :mod:`tooldialect.table`: Parquet and JSON Lines (plain, ``.gz``, ``.zst``) read
batch by batch, each batch at most ``batch_rows`` rows and ``batch_bytes`` bytes, so memory
stays bounded by the batch whatever the size of the rows (the output: :mod:`tooldialect.tableout`).

A JSON Lines line that is not a JSON object, or whose text cell is not a string, becomes a
row whose :data:`ERROR_COLUMN` says why (the table functions turn it into a
``record_invalid`` diagnostic): a bad line never stops a file.  A file that cannot be read
at all (a corrupt Parquet file, a missing path) raises :class:`~tooldialect.table.TableError`
with one line naming it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from .audit import RecordError, open_lines
from .table import TableError
from .tablecells import BATCH_BYTES, SURROGATE, batch_slices, read_column

# isort: split
# pyarrow after .table, which says what to install when it is missing
import pyarrow as pa

__all__ = [
    "BATCH_BYTES",
    "BATCH_ROWS",
    "ERROR_COLUMN",
    "Columns",
    "decode_lines",
    "input_files",
    "parquet_batch_rows",
    "parquet_records",
    "read_batches",
]

#: The column a reader adds: why a record could not be read, null when it could.
ERROR_COLUMN = "_tooldialect_error"
PARQUET = (".parquet", ".pq")
JSONL = (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz", ".jsonl.zst", ".ndjson.zst")
BATCH_ROWS = 4096


@dataclass(frozen=True)
class Columns:
    """The columns to read from JSON Lines records: ``text`` ones must hold strings (or be
    null); ``other`` ones are kept as they are when strings, else as their JSON text."""

    text: tuple[str, ...] = ()
    other: tuple[str, ...] = ()

    def schema(self) -> Any:
        names = list(dict.fromkeys([*self.text, *self.other]))
        return pa.schema([pa.field(n, pa.string()) for n in names] + [pa.field(ERROR_COLUMN, pa.string())])


def _suffix(path: Path) -> str:
    name = path.name.lower()
    for suffix in (*JSONL, *PARQUET):
        if name.endswith(suffix):
            return suffix
    return ""


def input_files(paths: Iterable[str]) -> list[Path]:
    """The Parquet and JSON Lines files at ``paths`` (directories walked, in name order)."""
    found: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found.extend(sorted(q for q in p.rglob("*") if q.is_file() and _suffix(q)))
        elif p.is_file():
            if not _suffix(p):
                raise TableError(f"cannot read {raw}: not a .parquet or .jsonl (.gz, .zst) file")
            found.append(p)
        else:
            raise TableError(f"cannot read {raw}: no such file or directory")
    if not found:
        raise TableError("no .parquet or .jsonl files among the paths given")
    return found


def is_parquet(path: Path) -> bool:
    return _suffix(path) in PARQUET


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def decode_lines(lines: Iterable[bytes | str], columns: Columns, first: int = 1) -> Any:
    """JSON Lines as a RecordBatch of ``columns.schema()``; ``first`` is the first line's
    number (for the error messages; None where line numbers are unknown)."""
    names = columns.schema().names[:-1]
    text = set(columns.text)
    out: dict[str, list[Any]] = {n: [] for n in names}
    errors: list[str | None] = []
    for n, raw in enumerate(lines, first or 0):
        where = f"line {n}: " if first else ""
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                _bad(out, errors, f"{where}not UTF-8 ({exc.reason})")
                continue
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            _bad(out, errors, f"{where}not JSON ({exc})")
            continue
        if not isinstance(obj, dict):
            _bad(out, errors, f"{where}not a JSON object")
            continue
        error = None
        for name in names:
            value = obj.get(name)
            if value is not None and not isinstance(value, str):
                if name in text:
                    error = error or f"{where}{name!r} holds {_kind(value)}, not a string"
                    value = None
                else:
                    value = _json_text(value)
            out[name].append(value)
        errors.append(error)
    arrays = [pa.array(_safe(out[n]), pa.string()) for n in names] + [pa.array(errors, pa.string())]
    return pa.RecordBatch.from_arrays(arrays, schema=columns.schema())


def _kind(value: Any) -> str:
    return {bool: "a boolean", int: "a number", float: "a number", list: "an array", dict: "an object"}.get(
        type(value), "a value"
    )


def _bad(out: dict[str, list[Any]], errors: list[str | None], why: str) -> None:
    for values in out.values():
        values.append(None)
    errors.append(why)


def _safe(values: list[Any]) -> list[Any]:
    """Strings Arrow can hold: a lone surrogate (a ``\\ud800`` escape) written as U+FFFD."""
    try:
        pa.array(values, pa.string())
        return values
    except UnicodeEncodeError:
        return [SURROGATE.sub("\ufffd", v) if isinstance(v, str) else v for v in values]


def read_batches(
    path: Path,
    columns: Columns,
    *,
    parquet_columns: Sequence[str] | None = None,
    batch_rows: int = BATCH_ROWS,
    batch_bytes: int | None = BATCH_BYTES,
    progress: Callable[[int], None] | None = None,
) -> Iterator[Any]:
    """The file's records as RecordBatches of at most ``batch_rows`` rows and at most
    ``batch_bytes`` bytes (a JSON Lines line's bytes; a Parquet row's cells as Arrow holds
    them, :func:`~tooldialect.tablecells.row_bytes`); a row larger than ``batch_bytes`` is a
    batch alone.  ``progress`` is called with the bytes of the file read since its last call."""
    if is_parquet(path):
        rows = parquet_batch_rows(path, parquet_columns, batch_rows, batch_bytes)
        for batch in _parquet(path, parquet_columns, rows, progress):
            yield from batch_slices(batch, batch_bytes)
        return
    try:
        raw, stream = open_lines(path)
    except OSError as exc:
        raise TableError(f"cannot read {path}: {exc.strerror or exc}") from None
    with raw, stream:
        done = size = 0
        lines: list[bytes] = []
        first = 1
        limit = batch_bytes if batch_bytes is not None else float("inf")
        try:
            for n, line in enumerate(stream, 1):
                if lines and (len(lines) >= batch_rows or size + len(line) > limit):
                    yield decode_lines(lines, columns, first)
                    first, lines, size = n, [], 0
                    done = _advance(progress, raw, done)
                lines.append(line)
                size += len(line)
            if lines or first == 1:
                yield decode_lines(lines, columns, first)
            _advance(progress, raw, done)
        except (OSError, EOFError) as exc:  # a damaged .gz / .zst stream
            raise TableError(f"cannot read {path}: {exc}") from None
        except Exception as exc:  # zstandard's own errors
            if type(exc).__module__.startswith("zstandard"):
                raise TableError(f"cannot read {path}: {exc}") from None
            raise


def _advance(progress: Callable[[int], None] | None, raw: BinaryIO, done: int) -> int:
    if progress is None:
        return done
    at = raw.tell()
    progress(at - done)
    return at


def parquet_batch_rows(path: Path, columns: Sequence[str] | None, batch_rows: int, batch_bytes: int | None) -> int:
    """Rows per batch to read from a Parquet file: ``batch_rows``, fewer when the file's
    metadata (the uncompressed bytes of the columns read, per row) says they pass ``batch_bytes``."""
    import pyarrow.parquet as pq

    if batch_bytes is None:
        return batch_rows
    try:
        meta = pq.ParquetFile(path).metadata
    except (OSError, pa.ArrowException):
        return batch_rows  # the reader says why it cannot read the file
    wanted = set(columns) if columns else None
    total = 0
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for j in range(group.num_columns):
            chunk = group.column(j)
            if wanted is None or chunk.path_in_schema.split(".")[0] in wanted:
                total += chunk.total_uncompressed_size
    per_row: int = max(1, total // max(1, meta.num_rows))
    return max(1, min(batch_rows, batch_bytes // per_row))


def _parquet(
    path: Path, columns: Sequence[str] | None, batch_rows: int, progress: Callable[[int], None] | None
) -> Iterator[Any]:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
        missing = [c for c in columns or () if c not in pf.schema_arrow.names]
        if missing:
            have = ", ".join(pf.schema_arrow.names)
            raise TableError(f"{path} has no column {missing[0]!r} (columns: {have})")
        size, rows = path.stat().st_size, max(pf.metadata.num_rows, 1)
        for batch in pf.iter_batches(batch_size=batch_rows, columns=list(columns) if columns else None):
            if progress is not None:
                progress(size * batch.num_rows // rows)
            yield batch
    except TableError:
        raise
    except (OSError, pa.ArrowException) as exc:
        raise TableError(
            f"cannot read {path}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        ) from None


def parquet_records(path: Path, batch_rows: int = BATCH_ROWS) -> Iterator[tuple[int, Any, int]]:
    """A Parquet file's rows as audit records: (row number from 1, the row as an object,
    bytes read); a ``messages`` column of JSON text is decoded (an Exception when it is not JSON)."""
    n = 0
    read = [0]
    batches = _parquet(path, None, batch_rows, lambda size: read.append(read.pop() + size))
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except TableError as exc:
            raise OSError(str(exc).removeprefix(f"cannot read {path}: ")) from None
        rows = _records(batch)
        for row in rows:
            n += 1
            size, read[0] = read[0], 0
            if isinstance(row, RecordError):
                yield n, row, size
                continue
            messages = row.get("messages")
            if isinstance(messages, str):
                try:
                    row["messages"] = json.loads(messages)
                except (ValueError, RecursionError) as exc:
                    yield n, exc, size
                    continue
            yield n, row, size
        del rows


def _records(batch: Any) -> list[Any]:
    """A batch's rows as objects; a row with a cell that is not UTF-8 as the RecordError saying so."""
    names = batch.schema.names
    bad: list[str | None] = [None] * batch.num_rows
    columns = [read_column(batch, name, "record", text=False, bad=bad) or [] for name in names]
    return [dict(zip(names, values)) if why is None else RecordError(why) for why, values in zip(bad, zip(*columns))]
