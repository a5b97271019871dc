"""tooldialect's own cells measured in turn on several trees: the tree before, this
checkout's pure build, its compiled build.

    "$BENCH_VENV"/bin/python benchmarks/trees.py --tree before DIR REV --tree alone src REV \\
        [--tree control DIR REV] [--tree compiled DIR REV] --out DIR [--rounds 10] [--only hermes,dsml] [--scen a,b]

Each tree is imported by a worker process of its own, which builds the cells of a
``run.py --tooldialect-only`` run (every format's scenarios, the DSML loop, the
`<`-heavy streams, the toolset) and measures the one it is asked for. Round by round,
cell by cell, every tree takes one sample in turn (the order reversed every other
round), so a machine that slows down for a minute slows every tree's sample of the cell
alike; ``run.py`` ran each tree in a stretch of its own, minutes apart, and the ratios
between them moved with the machine by more than the gates' margins. A worker runs a
cell once untimed the first time it meets it (a grammar compiled, caches filled), then
each sample times it over at least 20 ms (``run.measure``). The workers stay alive for the
whole run, so no sample pays for a fork.

The result is one file per tree, ``OUT/NAME.json``, in the form of ``run.py --json``
(the least sample of each cell as ``ms``, the median as ``median_ms``, every sample in
round order as ``samples_ms``): ``run.py --before OUT/before.json --alone OUT/alone.json
--control OUT/control.json --compiled OUT/compiled.json`` reads them as it reads its own
runs, and the gates "the pure build no slower than before" and the growth lines then
compare samples taken side by side.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import run
import workloads

#: what a worker writes before each of its answers (anything else it prints is not one)
MARK = "@trees "


def cells(venv: Path, fmts: list[str], scens: list[str]) -> list[tuple[dict[str, Any], Any, Any]]:
    """The cells of a ``run.py --tooldialect-only`` run over ``fmts`` and ``scens`` (run.py's
    keys), each as (row, function, argument), as ``run.py`` builds them."""
    out: list[tuple[dict[str, Any], Any, Any]] = []
    for fmt in fmts:
        for ad in run.peers.adapters(fmt, venv, peers=False):
            out += run.format_cells(fmt, ad, scens)
    if "d" in scens and "dsml" in fmts:
        for ad in run.peers.adapters("dsml", venv, peers=False):
            out += run.loop_cells(ad)
    out += run.stress_cells(scens, run.peers.Tooldialect("hermes", every_family=True))
    if "toolset" in scens:
        out += run.toolset_cells()
    return out


def serve(src: Path, venv: Path, fmts: list[str], scens: list[str]) -> int:
    """A worker: import tooldialect from ``src``, say what it is and which cells it has, then
    measure the cell each line of stdin names (its index), one answer line each."""
    td = run.load(src, with_peers=False)
    made = cells(venv, fmts, scens)
    build = "compiled" if getattr(td, "compiled", False) is True else "pure"
    print(MARK + json.dumps({"tooldialect": td.__file__, "build": build, "rows": [r for r, _, _ in made]}), flush=True)
    met: set[int] = set()
    for line in sys.stdin:
        i = int(line)
        _, fn, arg = made[i]
        try:
            if i not in met:
                fn(arg)  # (the first run of a cell compiles and caches: never timed)
                met.add(i)
            secs, calls = run.measure(fn, arg, samples=1)
            answer: dict[str, Any] = {"secs": secs, "calls": calls}
        except Exception as exc:  # a cell that breaks is a finding, reported in its row
            answer = {"error": f"{type(exc).__name__}: {str(exc)[:80]}"}
        print(MARK + json.dumps(answer), flush=True)
    return 0


def _answer(worker: subprocess.Popen[str]) -> dict[str, Any]:
    assert worker.stdout is not None
    for line in worker.stdout:
        if line.startswith(MARK):
            got: dict[str, Any] = json.loads(line[len(MARK) :])
            return got
    raise SystemExit(f"a worker stopped (exit status {worker.wait()})")


def in_turn(
    trees: list[tuple[str, str, str]], rounds: int, venv: str, fmts: list[str], scens: list[str], out: Path
) -> None:
    """Every cell, every tree in turn, ``rounds`` times; a ``run.py --json`` file per tree."""
    spec = ["--venv", venv, "--only", ",".join(fmts), "--scen", ",".join(scens)]
    workers = [
        subprocess.Popen(
            [sys.executable, __file__, "--serve", src, *spec], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for _, src, _ in trees
    ]
    hellos = [_answer(w) for w in workers]
    rows = hellos[0]["rows"]
    if any(h["rows"] != rows for h in hellos):
        raise SystemExit("the trees' workers built different cells")
    samples: list[list[list[float]]] = [[[] for _ in rows] for _ in trees]
    found: list[list[Any]] = [[None] * len(rows) for _ in trees]
    notes: list[list[str]] = [[""] * len(rows) for _ in trees]
    names = ", ".join(name for name, _, _ in trees)
    print(f"# tooldialect's cells on {names} in turn, {rounds} rounds", flush=True)
    for r in range(rounds):
        order = list(range(len(trees)))
        for i in range(len(rows)):
            for t in order if (r + i) % 2 == 0 else order[::-1]:
                worker = workers[t]
                assert worker.stdin is not None
                worker.stdin.write(f"{i}\n")
                worker.stdin.flush()
                got = _answer(worker)
                if "error" in got:
                    notes[t][i] = got["error"]
                else:
                    samples[t][i].append(got["secs"])
                    found[t][i] = got["calls"]
        print(f"  round {r + 1} of {rounds} done ({time.strftime('%H:%M:%S')})", flush=True)
    for w in workers:
        assert w.stdin is not None
        w.stdin.close()
        w.wait()
    out.mkdir(parents=True, exist_ok=True)
    when = time.strftime("%Y-%m-%d %H:%M")
    for t, ((name, _, rev), hello) in enumerate(zip(trees, hellos)):
        meta = {"tooldialect": hello["tooldialect"], "rev": rev, "build": hello["build"], "when": when}
        meta |= {"rounds": rounds, "in turn with": names}
        got_rows = []
        for i, row in enumerate(rows):
            s = samples[t][i]
            cell = dict(row, ms=min(s) * 1000 if s else None, calls=found[t][i], rounds=len(s))
            cell["median_ms"] = statistics.median(s) * 1000 if s else None
            cell["samples_ms"] = [x * 1000 for x in s]
            if not s:
                cell["note"] = notes[t][i]
            got_rows.append(cell)
        (out / f"{name}.json").write_text(json.dumps({"meta": meta, "cells": got_rows}, indent=1), encoding="utf-8")
        print(f"# wrote {out / f'{name}.json'}: {name} ({hello['build']} build, {rev})", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", nargs=3, action="append", metavar=("NAME", "DIR", "REV"), default=[])
    ap.add_argument("--out", help="the directory the trees' files are written to")
    ap.add_argument("--rounds", type=int, default=10, help="samples per tree and cell (default 10)")
    ap.add_argument("--only", default="", help="comma-separated formats (default: every format)")
    ap.add_argument("--scen", default=run.DEFAULT_SCENS, help=f"run.py's scenarios (default {run.DEFAULT_SCENS})")
    ap.add_argument("--venv", default=sys.prefix, help="the bench venv")
    ap.add_argument("--serve", metavar="DIR", help=argparse.SUPPRESS)  # (a worker: see serve)
    args, _ = ap.parse_known_args(argv)  # make bench passes run.py's options (BENCH_ARGS) too
    fmts = [f for f in args.only.split(",") if f] or list(workloads.FORMATS)
    scens = [s for s in args.scen.split(",") if s]
    if args.serve:
        return serve(Path(args.serve), Path(args.venv), fmts, scens)
    if not args.tree or not args.out:
        ap.error("give each tree (--tree NAME DIR REV) and --out")
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    in_turn([tuple(t) for t in args.tree], args.rounds, args.venv, fmts, scens, Path(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
