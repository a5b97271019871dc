"""The table commands in this process: parse-table and render-table over Parquet and JSON
Lines, audit over Parquet and compressed JSON Lines; bad input is one line or a row."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow", reason="the table commands need pyarrow (the table extra)")
pq = pytest.importorskip("pyarrow.parquet")

from support import ROOT

from tooldialect import cli

WEATHER = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]
CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'


def run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def rows(path: Path) -> list[dict]:
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pylist()
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def jsonl(records: list) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


RECORDS = [
    {"id": 1, "completion": CALL, "tools": WEATHER, "model": "Qwen/Qwen3-8B"},
    {"id": 2, "completion": "just prose"},
    {"id": 3, "completion": 5},  # a cell that is not a string
    "{not json",
    {"id": 5, "completion": CALL, "tools": "[broken"},  # an invalid tools cell
]


def test_parse_table_reads_jsonl_gzip_zstd_and_parquet_alike(tmp_path: Path, capsys):
    zstandard = pytest.importorskip("zstandard")
    text = jsonl(RECORDS)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text(text, encoding="utf-8")
    (tmp_path / "in" / "b.jsonl.gz").write_bytes(gzip.compress(text.encode()))
    (tmp_path / "in" / "c.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(text.encode()))
    args = ["--text-column", "completion", "--tools-column", "tools", "--model-column", "model", "--keep", "id"]
    rc, _, err = run(
        capsys, "parse-table", str(tmp_path / "in"), "-o", str(tmp_path / "out.parquet"), *args, "--batch-rows", "2"
    )
    assert rc == 0, err
    assert "15 rows from 3 file(s)" in err
    got = rows(tmp_path / "out.parquet")
    assert got[:5] == got[5:10] == got[10:]
    first = got[:5]
    assert [r["id"] for r in first] == ["1", "2", "3", None, "5"]  # JSON Lines values kept as text
    assert first[0]["calls"][0]["name"] == "get_weather" and first[1]["text"] == "just prose"
    kinds = [[d["kind"] for d in r["diagnostics"]] for r in first]
    assert kinds == [[], [], ["record_invalid"], ["record_invalid"], ["tools_invalid"]]
    assert "line 3: 'completion' holds a number" in first[2]["diagnostics"][0]["detail_json"]
    assert "line 4: not JSON" in first[3]["diagnostics"][0]["detail_json"]
    assert first[4]["text"] == CALL


def test_parse_table_parquet_in_jsonl_out(tmp_path: Path, capsys):
    table = pa.table({"id": [1, 2], "completion": [CALL, "x"]})
    pq.write_table(table, tmp_path / "in.parquet")
    rc, _, err = run(
        capsys,
        "parse-table",
        str(tmp_path / "in.parquet"),
        "-o",
        str(tmp_path / "out.jsonl"),
        "--text-column",
        "completion",
        "--tools",
        _tools_file(tmp_path),
        "--keep",
        "id",
    )
    assert rc == 0, err
    got = rows(tmp_path / "out.jsonl")
    assert [r["id"] for r in got] == [1, 2] and got[0]["family"] == "hermes" and got[1]["calls"] == []


def _tools_file(tmp_path: Path) -> str:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(WEATHER), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: pq.write_table(pa.table({"body": ["x"]}), p / "in.parquet"), "has no column 'completion'"),
        (lambda p: pq.write_table(pa.table({"completion": [1]}), p / "in.parquet"), "holds int64, not strings"),
        (lambda p: (p / "in.parquet").write_bytes(b"PAR1 not really parquet"), "cannot read"),
    ],
)
def test_a_file_that_cannot_be_read_is_one_line(tmp_path: Path, capsys, make, message):
    make(tmp_path)
    rc, out, err = run(
        capsys,
        "parse-table",
        str(tmp_path / "in.parquet"),
        "-o",
        str(tmp_path / "o.parquet"),
        "--text-column",
        "completion",
    )
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("tooldialect: error: ") and message in err


def test_a_corrupt_parquet_file_is_one_line_from_a_fresh_process(tmp_path: Path):
    (tmp_path / "in.parquet").write_bytes(b"PAR1" + b"\0" * 64)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tooldialect",
            "parse-table",
            str(tmp_path / "in.parquet"),
            "-o",
            str(tmp_path / "o.parquet"),
        ],
        check=False,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "cannot read" in done.stderr


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--tools", "T", "--tools-column", "tools"], "not both"),
        (["--batch-rows", "0"], "--batch-rows must be at least 1"),
        (["--family", "nope"], "unknown family 'nope'"),
    ],
)
def test_usage_mistakes_are_one_line(tmp_path: Path, capsys, argv, message):
    (tmp_path / "in.jsonl").write_text(jsonl(RECORDS), encoding="utf-8")
    argv = [_tools_file(tmp_path) if a == "T" else a for a in argv]
    rc, _, err = run(capsys, "parse-table", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "o.parquet"), *argv)
    assert rc == 2 and err.count("\n") == 1 and message in err


def test_render_table_writes_each_conversation(tmp_path: Path, capsys):
    conversation = [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "18C"},
    ]
    (tmp_path / "in.jsonl").write_text(jsonl([{"messages": conversation}, "nope"]), encoding="utf-8")
    rc, _, err = run(
        capsys,
        "render-table",
        str(tmp_path / "in.jsonl"),
        "-o",
        str(tmp_path / "o.jsonl"),
        "--family",
        "hermes",
        "--tools",
        _tools_file(tmp_path),
    )
    assert rc == 0, err
    first, second = rows(tmp_path / "o.jsonl")
    assert "<tool_call>" in json.loads(first["messages_json"])[1]["content"]
    assert second["messages_json"] is None and second["diagnostics"][0]["kind"] == "record_invalid"


def test_audit_reads_parquet_and_compressed_json_lines(tmp_path: Path, capsys):
    leaked = [{"role": "assistant", "content": "Sure. " + CALL}]
    pq.write_table(
        pa.table({"thread_id": ["t1", "t2"], "messages": [json.dumps(leaked), "{bad"]}), tmp_path / "a.parquet"
    )
    (tmp_path / "b.jsonl.gz").write_bytes(gzip.compress(jsonl([{"messages": leaked}]).encode()))
    (tmp_path / "c.parquet").write_bytes(b"PAR1 broken")
    rc, out, err = run(capsys, "audit", str(tmp_path), "--json", "--no-progress")
    assert rc == 0
    report = json.loads(out)
    assert report["files"] == 3 and report["records"] == 3 and report["contents_with_leaks"] == 2
    assert report["by_thread"] == {"t1": 1, "b.jsonl": 1}
    assert report["malformed_records"] == 1 and "a.parquet:2: not JSON" in report["malformed_samples"][0]
    assert len(report["unreadable_files"]) == 1 and "c.parquet" in report["unreadable_files"][0]
    assert "warning: cannot read" in err


def test_bytes_that_are_not_utf8_are_a_row_in_parquet_as_in_json_lines(tmp_path: Path, capsys):
    """A Parquet string column holding bytes that are not UTF-8, as writers that do not check
    them store it (a BYTE_ARRAY of logical type String, no Arrow schema), reads as the same
    bytes on a JSON Lines line do: a record_invalid row, the rest of the file read."""
    bad = b"caf\xe9 " + CALL.encode()
    column = pa.array([CALL.encode(), bad, b"prose"], pa.binary()).view(pa.string())
    pq.write_table(pa.table({"id": [1, 2, 3], "completion": column}), tmp_path / "in.parquet", store_schema=False)
    assert str(pq.read_schema(tmp_path / "in.parquet").field("completion").type) == "string"
    lines = [json.dumps({"id": 1, "completion": CALL}).encode(), b'{"id": 2, "completion": "' + bad + b'"}']
    (tmp_path / "in.jsonl").write_bytes(b"\n".join([*lines, json.dumps({"id": 3, "completion": "prose"}).encode()]))
    got = {}
    for name in ("in.parquet", "in.jsonl"):
        out = tmp_path / f"out-{name}.parquet"
        rc, _, err = run(capsys, "parse-table", str(tmp_path / name), "-o", str(out), "--text-column", "completion")
        assert rc == 0 and "3 rows" in err, err
        got[name] = rows(out)
    for table in got.values():
        assert table[0]["calls"][0]["name"] == "get_weather" and table[2]["text"] == "prose"
        assert table[1]["text"] is None and [d["kind"] for d in table[1]["diagnostics"]] == ["record_invalid"]
    assert (
        "column 'completion': not UTF-8 (invalid continuation byte)"
        in got["in.parquet"][1]["diagnostics"][0]["detail_json"]
    )
    assert "line 2: not UTF-8 (invalid continuation byte)" in got["in.jsonl"][1]["diagnostics"][0]["detail_json"]
    messages = pa.array([json.dumps([{"role": "assistant", "content": CALL}]).encode(), bad], pa.binary())
    pq.write_table(pa.table({"messages": messages.view(pa.string())}), tmp_path / "store.parquet", store_schema=False)
    rc, out, _ = run(capsys, "audit", str(tmp_path / "store.parquet"), "--json", "--no-progress")
    report = json.loads(out)
    assert rc == 0 and report["contents_with_leaks"] == 1 and report["malformed_records"] == 1
    assert report["malformed_samples"] == [
        f"{tmp_path / 'store.parquet'}:2: column 'messages': not UTF-8 (invalid continuation byte)"
    ]


def _row_groups(path: Path) -> list[int]:
    meta = pq.ParquetFile(path).metadata
    return [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]


def test_a_batch_is_bounded_in_bytes_as_well_as_rows(tmp_path: Path, capsys):
    """Each batch is written as one row group, so the output counts the rows per batch: rows
    of 1,000 bytes under --batch-bytes 5500 are read five at a time, from JSON Lines (a line's
    bytes) and from Parquet (a row's cells) alike; the row bound still holds beside it."""
    line = json.dumps({"completion": ""})
    pad = "x" * (1000 - len(line) - 1)  # each line 1,000 bytes with its line feed
    (tmp_path / "big.jsonl").write_text(jsonl([{"completion": pad}] * 40), encoding="utf-8")
    assert (tmp_path / "big.jsonl").stat().st_size == 40_000
    pq.write_table(pa.table({"completion": ["y" * 1000] * 40}), tmp_path / "big.parquet")
    for name in ("big.jsonl", "big.parquet"):
        out = tmp_path / f"{name}.out.parquet"
        argv = ["parse-table", str(tmp_path / name), "-o", str(out), "--text-column", "completion", "--no-progress"]
        rc, _, err = run(capsys, *argv, "--batch-bytes", "5500")
        assert rc == 0, err
        assert _row_groups(out) == [5] * 8, name
        rc, _, err = run(capsys, *argv, "--batch-bytes", "1M", "--batch-rows", "16", "--force")
        assert rc == 0 and _row_groups(out) == [16, 16, 8], (name, err)
    rc, _, err = run(
        capsys, "parse-table", str(tmp_path / "big.jsonl"), "-o", str(tmp_path / "x.parquet"), "--batch-bytes", "0"
    )
    assert rc == 2 and err.count("\n") == 1 and "--batch-bytes takes a size" in err


def _flat(row: dict) -> dict:
    """A row as CSV holds it: nested cells as compact JSON text, every cell a string."""

    def cell(value):
        if isinstance(value, (list, dict)):
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return "" if value is None else str(value)

    return {k: cell(v) for k, v in row.items()}


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl", ".jsonl.gz", ".jsonl.zst", ".csv"])
def test_the_output_is_what_its_name_says(tmp_path: Path, capsys, suffix):
    import csv
    import io

    zstandard = pytest.importorskip("zstandard")
    (tmp_path / "in.jsonl").write_text(jsonl(RECORDS), encoding="utf-8")
    argv = ["parse-table", str(tmp_path / "in.jsonl"), "--text-column", "completion", "--tools-column", "tools"]
    argv += ["--keep", "id", "--no-progress"]
    rc, _, err = run(capsys, *argv, "-o", str(tmp_path / "want.parquet"))
    assert rc == 0, err
    want = rows(tmp_path / "want.parquet")
    out = tmp_path / f"out{suffix}"
    rc, _, err = run(capsys, *argv, "-o", str(out))
    assert rc == 0, err
    data = out.read_bytes()
    if suffix == ".parquet":
        assert data[:4] == b"PAR1" and rows(out) == want
    elif suffix == ".csv":
        got = list(csv.DictReader(io.StringIO(data.decode("utf-8"))))
        assert got == [_flat(r) for r in want]
        assert json.loads(got[0]["calls"])[0]["name"] == "get_weather"  # calls as JSON text
    else:
        if suffix == ".jsonl.gz":
            data = gzip.decompress(data)
        elif suffix == ".jsonl.zst":
            data = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)).read()
        assert [json.loads(line) for line in data.decode("utf-8").splitlines()] == want
    before = out.read_bytes()
    rc, _, err = run(capsys, *argv, "-o", str(out), "--limit", "1")
    assert rc == 2 and err.count("\n") == 1 and "exists: give --force" in err
    assert out.read_bytes() == before  # refused: not a byte written
    rc, _, err = run(capsys, *argv, "-o", str(out), "--limit", "1", "--force")
    assert rc == 0 and "1 rows" in err and out.read_bytes() != before


@pytest.mark.parametrize("name", ["out.txt", "out.json", "out", "out.parquet.bak"])
def test_an_output_name_that_says_no_format_is_refused(tmp_path: Path, capsys, name):
    (tmp_path / "in.jsonl").write_text(jsonl(RECORDS), encoding="utf-8")
    rc, _, err = run(
        capsys, "parse-table", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / name), "--text-column", "completion"
    )
    assert rc == 2 and err.count("\n") == 1 and "end the name in .parquet, .jsonl" in err
    assert not (tmp_path / name).exists()


def test_limit_reads_the_first_rows_across_files(tmp_path: Path, capsys):
    (tmp_path / "in").mkdir()
    for part in ("a", "b"):
        (tmp_path / "in" / f"{part}.jsonl").write_text(
            jsonl([{"id": f"{part}{i}", "completion": CALL} for i in range(5)]), encoding="utf-8"
        )
    out = tmp_path / "out.jsonl"
    argv = ["parse-table", str(tmp_path / "in"), "-o", str(out), "--text-column", "completion", "--keep", "id"]
    rc, _, err = run(capsys, *argv, "--limit", "7", "--batch-rows", "2", "--no-progress")
    assert rc == 0 and "7 rows from 2 file(s)" in err
    assert [r["id"] for r in rows(out)] == ["a0", "a1", "a2", "a3", "a4", "b0", "b1"]
    rc, _, err = run(capsys, *argv, "--limit", "0", "--force", "--no-progress")
    assert rc == 0 and rows(out) == []
