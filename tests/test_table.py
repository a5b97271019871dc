"""tooldialect.table: Arrow batches in and out, read row for row as the rest of the API reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow", reason="the table functions need pyarrow (the table extra)")

import tooldialect as td
import tooldialect.table as tt
from tooldialect.audit import audit_paths

WEATHER = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]
TOOLS = json.dumps(WEATHER)
CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'


LONE = '<tool_call>{"name": "get_\\ud800", "arguments": {}}</tool_call>'


def batch(**columns):
    return pa.RecordBatch.from_pydict(columns)


def test_rows_read_as_parse_reads_them():
    from scale_dataset import build

    data = build(2_000)
    out = tt.parse_batch(data, text_column="completion", tools_column="tools", model_column="model", keep=["id"])
    assert isinstance(out, pa.Table) and out.num_rows == data.num_rows
    assert out.schema == tt.parse_schema(data.schema, ["id"])
    for row, got in zip(data.to_pylist(), out.to_pylist()):
        if row["completion"] is None or (row["tools"] or "").startswith("[not"):
            continue
        profile = td.families.for_model(row["model"]) if row["model"] else None
        want = td.parse(
            row["completion"],
            td.Toolset.coerce(json.loads(row["tools"])) if row["tools"] else None,
            families=profile.families if profile else None,
            policy=profile.policy if profile else None,
        )
        assert got["id"] == row["id"]
        assert got["text"] == want.text and got["reasoning"] == want.reasoning
        assert got["calls"] == [
            {"name": c.name, "arguments_json": c.arguments_json, "id": c.id, "family": c.family} for c in want.calls
        ]
        assert [(d["kind"], d["family"], json.loads(d["detail_json"])) for d in got["diagnostics"]] == [
            (d.kind, d.family, d.detail) for d in want.diagnostics
        ]


def test_a_record_batch_gives_a_record_batch_and_the_family_of_the_calls():
    out = tt.parse_batch(batch(text=[CALL, "prose"]), tools=WEATHER)
    assert isinstance(out, pa.RecordBatch)
    assert out.column("family").to_pylist() == ["hermes", None]
    assert out.column("calls").to_pylist()[0][0]["arguments_json"] == '{"city": "Paris"}'


def test_per_row_failures_are_rows_with_a_diagnostic():
    data = batch(
        text=[CALL, None, CALL, LONE, "fine"],
        tools=[TOOLS, TOOLS, "[not json", TOOLS, TOOLS],
        why=[None, None, None, None, "line 5: not JSON"],
    )
    out = tt.parse_batch(data, tools_column="tools", error_column="why").to_pylist()
    kinds = [[d["kind"] for d in row["diagnostics"]] for row in out]
    assert kinds == [[], ["text_missing"], ["tools_invalid"], ["unknown_tool"], ["record_invalid"]]
    assert out[2]["text"] == CALL and out[2]["calls"] == []  # not read, but nothing lost
    # a \ud800 escape decodes to a lone surrogate, which Arrow's UTF-8 strings hold as U+FFFD
    assert "get_\ufffd" in out[3]["diagnostics"][0]["detail_json"]
    assert json.loads(out[4]["diagnostics"][0]["detail_json"]) == {"error": "line 5: not JSON"}
    assert out[1]["text"] is None and out[4]["text"] is None


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: tt.parse_batch(batch(body=["x"])), "no text column 'text'"),
        (lambda: tt.parse_batch(batch(text=[1, 2])), "holds int64, not strings"),
        (lambda: tt.parse_batch(batch(text=["x"]), keep=["id"]), "no column 'id' to keep"),
        (lambda: tt.parse_batch(batch(text=["x"]), keep=["text"]), "an output column has that name"),
        (lambda: tt.parse_batch(batch(text=["x"]), tools=WEATHER, tools_column="text"), "not both"),
        (lambda: tt.parse_batch({"text": ["x"]}), "expected a pyarrow RecordBatch or Table"),
        (lambda: tt.render_batch(batch(messages=["[]"])), "give one of dialect="),
    ],
)
def test_caller_mistakes_raise_one_table_error(call, message):
    with pytest.raises(tt.TableError, match=message):
        call()


def test_an_unknown_family_raises_before_any_row():
    with pytest.raises(td.UnknownFamilyError):
        tt.parse_batch(batch(text=["x"]), families=["nope"])


def test_a_toolset_is_built_once_per_distinct_cell_and_kept_across_batches():
    tt.clear_caches()
    cells = [TOOLS, json.dumps(WEATHER[:1] * 1, indent=1), None, "[bad"]
    data = batch(text=[CALL] * 400, tools=[cells[i % 4] for i in range(400)])
    first = tt.parse_batch(data, tools_column="tools")
    assert tt._TOOLSETS.builds == 3  # two toolsets and one invalid cell, each read once
    tt.parse_batch(data, tools_column="tools")
    assert tt._TOOLSETS.builds == 3
    assert sum(1 for calls in first.column("calls").to_pylist() if calls) == 300  # all but the invalid cell


def test_a_model_column_picks_the_model_s_families_once_per_model():
    tt.clear_caches()
    mistral = '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]'
    data = batch(text=[mistral, mistral] * 50, model=["mistralai/Mistral-7B-Instruct-v0.3", None] * 50)
    out = tt.parse_batch(data, model_column="model", tools=WEATHER)
    assert tt._PROFILES.builds == 1
    families = set(out.column("family").to_pylist())
    assert families == {"mistral"}


def test_audit_batch_reports_what_audit_reports(tmp_path: Path):
    leaked = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": "Sure. " + CALL},
    ]
    mixed = [
        {
            "role": "assistant",
            "content": CALL,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}],
        }
    ]
    records = [{"thread_id": "t1", "messages": leaked}, {"thread_id": "t2", "messages": mixed}, {"x": 1}]
    store = tmp_path / "store.jsonl"
    store.write_text("".join(json.dumps(r) + "\n" for r in records) + "{not json\n", encoding="utf-8")
    report = audit_paths([str(store)])
    out = tt.audit_batch(batch(messages=[json.dumps(r) for r in records] + ["{not json"])).to_pylist()
    leaks = [leak for row in out for leak in row["leaks"]]
    assert [(leak["tools"], leak["mixed"], [tuple(o) for o in leak["offsets"]]) for leak in leaks] == [
        (leak.tools, leak.mixed, leak.offsets) for leak in report.leaks
    ]
    assert [row["thread"] for row in out[:2]] == ["t1", "t2"]
    assert sum(row["contents"] for row in out) == report.contents
    assert sum(row["malformed"] is not None for row in out) == report.malformed_records == 2


def test_audit_batch_reads_nested_message_lists_and_a_text_field():
    msg = pa.struct([("role", pa.string()), ("content", pa.string())])
    nested = pa.table(
        {"messages": pa.array([[{"role": "assistant", "content": CALL}]], pa.list_(msg)), "thread_id": ["t9"]}
    )
    row = tt.audit_batch(nested).to_pylist()[0]
    assert row["thread"] == "t9" and row["leaks"][0]["tools"] == ["get_weather"]
    plain = tt.audit_batch(batch(completion=[CALL, "prose"]), text_field="completion").to_pylist()
    assert [len(r["leaks"]) for r in plain] == [1, 0]


CONVERSATION = [
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
    {"role": "assistant", "content": "It is 18C."},
]


@pytest.mark.parametrize(
    "speaker", [{"dialect": "python"}, {"dialect": "xml"}, {"family": "hermes"}, {"family": "mistral"}]
)
def test_rendered_calls_read_back_as_the_same_calls(speaker):
    out = tt.render_batch(batch(messages=[json.dumps(CONVERSATION)]), tools=WEATHER, **speaker).to_pylist()[0]
    assert out["diagnostics"] == []
    messages = json.loads(out["messages_json"])
    written = messages[1]["content"]
    got = td.parse(written, td.Toolset.coerce(WEATHER), families=[speaker["family"]] if "family" in speaker else None)
    assert [(c.name, c.arguments) for c in got.calls] == [("get_weather", {"city": "Paris"})]
    assert got.text.startswith("Checking.")
    assert (out["instructions"] is None) == ("family" in speaker)


def test_a_conversation_that_cannot_be_written_is_a_row_with_a_diagnostic():
    no_id = [
        {
            "role": "assistant",
            "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": "{}"}}],
        }
    ]
    orphan = CONVERSATION[:2]  # a call with no result
    out = tt.render_batch(
        batch(messages=[json.dumps(no_id), "{bad", json.dumps(orphan), json.dumps(CONVERSATION)]),
        tools=WEATHER,
        dialect="xml",
    ).to_pylist()
    assert [[d["kind"] for d in row["diagnostics"]] for row in out] == [
        ["render_failed"],
        ["record_invalid"],
        ["cycles_dropped"],
        [],
    ]
    assert out[0]["messages_json"] is None and out[2]["messages_json"] is not None


def test_every_row_kind_is_documented():
    from support import ROOT

    text = (ROOT / "docs" / "scale.md").read_text(encoding="utf-8")
    for kind, meaning in tt.ROW_KINDS.items():
        assert f"| `{kind}` | {meaning} |" in text, kind
    assert not set(tt.ROW_KINDS) & set(td.DIAGNOSTIC_KINDS)  # never mistaken for a parse diagnostic


def test_grammars_compile_once_per_process_not_per_batch(monkeypatch):
    from scale_dataset import build

    import tooldialect.families as registry

    data = build(1_000)
    options = {"text_column": "completion", "tools_column": "tools", "model_column": "model"}
    tt.parse_batch(data, **options)  # whatever this process had not compiled yet
    compiled = []
    real = registry.compile_grammar
    monkeypatch.setattr(registry, "compile_grammar", lambda *a, **k: compiled.append(a) or real(*a, **k))
    for batch in data.to_batches(max_chunksize=100):
        tt.parse_batch(batch, **options)
    assert compiled == []


def strings(*values: bytes | None):
    """A string column holding these bytes as they are, UTF-8 or not: what a Parquet file of
    some writers reads back as (Arrow does not check the bytes of a string column it reads)."""
    return pa.array(list(values), pa.binary()).view(pa.string())


def test_a_string_cell_that_is_not_utf8_is_a_row_not_an_exception():
    data = pa.table(
        {
            "id": strings(b"1", b"2\xff", b"3"),
            "text": strings(CALL.encode(), b"bad \xff\xfe bytes", b"prose"),
            "messages": strings(b"[]", json.dumps([{"role": "assistant", "content": CALL}]).encode() + b"\xc3", b"[]"),
        }
    )
    out = tt.parse_batch(data, tools=WEATHER, keep=["id"]).to_pylist()
    assert [r["id"] for r in out] == ["1", "2\ufffd", "3"]  # a kept cell: U+FFFD for the bad bytes
    assert out[0]["calls"][0]["name"] == "get_weather" and out[2]["text"] == "prose"
    assert out[1]["text"] is None and [d["kind"] for d in out[1]["diagnostics"]] == ["record_invalid"]
    assert json.loads(out[1]["diagnostics"][0]["detail_json"]) == {
        "error": "column 'text': not UTF-8 (invalid start byte)"
    }
    audit = tt.audit_batch(data).to_pylist()
    assert [r["malformed"] for r in audit] == [None, "column 'messages': not UTF-8 (unexpected end of data)", None]
    render = tt.render_batch(data, dialect="xml").to_pylist()
    assert render[1]["messages_json"] is None and render[1]["diagnostics"][0]["kind"] == "record_invalid"
    assert render[0]["messages_json"] == "[]"


def test_engine_workers_read_each_batch_in_pieces_of_batch_bytes(monkeypatch):
    """Spark and Ray hand a worker batches of many rows; a worker reads them in pieces of at
    most batch_bytes (rows of 1,000 bytes: five to a piece under 5,500), so memory stays flat
    whatever the size of the rows, and the output is the batch's, row for row."""
    from tooldialect import ray as tdr
    from tooldialect import spark as tds

    data = pa.table({"text": ["y" * 1000] * 40})
    seen: list[int] = []

    def parse(batch, **options):
        seen.append(batch.num_rows)
        return tt.parse_batch(batch, **options)

    monkeypatch.setitem(tds._FUNCTIONS, "parse", parse)
    out = list(tds._run("parse", {}, 5500, iter(data.to_batches())))
    assert seen == [5] * 8 and pa.Table.from_batches(out).equals(tt.parse_batch(data))
    seen.clear()
    monkeypatch.setitem(tdr._FUNCTIONS, "parse", parse)
    assert tdr._run(data, which="parse", options={}, batch_bytes=5500).equals(tt.parse_batch(data))
    assert seen == [5] * 8
