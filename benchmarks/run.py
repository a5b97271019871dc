"""tooldialect beside vLLM's and SGLang's tool parsers (and openai-harmony), beside its
compiled build, and beside itself before, in one session.

    make bench                  # builds the bench venv if missing; measures BEFORE
                                # tooldialect-only, then the compiled wheel tooldialect-only,
                                # then everything beside them
    benchmarks/setup.sh "$BENCH_VENV" && "$BENCH_VENV"/bin/python benchmarks/run.py [--json out.json]
        [--only hermes,dsml] [--scen a,b,c,e20,e40,e80,d,lt100,lt1m,jsx100,toolset] [--quick]
        [--src DIR] [--rev NAME] [--tooldialect-only] [--before before.json[,…]] [--alone pure.json[,…]]
        [--control again.json[,…]] [--compiled compiled.json] [--paired paired.json]

Prints one table per format (median milliseconds and calls found), the `<`-heavy streams,
the toolset build, and the acceptance gates as ratios. ``--src`` picks the tooldialect
tree to measure (default: this checkout's ``src/``; a directory the compiled wheel was
installed into measures the compiled build); ``--tooldialect-only`` skips the peers (how
``make bench`` measures the old tree and the compiled build); ``--before`` and
``--compiled`` add such a run's cells as ``tooldialect (before)`` and ``tooldialect
(compiled)`` rows, which the gates read; the peer gates read ``--paired``'s cells instead
where it holds them (benchmarks/paired.py: tooldialect and the peers measured in turn).
``--alone`` adds such runs of this checkout's pure build, each made right after a
``--before`` run: the gate "the pure build no slower than before" then compares two
equally light processes (the tables keep the pure rows measured beside the peers);
``--control`` adds the tree before measured again in a process of its own: a pure cell
then counts as slower only if it is slower than both (decision 250). Every cell runs in a
forked child, one after the other; nothing here is a test and nothing asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import stubs
import workloads

# peers.py and toolsets.py import tooldialect: main() imports them once --src is on the path
peers: Any = None
toolsets: Any = None

SCENARIOS = {
    "a": ("1 call + 200 chars", ["full", "stream"]),
    "b": ("20 calls", ["full", "stream"]),
    "c": ("100 KB prose", ["full", "stream"]),
    "e20": ("20 KB, 5 calls", ["stream"]),
    "e40": ("40 KB, 5 calls", ["stream"]),
    "e80": ("80 KB, 5 calls", ["full", "stream"]),
}
#: tooldialect only, every family on, streamed in 4-character deltas (workloads.STRESS)
STRESS = {"lt100": "100 KB of <", "lt1m": "1 MB of <", "jsx100": "100 KB of JSX/HTML"}
DEFAULT_SCENS = "a,b,c,e20,e40,e80,d,lt100,lt1m,jsx100,toolset"
TD, EVERY = "tooldialect", "tooldialect (every family)"
#: what a --before file's rows are called here
BEFORE = {TD: "tooldialect (before)", EVERY: "tooldialect (every family, before)"}
#: what an --alone file's rows are called here: this checkout's pure build, run as the before tree was
ALONE = {TD: "tooldialect (alone)", EVERY: "tooldialect (every family, alone)"}
#: what a --control file's rows are called here: the tree before again, in a process of its own
CONTROL = {TD: "tooldialect (before, again)", EVERY: "tooldialect (every family, before, again)"}
#: how far above 1 a pure cell's now / before may read and still count as no slower: the
#: spread two processes of one tree show against each other (decision 250)
SAME = 1.05
#: what a --compiled file's rows are called here: the same adapters on the mypyc-compiled wheel
COMPILED = {TD: "tooldialect (compiled)", EVERY: "tooldialect (every family, compiled)"}
SLOW = 2.0  # seconds: a cell slower than this is measured once
CAP = 60.0  # seconds: a parser slower than this on a cell is not run on larger ones


def measure(fn: Any, arg: Any, min_time: float = 0.02, samples: int = 5) -> tuple[float, Any]:
    """Median seconds per run: each sample repeats until it takes ``min_time``; slow cells
    get one sample."""
    t0 = time.perf_counter()
    result = fn(arg)
    first = time.perf_counter() - t0
    if first > SLOW:
        return first, result
    reps = max(1, int(min_time / max(first, 1e-6)))
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn(arg)
        times.append((time.perf_counter() - t0) / reps)
    return statistics.median(times), result


TIMEOUT = 150.0  # seconds: a cell still running then is stopped and reported


def isolated(
    fn: Any, arg: Any, samples: int = 5, timeout: float = 0.0, warm: float = 0.0
) -> tuple[float | None, Any, str]:
    """``measure`` in a forked child with a time limit (``timeout`` seconds, else
    ``TIMEOUT``): a parser that backtracks for minutes (SGLang's pythonic regex) is
    reported, not waited for. ``warm``: seconds the child repeats the parse before it
    measures (a forked child runs slower until it has written to the memory it shares
    with its parent: paired.py)."""
    timeout = timeout or TIMEOUT
    import os
    import select
    import signal

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        try:
            until = time.perf_counter() + warm
            while warm and time.perf_counter() < until:
                fn(arg)
            secs, calls = measure(fn, arg, samples=samples)
            msg = json.dumps({"secs": secs, "calls": calls})
        except BaseException as exc:
            msg = json.dumps({"error": f"{type(exc).__name__}: {str(exc)[:80]}"})
        os.write(w, msg.encode())
        os._exit(0)
    os.close(w)
    ready, _, _ = select.select([r], [], [], timeout)
    if not ready:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(r)
        return None, None, f"stopped after {timeout:.0f} s"
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    got = json.loads(data.decode() or '{"error": "child died"}')
    if "error" in got:
        return None, None, got["error"]
    return got["secs"], got["calls"], ""


def whole(ad: Any, text: str) -> Any:
    """What an adapter's ``full`` is given for ``text`` (vLLM's parsers: token ids too)."""
    return ad.prepare_full(text) if hasattr(ad, "prepare_full") else text


def cell_row(fmt: str, lib: str, scen: str, mode: str, w: Any) -> dict[str, Any]:
    """A cell's row before it is measured: what ran on which workload."""
    return {
        "format": fmt,
        "lib": lib,
        "scenario": scen,
        "mode": mode,
        "chars": len(w.text),
        "expected_calls": w.expected_calls,
    }


def warm_up(ad: Any, fmt: str) -> None:
    """Run a small input once in this process, so that lazy set-up (tooldialect compiles a
    grammar on first use) is done before the cells fork, and is never timed."""
    w = workloads.workload("a", fmt)
    try:
        ad.full(whole(ad, w.text))
        ad.stream(ad.prepare(workloads.deltas(w.text, workloads.FORMATS[fmt].specials, 4)))
    except Exception:
        pass


def run_cell(rows: list[dict[str, Any]], row: dict[str, Any], fn: Any, arg: Any, samples: int = 5) -> float | None:
    """One cell in a forked child: recorded in ``rows`` and printed; its seconds, or None
    when the parser broke or was stopped (a finding, shown in the table)."""
    secs, calls, note = isolated(fn, arg, samples=samples)
    if secs is None:
        row.update(ms=None, calls=None, note=note)
        shown = note
    else:
        row.update(ms=secs * 1000, calls=calls)
        shown = f"{secs * 1000:12.3f} ms  calls {calls}/{row['expected_calls']}"
    rows.append(row)
    print(f"  {row['format']:12} {row['lib']:34} {row['scenario']:6} {row['mode']:6} {shown}", flush=True)
    return secs


def format_cells(fmt: str, ad: Any, scens: list[str]) -> Iterator[tuple[dict[str, Any], Any, Any]]:
    """One parser's cells of ``fmt``, each as (row, function, argument): every scenario of
    ``scens`` it has, whole and streamed as the scenario says."""
    spec = workloads.FORMATS[fmt]
    for key in scens:
        if key not in SCENARIOS:
            continue
        w = workloads.workload(key, fmt)
        deltas = workloads.deltas(w.text, spec.specials, w.delta_chars)
        for mode in SCENARIOS[key][1]:
            row = cell_row(fmt, ad.lib, key, mode, w)
            yield (row, ad.full, whole(ad, w.text)) if mode == "full" else (row, ad.stream, ad.prepare(deltas))


def loop_cells(ad: Any) -> Iterator[tuple[dict[str, Any], Any, Any]]:
    """DESIGN §9's 244 KB DSML repetition loop, batch and in 7-character deltas, and half
    of it, to show growth: one parser's cells, as ``format_cells`` gives them."""
    for n in (75, 150):
        w = workloads.dsml_loop(n)
        deltas = workloads.deltas(w.text, workloads.FORMATS["dsml"].specials, w.delta_chars)
        yield cell_row("dsml", ad.lib, w.key, "full", w), ad.full, w.text
        yield cell_row("dsml", ad.lib, w.key, "stream", w), ad.stream, ad.prepare(deltas)


def stress_cells(scens: list[str], ad: Any) -> Iterator[tuple[dict[str, Any], Any, Any]]:
    """The `<`-heavy streams of ``scens``, read by ``ad`` (``every_family``: no family is
    given, so every marker that begins with `<` is a candidate), 4-character deltas; no
    peer runs them."""
    for key in [k for k in scens if k in STRESS]:
        w = workloads.stress(key)
        yield cell_row("prose", ad.lib, key, "stream", w), ad.stream, workloads.deltas(w.text, (), w.delta_chars)


def toolset_cells() -> Iterator[tuple[dict[str, Any], Any, Any]]:
    """``Toolset.from_openai`` on benchmarks/toolsets.py's 50 tools: with every cache cleared
    (the first request with these tools) and from a fresh copy (a later request's body)."""
    tools = toolsets.catalogue(50)
    for mode, fn in (("first", toolsets.cold), ("copy", toolsets.fresh)):
        row = {"format": "toolset", "lib": TD, "scenario": "toolset", "mode": mode, "chars": 0}
        yield row | {"expected_calls": len(tools)}, fn, tools


def run_format(fmt: str, scens: list[str], venv: Path, rows: list[dict[str, Any]], with_peers: bool) -> None:
    for ad in peers.adapters(fmt, venv, peers=with_peers):
        warm_up(ad, fmt)
        too_slow = False
        for row, fn, arg in format_cells(fmt, ad, scens):
            if too_slow and row["scenario"].startswith("e"):
                row.update(ms=None, calls=None, note=f"skipped: over {CAP:.0f} s on a smaller input")
                rows.append(row)
                continue
            secs = run_cell(rows, row, fn, arg)
            if secs is None or secs > CAP:
                too_slow = True


def run_loop(venv: Path, rows: list[dict[str, Any]], quick: bool, with_peers: bool) -> None:
    """The DSML loop's cells (``loop_cells``), three samples each."""
    for ad in peers.adapters("dsml", venv, peers=with_peers):
        warm_up(ad, "dsml")
        for row, fn, arg in loop_cells(ad):
            peer_stream = not ad.lib.startswith("tooldialect") and row["mode"] == "stream"
            if peer_stream and (quick or ("sglang" in ad.lib and row["scenario"] != "d75")):
                # SGLang streams this input quadratically: over 300 s at 244 KB
                row.update(ms=None, calls=None, note="not run (minutes; quadratic)")
                rows.append(row)
                continue
            run_cell(rows, row, fn, arg, samples=3)


def run_stress(scens: list[str], rows: list[dict[str, Any]]) -> None:
    """The `<`-heavy streams (``stress_cells``)."""
    if not any(k in STRESS for k in scens):
        return
    ad = peers.Tooldialect("hermes", every_family=True)  # the format only names a family it ignores
    warm_up(ad, "hermes")
    for row, fn, arg in stress_cells(scens, ad):
        run_cell(rows, row, fn, arg)


def run_toolset(rows: list[dict[str, Any]]) -> None:
    """The toolset's cells (``toolset_cells``)."""
    for row, fn, arg in toolset_cells():
        run_cell(rows, row, fn, arg)


# -- reporting ------------------------------------------------------------------------------------------


def cell(rows: list[dict[str, Any]], fmt: str, lib: str, scen: str, mode: str) -> dict[str, Any] | None:
    return next((r for r in rows if (r["format"], r["lib"], r["scenario"], r["mode"]) == (fmt, lib, scen, mode)), None)


def ms(rows: list[dict[str, Any]], fmt: str, lib: str, scen: str, mode: str) -> float | None:
    r = cell(rows, fmt, lib, scen, mode)
    return r["ms"] if r else None


def libs(rows: list[dict[str, Any]], fmt: str) -> list[str]:
    """The parsers of a format in its table: tooldialect's rows first (compiled, pure,
    before), then the peers in the order they ran (the ``--alone`` rows only in the gates)."""
    order = [*COMPILED.values(), TD, EVERY, *BEFORE.values()]
    hidden = {*ALONE.values(), *CONTROL.values()}
    found = dict.fromkeys(r["lib"] for r in rows if r["format"] == fmt and r["lib"] not in hidden)
    return sorted(found, key=lambda lib: order.index(lib) if lib in order else len(order))


def shown(r: dict[str, Any] | None, digits: int = 3) -> str:
    if r is None:
        return ""
    if r["ms"] is None:
        return r.get("note") or "—"
    mark = "" if r["calls"] == r["expected_calls"] else f" ({r['calls']}/{r['expected_calls']} calls)"
    return f"{r['ms']:.{digits}g}{mark}"


def grid(
    rows: list[dict[str, Any]], fmt: str, cols: list[tuple[str, str]], head: list[str], digits: int = 3
) -> list[str]:
    out = ["| parser | " + " | ".join(head) + " |", "| --- |" + " ---: |" * len(cols)]
    for lib in libs(rows, fmt):
        out.append(f"| {lib} | " + " | ".join(shown(cell(rows, fmt, lib, k, m), digits) for k, m in cols) + " |")
    return out


def table(rows: list[dict[str, Any]]) -> str:
    ran = {(r["scenario"], r["mode"]) for r in rows}
    cols = [(k, m) for k in SCENARIOS for m in SCENARIOS[k][1] if (k, m) in ran]
    out = []
    for fmt in dict.fromkeys(
        r["format"] for r in rows if r["format"] in workloads.FORMATS and r["scenario"] in SCENARIOS
    ):
        out.append(f"\n### {fmt}\n")
        out += grid(rows, fmt, cols, [f"{k} {m}" for k, m in cols])
    if any(r["scenario"].startswith("d") for r in rows):
        out.append("\n### DSML repetition loop (DESIGN §9), ms\n")
        cols = [(k, m) for k in ("d75", "d150") for m in ("full", "stream")]
        out += grid(
            [r for r in rows if r["scenario"].startswith("d")],
            "dsml",
            cols,
            ["d75 full", "d75 stream (7)", "d150 full", "d150 stream (7)"],
            digits=4,
        )
    if any(r["format"] == "prose" for r in rows):
        out.append("\n### `<`-heavy streams, every family on, 4-character deltas, ms\n")
        keys = [k for k in STRESS if any(r["scenario"] == k for r in rows)]
        out += grid(rows, "prose", [(k, "stream") for k in keys], [f"{k} ({STRESS[k]})" for k in keys])
    if any(r["format"] == "toolset" for r in rows):
        out.append("\n### Toolset.from_openai, 50 tools (benchmarks/toolsets.py), ms\n")
        out += grid(
            rows,
            "toolset",
            [("toolset", "first"), ("toolset", "copy")],
            ["first time (caches cleared)", "fresh copy (the copy included)"],
        )
    return "\n".join(out)


def paired_table(paired: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    """The paired cells (paired.py): least and median ms of the rounds, per format."""
    out = [f"\n### The peer gates' cells in pairs ({meta.get('rounds', '?')} rounds), least / median ms\n"]
    cols = [("a", "full"), ("a", "stream"), ("b", "full"), ("b", "stream")]
    for fmt in dict.fromkeys(r["format"] for r in paired):
        out += [f"\n#### {fmt}\n", "| parser | " + " | ".join(f"{k} {m}" for k, m in cols) + " |"]
        out.append("| --- |" + " ---: |" * len(cols))
        for lib in dict.fromkeys(r["lib"] for r in paired if r["format"] == fmt):
            cells = [cell(paired, fmt, lib, k, m) for k, m in cols]
            texts = [
                "" if c is None else shown(c) + ("" if c["ms"] is None else f" / {c['median_ms']:.3g}") for c in cells
            ]
            out.append(f"| {lib} | " + " | ".join(texts) + " |")
    return "\n".join(out)


# -- gates ----------------------------------------------------------------------------------------------


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or a == 0 else b / a


def is_peer(lib: str) -> bool:
    """A text-level peer: not tooldialect, not openai-harmony (which reads token ids)."""
    return not lib.startswith("tooldialect") and not lib.startswith("openai-harmony")


def complete(r: dict[str, Any] | None) -> bool:
    """The cell ran and returned every call written."""
    return r is not None and r["ms"] is not None and r["calls"] == r["expected_calls"]


def timed(r: dict[str, Any] | None) -> tuple[float | None, str]:
    """A cell's ms; a cell stopped at the time limit took longer than it: ``(limit, ">")``."""
    if r is None:
        return None, ""
    if r["ms"] is None and (r.get("note") or "").startswith("stopped after"):
        return TIMEOUT * 1000, ">"
    return r["ms"], ""


def gate(
    name: str,
    value: float | None,
    limit: float | None = None,
    at_most: bool = True,
    bound: str = "",
    own: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One line of the gate table: ``value`` against ``limit`` (None: report only). A value
    that is a bound (``>`` or ``<``) decides only when the limit lies on its far side; a
    tooldialect cell (``own``) that missed a call never holds."""
    if limit is None or value is None:
        holds = None
    else:
        ok = value <= limit if at_most else value >= limit
        if not bound:
            holds = ok
        elif ok:
            holds = True if bound == ("<" if at_most else ">") else None
        else:
            holds = False if bound == (">" if at_most else "<") else None
    if own is not None and own["ms"] is not None and not complete(own):
        name += f" (tooldialect found {own['calls']}/{own['expected_calls']} calls)"
        holds = False if limit is not None else None
    return {"gate": name, "value": value, "bound": bound, "limit": limit, "holds": holds}


def vs_peer(
    rows: list[dict[str, Any]],
    group: str,
    fmt: str,
    lib: str,
    scen: str,
    mode: str,
    limit: float | None,
    paired: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """tooldialect's time over the fastest text-level peer's that returned every call (a
    report when ``limit`` is None). With ``paired`` rows (``--paired``) that hold the cell,
    both times come from them (paired.py measured them in turn)."""
    if paired and cell(paired, fmt, lib, scen, mode) is not None:
        line = vs_peer(paired, group, fmt, lib, scen, mode, limit)
        return line | {"gate": line["gate"].replace(f"{scen} {mode}:", f"{scen} {mode}, in pairs:", 1)}
    own = cell(rows, fmt, lib, scen, mode)
    best = min(
        (
            r
            for r in rows
            if (r["format"], r["scenario"], r["mode"]) == (fmt, scen, mode) and is_peer(r["lib"]) and complete(r)
        ),
        key=lambda r: r["ms"],
        default=None,
    )
    peer = best["lib"] if best else "none returned every call"
    return gate(
        f"{group} {fmt} {scen} {mode}: {lib} / fastest peer ({peer})" + ("" if limit is None else f" ≤ {limit:g}"),
        ratio(best["ms"] if best else None, own["ms"] if own else None),
        limit,
        own=own,
    )


def in_turn_ratio(now: dict[str, Any], old: dict[str, Any] | None) -> tuple[float | None, str]:
    """now / old for one cell, and whether it is a bound (``>``/``<``). Where both rows hold
    the samples trees.py took in turn (each round's pair seconds apart, so a machine that
    slows down for a while slows both alike), the median of the rounds' ratios; else the
    ratio of the least times."""
    a, b = now.get("samples_ms"), (old or {}).get("samples_ms")
    if a and b and len(a) == len(b):
        return statistics.median(x / y for x, y in zip(a, b)), ""
    (t_now, b_now), (t_old, b_old) = timed(now), timed(old)
    return ratio(t_old, t_now), b_now or {">": "<", "<": ">", "": ""}[b_old]


def vs_before(rows: list[dict[str, Any]], fmt: str, lib: str) -> dict[str, Any]:
    """The pure build against the tree before (``--before``): the largest now / before over
    every cell both ran for ``fmt`` (``in_turn_ratio``), naming that cell; at most ``SAME``
    holds. Where the run measured the tree before twice (``--control``), a cell's ratio is
    the smaller of the two: a cell is slower only if it is slower than both. The pure
    build's cells are its ``--alone`` runs' where there are any (as light a process as the
    before tree's), else those measured beside the peers."""
    worst: tuple[float, str, str] | None = None
    now = ALONE[lib] if any(r["lib"] == ALONE[lib] and r["format"] == fmt for r in rows) else lib
    for r in rows:
        if (r["format"], r["lib"]) != (fmt, now):
            continue
        olds = [cell(rows, fmt, name[lib], r["scenario"], r["mode"]) for name in (BEFORE, CONTROL)]
        known = [(v, b) for v, b in (in_turn_ratio(r, old) for old in olds if old is not None) if v is not None]
        if not known:
            continue
        value, bound = min(known)
        if worst is None or value > worst[0]:
            worst = (value, f"{r['scenario']} {r['mode']}", bound)
    name = f"5 pure · {fmt}: {now} / {BEFORE[lib]}, every cell ≤ {SAME:g}"
    if worst is None:
        return gate(name, None, SAME)
    value, where, bound = worst
    return gate(f"{name} (largest: {where})", value, SAME, bound=bound)


def same_tree(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The tree before against itself (``--control``: a second process of it, measured in
    turn with the first), every cell both ways, reported: how far apart two processes of
    one tree read in this run, which the pure lines' ``SAME`` stands for."""
    worst: tuple[float, str] | None = None
    for r in rows:
        lib = next((k for k, v in CONTROL.items() if v == r["lib"]), None)
        if lib is None:
            continue
        value, _ = in_turn_ratio(r, cell(rows, r["format"], BEFORE[lib], r["scenario"], r["mode"]))
        if value:
            value = max(value, 1 / value)
            if worst is None or value > worst[0]:
                every = " (every family)" if lib == EVERY else ""
                worst = (value, f"{r['format']} {r['scenario']} {r['mode']}{every}")
    if worst is None:
        return None
    line = f"report · 5 pure · {CONTROL[TD]} / {BEFORE[TD]}, every cell both ways (largest: {worst[1]})"
    return gate(line, worst[0])


def least(files: str, names: dict[str, str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The rows of one or more ``--json`` files (comma-separated) of tooldialect-only runs,
    renamed by ``names``, each cell's least time over the files (a time is noise added to
    the work; the least is the closest to the work), and the first file's header."""
    best: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    meta: dict[str, Any] = {}
    for i, name in enumerate(f for f in files.split(",") if f):
        data = json.loads(Path(name).read_text(encoding="utf-8"))
        if i == 0:
            meta = dict(data.get("meta", {}), runs=len([f for f in files.split(",") if f]))
        for r in data["cells"]:
            if r["lib"] not in names:
                continue
            key = (r["format"], names[r["lib"]], r["scenario"], r["mode"])
            old = best.get(key)
            if old is None or (r["ms"] is not None and (old["ms"] is None or r["ms"] < old["ms"])):
                best[key] = dict(r, lib=names[r["lib"]])
    return meta, list(best.values())


def gates(rows: list[dict[str, Any]], paired: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The acceptance lines of the typed, compiled engine, as measured ratios
    (docs/benchmarks.md, Method), then the older lines as reports. The peer gates read the
    compiled build's rows when the run has them (``--compiled``); the pure build's rows are
    then reports beside them. ``paired`` rows (``--paired``) decide the peer gates of the
    cells they hold; the same ratios from the separate runs follow as reports."""
    out: list[dict[str, Any]] = []
    apart: list[dict[str, Any]] = []
    fmts = [f for f in workloads.FORMATS if any(r["format"] == f for r in rows)]
    with_peers = [f for f in fmts if any(is_peer(lib) for lib in libs(rows, f))]

    def ran(fmt: str, scen: str, mode: str, lib: str = TD) -> bool:
        return cell(rows, fmt, lib, scen, mode) is not None

    def peer_line(group: str, fmt: str, lib: str, scen: str, mode: str, limit: float | None) -> None:
        """The gate line; where it was read in pairs, the separate runs' ratio as a report."""
        out.append(vs_peer(rows, group, fmt, lib, scen, mode, limit, paired))
        if paired and cell(paired, fmt, lib, scen, mode) is not None:
            apart.append(vs_peer(rows, "report · separate runs ·", fmt, lib, scen, mode, None))

    compiled = any(r["lib"] in COMPILED.values() for r in rows)
    builds = [(COMPILED[TD], COMPILED[EVERY], True), (TD, EVERY, not compiled)] if compiled else [(TD, EVERY, True)]
    for one, every, gated in builds:

        def limit(value: float, gated: bool = gated) -> float | None:
            return value if gated else None

        # 1. batch, toolset given: at most 2x / 3x the fastest complete peer (every family on: 3x / 4x)
        for fmt in with_peers:
            for lib, limits in ((one, {"b": 2, "a": 3}), (every, {"b": 3, "a": 4})):
                for k in ("b", "a"):
                    if ran(fmt, k, "full", lib):
                        peer_line("1 batch ·", fmt, lib, k, "full", limit(limits[k]))
        # 2. streaming in 4-character deltas: no slower than the fastest peer; linear growth
        for fmt in with_peers:
            for k in ("a", "b"):
                if ran(fmt, k, "stream", one):
                    peer_line("2 stream ·", fmt, one, k, "stream", limit(1))
        for fmt in fmts:
            for lib in (one, every):
                # the pure build's growth from its --alone rows where there are any (trees.py
                # measured them in turn with the tree before), else from this run's
                beside = ALONE.get(lib, "")
                if ran(fmt, "e80", "stream", beside) and ran(fmt, "e20", "stream", beside):
                    lib = beside
                if ran(fmt, "e80", "stream", lib) and ran(fmt, "e20", "stream", lib):
                    g = ratio(ms(rows, fmt, lib, "e20", "stream"), ms(rows, fmt, lib, "e80", "stream"))
                    out.append(gate(f"2 stream · {fmt}: {lib} e80 / e20 ≤ 4.5 (linear is 4)", g, 4.5))
    # 3. `<`-heavy streams, every family on: linear
    for lib in (COMPILED[EVERY], EVERY):
        if ran("prose", "lt1m", "stream", lib) and ran("prose", "lt100", "stream", lib):
            g = ratio(ms(rows, "prose", lib, "lt100", "stream"), ms(rows, "prose", lib, "lt1m", "stream"))
            out.append(gate(f"3 prose · {lib} lt1m / lt100 (linear is 10)", g))
    # 4. building a toolset
    if ran("toolset", "toolset", "first"):
        out.append(
            gate(
                "4 toolset · from_openai, 50 tools, caches cleared: ms ≤ 10",
                ms(rows, "toolset", TD, "toolset", "first"),
                10,
            )
        )
        out.append(
            gate("4 toolset · from_openai, 50 tools, fresh copy: ms", ms(rows, "toolset", TD, "toolset", "copy"))
        )
    # 5. the pure build no slower than the tree before, on any cell (within SAME)
    for fmt in [*fmts, "prose", "toolset"]:
        for lib in (TD, EVERY):
            if any(r["lib"] == BEFORE[lib] and r["format"] == fmt for r in rows) and any(
                r["lib"] == lib and r["format"] == fmt for r in rows
            ):
                out.append(vs_before(rows, fmt, lib))
    resolution = same_tree(rows)
    if resolution is not None:
        out.append(resolution)
    # the compiled build beside the pure one (its alone rows where there are any: measured
    # in turn with the compiled build's)
    if compiled:
        for fmt in fmts:
            for k, m in (("a", "full"), ("b", "full"), ("b", "stream"), ("e80", "stream")):
                pure = ms(rows, fmt, ALONE[TD], k, m) or ms(rows, fmt, TD, k, m)
                comp = ms(rows, fmt, COMPILED[TD], k, m)
                if pure is not None and comp is not None:
                    out.append(gate(f"report · {fmt} {k} {m}: pure / compiled", ratio(comp, pure)))
    return out + apart + reports(rows)


def reports(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Lines of earlier issues, kept as figures: the streaming issue's Hermes 50x, the
    Rust openai-harmony, the DSML loop."""
    out: list[dict[str, Any]] = []
    t80 = ms(rows, "hermes", TD, "e80", "stream")
    for lib in [lib for lib in libs(rows, "hermes") if is_peer(lib)]:
        r = cell(rows, "hermes", lib, "e80", "stream")
        if t80 is not None and r is not None:
            out.append(gate(f"report · hermes e80 stream: {lib} / tooldialect (was ≥ 50)", ratio(t80, r["ms"])))
    h = ms(rows, "harmony", "openai-harmony (token ids)", "e80", "stream")
    if h is not None:
        out.append(
            gate(
                "report · harmony e80 stream: tooldialect / openai-harmony",
                ratio(h, ms(rows, "harmony", TD, "e80", "stream")),
            )
        )
    sg = ms(rows, "dsml", "sglang DeepSeekV4Detector", "d150", "full")
    tdl = ms(rows, "dsml", TD, "d150", "full")
    if sg is not None and tdl is not None:
        out.append(gate("report · dsml loop d150 full: SGLang / tooldialect (was ≥ 10)", ratio(tdl, sg)))
    s150 = ms(rows, "dsml", TD, "d150", "stream")
    if s150 is not None:
        out.append(
            gate(
                "report · dsml loop stream (7-char deltas): tooldialect d150 / d75 (linear is 2)",
                ratio(ms(rows, "dsml", TD, "d75", "stream"), s150),
            )
        )
    return out


def gate_table(gs: list[dict[str, Any]]) -> str:
    out = ["| gate | ratio | holds |", "| --- | ---: | --- |"]
    for g in gs:
        val = "—" if g["value"] is None else f"{g.get('bound', '')}{g['value']:.3g}"
        if g["value"] is None:
            holds = "not measured"
        elif g["holds"] is None:
            holds = "report" if g.get("limit") is None else "undecided (a cell was stopped)"
        else:
            holds = "yes" if g["holds"] else "**no**"
        out.append(f"| {g['gate']} | {val} | {holds} |")
    return "\n".join(out)


# -- the session ----------------------------------------------------------------------------------------


def load(src: Path, with_peers: bool = True) -> Any:
    """Import tooldialect from ``src`` first, then peers.py and toolsets.py (which leave an
    imported tooldialect alone); refuse a package that did not come from ``src``.
    ``with_peers=False``: tooldialect's adapters only (no peer is stubbed or imported)."""
    global peers, toolsets
    if with_peers:
        stubs.install_sglang()  # before anything imports a peer (importing run.py alone stubs nothing)
        stubs.install_vllm()
    src = src.resolve()
    sys.path.insert(0, str(src))
    import tooldialect

    if not Path(tooldialect.__file__).resolve().is_relative_to(src):
        sys.exit(f"tooldialect imported from {tooldialect.__file__}, not from --src {src}")
    import peers as _peers
    import toolsets as _toolsets

    peers, toolsets = _peers, _toolsets
    return tooldialect


def revision(src: Path, given: str) -> str:
    """``--rev``, else the checkout's commit (and whether src/ or grammars/ differ from it)."""
    if given:
        return given
    try:
        git = ["git", "-C", str(src)]
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--", "../src", "../grammars"], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head.stdout.strip() + (" + uncommitted changes" if dirty.stdout.strip() else "")


def header(meta: dict[str, Any], before: dict[str, Any] | None) -> str:
    lines = [
        f"# tooldialect from {meta['tooldialect']} (rev {meta['rev']}, {meta.get('build', 'pure')} build)",
        f"# Python {meta['python']} on {meta['machine']}, {meta['cpus']} CPUs, load average {meta['load']}",
    ]
    if before is not None:
        lines.append(
            f"# before: tooldialect from {before.get('tooldialect')} (rev {before.get('rev')}), "
            f"measured {before.get('when')}"
        )
    compiled = meta.get("compiled")
    if compiled is not None:
        lines.append(
            f"# compiled: tooldialect from {compiled.get('tooldialect')} (rev {compiled.get('rev')}), "
            f"measured {compiled.get('when')}"
        )
    paired = meta.get("paired")
    if paired is not None:
        lines.append(
            f"# in pairs: tooldialect from {paired.get('tooldialect')} ({paired.get('build')} build) in turn "
            f"with the peers, {paired.get('rounds')} rounds, measured {paired.get('when')}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="comma-separated formats (default: all)")
    ap.add_argument("--scen", default=DEFAULT_SCENS, help=f"comma-separated scenarios (default: {DEFAULT_SCENS})")
    ap.add_argument("--json", default="", help="write every cell and gate to this file")
    ap.add_argument("--quick", action="store_true", help="skip peers' quadratic streaming of the DSML loop")
    ap.add_argument("--venv", default=sys.prefix, help="the bench venv (for openai-harmony's vocabulary)")
    ap.add_argument(
        "--src",
        default=str(HERE.parent / "src"),
        help="the tree tooldialect is imported from (default: this checkout's src/)",
    )
    ap.add_argument("--rev", default="", help="what --src is, for the header (default: its git commit)")
    ap.add_argument("--tooldialect-only", action="store_true", help="run tooldialect's rows only, no peer")
    ap.add_argument(
        "--before",
        default="",
        help="--json files (comma-separated) of runs on the old tree: their tooldialect rows "
        "(each cell's least time) join the tables as '(before)' and the 'vs before' gates read them",
    )
    ap.add_argument(
        "--alone",
        default="",
        help="--json files (comma-separated) of --tooldialect-only runs of this checkout, each "
        "made beside a --before run: the 'vs before' gates read them",
    )
    ap.add_argument(
        "--control",
        default="",
        help="--json files (comma-separated) of the tree before measured again, in a process of its "
        "own, in turn with --before: the 'vs before' gates count a cell slower only if slower than both",
    )
    ap.add_argument(
        "--compiled",
        default="",
        help="--json files (comma-separated) of --tooldialect-only runs on the compiled wheel: "
        "their rows (each cell's least time) join the tables as '(compiled)' and the peer gates read them",
    )
    ap.add_argument(
        "--paired",
        default="",
        help="a paired.py --json file: its rows (the peer gates' cells, measured in turn with the "
        "peers) decide those gates; the separate runs' ratios become reports",
    )
    args = ap.parse_args(argv)
    td = load(Path(args.src))
    fmts = [f for f in args.only.split(",") if f] or list(workloads.FORMATS)
    scens = [s for s in args.scen.split(",") if s]
    venv = Path(args.venv)
    meta = {
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "tooldialect": td.__file__,
        "rev": revision(Path(args.src), args.rev),
        # (an older tree has a module named compiled: only True is the compiled build)
        "build": "compiled" if getattr(td, "compiled", False) is True else "pure",
    }
    before_meta, before_rows, alone_rows, control_rows = None, [], [], []
    if args.before:
        before_meta, before_rows = least(args.before, BEFORE)
        meta["before"] = before_meta
    if args.alone:
        meta["alone"], alone_rows = least(args.alone, ALONE)
    if args.control:
        meta["control"], control_rows = least(args.control, CONTROL)
    compiled_rows = []
    if args.compiled:
        for name in (f for f in args.compiled.split(",") if f):
            if json.loads(Path(name).read_text(encoding="utf-8")).get("meta", {}).get("build") != "compiled":
                sys.exit(f"--compiled {name}: that run imported a pure tooldialect, not the compiled wheel")
        meta["compiled"], compiled_rows = least(args.compiled, COMPILED)
    paired: list[dict[str, Any]] = []
    if args.paired:
        data = json.loads(Path(args.paired).read_text(encoding="utf-8"))
        meta["paired"], paired = data.get("meta", {}), data["cells"]
    print(header(meta, before_meta), flush=True)
    with_peers = not args.tooldialect_only
    rows: list[dict[str, Any]] = []
    for fmt in fmts:
        run_format(fmt, scens, venv, rows, with_peers)
    if "d" in scens and (not args.only or "dsml" in fmts):
        run_loop(venv, rows, args.quick, with_peers)
    run_stress(scens, rows)
    if "toolset" in scens:
        run_toolset(rows)
    rows += compiled_rows + before_rows + alone_rows + control_rows
    print(table(rows))
    if paired:
        print(paired_table(paired, meta["paired"]))
    gs = [] if args.tooldialect_only else gates(rows, paired)
    if gs:
        print("\n### Acceptance gates\n")
        print(gate_table(gs))
    if args.json:
        out = {"meta": meta, "cells": rows, "gates": gs} | ({"paired": paired} if paired else {})
        Path(args.json).write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
