"""Stream against batch where limits cut blocks short, and detect mode against its stream form.

DESIGN §4 holds for every policy: a block over ``max_depth`` or ``max_block_chars``, or a
call past ``max_calls`` or a loop past ``max_repeats``, must be decided the same way
whether the reply arrives whole or in pieces, and ``td.detect.DetectStream`` must give
what ``td.detect.scan`` gives (§9).  The limits are where the two readings were never
compared, so the golden cases and random markup run here under each small limit the
policy allows, and in detect mode.  The checks are :func:`harnesses.check_limits` (also
the ``limits`` fuzz harness).
"""

from __future__ import annotations

import sys

import pytest
from contract import CHUNKINGS, LIMITS, policy_with
from hypothesis import given
from hypothesis import strategies as st
from support import ROOT, all_cases, budget, long_search, options
from test_properties import fragments

import tooldialect as td

sys.path.insert(0, str(ROOT / "fuzz"))

import harnesses

CASES = all_cases()
#: The chunkings that cut a reply (whole is the batch reading itself).
CUT = ("chars", "threes", "random")


def _failures(runs, check=harnesses.check_limits) -> list[str]:
    failures = []
    for case, opts, chunkings in runs:
        try:
            check(case.text, opts, chunkings, seed=len(case.text))
        except AssertionError as exc:
            failures.append(f"{case.id}:\n{exc}")
    return failures


def _report(failures: list[str]) -> str:
    shortest = sorted(failures, key=len)[:4]
    return f"{len(failures)} golden cases break the contract; the shortest:\n\n" + "\n\n".join(shortest)


@pytest.mark.parametrize("limit", LIMITS)
def test_golden_cases_stream_as_they_parse_under_a_small_limit(limit):
    """Every case under this limit, at one chunking in turn (every chunking in a long search)."""
    runs = []
    for i, case in enumerate(CASES):
        if not long_search() and (i + LIMITS.index(limit)) % 4:
            continue  # a quarter of the cases per limit: each case meets one or two limits
        base = options(case)
        opts = {**base, "policy": policy_with(base.get("policy"), limit)}
        runs.append((case, opts, CUT if long_search() else (CUT[i % len(CUT)],)))
    failures = _failures(runs)
    assert not failures, _report(failures)


def test_golden_cases_in_detect_mode_stream_as_they_scan():
    """Under each case's own policy (the limit runs above check detect mode too); three
    characters at a time or at random (the golden tests stream every case one by one)."""
    runs = [(case, options(case), CUT if long_search() else (CUT[1 + i % 2],)) for i, case in enumerate(CASES)]
    failures = _failures(runs, harnesses.check_detect)
    assert not failures, _report(failures)


@budget(100)
@given(text=fragments, limit=st.sampled_from(LIMITS), chunking=st.sampled_from(CHUNKINGS), seed=st.integers(0, 2**16))
def test_random_markup_streams_as_it_parses_under_a_small_limit(text, limit, chunking, seed):
    harnesses.check_limits(text, {"policy": policy_with(None, limit)}, (chunking,), seed)


DEEP = '<|python_tag|>{"name":"f","parameters":{"a":' + "[" * 64 + "1" + "]" * 64 + "}} Done, see above."
ARRAY_CUT = '<tool_call>[{"name": "f", "arguments": {"a": 1}}, {"'
WIDE = '<tool_call>{"name": "f", "arguments": {"a": ' + "[" * 200 + "]" * 200 + "}}</tool_call> Done."
KNOWN = {
    "a block past max_depth with prose after it": (DEEP, {}),
    "a block past max_block_chars": (WIDE, {"max_block_chars": 256}),
    "a diagnostic's detail depends on the chunking": (ARRAY_CUT, {"max_depth": 2}),
    "a stray closer after a function opener in prose": ("Hi <function=f>\n</parameter> ok", {}),
}


@pytest.mark.parametrize("title", list(KNOWN))
def test_known_limit_failures(title):
    text, fields = KNOWN[title]
    harnesses.check_limits(text, {"policy": td.Policy(**fields)}, CUT)
