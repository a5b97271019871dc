"""Every golden vector, four ways: batch; stream whole; one character at a time; random cuts.

The quick tier (make test) reads every case in batch and at random cuts, and a sample of them
streamed whole and one character at a time; the full tier (make check) reads every case four ways."""

from __future__ import annotations

from collections import defaultdict

import pytest
from support import CORPUS, Case, all_cases, options, read_corpus, summary, toolsets, write_corpus

import tooldialect as td
from tooldialect.corpus import MODES, case_problem

CASES = all_cases()


@pytest.fixture(scope="session")
def golden_updates(request):
    updates: dict[str, dict[str, dict]] = defaultdict(dict)
    yield updates
    if not request.config.getoption("--update-goldens"):
        return
    for family, new in updates.items():
        path = CORPUS / f"{family}.txt"
        cases = read_corpus(path)
        for case in cases:
            if case.title in new:
                case.expected = new[case.title]
        write_corpus(path, cases)


def test_titles_are_unique_per_family():
    seen = set()
    for case in CASES:
        assert case.id not in seen, f"duplicate title {case.id}"
        seen.add(case.id)


#: batch and random cuts in every run; streamed whole and one character at a time in the full
#: tier (a sample of the cases in the quick one)
SWEPT_MODES = ("whole", "chars")


@pytest.mark.parametrize(
    "mode", [pytest.param(m, marks=pytest.mark.exhaustive) if m in SWEPT_MODES else m for m in MODES]
)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_golden(case: Case, mode: str, request, golden_updates):
    if mode == "batch" and request.config.getoption("--update-goldens"):
        golden_updates[case.family][case.title] = summary(td.parse(case.text, **options(case)))
        return
    problem = case_problem(case, mode, toolsets())
    assert problem is None, f"{case.id} ({mode}): {problem}"


def test_corpus_sizes():
    counts: dict[str, int] = defaultdict(int)
    for case in CASES:
        counts[case.family] += 1
    assert counts["hermes"] >= 30
    assert counts["json_array"] >= 15
    assert counts["bare_json"] >= 10
    assert counts["llama_json"] >= 10
    for family in ("harmony", "mistral", "pythonic", "pformat"):
        assert counts[family] >= 25, family
    assert counts["codecall"] >= 40
    assert counts["glm_lines"] >= 10
    for family in td.families.names():
        assert counts[family] >= 5, family


#: Formats that share a family, each with the family and a piece of text (or title) its cases hold.
FORMATS = {
    "Functionary v3.1": ("functionary", "<function"),
    "Functionary v3.2": ("functionary", ">>>"),
    "LFM2": ("pythonic json_array", "<|tool_call_start|>"),
    "Olmo 3": ("pythonic", "<function_calls>"),
    "Llama 4 pythonic": ("pythonic", "<|python_start|>"),
    "Llama 3.1 built-in": ("pythonic", ".call("),
    "GigaChat 3": ("gigachat", "function call<|role_sep|>"),
    "GigaChat 3.1": ("gigachat", "<|function_call|>"),
    "Step3": ("invoke_xml", "steptml"),
    "ERNIE 4.5": ("hermes", "ERNIE"),
    "Mistral v2-v7": ("mistral", "[TOOL_CALLS] ["),
    "Mistral v11 ids": ("mistral", "[CALL_ID]"),
    "Mistral v11+": ("mistral", "[ARGS]"),
    "code calls in Python": ("codecall", "Python"),
    "code calls in TypeScript": ("codecall", "TypeScript"),
    "Gemma 3 tool_code": ("gemma3", "```tool_code"),
    "GLM lines on their own": ("glm_lines", "on its own"),
}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_has_five_cases(fmt):
    families, piece = FORMATS[fmt]
    n = sum(1 for c in CASES if c.family in families.split() and (piece in c.text or piece in c.title))
    assert n >= 5, f"{fmt}: {n} cases"


def test_every_family_has_a_corpus():
    assert {p.stem for p in CORPUS.glob("*.txt")} >= set(td.families.names())
