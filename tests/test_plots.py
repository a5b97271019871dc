"""benchmarks/plots.py: the SVG writer behind docs/plots/ (valid XML, one series per
parser, logarithmic axes), read from a benchmark run's JSON."""

from __future__ import annotations

import importlib.util
import math
import xml.etree.ElementTree as ET
from itertools import pairwise

from support import ROOT

SVG = "{http://www.w3.org/2000/svg}"


def _plots():
    spec = importlib.util.spec_from_file_location("bench_plots", ROOT / "benchmarks" / "plots.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cell(fmt, lib, scen, mode, chars, ms, calls=5):
    return {
        "format": fmt,
        "lib": lib,
        "scenario": scen,
        "mode": mode,
        "chars": chars,
        "ms": ms,
        "expected_calls": calls,
    }


RUN = {
    "meta": {},
    "cells": [
        *(
            _cell("hermes", "tooldialect", s, "stream", n, n / 100)
            for s, n in (("e20", 20000), ("e40", 40000), ("e80", 80000))
        ),
        *(
            _cell("hermes", "vllm hermes", s, "stream", n, (n / 1000) ** 2)
            for s, n in (("e20", 20000), ("e40", 40000), ("e80", 80000))
        ),
        *(_cell("hermes", "tooldialect (before)", s, "stream", n, 1.0) for s, n in (("e20", 20000), ("e80", 80000))),
        _cell("hermes", "tooldialect", "b", "full", 2915, 6.0, 20),
        _cell("hermes", "vllm hermes", "b", "full", 2915, 0.4, 20),
        *(_cell("dsml", "tooldialect", s, "stream", n, n / 50) for s, n in (("d75", 120000), ("d150", 244000))),
    ],
    "gates": [],
}


def _series(root):
    return [g.get("data-name") for g in root.iter(f"{SVG}g") if g.get("class") == "series"]


def test_each_format_gets_a_log_log_plot_with_one_series_per_parser(tmp_path):
    written = _plots().write_plots(RUN, tmp_path)
    assert sorted(p.name for p in written) == ["batch-per-call.svg", "stream-dsml.svg", "stream-hermes.svg"]
    root = ET.parse(tmp_path / "stream-hermes.svg").getroot()
    assert root.tag == f"{SVG}svg" and root.get("data-xscale") == "log" and root.get("data-yscale") == "log"
    assert _series(root) == ["tooldialect", "vllm hermes"]  # no "(before)" rows
    # the axis ticks are powers of ten, evenly spaced: a log axis
    ticks = [t for g in root.iter(f"{SVG}g") if g.get("class") == "axis x" for t in g]
    assert [t.text for t in ticks] == ["10k", "100k"]
    ys = [t for g in root.iter(f"{SVG}g") if g.get("class") == "axis y" for t in g]
    gaps = {round(float(b.get("y")) - float(a.get("y")), 3) for a, b in pairwise(ys)}
    assert len(gaps) == 1 and len(ys) >= 3
    # a quadratic series climbs at twice the slope of a linear one
    paths = {
        g.get("data-name"): g.find(f"{SVG}path").get("d") for g in root.iter(f"{SVG}g") if g.get("class") == "series"
    }

    def slope(d):
        (x0, y0), (x1, y1) = [tuple(map(float, p[1:].split(","))) for p in (d.split()[0], d.split()[-1])]
        return (y0 - y1) / (x1 - x0)

    assert math.isclose(slope(paths["vllm hermes"]), 2 * slope(paths["tooldialect"]), rel_tol=0.01)
    assert _series(ET.parse(tmp_path / "stream-dsml.svg").getroot()) == ["tooldialect"]


def test_the_batch_plot_is_per_call_cost_on_a_log_axis(tmp_path):
    _plots().write_plots(RUN, tmp_path)
    root = ET.parse(tmp_path / "batch-per-call.svg").getroot()
    assert root.get("data-xscale") == "log"
    assert _series(root) == ["tooldialect", "vllm hermes"]
    titles = [r.find(f"{SVG}title").text for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    assert titles == ["hermes · tooldialect: 300", "hermes · vllm hermes: 20"]  # µs per call: 6 ms / 20, 0.4 ms / 20


def test_the_committed_plots_are_valid_svg():
    plots = sorted((ROOT / "docs" / "plots").glob("*.svg"))
    assert plots and any(p.name == "batch-per-call.svg" for p in plots)
    for path in plots:
        assert ET.parse(path).getroot().tag == f"{SVG}svg"
    doc = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    for path in plots:
        assert f"plots/{path.name}" in doc, f"docs/benchmarks.md does not show {path.name}"
