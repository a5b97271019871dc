"""Replies cut off anywhere (DESIGN §7): every prefix of every golden case, under every policy.

A model's reply may stop at any character (a stop sequence, a token limit, a dropped
connection), so each golden text is read cut at many places and compared with its whole
reading: a call from a prefix is the whole reply's call cut at most (its name complete,
its values the whole call's), prose the whole reply shows is not lost, and the prefix
streams as it parses.  The checks are :func:`harnesses.check_prefix` (also the
``truncation`` fuzz harness); this file chooses where to cut.

``make test`` cuts each case at a seeded sample of places: inside each call's name and
string values, at each marker, evenly spaced and at random, rotating the policy variant
and the chunking.  ``HYPOTHESIS_PROFILE=fuzz`` cuts every case at every place (still
rotating the variant and the chunking: about 83,000 cuts), and draws 5,000 random
(case, cut, variant, chunking) examples.
"""

from __future__ import annotations

import random
import re
import sys

import pytest
from contract import CHUNKINGS, VARIANTS, policy_with
from hypothesis import given
from hypothesis import strategies as st
from support import ROOT, all_cases, budget, check_invariants, cuts_for, long_search, options, run_stream, sweep, tool

import tooldialect as td

sys.path.insert(0, str(ROOT / "fuzz"))

import harnesses

CASES = all_cases()
FILES = sorted({case.family for case in CASES})
#: Places a case is cut at in ``make test`` (all of them for a text this short or shorter).
SAMPLED = sweep(6, 2)  # two in the quick tier
SHORT = sweep(12, 3)
#: Failures shown in a message (the shortest prefix of each kind of problem).
SHOWN = 6


def _inside_calls(text: str, result: td.ParseResult) -> set[int]:
    """Cuts where truncation does its damage: inside each call's name and string values
    (where they are written near the call's span) and inside each marker-like tag."""
    places = set()
    for call in result.calls:
        lo, hi = max(0, call.span[0] - 64), call.span[1]
        for written in [call.name, *(v for v in call.arguments.values() if isinstance(v, str) and v)]:
            at = text.find(written, lo, hi)
            if at >= 0:
                places.update({at + 1, at + max(1, len(written) // 2), at + len(written)})
    for m in re.finditer(r"<[^<>\n]{1,40}>|\[[A-Z_/]{2,20}\]", text):
        places.add(m.start() + len(m.group()) // 2)
    return places


def _cuts(text: str, result: td.ParseResult, rng: random.Random) -> list[int]:
    """Every place in a long search; else ``SAMPLED`` of: inside the calls, two evenly
    spaced, two at random."""
    n = len(text)
    if long_search() or n <= SHORT:
        return list(range(n + 1))
    places = _inside_calls(text, result) | {n // 3, 2 * n // 3, rng.randint(0, n), rng.randint(0, n)}
    chosen = sorted(p for p in places if 0 <= p < n)
    return sorted(rng.sample(chosen, min(SAMPLED, len(chosen))))


def _run(case_no: int, cut_no: int) -> tuple[str, str]:
    """The policy variant and chunking of one cut, rotating so that each case meets many."""
    names = list(VARIANTS)
    k = case_no + cut_no
    return names[k % len(names)], CHUNKINGS[(k // len(names) + k) % len(CHUNKINGS)]


def _kind(problem: str) -> str:
    """A problem's first line without its names and numbers: what kind of failure it is."""
    return re.sub(r"\d+|'[^']*'", "_", problem.split("\n")[0])


def _report(failures: list[tuple[int, str, str]]) -> str:
    """The shortest failing prefix of each kind of problem, and how many failed in all."""
    best: dict[str, tuple[int, str, str]] = {}
    for cut, where, problem in failures:
        if _kind(problem) not in best or cut < best[_kind(problem)][0]:
            best[_kind(problem)] = (cut, where, problem)
    shown = [f"{where}:\n{problem}" for _, where, problem in sorted(best.values())[:SHOWN]]
    return f"{len(failures)} cut-off replies break the contract; the shortest of each kind:\n\n" + "\n\n".join(shown)


@pytest.mark.parametrize("corpus", FILES)
def test_every_golden_case_cut_off_keeps_the_contract(corpus):
    rng = random.Random(f"truncation:{corpus}")
    failures = []
    for case_no, case in enumerate(c for c in CASES if c.family == corpus):
        base = options(case)
        wholes: dict[str, td.ParseResult] = {}
        for cut_no, cut in enumerate(_cuts(case.text, td.parse(case.text, **base), rng)):
            variant, chunking = _run(case_no, cut_no)
            opts = {**base, "policy": policy_with(base.get("policy"), variant)}
            if variant not in wholes:
                wholes[variant] = td.parse(case.text, **opts)
            try:
                harnesses.check_prefix(case.text, cut, opts, (chunking,), seed=cut, full=wholes[variant])
            except AssertionError as exc:
                failures.append((cut, f"{case.id} cut at {cut} ({variant})", str(exc)))
    assert not failures, _report(failures)


@budget(60)
@given(data=st.data())
def test_a_golden_case_cut_anywhere_keeps_the_contract(data):
    case = data.draw(st.sampled_from(CASES), label="case")
    cut = data.draw(st.integers(0, len(case.text)), label="cut")
    variant = data.draw(st.sampled_from(list(VARIANTS)), label="variant")
    chunking = data.draw(st.sampled_from(CHUNKINGS), label="chunking")
    base = options(case)
    opts = {**base, "policy": policy_with(base.get("policy"), variant)}
    harnesses.check_prefix(case.text, cut, opts, (chunking,), seed=cut)


# The failures an audit found, and those these searches found since, each the smallest of
# its kind (the searches above find them or their kind; these keep them in view).

GET_WEATHER = '<tool_call>{"name": "f", "arguments": {"a": 1, "b": [1, 2]}}</tool_call>'
QWEN3 = (
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
    "<parameter=unit>\ncelsius\n</parameter>\n</function>\n</tool_call>"
)
GEMMA = "<start_function_call>call:f{a:<escape>x<escape>,b:Paris}<end_function_call>"
CODE = '<tool_call>result = read_file(path="a")\n</tool_call>'
APERTUS = '<|tools_prefix|>[{"name": "get_time", "arguments": {}}]<|tools_suffix|>'
FENCED = '```json\n{"name": "f", "arguments": {"a": 1}}\n```\nDone.'
MINICPM_DOUBLED = (
    '<function name="get_weather"><param name="opts">-500</param></param></function>'
    '<function name="get_weather"></function>'
)
KEEP = {"truncated": "keep"}
KNOWN = {
    "a one-word reply is lost at its line break": ("Paris\nIt is sunny.", 6, {}),
    "kept fragments join to other JSON than arguments_json": (GET_WEATHER, GET_WEATHER.index(", 2]") + 3, KEEP),
    "a name cut off is returned": ("<tool_call>get_weather</tool_call>", len("<tool_call>get_wea"), KEEP),
    "a cut-off parameter is read as an empty value": (QWEN3, QWEN3.index("<parameter=unit>") + 16, {}),
    "a value is made of a cut-off marker": (GEMMA, len("<start_function_call>call:f{a:<e"), KEEP),
    "a cut-off bare value is read as empty": (GEMMA, GEMMA.index("Paris") + 1, KEEP),
    "a bare value runs into a cut-off closer": (GEMMA, GEMMA.index("}<end") + 3, KEEP),
    "a keyed call is named after a cut-off key": (APERTUS, len('<|tools_prefix|>[{"name":'), KEEP),
    "spans run past the end of a cut-off single-quoted array": ("[TOOL_CALLS][{'name':'f','arguments':{}}]", 40, {}),
    "a fence line is removed with no span over it": (FENCED, FENCED.index('"a"') + 2, KEEP),
    # the prefix reads the value up to the first of two closers (decision 21) and types it,
    # -500; the whole reply reads '-500</param>'
    "a value cut at a doubled closer is typed": (MINICPM_DOUBLED, MINICPM_DOUBLED.index("</function>") + 1, {}),
}


@pytest.mark.parametrize("title", list(KNOWN))
def test_known_cut_off_failures(title):
    text, cut, fields = KNOWN[title]
    harnesses.check_prefix(text, cut, {"policy": td.Policy(**fields)})


def test_known_cut_off_failure_a_word_before_code_is_named_as_a_call():
    """Under ``truncated="keep"`` a prefix ending in a word and a space is kept as a call of
    that name, where the whole reply calls ``read_file``."""
    tools = td.Toolset([tool("read_file", {"path": {"type": "string"}})])
    harnesses.check_prefix(CODE, len("<tool_call>result "), {"policy": td.Policy(**KEEP), "tools": tools})


def test_known_cut_off_failure_a_refused_call_in_reasoning_takes_the_block_away():
    """In reasoning, a block whose one call is refused (a value that is no literal) and cut
    off stays reasoning text, as the whole block does beside the call that stands; it was
    taken out of the reasoning with only the refused call's span reported."""
    tools = td.Toolset(
        [tool("get_weather", {"city": {"type": "string"}}), tool("get_time", {"timezone": {"type": "string"}})]
    )
    text = '```tool_code\nprint(get_weather(city=user_city))\nget_time(timezone="UTC")\n```'
    opts = {"policy": td.Policy(start_in_reasoning=True), "tools": tools}
    harnesses.check_prefix(text, text.index("\nget_time") + 4, opts)
    cut = td.parse(text[: text.index("\nget_time") + 4], **opts)
    assert cut.reasoning == text[: text.index("\nget_time") + 4] and not cut.diagnostics


CLOSER_IN_STRING = '<tool_call>\n{"name": "search_files", "arguments": {"query": "a </tool_call> b", "max'


@pytest.mark.parametrize("policy", [{}, KEEP])
def test_a_closer_inside_a_string_of_a_cut_off_call_is_the_strings(policy):
    """A closer the JSON scanner read inside a string that it then closed is the string's
    text, not the block's end: the call cut off after it is ``truncated`` (with its name),
    and nothing of it is visible.  It was a ``malformed_block`` up to that closer, with the
    rest of the payload left as text."""
    opts = {"policy": td.Policy(**policy)}
    got = td.parse(CLOSER_IN_STRING, **opts)
    kept = [("search_files", {"query": "a </tool_call> b"})] if policy else []  # its complete arguments
    assert got.text == "" and [(c.name, c.arguments) for c in got.calls] == kept
    assert [(d.kind, d.detail.get("name")) for d in got.diagnostics] == [("truncated", "search_files")]
    removed = got.diagnostics[0].detail.get("removed", got.diagnostics[0].span)
    assert tuple(removed) == (0, len(CLOSER_IN_STRING))
    for mode in ("whole", "chars", "random"):
        check_invariants(CLOSER_IN_STRING, run_stream(CLOSER_IN_STRING, cuts_for(CLOSER_IN_STRING, mode), **opts), got)
    # a closer inside the string still open at the end of the text did end the block
    broken = 'A <tool_call>{"name": "f", "arguments": {"a": "b}</tool_call> B'
    got = td.parse(broken, **opts)
    assert got.text == "A  B" and [d.kind for d in got.diagnostics] == ["malformed_block"]
    assert got.diagnostics[0].detail["at"] == broken.index('"b}')
