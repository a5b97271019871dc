"""The same dataset gives the same output table in this process, on Spark local[2] and on a
local Ray: 50,000 rows of every family, prose, cut-off and broken calls, several tools
columns, rows that cannot be read.  Skipped, with the reason, where pyspark or ray is not
installed (the dev extra installs both)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

pytestmark = pytest.mark.xdist_group("engines")  # one Spark session and one Ray cluster per run

pa = pytest.importorskip("pyarrow", reason="the table functions need pyarrow (the table extra)")

from scale_dataset import build
from support import sweep

import tooldialect.table as tt

ROWS = sweep(50_000, 10_000)  # 10,000 in the quick tier
OPTIONS = {"text_column": "completion", "model_column": "model", "tools_column": "tools", "keep": ["id"]}


def _installed(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


@pytest.fixture(scope="module")
def dataset():
    return build(ROWS)


@pytest.fixture(scope="module")
def expected(dataset):
    """The in-process result, batch by batch as the embedded CLI reads."""
    out = [tt.parse_batch(b, **OPTIONS) for b in dataset.to_batches(max_chunksize=4096)]
    return pa.Table.from_batches(out).combine_chunks()


@pytest.fixture(scope="module")
def spark_session():
    """One Spark local[2] for the module (the CLI's session() finds it running)."""
    from tooldialect import spark as tds

    session = tds.session("local[2]", config={"spark.sql.shuffle.partitions": "4"})
    yield session
    session.stop()


@pytest.fixture(scope="module")
def local_ray():
    import ray

    from tooldialect import ray as tdr

    tdr.init(num_cpus=2)
    yield ray
    ray.shutdown()


def same(got, expected) -> None:
    got = got.sort_by("id").combine_chunks()
    assert got.num_rows == expected.num_rows == ROWS
    assert got.schema.equals(expected.schema), (got.schema, expected.schema)
    for name in expected.schema.names:  # column by column, so a failure names the column
        assert got.column(name).equals(expected.column(name)), name
    assert got.equals(expected)
    # and byte for byte, as a file: the same Parquet (schema metadata an engine adds aside)
    assert parquet_bytes(got) == parquet_bytes(expected)


def parquet_bytes(table) -> bytes:
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(table.replace_schema_metadata(None), sink)
    return sink.getvalue().to_pybytes()


def test_the_dataset_mixes_what_it_says(expected):
    families = set(expected.column("family").to_pylist())
    kinds = {d["kind"] for row in expected.column("diagnostics").to_pylist() for d in row}
    import tooldialect as td

    assert set(td.families.names()) <= families  # every family read somewhere
    assert {"truncated", "malformed_block", "text_missing", "tools_invalid"} <= kinds
    assert None in families  # prose-only rows


@pytest.mark.skipif(not _installed("pyspark"), reason="pyspark is not installed (pip install 'tooldialect[spark]')")
def test_spark_local_2_gives_the_same_table(dataset, expected, spark_session):
    from tooldialect import spark as tds

    df = spark_session.createDataFrame(dataset).repartition(8)
    same(tds.parse_dataframe(df, **OPTIONS).toArrow(), expected)


@pytest.mark.skipif(not _installed("ray"), reason="ray is not installed (pip install 'tooldialect[ray]')")
def test_local_ray_gives_the_same_table(dataset, expected, local_ray):
    from tooldialect import ray as tdr

    blocks = [pa.Table.from_batches([b]) for b in dataset.to_batches(max_chunksize=6250)]
    ds = local_ray.data.from_arrow(blocks)
    same(pa.concat_tables(local_ray.get(tdr.parse_dataset(ds, **OPTIONS).to_arrow_refs())), expected)


@pytest.mark.parametrize("module, package", [("tooldialect.spark", "pyspark"), ("tooldialect.ray", "ray")])
def test_a_missing_engine_says_what_to_install(monkeypatch, module, package):
    import importlib

    import tooldialect as td

    monkeypatch.setitem(sys.modules, package, None)  # an import of it fails, as when it is absent
    if package == "ray":
        monkeypatch.setitem(sys.modules, "ray.data", None)
    mod = importlib.import_module(module)
    with pytest.raises(td.MissingDependencyError, match=f"pip install 'tooldialect\\[{module.split('.')[1]}\\]'"):
        (mod.session if package == "pyspark" else mod.init)()


def _cli_input(tmp_path):
    """JSON Lines of the dataset's rows, and lines a reader must not lose the file over: one
    that is not JSON, one that is not UTF-8, a blank one, and one whose strings hold U+2028
    and U+0085 as they are (line breaks to ``str.splitlines``, not to JSON Lines)."""
    import json

    rows = build(300).to_pylist()
    text = "".join(json.dumps(r) + "\n" for r in rows) + "{not json\n\n"
    text += json.dumps({"id": 300, "completion": "a\u2028b\x85c <tool_call>", "model": None}, ensure_ascii=False) + "\n"
    path = tmp_path / "in.jsonl"
    path.write_bytes(text.encode("utf-8") + b'{"id": 301, "completion": "caf\xe9"}\n')
    return path


def _unnumbered(rows: list[dict]) -> list[dict]:
    """The rows with the line numbers the embedded reader gives the lines it could not read
    left out (engines read lines unnumbered), in the order of their ids, then of their details."""
    import re

    for row in rows:
        for d in row["diagnostics"]:
            d["detail_json"] = re.sub(r"line \d+: ", "", d["detail_json"])
    return sorted(rows, key=lambda r: (r["id"] is None, int(r["id"] or 0), str(r["diagnostics"])))


def _cli_rows(capsys, tmp_path, *engine):
    import pyarrow.parquet as pq

    from tooldialect import cli

    path = _cli_input(tmp_path)
    out = tmp_path / ("out-" + (engine[1] if engine else "inprocess") + ".parquet")
    argv = ["parse-table", str(path), "-o", str(out), "--keep", "id", "--no-progress"]
    argv += ["--text-column", "completion", "--model-column", "model", "--tools-column", "tools", *engine]
    capsys.readouterr()
    assert cli.main(argv) == 0, capsys.readouterr().err
    table = pq.read_table(out)  # a file, or the engine's directory of part files
    assert f"{table.num_rows} rows from 1 file(s) written to {out}" in capsys.readouterr().err
    return _unnumbered(table.to_pylist())


@pytest.mark.skipif(not _installed("pyspark"), reason="pyspark is not installed (pip install 'tooldialect[spark]')")
def test_parse_table_on_spark_writes_what_the_embedded_command_writes(tmp_path, capsys, spark_session):
    want = _cli_rows(capsys, tmp_path)
    assert len(want) == 303 and sum(r["id"] is None for r in want) == 2
    got = _cli_rows(capsys, tmp_path, "--engine", "spark", "--master", "local[2]")
    assert got == want


@pytest.mark.skipif(not _installed("ray"), reason="ray is not installed (pip install 'tooldialect[ray]')")
def test_parse_table_on_ray_writes_what_the_embedded_command_writes(tmp_path, capsys, local_ray):
    want = _cli_rows(capsys, tmp_path)
    got = _cli_rows(capsys, tmp_path, "--engine", "ray")
    assert got == want


def _bad_parquet(tmp_path):
    """The dataset as Parquet whose writer stored bytes that are not UTF-8 in the string
    column of some rows (a String column, no Arrow schema)."""
    import pyarrow.parquet as pq

    data = build(300)
    raw = [None if t is None else t.encode("utf-8") for t in data.column("completion").to_pylist()]
    for i in range(7, 300, 50):
        raw[i] = b"caf\xe9 " + (raw[i] or b"")
    at = data.schema.get_field_index("completion")
    data = data.set_column(at, "completion", pa.array(raw, pa.binary()).view(pa.string()))
    path = tmp_path / "bad.parquet"
    pq.write_table(data, path, store_schema=False)
    return path


def _csv_rows(path) -> list[dict]:
    import csv

    files = [path] if path.is_file() else sorted(p for p in path.iterdir() if p.name.endswith(".csv"))
    rows = []
    for name in files:
        with name.open(encoding="utf-8", newline="") as fh:
            rows.extend(csv.DictReader(fh))
    return sorted(rows, key=lambda r: int(r["id"]))


@pytest.mark.parametrize("engine", ["spark", "ray"])
def test_bad_cells_a_limit_and_csv_on_an_engine_as_in_this_process(engine, tmp_path, capsys, request):
    """Cells that are not UTF-8 in a Parquet string column are record_invalid rows on every
    engine; --limit reads the first rows; CSV is written with calls as JSON text; one file is
    spread over both cores of local[2] (two part files, one per core's partition or block)."""
    if not _installed("pyspark" if engine == "spark" else "ray"):
        pytest.skip(f"{engine} is not installed (pip install 'tooldialect[{engine}]')")
    request.getfixturevalue("spark_session" if engine == "spark" else "local_ray")
    from tooldialect import cli

    path = _bad_parquet(tmp_path)
    argv = ["parse-table", str(path), "--text-column", "completion", "--model-column", "model", "--keep", "id"]
    argv += ["--tools-column", "tools", "--limit", "250", "--no-progress"]
    capsys.readouterr()
    assert cli.main([*argv, "-o", str(tmp_path / "want.csv")]) == 0, capsys.readouterr().err
    more = ("--master", "local[2]") if engine == "spark" else ()
    assert cli.main([*argv, "-o", str(tmp_path / "got.csv"), "--engine", engine, *more]) == 0
    assert f"250 rows from 1 file(s) written to {tmp_path / 'got.csv'} on {engine}" in capsys.readouterr().err
    want, got = _csv_rows(tmp_path / "want.csv"), _csv_rows(tmp_path / "got.csv")
    assert [r["id"] for r in want] == [str(i) for i in range(250)]
    bad = [r for r in want if "not UTF-8" in r["diagnostics"]]
    assert [r["id"] for r in bad] == ["7", "57", "107", "157", "207"]
    assert "column 'completion': not UTF-8 (invalid continuation byte)" in bad[0]["diagnostics"]
    assert got == want
    assert len([p for p in (tmp_path / "got.csv").iterdir() if p.name.endswith(".csv")]) == 2


@pytest.mark.parametrize("engine", ["spark", "ray"])
def test_an_engine_says_why_in_one_line(engine, tmp_path, capsys):
    """A column of the wrong type, an output that exists: one line each, before the engine starts."""
    import pyarrow.parquet as pq

    from tooldialect import cli

    pq.write_table(pa.table({"completion": [1, 2]}), tmp_path / "in.parquet")
    argv = ["parse-table", str(tmp_path / "in.parquet"), "--text-column", "completion", "--engine", engine]
    capsys.readouterr()
    assert cli.main([*argv, "-o", str(tmp_path / "out.parquet")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the text column 'completion' holds int64, not strings" in err, err
    assert "\x1b" not in err
    (tmp_path / "out.parquet").mkdir()
    pq.write_table(pa.table({"completion": ["x"]}), tmp_path / "in.parquet")
    assert cli.main([*argv, "-o", str(tmp_path / "out.parquet")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "out.parquet exists: give --force to replace it" in err


@pytest.mark.skipif(not _installed("ray"), reason="ray is not installed (pip install 'tooldialect[ray]')")
def test_a_ray_task_s_failure_is_its_cause_in_one_line(local_ray):
    from tooldialect import ray as tdr
    from tooldialect.tablerun import engine_cause

    ds = local_ray.data.from_arrow(pa.table({"text": [1, 2]}))
    with pytest.raises(Exception) as failed:  # the API runs no check before the tasks: a task raises
        tdr.parse_dataset(ds).materialize()
    assert engine_cause(failed.value) == "the text column 'text' holds int64, not strings"


@pytest.mark.skipif(not _installed("pyspark"), reason="pyspark is not installed (pip install 'tooldialect[spark]')")
def test_an_engine_s_refusal_is_one_line(tmp_path, capsys, spark_session):
    import pyarrow.parquet as pq

    from tooldialect import cli

    pq.write_table(pa.table({"body": ["x"]}), tmp_path / "in.parquet")
    capsys.readouterr()
    rc = cli.main(["parse-table", str(tmp_path / "in.parquet"), "-o", str(tmp_path / "out"), "--engine", "spark"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "has no column 'text'" in err


def _conversations(n: int):
    """``n`` rows for audit and render: an assistant content from the dataset, and a
    conversation with a call, its result and a reply."""
    import json

    texts = build(n).column("completion").to_pylist()
    audit, render = [], []
    for i, text in enumerate(texts):
        audit.append(json.dumps([{"role": "user", "content": "go"}, {"role": "assistant", "content": text}]))
        call = {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": "get_weather", "arguments": json.dumps({"city": f"C{i}"})},
        }
        chat = [
            {"role": "user", "content": f"weather {i}?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
        ]
        if i % 5:
            chat.append(
                {"role": "tool", "tool_call_id": f"call_{i}", "content": f"{i}C"}
            )  # else: a call left unanswered
        render.append("{broken" if i % 97 == 0 else json.dumps(chat))
    return pa.table({"id": list(range(n)), "audit": audit, "chat": render})


AUDIT = {"column": "audit", "keep": ["id"]}
RENDER = {
    "column": "chat",
    "family": "hermes",
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ],
    "keep": ["id"],
}


@pytest.mark.parametrize("engine", ["spark", "ray"])
def test_audit_and_render_give_the_same_tables_on_every_engine(engine, request):
    if not _installed("pyspark" if engine == "spark" else "ray"):
        pytest.skip(f"{engine} is not installed (pip install 'tooldialect[{engine}]')")
    data = _conversations(2_000)
    want_audit = tt.audit_batch(data, **AUDIT)
    want_render = tt.render_batch(data, **RENDER)
    assert sum(len(x) for x in want_audit.column("leaks").to_pylist()) > 500
    assert {d["kind"] for row in want_render.column("diagnostics").to_pylist() for d in row} == {
        "record_invalid",
        "cycles_dropped",
    }
    if engine == "spark":
        from tooldialect import spark as tds

        df = request.getfixturevalue("spark_session").createDataFrame(data).repartition(4)
        got_audit, got_render = tds.audit_dataframe(df, **AUDIT).toArrow(), tds.render_dataframe(df, **RENDER).toArrow()
    else:
        from tooldialect import ray as tdr

        ray = request.getfixturevalue("local_ray")
        ds = ray.data.from_arrow([pa.Table.from_batches([b]) for b in data.to_batches(max_chunksize=500)])
        got_audit = pa.concat_tables(ray.get(tdr.audit_dataset(ds, **AUDIT).to_arrow_refs()))
        got_render = pa.concat_tables(ray.get(tdr.render_dataset(ds, **RENDER).to_arrow_refs()))
    for got, want in ((got_audit, want_audit), (got_render, want_render)):
        got = got.sort_by("id").combine_chunks()
        assert got.schema.equals(want.schema) and got.equals(want.combine_chunks())
        assert parquet_bytes(got) == parquet_bytes(want.combine_chunks())


def _stores(tmp_path):
    """Transcript stores in three files: leaks, a record that is not JSON, a gzip file, one
    Parquet file, and a path that does not exist."""
    import gzip
    import json

    import pyarrow.parquet as pq

    call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    leaked = [{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": "Sure. " + call}]
    clean = [{"role": "assistant", "content": "It is sunny."}]
    lines = [json.dumps({"thread_id": f"t{i}", "messages": leaked if i % 3 else clean}) for i in range(30)] + [
        "{not json"
    ]
    (tmp_path / "a.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "b.jsonl.gz").write_bytes(gzip.compress((json.dumps({"messages": leaked}) + "\n").encode()))
    pq.write_table(pa.table({"messages": [json.dumps(leaked), json.dumps(clean)]}), tmp_path / "c.parquet")
    return [
        str(tmp_path / "a.jsonl"),
        str(tmp_path / "b.jsonl.gz"),
        str(tmp_path / "c.parquet"),
        str(tmp_path / "gone.jsonl"),
    ]


def _audit_json(capsys, paths, *engine):
    import json

    from tooldialect import cli

    capsys.readouterr()
    rc = cli.main(["audit", *paths, "--json", "--no-progress", *engine])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)


@pytest.mark.parametrize("engine", ["spark", "ray"])
def test_audit_on_an_engine_reports_what_this_process_reports(engine, tmp_path, capsys, request):
    if not _installed("pyspark" if engine == "spark" else "ray"):
        pytest.skip(f"{engine} is not installed (pip install 'tooldialect[{engine}]')")
    request.getfixturevalue("spark_session" if engine == "spark" else "local_ray")
    paths = _stores(tmp_path)
    want = _audit_json(capsys, paths)
    assert want["contents_with_leaks"] == 22 and want["malformed_records"] == 1 and want["files"] == 3
    assert len(want["unreadable_files"]) == 1
    on = ("--engine", engine, *(("--master", "local[2]") if engine == "spark" else ()))
    got = _audit_json(capsys, paths, *on)
    assert got == want
    from tooldialect import cli

    lines = {}
    for how in ((), on):  # a line per leak, then the summary: the same from the engine's reports
        capsys.readouterr()
        assert cli.main(["audit", *paths, "--jsonl", "--id-field", "thread_id", "--no-progress", *how]) == 0
        lines[how] = capsys.readouterr().out
    assert lines[on] == lines[()] and len(lines[()].splitlines()) == 23
