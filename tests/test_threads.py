"""Parsers in many threads at once: a server parses each request on a thread of its own,
and every stream of a catalog shares what the catalog's engines learn (the plans of whole
blocks, the verdicts on stops, the parser tables' accepted sequences).  Those caches fill
while the threads race, and each reading must still be the one a lone thread gives."""

from __future__ import annotations

import random
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

from support import all_cases, options, run_stream

import tooldialect as td
from tooldialect import catalog

THREADS = 4


def _reading(result: td.ParseResult) -> tuple:
    return (
        result.text,
        result.reasoning,
        [(c.name, c.arguments_json, c.id, c.family, c.span) for c in result.calls],
        [(d.kind, d.family, d.span) for d in result.diagnostics],
    )


def _events(events: list[td.Event]) -> list[str]:
    return [e.model_dump_json() for e in events]


def _race(work) -> list:
    """``work(k)`` on ``THREADS`` threads let go at once, every catalog's engine cache
    empty and a thread switch as often as the interpreter allows; what each returned (an
    exception in any is raised here)."""
    barrier = threading.Barrier(THREADS)

    def run(k: int):
        barrier.wait()
        return work(k)

    for cat in list(catalog._cache.values()):
        cat.engine_cache.clear()
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(THREADS) as pool:
            futures = [pool.submit(run, k) for k in range(THREADS)]
            return [f.result() for f in futures]
    finally:
        sys.setswitchinterval(interval)


def test_parses_in_racing_threads_read_as_one_thread_does():
    cases = all_cases()
    alone = [_reading(td.parse(c.text, **options(c))) for c in cases]

    def work(k: int) -> dict[int, tuple]:
        order = list(range(len(cases)))
        random.Random(k).shuffle(order)  # each thread meets the shapes in its own order
        return {i: _reading(td.parse(cases[i].text, **options(cases[i]))) for i in order}

    for k, got in enumerate(_race(work)):
        wrong = [cases[i].id for i in range(len(cases)) if got[i] != alone[i]]
        assert not wrong, f"thread {k}: {wrong[:5]}"


def test_streams_in_racing_threads_send_what_one_thread_sends():
    cases = all_cases()[::4]
    alone = [_events(run_stream(c.text, list(range(3, len(c.text), 3)), **options(c))) for c in cases]

    def work(k: int) -> dict[int, list[str]]:
        order = list(range(len(cases)))
        random.Random(100 + k).shuffle(order)
        return {
            i: _events(run_stream(cases[i].text, list(range(3, len(cases[i].text), 3)), **options(cases[i])))
            for i in order
        }

    for k, got in enumerate(_race(work)):
        wrong = [cases[i].id for i in range(len(cases)) if got[i] != alone[i]]
        assert not wrong, f"thread {k}: {wrong[:5]}"
