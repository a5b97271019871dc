"""Generated near-valid replies: nothing lost, nothing invented, stream equals batch.

The generator (:mod:`replies`) writes replies a model could write: prose of unique words,
call blocks of every family, reasoning, fenced examples, inline code, prose that quotes a
marker, then breaks the blocks and may cut the reply off.  It knows which words are prose
and where call markup is, so :func:`harnesses.check_reply` (also the ``replies`` fuzz
harness) can ask for what the golden cases cannot: every prose word is shown or lies in
a reported span, and every call, name and string value comes from call markup the reply
holds.
"""

from __future__ import annotations

import random
import sys
from typing import Any

import pytest
from contract import words_outside_markers
from hypothesis import given
from replies import Reply, from_bytes, replies
from support import ROOT, budget

import tooldialect as td

sys.path.insert(0, str(ROOT / "fuzz"))

import harnesses


@budget(250)
@given(reply=replies())
def test_generated_replies_keep_the_contract(reply):
    harnesses.check_reply(reply)


def test_the_generator_writes_calls_prose_and_broken_blocks():
    """The search is not vacuous: from a few hundred seeds, replies with calls, with prose,
    with broken blocks and cut off ones, and blocks of every family."""
    rng = random.Random(20261201)
    built = [from_bytes(rng.randbytes(rng.randint(16, 256))) for _ in range(300)]
    plans = " ".join(" ".join(r.plan) for r in built)
    assert sum(bool(td.parse(r.text, **r.opts).calls) for r in built) > 100
    assert sum(bool(r.words) for r in built) > 150
    assert all(f"{how} " in plans for how in ("drop", "double", "cut", "quote", "backslash"))
    assert sum(r.text != r.whole for r in built) > 50
    assert {f for f in td.families.names() if f"{f} block" in plans} == set(td.families.names())


def written(text: str, block: str = "", **policy: Any) -> Reply:
    """A reply written by hand: every word outside a marker is a prose word, and ``block``
    (a part of ``text``) is where call markup is."""
    at = text.find(block) if block else -1
    regions = [(at, at + len(block), "block")] if at >= 0 else []
    return Reply(text, text, words_outside_markers(text), regions, {"policy": td.Policy(**policy)}, "default")


THREE = "".join(f'<tool_call>{{"name": "{n}", "arguments": {{}}}}</tool_call> ' for n in "fgh")


KNOWN = {
    "prose quoting an opener and its closer": ("Wrap each call in <tool_call> and </tool_call> tags.", ""),
    "a one-word reply": ("Paris\n", ""),
    "an inline code span after prose quoting an opener": (
        'Use <tool_call> then `<tool_call>{"name": "f", "arguments": {}}</tool_call>` as shown.',
        "",
    ),
    "a name after [TOOL_CALLS] and the marker after it": ("a [TOOL_CALLS] b [THINK]c[/THINK]", "[TOOL_CALLS] b"),
    "a broken call after a complete one in a Python list": (
        "<|python_start|>[f(a=1), g(x> more words",
        "<|python_start|>[f(a=1), g(x>",
    ),
    "a fenced example after prose quoting an opener": (
        'a <tool_call> b\n```xml\n<tool_call>{"name": "f", "arguments": {}}</tool_call>\n```\n',
        "",
    ),
}


@pytest.mark.parametrize("title", list(KNOWN))
def test_known_failures(title):
    harnesses.check_reply(written(*KNOWN[title]))


def test_known_failure_calls_past_max_calls_after_the_first_are_not_reported():
    """The first call past the cap is reported (``limit_exceeded``); the ones after it
    vanish with no diagnostic over them."""
    harnesses.check_reply(written(THREE + "done", THREE, max_calls=1))
