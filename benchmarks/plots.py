"""SVG plots of a benchmark run, written beside docs/benchmarks.md (docs/plots/).

    python benchmarks/plots.py benchmarks/results.json [--out docs/plots]

Reads the ``--json`` file of ``benchmarks/run.py`` and writes, with a small SVG writer of
its own (no plotting library: the bench venv stays as it is):

- ``stream-FORMAT.svg``: streaming time against reply size, log-log, one series per
  parser (tooldialect and each peer) over the scenarios that grow one reply shape
  (e20 / e40 / e80: prose, then 5 calls whose string argument is 40 % of the reply; the
  DSML loop's d75 / d150 for dsml).  A straight line of slope 1 is linear time; a peer
  that re-parses what it has read climbs at slope 2.
- ``batch-per-call.svg``: the batch cost of one call (scenario b, 20 calls, full mode:
  milliseconds / calls), one bar per parser and format, on a log axis.

``make bench`` runs it after the measurements.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Iterable, Sequence
from html import escape
from pathlib import Path
from typing import Any

__all__ = ["bar_chart", "log_log_chart", "write_plots"]

GROWTH = {"dsml": ("d75", "d150")}
GROWTH_DEFAULT = ("e20", "e40", "e80")
PALETTE = ["#1565c0", "#2e7d32", "#c62828", "#ef6c00", "#6a1b9a", "#00838f", "#ad1457", "#5d4037", "#455a64"]
W, H = 640, 400
LEFT, RIGHT, TOP, BOTTOM = 70, 190, 40, 50


def _decades(lo: float, hi: float) -> list[float]:
    """The powers of ten from below ``lo`` to above ``hi``."""
    a = math.floor(math.log10(lo))
    b = math.ceil(math.log10(hi))
    if b == a:
        b += 1
    return [10.0**k for k in range(a, b + 1)]


def _label(v: float) -> str:
    if v >= 1000 and v < 1e6:
        return f"{v / 1000:g}k"
    if v >= 1e6:
        return f"{v / 1e6:g}M"
    return f"{v:g}"


def _frame(title: str, xlabel: str, ylabel: str, scales: tuple[str, str]) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
        f'font-family="sans-serif" font-size="11" data-xscale="{scales[0]}" data-yscale="{scales[1]}">',
        f"<title>{escape(title)}</title>",
        f'<rect x="0" y="0" width="{W}" height="{H}" fill="#fff"/>',
        f'<text x="{W / 2:.0f}" y="22" text-anchor="middle" font-size="14" font-weight="bold">{escape(title)}</text>',
        f'<text x="{LEFT + (W - LEFT - RIGHT) / 2:.0f}" y="{H - 10}" text-anchor="middle">{escape(xlabel)}</text>',
        f'<text x="16" y="{TOP + (H - TOP - BOTTOM) / 2:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 16 {TOP + (H - TOP - BOTTOM) / 2:.0f})">{escape(ylabel)}</text>',
    ]


class _Log:
    """A log axis from the decade below the smallest value to the one above the largest."""

    def __init__(self, values: Iterable[float], lo_px: float, hi_px: float) -> None:
        vals = [v for v in values if v > 0]
        self.ticks = _decades(min(vals), max(vals)) if vals else [1.0, 10.0]
        self.a, self.b = math.log10(self.ticks[0]), math.log10(self.ticks[-1])
        self.lo, self.hi = lo_px, hi_px

    def __call__(self, v: float) -> float:
        return self.lo + (math.log10(v) - self.a) / (self.b - self.a) * (self.hi - self.lo)


def log_log_chart(title: str, series: dict[str, Sequence[tuple[float, float]]], xlabel: str, ylabel: str) -> str:
    """One line per series (name → points), both axes logarithmic, with a legend."""
    pts = [p for ps in series.values() for p in ps if p[0] > 0 and p[1] > 0]
    x = _Log((p[0] for p in pts), LEFT, W - RIGHT)
    y = _Log((p[1] for p in pts), H - BOTTOM, TOP)
    out = _frame(title, xlabel, ylabel, ("log", "log"))
    out.append('<g class="grid" stroke="#e0e0e0">')
    for t in x.ticks:
        out.append(f'<line x1="{x(t):.1f}" y1="{TOP}" x2="{x(t):.1f}" y2="{H - BOTTOM}"/>')
    for t in y.ticks:
        out.append(f'<line x1="{LEFT}" y1="{y(t):.1f}" x2="{W - RIGHT}" y2="{y(t):.1f}"/>')
    out.append("</g>")
    out.append('<g class="axis x" text-anchor="middle">')
    out.extend(f'<text x="{x(t):.1f}" y="{H - BOTTOM + 16}">{_label(t)}</text>' for t in x.ticks)
    out.append('</g><g class="axis y" text-anchor="end">')
    out.extend(f'<text x="{LEFT - 6}" y="{y(t) + 4:.1f}">{_label(t)}</text>' for t in y.ticks)
    out.append("</g>")
    out.append(
        f'<rect x="{LEFT}" y="{TOP}" width="{W - LEFT - RIGHT}" height="{H - TOP - BOTTOM}" fill="none" stroke="#888"/>'
    )
    for k, (name, ps) in enumerate(series.items()):
        colour = PALETTE[k % len(PALETTE)]
        good = sorted(p for p in ps if p[0] > 0 and p[1] > 0)
        path = " ".join(f"{'M' if i == 0 else 'L'}{x(px):.1f},{y(py):.1f}" for i, (px, py) in enumerate(good))
        dash = ' stroke-dasharray="5,3"' if "every family" in name else ""
        out.append(f'<g class="series" data-name="{escape(name)}" stroke="{colour}" fill="{colour}">')
        out.append(f'<path d="{path}" fill="none" stroke-width="2"{dash}/>')
        out.extend(
            f'<circle cx="{x(px):.1f}" cy="{y(py):.1f}" r="3"><title>{escape(name)}: {px:g} → {py:.3g}</title></circle>'
            for px, py in good
        )
        ly = TOP + 8 + 16 * k
        out.append(f'<line x1="{W - RIGHT + 10}" y1="{ly}" x2="{W - RIGHT + 28}" y2="{ly}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{W - RIGHT + 32}" y="{ly + 4}" stroke="none">{escape(name)}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def bar_chart(title: str, groups: dict[str, dict[str, float]], xlabel: str) -> str:
    """Horizontal bars on a log axis: for each group (a format), one bar per series (a parser)."""
    names = list(dict.fromkeys(n for g in groups.values() for n in g))
    rows = sum(len(g) for g in groups.values()) + len(groups)
    height = max(H, TOP + BOTTOM + 12 * rows)
    left = 190
    x = _Log((v for g in groups.values() for v in g.values()), left, W - 20)
    out = _frame(title, xlabel, "", ("log", "category"))
    out[0] = out[0].replace(f'height="{H}" viewBox="0 0 {W} {H}"', f'height="{height}" viewBox="0 0 {W} {height}"')
    out[2] = f'<rect x="0" y="0" width="{W}" height="{height}" fill="#fff"/>'
    out[4] = (
        f'<text x="{left + (W - 20 - left) / 2:.0f}" y="{height - 10}" text-anchor="middle">{escape(xlabel)}</text>'
    )
    out.append('<g class="grid" stroke="#e0e0e0">')
    out.extend(f'<line x1="{x(t):.1f}" y1="{TOP}" x2="{x(t):.1f}" y2="{height - BOTTOM}"/>' for t in x.ticks)
    out.append('</g><g class="axis x" text-anchor="middle">')
    out.extend(f'<text x="{x(t):.1f}" y="{height - BOTTOM + 16}">{_label(t)}</text>' for t in x.ticks)
    out.append("</g>")
    colours = {n: PALETTE[k % len(PALETTE)] for k, n in enumerate(names)}
    row = 0
    bars: dict[str, list[str]] = {n: [] for n in names}
    labels = []
    for group, values in groups.items():
        labels.append(
            f'<text x="{left - 6}" y="{TOP + 12 * row + 10}" text-anchor="end" font-weight="bold">{escape(group)}</text>'
        )
        row += 1
        for name, v in values.items():
            yy = TOP + 12 * row
            bars[name].append(
                f'<rect x="{left}" y="{yy}" width="{max(1.0, x(v) - left):.1f}" height="10">'
                f"<title>{escape(group)} · {escape(name)}: {v:.3g}</title></rect>"
            )
            labels.append(f'<text x="{left - 6}" y="{yy + 9}" text-anchor="end" fill="#555">{escape(name)}</text>')
            row += 1
    out.extend(labels)
    for name in names:
        out.append(f'<g class="series" data-name="{escape(name)}" fill="{colours[name]}">')
        out.extend(bars[name])
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _libs(cells: list[dict[str, Any]]) -> list[str]:
    """Parsers in a stable order: tooldialect first, then the peers; no "(before)" rows."""
    libs = dict.fromkeys(c["lib"] for c in cells if "before" not in c["lib"])
    return sorted(libs, key=lambda n: (not n.startswith("tooldialect"), n))


def write_plots(data: dict[str, Any], out: Path) -> list[Path]:
    """Every plot of a run's JSON into ``out``; returns the files written."""
    cells = [c for c in data.get("cells", []) if isinstance(c.get("ms"), (int, float)) and c.get("chars")]
    out.mkdir(parents=True, exist_ok=True)
    written = []
    formats = dict.fromkeys(c["format"] for c in cells)
    for fmt in formats:
        scens = GROWTH.get(fmt, GROWTH_DEFAULT)
        rows = [c for c in cells if c["format"] == fmt and c["mode"] == "stream" and c["scenario"] in scens]
        series = {lib: [(c["chars"], c["ms"]) for c in rows if c["lib"] == lib] for lib in _libs(rows)}
        series = {k: v for k, v in series.items() if len(v) >= 2}
        if not series:
            continue
        path = out / f"stream-{fmt}.svg"
        path.write_text(
            log_log_chart(f"{fmt}: streaming time against reply size", series, "reply size (characters)", "time (ms)"),
            encoding="utf-8",
        )
        written.append(path)
    groups: dict[str, dict[str, float]] = {}
    for fmt in formats:
        rows = [c for c in cells if c["format"] == fmt and c["scenario"] == "b" and c["mode"] == "full"]
        per = {
            lib: 1000 * c["ms"] / c["expected_calls"]
            for lib in _libs(rows)
            for c in rows
            if c["lib"] == lib and c.get("expected_calls")
        }
        if per:
            groups[fmt] = per
    if groups:
        path = out / "batch-per-call.svg"
        path.write_text(
            bar_chart("batch cost of one call (20 calls per reply)", groups, "µs per call"), encoding="utf-8"
        )
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, help="a --json file of benchmarks/run.py")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "docs" / "plots")
    args = ap.parse_args(argv)
    data = json.loads(args.results.read_text(encoding="utf-8"))
    for path in write_plots(data, args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
