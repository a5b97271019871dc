"""``td.explain``: the reply cut into regions (each character in exactly one), each block's
verdict, and the views the CLI renders.  Every corpus case of every family is explained."""

from __future__ import annotations

import pytest
from support import all_cases, options

import tooldialect as td
from tooldialect.explain import REGION_KINDS

CASES = all_cases()
VISIBLE = ("text", "example")


def check_regions(text: str, ex: td.Explanation, result: td.ParseResult) -> None:
    """Every character in exactly one region; the regions agree with ``parse()``."""
    regions = ex.regions
    assert [r.start for r in regions[1:]] == [r.end for r in regions[:-1]], "regions leave a gap or overlap"
    assert (regions[0].start if regions else 0) == 0 and (regions[-1].end if regions else 0) == len(text)
    assert all(r.end > r.start and r.kind in REGION_KINDS for r in regions)
    # what parse() returns, from the regions alone
    assert "".join(text[r.start : r.end] for r in regions if r.kind in VISIBLE) == result.text
    assert "".join(text[r.start : r.end] for r in regions if r.kind == "reasoning") == result.reasoning
    assert ex.result == result
    for i, call in enumerate(result.calls):
        own = [r for r in regions if r.call == i]
        assert own, f"call {i} has no region"
        assert (own[0].start, own[-1].end) == call.span, f"call {i}: regions do not cover its span"
        # inside its span, what is not the call's own is text the model wrote there (kept visible)
        inside = [r for r in regions if call.span[0] <= r.start < call.span[1]]
        assert all(r.call == i or r.kind in VISIBLE for r in inside), f"call {i}: its span holds {inside}"
        assert {r.kind for r in own} <= {"call", "call_name", "call_arguments"}
    assert all(r.call is not None for r in regions if r.kind.startswith("call"))
    for b in ex.blocks:
        assert sum(c.won for c in b.candidates) <= 1
        assert all(0 <= k < len(result.calls) for k in b.calls)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_corpus_case_is_explained_character_by_character(case):
    opts = options(case)
    result = td.parse(case.text, **opts)
    ex = td.explain(case.text, **opts)
    check_regions(case.text, ex, result)
    # every call belongs to the block that read it, and that block names its family
    for k, call in enumerate(result.calls):
        owners = [b for b in ex.blocks if k in b.calls]
        assert len(owners) <= 1
        if owners:
            assert owners[0].family == call.family and owners[0].outcome == "calls"
