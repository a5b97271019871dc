"""The floor: the least a parse that binds and validates its calls and builds its result
costs in Python on this machine, beside tooldialect and SGLang's detector on the same
replies (scenarios a and b of ``workloads.py``).

A *floor* parser here is one regex over the reply in the family's canonical spelling (no
marker variants, no recovery, no hold-back, no check that the JSON is strict or the
block ends where it should), ``json.loads`` of each payload or the values written as
text, then what every call of tooldialect's costs whatever reads it: the toolset's own
binder (name resolution, typing of text values, the compiled validator) and the result
``parse()`` builds: the prose and reasoning joined, the calls and the ``ParseResult``,
and no event (``parse()`` keeps what its result holds as it reads, docs/decisions.md 229
and 234).  It is not a parser anyone should use; it is the cost below which no
validated parse in Python goes, so that a gate set against a regex detector that
validates nothing can be read against it.

    python benchmarks/floor.py                  # in the bench venv (make bench builds it)
    python benchmarks/floor.py --src DIR        # tooldialect from DIR: the compiled wheel
                                                # installed there (make bench does both)

The floor and tooldialect read the same package, so with the compiled build both use its
compiled binder and result: the compiled floor is the least the compiled build can reach.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _src() -> Path:
    """Where tooldialect is imported from: ``--src`` when run as a script, else this checkout."""
    default = HERE.parent / "src"
    if __name__ != "__main__":
        return default
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", type=Path, default=default, help="the tree tooldialect is imported from")
    return Path(ap.parse_args().src).resolve()


SRC = _src()
sys.path.insert(0, str(SRC))
sys.path.insert(0, str(HERE))

from workloads import FORMATS, TOOLS, workload

import tooldialect as td
from tooldialect.binding import Binder
from tooldialect.engine.events import parse_result
from tooldialect.models import Policy
from tooldialect.records import RawCall

Call = tuple[str, Any, str | None, list[tuple[str, str, bool | None]] | None]  # name, arguments, json, text values

_QWEN_PARAM = re.compile(r"<parameter=([^>\n]+)>\n?(.*?)\n?</parameter>", re.DOTALL)
_GLM_PARAM = re.compile(r"<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>", re.DOTALL)
_DSML_PARAM = re.compile(
    r'<｜DSML｜parameter name="([^"]+)" string="(true|false)">(.*?)</｜DSML｜parameter>', re.DOTALL
)


def _json_args(m: re.Match[str]) -> Call:
    text = m.group("args")
    return m.group("name"), json.loads(text), text, None


def _text_values(rx: re.Pattern[str]) -> Callable[[re.Match[str]], Call]:
    def read(m: re.Match[str]) -> Call:
        return m.group("name"), None, None, [(k, v, None) for k, v in rx.findall(m.group("body"))]

    return read


def _dsml_values(m: re.Match[str]) -> Call:
    return m.group("name"), None, None, [(k, v, flag == "true") for k, flag, v in _DSML_PARAM.findall(m.group("body"))]


#: family -> the canonical call (lazy bodies end at the first closer: no nested quantifier)
FLOORS: dict[str, tuple[re.Pattern[str], Callable[[re.Match[str]], Call]]] = {
    "hermes": (
        re.compile(
            r'<tool_call>\n\{"name": "(?P<name>[^"]+)", "arguments": (?P<args>\{.*?\})\}\n</tool_call>', re.DOTALL
        ),
        _json_args,
    ),
    "qwen3_coder": (
        re.compile(r"<tool_call>\n<function=(?P<name>[^>\n]+)>\n(?P<body>.*?)</function>\n</tool_call>", re.DOTALL),
        _text_values(_QWEN_PARAM),
    ),
    "kimi_k2": (
        re.compile(
            r"<\|tool_call_begin\|>functions\.(?P<name>[\w.-]+):\d+<\|tool_call_argument_begin\|>"
            r"(?P<args>\{.*?\})<\|tool_call_end\|>",
            re.DOTALL,
        ),
        _json_args,
    ),
    "glm47": (
        re.compile(r"<tool_call>(?P<name>[^<\n]+)\n?(?P<body>.*?)</tool_call>", re.DOTALL),
        _text_values(_GLM_PARAM),
    ),
    "mistral": (
        re.compile(r"\[TOOL_CALLS\](?P<name>[\w.-]+)\[ARGS\](?P<args>\{.*?\})(?=\[TOOL_CALLS\]|\s*$)", re.DOTALL),
        _json_args,
    ),
    "dsml": (
        re.compile(r'<｜DSML｜invoke name="(?P<name>[^"]+)">\n(?P<body>.*?)</｜DSML｜invoke>\n', re.DOTALL),
        _dsml_values,
    ),
    "harmony": (
        re.compile(
            r"<\|start\|>assistant<\|channel\|>commentary to=functions\.(?P<name>[\w.-]+) <\|constrain\|>json"
            r"<\|message\|>(?P<args>\{.*?\})<\|call\|>",
            re.DOTALL,
        ),
        _json_args,
    ),
}

#: furniture around the calls that the floor drops from the text (Kimi K2's section markers,
#: DSML's block markers)
_FURNITURE = re.compile(r"<\|tool_calls_section_(?:begin|end)\|>|<｜DSML｜tool_calls>\n|</｜DSML｜tool_calls>")
#: prose written as reasoning (Harmony's analysis channel)
_ANALYSIS = re.compile(r"<\|channel\|>analysis<\|message\|>(.*?)<\|end\|>", re.DOTALL)


def _prose(text: str, prose: list[str], reasoning: list[str]) -> None:
    """The text between calls: reasoning where a channel says so, else prose."""
    pos = 0
    for m in _ANALYSIS.finditer(text):
        prose.append(_FURNITURE.sub("", text[pos : m.start()]))
        reasoning.append(m.group(1))
        pos = m.end()
    prose.append(_FURNITURE.sub("", text[pos:]))


def floor_parser(fam: str, tools: td.Toolset) -> Callable[[str], td.ParseResult]:
    rx, read = FLOORS[fam]
    family = FORMATS[fam].name
    binder = Binder(tools, Policy())

    def parse(text: str) -> td.ParseResult:
        prose: list[str] = []
        reasoning: list[str] = []
        calls = []
        pos = 0
        for m in rx.finditer(text):
            if m.start() > pos:
                _prose(text[pos : m.start()], prose, reasoning)
            name, args, args_json, params = read(m)
            raw = RawCall(name, args, args_json, None, m.span(), family, text_params=params)
            call, _diags = binder.bind(raw)
            if call is not None:
                calls.append(call)
            pos = m.end()
        _prose(text[pos:], prose, reasoning)
        return parse_result("".join(prose), "".join(reasoning), calls, [])

    return parse


def _best(fns: list[Callable[[], Any]], rounds: int = 9, budget: float = 0.05) -> list[float]:
    """The fastest ms per call of each of ``fns``, timed in turn, round after round (the
    machine's noise falls on all of them alike, and the least time is the least noisy)."""
    reps = []
    for fn in fns:
        fn()
        t0 = time.perf_counter()
        fn()
        reps.append(max(3, int(budget / max(time.perf_counter() - t0, 1e-6))))
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, (fn, n) in enumerate(zip(fns, reps)):
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            best[i] = min(best[i], (time.perf_counter() - t0) / n * 1000)
    return best


def _row(fam: str, scen: str, tools: td.Toolset, peers: list[Any]) -> str:
    floor = floor_parser(fam, tools)
    family = FORMATS[fam].name
    text = workload(scen, fam).text
    want = len(td.parse(text, tools=tools, families=[family]).calls)
    peers = [p for p in peers if p.full(text) == want]  # the detectors that returned every call
    f, t, *times = _best(
        [lambda: floor(text), lambda: td.parse(text, tools=tools, families=[family])]
        + [lambda p=p: p.full(text) for p in peers]
    )
    best, lib = min(zip(times, (p.lib for p in peers)))
    return f"| {fam} | {scen} | {f:.3g} | {t:.3g} | {best:.3g} ({lib.split()[1]}) | {f / best:.2f} | {t / best:.1f} | {t / f:.1f} |"


def main() -> None:
    import stubs  # (before anything imports sglang)

    stubs.install_sglang()
    from peers import SGLANG, SGLang

    if not Path(td.__file__).resolve().is_relative_to(SRC):
        sys.exit(f"tooldialect imported from {td.__file__}, not from --src {SRC}")
    build = "compiled" if getattr(td, "compiled", False) is True else "pure"
    print(f"# tooldialect from {td.__file__} ({build} build)\n")
    tools = td.Toolset.from_openai(TOOLS)
    print(
        "| family | reply | floor | tooldialect | fastest SGLang | floor / SGLang | tooldialect / SGLang | tooldialect / floor |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for fam in FLOORS:
        peers = [SGLang(fam, module, cls) for module, cls in SGLANG[fam]]
        for scen in ("a", "b"):
            print(_row(fam, scen, tools, peers))


if __name__ == "__main__":
    main()
