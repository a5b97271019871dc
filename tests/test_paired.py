"""benchmarks/paired.py and run.py's ``--paired``: the peer gates read the cells measured in
turn with the peers, the separate runs' ratios stay as reports, and a round-by-round cell
keeps every parser's least and median sample."""

from __future__ import annotations

import importlib.util
import itertools
import json
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import tooldialect as td

ROOT = Path(__file__).resolve().parent.parent


def _load(name: str, alias: str, run: ModuleType | None = None) -> ModuleType:
    """benchmarks/<name>.py as ``alias`` (fuzz/ has a ``run`` module of its own); paired.py
    is given the benchmark ``run`` while it imports."""
    spec = importlib.util.spec_from_file_location(alias, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    path, saved = list(sys.path), sys.modules.get("run")
    try:
        if run is not None:
            sys.modules["run"] = run
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = path
        if saved is None:
            sys.modules.pop("run", None)
        else:
            sys.modules["run"] = saved
    return module


run = _load("run", "bench_run")
paired = _load("paired", "bench_paired", run)
trees = _load("trees", "bench_trees", run)
PEER = "sglang KimiK2Detector"


def _row(lib: str, scen: str, mode: str, ms: float, calls: int = 20) -> dict[str, Any]:
    return {
        "format": "kimi_k2",
        "lib": lib,
        "scenario": scen,
        "mode": mode,
        "chars": 1,
        "expected_calls": 20,
        "ms": ms,
        "calls": calls,
    }


def _by_name(gs: list[dict[str, Any]], *words: str) -> list[dict[str, Any]]:
    return [g for g in gs if all(w in g["gate"] for w in words)]


def test_paired_rows_decide_the_peer_gate_and_the_separate_runs_report() -> None:
    compiled = run.COMPILED[run.TD]
    rows = [_row(run.TD, "b", "full", 9.0), _row(compiled, "b", "full", 3.0), _row(PEER, "b", "full", 1.0)]
    pairs = [_row(compiled, "b", "full", 1.8), _row(PEER, "b", "full", 1.0)]
    gs = run.gates(rows, pairs)
    (line,) = _by_name(gs, "1 batch · kimi_k2 b full, in pairs:", compiled)
    assert line["value"] == 1.8 and line["limit"] == 2 and line["holds"] is True
    (apart,) = _by_name(gs, "separate runs", compiled)
    assert apart["value"] == 3.0 and apart["holds"] is None
    # without paired rows the separate runs decide, and fail
    (alone,) = _by_name(run.gates(rows), "1 batch · kimi_k2 b full:", compiled, "≤ 2")
    assert alone["value"] == 3.0 and alone["holds"] is False
    assert not _by_name(run.gates(rows), "separate runs")


def test_a_paired_peer_that_missed_a_call_is_not_the_fastest() -> None:
    compiled = run.COMPILED[run.TD]
    rows = [_row(compiled, "b", "full", 3.0), _row(PEER, "b", "full", 1.0)]
    pairs = [_row(compiled, "b", "full", 1.8), _row(PEER, "b", "full", 0.5, calls=19), _row("vllm x", "b", "full", 1.2)]
    (line,) = _by_name(run.gates(rows, pairs), "b full, in pairs:", compiled)
    assert "vllm x" in line["gate"] and line["value"] == 1.8 / 1.2


class _Fake:
    def __init__(self, lib: str, pause: float, calls: int) -> None:
        self.lib, self.pause, self.calls = lib, pause, calls

    def full(self, text: str) -> int:
        if self.pause:
            time.sleep(self.pause)
        return self.calls

    def stream(self, deltas: list[str]) -> int:
        return self.full("")

    def prepare(self, deltas: list[str]) -> list[str]:
        return deltas


def test_a_cell_in_pairs_keeps_least_and_median_and_drops_hopeless_parsers(monkeypatch: Any) -> None:
    monkeypatch.setattr(paired, "STOP", 0.5)
    monkeypatch.setattr(paired, "WARM", 0.01)
    fast = _Fake(run.TD, 0.0, 1)
    slow = _Fake("vllm slow", 0.01, 1)  # far over FAR times the fastest after round one
    mine_slow = _Fake(run.EVERY, 0.01, 1)  # as far over, but what the cell measures
    wrong = _Fake("sglang wrong", 0.0, 0)  # misses the call: never the fastest
    hung = _Fake("sglang hung", 30.0, 1)  # stopped at STOP, then left out
    rows = paired.pair_cell("kimi_k2", [fast, slow, wrong, hung, mine_slow], "a", "full", 3, run.COMPILED)
    by = {r["lib"]: r for r in rows}
    assert set(by) == {run.COMPILED[run.TD], "vllm slow", "sglang wrong", "sglang hung", run.COMPILED[run.EVERY]}
    assert by[run.COMPILED[run.EVERY]]["rounds"] == 3  # tooldialect's rows keep every round
    assert by["sglang hung"]["ms"] is None and by["sglang hung"]["note"].startswith("stopped after")
    mine = by[run.COMPILED[run.TD]]
    assert mine["rounds"] == 3 and mine["calls"] == 1 and 0 < mine["ms"] <= mine["median_ms"]
    assert by["vllm slow"]["rounds"] == 1 and by["sglang wrong"]["rounds"] == 1
    assert by["vllm slow"]["ms"] > mine["ms"]


def test_a_forked_sample_repeats_the_parse_for_warm_seconds_before_it_is_timed() -> None:
    made = itertools.count(1)  # (the child's own copy counts: the parent never calls)

    def parse(text: str) -> int:
        time.sleep(0.002)
        return next(made)  # the calls before this one, and this one

    _, cold, _ = run.isolated(parse, "", samples=1, timeout=5)
    _, warmed, _ = run.isolated(parse, "", samples=1, timeout=5, warm=0.05)
    assert cold == 1  # measure's first call is the child's first
    assert warmed > 10  # 50 ms of 2 ms parses came first
    assert paired.WARM > 0


def test_the_pure_builds_growth_is_read_from_the_rows_measured_beside_the_tree_before() -> None:
    alone = run.ALONE[run.TD]
    rows = [_row(run.TD, "e20", "stream", 10.0), _row(run.TD, "e80", "stream", 60.0)]
    (line,) = _by_name(run.gates(rows), "kimi_k2: tooldialect e80 / e20")
    assert line["value"] == 6.0 and line["holds"] is False  # this run's own cells, minutes apart
    rows += [_row(alone, "e20", "stream", 11.0), _row(alone, "e80", "stream", 44.0)]
    (line,) = _by_name(run.gates(rows), "kimi_k2:", "e80 / e20")
    assert alone in line["gate"] and line["value"] == 4.0 and line["holds"] is True


def test_trees_measures_each_cell_on_every_tree_in_turn_and_writes_what_run_py_reads(tmp_path: Path) -> None:
    """Two workers (here both this checkout's src), every cell in turn for two rounds: a
    ``run.py --json`` file per tree, which ``--before`` and ``--alone`` read."""
    src = str(ROOT / "src")
    trees.in_turn([("before", src, "old"), ("alone", src, "new")], 2, sys.prefix, ["hermes"], ["a"], tmp_path)
    for name, rev in (("before", "old"), ("alone", "new")):
        data = json.loads((tmp_path / f"{name}.json").read_text(encoding="utf-8"))
        assert data["meta"]["rev"] == rev and data["meta"]["build"] == ("compiled" if td.compiled else "pure")
        cells = {(c["lib"], c["scenario"], c["mode"]): c for c in data["cells"]}
        assert set(cells) == {(lib, "a", mode) for lib in (run.TD, run.EVERY) for mode in ("full", "stream")}
        for c in cells.values():
            assert c["rounds"] == 2 and c["calls"] == 1 and 0 < c["ms"] <= c["median_ms"]
            assert len(c["samples_ms"]) == 2 and min(c["samples_ms"]) == c["ms"]
    _, old = run.least(str(tmp_path / "before.json"), run.BEFORE)
    _, new = run.least(str(tmp_path / "alone.json"), run.ALONE)
    # (the gate is drawn for a format this run measured: its own rows, here the alone ones again)
    rows = old + new + [dict(r, lib=run.TD) for r in new if r["lib"] == run.ALONE[run.TD]]
    (line,) = [g for g in run.gates(rows) if g["gate"].startswith("5 pure · hermes: tooldialect (alone)")]
    before = {(r["scenario"], r["mode"]): r["samples_ms"] for r in old if r["lib"] == run.BEFORE[run.TD]}
    now = {(r["scenario"], r["mode"]): r["samples_ms"] for r in new if r["lib"] == run.ALONE[run.TD]}
    by_round = {k: [a / b for a, b in zip(now[k], before[k])] for k in now}
    assert line["value"] == max(sum(v) / 2 for v in by_round.values())  # (the median of two rounds)


def _in_turn(lib: str, samples: list[float]) -> dict[str, Any]:
    return _row(lib, "b", "full", min(samples)) | {"samples_ms": samples}


def test_a_pure_cell_is_judged_by_the_median_of_its_rounds_ratios_within_same() -> None:
    """Each round's samples were taken seconds apart; a round the machine slowed down for
    slows both trees' samples, and the median of the rounds' ratios sets it aside where the
    least times would not."""
    before, alone = run.BEFORE[run.TD], run.ALONE[run.TD]
    rows = [_row(run.TD, "b", "full", 1.0), _in_turn(before, [10.0, 30.0, 30.0])]
    (line,) = _by_name(run.gates([*rows, _in_turn(alone, [12.0, 31.0, 31.0])]), "5 pure · kimi_k2: tooldialect (alone)")
    assert line["value"] == 31 / 30 and line["holds"] is True  # (least times: 12 / 10)
    assert f"≤ {run.SAME:g}" in line["gate"] and 1 < run.SAME < 1.1
    (line,) = _by_name(run.gates([*rows, _in_turn(alone, [11.0, 33.0, 33.0])]), "5 pure · kimi_k2: tooldialect (alone)")
    assert line["value"] == 1.1 and line["holds"] is False
    # rows without samples (a run.py run of one tree) are compared by their least times
    (line,) = _by_name(run.gates([*rows, _row(alone, "b", "full", 10.0)]), "5 pure · kimi_k2: tooldialect (alone)")
    assert line["value"] == 1.0


def test_with_the_tree_before_measured_twice_a_pure_cell_is_slower_only_if_slower_than_both() -> None:
    before, again, alone = run.BEFORE[run.TD], run.CONTROL[run.TD], run.ALONE[run.TD]
    rows = [_row(run.TD, "b", "full", 1.0), _in_turn(before, [10.0, 10.0, 10.0]), _in_turn(alone, [10.8] * 3)]
    (line,) = _by_name(run.gates(rows), "5 pure · kimi_k2: tooldialect (alone)")
    assert abs(line["value"] - 1.08) < 1e-9 and line["holds"] is False
    assert _by_name(run.gates(rows), "every cell both ways") == []  # no control, no report
    gs = run.gates([*rows, _in_turn(again, [10.5, 10.5, 10.0])])
    (line,) = _by_name(gs, "5 pure · kimi_k2: tooldialect (alone)")
    assert abs(line["value"] - 10.8 / 10.5) < 1e-9 and line["holds"] is True  # (10.8 / 10.5: within SAME)
    (report,) = _by_name(gs, "every cell both ways")
    assert abs(report["value"] - 1.05) < 1e-9 and report["holds"] is None and "kimi_k2 b full" in report["gate"]
    gs = run.gates([*rows, _in_turn(again, [9.0, 9.0, 9.0])])
    (line,) = _by_name(gs, "5 pure · kimi_k2: tooldialect (alone)")
    assert abs(line["value"] - 1.08) < 1e-9 and line["holds"] is False  # slower than both
    (report,) = _by_name(gs, "every cell both ways")
    assert abs(report["value"] - 10 / 9) < 1e-9  # the control faster counts as much as slower
    assert again not in run.libs([*rows, _in_turn(again, [9.0])], "kimi_k2")  # in the gates only
