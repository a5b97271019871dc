"""Throughput and memory of the table functions (docs/benchmarks.md, "At scale").

    python benchmarks/scale.py [--rows 50000] [--gb 1.0] [--skip-spark] [--skip-memory]

1. Rows per second per core: a plain loop over ``td.parse`` against ``parse_batch`` (in
   4096-row batches), on the same rows of tests/scale_dataset.py, best of three.
2. Spark ``local[2]`` against this process on the same rows (rows/s, and per core).
3. Peak RSS of ``tooldialect parse-table`` (a child process, ``resource.getrusage``) on a
   generated JSON Lines file of about ``--gb`` GB (replies beside long prompts), written
   to Parquet.

Not a test: the figures depend on the machine and what else runs on it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import pyarrow as pa
from scale_dataset import build

import tooldialect as td
import tooldialect.table as tt

OPTIONS = {"text_column": "completion", "model_column": "model", "tools_column": "tools", "keep": ["id"]}


_TOOLSETS: dict[str, td.Toolset | None] = {}
_PROFILES: dict[str, td.families.ModelProfile] = {}


def bare_loop(rows: list[dict]) -> None:
    """What a caller writes without the table functions: parse each row, one toolset per
    distinct cell and one model profile per distinct model, kept for the whole process as
    the table functions keep theirs."""
    toolsets, profiles = _TOOLSETS, _PROFILES
    for row in rows:
        text, cell, model = row["completion"], row["tools"], row["model"]
        if text is None:
            continue
        tools = None
        if cell is not None:
            if cell not in toolsets:
                try:
                    toolsets[cell] = td.Toolset.coerce(json.loads(cell))
                except (ValueError, td.ToolDialectError):
                    toolsets[cell] = None
            tools = toolsets[cell]
        profile = None
        if model:
            profile = profiles.get(model) or profiles.setdefault(model, td.families.for_model(model))
        td.parse(
            text, tools, families=profile.families if profile else None, policy=profile.policy if profile else None
        )


def table_batches(data: pa.Table) -> None:
    for batch in data.to_batches(max_chunksize=4096):
        tt.parse_batch(batch, **OPTIONS)


def best(runs: list[tuple], repeat: int = 3) -> list[float]:
    """The best of ``repeat`` times of each (fn, arg), the runs interleaved so that load
    from elsewhere on the machine falls on both sides alike."""
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(repeat):
        for i, (fn, arg) in enumerate(runs):
            start = time.perf_counter()
            fn(arg)
            times[i].append(time.perf_counter() - start)
    return [min(t) for t in times]


def spark_rate(data: pa.Table) -> float:
    from tooldialect import spark as tds

    session = tds.session("local[2]")
    df = session.createDataFrame(data).repartition(8).cache()
    df.count()
    try:
        times = []
        for _ in range(2):
            start = time.perf_counter()
            tds.parse_dataframe(df, **OPTIONS).write.format("noop").mode("overwrite").save()
            times.append(time.perf_counter() - start)
    finally:
        session.stop()
    return min(times)


def write_jsonl(path: Path, gb: float) -> int:
    """Rows as a transcript store holds them: a long prompt (about 20 kB, not read) beside
    each reply, so 1 GB is tens of thousands of rows, not millions."""
    rows = build(20_000).to_pylist()
    pad = "You are a helpful assistant. " * 700
    lines = [json.dumps({**r, "prompt": pad[: 15_000 + (i % 11) * 1_000]}) + "\n" for i, r in enumerate(rows)]
    target, written, n = int(gb * 1e9), 0, 0
    with path.open("w", encoding="utf-8") as fh:
        while written < target:
            line = lines[n % len(lines)]
            fh.write(line)
            written += len(line.encode("utf-8"))
            n += 1
    return n


def cli_peak(path: Path, out: Path) -> tuple[float, float]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "tooldialect", "parse-table", str(path), "-o", str(out), "--no-progress", *_cli_args()],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        check=False,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(done.stderr)
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return peak_kb / 1024, elapsed


def _cli_args() -> list[str]:
    return ["--text-column", "completion", "--model-column", "model", "--tools-column", "tools", "--keep", "id"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--skip-spark", action="store_true")
    ap.add_argument("--skip-memory", action="store_true")
    args = ap.parse_args()
    data = build(args.rows)
    rows = data.to_pylist()
    table_batches(data.slice(0, 2000))  # compile every grammar first: neither side pays for it
    bare_loop(rows[:2000])
    bare, batched = best([(bare_loop, rows), (table_batches, data)])
    print(f"rows: {args.rows}")
    print(f"bare td.parse loop: {bare:.2f} s, {args.rows / bare:,.0f} rows/s on one core")
    print(f"parse_batch (4096-row batches): {batched:.2f} s, {args.rows / batched:,.0f} rows/s on one core")
    print(f"parse_batch / bare loop: {batched / bare:.3f}x the time")
    if not args.skip_spark:
        spark = spark_rate(data)
        print(
            f"spark local[2]: {spark:.2f} s, {args.rows / spark:,.0f} rows/s, {args.rows / spark / 2:,.0f} rows/s per core"
        )
        print(f"spark local[2] / in-process: {batched / spark:.2f}x the in-process rate")
    if not args.skip_memory:
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "big.jsonl"
            n = write_jsonl(src, args.gb)
            size = src.stat().st_size
            peak, elapsed = cli_peak(src, Path(tmp) / "out.parquet")
            print(
                f"parse-table on {size / 1e9:.2f} GB JSON Lines ({n:,} rows): peak RSS {peak:,.0f} MiB, {elapsed:.0f} s"
            )


if __name__ == "__main__":
    main()
