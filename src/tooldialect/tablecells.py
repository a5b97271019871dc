"""Arrow columns as the table functions read and write them: cells as Python values (a
string that is not UTF-8 is a cell that cannot be read, never an exception that loses the
batch), kept columns written as valid UTF-8, and batches cut to a number of bytes.

Arrow strings are UTF-8, but Arrow does not check what a Parquet file holds: some writers
store bytes that are not UTF-8 in a string column, and Spark's text reader passes a line's
bytes as they are.  Such a cell raises ``UnicodeDecodeError`` when it becomes a Python
string; here it becomes a reason instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa

from .errors import ToolDialectError

__all__ = [
    "BATCH_BYTES",
    "TableError",
    "as_table",
    "batch_slices",
    "cells",
    "kept_fields",
    "output",
    "output_schema",
    "read_column",
    "row_bytes",
    "row_errors",
    "utf8_column",
]

SURROGATE = re.compile("[\ud800-\udfff]")
#: The bytes a batch holds at most, by default (docs/scale.md): with rows of a few kilobytes
#: the row bound (4096) comes first; with rows of hundreds of kilobytes this one does.
BATCH_BYTES = 32 * 1024 * 1024
TEXT_TYPES = (pa.string(), pa.large_string(), pa.null())


class TableError(ToolDialectError, ValueError):
    """A batch the function cannot read at all: a missing column, a column of the wrong type."""


def cells(col: Any) -> tuple[list[Any], list[str | None] | None]:
    """The column's cells as Python values, and, when a cell holds a string that is not UTF-8,
    why each cell could not be read (None where it could; the cell's value is None)."""
    try:
        return col.to_pylist(), None
    except UnicodeDecodeError:
        pass
    values: list[Any] = []
    errors: list[str | None] = []
    for cell in col:
        try:
            values.append(cell.as_py())
            errors.append(None)
        except UnicodeDecodeError as exc:
            values.append(None)
            errors.append(f"not UTF-8 ({exc.reason})")
    return values, errors


def utf8_column(col: Any) -> Any:
    """``col`` with every byte sequence that is not UTF-8 in its strings written as U+FFFD
    (the column itself when its strings are valid, which is checked in Arrow's own code)."""
    if not _has_strings(col.type):
        return col
    try:
        col.validate(full=True)
        return col
    except pa.ArrowInvalid:
        pass
    try:
        raw = col.cast(_as_binary(col.type)).to_pylist()
    except (pa.ArrowException, NotImplementedError):  # a type Arrow cannot cast: drop the bad cells
        values, _ = cells(col)
        return pa.array(values, type=col.type)
    return pa.array([_replaced(v) for v in raw], type=col.type)


def _has_strings(t: Any) -> bool:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return True
    if pa.types.is_dictionary(t):
        return _has_strings(t.value_type)
    if pa.types.is_map(t):
        return _has_strings(t.key_type) or _has_strings(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _has_strings(t.value_type)
    if pa.types.is_struct(t):
        return any(_has_strings(t.field(i).type) for i in range(t.num_fields))
    return False


def _as_binary(t: Any) -> Any:
    """``t`` with each string type replaced by the binary type of the same offsets."""
    if pa.types.is_string(t):
        return pa.binary()
    if pa.types.is_large_string(t):
        return pa.large_binary()
    if pa.types.is_dictionary(t):
        return _as_binary(t.value_type)
    if pa.types.is_map(t):
        return pa.map_(_as_binary(t.key_type), _as_binary(t.item_type))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_as_binary(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_as_binary(t.value_type)))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(_as_binary(t.value_type)), t.list_size)
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_as_binary(t.field(i).type)) for i in range(t.num_fields)])
    return t


def _replaced(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list):
        return [_replaced(v) for v in value]
    if isinstance(value, tuple):  # a map's (key, item)
        return tuple(_replaced(v) for v in value)
    if isinstance(value, dict):
        return {k: _replaced(v) for k, v in value.items()}
    return value


# -- the table functions' arguments and outputs -------------------------------------------------


def as_table(data: Any) -> Any:
    if isinstance(data, (pa.RecordBatch, pa.Table)):
        return data
    raise TableError(f"expected a pyarrow RecordBatch or Table, got {type(data).__name__}")


def read_column(
    data: Any, name: str | None, what: str, *, text: bool = True, bad: list[str | None] | None = None
) -> list[Any] | None:
    """The column's cells as Python values; a cell that cannot be read (a string that is not
    UTF-8) is None, and why is written in ``bad`` at its row, unless a reason is there already."""
    if name is None:
        return None
    if name not in data.schema.names:
        have = ", ".join(data.schema.names) or "none"
        raise TableError(f"no {what} column {name!r} (columns: {have})")
    col = data.column(name)
    if text and col.type not in TEXT_TYPES:
        raise TableError(f"the {what} column {name!r} holds {col.type}, not strings")
    values, errors = cells(col)
    if errors is not None and bad is not None:
        for i, error in enumerate(errors):
            if error is not None and bad[i] is None:
                bad[i] = f"column {name!r}: {error}"
    return values


def row_errors(data: Any, error_column: str | None) -> list[str | None]:
    """Why each row cannot be read, as far as known before its cells are: the reader's note."""
    errors = read_column(data, error_column, "error")
    return errors if errors is not None else [None] * data.num_rows


def kept_fields(data: Any, keep: Sequence[str], outputs: Iterable[Any]) -> list[Any]:
    if isinstance(keep, str):
        keep = [keep]
    names = {f.name for f in outputs}
    fields = []
    for name in keep:
        if name not in data.schema.names:
            raise TableError(f"no column {name!r} to keep (columns: {', '.join(data.schema.names)})")
        if name in names:
            raise TableError(f"cannot keep column {name!r}: an output column has that name")
        fields.append(data.schema.field(name))
    return fields


def output_schema(data: Any, keep: Sequence[str], outputs: Sequence[Any]) -> Any:
    return pa.schema([*kept_fields(data, keep, outputs), *outputs])


def output(data: Any, schema: Any, keep: Sequence[str], columns: dict[str, list[Any]]) -> Any:
    arrays = [utf8_column(data.column(name)) for name in ([keep] if isinstance(keep, str) else keep)]
    for f in schema:
        if f.name in columns:
            arrays.append(to_array(columns[f.name], f.type))
    if isinstance(data, pa.Table):
        return pa.Table.from_arrays(arrays, schema=schema)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def to_array(values: list[Any], type_: Any) -> Any:
    try:
        return pa.array(values, type=type_)
    except UnicodeEncodeError:  # a lone surrogate (from a \ud800 escape in JSON input)
        return pa.array(utf8_value(values), type=type_)


def utf8_value(value: Any) -> Any:
    """``value`` with every lone surrogate written as U+FFFD: Arrow strings are UTF-8."""
    if isinstance(value, str):
        return SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [utf8_value(v) for v in value]
    if isinstance(value, dict):
        return {k: utf8_value(v) for k, v in value.items()}
    return value


# -- batches bounded in bytes ----------------------------------------------------------------------


def row_bytes(batch: Any) -> list[int]:
    """Each row's size: the bytes of its strings and binaries, the width of its fixed-width
    cells, and an even share of each nested column's bytes."""
    import pyarrow.compute as pc

    n = batch.num_rows
    if n == 0:
        return []
    sizes = pa.array([0] * n, pa.int64())
    shared = 0
    for col in batch.columns:
        t = col.type
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
            sizes = pc.add(sizes, pc.fill_null(pc.binary_length(col), 0).cast(pa.int64()))
        elif _fixed(t):
            shared += max(1, t.bit_width // 8)
        else:
            shared += col.nbytes // n
    return [s + shared for s in sizes.to_pylist()]


def _fixed(t: Any) -> bool:
    try:
        return bool(t.bit_width)
    except ValueError:  # a type of no fixed width
        return False


def batch_slices(batch: Any, limit: int | None) -> Iterator[Any]:
    """``batch`` cut into consecutive slices of at most ``limit`` bytes (:func:`row_bytes`);
    a row larger than ``limit`` is a slice alone.  None: the batch whole."""
    if limit is None or batch.num_rows <= 1 or batch.nbytes <= limit:
        yield batch
        return
    start, size = 0, 0
    for i, row in enumerate(row_bytes(batch)):
        if i > start and size + row > limit:
            yield batch.slice(start, i - start)
            start, size = i, 0
        size += row
    yield batch.slice(start)
