"""Audit transcript stores for call markup leaked into assistant content.

Reads JSON Lines and JSON files of OpenAI-style messages (a message per record, a list
of messages, or an object with a ``messages`` list), or of records whose text sits in a
field named by the caller (a dotted path such as ``turn.streamingText``).  Every
assistant content is scanned with :func:`tooldialect.detect.scan`; nothing is
dispatched.  A record that cannot be read is counted and reported, never fatal.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .detect import scan
from .models import Policy

__all__ = ["AuditReport", "Leak", "RecordError", "audit_paths", "record_units", "scan_content", "store_files"]

_THREAD_KEYS = ("thread_id", "thread", "conversation_id", "session_id", "chat_id")
_SAMPLES = 20
#: The rows of each table of the text report (by family, tool, thread, file).
TOP = 20
_LINES = (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz", ".jsonl.zst", ".ndjson.zst")
_PARQUET = (".parquet", ".pq")
_SUFFIXES = (*_LINES, ".json", *_PARQUET)


def kind(path: Path) -> str:
    """How a store file is read: "lines" (JSON Lines, maybe compressed), "parquet", "json" or ""."""
    name = path.name.lower()
    if name.endswith(_LINES):
        return "lines"
    if name.endswith(_PARQUET):
        return "parquet"
    return "json" if name.endswith(".json") else ""


def open_lines(path: Path) -> tuple[io.BufferedReader, io.BufferedIOBase]:
    """(the raw file, its decompressed byte stream) of a JSON Lines file: plain, ``.gz``, ``.zst``."""
    raw = path.open("rb")
    name = path.name.lower()
    if name.endswith(".gz"):
        return raw, gzip.GzipFile(fileobj=raw)
    if name.endswith(".zst"):
        try:
            import zstandard
        except ImportError:
            raw.close()
            raise OSError(f"reading {path.name} needs zstandard (pip install 'tooldialect[table]')") from None
        return raw, io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw))
    return raw, raw


class RecordError(ValueError):
    """A record that cannot be read; the message is the whole reason (a reader's own words)."""


def _why(error: Exception) -> str:
    if isinstance(error, RecordError):
        return str(error)
    if isinstance(error, UnicodeDecodeError):
        return f"not UTF-8 ({error.reason})"
    return f"not JSON ({error})"


@dataclass
class Leak:
    """One assistant content that carried call markup."""

    file: str
    record: int  # line number (JSON Lines), item number (JSON) or row number (Parquet), from 1
    thread: str
    families: list[str]
    tools: list[str]
    offsets: list[tuple[int, int]]
    native_calls: int
    mixed: bool
    loops: int
    truncated: int
    id: str | None = None  # the record's --id-field value

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "record": self.record,
            "id": self.id,
            "thread": self.thread,
            "families": self.families,
            "tools": self.tools,
            "offsets": [list(o) for o in self.offsets],
            "native_calls": self.native_calls,
            "mixed": self.mixed,
            "repetition_loops": self.loops,
            "truncated": self.truncated,
        }


@dataclass
class AuditReport:
    """What an audit found.  Counts and tables cover every leak; ``leaks`` keeps the first
    ``keep`` of them (None: all), so a report of a large store can stay small."""

    files: int = 0
    unreadable_files: list[str] = field(default_factory=list)
    records: int = 0
    malformed_records: int = 0
    contents: int = 0  # assistant contents scanned
    leaks: list[Leak] = field(default_factory=list)
    malformed_samples: list[str] = field(default_factory=list)
    keep: int | None = None
    leaked_contents: int = 0
    mixed: int = 0
    intents: int = 0
    families: Counter[str] = field(default_factory=Counter)
    tools: Counter[str] = field(default_factory=Counter)
    threads: Counter[str] = field(default_factory=Counter)
    leak_files: Counter[str] = field(default_factory=Counter)

    def add(self, leak: Leak) -> None:
        """Count ``leak``, and keep it unless ``keep`` leaks are kept already."""
        self.leaked_contents += 1
        self.mixed += leak.mixed
        self.intents += len(leak.tools)
        self.families.update(leak.families)
        self.tools.update(leak.tools)
        self.threads[leak.thread] += 1
        self.leak_files[leak.file] += 1
        if self.keep is None or len(self.leaks) < self.keep:
            self.leaks.append(leak)

    def merge(self, part: AuditReport) -> None:
        """Add ``part``'s counts, tables and kept leaks (a later file's) to this report's."""
        self.unreadable_files += part.unreadable_files
        for name in ("records", "malformed_records", "contents", "leaked_contents", "mixed", "intents"):
            setattr(self, name, getattr(self, name) + getattr(part, name))
        for mine, theirs in (
            (self.families, part.families),
            (self.tools, part.tools),
            (self.threads, part.threads),
            (self.leak_files, part.leak_files),
        ):
            mine.update(theirs)
        room = len(part.leaks) if self.keep is None else max(0, self.keep - len(self.leaks))
        self.leaks += part.leaks[:room]
        self.malformed_samples += part.malformed_samples[: _SAMPLES - len(self.malformed_samples)]

    def by_family(self) -> dict[str, int]:
        return dict(self.families.most_common())

    def by_tool(self) -> dict[str, int]:
        return dict(self.tools.most_common())

    def by_thread(self) -> dict[str, int]:
        return dict(self.threads.most_common())

    def by_file(self) -> dict[str, int]:
        return dict(self.leak_files.most_common())

    def to_text(self) -> str:
        """The report as the `audit` command prints it (without --json): each table's first
        :data:`TOP` rows, and how many more there are."""
        out: list[str] = []
        w = out.append
        rows = [
            ("files", self.files),
            ("unreadable files", len(self.unreadable_files)),
            ("records scanned", self.records),
            ("malformed records", self.malformed_records),
            ("assistant contents", self.contents),
            ("contents with leaked calls", self.leaked_contents),
            ("  of which mixed with native calls", self.mixed),
        ]
        width = max(len(k) for k, _ in rows)
        for key, value in rows:
            w(f"{key:<{width}}  {value:>8}\n")
        for title, table in (
            ("by family", self.families),
            ("by tool", self.tools),
            ("by thread", self.threads),
            ("by file", self.leak_files),
        ):
            if not table:
                continue
            top = table.most_common(TOP)
            w(f"\n{title}" + (f" (the {TOP} most, of {len(table)})" if len(table) > TOP else "") + "\n")
            kw = max(len(k) for k, _ in top)
            for key, count in top:
                w(f"  {key:<{kw}}  {count:>6}\n")
            if len(table) > TOP:
                w(f"  ... and {len(table) - TOP} more (--json or --jsonl lists them all)\n")
        if self.leaks:
            ids = any(leak.id is not None for leak in self.leaks)
            w(f"\nsample leaks (file:record{'  id' if ids else ''}  thread  family  tool  offsets)\n")
            for leak in self.leaks[:10]:
                offsets = ", ".join(f"{a}-{b}" for a, b in leak.offsets) or "-"
                what = ", ".join(leak.tools) or ("repetition loop" if leak.loops else "cut-off markup")
                where = f"{leak.file}:{leak.record}" + (f"  {leak.id if leak.id is not None else '-'}" if ids else "")
                w(f"  {where}  {leak.thread}  {', '.join(leak.families)}  {what}  {offsets}\n")
        if self.malformed_samples:
            w("\nmalformed records\n")
            for line in self.malformed_samples[:10]:
                w(f"  {line}\n")
        return "".join(out)

    def summary_json(self) -> dict[str, Any]:
        """The report as JSON without its leaks: counts, tables, malformed samples."""
        return {
            "files": self.files,
            "unreadable_files": self.unreadable_files,
            "records": self.records,
            "malformed_records": self.malformed_records,
            "contents_scanned": self.contents,
            "contents_with_leaks": self.leaked_contents,
            "intents": self.intents,
            "mixed": self.mixed,
            "by_family": self.by_family(),
            "by_tool": self.by_tool(),
            "by_thread": self.by_thread(),
            "by_file": self.by_file(),
            "malformed_samples": self.malformed_samples,
        }

    def to_json(self) -> dict[str, Any]:
        """The report as one JSON object (``--json``): the summary and every leak kept."""
        out = self.summary_json()
        out["leaks"] = [leak.to_json() for leak in self.leaks]
        return out


def store_files(paths: Iterable[str]) -> tuple[list[Path], list[str]]:
    """The files to read (directories are walked for JSON and JSON Lines files, in name
    order) and the paths that do not exist."""
    found: list[Path] = []
    missing: list[str] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found.extend(sorted(q for q in p.rglob("*") if q.is_file() and kind(q)))
        elif p.exists():
            found.append(p)
        else:
            missing.append(raw)
    return found, missing


def _lookup(obj: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(obj, dict) and part in obj:
            obj = obj[part]
        elif isinstance(obj, list) and part.isdigit() and int(part) < len(obj):
            obj = obj[int(part)]
        else:
            return None
    return obj


def _content_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": …}, …]
        parts: list[str] = [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "".join(parts) if parts else ""
    if content is None:
        return ""
    return None


def _thread(obj: Any, default: str) -> str:
    if isinstance(obj, dict):
        for key in _THREAD_KEYS:
            value = obj.get(key)
            if isinstance(value, (str, int)) and str(value):
                return str(value)
    return default


def _units(obj: Any, text_field: str | None, thread: str) -> Iterator[tuple[str, str, int]] | None:
    """(thread, content, native call count) for each assistant content in one record, or
    None when the record has no shape this reader knows."""
    if text_field is not None:
        value = _lookup(obj, text_field)
        if not isinstance(value, str):
            return None
        calls = obj.get("tool_calls") if isinstance(obj, dict) else None
        return iter([(_thread(obj, thread), value, len(calls) if isinstance(calls, list) else 0)])
    if isinstance(obj, dict) and isinstance(obj.get("messages"), list):
        return _message_units(obj["messages"], _thread(obj, thread))
    if isinstance(obj, list):
        return _message_units(obj, thread)
    if isinstance(obj, dict) and "role" in obj:
        return _message_units([obj], _thread(obj, thread))
    return None


def _message_units(messages: list[Any], thread: str) -> Iterator[tuple[str, str, int]]:
    for msg in messages:
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        text = _content_text(msg.get("content"))
        if text is None:
            continue
        calls = msg.get("tool_calls")
        yield thread, text, len(calls) if isinstance(calls, list) else 0


def _records(
    path: Path, parquet: Callable[[Path], Iterator[tuple[int, Any, int]]] | None = None
) -> Iterator[tuple[int, Any, int]]:
    """(record number, parsed object or an Exception, bytes consumed) for one file."""
    how = kind(path)
    if how == "parquet":
        if parquet is None:
            raise OSError("reading Parquet needs pyarrow (pip install 'tooldialect[table]')")
        yield from parquet(path)
        return
    if how == "lines":
        raw, stream = open_lines(path)
        with raw, stream:
            at = 0
            try:
                for n, line in enumerate(stream, 1):
                    size, at = raw.tell() - at, raw.tell()
                    if not line.strip():
                        yield n, None, size
                        continue
                    try:
                        yield n, json.loads(line.decode("utf-8")), size
                    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                        yield n, exc, size
            except EOFError as exc:  # a cut-off .gz stream
                raise OSError(str(exc) or "compressed data cut off") from None
            except Exception as exc:
                if type(exc).__module__.startswith("zstandard"):
                    raise OSError(str(exc)) from None
                raise
        return
    data = path.read_bytes()
    try:
        obj = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        yield 1, exc, len(data)
        return
    # a JSON file of records (a list of conversations or of record objects), or one record
    if isinstance(obj, list) and obj and all(isinstance(x, (dict, list)) for x in obj) and not _is_messages(obj):
        for n, item in enumerate(obj, 1):
            yield n, item, len(data) if n == len(obj) else 0
    else:
        yield 1, obj, len(data)


def _is_messages(items: list[Any]) -> bool:
    return all(isinstance(x, dict) and "role" in x for x in items)


@dataclass(frozen=True)
class _Reading:
    """How each record is read: its text field, the families and policy, the Parquet reader,
    the field that names it."""

    text_field: str | None = None
    families: list[str] | None = None
    policy: Policy | None = None
    parquet: Callable[[Path], Iterator[tuple[int, Any, int]]] | None = None
    id_field: str | None = None


def audit_paths(
    paths: Iterable[str],
    *,
    text_field: str | None = None,
    families: Iterable[str] | None = None,
    policy: Policy | None = None,
    progress: Callable[[int], None] | None = None,
    parquet: Callable[[Path], Iterator[tuple[int, Any, int]]] | None = None,
    id_field: str | None = None,
    keep: int | None = None,
    on_leak: Callable[[Leak], None] | None = None,
    limit: int | None = None,
) -> AuditReport:
    """Scan every assistant content of the stores at ``paths``.  ``progress`` is called
    with the number of bytes read since its last call.  ``parquet`` reads a Parquet file's
    rows as records (the CLI passes ``tooldialect.tableio.parquet_records``).  ``id_field``:
    a dotted path in each record whose value names it in its leaks (``Leak.id``).  ``keep``:
    how many leaks the report keeps (None: all; its counts and tables cover every leak);
    ``on_leak`` is called with each leak as it is found.  ``limit``: the first records only."""
    files, missing = store_files(paths)
    report = AuditReport(files=len(files), unreadable_files=list(missing), keep=keep)
    reading = _Reading(text_field, list(families) if families else None, policy, parquet, id_field)
    for path in files:
        if limit is not None and report.records >= limit:
            break
        _audit_into(report, path, reading, progress, on_leak, limit)
    return report


def audit_file(
    path: str,
    *,
    text_field: str | None = None,
    families: Iterable[str] | None = None,
    policy: Policy | None = None,
    parquet: Callable[[Path], Iterator[tuple[int, Any, int]]] | None = None,
    id_field: str | None = None,
) -> AuditReport:
    """What :func:`audit_paths` reports of one store file: the unit an engine audits on a
    worker (``tooldialect.spark.audit_files``, ``tooldialect.ray.audit_files``), the
    parts :func:`merge_reports` puts back together."""
    report = AuditReport(files=1)
    reading = _Reading(text_field, list(families) if families else None, policy, parquet, id_field)
    _audit_into(report, Path(path), reading, None, None, None)
    return report


def merge_reports(
    parts: Iterable[AuditReport], *, files: int, missing: Iterable[str] = (), keep: int | None = None
) -> AuditReport:
    """One report of the files' reports, in file order: the report :func:`audit_paths`
    makes of the same files (``missing``: the paths that did not exist, listed first)."""
    out = AuditReport(files=files, unreadable_files=list(missing), keep=keep)
    for part in parts:
        out.merge(part)
    return out


def audit_across(paths: Iterable[str], run: Callable[[list[str]], list[AuditReport]]) -> AuditReport:
    """``audit_paths`` with the files' audits handed to ``run`` (an engine that runs
    :func:`audit_task` once per file, anywhere, and returns the reports in the files'
    order): the report is the one this process would make."""
    files, missing = store_files(paths)
    names = [str(p) for p in files]
    return merge_reports(run(names) if names else [], files=len(files), missing=missing)


def audit_task(path: str, options: dict[str, Any]) -> AuditReport:
    """:func:`audit_file` with its options in one argument (what an engine's task calls)."""
    return audit_file(path, **options)


def _audit_into(
    report: AuditReport,
    path: Path,
    reading: _Reading,
    progress: Callable[[int], None] | None,
    on_leak: Callable[[Leak], None] | None,
    limit: int | None,
) -> None:
    name = str(path)
    default_thread = path.stem
    try:
        for n, obj, size in _records(path, reading.parquet):
            if progress is not None and size:
                progress(size)
            if obj is None:
                continue
            if limit is not None and report.records >= limit:
                return
            report.records += 1
            units = None if isinstance(obj, Exception) else _units(obj, reading.text_field, default_thread)
            if units is None:
                report.malformed_records += 1
                if len(report.malformed_samples) < _SAMPLES:
                    why = _why(obj) if isinstance(obj, Exception) else "no assistant content found"
                    report.malformed_samples.append(f"{name}:{n}: {why}")
                continue
            record_id = _record_id(obj, reading.id_field)
            for thread, text, native in units:
                report.contents += 1
                found = scan_content(text, native, families=reading.families, policy=reading.policy)
                if found is not None:
                    leak = Leak(file=name, record=n, thread=thread, id=record_id, **found)
                    report.add(leak)
                    if on_leak is not None:
                        on_leak(leak)
    except OSError as exc:
        report.unreadable_files.append(f"{name}: {exc.strerror or exc}")


def _record_id(obj: Any, id_field: str | None) -> str | None:
    """The value at ``id_field`` in the record, as text (JSON text unless a string)."""
    if id_field is None:
        return None
    value = _lookup(obj, id_field)
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def scan_content(
    text: str, native: int, *, families: list[str] | None = None, policy: Policy | None = None
) -> dict[str, Any] | None:
    """What one assistant content leaked, as the fields of a :class:`Leak` after file,
    record and thread; None when it leaked nothing.  ``native``: its native call count."""
    result = scan(text, native_calls=range(native), families=families, policy=policy)
    audit = result.audit
    if not audit.leaked:
        return None
    cut = {d.family for d in result.diagnostics if d.family and d.kind in ("truncated", "repetition_loop")}
    return {
        "families": sorted(set(audit.families) | cut),
        "tools": [i.name for i in result.intents],
        "offsets": [i.span for i in result.intents],
        "native_calls": native,
        "mixed": result.mixed,
        "loops": audit.repetition_loops,
        "truncated": audit.truncated,
    }


def record_units(obj: Any, text_field: str | None, thread: str) -> Iterator[tuple[str, str, int]] | None:
    """(thread, content, native call count) for each assistant content of one record (a
    message, a message list, an object with ``messages``, or a record holding ``text_field``),
    or None when the record has no shape this reader knows."""
    return _units(obj, text_field, thread)


def total_bytes(paths: Iterable[str]) -> int:
    files, _ = store_files(paths)
    total = 0
    for p in files:
        with contextlib.suppress(OSError):  # gone since it was listed: it adds nothing
            total += os.path.getsize(p)
    return total
