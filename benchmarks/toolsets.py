"""What a toolset costs: building one from a realistic OpenAI tool list, and validating
calls' arguments against the tools' schemas, before and after the compiled validator and
the schema cache (docs/decisions.md 96).

    python benchmarks/toolsets.py [--json out.json]     # any venv with tooldialect's deps

A server builds a ``Toolset`` from each request's ``tools`` and validates every call the
model makes, so both costs are paid per request. "Before" is measured in the same run by
switching the new paths off (the meta-schema table answers "not sure", the cache is
emptied, ``Toolset.accepts`` answers "not sure"): what is left is exactly the old code,
jsonschema's ``check_schema`` per tool and jsonschema's walk per call. Rows:

- ``build``: ``Toolset.from_openai`` on 50 distinct tools (2–5 properties each): the first
  time (nothing cached), again (the same list, as a server builds it per request), and as a
  fresh copy (new dict objects with the same JSON, as decoded from each request's body);
- ``validate``: one call's arguments (five properties) through the binding pass's
  validation, valid and invalid (invalid still asks jsonschema for its errors);
- ``parse``: ``td.parse`` of the 20-call Hermes response of benchmarks/run.py (scenario b)
  with its four tools, given as a Toolset and as the raw list (a toolset built per call).

Nothing here is a test and nothing asserts a time; figures are medians of 5 samples.
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if "tooldialect" not in sys.modules:  # run.py --src imports another tree first
    sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from workloads import TOOLS, workload

import tooldialect as td
from tooldialect import toolset as _toolset

_VERBS = ["get", "list", "create", "update", "delete", "search", "send", "fetch", "run", "find"]
_NOUNS = ["weather", "files", "issue", "email", "calendar_event", "invoice", "user", "ticket", "repo", "order"]
_PROPS: list[tuple[str, dict[str, Any]]] = [
    ("query", {"type": "string", "description": "What to look for."}),
    ("limit", {"type": "integer", "minimum": 1, "maximum": 100, "description": "At most this many."}),
    ("unit", {"type": "string", "enum": ["celsius", "fahrenheit"]}),
    ("tags", {"type": "array", "items": {"type": "string"}, "description": "Labels."}),
    ("dry_run", {"type": "boolean", "description": "Only report what would change."}),
    ("score", {"type": "number", "description": "A threshold."}),
    ("path", {"type": "string", "description": "A file path."}),
    ("owner", {"type": ["string", "null"], "description": "Who owns it."}),
]


def catalogue(n: int = 50) -> list[dict[str, Any]]:
    """``n`` distinct OpenAI tools with 2–5 properties each, the way real catalogues look:
    descriptions, a required subset, enums, bounds, arrays, now and then a closed object."""
    tools = []
    for i in range(n):
        name = f"{_VERBS[i % len(_VERBS)]}_{_NOUNS[(i // len(_VERBS)) % len(_NOUNS)]}"
        count = 2 + i % 4
        chosen = [_PROPS[(i + k * 3) % len(_PROPS)] for k in range(count)]
        props = {key: dict(schema) for key, schema in chosen}
        props[chosen[0][0]]["description"] = f"What {name} works on."  # every schema its own
        params: dict[str, Any] = {"type": "object", "properties": props, "required": [chosen[0][0]]}
        if i % 3 == 0:
            params["additionalProperties"] = False
        description = f"{name.replace('_', ' ').capitalize()} (tool {i})."
        tools.append({"type": "function", "function": {"name": name, "description": description, "parameters": params}})
    return tools


def arguments(tool: dict[str, Any]) -> dict[str, Any]:
    """Arguments that satisfy the tool's schema: one value per property."""
    sample = {"string": "x", "integer": 5, "number": 0.5, "boolean": True, "array": ["a", "b"]}
    out: dict[str, Any] = {}
    for key, schema in tool["function"]["parameters"]["properties"].items():
        kind = schema["type"][0] if isinstance(schema["type"], list) else schema["type"]
        out[key] = schema["enum"][0] if "enum" in schema else sample[kind]
    return out


def measure(fn: Any, min_time: float = 0.05, samples: int = 5) -> float:
    """Median seconds per run; each sample repeats ``fn`` until it takes ``min_time``."""
    t0 = time.perf_counter()
    fn()
    first = max(time.perf_counter() - t0, 1e-7)
    reps = max(1, int(min_time / first))
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        times.append((time.perf_counter() - t0) / reps)
    return statistics.median(times)


class Before:
    """The old code paths for the duration of a ``with``: jsonschema checks every schema
    (no meta-schema table, nothing cached) and validates every call (no compiled check)."""

    def __enter__(self) -> Before:
        self.saved = (_toolset.certainly_valid, _toolset._canonical, _toolset.Toolset.accepts)
        _toolset.certainly_valid = lambda schema, cls: False
        _toolset._canonical = lambda schema: None  # no key: never cached
        _toolset.Toolset.accepts = lambda self, name, arguments: False
        return self

    def __exit__(self, *exc: Any) -> None:
        _toolset.certainly_valid, _toolset._canonical, _toolset.Toolset.accepts = self.saved
        _toolset.clear_caches()


def cold(tools: list[dict[str, Any]]) -> int:
    """A build with nothing cached (the first request with these tools); how many tools."""
    _toolset.clear_caches()
    return len(td.Toolset.from_openai(tools))


def fresh(tools: list[dict[str, Any]]) -> int:
    """A build from a fresh copy of the list (as decoded from a later request's body),
    the copy included; how many tools."""
    return len(td.Toolset.from_openai(copy.deepcopy(tools)))


def build_rows(tools: list[dict[str, Any]]) -> dict[str, float]:
    rows = {}
    with Before():
        rows["build, before"] = measure(lambda: cold(tools))
    rows["build first time, after"] = measure(lambda: cold(tools))
    rows["build again, after"] = measure(lambda: td.Toolset.from_openai(tools))
    rows["build fresh copy, after"] = measure(lambda: fresh(tools))
    rows["deepcopy alone"] = measure(lambda: copy.deepcopy(tools))
    return rows


def validate_rows(tools: list[dict[str, Any]]) -> dict[str, float]:
    """The binding pass's validation of one call (``Binder._validate``)."""
    from tooldialect.binding import Binder  # private names: only this row needs them
    from tooldialect.transform import RawCall

    toolset = td.Toolset.from_openai(tools)
    binder = Binder(toolset, td.Policy())
    tool = tools[3]  # five properties
    name = tool["function"]["name"]
    good = arguments(tool)
    bad = {**good, "limit": "many"} if "limit" in good else {**good, next(iter(good)): 7}
    raw = RawCall(name=name, arguments=good, arguments_json=None, id=None, span=(0, 0), family="hermes")
    assert binder._validate(name, good, raw) == [] and binder._validate(name, bad, raw)
    rows = {}
    with Before():
        rows["validate valid, before"] = measure(lambda: binder._validate(name, good, raw))
        rows["validate invalid, before"] = measure(lambda: binder._validate(name, bad, raw))
    toolset.accepts(name, good)  # compiled on first use
    rows["validate valid, after"] = measure(lambda: binder._validate(name, good, raw))
    rows["validate invalid, after"] = measure(lambda: binder._validate(name, bad, raw))
    return rows


def parse_rows() -> dict[str, float]:
    text = workload("b", "hermes").text
    toolset = td.Toolset.from_openai(TOOLS)
    assert len(td.parse(text, tools=toolset, families=["hermes"]).calls) == 20
    rows = {}
    with Before():
        rows["parse 20 calls, Toolset, before"] = measure(lambda: td.parse(text, tools=toolset, families=["hermes"]))
        rows["parse 20 calls, list, before"] = measure(lambda: td.parse(text, tools=TOOLS, families=["hermes"]))
    rows["parse 20 calls, Toolset, after"] = measure(lambda: td.parse(text, tools=toolset, families=["hermes"]))
    rows["parse 20 calls, list, after"] = measure(lambda: td.parse(text, tools=TOOLS, families=["hermes"]))
    return rows


PAIRS = [
    ("build, before", "build first time, after"),
    ("build, before", "build again, after"),
    ("build, before", "build fresh copy, after"),
    ("validate valid, before", "validate valid, after"),
    ("validate invalid, before", "validate invalid, after"),
    ("parse 20 calls, Toolset, before", "parse 20 calls, Toolset, after"),
    ("parse 20 calls, list, before", "parse 20 calls, list, after"),
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", default="", help="write the figures to this file")
    args = ap.parse_args(argv)
    tools = catalogue(50)
    rows = {**build_rows(tools), **validate_rows(tools), **parse_rows()}
    print(f"Python {platform.python_version()} on {platform.machine()}")
    for label, secs in rows.items():
        per = f"  ({secs / 50 * 1e3:.4f} ms per tool)" if label.startswith("build") else ""
        print(f"{label:36} {secs * 1e3:10.4f} ms{per}")
    for before, after in PAIRS:
        print(f"{before:34} / {after:32} {rows[before] / rows[after]:7.1f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
