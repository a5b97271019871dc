"""A stop token a server leaves after the calls is furniture: the calls are read as without it.

Every family declares the tokens its models end a turn with (``_stop.lark``: a
``FURNITURE_STOP_…`` terminal is removed wherever it appears, a ``STOP_…`` one only where the
family's rule reads it after its calls). For each family, its golden cases whose reply is
nothing but calls are read again with each stop token appended, batch and streamed.
"""

from __future__ import annotations

import pytest
from support import CORPUS, options, read_corpus

import tooldialect as td
from tooldialect.corpus import MODES, cuts_for, run_stream, stream_problem
from tooldialect.markers import samples

#: golden cases per family and stop token (the first ones whose reply is only calls)
PER_FAMILY = 4


def stop_tokens(family: str) -> list[tuple[str, str]]:
    """(terminal, spelling) of every stop token the family declares, each spelling of a
    regex (DeepSeek's bars and separators) included."""
    out = []
    for name, term in sorted(td.families.get(family).grammar.terminals.items()):
        if name.startswith(("FURNITURE_STOP_", "STOP_")):
            assert term.pattern is not None
            out.extend((name, s) for s in samples(term.pattern.source))
    return out


def calls_only(family: str) -> list:
    """Golden cases of the family that expect calls of its own, no diagnostic, and no text
    but white space: a reply the stop token would follow directly."""
    picked = []
    for case in read_corpus(CORPUS / f"{family}.txt"):
        exp = case.expected
        if not exp or "error" in case.flags or exp["diagnostics"] or not exp["calls"]:
            continue
        if exp["text"].strip() or any(c["family"] != family for c in exp["calls"]):
            continue
        picked.append(case)
    return picked[:PER_FAMILY]


FAMILIES = td.families.names()
PARAMS = [
    pytest.param(fam, term, stop, case, id=f"{fam}:{term}:{stop}:{case.title}")
    for fam in FAMILIES
    for term, stop in stop_tokens(fam)
    for case in calls_only(fam)
]


#: families whose models' stop tokens were not found in a template or parser that could be
#: read: they declare none rather than guess (a stop token left in their text stays text)
UNKNOWN_STOPS = {"solar_open"}


def test_every_family_declares_stop_tokens_and_has_cases():
    for fam in FAMILIES:
        assert bool(stop_tokens(fam)) is (fam not in UNKNOWN_STOPS), f"{fam}: stop tokens declared or not as said"
        assert calls_only(fam), f"{fam} has no golden case whose reply is only calls"


def _opts(case, family: str) -> dict:
    opts = options(case)
    opts.setdefault("families", [family])  # the family's own declaration is enough
    return opts


def _summary(result: td.ParseResult) -> dict:
    return {
        "calls": [c.model_dump(exclude={"span"}) for c in result.calls],
        "diagnostics": [d.kind for d in result.diagnostics],
        "reasoning": result.reasoning,
        "text": result.text.strip(),
    }


@pytest.mark.parametrize(("family", "term", "stop", "case"), PARAMS)
def test_stop_token_after_calls_is_furniture(family, term, stop, case):
    opts = _opts(case, family)
    base = case.text
    if base.rstrip().endswith(stop):  # the golden reply already ends with it
        base = base.rstrip()[: -len(stop)]
    without = td.parse(base, **opts)
    assert without.calls, case.title
    assert stop not in without.text
    for text in (base + stop, base.rstrip() + stop + "\n", base + "\n" + stop):
        got = td.parse(text, **opts)
        assert _summary(got) == _summary(without), f"{term} {text!r}"
        assert stop not in got.text
        for mode in MODES[1:]:
            events = run_stream(text, cuts_for(text, mode), **opts)
            problem = stream_problem(text, events, got)
            assert problem is None, f"{term} ({mode}) {text!r}: {problem}"


def test_functionary_v32_calls_before_eot_id():
    text = 'get_weather\n{"city": "Paris"}>>>get_time\n{"timezone": "UTC"}<|eot_id|>'
    for opts in ({}, {"families": ["functionary"]}):
        got = td.parse(text, **opts)
        assert [(c.name, c.arguments) for c in got.calls] == [
            ("get_weather", {"city": "Paris"}),
            ("get_time", {"timezone": "UTC"}),
        ]
        assert got.text == ""
        assert not got.diagnostics


def test_end_of_sequence_in_prose_stays_prose():
    """``</s>`` closes an HTML strike-through in prose: only a rule after calls reads it."""
    text = "The old price was <s>12 EUR</s>, now 10 EUR."
    assert td.parse(text).text == text
    after = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}</s>'
    got = td.parse(after, families=["mistral"])
    assert [c.name for c in got.calls] == ["get_weather"]
    assert got.text == ""


def test_stop_token_after_text_is_removed_too():
    got = td.parse("It is sunny in Paris.<|im_end|>", families=["hermes"])
    assert got.text == "It is sunny in Paris."
