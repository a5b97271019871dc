"""The peer gates' cells measured in pairs: tooldialect and every text-level peer of a
format, one sample each in turn, for several rounds, so that a machine that slows down
for a minute slows every parser of the cell alike.

    "$BENCH_VENV"/bin/python benchmarks/paired.py --src DIR --json out.json [--rounds 9] [--only hermes,dsml]

(``run.py``'s other options are accepted and ignored, so ``make bench`` hands both the same
``BENCH_ARGS``; the last ``--json`` wins.)

``run.py`` measures each parser's cells in one stretch and the compiled build in runs of
its own, minutes apart; on a shared machine the speed can change between them by more
than the gates' margins. Here the cells of the peer gates (replies a and b, parsed whole
and streamed in 4-character deltas) are measured round by round: in each round every
parser of the cell takes one sample (a forked child that repeats the parse for
``WARM`` seconds, then times it over at least 20 ms), in turn, the order reversed every
other round. Each row keeps the least sample (``ms``) and the median (``median_ms``).
``run.py --paired FILE`` reads the file: the peer gates of the build measured here then
read these rows, and the rows of the separate runs become reports beside them.
tooldialect's rows are named as ``run.py`` names the build it imported (``tooldialect
(compiled)`` for the compiled wheel).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import run
import workloads

#: the peer gates' cells: (scenario, mode)
CELLS = [("b", "full"), ("a", "full"), ("a", "stream"), ("b", "stream")]
#: a peer this many times slower than the fastest parser of the cell in the first round
#: cannot be the fastest: its later rounds are skipped (tooldialect's never are: one slow
#: first sample would decide its gate)
FAR = 8.0
#: seconds each sample's child repeats the parse before it is timed: a forked child runs
#: slower until it has written to the memory it still shares with its parent (tooldialect,
#: which touches more of it, measured 1.2-1.7x its steady time in its first 40 ms, the
#: detectors about 1.2x)
WARM = 0.15
#: seconds: a sample still running then is stopped (the parser is not the fastest; run.py's
#: own run reports how long it takes)
STOP = 20.0


def pair_cell(
    fmt: str, ads: list[Any], scen: str, mode: str, rounds: int, names: dict[str, str]
) -> list[dict[str, Any]]:
    """One cell, every adapter in turn for ``rounds`` rounds: a row per adapter."""
    w = workloads.workload(scen, fmt)
    deltas = workloads.deltas(w.text, workloads.FORMATS[fmt].specials, w.delta_chars)
    args = [(ad.full, run.whole(ad, w.text)) if mode == "full" else (ad.stream, ad.prepare(deltas)) for ad in ads]
    samples: list[list[float]] = [[] for _ in ads]
    found: list[Any] = [None] * len(ads)
    notes = [""] * len(ads)
    active = list(range(len(ads)))
    for r in range(rounds):
        for i in active if r % 2 == 0 else active[::-1]:
            fn, arg = args[i]
            secs, calls, note = run.isolated(fn, arg, samples=1, timeout=STOP, warm=WARM)
            if secs is None:
                notes[i] = note
            else:
                samples[i].append(secs)
                found[i] = calls
        if r == 0:
            fastest = min((s[0] for s in samples if s), default=None)
            active = [
                i
                for i in active
                if ads[i].lib in (run.TD, run.EVERY)  # (what the cell measures: never left out)
                or (samples[i] and (fastest is None or samples[i][0] <= FAR * fastest) and found[i] == w.expected_calls)
            ]
    rows = []
    for ad, got, calls, note in zip(ads, samples, found, notes):
        row = run.cell_row(fmt, names.get(ad.lib, ad.lib), scen, mode, w) | {
            "ms": min(got) * 1000 if got else None,
            "median_ms": statistics.median(got) * 1000 if got else None,
            "calls": calls,
            "rounds": len(got),
        }
        if note and not got:
            row["note"] = note
        rows.append(row)
        shown = f"{row['ms']:10.4f} ms least, {row['median_ms']:10.4f} median of {len(got)}" if got else note
        print(f"  {fmt:12} {row['lib']:38} {scen:2} {mode:6} {shown}  calls {calls}/{w.expected_calls}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", default=str(run.HERE.parent / "src"), help="the tree tooldialect is imported from")
    ap.add_argument("--json", required=True, help="write the rows here (run.py --paired reads it)")
    ap.add_argument("--rounds", type=int, default=9, help="samples per parser and cell (default 9)")
    ap.add_argument("--only", default="", help="comma-separated formats (default: every format with a peer)")
    ap.add_argument("--venv", default=sys.prefix, help="the bench venv")
    args, _ = ap.parse_known_args(argv)  # make bench passes run.py's options (BENCH_ARGS) too
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    td = run.load(Path(args.src))
    build = "compiled" if getattr(td, "compiled", False) is True else "pure"
    names = run.COMPILED if build == "compiled" else {}
    meta = {"tooldialect": td.__file__, "build": build, "rounds": args.rounds, "when": time.strftime("%Y-%m-%d %H:%M")}
    print(f"# the peer gates' cells in pairs: tooldialect from {td.__file__} ({build} build), {args.rounds} rounds")
    fmts = [f for f in args.only.split(",") if f] or list(workloads.FORMATS)
    rows: list[dict[str, Any]] = []
    for fmt in fmts:
        # tooldialect's two rows and the text-level peers (not openai-harmony, which reads token ids)
        ads = [
            ad
            for ad in run.peers.adapters(fmt, Path(args.venv))
            if ad.lib in (run.TD, run.EVERY) or run.is_peer(ad.lib)
        ]
        if not any(run.is_peer(ad.lib) for ad in ads):
            continue
        for ad in ads:
            run.warm_up(ad, fmt)
        for scen, mode in CELLS:
            rows += pair_cell(fmt, ads, scen, mode, args.rounds, names)
    Path(args.json).write_text(json.dumps({"meta": meta, "cells": rows}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
