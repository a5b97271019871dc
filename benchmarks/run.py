"""tooldialect beside vLLM's and SGLang's tool parsers (and openai-harmony), in one process.

    make bench                                   # builds the bench venv if missing, runs everything
    benchmarks/setup.sh && /work/benchvenv/bin/python benchmarks/run.py [--json out.json]
        [--only hermes,dsml] [--scen a,b,c,e20,e40,e80,d] [--quick]

Prints one table per format (median milliseconds and calls found) and the acceptance
gates of the streaming issue as ratios. Every cell runs in this process, one after the
other; nothing here is a test and nothing asserts a time.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import stubs  # noqa: E402  (before anything imports sglang or vllm)

stubs.install_sglang()
stubs.install_vllm()

import peers  # noqa: E402
import workloads  # noqa: E402

SCENARIOS = {
    "a": ("1 call + 200 chars", ["full", "stream"]),
    "b": ("20 calls", ["full", "stream"]),
    "c": ("100 KB prose", ["full", "stream"]),
    "e20": ("20 KB, 5 calls", ["stream"]),
    "e40": ("40 KB, 5 calls", ["stream"]),
    "e80": ("80 KB, 5 calls", ["full", "stream"]),
}
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


def isolated(fn: Any, arg: Any, samples: int = 5) -> tuple[float | None, Any, str]:
    """``measure`` in a forked child with a time limit: a parser that backtracks for
    minutes (SGLang's pythonic regex) is reported, not waited for."""
    import os
    import select
    import signal

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        try:
            secs, calls = measure(fn, arg, samples=samples)
            msg = json.dumps({"secs": secs, "calls": calls})
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            msg = json.dumps({"error": f"{type(exc).__name__}: {str(exc)[:80]}"})
        os.write(w, msg.encode())
        os._exit(0)
    os.close(w)
    ready, _, _ = select.select([r], [], [], TIMEOUT)
    if not ready:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(r)
        return None, None, f"stopped after {TIMEOUT:.0f} s"
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    got = json.loads(data.decode() or '{"error": "child died"}')
    if "error" in got:
        return None, None, got["error"]
    return got["secs"], got["calls"], ""


def warm_up(ad: Any, fmt: str) -> None:
    """Run a small input once in this process, so that lazy set-up (tooldialect compiles a
    grammar on first use) is done before the cells fork, and is never timed."""
    w = workloads.workload("a", fmt)
    try:
        ad.full(ad.prepare_full(w.text) if hasattr(ad, "prepare_full") else w.text)
        ad.stream(ad.prepare(workloads.deltas(w.text, workloads.FORMATS[fmt].specials, 4)))
    except Exception:  # noqa: BLE001 - the cells report it
        pass


def run_format(fmt: str, scens: list[str], venv: Path, rows: list[dict[str, Any]]) -> None:
    spec = workloads.FORMATS[fmt]
    for ad in peers.adapters(fmt, venv):
        warm_up(ad, fmt)
        too_slow = False
        for key in scens:
            if key not in SCENARIOS:
                continue
            w = workloads.workload(key, fmt)
            deltas = workloads.deltas(w.text, spec.specials, w.delta_chars)
            for mode in SCENARIOS[key][1]:
                row = {"format": fmt, "lib": ad.lib, "scenario": key, "mode": mode, "chars": len(w.text),
                       "expected_calls": w.expected_calls}
                if too_slow and key.startswith("e"):
                    row.update(ms=None, calls=None, note=f"skipped: over {CAP:.0f} s on a smaller input")
                    rows.append(row)
                    continue
                if mode == "full":
                    arg = ad.prepare_full(w.text) if hasattr(ad, "prepare_full") else w.text
                    secs, calls, note = isolated(ad.full, arg)
                else:
                    secs, calls, note = isolated(ad.stream, ad.prepare(deltas))
                if secs is None:  # a peer that breaks or hangs on an input is a finding
                    row.update(ms=None, calls=None, note=note)
                    rows.append(row)
                    print(f"  {fmt:12} {ad.lib:34} {key:4} {mode:6} {note}", flush=True)
                    too_slow = True
                    continue
                row.update(ms=secs * 1000, calls=calls)
                rows.append(row)
                print(f"  {fmt:12} {ad.lib:34} {key:4} {mode:6} {secs * 1000:12.3f} ms  calls {calls}/{w.expected_calls}",
                      flush=True)
                if secs > CAP:
                    too_slow = True


def run_loop(venv: Path, rows: list[dict[str, Any]], quick: bool) -> None:
    """DESIGN §9's 244 KB DSML repetition loop, batch and in 7-character deltas, and half
    of it, to show growth."""
    sizes = [75, 150]
    for ad in peers.adapters("dsml", venv):
        warm_up(ad, "dsml")
        for n in sizes:
            w = workloads.dsml_loop(n)
            deltas = workloads.deltas(w.text, workloads.FORMATS["dsml"].specials, 7)
            modes = ["full", "stream"]
            for mode in modes:
                row = {"format": "dsml", "lib": ad.lib, "scenario": f"d{n}", "mode": mode, "chars": len(w.text),
                       "expected_calls": 0}
                peer_stream = not ad.lib.startswith("tooldialect") and mode == "stream"
                if peer_stream and (quick or ("sglang" in ad.lib and n > 75)):
                    # SGLang streams this input quadratically: over 300 s at 244 KB
                    row.update(ms=None, calls=None, note="not run (minutes; quadratic)")
                    rows.append(row)
                    continue
                if mode == "full":
                    secs, calls, note = isolated(ad.full, w.text, samples=3)
                else:
                    secs, calls, note = isolated(ad.stream, ad.prepare(deltas), samples=3)
                if secs is None:
                    row.update(ms=None, calls=None, note=note)
                    rows.append(row)
                    continue
                row.update(ms=secs * 1000, calls=calls)
                rows.append(row)
                print(f"  {'dsml loop':12} {ad.lib:34} d{n:<3} {mode:6} {secs * 1000:12.3f} ms", flush=True)


# -- reporting ------------------------------------------------------------------------------------------


def cell(rows: list[dict[str, Any]], fmt: str, lib: str, scen: str, mode: str) -> dict[str, Any] | None:
    return next((r for r in rows if (r["format"], r["lib"], r["scenario"], r["mode"]) == (fmt, lib, scen, mode)), None)


def ms(rows: list[dict[str, Any]], fmt: str, lib: str, scen: str, mode: str) -> float | None:
    r = cell(rows, fmt, lib, scen, mode)
    return r["ms"] if r else None


def table(rows: list[dict[str, Any]]) -> str:
    cols = [(k, m) for k in SCENARIOS for m in SCENARIOS[k][1]]
    out = []
    for fmt in dict.fromkeys(r["format"] for r in rows if not r["scenario"].startswith("d")):
        out.append(f"\n### {fmt}\n")
        out.append("| parser | " + " | ".join(f"{k} {m}" for k, m in cols) + " |")
        out.append("| --- |" + " ---: |" * len(cols))
        for lib in dict.fromkeys(r["lib"] for r in rows if r["format"] == fmt):
            cells = []
            for k, m in cols:
                r = cell(rows, fmt, lib, k, m)
                if r is None:
                    cells.append("")
                elif r["ms"] is None:
                    cells.append(r.get("note") or "—")
                else:
                    mark = "" if r["calls"] == r["expected_calls"] else f" ({r['calls']}/{r['expected_calls']} calls)"
                    cells.append(f"{r['ms']:.3g}{mark}")
            out.append(f"| {lib} | " + " | ".join(cells) + " |")
    loop = [r for r in rows if r["scenario"].startswith("d")]
    if loop:
        out.append("\n### DSML repetition loop (DESIGN §9), ms\n")
        out.append("| parser | d75 full | d75 stream (7) | d150 full | d150 stream (7) |")
        out.append("| --- | ---: | ---: | ---: | ---: |")
        for lib in dict.fromkeys(r["lib"] for r in loop):
            cells = []
            for k in ("d75", "d150"):
                for m in ("full", "stream"):
                    r = cell(rows, "dsml", lib, k, m)
                    cells.append("" if r is None else (r.get("note") or "—") if r["ms"] is None else f"{r['ms']:.4g}")
            out.append(f"| {lib} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or a == 0 else b / a


def gates(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The acceptance lines of the streaming issue, as measured ratios."""
    out: list[dict[str, Any]] = []
    td = "tooldialect"
    peers_of = lambda fmt: [  # noqa: E731
        lib for lib in dict.fromkeys(r["lib"] for r in rows if r["format"] == fmt)
        if not lib.startswith("tooldialect") and not lib.startswith("openai-harmony")
    ]
    # 1. Hermes e80 streaming: >= 50x faster than each vLLM / SGLang Hermes parser; linear
    t80 = ms(rows, "hermes", td, "e80", "stream")
    for lib in peers_of("hermes"):
        r = ratio(t80, ms(rows, "hermes", lib, "e80", "stream"))
        out.append({"gate": f"hermes e80 stream: {lib} / tooldialect >= 50", "value": r, "holds": r is not None and r >= 50})
    t20 = ms(rows, "hermes", td, "e20", "stream")
    g = ratio(t20, t80)
    out.append({"gate": "hermes stream: tooldialect e80 / e20 <= 4.5", "value": g, "holds": g is not None and g <= 4.5})
    # 2. every other family: e80 streaming faster than the fastest text-level peer
    for fmt in ("qwen3_coder", "dsml", "kimi_k2", "glm47", "mistral", "harmony", "pythonic"):
        t = ms(rows, fmt, td, "e80", "stream")
        best = [(ms(rows, fmt, lib, "e80", "stream"), lib) for lib in peers_of(fmt)]
        best = [(v, lib) for v, lib in best if v is not None]
        if t is None or not best:
            continue
        v, lib = min(best)
        r = ratio(t, v)
        out.append({"gate": f"{fmt} e80 stream: fastest peer ({lib}) / tooldialect > 1", "value": r,
                    "holds": r is not None and r > 1})
        g = ratio(ms(rows, fmt, td, "e20", "stream"), t)
        out.append({"gate": f"{fmt} stream: tooldialect e80 / e20 (linear is 4)", "value": g, "holds": None})
    h = ms(rows, "harmony", "openai-harmony (token ids)", "e80", "stream")
    if h is not None:
        out.append({"gate": "harmony e80 stream: tooldialect / openai-harmony (report only)",
                    "value": ratio(h, ms(rows, "harmony", td, "e80", "stream")), "holds": None})
    # 3. batch of 20 calls: per call at most 2x SGLang's fastest Hermes detector
    best = [ms(rows, "hermes", lib, "b", "full") for lib in peers_of("hermes") if lib.startswith("sglang")]
    best = [v for v in best if v is not None]
    tb = ms(rows, "hermes", td, "b", "full")
    if best and tb is not None:
        r = ratio(min(best), tb)
        out.append({"gate": "hermes b full: tooldialect / fastest SGLang detector <= 2", "value": r,
                    "holds": r is not None and r <= 2})
    # 4. the DSML loop: batch at most a tenth of SGLang's; streaming finishes, linear
    sg = ms(rows, "dsml", "sglang DeepSeekV4Detector", "d150", "full")
    tdl = ms(rows, "dsml", td, "d150", "full")
    if sg is not None and tdl is not None:
        r = ratio(tdl, sg)
        out.append({"gate": "dsml loop d150 full: SGLang / tooldialect >= 10", "value": r, "holds": r is not None and r >= 10})
    s75, s150 = ms(rows, "dsml", td, "d75", "stream"), ms(rows, "dsml", td, "d150", "stream")
    if s150 is not None:
        g = ratio(s75, s150)
        out.append({"gate": "dsml loop stream (7-char deltas): tooldialect d150 / d75 (linear is 2)", "value": g,
                    "holds": g is not None and g <= 2.5})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="comma-separated formats (default: all)")
    ap.add_argument("--scen", default="a,b,c,e20,e40,e80,d", help="comma-separated scenarios")
    ap.add_argument("--json", default="", help="write every cell and gate to this file")
    ap.add_argument("--quick", action="store_true", help="skip peers' quadratic streaming of the DSML loop")
    ap.add_argument("--venv", default=sys.prefix,
                    help="the bench venv (for openai-harmony's vocabulary)")
    args = ap.parse_args(argv)
    fmts = [f for f in args.only.split(",") if f] or list(workloads.FORMATS)
    scens = [s for s in args.scen.split(",") if s]
    venv = Path(args.venv)
    rows: list[dict[str, Any]] = []
    for fmt in fmts:
        run_format(fmt, scens, venv, rows)
    if "d" in scens and (not args.only or "dsml" in fmts):
        run_loop(venv, rows, args.quick)
    print(table(rows))
    gs = gates(rows)
    print("\n### Acceptance gates\n")
    print("| gate | ratio | holds |")
    print("| --- | ---: | --- |")
    for g in gs:
        val = "—" if g["value"] is None else f"{g['value']:.3g}"
        holds = "not measured" if g["value"] is None else "report" if g["holds"] is None else (
            "yes" if g["holds"] else "**no**")
        print(f"| {g['gate']} | {val} | {holds} |")
    if args.json:
        meta = {"python": sys.version.split()[0], "machine": platform.machine(), "when": time.strftime("%Y-%m-%d %H:%M")}
        Path(args.json).write_text(json.dumps({"meta": meta, "cells": rows, "gates": gs}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
