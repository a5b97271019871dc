"""Arrow tables in, Arrow tables out: the library's columnar face, for pipelines.

    import tooldialect.table as tt
    out = tt.parse_batch(batch, text_column="completion", model_column="model", tools_column="tools")
    out = tt.audit_batch(batch, column="messages")
    out = tt.render_batch(batch, column="messages", tools_column="tools", dialect="python")

Each function takes a ``pyarrow.RecordBatch`` or ``pyarrow.Table`` and returns the same
kind, one output row per input row, in order.  They do no I/O, start no thread and keep
no state but the worker-side caches below, so an engine (``tooldialect.spark``,
``tooldialect.ray``, the ``tooldialect parse-table`` command) can run them anywhere.

A row that cannot be read is a row with a diagnostic of one of :data:`ROW_KINDS`, never an
exception: an exception here is a caller mistake about the whole batch (a missing column,
a column of the wrong type, an unknown family), raised as :class:`TableError` before any
row is read.  Per process, grammars compile once (the registry's own cache) and each
distinct tools cell or model id is built once (:func:`clear_caches` forgets them).
The schemas are in docs/scale.md.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar

from . import dialects
from . import families as registry
from .audit import record_units, scan_content
from .errors import MissingDependencyError, PolicyError, ToolDialectError, ToolsetError
from .models import Policy
from .stream import parse
from .toolset import Toolset
from .transcript import AssistantToolCalls, Chat, compact_json, from_openai, pair_tool_cycles

try:
    import pyarrow as pa
except ImportError:  # pragma: no cover - depends on the install
    raise MissingDependencyError("tooldialect.table needs pyarrow: pip install 'tooldialect[table]'") from None

from .tablecells import TableError, as_table, cells, output, output_schema, read_column, row_errors

__all__ = [
    "AUDIT_COLUMNS",
    "CALL",
    "DIAGNOSTIC",
    "LEAK",
    "PARSE_COLUMNS",
    "RENDER_COLUMNS",
    "ROW_KINDS",
    "TableError",
    "audit_batch",
    "audit_schema",
    "clear_caches",
    "parse_batch",
    "parse_schema",
    "render_batch",
    "render_schema",
]


#: The diagnostics a row gets when it is not read (the parse diagnostics are td.DIAGNOSTIC_KINDS).
ROW_KINDS: dict[str, str] = {
    "record_invalid": "The record could not be read (a JSON Lines line that is not a JSON object or not UTF-8, a "
    "cell of the wrong type, a string cell that is not UTF-8): detail.error says why; the row's outputs are null.",
    "text_missing": "The text cell is null: nothing to read; the row's outputs are null.",
    "tools_invalid": "The tools cell is not a tool list tooldialect accepts (detail.error says why): the text is "
    "not read, and is returned as it is, with no calls.",
    "render_failed": "The conversation cannot be written in the chosen dialect or family (detail.error says "
    "why): the row's outputs are null.",
    "cycles_dropped": "Tool calls with no results, or results with no calls, left out of the rendered "
    "conversation (a provider refuses them): detail.entries counts the entries dropped.",
    "row_failed": "Reading the row raised an unexpected error (detail.error): a defect to report; the "
    "row's outputs are null and the rest of the batch is read.",
}

_S = pa.string()


def _list(item: Any) -> Any:
    """A list type whose item field is named ``element``, as Parquet and Spark name it, so
    a table reads back with the same schema from every engine."""
    return pa.list_(pa.field("element", item))


CALL = pa.struct([("name", _S), ("arguments_json", _S), ("id", _S), ("family", _S)])
DIAGNOSTIC = pa.struct([("kind", _S), ("family", _S), ("detail_json", _S)])
LEAK = pa.struct(
    [
        ("content", pa.int32()),
        ("families", _list(_S)),
        ("tools", _list(_S)),
        ("offsets", _list(_list(pa.int64()))),
        ("native_calls", pa.int32()),
        ("mixed", pa.bool_()),
        ("repetition_loops", pa.int32()),
        ("truncated", pa.int32()),
    ]
)
PARSE_COLUMNS = (
    pa.field("text", _S),
    pa.field("reasoning", _S),
    pa.field("calls", _list(CALL)),
    pa.field("diagnostics", _list(DIAGNOSTIC)),
    pa.field("family", _S),
)
AUDIT_COLUMNS = (
    pa.field("thread", _S),
    pa.field("contents", pa.int32()),
    pa.field("leaks", _list(LEAK)),
    pa.field("malformed", _S),
)
RENDER_COLUMNS = (
    pa.field("instructions", _S),
    pa.field("messages_json", _S),
    pa.field("diagnostics", _list(DIAGNOSTIC)),
)

_CACHE_SIZE = 256


# -- worker-side state: built once per process, per distinct value --------------------------


_K = TypeVar("_K")
_V = TypeVar("_V")


class _Lru(Generic[_K, _V]):
    """A small least-recently-used map; ``builds`` counts the misses (what was built)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.items: OrderedDict[_K, _V] = OrderedDict()
        self.builds = 0

    def get(self, key: _K, build: Callable[[_K], _V]) -> _V:
        try:
            self.items.move_to_end(key)
            return self.items[key]
        except KeyError:
            pass
        self.builds += 1
        value = self.items[key] = build(key)
        if len(self.items) > self.size:
            self.items.popitem(last=False)
        return value


_TOOLSETS: _Lru[str, Toolset | str] = _Lru(_CACHE_SIZE)  # tools JSON text -> Toolset, or the error text
# (model id, families, policy JSON) -> (families, policy)
_PROFILES: _Lru[tuple[str, tuple[str, ...] | None, str | None], tuple[Any, Policy | None]] = _Lru(_CACHE_SIZE)


def clear_caches() -> None:
    """Forget the toolsets and model profiles built so far in this process."""
    for cache in (_TOOLSETS, _PROFILES):
        cache.items.clear()
        cache.builds = 0


def _build_toolset(text: str) -> Toolset | str:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return f"not JSON: {exc}"
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        data = data["tools"]
    try:
        return Toolset.coerce(data)
    except (ToolsetError, PolicyError) as exc:
        return str(exc)


def _toolset(text: str) -> Toolset | str:
    """The toolset a tools cell holds (JSON text), or why it holds none."""
    return _TOOLSETS.get(text, _build_toolset)


def _profile(model: str | None, families: tuple[str, ...] | None, policy: Policy | None) -> tuple[Any, Policy | None]:
    """The families and policy for a row of ``model`` (None: the caller's alone)."""
    if model is None:
        return families, policy
    key = (model, families, None if policy is None else policy.model_dump_json())

    def build(_key: Any) -> tuple[Any, Policy | None]:
        got = registry.for_model(model)
        fams = tuple(got.families) if families is None else tuple(f for f in families if f in got.families) or families
        return fams, policy if policy is not None else got.policy

    return _PROFILES.get(key, build)


# -- arguments --------------------------------------------------------------------------------


def _families(families: Iterable[str] | None) -> tuple[str, ...] | None:
    if families is None:
        return None
    if isinstance(families, str):
        families = [families]
    out = tuple(families)
    for name in out:
        registry.get(name)  # an unknown family is the caller's mistake, raised before any row
    return out


def _tools_arg(tools: Any) -> Toolset | None:
    if tools is None or isinstance(tools, Toolset):
        return tools
    if isinstance(tools, str):
        got = _toolset(tools)
        if isinstance(got, str):
            raise ToolsetError(f"invalid tools: {got}")
        return got
    return Toolset.cached(tools)


def parse_schema(input_schema: Any, keep: Sequence[str] = ()) -> Any:
    """The schema :func:`parse_batch` returns for an input of ``input_schema``."""
    return output_schema(pa.schema(input_schema).empty_table(), keep, PARSE_COLUMNS)


def audit_schema(input_schema: Any, keep: Sequence[str] = ()) -> Any:
    """The schema :func:`audit_batch` returns for an input of ``input_schema``."""
    return output_schema(pa.schema(input_schema).empty_table(), keep, AUDIT_COLUMNS)


def render_schema(input_schema: Any, keep: Sequence[str] = ()) -> Any:
    """The schema :func:`render_batch` returns for an input of ``input_schema``."""
    return output_schema(pa.schema(input_schema).empty_table(), keep, RENDER_COLUMNS)


_json = compact_json


def _row_diag(kind: str, **detail: Any) -> dict[str, Any]:
    return {"kind": kind, "family": None, "detail_json": _json(detail)}


# -- parse --------------------------------------------------------------------------------------


def parse_batch(
    data: Any,
    *,
    text_column: str = "text",
    model_column: str | None = None,
    tools_column: str | None = None,
    tools: Any = None,
    families: Iterable[str] | None = None,
    policy: Policy | None = None,
    error_column: str | None = None,
    keep: Sequence[str] = (),
) -> Any:
    """Each row's text read as ``td.parse`` reads it: ``text``, ``reasoning``, ``calls``,
    ``diagnostics`` and ``family`` (the family of the first call, else of the first
    diagnostic that names one), after the ``keep`` columns as they are.

    ``tools_column`` holds each row's tool list as JSON text (one toolset built per distinct
    cell); ``tools`` is one toolset for every row (a Toolset, a tool list or its JSON text).
    ``model_column``: each row's model id, whose families and policy ``td.families.for_model``
    suggests (``families`` and ``policy``, when given, narrow and replace them).
    ``error_column``: a reader's note that a row could not be read (null when it could)."""
    data = as_table(data)
    if tools is not None and tools_column is not None:
        raise TableError("give tools= (one toolset for every row) or tools_column=, not both")
    if policy is not None and not isinstance(policy, Policy):
        raise PolicyError(f"policy must be a td.Policy, got {type(policy).__name__}")
    fams = _families(families)
    fixed = _tools_arg(tools)
    schema = output_schema(data, keep, PARSE_COLUMNS)
    bad = row_errors(data, error_column)
    texts = read_column(data, text_column, "text", bad=bad)
    assert texts is not None
    models = read_column(data, model_column, "model", bad=bad)
    tool_cells = read_column(data, tools_column, "tools", bad=bad)
    out: dict[str, list[Any]] = {"text": [], "reasoning": [], "calls": [], "diagnostics": [], "family": []}
    for i, text in enumerate(texts):
        error = bad[i]
        if error is not None:
            _parse_row(out, None, None, [_row_diag("record_invalid", error=error)])
        elif text is None:
            _parse_row(out, None, None, [_row_diag("text_missing")])
        else:
            toolset: Toolset | str | None = fixed
            if tool_cells is not None and tool_cells[i] is not None:
                toolset = _toolset(tool_cells[i])
            if isinstance(toolset, str):
                _parse_row(out, text, "", [_row_diag("tools_invalid", error=toolset)])
                continue
            row_fams, row_policy = _profile(models[i] if models is not None else None, fams, policy)
            try:
                result = parse(text, toolset, families=row_fams, policy=row_policy)
            except Exception as exc:  # noqa: BLE001 - a row never loses the batch
                _parse_row(out, None, None, [_row_diag("row_failed", error=f"{type(exc).__name__}: {exc}")])
                continue
            _parse_result(out, result)
    return output(data, schema, keep, out)


def _parse_row(out: dict[str, list[Any]], text: str | None, reasoning: str | None, diags: list[Any]) -> None:
    out["text"].append(text)
    out["reasoning"].append(reasoning)
    out["calls"].append([])
    out["diagnostics"].append(diags)
    out["family"].append(None)


def _parse_result(out: dict[str, list[Any]], result: Any) -> None:
    calls = [{"name": c.name, "arguments_json": c.arguments_json, "id": c.id, "family": c.family} for c in result.calls]
    diags = [{"kind": d.kind, "family": d.family, "detail_json": _json(d.detail)} for d in result.diagnostics]
    family = result.calls[0].family if result.calls else next((d.family for d in result.diagnostics if d.family), None)
    out["text"].append(result.text)
    out["reasoning"].append(result.reasoning)
    out["calls"].append(calls)
    out["diagnostics"].append(diags)
    out["family"].append(family)


# -- audit --------------------------------------------------------------------------------------


def audit_batch(
    data: Any,
    *,
    column: str = "messages",
    text_field: str | None = None,
    families: Iterable[str] | None = None,
    policy: Policy | None = None,
    error_column: str | None = None,
    keep: Sequence[str] = (),
) -> Any:
    """Each row's assistant contents scanned for leaked call markup, as ``tooldialect audit``
    scans a record: ``thread``, ``contents`` (assistant contents scanned), ``leaks`` (one per
    content that leaked: its index among the row's contents, families, tools, offsets …) and
    ``malformed`` (why the record could not be read; null when it could).

    ``column`` holds a record: a message list (nested, or JSON text), an object with
    ``messages``, or one message.  ``text_field`` instead names a dotted path in the row
    (its first part a column), whose string is one assistant content."""
    data = as_table(data)
    if policy is not None and not isinstance(policy, Policy):
        raise PolicyError(f"policy must be a td.Policy, got {type(policy).__name__}")
    fams = list(_families(families) or ()) or None
    schema = output_schema(data, keep, AUDIT_COLUMNS)
    bad = row_errors(data, error_column)
    if text_field is not None:
        head = text_field.split(".")[0]
        read_column(data, head, "text field", text=False)
        names = data.schema.names
        columns = [read_column(data, n, "record", text=False, bad=bad) for n in names]
        rows: list[Any] = [dict(zip(names, values)) for values in zip(*columns)]
    else:
        rows = read_column(data, column, "record", text=False, bad=bad) or []
    threads = _thread_cells(data)
    out: dict[str, list[Any]] = {"thread": [], "contents": [], "leaks": [], "malformed": []}
    for i, cell in enumerate(rows):
        error = bad[i]
        record, why = (None, error) if error is not None else _record(cell, threads[i] if threads else {})
        units = record_units(record, text_field, "") if why is None else None
        if units is None:
            out["thread"].append(None)
            out["contents"].append(0)
            out["leaks"].append([])
            out["malformed"].append(why or "no assistant content found")
            continue
        leaks, count, thread = [], 0, None
        try:
            for thread, text, native in units:  # noqa: B007 - the thread of the last unit read is reported
                leak = scan_content(text, native, families=fams, policy=policy)
                if leak is not None:
                    leak["offsets"] = [list(o) for o in leak["offsets"]]
                    leak["repetition_loops"] = leak.pop("loops")
                    leaks.append({"content": count, **leak})
                count += 1
        except Exception as exc:  # noqa: BLE001 - a row never loses the batch
            why = f"row_failed: {type(exc).__name__}: {exc}"
        out["thread"].append(thread or None)
        out["contents"].append(count)
        out["leaks"].append(leaks)
        out["malformed"].append(why)
    return output(data, schema, keep, out)


_THREAD_KEYS = ("thread_id", "thread", "conversation_id", "session_id", "chat_id")


def _thread_cells(data: Any) -> list[dict[str, Any]] | None:
    """The row's thread-naming columns, which a message list in a column lacks."""
    names = [n for n in _THREAD_KEYS if n in data.schema.names]
    if not names:
        return None
    cols = [cells(data.column(n))[0] for n in names]  # a thread name that is not UTF-8 names no thread
    return [dict(zip(names, values)) for values in zip(*cols)]


def _record(cell: Any, threads: dict[str, Any]) -> tuple[Any, str | None]:
    """A record cell as the object the audit reader takes, or why it is none."""
    if isinstance(cell, str):
        try:
            cell = json.loads(cell)
        except (ValueError, RecursionError) as exc:
            return None, f"not JSON ({exc})"
    if isinstance(cell, list) and threads:
        return {"messages": cell, **threads}, None
    if isinstance(cell, dict) and threads and "role" not in cell:
        return {**threads, **cell}, None
    return cell, None


# -- render -------------------------------------------------------------------------------------


def render_batch(
    data: Any,
    *,
    column: str = "messages",
    tools_column: str | None = None,
    tools: Any = None,
    dialect: str | None = None,
    family: str | None = None,
    variant: str | None = None,
    tool_choice: Any = "auto",
    error_column: str | None = None,
    keep: Sequence[str] = (),
) -> Any:
    """Each row's OpenAI-format conversation written as a text dialect or a model family
    writes it, for fine-tuning data: ``instructions`` (the dialect's tool section of the
    system prompt; null for a family, whose chat template renders its tools) and
    ``messages_json`` (the conversation, assistant calls written as text), ``diagnostics``.

    Exactly one of ``dialect`` (``td.dialects.names()``) and ``family`` (a registry name;
    ``variant`` one of its spellings) is given.  ``error_column`` as for :func:`parse_batch`."""
    data = as_table(data)
    if (dialect is None) == (family is None):
        raise TableError("give one of dialect= (a td.dialects name) or family= (a family name)")
    if tools is not None and tools_column is not None:
        raise TableError("give tools= (one toolset for every row) or tools_column=, not both")
    speaker: dialects.TextDialect | dialects.Native | registry.Family
    if dialect is not None:
        speaker = dialects.get(dialect)
    else:
        speaker = registry.get(family or "")
        speaker.writer(variant)  # an unknown variant is the caller's mistake, raised before any row
    fixed = _tools_arg(tools)
    schema = output_schema(data, keep, RENDER_COLUMNS)
    bad = row_errors(data, error_column)
    conversations = read_column(data, column, "messages", text=False, bad=bad)
    assert conversations is not None
    tool_cells = read_column(data, tools_column, "tools", bad=bad)
    out: dict[str, list[Any]] = {"instructions": [], "messages_json": [], "diagnostics": []}
    for i, cell in enumerate(conversations):
        if bad[i] is not None:
            out["instructions"].append(None)
            out["messages_json"].append(None)
            out["diagnostics"].append([_row_diag("record_invalid", error=bad[i])])
            continue
        toolset: Toolset | str | None = fixed
        if tool_cells is not None and tool_cells[i] is not None:
            toolset = _toolset(tool_cells[i])
        try:
            if isinstance(toolset, str):
                raise _RowError("tools_invalid", toolset)
            instructions, messages, diags = _render_row(cell, toolset, speaker, variant, tool_choice)
        except _RowError as exc:
            instructions, messages, diags = None, None, [_row_diag(exc.kind, error=exc.error)]
        except ToolDialectError as exc:
            instructions, messages, diags = None, None, [_row_diag("render_failed", error=str(exc))]
        except Exception as exc:  # noqa: BLE001 - a row never loses the batch
            instructions, messages, diags = None, None, [_row_diag("row_failed", error=f"{type(exc).__name__}: {exc}")]
        out["instructions"].append(instructions)
        out["messages_json"].append(messages)
        out["diagnostics"].append(diags)
    return output(data, schema, keep, out)


class _RowError(Exception):
    def __init__(self, kind: str, error: str) -> None:
        super().__init__(error)
        self.kind, self.error = kind, error


def _render_row(
    cell: Any,
    tools: Toolset | None,
    speaker: dialects.TextDialect | dialects.Native | registry.Family,
    variant: str | None,
    choice: Any,
) -> tuple[Any, ...]:
    if isinstance(cell, str):
        try:
            cell = json.loads(cell)
        except (ValueError, RecursionError) as exc:
            raise _RowError("record_invalid", f"not JSON ({exc})") from None
    if isinstance(cell, dict) and isinstance(cell.get("messages"), list):
        cell = cell["messages"]
    if not isinstance(cell, list):
        raise _RowError("record_invalid", "not a message list")
    entries = from_openai(cell)
    kept = pair_tool_cycles(entries)
    diags = [_row_diag("cycles_dropped", entries=len(entries) - len(kept))] if len(kept) != len(entries) else []
    if isinstance(speaker, dialects.Dialect):
        instructions = speaker.instructions(tools if tools is not None else Toolset(), tool_choice=choice)
        return instructions, _json(speaker.replay(kept, tools=tools)), diags
    return None, _json(_family_messages(kept, speaker, tools, variant)), diags


def _family_messages(entries: list[Any], fam: Any, tools: Toolset | None, variant: str | None) -> list[Any]:
    out: list[dict[str, Any]] = []
    for entry in entries:
        if isinstance(entry, Chat):
            out.append({"role": entry.role, "content": entry.content})
        elif isinstance(entry, AssistantToolCalls):
            text = entry.content or ""
            if text and not text.endswith("\n"):
                text += "\n"
            msg: dict[str, Any] = {
                "role": "assistant",
                "content": text + fam.render_calls(entry.tool_calls, tools, variant=variant),
            }
            if entry.reasoning_content is not None:
                msg["reasoning_content"] = entry.reasoning_content
            out.append(msg)
        else:
            out.extend(
                {"role": "tool", "tool_call_id": r.tool_call_id, "name": r.name, "content": r.output}
                for r in entry.results
            )
    return out
